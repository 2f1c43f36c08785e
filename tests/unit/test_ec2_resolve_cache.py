"""What a warm container keeps of resolved EC2NodeClasses (adapters.ec2_launcher): each part for Karpenter's TTL,
keyed on the spec fields it comes from, capped by `resolve_ttl`, and dropped when a launch finds it gone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.adapters.ec2_launcher import IMAGES_TTL, INSTANCE_PROFILE_TTL, SUBNETS_TTL, Ec2Cloud
from nodewright.model.loader import load_documents
from nodewright.model.nodeclass import EC2NodeClass


class Pages:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages

    def paginate(self, **_: Any) -> Iterator[dict[str, Any]]:
        yield from self.pages


class CountingEc2:
    """DescribeSubnets and DescribeSecurityGroups answered from a list, each call counted."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.subnets = [{"SubnetId": "subnet-a", "AvailabilityZone": "us-east-1a", "AvailableIpAddressCount": 100}]

    def get_paginator(self, operation: str) -> Pages:
        self.calls.append(operation)
        if operation == "describe_subnets":
            return Pages([{"Subnets": list(self.subnets)}])
        return Pages([{"SecurityGroups": [{"GroupId": "sg-1"}]}])


class CountingSsm:
    def __init__(self) -> None:
        self.calls = 0
        self.image = "ami-1"

    def get_parameters(self, Names: list[str]) -> dict[str, Any]:
        self.calls += 1
        return {"Parameters": [{"Name": name, "Value": self.image} for name in Names]}


def node_class(subnet_tag: str = "demo", role: str = "demo-node") -> EC2NodeClass:
    doc = {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": role,
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": subnet_tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        },
    }
    inputs, errors = load_documents([doc], "test", summaries=False)
    assert errors == []
    return inputs.nodeclasses[0]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def world() -> tuple[Ec2Cloud, CountingEc2, CountingSsm, Clock]:
    ec2, ssm, clock = CountingEc2(), CountingSsm(), Clock()
    cloud = Ec2Cloud("demo", "demo-node", "demo-profile", ec2=ec2, ssm=ssm, eks=None, clock=clock)
    return cloud, ec2, ssm, clock


def test_a_warm_container_resolves_a_class_once_within_the_ttl(world: Any) -> None:
    cloud, ec2, ssm, clock = world
    first = cloud.resolve_node_class(node_class(), "1.31")
    clock.now += SUBNETS_TTL - 1
    again = cloud.resolve_node_class(node_class(), "1.31")
    assert again == first and ec2.calls == ["describe_subnets", "describe_security_groups"] and ssm.calls == 1


def test_parts_expire_with_their_ttl_and_are_read_again(world: Any) -> None:
    cloud, ec2, ssm, clock = world
    cloud.resolve_node_class(node_class(), "1.31")
    ec2.subnets.append({"SubnetId": "subnet-b", "AvailabilityZone": "us-east-1b", "AvailableIpAddressCount": 5})
    ssm.image = "ami-2"
    clock.now += max(SUBNETS_TTL, IMAGES_TTL)
    resolved = cloud.resolve_node_class(node_class(), "1.31")
    assert [s.id for s in resolved.subnets] == ["subnet-a", "subnet-b"]
    assert {image.id for image in resolved.images.values()} == {"ami-2"}
    assert ec2.calls.count("describe_subnets") == 2 and ssm.calls == 2


def test_an_edited_spec_is_resolved_afresh_at_once_and_only_the_parts_it_changed(world: Any) -> None:
    cloud, ec2, ssm, _ = world
    cloud.resolve_node_class(node_class(), "1.31")
    cloud.resolve_node_class(node_class(subnet_tag="other"), "1.31")
    assert ec2.calls == ["describe_subnets", "describe_security_groups", "describe_subnets"]
    cloud.resolve_node_class(node_class(), "1.32")  # another Kubernetes version: other alias parameters
    assert ssm.calls == 2


def test_a_launch_that_found_a_resolved_resource_gone_drops_the_class(world: Any) -> None:
    cloud, ec2, ssm, _ = world
    cloud.resolve_node_class(node_class(), "1.31")
    ec2.subnets = [{"SubnetId": "subnet-new", "AvailabilityZone": "us-east-1a", "AvailableIpAddressCount": 9}]
    cloud.forget_node_class(node_class())
    resolved = cloud.resolve_node_class(node_class(), "1.31")
    assert [s.id for s in resolved.subnets] == ["subnet-new"] and ssm.calls == 2


def test_resolve_ttl_caps_every_part(world: Any) -> None:
    _, ec2, ssm, clock = world
    cloud = Ec2Cloud("demo", "demo-node", "demo-profile", ec2=ec2, ssm=ssm, eks=None, clock=clock, resolve_ttl=0.0)
    cloud.resolve_node_class(node_class(), "1.31")
    cloud.resolve_node_class(node_class(), "1.31")
    assert ec2.calls.count("describe_subnets") == 2 and ssm.calls == 2


def test_a_class_that_does_not_resolve_is_not_kept(world: Any) -> None:
    from nodewright.ports import NodeClassError

    cloud, ec2, _, _ = world
    ec2.subnets = []
    with pytest.raises(NodeClassError):
        cloud.resolve_node_class(node_class(), "1.31")
    ec2.subnets = [{"SubnetId": "subnet-a", "AvailabilityZone": "us-east-1a", "AvailableIpAddressCount": 1}]
    assert [s.id for s in cloud.resolve_node_class(node_class(), "1.31").subnets] == ["subnet-a"]


def test_instance_profiles_are_kept_for_karpenters_15_minutes() -> None:
    class Iam:
        calls = 0

        def get_instance_profile(self, InstanceProfileName: str) -> dict[str, Any]:
            Iam.calls += 1
            return {"InstanceProfile": {"Roles": [{"RoleName": "extra"}]}}

    clock = Clock()
    cloud = Ec2Cloud(
        "demo", "demo-node", "demo-profile", CountingEc2(), CountingSsm(), None, clock, node_roles=["extra"], iam=Iam
    )
    cloud.resolve_node_class(node_class(role="extra"), "1.31")
    clock.now += INSTANCE_PROFILE_TTL - 1
    cloud.resolve_node_class(node_class(role="extra"), "1.31")
    assert Iam.calls == 1
    clock.now += 1
    cloud.resolve_node_class(node_class(role="extra"), "1.31")
    assert Iam.calls == 2
