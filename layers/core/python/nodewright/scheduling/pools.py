"""The NodePools of one simulation run, and what each can launch for a set of requirements.

Per NodePool: its requirements, taints and limits left, and its instance types as candidates (their
allocatable minus the DaemonSet pods that would run there, their available offerings cheapest first).
Per (NodePool, requirement set), computed once: the merged requirements and the candidates that satisfy
them, priced (Karpenter's nodeclaimtemplate.go and the instance type filtering of scheduler.go).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.catalog.allocatable import allocatable_for, capacity
from nodewright.catalog.catalog import is_accelerated, is_bare_metal
from nodewright.catalog.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_TYPE,
    WELL_KNOWN_LABELS,
    ZONE,
)
from nodewright.catalog.types import RESERVED, InstanceType, Offering
from nodewright.model import resources as res
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import HOSTNAME_LABEL, DaemonSet, Node
from nodewright.model.requirements import Requirements, ValueSet
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.model.taints import Taint, untolerated
from nodewright.scheduling.classes import EBS_VOLUMES, required_node_options

# Labels an instance type (not the NodePool) defines; checked against the type's own labels.
OFFERING_KEYS = frozenset({ZONE, CAPACITY_TYPE, CAPACITY_RESERVATION_ID})
TYPE_KEYS = WELL_KNOWN_LABELS - OFFERING_KEYS - {HOSTNAME_LABEL, "karpenter.sh/nodepool"}
# A requirement set as a dictionary key. Within one Solver each distinct set is numbered once (see
# `Pools.req_id`): bins and NodePools look up their caches by requirement set at every step, and an
# int hashes and compares in C where a tuple of value sets calls Python code per value set.
ReqKey = int
OfferingKey = tuple[ValueSet, ValueSet, ValueSet]


def pool_domains(
    key: str, requirements: Requirements, candidates: Iterable[Candidate], offering_key: OfferingKey | None
) -> set[str]:
    """The values of `key` nodes launched under these requirements from these types can carry."""
    allowed = requirements.get(key)
    values: set[str] = set()
    if key == ZONE and offering_key is None:
        for c in candidates:
            values.update(c.by_zone)  # the zones of its available offerings
    elif key in OFFERING_KEYS:
        for c in candidates:
            offerings = c.offerings_with(offering_key) if offering_key is not None else c.offerings
            for o in offerings:
                value = o.zone if key == ZONE else o.capacity_type if key == CAPACITY_TYPE else o.reservation_id
                if value:
                    values.add(value)
    elif key in TYPE_KEYS:
        values = {v for c in candidates if (v := c.it.labels.get(key)) is not None}
    elif allowed.allowed is not None:
        values = set(allowed.allowed)  # a label the NodePool sets (its requirements or template labels)
    return {v for v in values if allowed.matches(v)}


def req_key(requirements: Requirements) -> tuple[tuple[str, ValueSet], ...]:
    """The requirements as a sorted tuple: equal for equal requirement sets."""
    return tuple(sorted(requirements.by_key.items()))


def _admits_anything(value_set: ValueSet) -> bool:
    """Whether the set matches every value and a missing label (ValueSet.matches is then always True)."""
    return (
        value_set.allowed is None
        and not value_set.excluded
        and value_set.gt is None
        and value_set.lt is None
        and value_set.absent_ok
        and value_set.present_ok
    )


def admits_new_hostname(requirements: Requirements) -> bool:
    """Whether a node with a fresh name (one no requirement lists) satisfies the hostname requirement:
    Karpenter gives each new NodeClaim a placeholder hostname, so `In [red-node]` never matches one."""
    hostname = requirements.by_key.get(HOSTNAME_LABEL)
    return hostname is None or (
        hostname.allowed is None and hostname.present_ok and hostname.gt is None and hostname.lt is None
    )


def offering_key_of(requirements: Requirements) -> OfferingKey:
    """What decides which offerings requirements allow: their zone, capacity type and reservation sets."""
    return (requirements.get(ZONE), requirements.get(CAPACITY_TYPE), requirements.get(CAPACITY_RESERVATION_ID))


@dataclass(slots=True)
class Candidate:
    """An instance type a NodePool may launch, with what pods can use on it and its offerings."""

    it: InstanceType
    allocatable: Mapping[str, int]  # allocatable minus DaemonSet overhead
    capacity: Mapping[str, int]
    offerings: tuple[Offering, ...]  # available ones, cheapest first
    exotic: bool = False  # bare metal or accelerated: used only when nothing else fits (Karpenter's rule)
    allowed: dict[OfferingKey, list[Offering]] = field(default_factory=dict)
    copies: dict[tuple[tuple[str, int], ...], int] = field(default_factory=dict)
    by_zone: dict[str, list[Offering]] = field(default_factory=dict)  # the offerings per zone, cheapest first
    # The cheapest allowed price per requirement set (a Solver's numbers: candidates belong to one run).
    price_under: dict[int, float] = field(default_factory=dict)
    # cpu, memory and pods of `allocatable`, for quick rejection in loops over candidates.
    basics: tuple[int, int, int] = (0, 0, 0)
    ports: frozenset[tuple[str, int]] = frozenset()  # host ports its DaemonSet pods take

    def __post_init__(self) -> None:
        for o in self.offerings:
            self.by_zone.setdefault(o.zone, []).append(o)
        self.basics = (self.allocatable.get(CPU, 0), self.allocatable.get(MEMORY, 0), self.allocatable.get(PODS, 0))

    def offerings_for(self, requirements: Requirements) -> list[Offering]:
        """The available offerings these requirements allow (zone, capacity type, reservation), cheapest first."""
        return self.offerings_with(offering_key_of(requirements))

    def offerings_with(self, key: OfferingKey) -> list[Offering]:
        """`offerings_for` with the key computed by the caller, once for a loop over many candidates."""
        cached = self.allowed.get(key)
        if cached is None:
            zones, types, reservations = key
            # Most requirements pin one zone (zonal topology): only that zone's offerings need a look, and
            # they pass the zone test all together or not at all.
            zone = zones.single_value()
            offerings: Sequence[Offering]
            if zone is not None:
                offerings = self.by_zone.get(zone, []) if zones.matches(zone) else []
            elif _admits_anything(zones):
                offerings = self.offerings
            else:
                offerings = [o for o in self.offerings if zones.matches(o.zone)]
            # Capacity type and reservation are mostly unconstrained: then nothing is left out for them.
            if not (_admits_anything(types) and _admits_anything(reservations)):
                offerings = [
                    o
                    for o in offerings
                    if types.matches(o.capacity_type) and reservations.matches(o.reservation_id or None)
                ]
            cached = self.allowed[key] = list(offerings)
        return cached


@dataclass(slots=True)
class PoolCompat:
    """A NodePool's answer for one requirement set: merged requirements and priced candidates."""

    requirements: Requirements
    candidates: list[tuple[float, Candidate]]  # (cheapest allowed price, candidate), cheapest first
    zones: frozenset[str]
    # cpu, memory and pods of each candidate, aligned with `candidates`, for quick rejection in loops.
    basics: list[tuple[int, int, int]] = field(default_factory=list)
    prices: list[float] = field(default_factory=list)
    _largest: dict[str, int] | None = None
    _frontier: list[int] | None = None
    _cpu_steps: list[int] | None = None  # the distinct cpu values of `basics`, ascending
    _by_cpu: dict[int, list[int]] = field(default_factory=dict)  # per cpu step, see `with_cpu`
    _domains: dict[str, frozenset[str]] = field(default_factory=dict)

    def domains_of(self, key: str) -> frozenset[str]:
        """The values of a topology key that nodes launched for this answer can carry."""
        if key == ZONE:
            return self.zones
        cached = self._domains.get(key)
        if cached is None:
            candidates = [c for _, c in self.candidates]
            found = pool_domains(key, self.requirements, candidates, offering_key_of(self.requirements))
            cached = self._domains[key] = frozenset(found)
        return cached

    def with_cpu(self, need: int) -> list[int]:
        """Indexes (ascending, so cheapest first) of the candidates with at least `need` cpu.

        Loops that look for a type large enough for a claim's pods would otherwise step over the many
        cheaper, smaller types one by one; one list per distinct cpu value serves every `need`.
        """
        if self._cpu_steps is None:
            self._cpu_steps = sorted({cpu for cpu, _, _ in self.basics})
        steps = self._cpu_steps
        at = bisect.bisect_left(steps, need)
        if at == len(steps):
            return []
        step = steps[at]
        kept = self._by_cpu.get(step)
        if kept is None:
            kept = self._by_cpu[step] = [i for i, (cpu, _, _) in enumerate(self.basics) if cpu >= step]
        return kept

    @property
    def frontier(self) -> list[int]:
        """Indexes of the candidates no cheaper (or equal-priced) one beats on cpu, memory and pods at once,
        bare metal and accelerated types left out: the only types a node that needs those three picks."""
        if self._frontier is None:
            kept: list[int] = []
            for index, (_, candidate) in enumerate(self.candidates):
                if candidate.exotic:
                    continue
                cpu, memory, pods = candidate.basics
                if not any(c >= cpu and m >= memory and p >= pods for c, m, p in (self.basics[i] for i in kept)):
                    kept.append(index)
            self._frontier = kept
        return self._frontier

    @property
    def largest(self) -> Mapping[str, int]:
        """Per resource, the most any candidate offers: what does not fit here fits no candidate."""
        if self._largest is None:
            largest: dict[str, int] = {}
            for _, candidate in self.candidates:
                for name, value in candidate.allocatable.items():
                    if value > largest.get(name, 0):
                        largest[name] = value
            self._largest = largest
        return self._largest


@dataclass(slots=True)
class PoolContext:
    """A NodePool prepared for one solve: its requirements, taints, limits and instance types."""

    pool: NodePool
    node_class: EC2NodeClass | None
    requirements: Requirements
    taints: tuple[Taint, ...]
    candidates: list[Candidate]
    remaining: dict[str, int] | None  # limits left; None when the NodePool has no limits
    error: str = ""
    # Types the NodePool allows whose every offering is marked unavailable (recent capacity errors), and
    # types whose DaemonSet pods alone exceed their allocatable.
    unavailable_types: int = 0
    too_small_for_daemonsets: int = 0
    compat: dict[ReqKey, PoolCompat | str] = field(default_factory=dict)
    choices: dict[tuple[object, ...], tuple[Candidate, int] | None] = field(default_factory=dict)


class Pools:
    """The NodePools of one run, heaviest first, with the catalog and DaemonSets they launch with.

    It also numbers requirement sets (`req_id`): every cache of the run is keyed by those numbers.
    """

    def __init__(
        self,
        nodepools: Sequence[NodePool],
        nodeclasses: Sequence[EC2NodeClass],
        instance_types: Sequence[InstanceType],
        daemonsets: Sequence[DaemonSet],
        nodes: Sequence[Node],
        nodeclaims: Sequence[NodeClaim],
    ) -> None:
        self.req_ids: dict[tuple[tuple[str, ValueSet], ...], ReqKey] = {}  # see `req_id`
        self.instance_types = sorted(instance_types, key=lambda it: it.name)
        self.types_by_name = {it.name: it for it in self.instance_types}
        self.daemonsets = _as_running(sorted(daemonsets, key=lambda d: (d.namespace, d.name)), nodes)
        # Each DaemonSet with its pods' ORed required node requirements (nodeSelector and node affinity).
        self.daemonset_options = [(ds, required_node_options(ds.pod)) for ds in self.daemonsets]
        classes_of = {nc.name: nc for nc in nodeclasses}
        self.contexts = [
            self._pool_context(p, classes_of.get(p.node_class_ref.name), nodes, nodeclaims)
            for p in sorted(nodepools, key=lambda p: (-p.weight, p.name))
        ]

    def req_id(self, requirements: Requirements) -> ReqKey:
        """The number of this requirement set in this run: equal sets get equal numbers."""
        key = req_key(requirements)
        number = self.req_ids.get(key)
        if number is None:
            number = self.req_ids[key] = len(self.req_ids)
        return number

    def _pool_context(
        self, pool: NodePool, node_class: EC2NodeClass | None, nodes: Sequence[Node], claims: Sequence[NodeClaim]
    ) -> PoolContext:
        requirements = pool.node_requirements()
        ctx = PoolContext(pool, node_class, requirements, pool.taints, [], None)
        if node_class is None:
            ctx.error = f"EC2NodeClass {pool.node_class_ref.name} not found"
            return ctx
        if pool.limits:
            # Karpenter counts what its NodeClaims' instances report as capacity (not allocatable), so a
            # node counts as its instance type's capacity; a registered claim is counted through its node.
            remaining = dict(pool.limits)
            node_names = {n.name for n in nodes}
            for node in nodes:
                if node.labels.get("karpenter.sh/nodepool") == pool.name:
                    remaining = consume(remaining, self._node_capacity(node))
            for claim in claims:
                if claim.nodepool == pool.name and not (claim.node_name and claim.node_name in node_names):
                    remaining = consume(remaining, self._claim_capacity(claim))
            ctx.remaining = remaining
        for it in self.instance_types:
            if not type_matches(it, requirements):
                continue
            offerings = tuple(sorted((o for o in it.offerings if o.available), key=_offering_order))
            if not offerings:
                ctx.unavailable_types += 1 if it.offerings else 0
                continue
            alloc = {**allocatable_for(it, node_class), EBS_VOLUMES: it.ebs_volume_limit}
            ports: frozenset[tuple[str, int]] = frozenset()
            if self.daemonsets:
                overhead, ports = self._daemonset_overhead(pool, it)
                alloc = res.subtract(alloc, overhead)
                if any(value < 0 for value in alloc.values()):
                    ctx.too_small_for_daemonsets += 1
                    continue  # its DaemonSet pods alone do not fit: no pod can use it (Karpenter's rule)
            ctx.candidates.append(
                Candidate(it, alloc, capacity(it), offerings, is_bare_metal(it) or is_accelerated(it), ports=ports)
            )
        return ctx

    def _node_capacity(self, node: Node) -> Mapping[str, int]:
        """What a NodePool's limits count for an existing node: its type's capacity, else its allocatable."""
        it = self.types_by_name.get(node.labels.get("node.kubernetes.io/instance-type", ""))
        return capacity(it) if it is not None else node.allocatable

    def _claim_capacity(self, claim: NodeClaim) -> Mapping[str, int]:
        """What a NodePool's limits count for an in-flight NodeClaim.

        A launched claim counts its type's capacity. One not launched yet may still become any of the
        types it lists, so it counts the largest of them per resource (as Karpenter reserves the most
        any remaining option could use); without a known type, its requests.
        """
        it = self.types_by_name.get(claim.instance_type)
        if it is not None:
            return capacity(it)
        listed = Requirements.of(claim.requirements).by_key.get("node.kubernetes.io/instance-type")
        options = [t for t in self.instance_types if listed.matches(t.name)] if listed is not None else []
        if options:
            largest: dict[str, int] = {}
            for option in options:
                largest = res.elementwise_max(largest, capacity(option))
            return largest
        return claim.requests

    def _daemonset_overhead(
        self, pool: NodePool, it: InstanceType
    ) -> tuple[dict[str, int], frozenset[tuple[str, int]]]:
        """Requests and host ports of the DaemonSet pods that would run on a node of this pool and type.

        Karpenter's isDaemonPodCompatible: the pod tolerates the NodePool's taints (startup taints and
        PreferNoSchedule ones do not keep it off) and one of its ORed required node requirements (the
        nodeSelector with a node affinity term) is compatible with the NodePool's and the type's: no key
        conflicts, and a key the NodePool does not define is well known or may be absent (NotIn).
        Preferred node affinity does not count.
        """
        node_requirements = pool.node_requirements().intersect(Requirements.from_labels(it.labels))
        total: dict[str, int] = {}
        ports: set[tuple[str, int]] = set()
        for ds, options in self.daemonset_options:
            pod = ds.pod
            if untolerated(pod.tolerations, pool.taints) is not None:
                continue
            if not any(_compatible(node_requirements, option) for option in options):
                continue
            total = res.add(total, pod.requests)
            ports.update((p.protocol, p.port) for p in pod.host_ports)
        return total, frozenset(ports)

    def compat(self, ctx: PoolContext, requirements: Requirements, rkey: ReqKey) -> PoolCompat | str:
        cached = ctx.compat.get(rkey)
        if cached is not None:
            return cached
        result = self._compute_pool_compat(ctx, requirements)
        ctx.compat[rkey] = result
        if isinstance(result, PoolCompat):
            # Claims carry the merged requirements, and asking with those gives the same answer (the NodePool's
            # requirements are already in them, and every candidate already matches those): keep it for them.
            ctx.compat.setdefault(self.req_id(result.requirements), result)
        return result

    def _compute_pool_compat(self, ctx: PoolContext, requirements: Requirements) -> PoolCompat | str:
        conflict = ctx.requirements.conflict(requirements)
        if conflict:
            return f"incompatible requirements: {conflict}"
        if not admits_new_hostname(requirements):
            hostname = requirements.get(HOSTNAME_LABEL).describe(HOSTNAME_LABEL)
            return f"{hostname}: a new node gets a name of its own, so only an existing node can match"
        for key, value_set in sorted(requirements.by_key.items()):
            if key not in ctx.requirements.by_key and key not in WELL_KNOWN_LABELS and not value_set.absent_ok:
                return f"label {key} is not defined by the NodePool (add it to its requirements or template labels)"
        merged = ctx.requirements.intersect(requirements)
        priced: list[tuple[float, Candidate]] = []
        zones: set[str] = set()
        offering_key = offering_key_of(merged)
        for candidate in ctx.candidates:
            if not type_matches(candidate.it, requirements):
                continue
            offerings = candidate.offerings_with(offering_key)
            if offerings:
                priced.append((offerings[0].price, candidate))
                zones.update(o.zone for o in offerings)
        if not priced:
            if not ctx.candidates and ctx.too_small_for_daemonsets:
                return (
                    f"the DaemonSet pods that would run on them exceed the allocatable of every instance type the "
                    f"NodePool allows ({ctx.too_small_for_daemonsets})"
                )
            if not ctx.candidates and ctx.unavailable_types:
                return (
                    f"every instance type the NodePool allows ({ctx.unavailable_types}) has all its offerings marked "
                    "unavailable after capacity errors; they are tried again once the marks expire"
                )
            return self._no_type_reason(merged)
        priced.sort(key=lambda pc: (pc[0], pc[1].it.name))
        basics = [c.basics for _, c in priced]
        return PoolCompat(merged, priced, frozenset(zones), basics, [price for price, _ in priced])

    def _no_type_reason(self, merged: Requirements) -> str:
        """Why no instance type satisfies these (a NodePool's and a pod's) requirements: the first one that
        no type of the catalog meets by itself, else those of them that instance types decide, together."""
        keys = sorted(k for k in merged.by_key if k in TYPE_KEYS or k in OFFERING_KEYS)
        for key in keys:
            alone = Requirements({key: merged.by_key[key]})
            if not any(_offered(it, alone) for it in self.instance_types):
                return f"no instance type satisfies {merged.by_key[key].describe(key)}"
        return f"no instance type satisfies {_describe(merged.without(set(merged.by_key) - set(keys)))} together"


def _as_running(daemonsets: Sequence[DaemonSet], nodes: Sequence[Node]) -> list[DaemonSet]:
    """The DaemonSets with the requests of their running pods where some run (Karpenter simulates the
    DaemonSet's pod, not its template: a LimitRange or a vertical autoscaler may have changed the
    requests). Pods of one DaemonSet can differ during a rollout; the largest request of each resource
    counts, so no node is planned too small. The template keeps the node affinity: a running pod's is
    pinned to its own node's name."""
    running: dict[tuple[str, str], dict[str, int]] = {}
    for node in nodes:
        for pod in node.pods:
            if pod.is_daemonset_pod:
                key = (pod.namespace, pod.owner_name)
                running[key] = res.elementwise_max(running.get(key, {}), pod.requests)
    return [
        dataclasses.replace(ds, pod=dataclasses.replace(ds.pod, requests=requests))
        if (requests := running.get((ds.namespace, ds.name))) is not None
        else ds
        for ds in daemonsets
    ]


def _compatible(node: Requirements, pod: Requirements) -> bool:
    """Whether a node of these requirements can meet the pod's (Karpenter's Requirements.IsCompatible with
    undefined well-known labels allowed)."""
    if node.conflict(pod) is not None:
        return False
    return all(key in node.by_key or key in WELL_KNOWN_LABELS or vs.absent_ok for key, vs in pod.by_key.items())


def _offered(it: InstanceType, requirements: Requirements) -> bool:
    """Whether the type and one of its available offerings satisfy the requirements."""
    if not type_matches(it, requirements):
        return False
    zones, types, reservations = offering_key_of(requirements)
    return any(
        o.available
        and zones.matches(o.zone)
        and types.matches(o.capacity_type)
        and reservations.matches(o.reservation_id or None)
        for o in it.offerings
    )


def type_matches(it: InstanceType, requirements: Requirements) -> bool:
    for key, value_set in requirements.by_key.items():
        if key in TYPE_KEYS and not value_set.matches(it.labels.get(key)):
            return False
    return True


def capacity_rank(capacity_type: str) -> int:
    # Reserved capacity is already paid for, so it is tried first, as Karpenter does.
    return 0 if capacity_type == RESERVED else 1


def _offering_order(o: Offering) -> tuple[int, float, str, str]:
    return (capacity_rank(o.capacity_type), o.price, o.zone, o.capacity_type)


def consume(remaining: Mapping[str, int], capacity_: Mapping[str, int]) -> dict[str, int]:
    """NodePool limits left after one more node of this capacity (only the limited resources count)."""
    return {key: left - (1 if key == "nodes" else capacity_.get(key, 0)) for key, left in remaining.items()}


def within(capacity_: Mapping[str, int], remaining: Mapping[str, int]) -> bool:
    for key, left in remaining.items():
        need = 1 if key == "nodes" else capacity_.get(key, 0)
        if need > left:
            return False
    return True


def _describe(requirements: Requirements) -> str:
    return "; ".join(vs.describe(k) for k, vs in sorted(requirements.by_key.items()))
