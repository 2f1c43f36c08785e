"""Finishing a NodeClaim: every instance type that holds its pods, its launch options, zones and labels.

As Karpenter's NodeClaim does, a finished claim keeps every compatible type that fits all its pods,
cheapest first (at most 60), so the launch can fall back and a partly filled claim launches as the
smallest type that holds it.
"""

from __future__ import annotations

import hashlib
import heapq

from nodewright.catalog.labels import CAPACITY_TYPE, ZONE
from nodewright.catalog.types import CAPACITY_TYPES, RESERVED
from nodewright.model import resources as res
from nodewright.model.nodeclaim import LIFECYCLE_LABELS
from nodewright.model.objects import HOSTNAME_LABEL
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.candidates import OFFERING_KEYS, Candidate, capacity_rank, offering_key_of
from nodewright.scheduling.choice import MAX_INSTANCE_TYPES
from nodewright.scheduling.pools import PoolContext, Pools, within
from nodewright.scheduling.reservations import ReservationLedger
from nodewright.scheduling.results import LaunchOption, PlannedNodeClaim
from nodewright.scheduling.templates import PoolCompat

# What claims with the same requirements and instance types share: types, launch options, capacity
# types, zones, requirements and labels.
_Finalized = tuple[
    tuple[str, ...], tuple[LaunchOption, ...], tuple[str, ...], tuple[str, ...], tuple[Requirement, ...], dict[str, str]
]


_BASICS = frozenset((CPU, MEMORY, PODS))


class Finalizer:
    """Turns the new claims of one run into PlannedNodeClaims; claims alike share the work."""

    def __init__(self, pools: Pools) -> None:
        self.pools = pools
        # Claims with the same requirements and usage get the same options: computed once.
        self.finalized: dict[tuple[object, ...], _Finalized] = {}
        # The free instances of capacity reservations, taken by the claims as they are finished (plan order).
        self.reservations = ReservationLedger(pools.instance_types)

    def finalize(self, b: Bin) -> PlannedNodeClaim | str:
        """The NodeClaim to launch for a new claim of this run; its name is a hash of its NodePool and pods.

        Its reserved launch options are those of the one reservation it takes (see `reservations`); when its
        reservations are all taken by earlier claims and it may launch nothing else, why it is not launched."""
        ctx = b.pool
        assert ctx is not None
        type_names, launch, capacity_types, zones, requirement_list, labels = self.options(b)
        if launch and launch[0].capacity_type == RESERVED:
            launch, capacity_types, requirement_list = self._reserve(launch, capacity_types, requirement_list)
            if not launch:
                return (
                    "the capacity reservations its NodeClaim may launch into have no instance left that other "
                    "NodeClaims of this plan do not take, and it allows no other capacity type; tried again next round"
                )
        pods = tuple(sorted(p.key for p in b.pods))
        digest = hashlib.sha256("\n".join((ctx.pool.name, *pods)).encode()).hexdigest()[:8]
        return PlannedNodeClaim(
            name=f"{ctx.pool.name}-{digest}",
            nodepool=ctx.pool.name,
            instance_types=type_names,
            capacity_types=capacity_types,
            zones=zones,
            launch_options=launch,
            pods=pods,
            requirements=requirement_list,
            labels=dict(labels),
            taints=ctx.pool.taints,
            startup_taints=ctx.pool.startup_taints,
            requests=dict(b.used),
            node_class=ctx.pool.node_class_ref.name,
        )

    def options(self, b: Bin) -> _Finalized:
        """New claim b's types, launch options (cheapest first, before any reservation is taken), capacity types,
        zones, requirements and labels as `finalize` gives them; claims alike share them."""
        ctx = b.pool
        assert ctx is not None and b.chosen is not None
        compat = self.pools.compat(ctx, b.requirements, b.rkey)
        assert isinstance(compat, PoolCompat)  # the claim was opened from this NodePool's answer
        budget_key = tuple(sorted(b.limit_budget.items())) if b.limit_budget is not None else None
        usage_key = (ctx.pool.name, b.rkey, tuple(sorted(b.used.items())), b.chosen.exotic, budget_key)
        memo = self.finalized.get(usage_key)
        if memo is None:
            memo = self._launch_options(b, ctx, compat)
            self.finalized[usage_key] = memo
        return memo

    def _reserve(
        self, launch: tuple[LaunchOption, ...], capacity_types: tuple[str, ...], requirements: tuple[Requirement, ...]
    ) -> tuple[tuple[LaunchOption, ...], tuple[str, ...], tuple[Requirement, ...]]:
        """The claim's launch options once it takes a reservation; when it takes none, `reserved` leaves its
        capacity types and capacity-type requirement too (the node cannot come up reserved)."""
        launch = self.reservations.take(launch)
        if launch and launch[0].capacity_type == RESERVED:
            return launch, capacity_types, requirements
        kept = tuple(c for c in capacity_types if c != RESERVED)
        requirements = tuple(
            Requirement(CAPACITY_TYPE, Operator.IN, kept) if r.key == CAPACITY_TYPE else r for r in requirements
        )
        return launch, kept, requirements

    def _launch_options(self, b: Bin, ctx: PoolContext, compat: PoolCompat) -> _Finalized:
        """A finished claim's instance types (every compatible one that holds its pods, cheapest first, at
        most 60), launch options, capacity types, zones, requirements and labels."""
        assert b.chosen is not None
        chosen: list[Candidate] = []
        used = b.used
        need_cpu, need_memory, need_pods = used.get(CPU, 0), used.get(MEMORY, 0), used.get(PODS, 0)
        # Pods that request only cpu, memory and pods fit where the quick test passes: the full test is for others.
        basic = used.keys() <= _BASICS
        exotic, budget = b.chosen.exotic, b.limit_budget
        candidates, basics = compat.candidates, compat.basics
        for index in compat.with_cpu(need_cpu):
            cpu, memory, pod_slots = basics[index]
            if cpu < need_cpu or memory < need_memory or pod_slots < need_pods:
                continue  # the quick test on the three resources every pod requests
            candidate = candidates[index][1]
            if candidate.exotic and not exotic:
                continue
            if budget is not None and not within(candidate.capacity, budget):
                continue
            if basic or res.fits(used, candidate.allocatable):
                chosen.append(candidate)
                if len(chosen) == MAX_INSTANCE_TYPES:
                    break
        # Many claims keep the same types (all that fit a small claim): their options are computed once.
        memo_key = (ctx.pool.name, b.rkey, tuple(c.it.name for c in chosen))
        memo = self.finalized.get(memo_key)
        if memo is None:
            offering_key = offering_key_of(compat.requirements)
            offered = [
                (capacity_rank(o.capacity_type), o.price, c.it.name, o.zone, o.capacity_type, o.reservation_id)
                for c in chosen
                for o in c.offerings_with(offering_key)
            ]
            # CreateFleet takes at most 60 overrides, so the claim carries the 60 cheapest offerings; its
            # zones and capacity types still describe every offering of its instance types.
            launch_list = tuple(
                LaunchOption(name, capacity_type, zone, price, reservation)
                for _, price, name, zone, capacity_type, reservation in heapq.nsmallest(MAX_INSTANCE_TYPES, offered)
            )
            type_names = tuple(c.it.name for c in chosen)
            capacity_types = tuple(sorted({o[4] for o in offered}, key=CAPACITY_TYPES.index))
            zones = tuple(sorted({o[3] for o in offered}))
            # The lifecycle labels are the node's to get as it comes up: a claim carrying them would start initialized.
            kept = b.requirements.without(
                OFFERING_KEYS | LIFECYCLE_LABELS | {HOSTNAME_LABEL, "node.kubernetes.io/instance-type"}
            )
            requirement_list = (
                *kept.to_list(),
                Requirement("node.kubernetes.io/instance-type", Operator.IN, type_names),
                Requirement(CAPACITY_TYPE, Operator.IN, capacity_types),
                Requirement(ZONE, Operator.IN, zones),
            )
            known = b.requirements.without(LIFECYCLE_LABELS | {HOSTNAME_LABEL}).labels()
            labels = {**ctx.pool.labels, **known, "karpenter.sh/nodepool": ctx.pool.name}
            memo = (type_names, launch_list, capacity_types, zones, requirement_list, labels)
            self.finalized[memo_key] = memo
        return memo
