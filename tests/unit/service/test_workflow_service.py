"""The disruption workflow's steps against in-memory ports: the happy path, locks, PDBs, rollback, reruns."""

from __future__ import annotations

import json
from typing import Any

import pytest
from service_fakes import FakeCloud, FixedClock, SmallCatalog, node_for, nodeclass, nodepool, pod

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.disruption.commands import EXPIRED, PREPARE, SPOT_INTERRUPTION, DisruptionCommand
from nodewright.ports import Instance
from nodewright.service import workflow
from nodewright.service.provision import BATCH_ANNOTATION
from nodewright.service.workflow import DisruptionFailed, Ports
from nodewright.tags import NODECLAIM as NODECLAIM_TAG

CATALOG = SmallCatalog()
EXECUTION = "SpotInterruption-old-0123456789abcdef"


def ready(doc: dict[str, Any]) -> dict[str, Any]:
    doc["spec"]["taints"] = []
    doc["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return doc


def setup(**pool_spec: Any) -> tuple[InMemoryCluster, FakeCloud, FixedClock, Ports]:
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(**pool_spec), nodeclass()], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    instance = Instance("i-old", "m5.xlarge", "us-east-1a", "running", "spot", 0.0, {NODECLAIM_TAG: "old"})
    cloud.instances["i-old"] = instance
    cluster.put(ready(node_for(instance, "node-old")))
    cluster.put(
        {
            "apiVersion": "nodewright.io/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": "old",
                "labels": {"karpenter.sh/nodepool": "general"},
                "creationTimestamp": "2027-01-15T07:00:00Z",
            },
            "spec": {"expireAfter": "720h", "terminationGracePeriod": "10m"},
            "status": {
                "providerID": "aws:///us-east-1a/i-old",
                "nodeName": "node-old",
                "conditions": [{"type": "Registered", "status": "True"}],
            },
        }
    )
    for i in range(3):
        cluster.put({**pod(f"web-{i}"), "spec": {**pod(f"web-{i}")["spec"], "nodeName": "node-old"}})
    ds = pod("agent", cpu="100m", memory="64Mi")
    ds["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent"}]
    ds["spec"]["nodeName"] = "node-old"
    cluster.put(ds)
    return cluster, cloud, clock, Ports(cluster, cloud, InMemoryState(), clock, CATALOG)


def command(reason: str = SPOT_INTERRUPTION, **kw: Any) -> dict[str, Any]:
    deadline = kw.pop("deadline", 1_800_000_120.0)
    started = 1_800_000_000.0
    return DisruptionCommand("old", "node-old", "i-old", reason, True, "evt-1", started, deadline, **kw).to_input()


def run(step: str, state: dict[str, Any], ports: Ports, execution: str = EXECUTION) -> dict[str, Any]:
    out = workflow.STEPS[step](state, execution, ports)
    key = {"identify": "identify", "launch_replacement": "replacement", "drain": "drain"}.get(step, step)
    state[key] = out
    return out


def test_spot_interruption_runs_identify_replace_drain_terminate() -> None:
    cluster, cloud, _, ports = setup()
    state = command()
    found = run("identify", state, ports)
    assert found["outcome"] == "proceed" and found["urgent"]
    assert found["moving"] == ["web/web-0", "web/web-1", "web/web-2"]  # the DaemonSet pod stays
    assert found["deadline"] == 1_800_000_120.0

    replacement = run("launch_replacement", state, ports)
    [name] = replacement["nodeclaims"]
    claim = cluster.nodeclaim(name)
    assert claim is not None and claim["metadata"]["annotations"][BATCH_ANNOTATION] == f"replace-{EXECUTION}"
    taints = cluster.objects[("Node", "", "node-old")]["spec"]["taints"]
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints
    # The replacement is sized for the three pods, not for the node as a whole.
    assert json.loads(claim["metadata"]["annotations"]["nodewright.io/pods"]) == found["moving"]

    cluster.eviction_blocked.add("web/web-1")  # a PodDisruptionBudget says no to this one
    first = run("drain", state, ports)
    assert first["evicted"] == ["web/web-0", "web/web-2"] and first["blocked"] == ["web/web-1"]
    assert not first["done"] and first["left_total"] == 0  # counted before this round's evictions take effect
    assert cluster.objects[("Node", "", "node-old")]["spec"]["unschedulable"] is True
    cluster.eviction_blocked.clear()
    second = run("drain", state, ports)
    assert second["evicted"] == ["web/web-1"] and second["evicted_total"] == 3 and second["blocked_total"] == 1
    assert second["left_total"] == 2
    # A round retried with the state from before its failed attempt: its evictions are not in evicted_total,
    # but the pods that left are in left_total, which is read from the cluster.
    retried = dict(state, drain=first)
    last = workflow.STEPS["drain"](retried, EXECUTION, ports)
    # The DaemonSet pod goes once the others are gone (Karpenter's terminator evicts DaemonSet pods after them).
    assert last["evicted"] == ["web/agent"] and not last["done"]
    assert last["evicted_total"] == 3 and last["left_total"] == 3
    assert run("drain", state, ports)["done"]

    out = run("terminate", state, ports)
    assert out["terminated"] == "i-old" and "i-old" in cloud.terminated
    assert ("Node", "", "node-old") not in cluster.objects and cluster.nodeclaim("old") is None
    assert ports.state.locks == {}  # type: ignore[attr-defined]
    reasons = [e.reason for e in cluster.events if e.pod == "node/node-old"]
    assert reasons == [
        "DisruptionStarted",
        "ReplacementLaunched",
        "DisruptionTerminating",
        "DrainStarted",
        "Drained",
        "Terminated",
    ]


def test_a_second_execution_for_the_same_node_stops_at_the_lock_and_a_rerun_reenters() -> None:
    _, _, _, ports = setup()
    assert run("identify", command(), ports)["outcome"] == "proceed"
    other = run("identify", command(), ports, execution="another")
    assert other["outcome"] == "locked" and EXECUTION in other["reason"]
    assert run("identify", command(), ports)["outcome"] == "proceed"


def test_after_the_deadline_pods_a_budget_holds_are_deleted() -> None:
    cluster, _, clock, ports = setup()
    state = command()
    run("identify", state, ports)
    cluster.eviction_blocked.update({"web/web-0", "web/web-1", "web/web-2"})
    assert run("drain", state, ports)["blocked"] == ["web/web-0", "web/web-1", "web/web-2"]
    clock.t = 1_800_000_121.0
    late = run("drain", state, ports)
    assert late["deleted"] == ["web/agent", "web/web-0", "web/web-1", "web/web-2"] and late["evicted"] == []
    assert run("drain", state, ports)["done"]


def test_a_replacement_that_cannot_launch_fails_a_voluntary_disruption_and_rollback_restores_the_node() -> None:
    cluster, cloud, _, ports = setup()
    cloud.reject = "every offering refused"
    state = command(EXPIRED, deadline=None)
    state["forceful"] = True
    run("identify", state, ports)
    assert not state["identify"]["urgent"]
    with pytest.raises(DisruptionFailed, match="cannot launch"):
        run("launch_replacement", state, ports)
    state["error"] = {"Error": "DisruptionFailed", "Cause": "replacement cannot launch"}
    out = run("rollback", state, ports)
    assert out["restored"] is True
    node = cluster.objects[("Node", "", "node-old")]
    assert not any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"]["taints"])
    assert not node["spec"].get("unschedulable")
    assert ports.state.locks == {}  # type: ignore[attr-defined]


def test_rollback_removes_replacements_nobody_uses_and_keeps_a_used_one() -> None:
    cluster, cloud, _, ports = setup()
    state = command(EXPIRED, deadline=None)
    run("identify", state, ports)
    [name] = run("launch_replacement", state, ports)["nodeclaims"]
    instance_id = cluster.nodeclaim(name)["status"]["providerID"].rsplit("/", 1)[-1]  # type: ignore[index]
    state["error"] = {"Cause": "replacement never became Ready"}
    out = run("rollback", state, ports)
    assert out["removed_replacements"] == [name]
    assert cluster.nodeclaim(name) is None and instance_id in cloud.terminated


def test_check_replacement_finishes_registration_and_waits_for_ready() -> None:
    cluster, cloud, clock, ports = setup()
    state = command(EXPIRED, deadline=None)
    run("identify", state, ports)
    [name] = run("launch_replacement", state, ports)["nodeclaims"]
    assert run("check_replacement", state, ports) == {"ready": False, "waiting_for": [name]}
    instance_id = cluster.nodeclaim(name)["status"]["providerID"].rsplit("/", 1)[-1]  # type: ignore[index]
    new_node = node_for(cloud.instances[instance_id], "node-new")
    new_node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    cluster.put(new_node)
    assert run("check_replacement", state, ports)["ready"]
    assert cluster.objects[("Node", "", "node-new")]["spec"]["taints"] == []  # karpenter.sh/unregistered is off
    cluster.objects[("Node", "", "node-new")]["status"]["conditions"][0]["status"] = "False"
    clock.t += workflow.REPLACEMENT_TIMEOUT_SECONDS + 1
    with pytest.raises(DisruptionFailed, match="not Ready"):
        run("check_replacement", state, ports)


def test_a_rebalance_only_prepares_with_a_soft_taint_that_does_not_outlive_its_workflow() -> None:
    cluster, _, _, ports = setup()
    cluster.objects[("NodePool", "", "general")]["spec"]["disruption"] = {"consolidateAfter": "30m"}
    state = command("RebalanceRecommendation", action=PREPARE, deadline=None)
    state["forceful"] = False
    found = run("identify", state, ports)
    # Held through the protection window: the pool's consolidateAfter, at least ten minutes.
    assert found["protect_seconds"] == 1800
    run("launch_replacement", state, ports)
    taints = cluster.objects[("Node", "", "node-old")]["spec"]["taints"]
    assert {"key": "karpenter.sh/disrupted", "effect": "PreferNoSchedule"} in taints
    cluster.objects[("Node", "", "node-old")]["spec"]["taints"].append(
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}  # someone else's (an interruption's) drain
    )
    run("release", state, ports)
    assert ports.state.locks == {}  # type: ignore[attr-defined]
    assert cluster.objects[("Node", "", "node-old")]["spec"]["taints"] == [
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
    ]


def test_a_voluntary_disruption_blocked_by_do_not_disrupt_releases_its_lock() -> None:
    cluster, _, _, ports = setup()
    cluster.objects[("Pod", "web", "web-0")]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    state = command(EXPIRED, deadline=None)
    state["forceful"] = False
    found = run("identify", state, ports)
    assert found["outcome"] == "blocked" and "web/web-0" in found["reason"]
    assert ports.state.locks == {}  # type: ignore[attr-defined]
    assert [e.reason for e in cluster.events] == ["DisruptionBlocked"]


def test_a_nodeclaim_that_is_gone_needs_nothing() -> None:
    cluster, _, _, ports = setup()
    cluster.delete_nodeclaim("old")
    assert run("identify", command(), ports)["outcome"] == "gone"
