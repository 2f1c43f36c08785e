"""Karpenter v1.14.1 pkg/controllers/disruption/staticdrift_test.go (Describe("StaticDrift")), ported case by case.

Static drift replaces the drifted nodes of a static NodePool (`spec.replicas`) one for one, within the pool's
budgets and `limits.nodes`. Karpenter's StaticDrift returns one command per node to replace; nodewright's
`disruption.static.drift_replacements` returns the NodeClaims to replace (the tick launches one NodeClaim for each
and, once it is running, removes the drifted one as the pool's excess). Each case asserts the replacements
Karpenter's commands name; where a case reconciles again after the replacements, the next decision is asserted on
the NodeClaims as the cluster then has them.
"""

from __future__ import annotations

from dataclasses import replace

from static_kit import claims, drift_allowance, drifted, static_pool

from nodewright.disruption.static import StaticMember, drift_replacements, static_decision

FILE = "pkg/controllers/disruption/staticdrift_test.go"


def replaced(pool_replicas: int, members: list[StaticMember], nodes: int | None = None, budget: str = "100%") -> int:
    pool = static_pool(pool_replicas, nodes=nodes, budgets=(budget,))
    found, _ = drift_replacements(pool, members, drift_allowance(pool, members))
    return len(found)


def test_should_respect_disruption_budgets_nodes_count_for_static_drift() -> None:
    """Context("Budgets"): It("should respect disruption budgets (Nodes Count) for static drift")."""
    assert replaced(5, drifted(claims(5)), budget="2") == 2


def test_should_respect_disruption_budgets_nodes_percentage_for_static_drift() -> None:
    """Context("Budgets"): It("should respect disruption budgets (Nodes Percentage) for static drift")."""
    assert replaced(5, drifted(claims(5)), budget="20%") == 1


def test_should_respect_budgets_for_multiple_static_nodepools() -> None:
    """Context("Budgets"): It("should respect budgets for multiple static nodepools"): pools of 4, 3 and 2 replicas
    with 2 drifted NodeClaims each and Drifted budgets 1, 2 and 100%: 1, 2 and 2 replacements."""
    found = {}
    for name, replicas, budget in (("np1", 4, "1"), ("np2", 3, "2"), ("np3", 2, "100%")):
        members = drifted(claims(2, prefix=name))
        pool = static_pool(replicas, budgets=(budget,), name=name)
        found[name] = len(drift_replacements(pool, members, drift_allowance(pool, members))[0])
    assert found == {"np1": 1, "np2": 2, "np3": 2}


def test_should_not_drift_nodes_when_we_cannot_acquire_limits() -> None:
    """Context("Limits and Scaling"): It("should not drift nodes when we cannot acquire limits"): 5 of 5 nodes,
    limits.nodes 5, all drifted."""
    assert replaced(5, drifted(claims(5)), nodes=5) == 0


def test_should_drift_nodes_when_we_can_acquire_limits() -> None:
    """Context("Limits and Scaling"): It("should drift nodes when we can acquire limits"): 2 drifted nodes of a pool
    of 5 with limits.nodes 5: both replaced."""
    assert replaced(5, drifted(claims(2)), nodes=5) == 2


def test_should_drift_partially_when_we_can_acquire_some_limits() -> None:
    """Context("Limits and Scaling"): It("should drift partially when we can acquire some limits"): 5 drifted of 5,
    limits.nodes 7: two replaced at once."""
    assert replaced(5, drifted(claims(5)), nodes=7) == 2


def test_should_keep_drifting_partially_when_we_can_acquire_some_limits_for_each_reconcile() -> None:
    """Context("Limits and Scaling"): It("should keep drifting partially when we can acquire some limits for each
    reconcile"): limits.nodes 6 leaves room for one replacement at a time; each round the pool has 6 NodeClaims
    while one is replaced, then 5 again, until every drifted one is."""
    pool = static_pool(5, nodes=6, budgets=("100%",))
    members = drifted(claims(5))
    for round_ in range(5):
        decided = static_decision(pool, members, drift_allowance(pool, members))
        assert decided.launch == 1 and len(decided.replacing) == 1
        members = [*members, StaticMember(f"new-{round_}", created_at=10.0 + round_)]
        assert len(members) == 6
        # The replacement runs: the pool is one beyond its size and the drifted node goes.
        beyond = static_decision(pool, members, drift_allowance(pool, members))
        assert beyond.remove == decided.replacing
        members = [m for m in members if m.nodeclaim not in beyond.remove]
        assert len(members) == 5
    assert not any(m.drifted for m in members)


def test_should_wait_until_nodes_are_deprovisioned_when_we_are_overscaled() -> None:
    """Context("Limits and Scaling"): It("should wait until nodes are deprovisioned when we are overscaled"): 2
    drifted nodes, replicas 1: no replacement while the pool is beyond its size; once one is gone, the other is."""
    pool = static_pool(1, budgets=("100%",))
    members = drifted(claims(2))
    assert drift_replacements(pool, members, drift_allowance(pool, members))[0] == ()
    members = members[1:]  # scale-down finished
    assert len(drift_replacements(pool, members, drift_allowance(pool, members))[0]) == 1


def test_should_handle_drift_for_multiple_static_nodepools_independently() -> None:
    """Context("Multiple NodePools"): It("should handle drift for multiple static NodePools independently"): pools of
    3, 2 (limits.nodes 2) and 2 replicas, every node drifted, budgets 100%: 2, 0 and 2 replacements."""
    found = {}
    for name, replicas, have, nodes in (("np1", 3, 2, None), ("np2", 2, 2, 2), ("np3", 2, 2, None)):
        members = drifted(claims(have, prefix=name))
        pool = static_pool(replicas, nodes=nodes, budgets=("100%",), name=name)
        found[name] = len(drift_replacements(pool, members, drift_allowance(pool, members))[0])
    assert found == {"np1": 2, "np2": 0, "np3": 2}


def test_should_handle_zero_replicas() -> None:
    """Context("Edge Cases"): It("should handle zero replicas"): the drifted node is removed, not replaced."""
    pool = static_pool(0, budgets=("100%",))
    members = drifted(claims(1))
    assert drift_replacements(pool, members, 1)[0] == ()
    assert static_decision(pool, members, 1).launch == 0


def test_should_handle_missing_node_limits_gracefully() -> None:
    """Context("Edge Cases"): It("should handle missing node limits gracefully"): no limits, 5 drifted of 5."""
    assert replaced(5, drifted(claims(5)), nodes=None) == 5


def test_should_ignore_nodes_without_the_drifted_status_condition() -> None:
    """Context("Edge Cases"): It("should ignore nodes without the drifted status condition")."""
    assert replaced(1, claims(1)) == 0


def test_should_ignore_nodes_with_the_drifted_status_condition_set_to_false() -> None:
    """Context("Edge Cases"): It("should ignore nodes with the drifted status condition set to false"): a False
    condition is read as not drifted (`StaticMember.drifted` is the reason of a True one only)."""
    assert replaced(1, [replace(m, drifted="") for m in claims(1)]) == 0


def test_should_ignore_nodes_with_the_karpenter_sh_do_not_disrupt_annotation() -> None:
    """Context("Edge Cases"): It("should ignore nodes with the karpenter.sh/do-not-disrupt annotation")."""
    assert replaced(1, drifted(claims(1, do_not_disrupt=True))) == 0
