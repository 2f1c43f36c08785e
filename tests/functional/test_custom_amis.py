"""`amiFamily: Custom` and non-alias amiSelectorTerms against moto: which image each architecture gets, and what
the launched instance boots with.

Images are made as a user makes them: an instance from a public image, `CreateImage` from it, tagged. The
resolution follows aws/karpenter-provider-aws v1.14.1 `pkg/providers/amifamily/ami.go` (one DescribeImages
request per term, ids together, available images only, newest per architecture wins across all terms);
the pure parts are unit-tested in `tests/unit/launch/test_launch_amis.py`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from unittest import mock

import boto3
import pytest
from handlers import Context, load_handler
from test_provisioner_handler import CLUSTER, K8S, REGION, event, instances, manifests, pod

from nodewright.adapters.ec2_launcher import ec2_cloud
from nodewright.adapters.memory import InMemoryCluster
from nodewright.model.parse_ec2nodeclass import parse_ec2nodeclass
from nodewright.ports import NodeClassError

ARCH_TYPES = {"arm64": "m6g.large", "x86_64": "m5.large"}


@contextmanager
def created_at(when: str) -> Iterator[None]:
    """Images made inside get this CreationDate (moto stamps them with its clock)."""
    with mock.patch("moto.ec2.models.amis.utcnow", return_value=datetime.fromisoformat(when)):
        yield


def make_image(account: dict[str, Any], arch: str, name: str, when: str, tags: dict[str, str]) -> str:
    """A user's image: an instance of the public AL2023 image of `arch`, imaged at `when` and tagged."""
    ec2 = account["ec2"]
    base = account["amis"][
        f"/aws/service/eks/optimized-ami/{K8S}/amazon-linux-2023/{arch}/standard/recommended/image_id"
    ]
    instance = ec2.run_instances(ImageId=base, MinCount=1, MaxCount=1, InstanceType=ARCH_TYPES[arch])
    instance_id = instance["Instances"][0]["InstanceId"]
    spec = [{"ResourceType": "image", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    with created_at(when):
        image_id = str(ec2.create_image(InstanceId=instance_id, Name=name, TagSpecifications=spec)["ImageId"])
    ec2.terminate_instances(InstanceIds=[instance_id])
    return image_id


def node_class(terms: list[dict[str, Any]], family: str = "Custom", user_data: str = "") -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiFamily": family,
            "amiSelectorTerms": terms,
            "role": f"{CLUSTER}-node",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        },
    }
    if user_data:
        doc["spec"]["userData"] = user_data
    return doc


def resolved_images(terms: list[dict[str, Any]]) -> dict[str, str]:
    parsed, errors = parse_ec2nodeclass(node_class(terms))
    assert parsed is not None, [str(e) for e in errors]
    cloud = ec2_cloud(CLUSTER, f"{CLUSTER}-node", f"{CLUSTER}-node", REGION)
    resolved = cloud.resolve_node_class(parsed, K8S)
    # Non-alias terms say nothing about GPUs: NVIDIA types get the same image as the others.
    for arch, variant in resolved.images:
        assert resolved.images[(arch, variant)].id == resolved.images[(arch, "standard")].id
    return {arch: image.id for (arch, variant), image in resolved.images.items() if variant == "standard"}


@pytest.fixture(autouse=True)
def without_moto_default_images(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the account's own images and the public AL2023/Bottlerocket ones the seed registers: moto's thousand
    default images would make every DescribeImages by tag take seconds."""
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")


@pytest.fixture
def images(account: dict[str, Any]) -> dict[str, str]:
    made = {
        "x86-old": make_image(
            account, "x86_64", "team-node-1", "2026-01-01T00:00:00+00:00", {"team": "web", "os": "x"}
        ),
        "x86-new": make_image(account, "x86_64", "team-node-2", "2026-03-01T00:00:00+00:00", {"team": "web"}),
        "arm-new": make_image(account, "arm64", "team-node-2", "2026-02-01T00:00:00+00:00", {"team": "web"}),
        "other": make_image(account, "x86_64", "other-node-9", "2026-05-01T00:00:00+00:00", {"team": "data"}),
    }
    return made


def test_tags_select_the_newest_image_of_each_architecture(images: dict[str, str]) -> None:
    assert resolved_images([{"tags": {"team": "web"}}]) == {"amd64": images["x86-new"], "arm64": images["arm-new"]}
    # Every tag of a term must match; a tag value of "*" only needs the key.
    assert resolved_images([{"tags": {"team": "web", "os": "x"}}]) == {"amd64": images["x86-old"]}
    assert resolved_images([{"tags": {"os": "*"}}]) == {"amd64": images["x86-old"]}


def test_terms_are_alternatives_and_the_newest_of_all_wins(images: dict[str, str]) -> None:
    found = resolved_images([{"tags": {"team": "web"}}, {"tags": {"team": "data"}}])
    assert found == {"amd64": images["other"], "arm64": images["arm-new"]}


def test_name_patterns_and_owners_select_images(images: dict[str, str]) -> None:
    # A name without owner searches the account's own and Amazon's images: ours are "self".
    assert resolved_images([{"name": "team-node-*"}]) == {"amd64": images["x86-new"], "arm64": images["arm-new"]}
    assert resolved_images([{"name": "team-node-1", "owner": "self"}]) == {"amd64": images["x86-old"]}
    with pytest.raises(NodeClassError, match="name team-node-1 owned by 111122223333"):
        resolved_images([{"name": "team-node-1", "owner": "111122223333"}])


def test_ids_and_ssm_parameters_select_exactly_those_images(images: dict[str, str]) -> None:
    assert resolved_images([{"id": images["x86-old"]}]) == {"amd64": images["x86-old"]}
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/platform/node-image", Value=images["arm-new"], Type="String"
    )
    both = resolved_images([{"id": images["x86-old"]}, {"ssmParameter": "/platform/node-image"}])
    assert both == {"amd64": images["x86-old"], "arm64": images["arm-new"]}
    # A missing parameter selects nothing (Karpenter skips it), which here leaves no image at all.
    with pytest.raises(NodeClassError, match=r"no AMI found for amiSelectorTerms.*ssmParameter /missing"):
        resolved_images([{"ssmParameter": "/missing"}])


def test_images_that_are_no_longer_available_are_not_picked(account: dict[str, Any], images: dict[str, str]) -> None:
    account["ec2"].deregister_image(ImageId=images["x86-new"])
    assert resolved_images([{"tags": {"team": "web"}}]) == {"amd64": images["x86-old"], "arm64": images["arm-new"]}


def test_a_custom_node_boots_the_selected_image_with_the_users_user_data_only(
    account: dict[str, Any], images: dict[str, str]
) -> None:
    theirs = "#!/bin/bash\n/opt/acme/join-cluster --cluster func --labels team=web\n"
    documents = manifests(
        pod("x86-0", nodeSelector={"kubernetes.io/arch": "amd64"}),
        pod("arm-0", nodeSelector={"kubernetes.io/arch": "arm64"}),
    )
    documents[1] = node_class([{"tags": {"team": "web"}}], user_data=theirs)
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(documents)
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())
    ec2 = account["ec2"]
    running = {i["InstanceId"]: i for i in instances(ec2)}
    assert {c["instance_id"] for c in response["nodeclaims"]} == set(running)
    assert {i["Architecture"] for i in running.values()} == {"x86_64", "arm64"}
    for instance in running.values():
        expected = images["arm-new"] if instance["Architecture"] == "arm64" else images["x86-new"]
        assert instance["ImageId"] == expected
        attribute = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        assert base64.b64decode(attribute["UserData"]["Value"]).decode() == theirs
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        versions = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])
        data = versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]
        # No block devices of ours: the image's own volumes are used.
        assert "BlockDeviceMappings" not in data


def test_al2023_with_its_own_images_merges_the_users_nodeconfig_before_ours(
    account: dict[str, Any], images: dict[str, str]
) -> None:
    from nodewright.localworld.userdata import parse_user_data

    theirs = (
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags:\n"
        "      - --node-labels=image=golden\n"
    )
    documents = manifests(pod("web-0"))
    documents[1] = node_class([{"tags": {"team": "web"}}], family="AL2023", user_data=theirs)
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(documents)
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    [claim] = handler.handler(event(cluster), Context())["nodeclaims"]
    ec2 = account["ec2"]
    [instance] = instances(ec2)
    assert instance["ImageId"] in (images["x86-new"], images["arm-new"])
    attribute = ec2.describe_instance_attribute(InstanceId=claim["instance_id"], Attribute="userData")
    boot = parse_user_data(attribute["UserData"]["Value"])
    # The user's NodeConfig first, then nodewright's: both labels, ours applied last.
    assert boot.labels["image"] == "golden" and boot.labels["karpenter.sh/nodepool"] == "general"
    assert boot.cluster_name == CLUSTER
