"""v1beta1 NodePool / EC2NodeClass -> nodewright.io/v1: one test per mapping and per refusal."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.migrate.common import MigrationError

from .helpers import doc, kinds, migrate, valid

CLASS: dict[str, Any] = {
    "amiFamily": "AL2023",
    "role": "KarpenterNodeRole-demo",
    "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
}
REF = {"apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "name": "default"}


def ec2nodeclass(**spec: Any) -> str:
    return doc("karpenter.k8s.aws/v1beta1", "EC2NodeClass", {**CLASS, **spec})


def nodepool(name: str = "default", disruption: dict[str, Any] | None = None, **node: Any) -> str:
    spec: dict[str, Any] = {"template": {"spec": {"nodeClassRef": REF, "requirements": [], **node}}}
    if disruption is not None:
        spec["disruption"] = disruption
    return doc("karpenter.sh/v1beta1", "NodePool", spec, name)


def pool(disruption: dict[str, Any] | None = None, **node: Any) -> dict[str, Any]:
    (found,) = kinds(valid(migrate(nodepool(disruption=disruption, **node) + "---\n" + ec2nodeclass())), "NodePool")
    return found


def test_when_underutilized_becomes_when_empty_or_underutilized_after_0s_and_unset_is_the_same() -> None:
    expected = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    assert pool({"consolidationPolicy": "WhenUnderutilized"})["spec"]["disruption"] == expected
    assert pool()["spec"]["disruption"] == expected


def test_when_empty_keeps_its_consolidate_after() -> None:
    disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"}
    assert pool(disruption)["spec"]["disruption"] == disruption


def test_expire_after_moves_to_the_template_and_its_v1beta1_default_is_written() -> None:
    assert pool({"expireAfter": "Never"})["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert pool()["spec"]["template"]["spec"]["expireAfter"] == "720h"


def test_budgets_are_carried() -> None:
    budgets = [{"nodes": "10%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}]
    assert pool({"budgets": budgets})["spec"]["disruption"]["budgets"] == budgets


def test_node_class_ref_api_version_becomes_group() -> None:
    assert pool()["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "nodewright.io",
        "kind": "EC2NodeClass",
        "name": "default",
    }


def test_kubelet_moves_to_the_ec2nodeclass() -> None:
    docs = valid(migrate(nodepool(kubelet={"maxPods": 30}) + "---\n" + ec2nodeclass()))
    assert kinds(docs, "EC2NodeClass")[0]["spec"]["kubelet"] == {"maxPods": 30}
    assert "kubelet" not in kinds(docs, "NodePool")[0]["spec"]["template"]["spec"]


def test_a_family_alone_becomes_an_alias_and_a_family_with_terms_is_kept() -> None:
    (alone,) = valid(migrate(ec2nodeclass(amiFamily="Bottlerocket")))
    assert alone["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}] and "amiFamily" not in alone["spec"]
    terms = [{"tags": {"team": "a"}}]
    (kept,) = valid(migrate(ec2nodeclass(amiSelectorTerms=terms)))
    assert kept["spec"]["amiFamily"] == "AL2023" and kept["spec"]["amiSelectorTerms"] == terms


def test_ubuntu_becomes_al2_with_a_20gi_gp3_root_volume_at_dev_sda1() -> None:
    (found,) = migrate(ec2nodeclass(amiFamily="Ubuntu", amiSelectorTerms=[{"id": "ami-1"}]))
    assert found["spec"]["amiFamily"] == "AL2"
    assert found["spec"]["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/sda1",
            "rootVolume": True,
            "ebs": {"encrypted": True, "volumeType": "gp3", "volumeSize": "20Gi"},
        }
    ]
    devices = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "50Gi"}}]
    (own,) = migrate(ec2nodeclass(amiFamily="Ubuntu", amiSelectorTerms=[{"id": "ami-1"}], blockDeviceMappings=devices))
    assert own["spec"]["blockDeviceMappings"] == devices


def test_ubuntu_output_validates() -> None:
    valid(migrate(ec2nodeclass(amiFamily="Ubuntu", amiSelectorTerms=[{"id": "ami-1"}])))


def test_the_other_fields_are_carried_and_the_old_hop_limit_is_written() -> None:
    (found,) = valid(
        migrate(ec2nodeclass(tags={"team": "a"}, userData="x\n", detailedMonitoring=True, instanceStorePolicy="RAID0"))
    )
    spec = found["spec"]
    assert spec["tags"] == {"team": "a"} and spec["userData"] == "x\n" and spec["instanceStorePolicy"] == "RAID0"
    assert spec["role"] == "KarpenterNodeRole-demo" and spec["metadataOptions"]["httpPutResponseHopLimit"] == 2


@pytest.mark.parametrize(
    ("disruption", "message"),
    [
        (
            {"consolidationPolicy": "WhenUnderutilized", "consolidateAfter": "30s"},
            r"spec\.disruption\.consolidateAfter: cannot",
        ),
        (
            {"consolidationPolicy": "WhenEmpty"},
            r"spec\.disruption\.consolidateAfter: is required with consolidationPolicy",
        ),
        ({"consolidationPolicy": "Sometimes"}, r"spec\.disruption\.consolidationPolicy: 'Sometimes' is not"),
    ],
)
def test_nodepool_refusals_name_the_field(disruption: dict[str, Any], message: str) -> None:
    with pytest.raises(MigrationError, match=message):
        migrate(nodepool(disruption=disruption))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"amiFamily": "Ubuntu"}, r"spec\.amiFamily: Ubuntu has no AMI alias"),
        ({"amiFamily": "Custom"}, r"spec\.amiSelectorTerms: amiFamily Custom needs AMI selector terms"),
        ({"subnetSelectorTerms": []}, r"spec\.subnetSelectorTerms: is missing"),
        ({"tags": {"karpenter.sh/nodepool": "x"}}, r"spec\.tags\[karpenter\.sh/nodepool\]: is a restricted tag"),
        ({"launchTemplate": "lt"}, r"spec\.launchTemplate: is not a field of karpenter\.k8s\.aws/v1beta1"),
    ],
)
def test_ec2nodeclass_refusals_name_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(MigrationError, match=message):
        migrate(ec2nodeclass(**spec))


def test_a_kubectl_list_of_v1beta1_objects_is_converted_like_single_objects() -> None:
    items = [yaml.safe_load(nodepool()), yaml.safe_load(ec2nodeclass())]
    items[0]["metadata"].update(
        uid="u-1", resourceVersion="9", annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    )
    items[0]["status"] = {"resources": {"cpu": "4"}}
    listing = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    from_list = valid(migrate(listing))
    singles = valid(migrate(nodepool() + "---\n" + ec2nodeclass()))
    assert from_list == singles
    assert from_list[0]["metadata"] == {"name": "default"}


V1_CLASS = """\
apiVersion: karpenter.k8s.aws/v1  # written as a whole when it must take a kubelet
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""


def test_a_v1_ec2nodeclass_takes_the_kubelet_of_a_converted_nodepool() -> None:
    docs = valid(migrate(nodepool(kubelet={"maxPods": 30}) + "---\n" + V1_CLASS))
    (node_class,) = kinds(docs, "EC2NodeClass")
    assert node_class["apiVersion"] == "nodewright.io/v1" and node_class["spec"]["kubelet"] == {"maxPods": 30}


def test_a_class_kubelet_that_differs_from_its_nodepools_is_refused() -> None:
    own = V1_CLASS + "  kubelet: {maxPods: 10}\n"
    with pytest.raises(MigrationError, match=r"EC2NodeClass/default: spec\.kubelet is set and differs"):
        migrate(nodepool(kubelet={"maxPods": 30}) + "---\n" + own)


@pytest.mark.parametrize("family", ["Windows2019", "Windows2022"])
def test_windows_families_alone_become_their_aliases(family: str) -> None:
    (found,) = migrate(ec2nodeclass(amiFamily=family))
    assert found["spec"]["amiSelectorTerms"] == [{"alias": f"{family.lower()}@latest"}]


def test_a_list_may_hold_objects_already_in_nodewrights_group() -> None:
    item = yaml.safe_load(V1_CLASS.replace("karpenter.k8s.aws/v1", "nodewright.io/v1"))
    item["metadata"]["uid"] = "u-2"
    listing = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [item]})
    (found,) = valid(migrate(listing))
    assert found["metadata"] == {"name": "default"} and found["apiVersion"] == "nodewright.io/v1"
