"""What a NodePool can launch, prepared once and kept across solves (Karpenter's NodeClaimTemplate with its
instance type options).

A `Template` is a NodePool's requirements and taints with its instance types as candidates (allocatable minus
the DaemonSet pods that would run there, available offerings cheapest first, the host ports those DaemonSet
pods take) and, per requirement set asked of it, the merged requirements and the candidates that satisfy
them, priced (`PoolCompat`). None of that depends on the cluster's nodes, pods or limits (those are the
per-run `pools.PoolContext`), and preparing it for a full catalog costs far more than a provisioner batch
takes to place: the consolidation planner solves many times a tick against the same NodePools and catalog,
and a warm provisioner container solves batch after batch. So a `TemplateCache`, passed to `solve()` by the
caller that solves repeatedly, keeps them within fixed bounds (the core keeps no state of its own).

The cache is keyed by what a template is computed from, compared by content: the NodePool's requirements
(template labels included) and taints, what allocatable depends on in the EC2NodeClass, the DaemonSets'
pods; and by the identity of the instance types. InstanceType objects are immutable and a catalog overlay
(unavailable offerings, reservations) makes new objects only for the types it changes, so identity is what
tells "the same catalog" cheaply; each entry keeps its types referenced, so an id is never reused while it
is cached. A different list of instance types (a consolidation's cheaper types, one changed offering)
reuses the candidate of every type already seen and recomputes only the priced answers.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.catalog.allocatable import allocatable_key
from nodewright.catalog.labels import CAPACITY_TYPE, WELL_KNOWN_LABELS, ZONE
from nodewright.catalog.types import InstanceType
from nodewright.model import resources as res
from nodewright.model.nodeclaim import LIFECYCLE_LABELS, LIFECYCLE_STAGES
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import HOSTNAME_LABEL, DaemonSet, Node
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint, untolerated
from nodewright.scheduling.candidates import (
    ANSWERS_LIMIT,
    OFFERING_KEYS,
    TOO_SMALL,
    TYPE_KEYS,
    TYPES_LIMIT,
    Candidate,
    ContentKey,
    HashedKey,
    OfferingKey,
    SharedTypes,
    admits_new_hostname,
    offering_key_of,
    req_key,
    type_matches,
)
from nodewright.scheduling.nodepods import NodePods, node_pods

# Bounds on what a long-lived process keeps: NodePool x EC2NodeClass x DaemonSets combinations, instance
# type lists per combination (with `candidates.TYPES_LIMIT` and `ANSWERS_LIMIT`). Each is far above what one
# cluster uses; past it the oldest (or all) is dropped.
_PREPARED_LIMIT = 64
_LISTS_LIMIT = 8
_NODES_LIMIT = 10_000  # existing nodes whose labels and pod sums are kept (see `TemplateCache.node_labels`)
_STALE_NODES = 100  # pod sums of nodes gone kept beyond twice a solve's nodes (see `TemplateCache.node_pods_of`)

# Why an instance type is not a candidate of a NodePool (see `_Prepared.template`).
_UNMATCHED, _UNAVAILABLE = "unmatched", "unavailable"


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
    _roomiest: Candidate | None = None
    _frontier: list[int] | None = None
    _cpu_steps: list[int] | None = None  # the distinct cpu values of `basics`, ascending
    _by_cpu: dict[int, list[int]] = field(default_factory=dict)  # per cpu step, see `with_cpu`
    _domains: dict[str, frozenset[str]] = field(default_factory=dict)
    # `choice.choose`'s answers without limits, per (pod request, most pods): kept as long as the template.
    choices: dict[tuple[object, ...], tuple[Candidate, int] | None] = field(default_factory=dict)
    _floors: list[float] | None = None  # the distinct floor prices of the candidates, ascending (see `below`)
    _below: dict[int, PoolCompat] = field(default_factory=dict)  # per count of floors below a ceiling

    def below(self, ceiling: float) -> PoolCompat | str:
        """This answer with only the candidates that have an available offering (any zone or capacity type)
        priced below `ceiling`, or why there is none: a consolidation's replacement can use nothing dearer than
        the nodes it removes. The bound is loose on purpose: the replacement's offerings are filtered by price
        after the simulation (Karpenter's filterByPrice), so a plan that needs a type no cheaper is refused for
        that reason ("Can't replace with a cheaper node"), not for another one. Each cut is made once and kept with
        this answer, so the simulations of a tick share it."""
        if self._floors is None:
            self._floors = sorted({c.floor for _, c in self.candidates})
        cut = bisect.bisect_left(self._floors, ceiling)
        if cut == len(self._floors):
            return self
        if cut == 0:
            return f"no instance type it allows is priced below {ceiling:.4f}/hour (what the nodes it replaces cost)"
        found = self._below.get(cut)
        if found is None:
            kept = [(price, c) for price, c in self.candidates if c.floor < ceiling]
            offering_key = offering_key_of(self.requirements)
            zones = frozenset(o.zone for _, c in kept for o in c.offerings_with(offering_key))
            found = PoolCompat(self.requirements, kept, zones, [c.basics for _, c in kept], [p for p, _ in kept])
            self._below[cut] = found
        return found

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
            kept_basics: list[tuple[int, int, int]] = []
            for index, (_, candidate) in enumerate(self.candidates):
                if candidate.exotic:
                    continue
                cpu, memory, pods = candidate.basics
                # A plain loop, from the dearest kept (likeliest to be larger): this runs for every priced answer,
                # over hundreds of candidates.
                for c, m, p in reversed(kept_basics):
                    if c >= cpu and m >= memory and p >= pods:
                        break
                else:
                    kept.append(index)
                    kept_basics.append(candidate.basics)
            self._frontier = kept
        return self._frontier

    @property
    def roomiest(self) -> Candidate:
        """The candidate with the most allocatable, compared resource by resource in name order: the one a
        refusal for size names (computed once; a refusal is asked for at every pod that does not fit)."""
        if self._roomiest is None:
            self._roomiest = max(self.candidates, key=lambda pc: sorted(pc[1].allocatable.items()))[1]
        return self._roomiest

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


class Template:
    """A NodePool prepared against one list of instance types: its requirements and taints, its candidates,
    and its answers per requirement set (kept for as long as the template is)."""

    def __init__(
        self,
        requirements: Requirements,
        taints: tuple[Taint, ...],
        candidates: list[Candidate],
        instance_types: Sequence[InstanceType],
        unavailable_types: int,
        too_small_for_daemonsets: int,
        shared: SharedTypes,
    ) -> None:
        self.requirements = requirements
        self.shared = shared  # per-type work shared with the other NodePools of the cache
        self.taints = taints
        self.candidates = candidates
        self.instance_types = instance_types  # the whole list, for refusal reasons
        # Types the NodePool allows whose every offering is marked unavailable (recent capacity errors), and
        # types whose DaemonSet pods alone exceed their allocatable.
        self.unavailable_types = unavailable_types
        self.too_small_for_daemonsets = too_small_for_daemonsets
        self.answers: dict[ContentKey, PoolCompat | str] = {}
        # Per (requirements on type labels, offering key): the answer first made for them, or None when no type is
        # left. Requirement sets that differ only in other labels (a team, a domain's other keys) price the same
        # candidates: their answers share its candidates and what is worked out from them (see `_compute`).
        self.priced: dict[tuple[ContentKey, OfferingKey], PoolCompat | None] = {}
        self.typed: dict[ContentKey, list[Candidate]] = {}  # see `_matching`

    def compat(self, requirements: Requirements, key: ContentKey) -> PoolCompat | str:
        """The merged requirements and priced candidates for these requirements (`key`: their `req_key`), or
        why none can serve them."""
        cached = self.answers.get(key)
        if cached is None:
            if len(self.answers) >= ANSWERS_LIMIT:
                self.answers.clear()
            cached = self.answers[key] = self._compute(requirements)
        return cached

    def _compute(self, requirements: Requirements) -> PoolCompat | str:
        conflict = self.requirements.conflict(requirements)
        if conflict:
            return f"incompatible requirements: {conflict}"
        if not admits_new_hostname(requirements):
            hostname = requirements.get(HOSTNAME_LABEL).describe(HOSTNAME_LABEL)
            return f"{hostname}: a new node gets a name of its own, so only an existing node can match"
        for key, value_set in sorted(requirements.by_key.items()):
            if key not in self.requirements.by_key and key not in WELL_KNOWN_LABELS and not value_set.absent_ok:
                return f"label {key} is not defined by the NodePool (add it to its requirements or template labels)"
        merged = self.requirements.intersect(requirements)
        offering_key = offering_key_of(merged)
        # Only the pod's requirements on type labels can leave a candidate out (each matches the NodePool's).
        typed = Requirements({k: v for k, v in requirements.by_key.items() if k in TYPE_KEYS})
        priced_key = (req_key(typed), offering_key)
        if priced_key in self.priced:
            same = self.priced[priced_key]
            if same is None:
                return self._refusal(merged)
            # The same candidates at the same prices: what depends on them alone (the frontier, `choices`, the
            # cpu steps) is shared; what reads the requirements (domains, the cuts below a price) is not.
            return dataclasses.replace(same, requirements=merged, _domains={}, _below={})
        if len(self.priced) >= ANSWERS_LIMIT:
            self.priced.clear()
        priced: list[tuple[float, Candidate]] = []
        matching = self._matching(priced_key[0], typed)
        hashed = self.shared.filter(offering_key)
        zone = offering_key[0].single_value()
        zones: set[str] = set()
        for candidate in matching:
            offerings = candidate.allowed.get(hashed)  # `offerings_with`, inline: it runs for every candidate
            if offerings is None:
                offerings = candidate.offerings_with(hashed)
            if offerings:
                priced.append((offerings[0].price, candidate))
                if zone is None:
                    zones.update(o.zone for o in offerings)
        if zone is not None and priced:
            zones = {zone}  # a candidate's offerings allowed under one zone are all in it
        if not priced:
            self.priced[priced_key] = None
            return self._refusal(merged)
        priced.sort(key=lambda pc: (pc[0], pc[1].it.name))
        basics = [c.basics for _, c in priced]
        answer = PoolCompat(merged, priced, frozenset(zones), basics, [cost for cost, _ in priced])
        self.priced[priced_key] = answer
        return answer

    def _matching(self, typed_key: ContentKey, typed: Requirements) -> list[Candidate]:
        """The candidates whose type labels meet `typed` (a pod's requirements on type labels; `typed_key` is its
        `req_key`), in order: the same for every offering key (a zonal spread asks once per zone)."""
        found = self.typed.get(typed_key)
        if found is None:
            if len(self.typed) >= ANSWERS_LIMIT:
                self.typed.clear()
            if typed.by_key:
                table = self.shared.matches_of(typed_key)
                found = []
                for candidate in self.candidates:
                    matched = table.get(candidate)
                    if matched is None:
                        matched = table[candidate] = type_matches(candidate.it, typed)
                    if matched:
                        found.append(candidate)
            else:
                found = self.candidates
            self.typed[typed_key] = found
        return found

    def _refusal(self, merged: Requirements) -> str:
        if not self.candidates and self.too_small_for_daemonsets:
            return (
                f"the DaemonSet pods that would run on them exceed the allocatable of every instance type the "
                f"NodePool allows ({self.too_small_for_daemonsets})"
            )
        if not self.candidates and self.unavailable_types:
            return (
                f"every instance type the NodePool allows ({self.unavailable_types}) has all its offerings marked "
                "unavailable after capacity errors; they are tried again once the marks expire"
            )
        return self._no_type_reason(merged)

    def _no_type_reason(self, merged: Requirements) -> str:
        """Why no instance type satisfies these (a NodePool's and a pod's) requirements: the first one that
        no type of the catalog meets by itself, else those of them that instance types decide, together."""
        keys = sorted(k for k in merged.by_key if k in TYPE_KEYS or k in OFFERING_KEYS)
        for key in keys:
            alone = Requirements({key: merged.by_key[key]})
            if not any(_offered(it, alone) for it in self.instance_types):
                return f"no instance type satisfies {merged.by_key[key].describe(key)}"
        return f"no instance type satisfies {_describe(merged.without(set(merged.by_key) - set(keys)))} together"


# ----- preparation, kept across solves ---------------------------------------------------------------------

# Every NodeClaim's node ends up registered and initialized (Karpenter's scheduling-simulation keys): a pod that
# selects those labels fits a new claim, which neither requires nor sets them (see `finalize`).
_INITIALIZED = Requirements.from_labels(LIFECYCLE_STAGES[-1])
DaemonSetOptions = Sequence[tuple[DaemonSet, tuple[Requirements, ...]]]
# The DaemonSet pods of a NodePool's node of one type: their requests, the same as sorted items, their host ports.
_Overhead = tuple[dict[str, int], tuple[tuple[str, int], ...], frozenset[tuple[str, int]]]


class _Prepared:
    """One NodePool (by content) with one EC2NodeClass's allocatable and one set of DaemonSets: what each
    instance type it has been asked about gives it, and its templates per list of instance types."""

    def __init__(
        self,
        pool: NodePool,
        requirements: Requirements,
        node_class: EC2NodeClass,
        daemonsets: DaemonSetOptions,
        shared: SharedTypes,
    ) -> None:
        self.requirements = requirements
        self.taints = pool.taints
        self.node_class = node_class
        self.shared = shared
        self.bases = shared.bases_of(allocatable_key(node_class))
        # The part of its requirements an instance type's own labels are checked against (see `type_matches`).
        self.typed = Requirements({k: v for k, v in requirements.by_key.items() if k in TYPE_KEYS})
        self.type_table = shared.type_table(req_key(self.typed))
        # The DaemonSets whose pods tolerate the NodePool's taints (startup taints and PreferNoSchedule ones do
        # not keep them off), and the label keys their node requirements read: a type's overhead depends on
        # its labels only through those keys, so types alike on them share one computation.
        self.daemonsets = [(ds, o) for ds, o in daemonsets if untolerated(ds.pod.tolerations, pool.taints) is None]
        self.keys = tuple(sorted({k for _, options in self.daemonsets for o in options for k in o.by_key}))
        # Whether a DaemonSet reads a label the node gets only as it comes up (see `_daemonset_overhead`).
        self.reads_lifecycle = any(key in stage for stage in LIFECYCLE_STAGES for key in self.keys)
        self.before_lifecycle = requirements.without(LIFECYCLE_LABELS)
        self.overheads: dict[tuple[str | None, ...], _Overhead] = {}
        self.per_type: dict[int, tuple[InstanceType, Candidate | str]] = {}
        self.templates: OrderedDict[tuple[int, ...], Template] = OrderedDict()

    def template(self, instance_types: Sequence[InstanceType], ids: tuple[int, ...]) -> Template:
        found = self.templates.get(ids)
        if found is not None:
            self.templates.move_to_end(ids)
            return found
        if len(self.per_type) > TYPES_LIMIT:
            self.per_type.clear()
        candidates: list[Candidate] = []
        unavailable = too_small = 0
        for it in instance_types:
            seen = self.per_type.get(id(it))
            if seen is None:
                seen = self.per_type[id(it)] = (it, self._candidate(it))
            outcome = seen[1]
            if isinstance(outcome, Candidate):
                candidates.append(outcome)
            elif outcome == _UNAVAILABLE:
                unavailable += 1
            elif outcome == TOO_SMALL:
                too_small += 1
        made = Template(self.requirements, self.taints, candidates, instance_types, unavailable, too_small, self.shared)
        self.templates[ids] = made
        if len(self.templates) > _LISTS_LIMIT:
            self.templates.popitem(last=False)
        return made

    def _candidate(self, it: InstanceType) -> Candidate | str:
        """The type as a candidate of this NodePool (with the OS labels of its EC2NodeClass's AMI family), or why
        it is not one. What does not depend on the NodePool (the AMI family's labels, the available offerings in
        order, allocatable before DaemonSets) is the `SharedTypes`' for every NodePool of the same EC2NodeClass
        allocatable, and so is the candidate itself when another NodePool made one of the same content."""
        base = self.shared.base(self.bases, it, self.node_class)
        if base is None:
            return _UNMATCHED
        matched = self.type_table.get(base)
        if matched is None:
            matched = self.type_table[base] = type_matches(base.it, self.typed)
        if not matched:
            return _UNMATCHED
        if not base.offerings:
            return _UNAVAILABLE if it.offerings else _UNMATCHED
        if not self.daemonsets:
            return self.shared.candidate(base, None, frozenset())
        overhead, overhead_key, ports = self._daemonset_overhead(base.it)
        return self.shared.candidate(base, (overhead, overhead_key), ports)

    def _daemonset_overhead(self, it: InstanceType) -> _Overhead:
        """Requests (and their sorted items) and host ports of the DaemonSet pods that would run on a node of this
        pool and type.

        Karpenter's isDaemonPodCompatible: the pod tolerates the NodePool's taints and one of its ORed required
        node requirements (the nodeSelector with a node affinity term) is compatible with the NodePool's and
        the type's: no key conflicts, and a key the NodePool does not define is well known or may be absent
        (NotIn). Preferred node affinity does not count.

        The node also gets karpenter.sh/registered and then karpenter.sh/initialized as it comes up, and a
        DaemonSet's pod placed while the node matches stays (required affinity is ignored during execution):
        so the pod counts when the node matches at any stage (LIFECYCLE_STAGES). Karpenter v1.14 counts one
        that selects the labels being "true" (its fix of issue 2116); one that selects them absent counts
        here too, as it counted before.
        """
        labels = tuple(it.labels.get(k) for k in self.keys)
        found = self.overheads.get(labels)
        if found is None:
            type_labels = {k: v for k, v in zip(self.keys, labels, strict=True) if v is not None}
            node = self.before_lifecycle.intersect(Requirements.from_labels(type_labels))
            stages = [node]
            if self.reads_lifecycle:
                stages = [node.intersect(Requirements.from_labels(stage)) for stage in LIFECYCLE_STAGES]
            total: dict[str, int] = {}
            ports: set[tuple[str, int]] = set()
            for ds, options in self.daemonsets:
                if any(_compatible(stage, option) for stage in stages for option in options):
                    total = res.add(total, ds.pod.requests)
                    ports.update((p.protocol, p.port) for p in ds.pod.host_ports)
            found = self.overheads[labels] = (total, tuple(sorted(total.items())), frozenset(ports))
        return found


@dataclass(frozen=True, slots=True)
class NodeLabels:
    """An existing node's labels (hostname filled in) and the same as requirements, with their content key, and
    the content key of its labels but the hostname (`shape`: nodes of one NodePool, type, zone and capacity type
    share it). `labels` is the node's bin's own (no run changes a node's labels): never modified."""

    labels: dict[str, str]
    requirements: Requirements
    key: ContentKey
    shape: ContentKey


class TemplateCache:
    """NodePools prepared against catalogs, kept across `solve()` calls: pass one cache to every solve of the
    same cluster (the disruption planner's simulations of one tick, a warm provisioner's batches).

    Entries are keyed by what a template is computed from (see the module), so a changed NodePool, EC2NodeClass,
    DaemonSet or instance type gets its own entry and a stale one is never served; the oldest entries are
    dropped past fixed bounds. Not thread-safe: one cache per thread.
    """

    def __init__(self) -> None:
        self._prepared: OrderedDict[tuple[object, ...], _Prepared] = OrderedDict()
        self._shared = SharedTypes()
        self._nodes: dict[tuple[int, str], tuple[Mapping[str, str], NodeLabels]] = {}
        self._node_pods: dict[str, NodePods] = {}
        self._shapes: dict[tuple[tuple[str, str], ...], ContentKey] = {}  # see `node_labels`

    def node_pods(self, node: Node) -> NodePods:
        """The sums over the node's bound pods (`nodepods.NodePods`), kept per node name while its pods are equal:
        a warm provisioner's unchanged pods are the same parsed objects, so the comparison is by identity, pod by
        pod, in C; a changed pod compares unequal and the node is summed again. Past a bound it starts again."""
        found = self._node_pods.get(node.name)
        if found is not None and found.pods == node.pods:
            return found
        if len(self._node_pods) >= _NODES_LIMIT:
            self._node_pods.clear()
        made = self._node_pods[node.name] = node_pods(node.pods)
        return made

    def node_pods_of(self, nodes: Sequence[Node]) -> list[NodePods]:
        """`node_pods` of each of `nodes`, in order. Once the kept sums outnumber twice these nodes (nodes come and
        go), those of nodes not among them are dropped, so a cluster's churn does not keep their pods alive."""
        sums = [self.node_pods(n) for n in nodes]
        if len(self._node_pods) > 2 * len(nodes) + _STALE_NODES:
            names = {n.name for n in nodes}
            self._node_pods = {name: s for name, s in self._node_pods.items() if name in names}
        return sums

    def node_labels(self, node: Node) -> NodeLabels:
        """The node's labels with its hostname filled in, as requirements and as their content key: what every
        solve asks of each existing node.

        Kept by the identity of the node's label mapping (and its name), which is held so its id is not
        reused: the planner hands each simulation the same nodes, and a warm provisioner's nodes keep their
        parsed labels while the node is unchanged (a node object is rebuilt when its pods change; its labels
        are not copied). Holding the labels, not the node, keeps pods out of the cache; past a bound of a few
        batches' nodes it starts again."""
        labels_in = node.labels
        key = (id(labels_in), node.name)
        found = self._nodes.get(key)
        if found is not None and found[0] is labels_in:
            return found[1]
        if len(self._nodes) >= _NODES_LIMIT:
            self._nodes.clear()
            self._shapes.clear()
        labels = {**labels_in, HOSTNAME_LABEL: labels_in.get(HOSTNAME_LABEL, node.name)}
        requirements = Requirements.from_labels(labels)
        key_ = HashedKey(req_key(requirements))
        # One object per shape, found by the labels (strings compare in C; value sets call Python): a solve numbers
        # each node's shape, and equal keys that are one object compare by identity, not value set by value set.
        shape_labels = tuple(sorted(kv for kv in labels.items() if kv[0] != HOSTNAME_LABEL))
        shape = self._shapes.get(shape_labels)
        if shape is None:
            shape = self._shapes[shape_labels] = HashedKey(tuple(kv for kv in key_ if kv[0] != HOSTNAME_LABEL))
        made = NodeLabels(labels, requirements, key_, shape)
        self._nodes[key] = (labels_in, made)
        return made

    def template(
        self,
        pool: NodePool,
        node_class: EC2NodeClass,
        instance_types: Sequence[InstanceType],
        daemonsets: DaemonSetOptions,
        type_ids: tuple[int, ...],
    ) -> Template:
        """The NodePool prepared against these instance types (`type_ids`: their ids, in order) with this
        EC2NodeClass and these DaemonSets (each with its pods' ORed required node requirements), from the cache
        when it was prepared before."""
        requirements = pool.node_requirements().intersect(_INITIALIZED)
        key = (req_key(requirements), pool.taints, allocatable_key(node_class), _daemonsets_key(daemonsets))
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = self._prepared[key] = _Prepared(pool, requirements, node_class, daemonsets, self._shared)
            if len(self._prepared) > _PREPARED_LIMIT:
                self._prepared.popitem(last=False)
        else:
            self._prepared.move_to_end(key)
        return prepared.template(instance_types, type_ids)


def _daemonsets_key(daemonsets: DaemonSetOptions) -> tuple[object, ...]:
    """What a template reads of the DaemonSets: their pods' requests, tolerations, node requirements, ports."""
    return tuple(
        (tuple(sorted(ds.pod.requests.items())), ds.pod.tolerations, tuple(map(req_key, options)), ds.pod.host_ports)
        for ds, options in daemonsets
    )


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


def _describe(requirements: Requirements) -> str:
    return "; ".join(vs.describe(k) for k, vs in sorted(requirements.by_key.items()))
