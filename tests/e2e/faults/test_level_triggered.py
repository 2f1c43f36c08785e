"""Issue 21, items 5, 6 and 7: what a workflow left half done, or an instance that went behind nodewright's back,
is repaired by the planner's next ticks (the planner invoked as its schedule would, one call per tick).

Bounds proved, in ticks (a tick is a minute in AWS):
- a drain stopped mid-way (as a time-out, a crash or `StopExecution` ends it, with no Rollback) leaves its node
  tainted and cordoned; the first tick after gives it back (`DisruptionRestored`);
- a `Deleted` workflow that ended without finishing is followed by a new attempt at the first tick after (a new
  execution name, never ExecutionAlreadyExists), which finishes once the PodDisruptionBudget that held the drain
  is gone;
- a NodeClaim whose instance was terminated in EC2, with no event about it, is gone after at most two ticks.
"""

from __future__ import annotations

from typing import Any

import pytest
from faultkit import blocking_pdb, events_for, execution_named, states_entered, stop, taints, wait_for_blocked_drain
from kubernetes import client
from test_disruption import Stack, command_for, nodeclaims, registered, spot
from test_provisioning import deployment
from test_scale_down import tick
from test_termination import instance_state
from worldkit import World, wait_for

from nodewright.disruption.commands import DELETED, EXPIRED

pytestmark = pytest.mark.timeout(600)
DISRUPTED = "karpenter.sh/disrupted:NoSchedule"


def test_a_drain_stopped_without_its_rollback_is_given_back_by_the_next_tick(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("r6i.large"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 1)
    blocking_pdb(world, namespace, "web")
    execution = stack.start(command_for(claim, node, EXPIRED, f"faults-{namespace}"))
    wait_for_blocked_drain(stack, execution)
    name = node.metadata.name
    assert DISRUPTED in taints(world, name) and world.core.read_node(name).spec.unschedulable

    stop(stack, execution)
    assert "Rollback" not in states_entered(stack, execution)
    body = tick(stack)
    restored = [r for r in body["repaired"] if r["kind"] == "restore" and r["nodeclaim"] == claim["metadata"]["name"]]
    assert restored, body["repaired"]
    assert execution.rsplit(":", 1)[-1] in restored[0]["reason"], restored  # names the execution that died
    current = world.core.read_node(name)
    assert DISRUPTED not in taints(world, name) and not current.spec.unschedulable
    assert events_for(world, name, "DisruptionRestored")


def test_a_deleted_workflow_that_ended_early_is_attempted_again_and_finishes(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("r6i.xlarge"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 1)
    name = claim["metadata"]["name"]
    blocking_pdb(world, namespace, "web")
    client.CustomObjectsApi(world.api_client).delete_cluster_custom_object("nodewright.io", "v1", "nodeclaims", name)

    def started(body: dict[str, Any]) -> str:
        entry = next((s for s in body["started"] if s["nodeclaim"] == name and s["reason"] == DELETED), None)
        return str(entry["execution"]) if entry else ""

    first = started(tick(stack))
    first_arn = execution_named(stack, first)
    wait_for_blocked_drain(stack, first_arn)
    stop(stack, first_arn)
    # An attempt is named after its tick's minute: a tick in the same minute finds the dead attempt's name taken,
    # the first tick of the next minute (the next tick in AWS, where the schedule ticks every minute) starts anew.
    ticks = 0

    def next_attempt() -> str:
        nonlocal ticks
        ticks += 1
        return started(tick(stack))

    second = wait_for(next_attempt, 90, "a new Deleted attempt", interval=5)
    assert second != first
    print(f"Deleted attempt restarted after {ticks} tick(s) within 60 s of its death")
    world.policy.delete_namespaced_pod_disruption_budget("web", namespace)
    finished = stack.finish(execution_named(stack, second), timeout=300)
    assert finished["status"] == "SUCCEEDED", finished
    instance = claim["status"]["providerID"].rsplit("/", 1)[-1]
    assert instance_state(world, instance) in ("shutting-down", "terminated")
    assert name not in {c["metadata"]["name"] for c in nodeclaims(world, pool)}
    assert not world.core.list_node(field_selector=f"metadata.name={node.metadata.name}").items


def test_an_instance_terminated_behind_nodewrights_back_loses_its_nodeclaim_within_two_ticks_of_its_node_going(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("r6i.2xlarge"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 1)
    name = claim["metadata"]["name"]
    instance = claim["status"]["providerID"].rsplit("/", 1)[-1]
    world.aws("ec2").terminate_instances(InstanceIds=[instance])  # no state-change event reaches nodewright
    # While the Node still reports Ready its NodeClaim is kept (Karpenter's garbage collection: the kubelet may
    # still run); the node lease stops being renewed and the node lifecycle controller marks it NotReady.
    ready_before = _ready(world, node.metadata.name)
    tick(stack)
    if ready_before and _ready(world, node.metadata.name):  # Ready through the whole tick: the claim stays
        assert name in {c["metadata"]["name"] for c in nodeclaims(world, pool)}
    wait_for(lambda: not _ready(world, node.metadata.name) or None, 120, "the node to go NotReady")

    ticks = 0
    while name in {c["metadata"]["name"] for c in nodeclaims(world, pool)}:
        assert ticks < 2, f"NodeClaim {name} still there after {ticks} ticks"
        body = tick(stack)
        ticks += 1
    forgotten = [r for r in body["repaired"] if r["kind"] == "forget" and r["nodeclaim"] == name]
    assert forgotten, body["repaired"]
    assert not world.core.list_node(field_selector=f"metadata.name={node.metadata.name}").items
    print(f"instance terminated behind our back: NodeClaim gone after {ticks} tick(s)")


def _ready(world: World, node: str) -> bool:
    found = world.core.read_node(node)
    return any(c.type == "Ready" and c.status == "True" for c in found.status.conditions or [])
