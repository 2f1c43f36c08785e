"""Karpenter v1.14.1 pkg/controllers/disruption/balanced_test.go (Describe("ScoreMove") and
Describe("ConsolidationPolicy.IsBalanced")), ported case by case.

Karpenter's `ScoreMove(savings, disruptionCost, NodePoolTotals, k)` is nodewright's `consolidation._balanced` on a
one-candidate move (see `balanced_kit`): the same savings and rescheduling cost on a real candidate of a Balanced
NodePool, the same pool totals on the tick's context, `k` patched where Karpenter passes another. Karpenter's
`Score()`, `SavingsFraction` and `DisruptionFraction` are read as `balanced_kit` says: the score pinned within 1 %
by scaling the savings across the threshold, the fractions from nodewright's rejection sentence (to 0.001).
The RFC's dollar-per-day figures (m7i.xlarge $4.84/day, ...) are kept as they are: only ratios matter.

`IsBalanced` is the NodePool's parsed `consolidationPolicy` (`model/parse.py`) and whether `_balanced` scores its
candidates' moves at all.
"""

from __future__ import annotations

import pytest
from balanced_kit import assert_score, candidate, context, fractions, judge, move, score_move
from cluster_builder import Cluster

from nodewright.disruption.decision import Decision

FILE = "pkg/controllers/disruption/balanced_test.go"

# The RFC's example pool: ten nodes, eight m7i.xlarge ($4.84/day) and two m7i.2xlarge ($9.68/day); 80 pods.
DEFAULT_TOTALS = (58.08, 90.0)


def score(savings: float, disruption_cost: float, totals: tuple[float, float]) -> float:
    return (savings / totals[0]) / (disruption_cost / totals[1])


# ---------------------------------------------------------------------------- when the move has clear savings


def test_should_approve_an_oversized_node_consolidation() -> None:
    """balanced_test.go Describe("ScoreMove") Context("when the move has clear savings"):
    It("should approve an oversized node consolidation")."""
    savings, disruption_cost = 7.26, 4.0  # m7i.2xlarge - m7i.large; 1.0 per node + 3 pods
    assert score_move(savings, disruption_cost, DEFAULT_TOTALS)
    assert_score(score(savings, disruption_cost, DEFAULT_TOTALS), savings, disruption_cost, DEFAULT_TOTALS)
    one = move([candidate(savings + 2.42, disruption_cost)], savings)
    pool, saved, caused = fractions(context({"pool-a": DEFAULT_TOTALS}), one)
    assert pool == "pool-a"
    assert saved == pytest.approx(savings / 58.08, abs=0.001)
    assert caused == pytest.approx(disruption_cost / 90, abs=0.001)


def test_should_approve_a_spare_capacity_delete() -> None:
    """balanced_test.go Describe("ScoreMove") Context("when the move has clear savings"):
    It("should approve a spare capacity delete")."""
    savings, disruption_cost = 4.84, 5.0  # a whole m7i.xlarge; 1.0 per node + 4 pods
    delete = move([candidate(savings, disruption_cost)])
    assert isinstance(judge(context({"pool-a": DEFAULT_TOTALS}), delete), Decision)
    assert_score(score(savings, disruption_cost, DEFAULT_TOTALS), savings, disruption_cost, DEFAULT_TOTALS)


# ---------------------------------------------------------------------- when the move is marginal or harmful


def test_should_reject_a_marginal_move() -> None:
    """balanced_test.go Describe("ScoreMove") Context("when the move is marginal or harmful"):
    It("should reject a marginal move")."""
    savings, disruption_cost = 2.42, 9.0  # m7i.xlarge - m7i.large; 1.0 per node + 8 pods
    assert not score_move(savings, disruption_cost, DEFAULT_TOTALS)
    assert_score(score(savings, disruption_cost, DEFAULT_TOTALS), savings, disruption_cost, DEFAULT_TOTALS)
    verdict = judge(context({"pool-a": DEFAULT_TOTALS}), move([candidate(4.84, disruption_cost)], savings))
    assert isinstance(verdict, str) and 'NodePool "pool-a" is Balanced' in verdict and "1/2 ratio" in verdict


def test_should_reject_a_well_packed_node_with_zero_savings() -> None:
    """balanced_test.go Describe("ScoreMove") Context("when the move is marginal or harmful"):
    It("should reject a well-packed node with zero savings")."""
    assert not score_move(0.0, 11.0, DEFAULT_TOTALS)  # 1.0 per node + 10 pods
    _, saved, _ = fractions(context({"pool-a": DEFAULT_TOTALS}), move([candidate(4.84, 11.0)], 0.0))
    assert saved == 0.0  # Score() is zero


# ------------------------------------------------------------------------------------- when the pool is uniform


def test_should_approve_a_replace_in_a_uniform_pool() -> None:
    """balanced_test.go Describe("ScoreMove") Context("when the pool is uniform"):
    It("should approve a replace in a uniform pool")."""
    uniform = (48.40, 90.0)  # ten m7i.xlarge, 80 pods
    assert score_move(2.42, 9.0, uniform)  # exactly the threshold: 0.05 / 0.10
    assert_score(score(2.42, 9.0, uniform), 2.42, 9.0, uniform)


# --------------------------------------------------------------------- when disruption costs vary across nodes


def test_should_approve_low_disruption_nodes_and_reject_high_disruption_nodes() -> None:
    """balanced_test.go Describe("ScoreMove") Context("when disruption costs vary across nodes"):
    It("should approve low-disruption nodes and reject high-disruption nodes")."""
    het = (58.08, 117.0)  # 10 nodes + 107 pod disruption
    assert score_move(4.84, 5.0, het)  # node A: 1.0 + 4 pods
    assert_score(score(4.84, 5.0, het), 4.84, 5.0, het)
    assert not score_move(4.84, 32.0, het)  # node B: 1.0 + 31 pods
    assert_score(score(4.84, 32.0, het), 4.84, 32.0, het)


# ------------------------------------------------------------------------------------------ scale invariance


def test_should_produce_the_same_score_regardless_of_pool_size() -> None:
    """balanced_test.go Describe("ScoreMove") Context("scale invariance"):
    It("should produce the same score regardless of pool size")."""
    expected = score(7.26, 4.0, DEFAULT_TOTALS)
    assert_score(expected, 7.26, 4.0, DEFAULT_TOTALS)
    assert_score(expected, 7.26, 4.0, (580.80, 900.0))  # 100 nodes + 800 pods


# ------------------------------------------------------------------------------- edge cases with zero values


def test_should_approve_with_inf_score_when_move_disruption_is_zero_and_savings_positive() -> None:
    """balanced_test.go Describe("ScoreMove") Context("edge cases with zero values"):
    It("should approve with +Inf score when move disruption is zero and savings positive").

    nodewright's rescheduling cost is never below 1.0 (the node itself), so only a move built by hand reaches it."""
    assert score_move(4.84, 0.0, DEFAULT_TOTALS)


def test_should_reject_when_both_savings_and_disruption_are_zero() -> None:
    """balanced_test.go Describe("ScoreMove") Context("edge cases with zero values"):
    It("should reject when both savings and disruption are zero")."""
    assert not score_move(0.0, 0.0, DEFAULT_TOTALS)


def test_should_reject_when_nodepool_cost_is_zero() -> None:
    """balanced_test.go Describe("ScoreMove") Context("edge cases with zero values"):
    It("should reject when nodepool cost is zero")."""
    assert not score_move(4.84, 5.0, (0.0, 90.0))


def test_should_approve_when_move_disruption_is_zero_division_by_zero_guard() -> None:
    """balanced_test.go Describe("ScoreMove") Context("edge cases with zero values"):
    It("should approve when move disruption is zero (division by zero guard)")."""
    assert score_move(4.84, 0.0, DEFAULT_TOTALS)


# ---------------------------------------------------------------------------- consolidation threshold tuning


def test_should_reject_at_k_2_for_a_marginal_move() -> None:
    """balanced_test.go Describe("ScoreMove") Context("consolidation threshold tuning"):
    It("should reject at k=2 for a marginal move")."""
    assert not score_move(2.42, 9.0, DEFAULT_TOTALS, k=2)  # score 0.42 < 0.50


def test_should_approve_at_k_3_for_the_same_move() -> None:
    """balanced_test.go Describe("ScoreMove") Context("consolidation threshold tuning"):
    It("should approve at k=3 for the same move")."""
    assert score_move(2.42, 9.0, DEFAULT_TOTALS, k=3)  # score 0.42 >= 0.33


def test_should_reject_at_k_1_for_the_same_move() -> None:
    """balanced_test.go Describe("ScoreMove") Context("consolidation threshold tuning"):
    It("should reject at k=1 for the same move")."""
    assert not score_move(2.42, 9.0, DEFAULT_TOTALS, k=1)  # score 0.42 < 1.00


# ------------------------------------------------------------------------------------ cross-NodePool scoring


def test_should_produce_identical_scores_for_proportionally_equivalent_moves() -> None:
    """balanced_test.go Describe("ScoreMove") Context("cross-NodePool scoring"):
    It("should produce identical scores for proportionally equivalent moves")."""
    on_demand, spot = (48.40, 90.0), (14.50, 90.0)
    assert score(4.84, 4.0, on_demand) == pytest.approx(score(1.45, 4.0, spot), abs=0.01)
    assert_score(score(4.84, 4.0, on_demand), 4.84, 4.0, on_demand)
    assert_score(score(4.84, 4.0, on_demand), 1.45, 4.0, spot)
    assert score_move(4.84, 4.0, on_demand) and score_move(1.45, 4.0, spot)


# ----------------------------------------------------------------------------- ConsolidationPolicy.IsBalanced

# A move no Balanced pool takes: a tenth of the savings for all of the disruption.
_POOR = ((1.0, 10.0), 10.0)


def _parsed_policy(policy: str) -> str:
    cluster = Cluster()
    cluster.pool(disruption={"consolidationPolicy": policy})
    return cluster.state().pools["general"].disruption.consolidation_policy


def _scored(pool: str) -> bool:
    """Whether `_balanced` scores a move of `pool`'s candidate (a poor move is rejected only when scored)."""
    totals, disruption = _POOR
    verdict = judge(context({pool: totals}), move([candidate(1.0, disruption, pool)], 0.1))
    return isinstance(verdict, str)


def test_should_be_true_for_balanced_policy() -> None:
    """balanced_test.go Describe("ConsolidationPolicy.IsBalanced"): It("should be true for Balanced policy")."""
    assert _parsed_policy("Balanced") == "Balanced"
    assert _scored("pool-a")


def test_should_be_false_for_when_empty_or_underutilized_policy() -> None:
    """balanced_test.go Describe("ConsolidationPolicy.IsBalanced"):
    It("should be false for WhenEmptyOrUnderutilized policy")."""
    assert _parsed_policy("WhenEmptyOrUnderutilized") == "WhenEmptyOrUnderutilized"
    assert not _scored("pool-default")


def test_should_be_false_for_when_empty_policy() -> None:
    """balanced_test.go Describe("ConsolidationPolicy.IsBalanced"): It("should be false for WhenEmpty policy")."""
    assert _parsed_policy("WhenEmpty") == "WhenEmpty"
    assert not _scored("pool-empty")
