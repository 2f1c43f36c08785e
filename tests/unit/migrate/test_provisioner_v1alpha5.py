"""v1alpha5 Provisioner -> nodewright.io/v1 NodePool: one test per mapping and per refusal."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.migrate.common import MigrationError, Options

from .helpers import TEMPLATE, doc, kinds, migrate, valid


def provisioner(name: str = "default", **spec: Any) -> str:
    return doc("karpenter.sh/v1alpha5", "Provisioner", {"providerRef": {"name": "default"}, **spec}, name)


def pool(**spec: Any) -> dict[str, Any]:
    docs = valid(migrate(provisioner(**spec) + "---\n" + TEMPLATE))
    (found,) = kinds(docs, "NodePool")
    return found


def test_ttl_seconds_after_empty_becomes_when_empty_after_n_seconds() -> None:
    assert pool(ttlSecondsAfterEmpty=30)["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "30s",
    }


def test_consolidation_enabled_becomes_when_empty_or_underutilized_after_0s() -> None:
    assert pool(consolidation={"enabled": True})["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
    }


def test_neither_keeps_empty_nodes_as_v1alpha5_did() -> None:
    assert pool()["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}


def test_ttl_seconds_until_expired_becomes_template_expire_after_and_absent_means_never() -> None:
    assert pool(ttlSecondsUntilExpired=2592000)["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert pool()["spec"]["template"]["spec"]["expireAfter"] == "Never"


def test_provider_ref_becomes_a_node_class_ref_in_nodewrights_group() -> None:
    assert pool()["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "nodewright.io",
        "kind": "EC2NodeClass",
        "name": "default",
    }


def test_inline_provider_becomes_an_ec2nodeclass_named_after_the_provisioner() -> None:
    provider = {
        "amiFamily": "Bottlerocket",
        "subnetSelector": {"team": "a"},
        "securityGroupSelector": {"team": "a"},
        "instanceProfile": "NodeProfile",
    }
    text = doc("karpenter.sh/v1alpha5", "Provisioner", {"provider": provider}, "web")
    docs = valid(migrate(text))
    (node_class,) = kinds(docs, "EC2NodeClass")
    assert node_class["metadata"] == {"name": "web"}
    assert node_class["spec"]["instanceProfile"] == "NodeProfile" and "role" not in node_class["spec"]
    assert kinds(docs, "NodePool")[0]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "web"


def test_limits_resources_become_limits_and_metadata_taints_weight_are_carried() -> None:
    taint, startup = [{"key": "a", "effect": "NoSchedule"}], [{"key": "b", "effect": "NoSchedule"}]
    spec = pool(
        limits={"resources": {"cpu": "100"}},
        labels={"team": "a"},
        annotations={"x/y": "z"},
        taints=taint,
        startupTaints=startup,
        weight=7,
    )["spec"]
    assert spec["limits"] == {"cpu": "100"} and spec["weight"] == 7
    assert spec["template"]["metadata"] == {"labels": {"team": "a"}, "annotations": {"x/y": "z"}}
    assert spec["template"]["spec"]["taints"] == taint and spec["template"]["spec"]["startupTaints"] == startup


def test_v1alpha5_defaulted_requirements_are_written_out_unless_ignored() -> None:
    keys = [r["key"] for r in pool()["spec"]["template"]["spec"]["requirements"]]
    assert keys == [
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "karpenter.sh/capacity-type",
        "karpenter.k8s.aws/instance-category",
        "karpenter.k8s.aws/instance-generation",
    ]
    own = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}]
    keys = [r["key"] for r in pool(requirements=own)["spec"]["template"]["spec"]["requirements"]]
    assert "karpenter.k8s.aws/instance-category" not in keys and keys[0] == "node.kubernetes.io/instance-type"
    ignored = migrate(provisioner(), Options(ignore_defaults=True))
    assert ignored[0]["spec"]["template"]["spec"]["requirements"] == []


def test_kubelet_configuration_moves_to_the_ec2nodeclass() -> None:
    kubelet = {"maxPods": 20, "containerRuntime": "containerd"}
    docs = valid(migrate(provisioner(kubeletConfiguration=kubelet) + "---\n" + TEMPLATE))
    (node_class,) = kinds(docs, "EC2NodeClass")
    assert node_class["spec"]["kubelet"] == {"maxPods": 20}
    assert "kubelet" not in kinds(docs, "NodePool")[0]["spec"]["template"]["spec"]


def test_one_ec2nodeclass_per_distinct_kubelet() -> None:
    text = "---\n".join(
        [
            provisioner("a", kubeletConfiguration={"maxPods": 10}),
            provisioner("b", kubeletConfiguration={"maxPods": 20}),
            provisioner("c", kubeletConfiguration={"maxPods": 20}),
            TEMPLATE,
        ]
    )
    docs = valid(migrate(text))
    classes = {d["metadata"]["name"]: d["spec"].get("kubelet") for d in kinds(docs, "EC2NodeClass")}
    assert classes == {"default": {"maxPods": 10}, "default-b": {"maxPods": 20}}
    refs = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["nodeClassRef"]["name"] for d in kinds(docs, "NodePool")
    }
    assert refs == {"a": "default", "b": "default-b", "c": "default-b"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"consolidation": {"enabled": True}, "ttlSecondsAfterEmpty": 30}, r"spec\.ttlSecondsAfterEmpty: cannot be"),
        ({"ttlSecondsAfterEmpty": -1}, r"spec\.ttlSecondsAfterEmpty: -1 is negative"),
        ({"ttlSecondsUntilExpired": -5}, r"spec\.ttlSecondsUntilExpired: -5 is negative"),
        ({"provider": {"subnetSelector": {"a": "b"}}}, r"spec\.provider: cannot be set with spec\.providerRef"),
        ({"kubeletConfiguration": {"maxPods": 5}}, r"EC2NodeClass/default is not among the files given"),
        ({"ttlSecondAfterEmpty": 5}, r"spec\.ttlSecondAfterEmpty: is not a field"),
    ],
)
def test_refusals_name_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(MigrationError, match=message):
        migrate(provisioner(**spec))
