"""One planner tick's decisions: every method in Karpenter v1's order on one cluster snapshot.

Pure: the snapshot, the drift found and the methods in; decisions, what was skipped and why, and per-method figures
out. The planner Lambda and `nodewright disrupt` both call `plan()`, so the dry run prints exactly what the planner
would start. As in Karpenter, a tick takes one consolidation at most (multi-node first; single-node only when
multi-node found nothing): the next tick consolidates again on a cluster that has moved.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.catalog.overlay import OverlayResult, price_overlay
from nodewright.disruption.budgets import PoolBudgets
from nodewright.disruption.candidates import GRACEFUL
from nodewright.disruption.commands import UNHEALTHY, DisruptionCommand, Replacement, Target
from nodewright.disruption.consolidation import MultiNodeConsolidation, SingleNodeConsolidation
from nodewright.disruption.decision import EXPIRATION, UNDERUTILIZED, Decision
from nodewright.disruption.methods import (
    EXPIRATION_SIMULATIONS_PER_TICK,
    Drift,
    Emptiness,
    Expiration,
    Method,
    PlanContext,
    forceful_candidate,
    planned_replacements,
)
from nodewright.disruption.repair import Repair, Repairs, repairs
from nodewright.disruption.simulate import simulate
from nodewright.disruption.state import ClusterState
from nodewright.disruption.static import StaticDecision, static_decisions
from nodewright.gcpause import paused_cycle_collector

REPAIR = "repair"  # node repair's method name, as `nodewright disrupt --json` shows it
# Expiration asks for one execution per node and window: a re-run tick names the same execution (and starts
# nothing), while an expiration that failed is tried again in the next window.
PLANNER_WINDOW_SECONDS = 600

DEFAULT_METHODS: tuple[Method, ...] = (
    Expiration(),
    Emptiness(),
    Drift(),
    MultiNodeConsolidation(),
    SingleNodeConsolidation(),
)


@dataclass(frozen=True, slots=True)
class MethodReport:
    """A method's figures for one tick (for metrics): nodes it considered, decisions, seconds spent."""

    method: str
    reason: str
    eligible: int
    decisions: int
    seconds: float


@dataclass
class Plan:
    """What one tick decided, and why every other node was left alone.

    `repairs`: node repair's findings (`disruption.repair`), decided before every method: a node repaired is
    decided by nothing else. `blocked`: held back by a budget or by something its pods or node say
    (`DisruptionBlocked` events); `unconsolidatable`: consolidation found no move (`Unconsolidatable` events);
    `skipped`: every node not decided, with the most telling reason (repair's guard, budget, then consolidation,
    then the method's, then why it is no candidate, then an unhealthy condition still within its toleration).
    `budget_held`: the names in `blocked` that a budget holds back, which get no event of their own; instead
    `blocking_budgets` names each (NodePool, reason) whose budget allows no disruption at all now, for a method that
    had nodes to consider (Karpenter's NodePool event)."""

    repairs: Repairs = field(default_factory=Repairs)
    # NodeClaim -> what its repair's workflow would launch now, for the dry run (as `Decision.planned`).
    repair_launches: dict[str, tuple[Replacement, ...]] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    blocked: dict[str, str] = field(default_factory=dict)
    budget_held: set[str] = field(default_factory=set)
    blocking_budgets: list[tuple[str, str]] = field(default_factory=list)
    unconsolidatable: dict[str, str] = field(default_factory=dict)
    methods: list[MethodReport] = field(default_factory=list)
    # Each static NodePool's decision (`disruption.static`): NodeClaims to launch and to remove.
    static: list[StaticDecision] = field(default_factory=list)

    def commands(self, now: float) -> list[DisruptionCommand]:
        """The workflow input of each decision (see `command_for`)."""
        return [command_for(d, now) for d in self.decisions]

    def repair_commands(self, now: float) -> list[DisruptionCommand]:
        """The workflow input of each repair (see `repair_command`)."""
        return [repair_command(r, now) for r in self.repairs.due]

    def to_json(self, state: ClusterState) -> dict[str, Any]:
        """The `nodewright disrupt --json` shape: one command entry per node, every skipped node, and the hourly cost
        before and after. `replacements`: what the workflow would launch now (a consolidation's replacement; for drift
        and expiration the NodeClaims simulated for the node's moving pods; none when they fit on existing nodes or
        the node is empty); `replacement` is the first of them, or null. A multi-node consolidation's replacement
        and its price are on its first node."""
        commands = [_repair_json(r, state, self.repair_launches.get(r.member.nodeclaim, ())) for r in self.repairs.due]
        for entry, r in zip(commands, self.repairs.due, strict=True):
            entry["price_overlay"] = state.price_overlay(r.member)
        for d in self.decisions:
            for i, c in enumerate(d.candidates):
                launches = [_launch_json(r, state) for r in d.launches] if i == 0 else []
                share = d.replacement_price if i == 0 else 0.0
                commands.append(
                    {
                        "nodeclaim": c.name,
                        "node": c.member.node,
                        "nodepool": c.member.nodepool,
                        "reason": d.reason,
                        "method": d.method,
                        "replacement": launches[0] if launches else None,
                        "replacements": launches,
                        "pods": sorted(p.key for p in c.reschedulable),
                        "savings_per_hour": 0.0 if d.method == EXPIRATION else round(c.price - share, 6),
                        "price_overlay": state.price_overlay(c.member),
                    }
                )
        before = sum(state.price(m) or 0.0 for m in state.fleet if m.provider_id)
        savings = sum(d.savings_per_hour for d in self.decisions)
        out: dict[str, Any] = {
            "commands": commands,
            "skipped": [{"nodeclaim": name, "reason": why} for name, why in sorted(self.skipped.items())],
            "cost_per_hour_before": round(before, 6),
            "cost_per_hour_after": round(before - savings, 6),
            "nodeoverlays": _overlays_json(state),
        }
        if self.static:  # only a cluster with static NodePools has the key
            out["static"] = [d.to_json() for d in self.static]
        return out


def _launch_json(replacement: Replacement, state: ClusterState) -> dict[str, Any]:
    """A replacement's JSON with `price_overlay`: the NodeOverlay that priced its cheapest offering, or null."""
    shown = replacement.to_json()
    first = replacement.options[0] if replacement.options else None
    shown["price_overlay"] = (
        price_overlay(state.catalog, first.instance_type, first.zone, first.capacity_type) if first else None
    )
    return shown


def _overlays_json(state: ClusterState) -> dict[str, Any]:
    """The NodeOverlays applied to the planner's catalog, and those refused with the reason."""
    return (state.overlays or OverlayResult(state.catalog)).to_json()


def _repair_json(repair: Repair, state: ClusterState, planned: tuple[Replacement, ...]) -> dict[str, Any]:
    member = repair.member
    launches = [_launch_json(r, state) for r in planned]
    return {
        "nodeclaim": member.nodeclaim,
        "node": member.node,
        "nodepool": member.nodepool,
        "reason": UNHEALTHY,
        "method": REPAIR,
        "condition": repair.unhealthy.describe(state.now),
        "replacement": launches[0] if launches else None,
        "replacements": launches,
        "pods": sorted(p.key for p in state.pods_on(member)),
        "savings_per_hour": 0.0,
    }


def repair_command(repair: Repair, now: float) -> DisruptionCommand:
    """The workflow input for a repair: forceful, its deadline the NodeClaim's termination timestamp (so the drain
    deletes the pods it would otherwise evict), one execution per tick (a later tick's attempt has a name of its own;
    the node's lease keeps two from running at once)."""
    member, condition = repair.member, repair.unhealthy
    return DisruptionCommand(
        nodeclaim=member.nodeclaim,
        node=member.node,
        instance_id=member.instance_id,
        reason=UNHEALTHY,
        forceful=True,
        trigger=f"repair:{condition.condition}:{condition.since:.0f}:{math.floor(now / 60)}",
        requested_at=now,
        deadline=repair.terminate_at,
        method=REPAIR,
    )


def command_for(decision: Decision, now: float) -> DisruptionCommand:
    """The workflow input for a decision. Voluntary decisions are named per tick (the planner holds the nodes'
    locks before starting them, so a later tick cannot decide them again while their workflow runs); expiration is
    named per 10-minute window."""
    first, *rest = decision.candidates
    if decision.method == EXPIRATION:
        trigger = f"planner:{decision.method}:{math.floor(now / PLANNER_WINDOW_SECONDS)}"
    else:
        trigger = f"planner:{decision.method}:{math.floor(now / 60)}"
    return DisruptionCommand(
        nodeclaim=first.name,
        node=first.member.node,
        instance_id=first.member.instance_id,
        reason=decision.reason,
        forceful=decision.forceful,
        trigger=trigger,
        requested_at=now,
        method=decision.method,
        others=tuple(Target(c.name, c.member.node, c.member.instance_id) for c in rest),
        replacement=decision.replacement,
    )


def pool_budgets(state: ClusterState) -> PoolBudgets:
    """The budgets of every pool as Karpenter counts them (see `PoolBudgets`): initialized nodes only, and not those
    whose instance is already terminating (Karpenter's BuildDisruptionBudgetMapping skips a NodeClaim with
    InstanceTerminating=True: drained and deleted in the cloud, it is neither a node of the pool nor a disruption
    in progress)."""
    members = [
        (m.nodepool, state.disrupting(m) or not m.ready)
        for m in state.fleet
        if m.initialized and not m.instance_terminating
    ]
    return PoolBudgets(state.pools, members, state.now)


def plan(
    state: ClusterState,
    drift: Mapping[str, str],
    methods: Sequence[Method] = DEFAULT_METHODS,
    timer: Callable[[], float] = lambda: 0.0,
) -> Plan:
    """Inputs: the snapshot, NodeClaim -> drift reason as found this tick, the methods in order, and a timer for the
    per-method figures (the core reads no clock). Output: the decisions and the reasons for everything else.
    Invariant: a NodeClaim is in at most one decision; voluntary decisions never exceed a pool's budget."""
    with paused_cycle_collector():  # the simulations allocate much and create no cycles (see gcpause)
        return _plan(state, drift, methods, timer)


def _repair(state: ClusterState, ctx: PlanContext, out: Plan, timer: Callable[[], float]) -> None:
    """Node repair first: a node it replaces is decided by nothing else this tick."""
    started = timer()
    found = out.repairs = repairs(state.fleet, state.now)
    ctx.chosen.update(r.member.nodeclaim for r in found.due)
    for repair in found.due[:EXPIRATION_SIMULATIONS_PER_TICK]:  # as for expiration: only to show what launches
        pool = state.pools.get(repair.member.nodepool)
        candidate = forceful_candidate(state, repair.member, pool) if pool is not None else None
        if candidate is not None and candidate.reschedulable:
            sim = simulate(state, [candidate], ctx.chosen)
            out.repair_launches[repair.member.nodeclaim] = planned_replacements(sim)
    eligible = len(found.due) + len(found.waiting) + len(found.held)
    out.methods.append(MethodReport(REPAIR, UNHEALTHY, eligible, len(found.due), timer() - started))


def _plan(state: ClusterState, drift: Mapping[str, str], methods: Sequence[Method], timer: Callable[[], float]) -> Plan:
    # A static pool's drifted nodes are replaced by its own decision, one for one, not by the Drift method.
    static_pools = {name for name, pool in state.pools.items() if pool.static}
    pool_of = {m.nodeclaim: m.nodepool for m in state.fleet}
    ctx = PlanContext(
        state, pool_budgets(state), {k: v for k, v in drift.items() if pool_of.get(k) not in static_pools}
    )
    out = Plan()
    if state.settings.node_repair:
        _repair(state, ctx, out, timer)
    if static_pools:
        out.static = static_decisions(state, drift, pool_budgets(state))
    skipped: dict[str, str] = {}
    consolidated = False
    for method in methods:
        if consolidated and method.reason == UNDERUTILIZED:
            continue
        started = timer()
        outcome = method.decide(ctx)
        out.decisions.extend(outcome.decisions)
        out.budget_held.update(n for n in outcome.budget_held if n not in out.blocked)
        if outcome.eligible:
            blocking = [(pool, method.reason) for pool in ctx.budgets.blocking(method.reason)]
            out.blocking_budgets.extend(b for b in blocking if b not in out.blocking_budgets)
        for found, into in (
            (outcome.blocked, out.blocked),
            (outcome.unconsolidatable, out.unconsolidatable),
            (outcome.skipped, skipped),
        ):
            for name, why in found.items():
                into.setdefault(name, why)
        out.methods.append(
            MethodReport(method.name, method.reason, outcome.eligible, len(outcome.decisions), timer() - started)
        )
        consolidated = consolidated or (method.reason == UNDERUTILIZED and bool(outcome.decisions))
    refused = ctx.refused(GRACEFUL)
    for member in state.fleet:
        name = member.nodeclaim
        if name in ctx.chosen:
            continue
        why = (
            out.repairs.held.get(name)
            or out.blocked.get(name)
            or out.unconsolidatable.get(name)
            or skipped.get(name)
            or refused.get(name)
            or out.repairs.waiting.get(name)
            or ""
        )
        if why:
            out.skipped[name] = why
    return out
