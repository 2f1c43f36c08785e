"""The fleet join, expiration, the planner's commands and IdentifyCandidate's decision."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from cluster_builder import Cluster
from hypothesis import given
from hypothesis import strategies as st

from nodewright.disruption.commands import (
    EXPIRED,
    REASONS,
    SPOT_INTERRUPTION,
    CommandError,
    DisruptionCommand,
)
from nodewright.disruption.fleet import fleet_nodes
from nodewright.disruption.identify import BLOCKED, GONE, PROCEED, identify
from nodewright.disruption.methods import Expiration
from nodewright.disruption.plan import PLANNER_WINDOW_SECONDS, plan
from nodewright.model.nodepool import Budget, Disruption, NodeClassRef, NodePool

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
POOL = NodePool(name="general", node_class_ref=NodeClassRef("nodewright.io", "EC2NodeClass", "default"))


def claim(name: str, created: str = "2027-01-15T08:00:00Z", **spec: Any) -> dict[str, Any]:
    return {
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "general"}, "creationTimestamp": created},
        "spec": spec,
        "status": {"providerID": f"aws:///us-east-1a/i-{name}"},
    }


def node(name: str, instance: str, ready: bool = True, pool: str = "general", **extra: Any) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": pool} if pool else {}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": extra.get("annotations", {})},
        "spec": {"providerID": f"aws:///us-east-1a/i-{instance}", "taints": extra.get("taints", [])},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_the_fleet_joins_by_provider_id_and_claims_carry_their_own_expiry() -> None:
    fleet = fleet_nodes(
        [claim("a", expireAfter="1h", terminationGracePeriod="30m"), claim("b"), claim("c", expireAfter="Never")],
        [node("node-a", "a"), node("node-b", "b", ready=False)],
        {"general": POOL},
    )
    a, b, c = fleet
    assert (a.node, a.instance_id, a.ready, a.expire_after, a.termination_grace_period) == (
        "node-a",
        "i-a",
        True,
        3600,
        1800,
    )
    assert b.expire_after == POOL.expire_after_seconds and not b.ready and b.registered
    assert c.expire_after is None and not c.registered


def test_a_claim_pointed_at_a_node_nodewright_did_not_launch_joins_nothing() -> None:
    # A managed node group's node has no karpenter.sh/nodepool label; another pool's node carries another one.
    pointed = claim("mng")
    pointed["status"]["nodeName"] = "ip-10-0-0-9"
    fleet = fleet_nodes(
        [pointed, claim("other")],
        [node("ip-10-0-0-9", "mng", pool=""), node("node-other", "other", pool="batch")],
        {"general": POOL},
    )
    assert [(f.nodeclaim, f.node, f.registered) for f in fleet] == [("mng", "", False), ("other", "", False)]


def test_a_malformed_duration_is_reported_and_the_pool_value_used() -> None:
    [a] = fleet_nodes([claim("a", expireAfter="soon")], [], {"general": POOL})
    assert a.expire_after == POOL.expire_after_seconds
    assert a.problems and a.problems[0].startswith("spec.expireAfter:")


def test_expiration_names_old_nodes_once_per_window() -> None:
    cluster = Cluster(now=T0 + 2 * 3600)
    cluster.node("node-old", age=2 * 3600, expireAfter="1h")
    cluster.node("node-young", age=2 * 3600, expireAfter="10h")
    now = T0 + 2 * 3600
    decided = plan(cluster.state(), {}, [Expiration()])
    [command] = decided.commands(now)
    assert (command.nodeclaim, command.node, command.reason, command.forceful) == (
        "claim-node-old",
        "node-old",
        EXPIRED,
        True,
    )
    # A rerun in the same window names the same execution; the next window names a new one.
    again = plan(cluster.state(now=now + 1), {}, [Expiration()]).commands(now + 1)[0]
    later_now = now + PLANNER_WINDOW_SECONDS
    later = plan(cluster.state(now=later_now), {}, [Expiration()]).commands(later_now)[0]
    assert again.execution_name() == command.execution_name() != later.execution_name()


def test_a_claim_whose_node_never_registered_expires_from_its_creation() -> None:
    # Karpenter's nodeclaim/expiration controller: expireAfter counts from creation, registered or not.
    cluster = Cluster(now=T0 + 2 * 3600)
    cluster.node("node-lost", age=2 * 3600, expireAfter="1h")
    cluster.node("node-fresh", age=600, expireAfter="1h")
    for name in ("node-lost", "node-fresh"):
        cluster.docs.remove(cluster.find("Node", name))
    decided = plan(cluster.state(), {}, [Expiration()])
    [command] = decided.commands(cluster.now)
    assert (command.nodeclaim, command.node, command.instance_id, command.reason, command.forceful) == (
        "claim-node-lost",
        "",
        "i-node-lost",
        EXPIRED,
        True,
    )
    assert "never registered" in decided.decisions[0].detail
    assert "claim-node-fresh" not in {d.candidates[0].name for d in decided.decisions}


def test_a_node_being_disrupted_is_left_to_its_workflow() -> None:
    cluster = Cluster(now=T0 + 7200)
    cluster.node(
        "node-old", age=7200, expireAfter="1h", taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    )
    assert plan(cluster.state(), {}, [Expiration()]).decisions == []
    locked = Cluster(now=T0 + 7200)
    locked.node("node-old", age=7200, expireAfter="1h")
    assert plan(locked.state(locked=["claim-node-old"]), {}, [Expiration()]).decisions == []


def command(reason: str = SPOT_INTERRUPTION, forceful: bool = True, deadline: float | None = None) -> DisruptionCommand:
    return DisruptionCommand("a", "node-a", "i-a", reason, forceful, "evt-1", T0, deadline)


def pod(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "web", "annotations": annotations or {}}, "spec": {}}


DND = {"karpenter.sh/do-not-disrupt": "true"}


def test_identify_forceful_goes_ahead_whatever_holds_it() -> None:
    [a] = fleet_nodes([claim("a", terminationGracePeriod="5m")], [node("node-a", "a", annotations=DND)], {})
    decided = identify(command(deadline=T0 + 120), a, [pod("p", DND), pod("q")], POOL, 1, 0, T0)
    assert decided.outcome == PROCEED and decided.urgent
    assert decided.moving == ("web/p", "web/q")
    assert decided.deadline == T0 + 120  # the earlier of the event's deadline and the grace period
    expired = identify(command(EXPIRED), a, [], POOL, 1, 0, T0)
    assert expired.deadline == T0 + 300 and not expired.urgent


def test_identify_voluntary_stops_at_do_not_disrupt_and_budgets() -> None:
    [a] = fleet_nodes([claim("a")], [node("node-a", "a")], {})
    voluntary = replace(command(EXPIRED, forceful=False))
    assert identify(voluntary, a, [pod("p", DND)], POOL, 1, 0, T0).outcome == BLOCKED
    [annotated] = fleet_nodes([claim("a")], [node("node-a", "a", annotations=DND)], {})
    assert "node-a" in identify(voluntary, annotated, [], POOL, 1, 0, T0).reason
    strict = replace(POOL, disruption=Disruption(budgets=(Budget(nodes="0"),)))
    blocked = identify(voluntary, a, [pod("q")], strict, 3, 0, T0)
    assert blocked.outcome == BLOCKED and "nodes=0" in blocked.reason
    assert identify(voluntary, a, [pod("q")], POOL, 3, 0, T0).outcome == PROCEED
    assert identify(voluntary, None, [], POOL, 3, 0, T0).outcome == GONE


@given(
    st.text(min_size=1, max_size=120),
    st.text(min_size=1, max_size=200),
    st.sampled_from(REASONS),
    st.booleans(),
    st.one_of(st.none(), st.floats(0, 4e9)),
)
def test_commands_round_trip_and_name_their_execution_safely(
    nodeclaim: str, trigger: str, reason: str, forceful: bool, deadline: float | None
) -> None:
    original = DisruptionCommand(nodeclaim, "n", "i-1", reason, forceful, trigger, T0, deadline)
    assert DisruptionCommand.from_input(original.to_input()) == original
    name = original.execution_name()
    assert 1 <= len(name) <= 80
    assert all(ch.isascii() and (ch.isalnum() or ch in "-_") for ch in name)
    assert replace(original, requested_at=T0 + 5).execution_name() == name


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("reason", "Bored", "reason:"), ("forceful", "yes", "forceful:"), ("nodeclaim", "", "nodeclaim:")],
)
def test_a_bad_workflow_input_names_the_field(field: str, value: Any, message: str) -> None:
    document = {**command().to_input(), field: value}
    with pytest.raises(CommandError, match=message):
        DisruptionCommand.from_input(document)
