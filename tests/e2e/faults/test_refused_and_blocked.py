"""Issue 21, items 2 and 9: a Spot warning is drained while DynamoDB refuses every write, and a drain that a
PodDisruptionBudget holds never gets a second launch for its pods.

Bounds proved:
- with every DynamoDB write refused (as throttling, a restore or a broken IAM policy would), a Spot warning's
  workflow still starts, drains the node under its PDB by its deadline (receipt + 120 s) and terminates the
  instance; the unavailable-offering mark, which could not be written, fails nothing;
- while the drain is held, three provisioner batches (pods pending elsewhere in the namespace) launch nothing
  for the draining node's pods: the NodeClaim launched as their replacement keeps their room.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from faultkit import blocking_pdb, deletions, stop, wait_for_blocked_drain
from test_disruption import Stack, command_for, nodeclaims, output, pdb, registered, spot
from test_provisioning import deployment
from test_termination import instance_state
from worldkit import World, wait_for

from nodewright.disruption.commands import EXPIRED

pytestmark = pytest.mark.timeout(600)
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def test_a_spot_warning_is_drained_by_its_deadline_while_dynamodb_refuses_every_write(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("m6i.4xlarge"))
    deployment(world, namespace, pool, "web", 3, "250m", "256Mi")
    pdb(world, namespace, "web")  # maxUnavailable 1
    claim, node = registered(world, stack, namespace, pool, 3)
    instance = node.spec.provider_id.rsplit("/", 1)[-1]
    refused = [
        {"action": f"dynamodb:{action}", "code": "ProvisionedThroughputExceededException", "status": 400}
        for action in WRITES
    ]
    world.set_faults({"refuse": refused})

    warned = time.time()
    stack.put_spot_warnings(instance)
    name = claim["metadata"]["name"]
    [urgent] = wait_for(lambda: stack.executions_for(name), 30, "the Spot warning's workflow to start")
    described = stack.finish(urgent["executionArn"], timeout=300)
    fired = sum(rule["fired"] for rule in world.faults()["refuse"])
    world.set_faults({})
    assert described["status"] == "SUCCEEDED", described
    assert fired > 0  # the writes were refused, not skipped
    result = output(described)
    deadline = result["identify"]["deadline"]
    assert warned + 120 <= deadline <= warned + 150
    assert all(at >= deadline for at, _ in deletions(stack, urgent["executionArn"]))
    assert instance_state(world, instance) in ("shutting-down", "terminated")
    marks = world.aws("dynamodb").query(
        TableName=stack.outputs["TableName"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "unavailable"}},
    )["Items"]
    assert not [m for m in marks if m["sk"]["S"].startswith("m6i.4xlarge#")]  # the mark was refused, nothing else


def test_a_pdb_blocked_drain_gets_no_second_launch_from_later_batches(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("m6i.2xlarge"))
    deployment(world, namespace, pool, "web", 2, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 2)
    blocking_pdb(world, namespace, "web")
    execution = stack.start(command_for(claim, node, EXPIRED, f"faults-{namespace}"))
    wait_for_blocked_drain(stack, execution)
    launched = {c["metadata"]["name"] for c in nodeclaims(world, pool)}
    assert len(launched) == 2  # the node and its replacement

    # A pod nothing can place (no NodePool selects it) keeps the forwarder sending batches, as pending pods do.
    world.apps.create_namespaced_deployment(
        namespace,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "stray"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "stray"}},
                "template": {
                    "metadata": {"labels": {"app": "stray"}},
                    "spec": {
                        "containers": [{"name": "app", "image": "app"}],
                        "nodeSelector": {"nodewright.io/e2e-nowhere": "true"},
                    },
                },
            },
        },
    )
    wait_for(lambda: stack.provisioner.pending_payloads(namespace), 60, "a pending pod")
    for _ in range(3):
        stack.provisioner.provision(namespace)
    after = {c["metadata"]["name"] for c in nodeclaims(world, pool)}
    assert after == launched, f"launched again while the drain was held: {sorted(after - launched)}"
    stop(stack, execution)
