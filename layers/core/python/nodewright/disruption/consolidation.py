"""Consolidation (`consolidationPolicy: WhenEmptyOrUnderutilized`): remove nodes whose pods fit elsewhere, or replace
them with one cheaper NodeClaim. Karpenter v1's rules (pkg/controllers/disruption/consolidation.go):

- The candidates' pods are simulated onto the rest of the cluster (`disruption.simulate`). Every pod must find room,
  and none may land on capacity that is not initialized.
- No new NodeClaim: the candidates are deleted. More than one: no move (consolidation never turns nodes into more
  nodes). One: it replaces the candidates only with offerings strictly cheaper than the candidates together.
- All candidates spot and the replacement may be spot: spot-to-spot, only with the `spotToSpotConsolidation` setting,
  the replacement restricted to spot; for a single node at least 15 cheaper instance types must exist and the
  replacement launches with the 15 cheapest (or as many as the NodePool's minValues need), so that whichever one EC2
  picks is not consolidated again at once.
- The candidates' pods may not land on a node still inside its NodePool's `consolidateAfter` window (see
  `settling`); a replacement is not held back by it.
- Multi-node: when an instance type of the candidates is among the replacement's, the replacement must be cheaper
  than the cheapest such candidate (or deleting only the others would do the same with less disruption).

Every offering of the replacement's instance types in its zones and capacity types is priced (not only the 60 the
simulation keeps for the launch), so "strictly cheaper" is checked per offering: an on-demand fallback is kept only
when it too is cheaper than the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from nodewright.catalog.types import RESERVED, SPOT
from nodewright.disruption.candidates import GRACEFUL, Candidate
from nodewright.disruption.commands import Replacement, ReplacementOffering
from nodewright.disruption.decision import MULTI_NODE, SINGLE_NODE, UNDERUTILIZED, Decision, sentence
from nodewright.disruption.fleet import CAPACITY_TYPE_LABEL as CAPACITY_TYPE
from nodewright.disruption.fleet import INSTANCE_TYPE_LABEL as INSTANCE_TYPE
from nodewright.disruption.fleet import ZONE_LABEL as ZONE
from nodewright.disruption.methods import Outcome, PlanContext
from nodewright.disruption.simulate import simulate
from nodewright.disruption.state import ClusterState
from nodewright.model.requirements import Operator, Requirement
from nodewright.scheduling import PlannedNodeClaim, Results

MIN_SPOT_TO_SPOT_TYPES = 15
BALANCED = "Balanced"
BALANCED_K = 2  # Karpenter's BalancedK: a move must save at least 1/K of its share of the disruption
MAX_MULTI_NODE_CANDIDATES = 100
# The workflow carries the pods each candidate moves in its state (Step Functions: 256 KB), so a multi-node move
# takes at most this many pods.
MAX_MULTI_NODE_PODS = 1000
# Single-node consolidation simulates at most this many candidates per tick; the next tick goes on from the others.
SINGLE_NODE_SIMULATIONS_PER_TICK = 50


def compute(ctx: PlanContext, group: Sequence[Candidate], method: str) -> Decision | str:
    """The consolidation of `group` (delete, or replace with one cheaper NodeClaim), or why there is none."""
    price = sum(c.price for c in group)
    sim = simulate(
        ctx.state, group, ctx.chosen, one_claim=True, ceiling=_ceiling(group, price), settling=ctx.settling()
    )
    if not sim.all_moved:
        return f"Can't move its pods onto the rest of the cluster or one node cheaper than ${price:.4f}/h: " + sentence(
            sim.errors
        )
    names = ", ".join(c.member.node for c in group)
    if not sim.new_claims:
        deleted = Decision(method, UNDERUTILIZED, tuple(group), f"pods of {names} fit on the rest", moving=sim.moving)
        return _balanced(ctx, deleted)
    if len(sim.new_claims) > 1:
        return f"Can't remove without creating {len(sim.new_claims)} NodeClaims"
    offered = _offerings(ctx.state, sim.new_claims[0])
    if sim.new_claims[0].cheapest.capacity_type == RESERVED:
        # The plan took a reservation for the replacement: as Karpenter's scheduler narrows such a claim to
        # `reserved`, it launches into a reservation or not at all, never as a dearer spot or on-demand node.
        offered = [o for o in offered if o.capacity_type == RESERVED]
    if all(c.member.capacity_type == SPOT for c in group) and any(o.capacity_type == SPOT for o in offered):
        chosen = _spot_to_spot(ctx, group, offered, price)
    else:
        chosen = _cheaper(ctx, group, offered, price)
    if isinstance(chosen, str):
        return chosen
    replacement = Replacement(sim.new_claims[0].nodepool, tuple(chosen), price)
    cheapest = replacement.instance_types[0]
    detail = f"{names} replaced by {cheapest} ({len(chosen)} offerings cheaper than ${price:.4f}/h)"
    replaced = Decision(
        method,
        UNDERUTILIZED,
        tuple(group),
        detail,
        replacement=replacement,
        replacement_price=replacement.price,
        moving=sim.moving,
    )
    return _balanced(ctx, replaced)


def _ceiling(group: Sequence[Candidate], price: float) -> float | None:
    """The price ceiling for the simulation's new NodeClaims: the group's price, so the solver weighs only the types
    a replacement may use; none when a pod to move has preferred node affinity. Karpenter's scheduler (its default
    PreferencePolicy, Respect) keeps a preference it can meet, also with a type dearer than the node, and relaxes it
    only when nothing meets it; under the ceiling such a preference could never be met and would be relaxed, so the
    pod would be moved to a cheaper type it does not prefer. Without it, the plan keeps the preferred (dearer) type
    and `_cheaper` then finds no cheaper offering: the node stays, as in Karpenter."""
    if any(p.preferred_node_terms for c in group for p in c.reschedulable):
        return None
    return price


def balanced_score(saved: float, caused: float) -> float:
    """Karpenter's ScoreResult.Score: the share of the pool's cost a move saves over the share of its disruption it
    causes; 0 when it saves nothing (or a fraction is not a number), +inf when it causes no disruption."""
    if not saved > 0 or math.isnan(caused):
        return 0.0
    return math.inf if caused == 0 else saved / caused


def _balanced(ctx: PlanContext, decision: Decision) -> Decision | str:
    """Karpenter v1.14's `Balanced` policy (EvaluateBalancedMove): in such a pool a move goes ahead only when its
    score (`balanced_score`) is at least 1/K (K = 2). A pool whose totals are zero or unknown scores 0, so a move
    there is refused; an empty decision is refused; pools of other policies pass."""
    if not decision.candidates:
        return "no candidates to consolidate"
    by_pool: dict[str, list[Candidate]] = {}
    for c in decision.candidates:
        by_pool.setdefault(c.member.nodepool, []).append(c)
    total_price = decision.price
    for pool, group in sorted(by_pool.items()):
        if group[0].pool.disruption.consolidation_policy != BALANCED:
            continue
        cost, disruption = ctx.pool_totals(pool)
        saved = caused = 0.0
        if cost > 0 and disruption > 0:  # Karpenter's ScoreMove: zero fractions otherwise
            share = sum(c.price for c in group) / total_price if total_price > 0 and len(by_pool) > 1 else 1.0
            saved = decision.savings_per_hour * share / cost
            caused = sum(c.reschedule_cost for c in group) / disruption
        if balanced_score(saved, caused) < 1 / BALANCED_K:
            return (
                f'NodePool "{pool}" is Balanced: the move saves {saved:.1%} of its cost for {caused:.1%} of its '
                f"disruption, below the 1/{BALANCED_K} ratio it needs"
            )
    return decision


def _offerings(state: ClusterState, claim: PlannedNodeClaim) -> list[ReplacementOffering]:
    """Every available offering of the claim's instance types in its zones and capacity types, cheapest first."""
    zones, capacity = set(claim.zones), set(claim.capacity_types)
    out: list[ReplacementOffering] = []
    for name in claim.instance_types:
        it = state.catalog.get(name)
        if it is None:
            continue
        out.extend(
            ReplacementOffering(name, o.capacity_type, o.zone, o.price)
            for o in it.offerings
            if o.available and o.zone in zones and o.capacity_type in capacity
        )
    out.sort(key=lambda o: (o.price, o.instance_type, o.zone, o.capacity_type))
    return out


def _cheaper(
    ctx: PlanContext, group: Sequence[Candidate], offered: Sequence[ReplacementOffering], price: float
) -> list[ReplacementOffering] | str:
    ceiling = price
    if len(group) > 1:
        ceiling = min([price, *(_same_type_ceiling(group, offered))])
    chosen = [o for o in offered if o.price < ceiling]
    if not chosen:
        return "Can't replace with a cheaper node"
    return _min_values(ctx, group, chosen)


def _same_type_ceiling(group: Sequence[Candidate], offered: Sequence[ReplacementOffering]) -> list[float]:
    """Karpenter's filterOutSameInstanceType: a candidate type among the replacement's caps its price."""
    types = {o.instance_type for o in offered}
    return [c.price for c in group if c.member.instance_type in types]


def _spot_to_spot(
    ctx: PlanContext, group: Sequence[Candidate], offered: Sequence[ReplacementOffering], price: float
) -> list[ReplacementOffering] | str:
    if not ctx.state.settings.spot_to_spot:
        return "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
    ceiling = min([price, *_same_type_ceiling(group, offered)]) if len(group) > 1 else price
    chosen = [o for o in offered if o.capacity_type == SPOT and o.price < ceiling]
    if not chosen:
        return "Can't replace with a cheaper node"
    if len(group) > 1:
        return _min_values(ctx, group, chosen)
    types = list(dict.fromkeys(o.instance_type for o in chosen))
    if len(types) < MIN_SPOT_TO_SPOT_TYPES:
        return (
            f"SpotToSpotConsolidation requires {MIN_SPOT_TO_SPOT_TYPES} cheaper instance type options than the "
            f"current candidate to consolidate, got {len(types)}"
        )
    keep = set(types[: max(MIN_SPOT_TO_SPOT_TYPES, _min_values_needed(group[0]))])
    return _min_values(ctx, group, [o for o in chosen if o.instance_type in keep])


def _min_values_needed(c: Candidate) -> int:
    return max((r.min_values or 0 for r in c.pool.requirements), default=0)


def _min_values(
    ctx: PlanContext, group: Sequence[Candidate], chosen: list[ReplacementOffering]
) -> list[ReplacementOffering] | str:
    """The offerings, or why they break a NodePool's minValues (too few distinct values left for a key)."""
    pool = group[0].pool
    types = [ctx.state.catalog.get(name) for name in dict.fromkeys(o.instance_type for o in chosen)]
    for requirement in pool.requirements:
        if not requirement.min_values:
            continue
        values = {it.labels.get(requirement.key) for it in types if it is not None} - {None}
        if len(values) < requirement.min_values:
            return (
                f"Filtering by price: minValues requirement is not met for {requirement.key} "
                f"({len(values)} of {requirement.min_values} values left)"
            )
    return chosen


def _missing_label(c: Candidate) -> str:
    if not c.member.capacity_type:
        return CAPACITY_TYPE
    return ZONE if not c.member.zone else ""


def _eligible(ctx: PlanContext, out: Outcome) -> list[Candidate]:
    """Karpenter's ShouldDisrupt for consolidation: priced, labelled with its capacity type and zone, in a pool that
    consolidates (consolidateAfter not Never) with policy WhenEmptyOrUnderutilized, Consolidatable, and not empty
    (emptiness' business). A node failing one of the first three is Unconsolidatable, with Karpenter's message (an
    event); one not Consolidatable yet is only skipped, as Karpenter fires no event for it."""
    found = []
    for c in ctx.candidates(GRACEFUL):
        if c.empty:
            continue
        missing = _missing_label(c)
        if c.instance_type is None or (not missing and not c.price):
            out.unconsolidatable[c.name] = f'Instance Type "{c.member.instance_type}" not found'
            continue
        if missing:  # its offering, so its price, is unknown
            out.unconsolidatable[c.name] = f'Node does not have label "{missing}"'
            continue
        if c.pool.disruption.consolidate_after_seconds is None:
            out.unconsolidatable[c.name] = f'NodePool "{c.pool.name}" has consolidation disabled'
            continue
        if c.pool.disruption.consolidation_policy == "WhenEmpty":
            out.unconsolidatable[c.name] = (
                f'NodePool "{c.pool.name}" has consolidation policy WhenEmpty, but node is not empty'
            )
            continue
        waiting = ctx.consolidatable(c)
        if waiting:
            out.skipped[c.name] = f"{UNDERUTILIZED}: {waiting}"
            continue
        found.append(c)
    return found


class MultiNodeConsolidation:
    """Up to 100 candidates at once (most savings per unit of disruption first, within budgets), removed with at
    most one replacement: a prefix of that order that consolidates (see `_best_prefix`)."""

    name = MULTI_NODE
    reason = UNDERUTILIZED

    def decide(self, ctx: PlanContext) -> Outcome:
        out = Outcome()
        eligible = _eligible(ctx, out)
        out.eligible = len(eligible)
        taken: dict[str, int] = {}
        within: list[Candidate] = []
        pods = 0
        for c in eligible:
            allowed = ctx.budgets.allowance(c.member.nodepool, UNDERUTILIZED).allowed - taken.get(c.member.nodepool, 0)
            if allowed <= 0:
                out.hold(c.name, ctx.budget(c, UNDERUTILIZED) or f"NodePool {c.member.nodepool}: budget used")
                continue
            if len(within) >= MAX_MULTI_NODE_CANDIDATES or pods + len(c.reschedulable) > MAX_MULTI_NODE_PODS:
                break
            taken[c.member.nodepool] = taken.get(c.member.nodepool, 0) + 1
            within.append(c)
            pods += len(c.reschedulable)
        best = self._best_prefix(ctx, within)
        if best is not None:
            ctx.take(best)
            out.decisions.append(best)
        return out

    @staticmethod
    def _best_prefix(ctx: PlanContext, within: Sequence[Candidate]) -> Decision | None:
        """Karpenter's binary search for the longest prefix that consolidates, and the prefixes of 2, 4, 8, ...
        below it. Karpenter takes the longest; its replacement is often one very large node (only the largest types
        hold every pod of a long prefix), which consolidation can never split again, since a move launches one node
        at most. So of the valid moves, the one saving the most is taken among those whose replacement costs no
        more than the dearest node it removes (ties: more nodes); the longest only when no such move is valid."""
        if len(within) < 2:
            return None  # single-node consolidation covers one node
        tried: dict[int, Decision | str] = {}

        def consolidates(size: int) -> bool:
            if size not in tried:
                tried[size] = compute(ctx, within[:size], MULTI_NODE)
            return isinstance(tried[size], Decision)

        low, high = 2, len(within)
        longest = 0
        while low <= high:
            mid = (low + high) // 2
            if consolidates(mid):
                longest, low = mid, mid + 1
            else:
                high = mid - 1
        size = 2
        while size < longest:
            consolidates(size)
            size *= 2
        valid = [d for d in tried.values() if isinstance(d, Decision)]
        kept = [d for d in valid if d.replacement_price <= max(c.price for c in d.candidates)]
        if not kept:
            return max(valid, key=lambda d: len(d.candidates), default=None)
        return max(kept, key=lambda d: (d.savings_per_hour, len(d.candidates)))


class SingleNodeConsolidation:
    """One candidate at a time, cheapest to disrupt first (NodePools taken in turn): the first one that can be
    deleted, or replaced by one cheaper NodeClaim, is. Candidates that cannot are Unconsolidatable, with why."""

    name = SINGLE_NODE
    reason = UNDERUTILIZED

    def decide(self, ctx: PlanContext) -> Outcome:
        out = Outcome()
        eligible = _rotated(_interleave_pools(_eligible(ctx, out)), ctx.state.now)
        out.eligible = len(eligible)
        room = _FreeRoom(ctx.state)
        simulations = 0
        for index, c in enumerate(eligible):
            if out.decisions:
                rest = eligible[index:]
                out.skipped.update(
                    {r.name: f"{UNDERUTILIZED}: not evaluated (a tick takes one consolidation)" for r in rest}
                )
                break
            held = ctx.budget(c, UNDERUTILIZED)
            if held:
                out.hold(c.name, held)
                continue
            hopeless = room.hopeless(ctx.state, c)
            if hopeless:
                out.unconsolidatable[c.name] = hopeless
                continue
            if simulations >= SINGLE_NODE_SIMULATIONS_PER_TICK:
                out.skipped[c.name] = f"{UNDERUTILIZED}: left for the next tick"
                continue
            simulations += 1
            found = compute(ctx, [c], SINGLE_NODE)
            if isinstance(found, str):
                out.unconsolidatable[c.name] = found
                continue
            ctx.take(found)
            out.decisions.append(found)
        return out


def _rotated(found: list[Candidate], now: float) -> list[Candidate]:
    """More candidates than a tick simulates: each tick starts where the last one stopped (by the minute), so every
    candidate is evaluated within a few ticks, as Karpenter's single-node pass reaches them all within its
    three-minute timeout."""
    if len(found) <= SINGLE_NODE_SIMULATIONS_PER_TICK:
        return found
    start = (math.floor(now / 60) * SINGLE_NODE_SIMULATIONS_PER_TICK) % len(found)
    return [*found[start:], *found[:start]]


def _interleave_pools(found: Sequence[Candidate]) -> list[Candidate]:
    """Karpenter's single-node order: by disruption cost within each NodePool, the pools taken in turn."""
    by_pool: dict[str, list[Candidate]] = {}
    for c in found:
        by_pool.setdefault(c.member.nodepool, []).append(c)
    out: list[Candidate] = []
    for i in range(max((len(v) for v in by_pool.values()), default=0)):
        out.extend(by_pool[p][i] for p in sorted(by_pool) if i < len(by_pool[p]))
    return out


class _FreeRoom:
    """Cheap necessary conditions that spare a simulation: a candidate's pods can only be deleted away if the other
    Ready nodes have that much free CPU and memory, and only replaced if some instance type of its pool is big enough
    (by capacity, which is at least allocatable) and cheaper than it. When neither holds, no simulation can succeed."""

    def __init__(self, state: ClusterState) -> None:
        self.free = {"cpu": 0, "memory": 0}
        self.node_free: dict[str, dict[str, int]] = {}
        for node in state.inputs.nodes:
            used = state.used(node)
            free = {k: max(node.allocatable.get(k, 0) - used.get(k, 0), 0) for k in self.free}
            self.node_free[node.name] = free
            if node.ready and not node.unschedulable:
                for key in free:
                    self.free[key] += free[key]
        self._sizes: dict[str, list[tuple[float, int, int]]] = {}

    def hopeless(self, state: ClusterState, c: Candidate) -> str:
        need = {k: sum(p.requests.get(k, 0) for p in c.reschedulable) for k in ("cpu", "memory")}
        own = self.node_free.get(c.member.node, {})
        elsewhere = all(self.free[k] - own.get(k, 0) >= need[k] for k in need)
        if elsewhere or self._cheaper_type_fits(state, c, need):
            return ""
        return "Can't replace with a cheaper node, and the other nodes lack the room for its pods"

    def _cheaper_type_fits(self, state: ClusterState, c: Candidate, need: dict[str, int]) -> bool:
        sizes = self._sizes.get(c.pool.name)
        if sizes is None:
            requirements = c.pool.node_requirements()
            sizes = [
                (min(o.price for o in it.offerings if o.available), it.vcpu * 1000, it.memory_mib * 1024 * 1024)
                for it in state.catalog.compatible(requirements)
                if any(o.available for o in it.offerings)
            ]
            self._sizes[c.pool.name] = sizes
        return any(price < c.price and cpu >= need["cpu"] and mem >= need["memory"] for price, cpu, mem in sizes)


def restrict(results: Results, replacement: Replacement) -> Results | str:
    """LaunchReplacement's filter on a fresh simulation: one NodeClaim at most, launched only with offerings the
    decision allowed (same instance type, capacity type and zone, below the ceiling). Returns the restricted plan, or
    why the consolidation no longer holds."""
    if not results.nodeclaims:
        return results
    if len(results.nodeclaims) > 1:
        return f"the pods now need {len(results.nodeclaims)} NodeClaims; the consolidation planned one"
    claim = results.nodeclaims[0]
    allowed = {(o.instance_type, o.capacity_type, o.zone) for o in replacement.options}
    options = tuple(
        o
        for o in claim.launch_options
        if (o.instance_type, o.capacity_type, o.zone) in allowed
        and (not replacement.ceiling or o.price < replacement.ceiling)
    )
    if not options:
        return "none of the offerings the consolidation allowed fits the pods now"
    types = tuple(t for t in claim.instance_types if any(o.instance_type == t for o in options))
    zones = tuple(sorted({o.zone for o in options}))
    capacity = tuple(sorted({o.capacity_type for o in options}))
    narrowed_keys = {INSTANCE_TYPE: types, CAPACITY_TYPE: capacity, ZONE: zones}
    requirements = (
        *(r for r in claim.requirements if r.key not in narrowed_keys),
        *(Requirement(key, Operator.IN, values) for key, values in narrowed_keys.items()),
    )
    narrowed = replace(
        claim,
        instance_types=types,
        capacity_types=capacity,
        zones=zones,
        launch_options=options,
        requirements=requirements,
    )
    return Results(nodeclaims=(narrowed,), existing=results.existing, unschedulable=results.unschedulable)
