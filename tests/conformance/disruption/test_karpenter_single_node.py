"""Karpenter v1.14.1 pkg/controllers/disruption/singlenodeconsolidation_test.go (Describe("SingleNodeConsolidation")
Context("Candidate Shuffling")), ported case by case.

Karpenter's `createCandidates(disruptionCost, n)` makes n nodes of its cheapest instance type in each of three
NodePools (nodepool-1..3, WhenEmptyOrUnderutilized, consolidateAfter 0s), one pod each. Here: m5.large nodes in
on-demand m5 pools, each holding one 1500m pod, so that no node can be deleted (no other node has the room) or
replaced (m5.large is the cheapest m5): every candidate is simulated and found unconsolidatable, and a tick never
stops early on a decision. Where Karpenter overrides a candidate's RescheduleDisruptionCost, the node holds that
many pods less one (an ordinary pod costs 1, the node itself 1).

`SortCandidates` (the consolidation sort, then the NodePools interleaved) is `consolidation._interleave_pools` on
the candidates' order (`disruption.candidates`: most savings per unit of disruption first).

Karpenter's single-node pass gives up after a 3-minute timeout and puts the NodePools it did not reach first in
the next pass (`PreviouslyUnseenNodePools`). nodewright differs on purpose (consolidation.py,
SINGLE_NODE_SIMULATIONS_PER_TICK and `_rotated`): a tick simulates at most 50 candidates, and the next tick (a
minute later) starts where this one stopped, so every candidate is reached within a few ticks; nothing is carried
from one tick to the next but the minute. The three timeout cases assert that mechanism instead: the cap is
patched (to 0 for Karpenter's already-expired timeout, to 4 where Karpenter marks one pool as not reached) as
Karpenter sets its timeout.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from cluster_builder import M5_ON_DEMAND, T0, Cluster

from nodewright.disruption import consolidation
from nodewright.disruption.candidates import Candidate, candidates
from nodewright.disruption.methods import Outcome, PlanContext
from nodewright.disruption.plan import pool_budgets
from nodewright.disruption.state import ClusterState

FILE = "pkg/controllers/disruption/singlenodeconsolidation_test.go"
POOLS = ("nodepool-1", "nodepool-2", "nodepool-3")
LEFT = "left for the next tick"


def create_candidates(per_pool: int, pods: tuple[int, ...] = (1,), now: float = T0) -> ClusterState:
    """`per_pool` m5.large nodes in each pool for each entry of `pods` (the node's pod count)."""
    cluster = Cluster(now=now)
    cluster.docs = [d for d in cluster.docs if d["kind"] != "NodePool"]  # only the three pools (no "general")
    for pool in POOLS:
        cluster.pool(
            pool, disruption={"consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}, requirements=M5_ON_DEMAND
        )
        for count in pods:
            for i in range(per_pool):
                name = f"{pool}-{count}-{i}"
                cluster.node(name, "m5.large", pool=pool)
                for j in range(count):
                    cluster.pod(f"{name}-web-{j}", name, cpu="1500m" if j == 0 else "1m", memory="16Mi")
    return cluster.state()


def sort_candidates(state: ClusterState) -> list[Candidate]:
    """Karpenter's SingleNodeConsolidation.SortCandidates."""
    return consolidation._interleave_pools(candidates(state)[0])


@contextmanager
def simulations_per_tick(limit: int) -> Iterator[None]:
    with mock.patch.object(consolidation, "SINGLE_NODE_SIMULATIONS_PER_TICK", limit):
        yield


def tick(state: ClusterState) -> Outcome:
    return consolidation.SingleNodeConsolidation().decide(PlanContext(state, pool_budgets(state)))


def test_should_sort_candidates_by_savings_ratio_descending() -> None:
    """singlenodeconsolidation_test.go Describe("SingleNodeConsolidation") Context("Candidate Shuffling"):
    It("should sort candidates by savings ratio descending")."""
    found = sort_candidates(create_candidates(3))
    assert len(found) == 9
    ratios = [c.price / c.reschedule_cost for c in found]
    assert ratios == sorted(ratios, reverse=True)
    assert [c.member.nodepool for c in found[:3]] == list(POOLS)  # the pools interleaved


def test_should_prioritize_nodepools_that_timed_out_in_previous_runs() -> None:
    """singlenodeconsolidation_test.go Describe("SingleNodeConsolidation") Context("Candidate Shuffling"):
    It("should prioritize nodepools that timed out in previous runs").

    nodewright's counterpart (see the module doc): with four simulations a tick, the candidates a tick did not
    reach are the first the next tick (a minute later) simulates."""
    with simulations_per_tick(4):
        first = tick(create_candidates(3))
        reached = set(first.unconsolidatable)
        left = {name for name, why in first.skipped.items() if LEFT in why}
        assert len(reached) == 4 and len(left) == 5 and not reached & left
        second = tick(create_candidates(3, now=T0 + 60))
        assert len(second.unconsolidatable) == 4
        assert set(second.unconsolidatable) <= left


def test_should_sort_candidates_by_savings_ratio_with_different_disruption_costs() -> None:
    """singlenodeconsolidation_test.go Describe("SingleNodeConsolidation") Context("Candidate Shuffling"):
    It("should sort candidates by savings ratio with different disruption costs").

    In each pool, one node costs 1.0 to disrupt (no pod), one 5.0 (four pods), one 20.0 (nineteen)."""
    found = sort_candidates(create_candidates(1, pods=(19, 4, 0)))
    assert len(found) == 9
    assert [c.reschedule_cost for c in found] == [1.0] * 3 + [5.0] * 3 + [20.0] * 3


def test_should_reset_timed_out_nodepools_when_all_nodepools_are_evaluated() -> None:
    """singlenodeconsolidation_test.go Describe("SingleNodeConsolidation") Context("Candidate Shuffling"):
    It("should reset timed out nodepools when all nodepools are evaluated").

    nodewright's counterpart: when a tick reaches every candidate, nothing is left for the next, and the next
    tick's order does not depend on the minute."""
    state = create_candidates(1)
    out = tick(state)
    assert sorted(out.unconsolidatable) == sorted(c.name for c in candidates(state)[0])
    assert not any(LEFT in why for why in out.skipped.values())
    order = [c.name for c in sort_candidates(state)]
    for minute in range(5):
        assert [c.name for c in consolidation._rotated(sort_candidates(state), T0 + 60 * minute)] == order


def test_should_mark_nodepools_as_timed_out_when_timeout_occurs() -> None:
    """singlenodeconsolidation_test.go Describe("SingleNodeConsolidation") Context("Candidate Shuffling"):
    It("should mark nodepools as timed out when timeout occurs").

    Karpenter's timeout has passed before the first candidate (-5 s); here no simulation is left (0 a tick):
    every candidate of every pool is left for the next tick."""
    state = create_candidates(10)
    with simulations_per_tick(0):
        out = tick(state)
    assert out.decisions == [] and out.unconsolidatable == {}
    left = {name for name, why in out.skipped.items() if LEFT in why}
    assert len(left) == 30
    pools = {c.member.nodepool for c in candidates(state)[0] if c.name in left}
    assert pools == set(POOLS)
