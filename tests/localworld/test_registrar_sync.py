"""The registrar follows instances incrementally: each instance is described once, nodes are listed only at a
resync, and moto's tag lookups and state listing stay cheap at thousands of instances (moto in-process)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import boto3
import pytest
from kubernetes.client.exceptions import ApiException
from moto import mock_aws
from moto.backends import get_backend

from nodewright.localworld.motoserver import index_ec2_tags, instance_states
from nodewright.localworld.registrar import INSTANCE_ANNOTATION, Registrar, described_states

CLUSTER = "prod"
KWOK = "kwok.x-k8s.io/node"


class FakeCore:
    """An API server's nodes: create (409 when taken), patch labels, delete, and a raw list (counted)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.created: list[str] = []
        self.patched: list[str] = []
        self.lists = 0

    def list_node(self, resource_version: str, _preload_content: bool) -> Any:
        assert resource_version == "0" and _preload_content is False  # the cache, raw JSON
        self.lists += 1
        data = json.dumps({"items": list(self.nodes.values())}).encode()
        return type("Response", (), {"data": data})()

    def create_node(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        if name in self.nodes:
            raise ApiException(status=409)
        self.nodes[name] = body
        self.created.append(name)

    def patch_node(self, name: str, body: dict[str, Any]) -> None:
        if name not in self.nodes:
            raise ApiException(status=404)
        labels = self.nodes[name]["metadata"]["labels"]
        for key, value in body["metadata"]["labels"].items():
            if value is None:
                labels.pop(key, None)
        self.patched.append(name)

    def add(self, name: str, instance_id: str) -> None:
        """A node someone else registered for `instance_id` (a bench's fleet)."""
        meta = {"name": name, "labels": {KWOK: "fake"}, "annotations": {INSTANCE_ANNOTATION: instance_id}}
        self.nodes[name] = {"metadata": meta}


class CountingEc2:
    """The EC2 client, with the instance ids each DescribeInstances asked for."""

    def __init__(self, ec2: Any) -> None:
        self.ec2 = ec2
        self.described: list[str] = []

    def get_paginator(self, name: str) -> Any:
        paginator = self.ec2.get_paginator(name)
        if name != "describe_instances":
            return paginator
        described = self.described

        class Counted:
            def paginate(self, **kwargs: Any) -> Any:
                filters = kwargs.get("Filters")
                assert filters and filters[0]["Name"] == "instance-id"  # never the whole fleet
                described.extend(filters[0]["Values"])
                return paginator.paginate(**kwargs)

        return Counted()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ec2, name)


def launch(ec2: Any, count: int, cluster: str = CLUSTER) -> list[dict[str, Any]]:
    tags = [{"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"}]
    return list(
        ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType="m5.large",
            MinCount=count,
            MaxCount=count,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )["Instances"]
    )


def after(instance: dict[str, Any], seconds: float) -> datetime.datetime:
    launched: datetime.datetime = instance["LaunchTime"]
    return launched + datetime.timedelta(seconds=seconds)


@pytest.fixture
def world() -> Any:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        yield CountingEc2(ec2), FakeCore()


def registrar(ec2: Any, core: FakeCore, resync: float = 30.0) -> Registrar:
    return Registrar(ec2, core, CLUSTER, "us-east-1", boot_delay=5, resync_seconds=resync)


def test_waits_for_boot_registers_once_and_releases_a_gone_instance_once(world: Any) -> None:
    ec2, core = world
    [instance] = launch(ec2.ec2, 1)
    agent = registrar(ec2, core)
    assert agent.sync(after(instance, 2)) == []
    name = instance["PrivateDnsName"]
    assert agent.sync(after(instance, 6)) == [f"registered {name} for {instance['InstanceId']}"]
    assert agent.sync(after(instance, 7)) == [] and core.created == [name]
    ec2.ec2.terminate_instances(InstanceIds=[instance["InstanceId"]])
    assert agent.sync(after(instance, 8)) == [f"released {name} ({instance['InstanceId']} is terminated)"]
    assert agent.sync(after(instance, 9)) == []
    assert core.patched == [name] and KWOK not in core.nodes[name]["metadata"]["labels"]


def test_each_instance_is_described_once_and_nodes_are_listed_only_at_a_resync(world: Any) -> None:
    ec2, core = world
    ours = launch(ec2.ec2, 20)
    foreign = launch(ec2.ec2, 5, cluster="staging")
    agent = registrar(ec2, core, resync=30)
    for second in (1, 2, 3, 6, 7, 8, 20):
        agent.sync(after(ours[0], second))
    assert sorted(ec2.described) == sorted(i["InstanceId"] for i in ours + foreign)
    assert len(core.created) == 20 and core.lists == 1
    agent.sync(after(ours[0], 31))
    assert core.lists == 2 and sorted(ec2.described) == sorted(i["InstanceId"] for i in ours + foreign * 2)


def test_a_node_registered_elsewhere_is_taken_as_the_instances(world: Any) -> None:
    ec2, core = world
    first, second = launch(ec2.ec2, 2)
    core.add(first["PrivateDnsName"], first["InstanceId"])  # before the registrar's first list
    agent = registrar(ec2, core)
    agent.sync(after(first, 1))
    core.add(second["PrivateDnsName"], second["InstanceId"])  # after it: the create meets a 409
    assert agent.sync(after(first, 6)) == [] and core.created == []
    assert agent.sync(after(first, 7)) == [] and ec2.described.count(second["InstanceId"]) == 1
    ec2.ec2.terminate_instances(InstanceIds=[second["InstanceId"]])
    assert agent.sync(after(first, 8)) == [
        f"released {second['PrivateDnsName']} ({second['InstanceId']} is terminated)"
    ]


def test_a_deleted_node_of_a_running_instance_comes_back_at_the_resync(world: Any) -> None:
    ec2, core = world
    [instance] = launch(ec2.ec2, 1)
    agent = registrar(ec2, core, resync=30)
    agent.sync(after(instance, 6))
    del core.nodes[instance["PrivateDnsName"]]
    assert agent.sync(after(instance, 10)) == []  # not known yet: no list between resyncs
    assert agent.sync(after(instance, 40)) == [f"registered {instance['PrivateDnsName']} for {instance['InstanceId']}"]


def test_the_servers_instance_states_match_ec2s(world: Any) -> None:
    ec2, _ = world
    instances = launch(ec2.ec2, 4) + launch(ec2.ec2, 2, cluster="staging")
    ec2.ec2.terminate_instances(InstanceIds=[instances[0]["InstanceId"]])
    ec2.ec2.stop_instances(InstanceIds=[instances[1]["InstanceId"]])
    served = instance_states("us-east-1")
    assert served == described_states(ec2.ec2)()
    assert served[instances[0]["InstanceId"]] == "terminated" and len(served) == 6
    assert instance_states("eu-west-1") == {}


def test_indexed_tags_are_moto_s_own_without_scanning_every_resource(world: Any, monkeypatch: Any) -> None:
    ec2, _ = world
    launch(ec2.ec2, 3)
    backend = get_backend("ec2")["123456789012"]["us-east-1"]
    instance = next(iter(backend.reservations.values())).instances[0]
    expected = backend.describe_tags(filters={"resource-id": [instance.id]})
    index_ec2_tags()
    assert instance.get_tags() == expected

    def scan(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a tag lookup scanned the tag table")

    monkeypatch.setattr(type(backend), "describe_tags", scan)
    tag = {"Name": "tag-key", "Values": [f"kubernetes.io/cluster/{CLUSTER}"]}
    found = ec2.ec2.describe_instances(Filters=[tag])
    assert sum(len(r["Instances"]) for r in found["Reservations"]) == 3
    untagged = ec2.ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    rows = len(backend.tags)
    assert backend.get_vpc(untagged).get_tags() == [] and len(backend.tags) == rows  # no empty row added
