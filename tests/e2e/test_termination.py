"""Termination end to end: nodewright's finalizer holds a deleted NodeClaim, Node or NodePool's claims until the
workflow has drained the node and terminated the instance; instances no NodeClaim accounts for are collected.

The planner Lambda is invoked as its schedule would (one call per tick); the deletions are what `kubectl delete`
sends, and a NodePool's NodeClaims go through the real kube-controller-manager's garbage collector (they name
the NodePool as their owner).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from test_disruption import Stack, nodeclaims, registered, spot
from test_provisioning import Pool, converge, deployment, running
from test_scale_down import execution_arn, tick
from worldkit import World, wait_for

from nodewright.disruption.commands import DELETED
from nodewright.tags import FINALIZER as TERMINATION_FINALIZER
from nodewright.tags import launch_tags


@pytest.fixture
def one_node(local_world: World, namespace: str, stack: Stack) -> Iterator[Any]:
    """Makes a spot NodePool of one instance type and converges one web pod onto a node of it; returns the pool,
    the node's NodeClaim and the Node. The pools are torn down after the test."""
    made: list[Pool] = []

    def make(instance_type: str) -> tuple[Pool, dict[str, Any], Any]:
        pool = Pool(local_world, stack.provisioner.node_role, namespace, spot(instance_type), None)
        made.append(pool)
        deployment(local_world, namespace, pool, "web", 1, "250m", "256Mi")
        claim, node = registered(local_world, stack, namespace, pool, 1)
        return pool, claim, node

    yield make
    for pool in made:
        pool.teardown()


def instance_state(world: World, instance_id: str) -> str:
    [reservation] = world.aws("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return str(reservation["Instances"][0]["State"]["Name"])


def deleted_and_terminated(stack: Stack, pool: Pool, claim: dict[str, Any], node: Any) -> dict[str, Any]:
    """Tick until the planner starts the claim's Deleted workflow; let it finish; return its entry."""
    world, name = stack.world, claim["metadata"]["name"]

    def started() -> dict[str, Any] | None:
        body = tick(stack)
        return next((s for s in body["started"] if s["nodeclaim"] == name and s["reason"] == DELETED), None)

    entry = wait_for(started, 90, f"a {DELETED} workflow for {name}", interval=2)
    finished = stack.finish(execution_arn(stack, entry["execution"]))
    assert finished["status"] == "SUCCEEDED", finished
    instance = claim["status"]["providerID"].rsplit("/", 1)[-1]
    assert instance_state(world, instance) in ("shutting-down", "terminated")
    assert name not in [c["metadata"]["name"] for c in nodeclaims(world, pool)]
    assert not world.core.list_node(field_selector=f"metadata.name={node.metadata.name}").items
    return entry


def test_kubectl_delete_nodeclaim_drains_the_node_and_terminates_the_instance_before_it_goes(
    local_world: World, namespace: str, stack: Stack, one_node: Any
) -> None:
    world = local_world
    pool, claim, node = one_node("m5.xlarge")
    assert claim["metadata"]["finalizers"] == [TERMINATION_FINALIZER]
    assert TERMINATION_FINALIZER in (world.core.read_node(node.metadata.name).metadata.finalizers or [])

    custom = client.CustomObjectsApi(world.api_client)
    custom.delete_cluster_custom_object("nodewright.io", "v1", "nodeclaims", claim["metadata"]["name"])
    [held] = nodeclaims(world, pool)  # the finalizer holds it until the instance is gone
    assert held["metadata"]["deletionTimestamp"]

    deleted_and_terminated(stack, pool, claim, node)
    # The pod was evicted and runs again elsewhere (on the workflow's replacement), not lost with the node.
    converge(stack.provisioner, namespace, 1)
    [moved] = running(world, namespace)
    assert moved.spec.node_name != node.metadata.name


def test_deleting_a_nodepool_removes_its_nodeclaims_gracefully(local_world: World, stack: Stack, one_node: Any) -> None:
    world = local_world
    pool, claim, node = one_node("c5.xlarge")
    [owner] = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("NodePool", pool.name)

    pool.custom.delete_cluster_custom_object("nodewright.io", "v1", "nodepools", pool.name)

    def cascaded() -> bool:  # the kube-controller-manager's garbage collector deletes the owned NodeClaim
        return all(c["metadata"].get("deletionTimestamp") for c in nodeclaims(world, pool))

    wait_for(cascaded, 60, "the NodeClaim deleted with its NodePool")
    deleted_and_terminated(stack, pool, claim, node)


def test_an_instance_with_nodewrights_tags_and_no_nodeclaim_is_terminated_after_the_grace_period(
    local_world: World, stack: Stack
) -> None:
    world = local_world
    ec2 = world.aws("ec2")
    cluster = world.state.cluster
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = launch_tags(cluster, "gone", "default", "gone-0123456789")
    spec = {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
    [leaked] = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=[spec])["Instances"]
    # Within Karpenter's 30 s after launch a NodeClaim may still be about to record it: left alone.
    assert leaked["InstanceId"] not in tick(stack)["collected"]
    assert instance_state(world, leaked["InstanceId"]) == "running"

    def collected() -> bool:
        return leaked["InstanceId"] in tick(stack)["collected"]

    wait_for(collected, 120, "the planner to collect the instance", interval=3)
    assert instance_state(world, leaked["InstanceId"]) in ("shutting-down", "terminated")
