"""Static NodePools' decision (`disruption.static`): how many to launch, which to remove, drift within limits."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cluster_builder import T0, Cluster

from nodewright.disruption.plan import pool_budgets
from nodewright.disruption.static import StaticMember, removal_order, static_decision, static_decisions, static_members
from nodewright.model.nodepool import NodeClassRef, NodePool

POOL = NodePool(name="static", node_class_ref=NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "default"), replicas=3)


def pool(replicas: int = 3, nodes: int | None = None) -> NodePool:
    return replace(POOL, replicas=replicas, limits={} if nodes is None else {"nodes": nodes})


def members(n: int, **fields: object) -> list[StaticMember]:
    return [StaticMember(f"nc-{i}", created_at=float(i), **fields) for i in range(n)]  # type: ignore[arg-type]


@pytest.mark.parametrize(("have", "launch"), [(0, 3), (1, 2), (2, 1), (3, 0)])
def test_a_static_pool_launches_what_it_is_short_of_its_replicas(have: int, launch: int) -> None:
    decided = static_decision(pool(3), members(have), drift_allowed=1)
    assert (decided.launch, decided.remove) == (launch, ())
    assert decided.nodes == have


def test_launches_stop_at_limits_nodes_counting_every_nodeclaim_deleting_ones_too() -> None:
    have = [*members(1), StaticMember("going", deleting=True)]
    decided = static_decision(pool(5, nodes=4), have, drift_allowed=1)
    assert decided.launch == 2  # 4 - (1 running + 1 deleting)
    assert "limits.nodes 4" in decided.reason
    full = static_decision(pool(5, nodes=2), have, drift_allowed=1)
    assert full.launch == 0 and "leaves no room" in full.reason


def test_a_node_being_disrupted_counts_toward_replicas_so_nothing_launches_twice() -> None:
    have = [*members(2), StaticMember("replaced", disrupting=True)]
    assert static_decision(pool(3), have, drift_allowed=1).launch == 0


def test_an_expired_or_repaired_nodeclaim_being_deleted_is_replaced() -> None:
    have = [*members(2), StaticMember("expired", deleting=True)]
    decided = static_decision(pool(3), have, drift_allowed=0)
    assert decided.launch == 1 and decided.nodes == 2


def test_scale_down_removes_the_emptiest_nodes_first() -> None:
    have = [
        StaticMember("busy", empty=False, cost=5.0, created_at=1),
        StaticMember("light", empty=False, cost=2.0, created_at=2),
        StaticMember("empty", created_at=3),
        StaticMember("protected", empty=False, cost=1.5, do_not_disrupt=True, created_at=4),
    ]
    assert static_decision(pool(3), have, 1).remove == ("empty",)
    assert static_decision(pool(1), have, 1).remove == ("empty", "light", "busy")
    assert static_decision(pool(0), have, 1).remove == ("empty", "light", "busy", "protected")


def test_scale_down_removes_nodeclaims_not_launched_before_launched_ones() -> None:
    have = [*members(2), StaticMember("unlaunched", launched=False, initialized=False)]
    assert static_decision(pool(2), have, 1).remove == ("unlaunched",)


def test_scale_down_ignores_budgets_and_nodes_already_going() -> None:
    have = [*members(3), StaticMember("going", deleting=True)]
    decided = static_decision(pool(1), have, drift_allowed=0)
    assert decided.remove == ("nc-2", "nc-1")  # newest first among equals; the deleting one is not counted
    assert decided.launch == 0


def test_a_drifted_node_is_replaced_one_for_one_replacement_first() -> None:
    have = [*members(2), StaticMember("old", drifted="AMIDrift", created_at=-1)]
    decided = static_decision(pool(3), have, drift_allowed=1)
    assert (decided.launch, decided.replacing, decided.remove) == (1, ("old",), ())
    # Next tick: the replacement is running, so the pool is one beyond its size and the drifted node goes.
    settled = [*have, StaticMember("new", created_at=9)]
    assert static_decision(pool(3), settled, drift_allowed=1).remove == ("old",)


def test_the_drifted_node_stays_until_its_replacement_initializes() -> None:
    have = [*members(2), StaticMember("old", drifted="AMIDrift"), StaticMember("new", initialized=False)]
    decided = static_decision(pool(3), have, drift_allowed=1)
    assert decided.remove == () and decided.held == ("old",)
    assert "until new initializes" in decided.reason


@pytest.mark.parametrize(("limit", "allowed", "launch"), [(3, 2, 0), (4, 2, 1), (5, 2, 2), (10, 2, 2), (10, 0, 0)])
def test_drift_is_replaced_within_limits_nodes_and_the_drifted_budget(limit: int, allowed: int, launch: int) -> None:
    have = [StaticMember(f"d{i}", drifted="SubnetDrift", created_at=float(i)) for i in range(3)]
    decided = static_decision(pool(3, nodes=limit), have, drift_allowed=allowed)
    assert decided.launch == launch
    assert decided.replacing == tuple(f"d{i}" for i in range(launch))


def test_drift_waits_while_the_pool_is_beyond_its_size() -> None:
    have = [*members(3), StaticMember("old", drifted="AMIDrift", disrupting=True)]
    decided = static_decision(pool(3), have, drift_allowed=5)
    assert decided.launch == 0 and decided.remove == ()


def test_zero_replicas_removes_every_node_and_launches_none() -> None:
    decided = static_decision(pool(0), members(2, drifted="AMIDrift"), drift_allowed=1)
    assert decided.launch == 0 and set(decided.remove) == {"nc-0", "nc-1"}


def test_removal_order_puts_drifted_first_then_not_launched_then_empty() -> None:
    have = [
        StaticMember("busy", empty=False, cost=3.0),
        StaticMember("empty"),
        StaticMember("pending", launched=False),
        StaticMember("drifted", drifted="x", empty=False, cost=9.0),
        StaticMember("gone", deleting=True),
    ]
    assert [m.nodeclaim for m in removal_order(have)] == ["drifted", "pending", "empty", "busy"]


def test_a_node_near_its_expiry_is_cheaper_to_remove_than_a_fresh_one_with_more_pods() -> None:
    # Karpenter's disruption cost: rescheduling cost times the share of expireAfter left. Two pods on a node with
    # a tenth of its 10 h left cost 0.3; one pod on a fresh node costs 2.0.
    cluster = Cluster(now=T0)
    cluster.pool(name="static", disruption={})["spec"]["replicas"] = 1
    cluster.node("old", pool="static", age=9 * 3600.0, expireAfter="10h")
    cluster.node("new", pool="static", age=600.0, expireAfter="10h")
    for name, node in (("a", "old"), ("b", "old"), ("c", "new")):
        cluster.pod(name, node)
    state = cluster.state()
    found = {m.nodeclaim: m for m in static_members(state, "static", {})}
    assert found["claim-old"].cost == pytest.approx(3.0 * 0.1) and found["claim-new"].cost == pytest.approx(
        2.0 * 59 / 60
    )
    [decision] = static_decisions(state, {}, pool_budgets(state))
    assert decision.remove == ("claim-old",)
