"""Disruption budgets: how many of a NodePool's nodes may be disrupted now, for a reason.

Karpenter v1's rules: every budget whose `reasons` include the reason (or that lists none) and whose schedule
window is open now caps the number of the pool's nodes being disrupted at once; `nodes` is a count or a
percentage of the pool's nodes, rounded up; the most restrictive budget wins. A budget with a schedule is
open from each time its cron schedule fires until `duration` later. Budgets hold back voluntary disruption
only (drift, emptiness, consolidation): interruptions and expiration are forceful and ignore them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodewright.model.durations import cron_matches
from nodewright.model.nodepool import Budget, NodePool

# Scanning back minute by minute is exact for cron; windows longer than this are treated as this long.
_MAX_WINDOW_MINUTES = 31 * 24 * 60


def budget_open(budget: Budget, now: float) -> bool:
    """True when the budget applies at `now`: it has no schedule, or its schedule fired within the last
    `duration` (the minute it fires included)."""
    if budget.schedule is None:
        return True
    minutes = min(math.ceil((budget.duration_seconds or 0) / 60), _MAX_WINDOW_MINUTES)
    start = now - now % 60
    return any(cron_matches(budget.schedule, start - 60 * m) for m in range(minutes))


def budget_limit(budget: Budget, pool_nodes: int) -> int:
    """The budget's `nodes` as a node count for a pool of `pool_nodes` nodes (percentages round up)."""
    text = budget.nodes.strip()
    if text.endswith("%"):
        return math.ceil(pool_nodes * int(text[:-1]) / 100)
    return int(text)


@dataclass(frozen=True, slots=True)
class Allowance:
    """How many more nodes may be disrupted now, and which budget decided it (empty: no budget applies)."""

    allowed: int
    reason: str


def allowed_disruptions(
    budgets: Sequence[Budget], reason: str, pool_nodes: int, disrupting: int, now: float
) -> Allowance:
    """Inputs: the pool's budgets, the disruption reason (Drifted, Empty, Underutilized, ...), the pool's node
    count, how many of them are being disrupted already, and the time. Output: the nodes that may still be
    disrupted (never negative) with a sentence naming the budget that limits it."""
    limit: int | None = None
    why = "no budget applies"
    for budget in budgets:
        if budget.reasons and reason not in budget.reasons:
            continue
        if not budget_open(budget, now):
            continue
        value = budget_limit(budget, pool_nodes)
        if limit is None or value < limit:
            limit = value
            window = f" (schedule {budget.schedule!r})" if budget.schedule else ""
            why = f"budget nodes={budget.nodes}{window} allows {value} of {pool_nodes} node(s)"
    if limit is None:
        return Allowance(max(pool_nodes - disrupting, 0), why)
    return Allowance(max(limit - disrupting, 0), f"{why}, {disrupting} being disrupted")


class PoolBudgets:
    """Disruption budgets of every NodePool for one planner tick (or one IdentifyCandidate check).

    As Karpenter counts them: a pool's nodes are its initialized nodes; those being disrupted are the ones that are
    not Ready or are being taken away already (a workflow holds their lock, they carry karpenter.sh/disrupted, or
    they are being deleted). Every disruption decided during the tick is taken from its pool's allowance for every
    reason, so two methods (or two ticks, through the locks) never exceed a budget together.
    """

    def __init__(
        self,
        pools: Mapping[str, NodePool],
        members: Sequence[tuple[str, bool]],
        now: float,
    ) -> None:
        """`members`: (pool name, being disrupted) of each initialized node of the fleet."""
        self._pools = pools
        self._now = now
        self._nodes: dict[str, int] = {}
        self._disrupting: dict[str, int] = {}
        for pool, disrupting in members:
            self._nodes[pool] = self._nodes.get(pool, 0) + 1
            self._disrupting[pool] = self._disrupting.get(pool, 0) + (1 if disrupting else 0)
        self._taken: dict[str, int] = {}

    def allowance(self, pool: str, reason: str) -> Allowance:
        """How many more of the pool's nodes may be disrupted for `reason` now, and the budget that decides it."""
        found = self._pools.get(pool)
        if found is None:
            return Allowance(0, f"NodePool {pool} not found")
        taken = self._taken.get(pool, 0)
        disrupting = self._disrupting.get(pool, 0) + taken
        return allowed_disruptions(found.disruption.budgets, reason, self._nodes.get(pool, 0), disrupting, self._now)

    def blocking(self, reason: str) -> list[str]:
        """The NodePools with nodes whose budgets allow no disruption at all for `reason` now, whatever is being
        disrupted (Karpenter's `NodePoolBlockedForDisruptionReason`: its event goes on the NodePool, not on each
        node the budget holds back)."""
        return sorted(
            pool
            for pool, found in self._pools.items()
            if self._nodes.get(pool, 0)
            and allowed_disruptions(found.disruption.budgets, reason, self._nodes[pool], 0, self._now).allowed == 0
        )

    def take(self, pool: str, count: int = 1) -> None:
        """Record that `count` more of the pool's nodes are being disrupted (decided this tick)."""
        self._taken[pool] = self._taken.get(pool, 0) + count
