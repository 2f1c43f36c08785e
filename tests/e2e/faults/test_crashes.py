"""Issue 21, items 8 and 13: a Lambda that dies at a named step (the local world's kill seam) leaves nothing
that the next ticks and batches do not finish.

Bounds proved:
- a planner killed after taking a decision's lease and before StartExecution: the node is not started on while the
  lease's start grace (60 s) runs, and the first tick after it starts the workflow, which finishes;
- a provisioner killed right after CreateFleet answered (before it recorded the instance on its NodeClaim): the
  NodeClaim adopts that instance and the pod runs on it; one instance is ever launched for the pod;
- a planner killed mid-watch (after the first line of its NodeClaims watch, with the NodeClaim's deletion in it):
  the warm container's store stays at the last event it applied, and the next tick starts the deletion's workflow.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from faultkit import execution_named
from kubernetes import client
from test_disruption import Stack, nodeclaims, registered, spot
from test_provisioning import converge, deployment, running
from test_scale_down import tick
from worldkit import World, wait_for

from nodewright.disruption.commands import DELETED
from nodewright.disruption.lease import START_GRACE_SECONDS

pytestmark = pytest.mark.timeout(600)


def invoke_dying(world: World, function: str, payload: bytes) -> dict[str, Any]:
    """Invoke a function that a kill rule stops; returns its error answer."""
    response = world.aws("lambda").invoke(FunctionName=function, Payload=payload)
    body: dict[str, Any] = json.loads(response["Payload"].read())
    assert "FunctionError" in response, body
    return body


def web_node(world: World, stack: Stack, namespace: str, pool_factory: Any) -> tuple[Any, str, Any]:
    """A spot c6i.large NodePool with one registered node running one web pod: (the pool, its NodeClaim's name,
    its Node)."""
    pool = pool_factory(spot("c6i.large"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 1)
    return pool, claim["metadata"]["name"], node


def test_a_planner_killed_before_start_execution_starts_the_workflow_once_the_lease_grace_has_passed(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool, name, node = web_node(world, stack, namespace, pool_factory)
    client.CustomObjectsApi(world.api_client).delete_cluster_custom_object("nodewright.io", "v1", "nodeclaims", name)

    planner = stack.outputs["PlannerFunctionName"]
    world.set_faults({"kill": [{"function": planner, "before": "states:StartExecution"}]})
    invoke_dying(world, planner, b"{}")
    assert world.faults()["kill"][0]["fired"] == 1
    crashed = time.time()
    lease = world.aws("dynamodb").get_item(
        TableName=stack.outputs["TableName"], Key={"pk": {"S": "lock"}, "sk": {"S": f"nodeclaim/{name}"}}
    )["Item"]
    owner = lease["owner"]["S"]
    assert owner not in {e["name"] for e in stack.executions()}  # taken, never started

    # Within the grace the lease holds: the starter may still be about to start it.
    assert not [s for s in tick(stack)["started"] if s["nodeclaim"] == name]
    time.sleep(max(0.0, crashed + START_GRACE_SECONDS + 1 - time.time()))
    [entry] = [s for s in tick(stack)["started"] if s["nodeclaim"] == name]
    assert entry["reason"] == DELETED
    finished = stack.finish(execution_named(stack, entry["execution"]), timeout=300)
    assert finished["status"] == "SUCCEEDED", finished
    assert name not in {c["metadata"]["name"] for c in nodeclaims(world, pool)}
    assert not world.core.list_node(field_selector=f"metadata.name={node.metadata.name}").items
    print(f"planner killed before StartExecution: restarted {time.time() - crashed:.0f}s after the crash")


def test_a_provisioner_killed_after_create_fleet_has_its_instance_adopted_and_never_launches_twice(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("c6i.xlarge"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    provisioner = stack.provisioner
    wait_for(lambda: provisioner.pending_payloads(namespace), 30, "the pod pending")

    world.set_faults({"kill": [{"function": provisioner.function, "after": "ec2:CreateFleet"}]})
    [body] = provisioner.pending_payloads(namespace)
    invoke_dying(world, provisioner.function, body)
    assert world.faults()["kill"][0]["fired"] == 1
    [launched] = pool.instances()
    [claim] = nodeclaims(world, pool)
    assert not (claim.get("status") or {}).get("providerID")  # the launch was never recorded

    # The forwarder sends the pod again; the planner ticks: the NodeClaim adopts the instance, the pod runs on it.
    def adopted() -> bool:
        tick(stack)
        converge(provisioner, namespace, 1, timeout=20)
        return bool(running(world, namespace))

    wait_for(adopted, 300, "the pod running on the adopted instance", interval=5)
    [claim] = nodeclaims(world, pool)
    assert claim["status"]["providerID"].endswith(launched["InstanceId"])
    ever = world.aws("ec2").describe_instances(Filters=[{"Name": "tag:nodewright.io/nodepool", "Values": [pool.name]}])
    ids = [i["InstanceId"] for r in ever["Reservations"] for i in r["Instances"]]
    assert ids == [launched["InstanceId"]], ids
    [pod] = running(world, namespace)
    node = world.core.read_node(pod.spec.node_name)
    assert node.spec.provider_id.endswith(launched["InstanceId"])


def test_a_planner_killed_mid_watch_resumes_from_its_store_and_the_next_tick_acts_on_the_change(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    _, name, node = web_node(world, stack, namespace, pool_factory)
    tick(stack)  # the warm container now follows its lists with watches

    planner = stack.outputs["PlannerFunctionName"]
    world.set_faults({"kill": [{"function": planner, "after": "k8s:WATCH /apis/nodewright.io/v1/nodeclaims"}]})
    client.CustomObjectsApi(world.api_client).delete_cluster_custom_object("nodewright.io", "v1", "nodeclaims", name)
    invoke_dying(world, planner, b"{}")
    assert world.faults()["kill"][0]["fired"] == 1
    world.set_faults({})

    [entry] = [s for s in tick(stack)["started"] if s["nodeclaim"] == name]
    assert entry["reason"] == DELETED
    finished = stack.finish(execution_named(stack, entry["execution"]), timeout=300)
    assert finished["status"] == "SUCCEEDED", finished
    assert not world.core.list_node(field_selector=f"metadata.name={node.metadata.name}").items
