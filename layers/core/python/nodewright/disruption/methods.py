"""Disruption methods: each looks at the cluster and decides which nodes to take away, and why.

The planner runs them in Karpenter v1's order on every tick (expiration, forceful, first; then emptiness, drift,
multi-node and single-node consolidation, each held back by the NodePools' budgets), through `disruption.plan`.
A method sees the candidates the tick has not given to an earlier method yet, and every node it passes over keeps
the reason, for the planner's events and for `nodewright disrupt`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from nodewright.disruption.budgets import PoolBudgets
from nodewright.disruption.candidates import (
    EVENTUAL,
    GRACEFUL,
    Candidate,
    candidate,
    candidates,
    consolidatable,
    last_pod_event,
    reschedule_cost,
    settling,
)
from nodewright.disruption.commands import EXPIRED, Replacement, ReplacementOffering
from nodewright.disruption.decision import DRIFT, DRIFTED, EMPTINESS, EMPTY, EXPIRATION, Decision, sentence
from nodewright.disruption.fleet import FleetNode
from nodewright.disruption.simulate import Simulation, simulate
from nodewright.disruption.state import ClusterState
from nodewright.model.durations import format_duration
from nodewright.model.nodepool import NodePool

# Non-empty drifted nodes are simulated one at a time; a tick simulates at most this many (the next tick goes on).
DRIFT_SIMULATIONS_PER_TICK = 10
# Expiration does not wait for a simulation (it is forceful); it simulates at most this many expired nodes a tick
# only to show what their workflows would launch (`Decision.planned`); the others show none.
EXPIRATION_SIMULATIONS_PER_TICK = 10


def planned_replacements(sim: Simulation) -> tuple[Replacement, ...]:
    """The NodeClaims a simulation plans for the candidates' moving pods (claims only pending pods need are the
    provisioner's, not the disruption's), each as a `Replacement` of its launch options, the simulation's choice
    first. Empty when every moving pod fits on existing or in-flight capacity."""
    moving = set(sim.moving)
    out: list[Replacement] = []
    for claim in sim.new_claims:
        if not moving.intersection(claim.pods):
            continue
        options = tuple(
            ReplacementOffering(o.instance_type, o.capacity_type, o.zone, o.price) for o in claim.launch_options
        )
        out.append(Replacement(claim.nodepool, options))
    return tuple(out)


def forceful_candidate(state: ClusterState, member: FleetNode, pool: NodePool) -> Candidate:
    """A node that goes whatever its pods say (expiration, repair) as a candidate: its pods, and those that must
    move (`Candidate.reschedulable`)."""
    pods = state.pods_on(member)
    moving = tuple(p for p in pods if state.facts(p).reschedulable)
    price = state.price(member) or 0.0
    return Candidate(member, pool, pods, moving, state.instance_type(member), price, reschedule_cost(moving))


@dataclass
class PlanContext:
    """What one tick's methods share: the cluster, the budgets, the NodeClaims decided so far, and the drift found.

    `drift`: NodeClaim -> drift reason, as the planner found it this tick (from `disruption.drift`)."""

    state: ClusterState
    budgets: PoolBudgets
    drift: Mapping[str, str] = field(default_factory=dict)
    chosen: set[str] = field(default_factory=set)
    _candidates: dict[str, tuple[list[Candidate], dict[str, str]]] = field(default_factory=dict)
    _totals: dict[str, tuple[float, float]] = field(default_factory=dict)
    _settling: frozenset[str] | None = None

    def settling(self) -> frozenset[str]:
        """The nodes inside their consolidateAfter window (`candidates.settling`), once per tick."""
        if self._settling is None:
            self._settling = settling(self.state)
        return self._settling

    def candidates(self, disruption_class: str = GRACEFUL) -> list[Candidate]:
        """Candidates not decided yet this tick, cheapest to disrupt first."""
        if disruption_class not in self._candidates:
            self._candidates[disruption_class] = candidates(self.state, disruption_class)
        return [c for c in self._candidates[disruption_class][0] if c.name not in self.chosen]

    def refused(self, disruption_class: str = GRACEFUL) -> dict[str, str]:
        """Why each node that is not a candidate is not one."""
        self.candidates(disruption_class)
        return self._candidates[disruption_class][1]

    def consolidatable(self, c: Candidate) -> str:
        """Why `c` is not Consolidatable yet ("" when it is)."""
        return consolidatable(c.member, c.pool, last_pod_event(self.state, c.member), self.state.now)

    def budget(self, c: Candidate, reason: str) -> str:
        """The budget sentence when the candidate's pool allows no more disruption for `reason` ("" when it does)."""
        allowance = self.budgets.allowance(c.member.nodepool, reason)
        return "" if allowance.allowed > 0 else f"NodePool {c.member.nodepool}: {allowance.reason}"

    def pool_totals(self, pool: str) -> tuple[float, float]:
        """(hourly cost, rescheduling cost) of every node of the pool (a node of unknown price counts 0): what
        Balanced consolidation weighs a move's savings and disruption against."""
        if not self._totals:
            for member in self.state.fleet:
                cost, disruption = self._totals.get(member.nodepool, (0.0, 0.0))
                moving = [p for p in self.state.pods_on(member) if self.state.facts(p).reschedulable]
                self._totals[member.nodepool] = (
                    cost + (self.state.price(member) or 0.0),
                    disruption + (reschedule_cost(moving) if member.node else 0.0),
                )
        return self._totals.get(pool, (0.0, 0.0))

    def take(self, decision: Decision) -> None:
        """Record a decision: its candidates leave the pool of candidates and count against their budgets."""
        for c in decision.candidates:
            self.chosen.add(c.name)
            self.budgets.take(c.member.nodepool)


@dataclass
class Outcome:
    """What a method decided. `skipped`: NodeClaim -> why it was not disrupted (for the report); `blocked`: held
    back by a budget or by what its pods or node say (a `DisruptionBlocked` event on the node, except for those in
    `budget_held`: as Karpenter does, a budget that holds back a pool reports once, on the NodePool);
    `unconsolidatable`: consolidation found no move (an `Unconsolidatable` event); `eligible`: how many nodes the
    method considered."""

    decisions: list[Decision] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    blocked: dict[str, str] = field(default_factory=dict)
    budget_held: set[str] = field(default_factory=set)
    unconsolidatable: dict[str, str] = field(default_factory=dict)
    eligible: int = 0

    def hold(self, name: str, budget: str) -> None:
        """Record that `budget` (the sentence `PlanContext.budget` gives) holds the NodeClaim `name` back."""
        self.blocked[name] = budget
        self.budget_held.add(name)


class Method(Protocol):
    """One way of choosing nodes to disrupt."""

    name: str
    reason: str

    def decide(self, ctx: PlanContext) -> Outcome:
        """The decisions this method takes on the tick's context; it records them with `ctx.take`."""
        ...


class Expiration:
    """NodeClaims older than their `expireAfter`, counted from their creation, registered or not (Karpenter v1's
    nodeclaim/expiration controller: forceful, not held back by budgets or do-not-disrupt)."""

    name = EXPIRATION
    reason = EXPIRED

    def decide(self, ctx: PlanContext) -> Outcome:
        out = Outcome()
        state = ctx.state
        simulations = 0
        for member in state.fleet:
            if member.expire_after is None or not member.created_at or state.disrupting(member):
                continue
            if member.nodeclaim in ctx.chosen:
                continue
            age = state.now - member.created_at
            if age < member.expire_after:
                continue
            detail = f"age {format_duration(int(age))} exceeds expireAfter {format_duration(member.expire_after)}"
            if not member.registered:
                # Karpenter's expiration controller counts from the NodeClaim's creation whatever its registration,
                # and deletes it: a claim whose node never joined is expired too (the workflow terminates its
                # instance; with no node there is nothing to drain).
                detail = f"{detail}; its node never registered"
            out.eligible += 1
            pool = state.pools.get(member.nodepool)
            if pool is None:
                out.skipped[member.nodeclaim] = f"{EXPIRED}: NodePool {member.nodepool!r} not found ({detail})"
                continue
            found = forceful_candidate(state, member, pool)
            planned: tuple[Replacement, ...] = ()
            if found.reschedulable and simulations < EXPIRATION_SIMULATIONS_PER_TICK:
                simulations += 1
                planned = planned_replacements(simulate(state, [found], ctx.chosen))
            decision = Decision(EXPIRATION, EXPIRED, (found,), detail, forceful=True, planned=planned)
            ctx.take(decision)
            out.decisions.append(decision)
        return out


class Emptiness:
    """Nodes with nothing but DaemonSet, mirror or finished pods, Consolidatable (`consolidateAfter` passed since
    their last pod event), and holding no CapacityBuffer's virtual pods (`disruption.buffers`): removed with no
    replacement, under the budgets for `Empty`. Every candidate of a pool
    with `consolidateAfter: Never`, empty or not, is Unconsolidatable with Karpenter's message (its Emptiness'
    ShouldDisrupt publishes that event before it looks at the pods)."""

    name = EMPTINESS
    reason = EMPTY

    def decide(self, ctx: PlanContext) -> Outcome:
        out = Outcome()
        for c in ctx.candidates(GRACEFUL):
            if c.pool.disruption.consolidate_after_seconds is None:
                out.unconsolidatable[c.name] = f'NodePool "{c.pool.name}" has consolidation disabled'
                continue
            if not c.empty:
                continue
            if ctx.state.buffer_placement().hosts.get(c.member.node, 0):
                # Karpenter's emptiness: the room a CapacityBuffer's virtual pods take here is what the buffer keeps;
                # removing it would only make the buffer launch a node again.
                out.unconsolidatable[c.name] = f'Node "{c.member.node}" has buffer pods'
                continue
            waiting = ctx.consolidatable(c)
            if waiting:
                out.skipped[c.name] = f"{EMPTY}: {waiting}"
                continue
            out.eligible += 1
            held = ctx.budget(c, EMPTY)
            if held:
                out.hold(c.name, held)
                continue
            decision = Decision(EMPTINESS, EMPTY, (c,), f"empty for consolidateAfter on {c.member.node}")
            ctx.take(decision)
            out.decisions.append(decision)
        return out


class Drift:
    """Drifted nodes (see `disruption.drift`), oldest drift first and empty ones before the rest, each replaced
    by what its pods need (a simulation decides whether they can move at all), under the budgets for `Drifted`.
    Eventual: a NodeClaim with a terminationGracePeriod is not held back by its pods."""

    name = DRIFT
    reason = DRIFTED

    def decide(self, ctx: PlanContext) -> Outcome:
        out = Outcome()
        if not any(ctx.drift.values()):
            return out
        drifted = [c for c in ctx.candidates(EVENTUAL) if ctx.drift.get(c.name)]
        drifted.sort(key=lambda c: (not c.empty, c.member.drifted_at, c.name))
        simulations = 0
        for c in drifted:
            out.eligible += 1
            why = ctx.drift[c.name]
            held = ctx.budget(c, DRIFTED)
            if held:
                out.hold(c.name, held)
                continue
            if c.empty:
                decision = Decision(DRIFT, DRIFTED, (c,), why)
            else:
                if simulations >= DRIFT_SIMULATIONS_PER_TICK:
                    out.skipped[c.name] = f"{DRIFTED} ({why}): left for the next tick"
                    continue
                simulations += 1
                sim = simulate(ctx.state, [c], ctx.chosen)
                if not sim.all_moved:
                    out.blocked[c.name] = f"{DRIFTED} ({why}), but its pods cannot move: {sentence(sim.errors)}"
                    continue
                planned = planned_replacements(sim)
                price = sum(r.price for r in planned)
                decision = Decision(
                    DRIFT, DRIFTED, (c,), why, replacement_price=price, moving=sim.moving, planned=planned
                )
            ctx.take(decision)
            out.decisions.append(decision)
        for name, why in ctx.drift.items():
            if why and name not in ctx.chosen and name not in out.blocked and name not in out.skipped:
                refused = ctx.refused(EVENTUAL).get(name)
                if refused:
                    out.blocked[name] = f"{DRIFTED} ({why}), but {refused}"
        return out


def member_candidate(ctx: PlanContext, name: str) -> Candidate | str:
    """The NodeClaim called `name` as a candidate now, or why it is not one (for re-checks)."""
    member = next((m for m in ctx.state.fleet if m.nodeclaim == name), None)
    if member is None:
        return f"nodeclaim/{name} no longer exists"
    return candidate(ctx.state, member)
