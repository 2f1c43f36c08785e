"""What the Balanced ports share: Karpenter's scoring inputs (savings, a move's disruption cost, a NodePool's totals)
turned into nodewright's, and nodewright's verdict read back.

Karpenter scores a move with `ScoreMove(savings, disruptionCost, NodePoolTotals, k)` and approves it when
`(savings / TotalCost) / (disruptionCost / TotalDisruptionCost) >= 1/k`. nodewright has no separate scoring
function: `consolidation._balanced(ctx, decision)` computes the same two fractions from the decision's candidates
(their `price` and `reschedule_cost`) and the NodePool's totals (`PlanContext.pool_totals`), and returns the
decision (approved) or the rejection sentence, which names both fractions to 0.1 %. So here:

- a move is a real `Decision` over real `Candidate`s (taken from a built cluster) whose price and rescheduling cost
  are set to Karpenter's numbers; its savings are the price minus the replacement price;
- a NodePool's totals are set on the `PlanContext` (`_totals`, which `pool_totals` reads) where Karpenter passes a
  `NodePoolTotals` literal, and computed from a built cluster where Karpenter calls `computeNodePoolTotals`;
- `k` is Karpenter's parameter: nodewright's is the module constant `BALANCED_K`, patched for the call;
- the fractions are read from the rejection sentence, with `k` set so small that any move is rejected (the
  sentence is only written on rejection), and the score is pinned by scaling the savings: a score of s is
  approved at savings x (1/k)/s x 1.01 and rejected at x 0.99.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from unittest import mock

from cluster_builder import Cluster

from nodewright.disruption import consolidation
from nodewright.disruption.candidates import Candidate, candidates
from nodewright.disruption.decision import SINGLE_NODE, UNDERUTILIZED, Decision
from nodewright.disruption.methods import PlanContext
from nodewright.disruption.plan import pool_budgets
from nodewright.disruption.state import ClusterState

BALANCED = "Balanced"
DEFAULT = "WhenEmptyOrUnderutilized"
ALL = {"budgets": [{"nodes": "100%"}], "consolidateAfter": "0s"}
# The pools an abstract move may draw candidates from, with their policies.
POOLS = {"pool-a": BALANCED, "pool-b": BALANCED, "pool-default": DEFAULT, "pool-empty": "WhenEmpty"}
_NEVER = 1e-12  # a k this small rejects any move, so the sentence with both fractions is written
_SENTENCE = re.compile(
    r'NodePool "(?P<pool>[^"]+)" is Balanced: the move saves (?P<saved>-?[\d.]+)% of its cost for '
    r"(?P<caused>-?[\d.]+)% of its disruption"
)
_BASE: list[ClusterState] = []
XLARGE = 0.192  # m5.xlarge on demand, us-east-1a
UNKNOWN_TYPE = "c6i.xlarge"  # not in the builder's catalog: priced 0.0, as Karpenter's nil instanceType


def _base() -> ClusterState:
    """One m5.xlarge node in each pool of POOLS: the source of the abstract candidates."""
    if not _BASE:
        cluster = Cluster()
        for name, policy in POOLS.items():
            cluster.pool(name, disruption={"consolidationPolicy": policy, **ALL})
            cluster.node(f"node-{name}", "m5.xlarge", pool=name)
        _BASE.append(cluster.state())
    return _BASE[0]


def candidate(price: float, reschedule_cost: float, pool: str = "pool-a", name: str = "") -> Candidate:
    """Karpenter's makeCandidate: a candidate of `pool` with this price and RescheduleDisruptionCost."""
    [found] = [c for c in candidates(_base())[0] if c.member.nodepool == pool]
    member = replace(found.member, nodeclaim=name or f"claim-{pool}-{price}-{reschedule_cost}")
    return replace(found, member=member, price=price, reschedule_cost=reschedule_cost)


def context(totals: Mapping[str, tuple[float, float]], state: ClusterState | None = None) -> PlanContext:
    """A tick's context whose NodePool totals (cost, disruption cost) are `totals` (a pool missing from it has
    none), as Karpenter's NodePoolTotals literals."""
    state = state or _base()
    # `pool_totals` computes the totals from the cluster only while `_totals` is empty: the "-" entry keeps the
    # given ones, also when none is given.
    return PlanContext(state, pool_budgets(state), _totals={"-": (0.0, 0.0), **totals})


def move(group: Sequence[Candidate], savings: float | None = None) -> Decision:
    """A consolidation of `group`: a delete (the whole price saved), or a replace saving `savings` per hour."""
    price = sum(c.price for c in group)
    replacement = 0.0 if savings is None else price - savings
    return Decision(SINGLE_NODE, UNDERUTILIZED, tuple(group), "scored", replacement_price=replacement)


@contextmanager
def k_is(k: float) -> Iterator[None]:
    with mock.patch.object(consolidation, "BALANCED_K", k):
        yield


def judge(ctx: PlanContext, decision: Decision, k: float = consolidation.BALANCED_K) -> Decision | str:
    """nodewright's verdict on the move: the decision (approved) or why it is rejected."""
    with k_is(k):
        return consolidation._balanced(ctx, decision)


def approved(ctx: PlanContext, decision: Decision, k: float = consolidation.BALANCED_K) -> bool:
    return isinstance(judge(ctx, decision, k), Decision)


def fractions(ctx: PlanContext, decision: Decision) -> tuple[str, float, float]:
    """(pool, savings fraction, disruption fraction) of the first Balanced pool of the move, as nodewright
    computes them (to 0.001)."""
    verdict = judge(ctx, decision, _NEVER)
    assert isinstance(verdict, str), verdict
    found = _SENTENCE.search(verdict)
    assert found is not None, verdict
    return found["pool"], float(found["saved"]) / 100, float(found["caused"]) / 100


def score_move(
    savings: float, disruption_cost: float, totals: tuple[float, float], k: float = consolidation.BALANCED_K
) -> bool:
    """Karpenter's `ScoreMove(...).Approved()`: one candidate of a Balanced pool whose move saves `savings` for
    `disruption_cost`, in a pool with `totals` (cost, disruption cost)."""
    price = max(savings, 0.0) + 1.0
    decision = move([candidate(price, disruption_cost)], savings)
    return approved(context({"pool-a": totals}), decision, k)


def assert_score(
    expected: float, savings: float, disruption_cost: float, totals: tuple[float, float], k: float = 2
) -> None:
    """The move's score is `expected` within 1 %: scaled to just above the threshold 1/k it is approved, to just
    below it rejected (the score is linear in the savings)."""
    scale = (1 / k) / expected
    assert score_move(savings * scale * 1.01, disruption_cost, totals, k), "score below the expected"
    assert not score_move(savings * scale * 0.99, disruption_cost, totals, k), "score above the expected"


def pool_of(
    nodes: list[tuple[str, int]], policy: str = "Balanced", pool: str = "general", cluster: Cluster | None = None
) -> Cluster:
    """A pool of `(instance type, pods)` nodes, each pod an ordinary ReplicaSet pod (eviction cost 1)."""
    cluster = cluster or Cluster()
    cluster.pool(pool, disruption={"consolidationPolicy": policy, **ALL})
    for i, (instance_type, pods) in enumerate(nodes):
        name = f"{pool}-{i}"
        cluster.node(name, instance_type, pool=pool)
        for j in range(pods):
            cluster.pod(f"{name}-web-{j}", name, cpu="10m", memory="16Mi")
    return cluster


def by_node(state: ClusterState) -> dict[str, Candidate]:
    return {c.member.node: c for c in candidates(state)[0]}
