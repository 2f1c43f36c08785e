"""Issue 21, items 1, 3 and 4: a Spot warning for a node another workflow holds (a drain, a rebalance's early
replacement) is never dropped, and its deadline counts from receipt.

Bound proved: no pod of the node leaves before `receipt + 120 s` unless evicted under its PodDisruptionBudget (here
the budget allows none, so none leaves before then), every pod has left and the instance is terminated when the
urgent execution ends, and the execution that held the node ends `Superseded` without rolling back; after a
rebalance recommendation, no `karpenter.sh/disrupted` taint is left on any node of the pool once both are done.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from faultkit import blocking_pdb, deletions, states_entered, wait_for_blocked_drain
from test_disruption import ReadyWatch, Stack, command_for, nodeclaims, output, pdb, registered, spot
from test_provisioning import deployment
from test_termination import instance_state
from worldkit import World, wait_for

from nodewright.disruption.commands import EXPIRED, REBALANCE

pytestmark = pytest.mark.timeout(600)


def test_a_spot_warning_takes_a_node_from_a_pdb_blocked_drain_and_drains_it_by_its_own_deadline(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("m6i.large"))
    deployment(world, namespace, pool, "web", 2, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 2)
    instance = node.spec.provider_id.rsplit("/", 1)[-1]
    blocking_pdb(world, namespace, "web")

    # A voluntary drain (Expired: forceful, but no interruption) holds the node and waits on the PDB.
    expiring = stack.start(command_for(claim, node, EXPIRED, f"faults-{namespace}"))
    wait_for_blocked_drain(stack, expiring)

    with ReadyWatch(world, namespace, "web") as watch:
        warned = time.time()
        stack.put_spot_warnings(instance)
        name = claim["metadata"]["name"]
        [urgent] = wait_for(lambda: stack.executions_for(name), 30, "the Spot warning's workflow to start")
        described = stack.finish(urgent["executionArn"], timeout=300)
    assert described["status"] == "SUCCEEDED", described
    result = output(described)
    assert result["identify"]["outcome"] == "proceed", result["identify"]
    deadline = result["identify"]["deadline"]
    # The deadline is the receipt's (never before the warning was sent) plus the two minutes.
    assert warned + 120 <= deadline <= warned + 150, (warned, deadline)
    deleted = deletions(stack, urgent["executionArn"])
    assert deleted and all(at >= deadline for at, _ in deleted), (deadline, deleted)
    # maxUnavailable 0: no pod became unready before the deadline.
    assert watch.lowest(until=deadline - 1) == 2, watch.samples

    # The voluntary holder stood down, touching nothing.
    voluntary = stack.finish(expiring)
    assert voluntary["status"] == "SUCCEEDED" and "Superseded" in states_entered(stack, expiring)
    assert "Rollback" not in states_entered(stack, expiring)
    assert instance_state(world, instance) in ("shutting-down", "terminated")
    assert name not in {c["metadata"]["name"] for c in nodeclaims(world, pool)}
    print(f"spot warning over a blocked drain: deadline at receipt+{deadline - warned:.1f}s, {len(deleted)} deleted")


def test_a_spot_warning_takes_a_node_from_its_rebalance_replacement_and_no_taint_outlives_them(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("m6i.8xlarge"))
    deployment(world, namespace, pool, "web", 3, "250m", "256Mi")
    pdb(world, namespace, "web")  # maxUnavailable 1
    claim, node = registered(world, stack, namespace, pool, 3)
    instance = node.spec.provider_id.rsplit("/", 1)[-1]
    name = claim["metadata"]["name"]
    region = world.state.region
    rebalance = {
        "Source": "aws.ec2",
        "DetailType": "EC2 Instance Rebalance Recommendation",
        "Resources": [f"arn:aws:ec2:{region}:123456789012:instance/{instance}"],
        "Detail": json.dumps({"instance-id": instance}),
    }
    assert world.aws("events").put_events(Entries=[rebalance])["FailedEntryCount"] == 0
    [preparing] = wait_for(lambda: stack.executions_for(name, REBALANCE), 30, "the rebalance's workflow to start")

    with ReadyWatch(world, namespace, "web") as watch:
        warned = time.time()
        stack.put_spot_warnings(instance)
        [urgent] = wait_for(lambda: stack.executions_for(name), 30, "the Spot warning's workflow to start")
        described = stack.finish(urgent["executionArn"], timeout=300)
    assert described["status"] == "SUCCEEDED", described
    deadline = output(described)["identify"]["deadline"]
    assert warned + 120 <= deadline <= warned + 150
    assert all(at >= deadline for at, _ in deletions(stack, urgent["executionArn"]))
    assert watch.lowest(until=deadline - 1) >= 2, watch.samples  # never more than the PDB's one unavailable
    prepared = stack.finish(preparing["executionArn"])
    assert prepared["status"] == "SUCCEEDED", prepared
    assert instance_state(world, instance) in ("shutting-down", "terminated")
    for other in world.core.list_node(label_selector=f"karpenter.sh/nodepool={pool.name}").items:
        assert all(t.key != "karpenter.sh/disrupted" for t in other.spec.taints or []), other.spec.taints
