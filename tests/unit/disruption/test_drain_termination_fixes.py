"""Issue 22's drain-side fixes: the grace period is the NodeClaim's own (item 7), a do-not-disrupt duration holds a
voluntary command only while it is active (item 1)."""

from __future__ import annotations

from typing import Any

from nodewright.disruption.commands import DRIFTED, SPOT_INTERRUPTION, DisruptionCommand
from nodewright.disruption.fleet import fleet_nodes
from nodewright.disruption.identify import BLOCKED, PROCEED, identify
from nodewright.model.conditions import rfc3339
from nodewright.model.nodepool import Disruption, NodeClassRef, NodePool

T0 = 1_800_000_000.0
REF = NodeClassRef("nodewright.io", "EC2NodeClass", "default")
POOL = NodePool(name="general", node_class_ref=REF, termination_grace_period_seconds=3600)


def claim(**spec: Any) -> dict[str, Any]:
    return {
        "kind": "NodeClaim",
        "metadata": {"name": "a", "labels": {"karpenter.sh/nodepool": "general"}, "creationTimestamp": rfc3339(T0)},
        "spec": spec,
        "status": {"providerID": "aws:///us-east-1a/i-a"},
    }


NODE = {
    "kind": "Node",
    "metadata": {"name": "node-a", "labels": {"karpenter.sh/nodepool": "general"}},
    "spec": {"providerID": "aws:///us-east-1a/i-a"},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


def pod(name: str, dnd: str | None = None, started_at: float | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "web", "annotations": {}},
        "spec": {},
        "status": {},
    }
    if dnd is not None:
        doc["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = dnd
    if started_at is not None:
        doc["status"]["startTime"] = rfc3339(started_at)
    return doc


def test_a_claim_without_a_grace_period_has_none_whatever_its_pool_says() -> None:
    """Item 7: Karpenter reads terminationGracePeriod from the NodeClaim only (written at launch)."""
    [without] = fleet_nodes([claim()], [NODE], {"general": POOL})
    assert without.termination_grace_period is None
    [own] = fleet_nodes([claim(terminationGracePeriod="10m")], [NODE], {"general": POOL})
    assert own.termination_grace_period == 600


def test_a_drift_of_a_claim_launched_before_its_pool_had_a_grace_period_is_held_by_do_not_disrupt() -> None:
    """Item 7, the issue's case: without the claim's own grace period, drift is not eventual and there is no
    deadline, so the do-not-disrupt pod holds it."""
    [member] = fleet_nodes([claim()], [NODE], {"general": POOL})
    drift = DisruptionCommand("a", "node-a", "i-a", DRIFTED, False, "drift", T0, None)
    decided = identify(drift, member, [pod("batch", "true")], POOL, 1, 0, T0)
    assert decided.outcome == BLOCKED
    forced = DisruptionCommand("a", "node-a", "i-a", SPOT_INTERRUPTION, True, "evt", T0, None)
    assert identify(forced, member, [], POOL, 1, 0, T0).deadline is None


def test_a_do_not_disrupt_duration_blocks_a_voluntary_command_only_while_active() -> None:
    """Item 1: Karpenter's IsDisruptable / IsDoNotDisruptActive; the reason says until when."""
    pool = NodePool(name="general", node_class_ref=REF, disruption=Disruption())
    [member] = fleet_nodes([claim()], [NODE], {"general": pool})
    drift = DisruptionCommand("a", "node-a", "i-a", DRIFTED, False, "drift", T0, None)
    held = pod("batch", "1h", started_at=T0 - 600)
    blocked = identify(drift, member, [held], pool, 1, 0, T0)
    assert blocked.outcome == BLOCKED
    assert "web/batch" in blocked.reason and rfc3339(T0 + 3000) in blocked.reason
    assert identify(drift, member, [held], pool, 1, 0, T0 + 3000).outcome == PROCEED
    assert identify(drift, member, [pod("batch", "soon", T0)], pool, 1, 0, T0).outcome == PROCEED
    assert identify(drift, member, [pod("batch", "1h")], pool, 1, 0, T0 + 10**6).outcome == BLOCKED
    leaving = pod("batch", "true")
    leaving["metadata"]["deletionTimestamp"] = rfc3339(T0)
    assert identify(drift, member, [leaving], pool, 1, 0, T0).outcome == PROCEED  # IsDisruptable: not active


def test_the_planners_pod_facts_read_equal_and_omitted_operator_tolerations_of_the_disrupted_taint() -> None:
    """Item 5: the planner's pod facts (disruption/state.py) share the drain's toleration matching."""
    from nodewright.disruption.state import pod_facts

    for toleration in (
        {"key": "karpenter.sh/disrupted", "operator": "Equal", "effect": "NoSchedule"},
        {"key": "karpenter.sh/disrupted"},
    ):
        doc = pod("p")
        doc["spec"]["tolerations"] = [toleration]
        assert pod_facts(doc).tolerates_disrupted, toleration
    doc = pod("p")
    doc["spec"]["tolerations"] = [{"key": "karpenter.sh/disrupted", "value": "x"}]
    assert not pod_facts(doc).tolerates_disrupted
