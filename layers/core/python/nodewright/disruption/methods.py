"""Disruption methods: each looks at the fleet and names the nodes it would take away, and why.

The planner runs every method on each tick, in order, and turns their candidates into disruption commands.
Expiration is the first method; drift, emptiness and consolidation join it by implementing `Method`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from nodewright.disruption.commands import EXPIRED, DisruptionCommand
from nodewright.disruption.fleet import FleetNode
from nodewright.model.durations import format_duration
from nodewright.model.nodepool import NodePool

# The planner asks for at most one execution per node, reason and window: a re-run tick names the same
# execution (and starts nothing), while a disruption that failed is tried again in the next window.
PLANNER_WINDOW_SECONDS = 600


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node a method wants to disrupt. `forceful`: budgets and do-not-disrupt do not hold it back."""

    node: FleetNode
    reason: str
    forceful: bool
    detail: str


class Method(Protocol):
    """One way of choosing nodes to disrupt."""

    name: str

    def candidates(self, fleet: Sequence[FleetNode], pools: Mapping[str, NodePool], now: float) -> list[Candidate]:
        """The nodes this method would disrupt at `now`, each with its reason."""
        ...


class Expiration:
    """NodeClaims older than their `expireAfter` (Karpenter v1: forceful, not held back by budgets)."""

    name = "expiration"

    def candidates(self, fleet: Sequence[FleetNode], pools: Mapping[str, NodePool], now: float) -> list[Candidate]:
        out = []
        for node in fleet:
            if node.expire_after is None or not node.created_at or node.disrupting:
                continue
            age = now - node.created_at
            if age < node.expire_after:
                continue
            detail = f"age {format_duration(int(age))} exceeds expireAfter {format_duration(node.expire_after)}"
            out.append(Candidate(node, EXPIRED, True, detail))
        return out


@dataclass(frozen=True, slots=True)
class Plan:
    """What one planner tick decided: commands to start, and every candidate skipped with why."""

    commands: tuple[DisruptionCommand, ...]
    skipped: Mapping[str, str]


def plan(fleet: Sequence[FleetNode], pools: Mapping[str, NodePool], methods: Sequence[Method], now: float) -> Plan:
    """Inputs: the fleet, its pools, the methods in priority order, the time. Output: one command per node at
    most (the first method that names a node wins), in NodeClaim order. A node not yet registered is left to
    the registration timeout; one already being disrupted is left to its workflow."""
    commands: list[DisruptionCommand] = []
    skipped: dict[str, str] = {}
    chosen: set[str] = set()
    window = math.floor(now / PLANNER_WINDOW_SECONDS)
    for method in methods:
        for candidate in method.candidates(fleet, pools, now):
            node = candidate.node
            if node.nodeclaim in chosen:
                continue
            if not node.registered:
                skipped[node.nodeclaim] = f"{candidate.reason}: not registered yet ({candidate.detail})"
                continue
            chosen.add(node.nodeclaim)
            commands.append(
                DisruptionCommand(
                    nodeclaim=node.nodeclaim,
                    node=node.node,
                    instance_id=node.instance_id,
                    reason=candidate.reason,
                    forceful=candidate.forceful,
                    trigger=f"planner:{method.name}:{window}",
                    requested_at=now,
                )
            )
    return Plan(tuple(sorted(commands, key=lambda c: c.nodeclaim)), skipped)
