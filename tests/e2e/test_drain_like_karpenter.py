"""Issue 22's proofs on the local world: a do-not-disrupt duration and a DaemonSet pod's PodDisruptionBudget, as
Karpenter v1.14 treats them.

- `karpenter.sh/do-not-disrupt: "1m30s"` (Karpenter's IsDoNotDisruptActive, a Go duration): the pod holds its
  drifted node for 90 seconds from its start, then the planner replaces and drains the node as any other.
- A DaemonSet pod is evicted too, after the node's other pods (Karpenter's terminator groups), through the Eviction
  API, so its PodDisruptionBudget holds it; at the NodeClaim's terminationGracePeriod it is deleted, so the node
  does not outlive its grace period.

The planner is invoked as its schedule would be (one call per tick), and the stack's state machine runs the real
step handlers against the real API server (KWOK runs the pods, the DaemonSet controller places the agents).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from test_disruption import Stack, pdb
from test_provisioning import Pool, converge, deployment, running
from test_scale_down import execution_arn, launched, pool_nodes, scaling_pool, settle, tick, types
from worldkit import World, wait_for

from nodewright.disruption.commands import DELETED
from nodewright.model.do_not_disrupt import DO_NOT_DISRUPT

__all__ = ["scaling_pool"]  # the fixture, imported for pytest

PROTECTED_SECONDS = 90


def test_a_do_not_disrupt_duration_holds_drift_back_until_it_ends_then_the_node_is_replaced(
    local_world: World, namespace: str, stack: Stack, scaling_pool: Callable[..., Pool]
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large"), {"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]})
    deployment(world, namespace, pool, "keep", 1, "250m", "256Mi")
    template = {"metadata": {"annotations": {DO_NOT_DISRUPT: "1m30s"}}}
    world.apps.patch_namespaced_deployment("keep", namespace, {"spec": {"template": template}})
    converge(stack.provisioner, namespace, 1)

    def protected() -> Any:
        """The one keep pod, once it is the new template's (the rollout may still run the old one)."""
        found = running(world, namespace)
        annotated = len(found) == 1 and (found[0].metadata.annotations or {}).get(DO_NOT_DISRUPT) == "1m30s"
        return found[0] if annotated and found[0].status.start_time is not None else None

    pod = wait_for(protected, 90, "one running keep pod of the new template, with its start time")
    protected_until = pod.status.start_time.timestamp() + PROTECTED_SECONDS
    [claim] = launched(world, pool)
    name, old_node = claim["metadata"]["name"], pod.spec.node_name

    patch = {"spec": {"template": {"metadata": {"labels": {"e2e/rev": "2"}}}}}
    client.CustomObjectsApi(world.api_client).patch_cluster_custom_object(
        "nodewright.io", "v1", "nodepools", pool.name, patch
    )
    reasons = []
    while time.time() < protected_until - 10:  # drifted, but the pod's 90 seconds are not over
        body = tick(stack)
        assert not [s for s in body["started"] if s["nodeclaim"] == name], body
        reasons.append(body["skipped"].get(name, ""))
        time.sleep(5)
    assert any(DO_NOT_DISRUPT in r for r in reasons), reasons

    def replaced() -> bool:
        moved = running(world, namespace)
        return name not in {c["metadata"]["name"] for c in launched(world, pool)} and len(moved) == 1

    started = settle(stack, pool, replaced, timeout=300)
    print(json.dumps({"protected_until": protected_until, "skipped": reasons[-1], "started": started}))
    assert [(s["nodeclaim"], s["reason"], s["status"]) for s in started] == [(name, "Drifted", "SUCCEEDED")]
    execution = stack.sfn.describe_execution(executionArn=execution_arn(stack, started[0]["execution"]))
    assert execution["startDate"].timestamp() >= protected_until
    [moved] = running(world, namespace)
    assert moved.spec.node_name != old_node
    assert old_node not in {n.metadata.name for n in pool_nodes(world, pool)}


def daemonset(world: World, namespace: str, pool: Pool, name: str) -> None:
    """A DaemonSet on the pool's nodes only (its pods leave at once when deleted: grace period 0)."""
    pod_spec = {
        "containers": [{"name": "agent", "image": "agent", "resources": {"requests": {"cpu": "50m"}}}],
        "nodeSelector": {"karpenter.sh/nodepool": pool.name},
        "tolerations": [{**pool.taint, "operator": "Equal"}],
        "terminationGracePeriodSeconds": 0,
    }
    world.apps.create_namespaced_daemon_set(
        namespace,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
            },
        },
    )


def drain_rounds(stack: Stack, execution: str) -> list[tuple[float, dict[str, Any]]]:
    """Each drain round's output with the time it ended (a `Deleted` command drains in the urgent branch)."""
    return [
        (e["timestamp"].timestamp(), json.loads(e["stateExitedEventDetails"]["output"])["drain"])
        for e in stack.history(execution)
        if e["type"] == "TaskStateExited"
        and e["stateExitedEventDetails"]["name"].startswith(("CordonAndDrain", "CheckDrain"))  # ...Now when urgent
    ]


def test_a_daemonset_pod_is_evicted_after_the_other_pods_its_pdb_holds_it_and_the_grace_period_ends_it(
    local_world: World, namespace: str, stack: Stack, scaling_pool: Callable[..., Pool]
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large"), {"consolidateAfter": "Never"}, terminationGracePeriod="40s")
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    converge(stack.provisioner, namespace, 1)
    [claim] = launched(world, pool)
    assert claim["spec"]["terminationGracePeriod"] == "40s"
    [node] = [n.metadata.name for n in pool_nodes(world, pool)]
    daemonset(world, namespace, pool, "agent")

    def agent() -> Any:
        found = world.core.list_namespaced_pod(namespace, label_selector="app=agent").items
        return next((p for p in found if p.spec.node_name == node and p.status.phase == "Running"), None)

    agent_key = f"{namespace}/{wait_for(agent, 90, 'the DaemonSet pod running on the node').metadata.name}"
    pdb(world, namespace, "agent", max_unavailable=0)  # its eviction is always refused (HTTP 429)

    custom = client.CustomObjectsApi(world.api_client)
    custom.delete_cluster_custom_object("nodewright.io", "v1", "nodeclaims", claim["metadata"]["name"])

    def started() -> dict[str, Any] | None:
        body = tick(stack)
        return next((s for s in body["started"] if s["nodeclaim"] == claim["metadata"]["name"]), None)

    entry = wait_for(started, 90, f"a {DELETED} workflow", interval=2)
    execution = execution_arn(stack, entry["execution"])
    finished = stack.finish(execution, timeout=300)
    assert finished["status"] == "SUCCEEDED", finished
    result = json.loads(finished["output"])
    deadline = result["identify"]["deadline"]
    assert deadline == pytest.approx(result["requested_at"] + 40)
    rounds = drain_rounds(stack, execution)
    print(
        json.dumps(
            {"deadline": deadline, "rounds": [(at, r["evicted"], r["blocked"], r["deleted"]) for at, r in rounds]}
        )
    )

    web_evicted = next(
        i for i, (_, r) in enumerate(rounds) if any(p.startswith(f"{namespace}/web-") for p in r["evicted"])
    )
    agent_asked = [i for i, (_, r) in enumerate(rounds) if agent_key in r["blocked"] or agent_key in r["evicted"]]
    assert agent_asked and min(agent_asked) > web_evicted  # evicted last: only once the web pod had gone
    assert all(agent_key not in r["evicted"] for _, r in rounds)  # its budget refused every eviction
    [(deleted_at, _)] = [(at, r) for at, r in rounds if agent_key in r["deleted"]]
    assert deleted_at >= deadline  # deleted at the grace period's end (its own grace period is 0 s)
    assert rounds[-1][1]["done"]
    assert node not in {n.metadata.name for n in pool_nodes(world, pool)}
