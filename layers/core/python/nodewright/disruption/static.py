"""Static NodePools (`spec.replicas`): how many NodeClaims to launch and which to remove, one pool at a time.

Pure: a pool and its NodeClaims in, a decision with its reason out. The planner's tick acts on it (launching
through the provisioning path, removing by deleting NodeClaims, which the termination drains). Karpenter v1.14's
static controllers and its StaticDrift, in one decision per pool:

- Scale up (static provisioning): the NodeClaims neither deleting nor being disrupted are the pool's running ones;
  when running plus being-disrupted is short of `replicas`, launch the difference, within `limits.nodes` counted
  over every NodeClaim of the pool (deleting and being-disrupted ones included, as Karpenter reserves the count).
- Scale down (static deprovisioning): running NodeClaims beyond `replicas` are removed, not launched ones first, then
  empty nodes (no pod that must move, none protected by do-not-disrupt), then the cheapest to disrupt (Karpenter's
  disruption cost: moving its pods, times the share of its lifetime left); a do-not-disrupt node last. Not held
  by disruption budgets: the user asked for the smaller size.
- Drift (StaticDrift): with the pool not beyond its size, drifted NodeClaims are replaced one for one, the
  replacement launched first, as many at once as the `Drifted` budget and the room `limits.nodes` leaves after
  the scale-up allow. A replaced
  node is then beyond `replicas`, and scale-down removes drifted nodes first, once no replacement is still
  initializing.
Expiration and repair need nothing here: they delete the NodeClaim, and the next scale-up replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.disruption.budgets import PoolBudgets
from nodewright.disruption.candidates import BASE_DISRUPTION_COST, lifetime_remaining, protected, reschedule_cost
from nodewright.disruption.decision import DRIFTED
from nodewright.disruption.state import ClusterState
from nodewright.model.nodepool import NodePool


@dataclass(frozen=True, slots=True)
class StaticMember:
    """One NodeClaim of a static pool as the decision sees it.

    `deleting`: the NodeClaim or its Node is being deleted; `disrupting`: a workflow is taking it away (its lease,
    or the karpenter.sh/disrupted taint); `launched`: it has an instance (providerID); `initialized`: its node is
    ready for pods; `drifted`: why it drifted ("" when not); `empty`: no pod on it must move elsewhere;
    `do_not_disrupt`: the node, or a pod on it, is protected by karpenter.sh/do-not-disrupt; `cost`: Karpenter's
    disruption cost, what moving its pods costs times the share of its lifetime left; `created_at`: epoch seconds."""

    nodeclaim: str
    deleting: bool = False
    disrupting: bool = False
    launched: bool = True
    initialized: bool = True
    drifted: str = ""
    empty: bool = True
    do_not_disrupt: bool = False
    cost: float = 1.0
    created_at: float = 0.0

    @property
    def running(self) -> bool:
        return not self.deleting and not self.disrupting


@dataclass(frozen=True, slots=True)
class StaticDecision:
    """What one tick does to a static pool: `launch` NodeClaims from its template, `remove` these NodeClaims
    (by name, in order), `replacing`: the drifted NodeClaims the launches replace. `nodes`: the pool's NodeClaims
    not being deleted (what `status.nodes` reports). `reason`: one sentence on the decision or why nothing is done."""

    nodepool: str
    replicas: int
    nodes: int
    launch: int = 0
    remove: tuple[str, ...] = ()
    replacing: tuple[str, ...] = ()
    reason: str = ""
    held: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodepool": self.nodepool,
            "replicas": self.replicas,
            "nodes": self.nodes,
            "launch": self.launch,
            "remove": list(self.remove),
            "replacing": list(self.replacing),
            "reason": self.reason,
        }


def removal_order(members: Sequence[StaticMember]) -> list[StaticMember]:
    """Running members in the order scale-down removes them: drifted first (oldest first, the order drift replaces
    them in, so the one whose replacement runs goes), then not launched, then empty, then cheapest to disrupt, a
    do-not-disrupt node last; ties by age (newest first, as it has served least) and name."""

    def key(m: StaticMember) -> tuple[bool, float, bool, bool, bool, float, float, str]:
        oldest_drift = m.created_at if m.drifted else 0.0  # the order drift replaces them in
        return (
            not m.drifted,
            oldest_drift,
            m.launched,
            m.do_not_disrupt,
            not m.empty,
            m.cost,
            -m.created_at,
            m.nodeclaim,
        )

    return sorted((m for m in members if m.running), key=key)


def static_decision(pool: NodePool, members: Sequence[StaticMember], drift_allowed: int) -> StaticDecision:
    """The tick's decision for a static pool (see the module docstring): scale-down when the pool is beyond its
    size, else scale-up and drift replacements, which share the room `limits.nodes` leaves (scale-up first: the
    pool's size before its drift). `members`: every NodeClaim of the pool; `drift_allowed`: how many more of its
    nodes the pool's budgets let be disrupted for `Drifted` now.

    Invariants: never launches beyond `limits.nodes` (counting every member); never removes more than the running
    members beyond `replicas`; launches and removes in the same tick never both."""
    replicas = _replicas(pool)
    running = [m for m in members if m.running]
    base = StaticDecision(pool.name, replicas, sum(1 for m in members if not m.deleting))
    if len(running) > replicas:
        remove, held, reason = scale_down(pool, members)
        return replace(base, remove=remove, held=held, reason=reason)
    launch, up_reason = scale_up(pool, members)
    replacing, drift_reason = drift_replacements(pool, members, drift_allowed, reserved=launch)
    reason = "; ".join(r for r in (up_reason, drift_reason) if r)
    return replace(base, launch=launch + len(replacing), replacing=replacing, reason=reason)


def scale_up(pool: NodePool, members: Sequence[StaticMember]) -> tuple[int, str]:
    """Karpenter's static provisioning: how many NodeClaims to launch, and why ("" when the pool is at its size).
    The pool is short when its running NodeClaims plus those being disrupted (their replacement is on its way) are
    fewer than `replicas`; it launches `replicas` less the running ones, within the room `limits.nodes` leaves over
    every NodeClaim of the pool."""
    replicas = _replicas(pool)
    running = sum(1 for m in members if m.running)
    disrupting = sum(1 for m in members if m.disrupting and not m.deleting)
    if running + disrupting >= replicas:
        extra = f" and {disrupting} being disrupted" if disrupting else ""
        return 0, f"{running} running{extra}: at {replicas} replicas" if running + disrupting == replicas else ""
    wanted = replicas - running
    room = _room(pool, members)
    count = wanted if room is None else min(wanted, room)
    if count <= 0:
        return 0, f"{wanted} short of {replicas} replicas, but {_limit_sentence(pool.node_limit)}"
    capped = f" ({_limit_sentence(pool.node_limit)} for more)" if count < wanted else ""
    return count, f"launching {count} to keep {replicas} replicas{capped}"


def scale_down(pool: NodePool, members: Sequence[StaticMember]) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """Karpenter's static deprovisioning: the running NodeClaims beyond `replicas`, in `removal_order`, to delete;
    the drifted ones among them kept while a replacement is still coming up (a NodeClaim not drifted, not launched
    or not initialized); and why. Deleting ones are not counted. Nothing when the pool is not beyond its size."""
    replicas = _replicas(pool)
    running = [m for m in members if m.running]
    excess = len(running) - replicas
    if excess <= 0:
        return (), (), ""
    chosen = removal_order(running)[:excess]
    waiting = sorted(m.nodeclaim for m in running if not m.drifted and (not m.launched or not m.initialized))
    held = tuple(m.nodeclaim for m in chosen if m.drifted) if waiting else ()
    remove = tuple(m.nodeclaim for m in chosen if m.nodeclaim not in held)
    reason = f"{excess} beyond {replicas} replicas: removing {', '.join(remove) or 'none'}"
    if held:
        reason += f"; drifted {', '.join(held)} kept until {', '.join(waiting)} initializes"
    return remove, held, reason


def drift_replacements(
    pool: NodePool, members: Sequence[StaticMember], allowed: int, reserved: int = 0
) -> tuple[tuple[str, ...], str]:
    """Karpenter's StaticDrift: the drifted running NodeClaims to replace one for one now (oldest first), and why
    none or fewer. Nothing while the pool is beyond its size (running plus being disrupted above `replicas`); at
    most `allowed` (the `Drifted` budget) and the room `limits.nodes` leaves once `reserved` launches are counted."""
    replicas = _replicas(pool)
    running = [m for m in members if m.running]
    # A node or pod protected by karpenter.sh/do-not-disrupt is not a candidate, as for any drift.
    drifted = sorted(
        (m for m in running if m.drifted and not m.do_not_disrupt), key=lambda m: (m.created_at, m.nodeclaim)
    )
    if not drifted:
        return (), ""
    disrupting = sum(1 for m in members if m.disrupting and not m.deleting)
    if len(running) + disrupting > replicas:
        return (), f"{len(drifted)} drifted; waiting for the pool to come back to {replicas} nodes"
    room = _room(pool, members)
    count = min(allowed, len(drifted), len(drifted) if room is None else room - reserved)
    if count <= 0:
        why = "the Drifted disruption budget allows none now" if allowed <= 0 else _limit_sentence(pool.node_limit)
        return (), f"{len(drifted)} drifted, not replaced: {why}"
    replacing = tuple(m.nodeclaim for m in drifted[:count])
    return replacing, f"replacing drifted {', '.join(replacing)} one for one ({drifted[0].drifted}), replacement first"


def _replicas(pool: NodePool) -> int:
    assert pool.replicas is not None, f"NodePool {pool.name} is not static"
    return pool.replicas


def _room(pool: NodePool, members: Sequence[StaticMember]) -> int | None:
    """How many more NodeClaims `limits.nodes` allows, every NodeClaim of the pool counted (None: no limit)."""
    limit = pool.node_limit
    return None if limit is None else max(0, limit - len(members))


def _limit_sentence(limit: int | None) -> str:
    return f"limits.nodes {limit} leaves no room" if limit is not None else "no room"


def static_members(state: ClusterState, pool: str, drift: Mapping[str, str]) -> list[StaticMember]:
    """The pool's NodeClaims from the tick's cluster state; `drift`: NodeClaim -> drift reason found this tick
    (a NodeClaim's own `Drifted` condition counts too)."""
    out = []
    for member in state.fleet:
        if member.nodepool != pool:
            continue
        pods = state.pods_on(member)
        facts = [state.facts(p) for p in pods]
        moving = [p for p, f in zip(pods, facts, strict=True) if f.reschedulable]
        moving_cost = reschedule_cost(moving)
        out.append(
            StaticMember(
                nodeclaim=member.nodeclaim,
                deleting=member.deleting,
                disrupting=member.nodeclaim in state.locked or member.disrupting,
                launched=bool(member.provider_id),
                initialized=member.initialized,
                drifted=drift.get(member.nodeclaim) or member.drifted,
                empty=moving_cost <= BASE_DISRUPTION_COST,
                do_not_disrupt=member.do_not_disrupt
                or any(protected(p, f, state.now) for p, f in zip(pods, facts, strict=True)),
                cost=moving_cost * lifetime_remaining(member.expire_after, member.created_at, state.now),
                created_at=member.created_at,
            )
        )
    return out


def static_decisions(state: ClusterState, drift: Mapping[str, str], budgets: PoolBudgets) -> list[StaticDecision]:
    """Every static pool's decision for the tick, by pool name."""
    return [
        static_decision(pool, static_members(state, name, drift), budgets.allowance(name, DRIFTED).allowed)
        for name, pool in sorted(state.pools.items())
        if pool.static
    ]
