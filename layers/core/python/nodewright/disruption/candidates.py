"""Candidates: the nodes voluntary disruption may consider, each with its pods, price and disruption cost.

A node is a candidate only when it could be taken away now (Karpenter's ValidateNodeDisruptable and
ValidatePodsDisruptable): it is registered and initialized, nothing is taking it away already, no pending pod was
just nominated to it, neither it (`"true"`) nor (for graceful methods) one of its running pods (`"true"`, or a Go
duration not yet over since the pod started: Karpenter's IsDoNotDisruptActive) says `karpenter.sh/do-not-disrupt`,
and no PodDisruptionBudget forbids evicting one of the pods Karpenter would evict (IsEvictable: running, not
tolerating `karpenter.sh/disrupted`, not a mirror pod; DaemonSet pods included, their budgets count). A pod's
do-not-disrupt value that is neither "true" nor a positive duration protects nothing; the candidate keeps why in
`invalid` (Karpenter reports it as an event). Every node that is not a candidate keeps the reason,
so the planner can report it (`DisruptionBlocked`) and `nodewright disrupt` can print it.

Order, as Karpenter v1.14 orders consolidation: the most savings per unit of disruption first. A pod's eviction cost
is Karpenter's: 1, plus its `controller.kubernetes.io/pod-deletion-cost` / 2^27, plus its priority / 2^25, clamped to
[-10, 10]; a node's rescheduling cost is 1 (cordon, drain, replacement) plus the positive eviction costs of the pods
that must move, and its savings ratio is its price over that cost. A node whose moving pods add nothing to it is
empty (emptiness takes it, with no replacement).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.catalog.types import InstanceType
from nodewright.disruption.fleet import PROTECTED_UNTIL_ANNOTATION, FleetNode, epoch
from nodewright.disruption.state import ClusterState, PodFacts
from nodewright.model import do_not_disrupt
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import DO_NOT_DISRUPT, Pod

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
# A pod nominated to a freshly registered node is left to the kube-scheduler for this long (as the provisioner does).
NOMINATION_GRACE_SECONDS = 120

BASE_DISRUPTION_COST = 1.0  # Karpenter's PerNodeBaseDisruptionCost: cordon, drain, API calls, a replacement's wait
GRACEFUL = "graceful"  # respects do-not-disrupt pods and PodDisruptionBudgets (emptiness, consolidation)
EVENTUAL = "eventual"  # bounded by the NodeClaim's terminationGracePeriod when it has one (drift)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node voluntary disruption may take away.

    `pods`: every pod bound to it; `reschedulable`: those that need room elsewhere once it goes (not DaemonSet or
    mirror pods, not terminating); `price`: its offering's price per hour (0.0 when the catalog does not know it);
    `reschedule_cost`: see the module doc; `invalid`: one line per pod whose `karpenter.sh/do-not-disrupt` value
    is ignored as invalid (Karpenter's InvalidDoNotDisruptAnnotation event), for reports."""

    member: FleetNode
    pool: NodePool
    pods: tuple[Pod, ...]
    reschedulable: tuple[Pod, ...]
    instance_type: InstanceType | None
    price: float
    reschedule_cost: float
    invalid: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.member.nodeclaim

    @property
    def empty(self) -> bool:
        """No pod that must move adds to the cost of disrupting it (Karpenter's IsEmpty)."""
        return self.reschedule_cost <= BASE_DISRUPTION_COST

    @property
    def savings_ratio(self) -> float:
        return self.price / self.reschedule_cost


def eviction_cost(pod: Pod) -> float:
    """Karpenter's EvictionCost: how much evicting this pod hurts, in [-10, 10] (1 for an ordinary pod)."""
    cost = 1.0
    raw = pod.annotations.get(DELETION_COST_ANNOTATION)
    if raw is not None:
        # The API server validates this annotation; a malformed one counts as absent.
        with contextlib.suppress(ValueError):
            cost += float(raw) / 2**27
    cost += pod.priority / 2**25
    return min(max(cost, -10.0), 10.0)


def reschedule_cost(pods: Sequence[Pod]) -> float:
    """What moving these pods costs: 1 for the node itself, plus each pod's eviction cost when positive."""
    return BASE_DISRUPTION_COST + sum(max(eviction_cost(p), 0.0) for p in pods)


def lifetime_remaining(expire_after: float | None, created_at: float, now: float) -> float:
    """Karpenter's LifetimeRemaining: the share of a NodeClaim's `expireAfter` still ahead of it, clamped to [0, 1];
    1 when it never expires. A node near its expiry is cheaper to disrupt now: it goes soon anyway."""
    if not expire_after:
        return 1.0
    return min(1.0, max(0.0, (expire_after - (now - created_at)) / expire_after))


def consolidatable(member: FleetNode, pool: NodePool, last_pod_event: float, now: float) -> str:
    """Why the node is not yet Consolidatable ("" when it is): Karpenter's condition, True once `consolidateAfter`
    has passed since the last pod event on the node (or since it initialized)."""
    after = pool.disruption.consolidate_after_seconds
    if after is None:
        return f'NodePool "{pool.name}" has consolidation disabled (consolidateAfter: Never)'
    if not member.initialized:
        return "node isn't initialized"
    since = max(last_pod_event, member.last_pod_event, member.initialized_at)
    if now - since < after:
        return f"consolidateAfter {after}s has not passed since the last pod event ({int(now - since)}s ago)"
    return ""


def _node_block(state: ClusterState, member: FleetNode) -> str:
    """Karpenter's queue check (a workflow holds the node's lock), then its ValidateNodeDisruptable, in its order."""
    if member.nodeclaim in state.locked:
        return "candidate is already being disrupted"
    if not member.registered:
        return "nodeclaim does not have an associated node"
    if not member.initialized:
        return "node isn't initialized"
    if state.disrupting(member):
        return "node is deleting or marked for deletion"
    pending = {p.key for p in state.inputs.pending_pods}
    if any(p in pending for p in member.nominated) and state.now - member.initialized_at < NOMINATION_GRACE_SECONDS:
        return "node is nominated for a pending pod"
    if member.do_not_disrupt:
        return f'disruption is blocked through the "{DO_NOT_DISRUPT}" annotation'
    protected = str(member.annotations.get(PROTECTED_UNTIL_ANNOTATION) or "")
    if protected and epoch(protected) > state.now:
        return f"launched early for a rebalance recommendation: protected until {protected}"
    unreadable = state.unreadable.get(member.node, ())
    if unreadable:
        return f"pod {unreadable[0]} could not be read (see the validation errors): its node cannot be simulated"
    if member.nodepool not in state.pools:
        if not member.nodepool:
            return "node has no karpenter.sh/nodepool label"
        return f'NodePool "{member.nodepool}" not found'
    return ""


def protected(pod: Pod, fact: PodFacts, now: float) -> bool:
    """The pod's `karpenter.sh/do-not-disrupt` still protects it at `now` (Karpenter's IsDoNotDisruptActive)."""
    return do_not_disrupt.is_active(pod.annotations.get(DO_NOT_DISRUPT), fact.started_at, now)


def disruptable(pod: Pod, fact: PodFacts, now: float) -> bool:
    """Karpenter's IsDisruptable: a pod that is terminating, or whose do-not-disrupt protection is absent or over.
    Every pod counts, DaemonSet and mirror pods included (Karpenter lets them block with the annotation)."""
    return fact.terminating or not protected(pod, fact, now)


def evictable(pod: Pod, fact: PodFacts, now: float) -> bool:
    """Karpenter's IsEvictable: the drain would call the eviction API for it (running, not tolerating
    `karpenter.sh/disrupted`, not a mirror pod, not protected by do-not-disrupt). DaemonSet pods are evicted too,
    so their PodDisruptionBudgets count."""
    return not fact.terminating and not fact.tolerates_disrupted and not fact.mirror and not protected(pod, fact, now)


def invalid_annotations(pods: Sequence[Pod]) -> tuple[str, ...]:
    """One line per pod whose do-not-disrupt value protects nothing because it is invalid."""
    out = []
    for pod in pods:
        value = pod.annotations.get(DO_NOT_DISRUPT)
        why = do_not_disrupt.invalid_reason(value) if value is not None else ""
        if why:
            out.append(f"pod {pod.key}: {why}")
    return tuple(out)


def _pod_block(state: ClusterState, pods: Sequence[Pod], facts: Sequence[PodFacts]) -> str:
    """Karpenter's ValidatePodsDisruptable: a do-not-disrupt pod that still runs, or a budget refusing an eviction."""
    for pod, fact in zip(pods, facts, strict=True):
        if not disruptable(pod, fact, state.now):
            return f'pod {pod.key} has "{DO_NOT_DISRUPT}" annotation'
    if not state.pdbs.budgets:
        return ""
    for pod, fact in zip(pods, facts, strict=True):
        if not evictable(pod, fact, state.now):
            continue  # never asked to leave by eviction, so no budget is consulted
        blocked = state.pdbs.blocking(pod, fact.ready)
        if blocked:
            return blocked
    return ""


def candidate(state: ClusterState, member: FleetNode, disruption_class: str = GRACEFUL) -> Candidate | str:
    """The member as a candidate, or why it cannot be one. Eventual disruption (drift) of a NodeClaim with a
    terminationGracePeriod is not held back by its pods: the grace period bounds the drain instead."""
    blocked = _node_block(state, member)
    if blocked:
        return blocked
    pool = state.pools[member.nodepool]
    if pool.static:
        # Karpenter leaves static pools out of consolidation and graceful drift: the pool's size is the user's.
        return f"NodePool {pool.name} is static (spec.replicas): its size is kept by the pool, not consolidated"
    pods = state.pods_on(member)
    facts = [state.facts(p) for p in pods]
    eventual = disruption_class == EVENTUAL and member.termination_grace_period is not None
    blocked = "" if eventual else _pod_block(state, pods, facts)
    invalid = invalid_annotations(pods)
    if blocked:
        # An ignored annotation can be why a node is not held back; say so beside whatever holds it.
        return "; ".join((blocked, *invalid))
    price = state.price(member)
    moving = tuple(p for p, fact in zip(pods, facts, strict=True) if fact.reschedulable)
    return Candidate(
        member=member,
        pool=pool,
        pods=pods,
        reschedulable=moving,
        instance_type=state.instance_type(member),
        price=price if price is not None else 0.0,
        reschedule_cost=reschedule_cost(moving),
        invalid=invalid,
    )


def candidates(state: ClusterState, disruption_class: str = GRACEFUL) -> tuple[list[Candidate], dict[str, str]]:
    """Every NodeClaim of the fleet, as a candidate or with the reason it is not one (by NodeClaim name). Candidates
    come most savings per unit of disruption first (ties: NodeClaim name, so the order does not depend on the
    input's)."""
    found: list[Candidate] = []
    refused: dict[str, str] = {}
    for member in state.fleet:
        outcome = candidate(state, member, disruption_class)
        if isinstance(outcome, str):
            refused[member.nodeclaim] = outcome
        else:
            found.append(outcome)
    found.sort(key=lambda c: (-c.savings_ratio, c.name))
    return found, refused


def last_pod_event(state: ClusterState, member: FleetNode) -> float:
    """When a pod was last bound to the node, from the pods it holds (DaemonSet pods do not count, as in Karpenter's
    pod-events controller). Removals are only known through `status.lastPodEventTime`, which the provisioner writes
    from the pod events the forwarder reports (`service.provision.podevents`)."""
    return max((state.facts(p).bound_at for p in state.pods_on(member) if not state.facts(p).daemonset), default=0.0)


def settling(state: ClusterState) -> frozenset[str]:
    """The nodes still inside their NodePool's `consolidateAfter` window (Karpenter's IsUnderConsolidateAfter): a
    consolidation may not move pods onto them, since a node that has just had a pod event is still settling (it
    may be about to empty, or be consolidated itself). Not a node of a pool with `consolidateAfter` 0 or `Never`
    (such a node is never under the window), nor one not initialized. The window runs from the node's last pod
    event, or from its initialization when it has had none. (`PlanContext.settling` keeps it for the tick.)"""
    found = set()
    for member in state.fleet:
        pool = state.pools.get(member.nodepool)
        after = pool.disruption.consolidate_after_seconds if pool is not None else None
        if not after or not member.node or not member.initialized:
            continue
        since = max(last_pod_event(state, member), member.last_pod_event, member.initialized_at)
        if state.now - since < after:
            found.add(member.node)
    return frozenset(found)
