"""Node repair on the local world (issue 24, item 1): a node whose kubelet stops posting status is replaced, as
Karpenter v1.14's health controller replaces it, and its pods run elsewhere.

The kubelet stops: KWOK no longer manages the node (its `kwok.x-k8s.io/node` label goes, so nothing renews the
node's lease or status) and the node's Ready condition says Unknown, its transition 31 minutes back: the world's
clock for that node moved past the AWS provider's 30-minute toleration instead of the test waiting for it. The planner
is invoked as its schedule would be; the stack's state machine runs the real step handlers against the real API
server. A PodDisruptionBudget that allows no eviction covers the pod: a repair's grace period is over at once, so the
drain deletes what it would otherwise wait for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from test_disruption import Stack, pdb
from test_provisioning import Pool, converge, deployment, running
from test_scale_down import execution_arn, launched, pool_nodes, scaling_pool, tick, types
from worldkit import World, wait_for

from nodewright.disruption.commands import UNHEALTHY
from nodewright.disruption.repair import TERMINATION_TIMESTAMP_ANNOTATION
from nodewright.localworld.controlplane import KWOK_LABEL_KEY
from nodewright.model.conditions import rfc3339

__all__ = ["scaling_pool"]  # the fixture, imported for pytest


def stop_kubelet(world: World, node: str, unknown_for: float) -> None:
    """KWOK lets the node go, and its Ready condition has been Unknown for `unknown_for` seconds."""
    world.core.patch_node(node, {"metadata": {"labels": {KWOK_LABEL_KEY: None}}})
    now = time.time()
    ready = {
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": rfc3339(now - unknown_for),
        "lastTransitionTime": rfc3339(now - unknown_for),
    }
    world.core.patch_node_status(node, {"status": {"conditions": [ready]}})


def test_a_node_whose_kubelet_stops_posting_status_is_replaced_and_its_pods_run_elsewhere(
    local_world: World, namespace: str, stack: Stack, scaling_pool: Callable[..., Pool]
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large"), {"consolidateAfter": "Never"})
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    converge(stack.provisioner, namespace, 1)
    [claim] = launched(world, pool)
    name = claim["metadata"]["name"]
    [node] = [n.metadata.name for n in pool_nodes(world, pool)]
    pdb(world, namespace, "web", max_unavailable=0)
    stop_kubelet(world, node, unknown_for=31 * 60)

    def started() -> dict[str, Any] | None:
        body = tick(stack)
        return next((s for s in body["started"] if s["nodeclaim"] == name), None)

    entry = wait_for(started, 90, f"an {UNHEALTHY} workflow", interval=2)
    assert (entry["reason"], entry["method"]) == (UNHEALTHY, "repair")
    custom = client.CustomObjectsApi(world.api_client)
    repaired = custom.get_cluster_custom_object("nodewright.io", "v1", "nodeclaims", name)
    assert repaired["metadata"].get("deletionTimestamp")  # deleted, held by the finalizer until the workflow ends
    assert TERMINATION_TIMESTAMP_ANNOTATION in repaired["metadata"]["annotations"]

    execution = execution_arn(stack, entry["execution"])
    finished = stack.finish(execution, timeout=300)
    assert finished["status"] == "SUCCEEDED", finished
    output = json.loads(finished["output"])
    assert output["identify"]["deadline"] <= output["requested_at"] + 1  # the grace period ended at the repair

    def moved() -> Any:
        pods = running(world, namespace)
        return pods[0] if len(pods) == 1 and pods[0].spec.node_name != node else None

    pod = wait_for(moved, 180, "the web pod running on another node")
    print(json.dumps({"execution": entry["execution"], "moved_to": pod.spec.node_name}))
    assert name not in {c["metadata"]["name"] for c in launched(world, pool)}
    assert node not in {n.metadata.name for n in pool_nodes(world, pool)}


def test_a_nodepool_with_three_of_five_nodes_unhealthy_is_left_alone_with_karpenters_event(
    local_world: World, namespace: str, stack: Stack, scaling_pool: Callable[..., Pool]
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large"), {"consolidateAfter": "Never"})
    deployment(world, namespace, pool, "wide", 5, "1500m", "256Mi")  # one pod a node: 2 vCPUs each
    converge(stack.provisioner, namespace, 5)
    nodes = sorted(n.metadata.name for n in pool_nodes(world, pool))
    assert len(nodes) == 5
    for node in nodes[:3]:
        stop_kubelet(world, node, unknown_for=45 * 60)
    claims = {c["metadata"]["name"] for c in launched(world, pool)}

    body = tick(stack)
    assert not [s for s in body["started"] if s["nodeclaim"] in claims], body
    held = {claim: why for claim, why in body["skipped"].items() if claim in claims}
    assert len([why for why in held.values() if "3 of 5 in NodePool" in why]) == 3, held

    def blocked() -> list[Any]:
        events = world.core.list_event_for_all_namespaces(field_selector="reason=NodeRepairBlocked").items
        return [e for e in events if e.involved_object.name in nodes[:3]]

    found = wait_for(blocked, 30, "NodeRepairBlocked events on the unhealthy nodes")
    assert all(e.type == "Warning" and "more than 20% nodes are unhealthy" in e.message for e in found)
    assert claims == {c["metadata"]["name"] for c in launched(world, pool)}  # nothing was deleted
