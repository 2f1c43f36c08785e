"""IdentifyCandidate's decision: does the disruption go ahead, for which pods, and until when.

Pure: the command, the node as the fleet shows it now, the pods on it, budgets and the time in; a decision
with its reason out. The lock is the service's business (it is a write); this only decides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.disruption.budgets import allowed_disruptions
from nodewright.disruption.commands import DRIFTED, EXPIRED, DisruptionCommand
from nodewright.disruption.drain import DrainPod, drain_pod
from nodewright.disruption.fleet import FleetNode
from nodewright.model.conditions import rfc3339
from nodewright.model.do_not_disrupt import DO_NOT_DISRUPT
from nodewright.model.nodepool import NodePool

PROCEED, GONE, BLOCKED = "proceed", "gone", "blocked"


@dataclass(frozen=True, slots=True)
class Identification:
    """`outcome`: PROCEED, GONE (nothing left to disrupt) or BLOCKED (voluntary, and something holds it back).

    `moving`: keys of the pods that must leave (what the replacement is sized for). `deadline`: epoch seconds
    after which remaining pods are deleted (the earlier of the command's deadline and requested time plus the
    terminationGracePeriod), None when unbounded. `urgent`: an interruption: replacement and drain run side by
    side instead of one after the other.
    """

    outcome: str
    reason: str
    moving: tuple[str, ...] = ()
    deadline: float | None = None
    urgent: bool = False


def identify(
    command: DisruptionCommand,
    node: FleetNode | None,
    pods: Sequence[Mapping[str, Any]],
    pool: NodePool | None,
    pool_nodes: int,
    pool_disrupting: int,
    now: float,
) -> Identification:
    """Decide whether `command` goes ahead. Forceful commands (interruptions, expiration) are never blocked;
    voluntary ones stop at `karpenter.sh/do-not-disrupt` on the node, at a pod whose do-not-disrupt protection is
    active at `now` ("true", or a duration from the pod's start that has not ended: the reason says until when),
    and at the pool's budgets. The deadline is the NodeClaim's own terminationGracePeriod (never its NodePool's)
    counted from the command's request, or the command's deadline when earlier."""
    if node is None:
        return Identification(GONE, f"nodeclaim/{command.nodeclaim} no longer exists")
    drainable = [p for p in map(drain_pod, pods) if not p.stays]
    moving = tuple(sorted(p.key for p in drainable))
    if not command.forceful:
        if node.do_not_disrupt:
            return Identification(BLOCKED, f"node {node.node} is annotated {DO_NOT_DISRUPT}=true")
        # Drift is eventual (Karpenter): with a terminationGracePeriod the grace period bounds the drain, so
        # do-not-disrupt pods do not hold it back.
        eventual = command.reason == DRIFTED and node.termination_grace_period is not None
        # Only protection active now holds a voluntary command (Karpenter's IsDisruptable): a duration that has
        # ended protects nothing, and a terminating pod is leaving anyway.
        held = [] if eventual else [p for p in drainable if not p.terminating and p.protected(now)]
        if held:
            return Identification(BLOCKED, _held_reason(held))
        if pool is not None:
            allowance = allowed_disruptions(pool.disruption.budgets, command.reason, pool_nodes, pool_disrupting, now)
            if allowance.allowed <= 0:
                return Identification(BLOCKED, f"NodePool {pool.name}: {allowance.reason}")
    deadline = command.deadline
    if node.termination_grace_period is not None:
        bound = command.requested_at + node.termination_grace_period
        deadline = bound if deadline is None else min(deadline, bound)
    urgent = command.forceful and command.reason != EXPIRED
    where = f"node {node.node}" if node.node else f"nodeclaim/{node.nodeclaim} (not registered)"
    return Identification(
        PROCEED,
        f"{command.reason}: {where} with {len(moving)} pod(s) to move",
        moving=moving,
        deadline=deadline,
        urgent=urgent,
    )


def _held_reason(held: Sequence[DrainPod]) -> str:
    """Which pods hold the command back, and until when for those whose protection ends."""
    named = []
    for p in sorted(held, key=lambda p: p.key)[:5]:
        until = p.protected_until
        ends = f" until {rfc3339(until)}" if until is not None and until != math.inf else ""
        named.append(f"{p.key}{ends}")
    return f"pod(s) {', '.join(named)} protected by {DO_NOT_DISRUPT}"
