"""Disruption budgets: how many of a NodePool's nodes may be disrupted now, for a reason.

Karpenter v1's rules: every budget whose `reasons` include the reason (or that lists none) and whose schedule
window is open now caps the number of the pool's nodes being disrupted at once; `nodes` is a count or a
percentage of the pool's nodes, rounded up; the most restrictive budget wins. A budget with a schedule is
open from each time its cron schedule fires until `duration` later. Budgets hold back voluntary disruption
only (drift, emptiness, consolidation): interruptions and expiration are forceful and ignore them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.model.durations import cron_matches
from nodewright.model.nodepool import Budget

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
