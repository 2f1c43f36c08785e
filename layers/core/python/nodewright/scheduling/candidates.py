"""An instance type as a NodePool's candidate, and what NodePools share about it.

A `Candidate` is one instance type as a NodePool can launch it: allocatable minus the DaemonSet pods that would run
there, its available offerings cheapest first, the host ports those pods take. `SharedTypes` holds the per-type work
that does not depend on the NodePool (the AMI family's labels, offerings in launch order, allocatable, type
matching per requirement set, one `Candidate` per content), done once for every NodePool of a `TemplateCache`.
The keys both are looked up by (`req_key`, `OfferingFilter`) compare by content and hash once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.catalog.allocatable import allocatable_for, capacity
from nodewright.catalog.catalog import is_accelerated, is_bare_metal
from nodewright.catalog.labels import CAPACITY_RESERVATION_ID, CAPACITY_TYPE, WELL_KNOWN_LABELS, ZONE, for_ami_family
from nodewright.catalog.types import RESERVED, InstanceType, Offering
from nodewright.model import resources as res
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.objects import HOSTNAME_LABEL
from nodewright.model.requirements import Requirements, ValueSet
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.scheduling.classes import EBS_VOLUMES

# Labels an instance type (not the NodePool) defines; checked against the type's own labels.
OFFERING_KEYS = frozenset({ZONE, CAPACITY_TYPE, CAPACITY_RESERVATION_ID})
TYPE_KEYS = WELL_KNOWN_LABELS - OFFERING_KEYS - {HOSTNAME_LABEL, "karpenter.sh/nodepool"}
OfferingKey = tuple[ValueSet, ValueSet, ValueSet]
# A requirement set as a dictionary key compared by content (see `req_key`).
ContentKey = tuple[tuple[str, ValueSet], ...]
# Bounds on what a long-lived process keeps (see `templates`): instance types seen, priced answers and their keys,
# pod sizes per candidate. Each is far above what one cluster uses; past it the oldest (or all) is dropped.
TYPES_LIMIT = 20_000
ANSWERS_LIMIT = 4_096
_SIZES_LIMIT = 4_096

# Why an instance type is not a candidate of a NodePool: its DaemonSet pods alone do not fit on it.
TOO_SMALL = "too small for its DaemonSets"


def req_key(requirements: Requirements) -> ContentKey:
    """The requirements as a sorted tuple: equal for equal requirement sets."""
    return tuple(sorted(requirements.by_key.items()))


class HashedKey(tuple[tuple[str, ValueSet], ...]):
    """A content key that computes its hash once. Equal to, and hashing like, the plain tuple `req_key` makes,
    so either finds the other in a dictionary; a node's key (forty-odd labels, each a value set whose hash is a
    Python call) is looked up in every solve, and a tuple hashes its items again at every lookup."""

    _hash: int

    def __new__(cls, items: ContentKey) -> HashedKey:
        key = super().__new__(cls, items)
        key._hash = tuple.__hash__(key)
        return key

    def __hash__(self) -> int:
        return self._hash


def _allows(types: ValueSet, reservations: ValueSet, o: Offering) -> bool:
    return types.matches(o.capacity_type) and reservations.matches(o.reservation_id or None)


class OfferingFilter(tuple[ValueSet, ValueSet, ValueSet]):
    """An offering key that computes its hash once and keeps its verdict per capacity type and reservation: equal
    to, and hashing like, the plain tuple `offering_key_of` makes (see `HashedKey`). A priced answer looks it up
    in each of hundreds of candidates' caches and filters the offerings of those it misses; `SharedTypes.filter`
    gives one object per content, so those lookups find the key by identity."""

    _hash: int
    _verdicts: dict[tuple[str, str], bool]
    _any: bool  # whether capacity type and reservation leave nothing out

    def __new__(cls, items: OfferingKey) -> OfferingFilter:
        key = super().__new__(cls, items)
        key._hash = tuple.__hash__(key)
        key._verdicts = {}
        key._any = _admits_anything(items[1]) and _admits_anything(items[2])
        return key

    def __hash__(self) -> int:
        return self._hash

    def allowed(self, offerings: Sequence[Offering]) -> Sequence[Offering]:
        """Those of `offerings` (of the zones allowed) whose capacity type and reservation are allowed, in order."""
        if self._any:
            return offerings
        verdicts = self._verdicts
        kept = []
        for o in offerings:
            pair = (o.capacity_type, o.reservation_id)
            verdict = verdicts.get(pair)
            if verdict is None:
                verdict = verdicts[pair] = _allows(self[1], self[2], o)
            if verdict:
                kept.append(o)
        return kept


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


@dataclass(slots=True, eq=False)
class Candidate:
    """An instance type a NodePool may launch, with what pods can use on it and its offerings.

    Its caches are keyed by content (offering requirements, pod sizes), so a candidate serves every solve
    its template is kept for.
    """

    it: InstanceType
    allocatable: Mapping[str, int]  # allocatable minus DaemonSet overhead
    capacity: Mapping[str, int]
    offerings: tuple[Offering, ...]  # available ones, cheapest first
    exotic: bool = False  # bare metal or accelerated: used only when nothing else fits (Karpenter's rule)
    allowed: dict[OfferingKey, list[Offering]] = field(default_factory=dict)
    copies: dict[tuple[tuple[str, int], ...], int] = field(default_factory=dict)
    by_zone: dict[str, list[Offering]] = field(default_factory=dict)  # the offerings per zone, cheapest first
    # cpu, memory and pods of `allocatable`, for quick rejection in loops over candidates.
    basics: tuple[int, int, int] = (0, 0, 0)
    ports: frozenset[tuple[str, int]] = frozenset()  # host ports its DaemonSet pods take
    floor: float = 0.0  # the lowest price of its available offerings

    def __post_init__(self) -> None:
        self.floor = min((o.price for o in self.offerings), default=0.0)
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
            if isinstance(key, OfferingFilter):
                offerings = key.allowed(offerings)
            elif not (_admits_anything(types) and _admits_anything(reservations)):
                offerings = [o for o in offerings if _allows(types, reservations, o)]
            cached = self.allowed[key] = list(offerings)
        return cached

    def copies_of(self, request_key: tuple[tuple[str, int], ...], request: Mapping[str, int]) -> int:
        """How many pods of `request` (whose sorted items are `request_key`) fit its allocatable."""
        copies = self.copies.get(request_key, -1)
        if copies < 0:
            if len(self.copies) >= _SIZES_LIMIT:
                self.copies.clear()
            copies = self.copies[request_key] = res.max_copies(request, self.allocatable)
        return copies


@dataclass(frozen=True, slots=True, eq=False)
class TypeBase:
    """An instance type as any NodePool of one EC2NodeClass allocatable sees it, before its DaemonSets: the type
    with the AMI family's OS labels, its available offerings in launch order, and allocatable (EBS volumes
    included). Compared and hashed by identity: one object per type and EC2NodeClass allocatable."""

    it: InstanceType
    offerings: tuple[Offering, ...]
    allocatable: Mapping[str, int]  # empty when no offering is available (never read then)


class SharedTypes:
    """The per-instance-type work of preparing NodePools that does not depend on the NodePool, done once for all
    the NodePools of a `TemplateCache` (a random cluster has up to 15 NodePools over one 700-type catalog, each
    of which did all of it again):

    - `base`: the AMI family's labels, available offerings in order and allocatable, per type and EC2NodeClass
      allocatable (`allocatable_key`), from the table `bases_of` gives;
    - `type_table` / `matches_of`: whether a type's labels meet a requirement set on type labels, per content of
      that set;
    - `candidate`: one `Candidate` per content (type, EC2NodeClass allocatable, DaemonSet overhead and host
      ports), so the candidates' own caches (allowed offerings, pod copies) serve every NodePool that has them.

    Every answer is a function of its key's content, so a NodePool gets exactly what it would compute alone.
    Tables are keyed by objects held in them (identity) and start again, all together, past fixed bounds.
    """

    def __init__(self) -> None:
        self._bases: dict[tuple[object, ...], dict[int, tuple[InstanceType, TypeBase | None]]] = {}
        self._type_tables: dict[ContentKey, dict[TypeBase, bool]] = {}
        self._candidates: dict[tuple[object, ...], Candidate | str] = {}
        self._typed: dict[ContentKey, dict[Candidate, bool]] = {}
        self._filters: dict[OfferingKey, OfferingFilter] = {}

    def _bound(self) -> None:
        if sum(map(len, self._bases.values())) > TYPES_LIMIT or len(self._candidates) > TYPES_LIMIT:
            self._bases.clear()
            self._type_tables.clear()
            self._candidates.clear()
        if len(self._typed) > ANSWERS_LIMIT or len(self._type_tables) > ANSWERS_LIMIT:
            self._typed.clear()
            self._type_tables.clear()

    def bases_of(self, alloc_key: tuple[object, ...]) -> dict[int, tuple[InstanceType, TypeBase | None]]:
        """The table of `base` answers for one EC2NodeClass allocatable (`allocatable_key`), by type id."""
        table = self._bases.get(alloc_key)
        if table is None:
            self._bound()
            table = self._bases[alloc_key] = {}
        return table

    def base(
        self, table: dict[int, tuple[InstanceType, TypeBase | None]], it: InstanceType, node_class: EC2NodeClass
    ) -> TypeBase | None:
        """The type under this EC2NodeClass (`table`: `bases_of` its `allocatable_key`), or None when its AMI family
        cannot run on the type."""
        found = table.get(id(it))
        if found is None:  # the entry holds `it`, so its id is not reused while the entry lives
            family_type = for_ami_family(it, node_class.ami_family)
            made: TypeBase | None = None
            if family_type is not None:
                offerings = tuple(sorted((o for o in family_type.offerings if o.available), key=_offering_order))
                alloc: Mapping[str, int] = {}
                if offerings:
                    alloc = {**allocatable_for(family_type, node_class), EBS_VOLUMES: family_type.ebs_volume_limit}
                made = TypeBase(family_type, offerings, alloc)
            found = table[id(it)] = (it, made)
        return found[1]

    def type_table(self, typed_key: ContentKey) -> dict[TypeBase, bool]:
        """Per type (its `TypeBase`), whether its labels meet the requirement set on type labels whose `req_key` is
        `typed_key`: filled by the NodePools as they prepare."""
        table = self._type_tables.get(typed_key)
        if table is None:
            self._bound()
            table = self._type_tables[typed_key] = {}
        return table

    def candidate(
        self,
        base: TypeBase,
        overhead: tuple[Mapping[str, int], tuple[tuple[str, int], ...]] | None,
        ports: frozenset[tuple[str, int]],
    ) -> Candidate | str:
        """The candidate of this type with these DaemonSet pods' requests (`overhead`: the requests and their sorted
        items; None when no DaemonSet runs on the NodePool's nodes) and host ports, or `TOO_SMALL` when those
        pods alone exceed its allocatable."""
        key = (base, overhead[1] if overhead is not None else None, ports)
        found = self._candidates.get(key)
        if found is None:
            alloc = base.allocatable
            if overhead is not None:
                alloc = res.subtract(alloc, overhead[0])
            if overhead is not None and any(value < 0 for value in alloc.values()):
                found = TOO_SMALL  # its DaemonSet pods alone do not fit: no pod can use it (Karpenter's rule)
            else:
                # EC2NodeClasses whose kubelet settings differ but give this type the same allocatable (and the
                # same AMI family's labels) share one candidate too.
                content = (id(base.it), tuple(sorted(alloc.items())), ports)  # the candidate holds the type
                found = self._candidates.get(content)
                if found is None:
                    it = base.it
                    exotic = is_bare_metal(it) or is_accelerated(it)
                    found = Candidate(it, alloc, capacity(it), base.offerings, exotic, ports=ports)
                    self._candidates[content] = found
            self._candidates[key] = found
        return found

    def filter(self, key: OfferingKey) -> OfferingFilter:
        """The one `OfferingFilter` of this content: candidates' caches find it by identity, and its verdicts are
        worked out once for all candidates."""
        found = self._filters.get(key)
        if found is None:
            if len(self._filters) >= ANSWERS_LIMIT:
                self._filters.clear()
            found = self._filters[key] = OfferingFilter(key)
        return found

    def matches_of(self, typed_key: ContentKey) -> dict[Candidate, bool]:
        """Per candidate, whether its type's labels meet the requirement set whose `req_key` is `typed_key` (a
        requirement set on type labels only): filled by the NodePools' templates as they ask."""
        table = self._typed.get(typed_key)
        if table is None:
            self._bound()
            table = self._typed[typed_key] = {}
        return table
