"""The catalog the scheduler reads: instance types by name, with overlays for what changes per run.

A `Catalog` is immutable. Per-invocation facts are overlays that return a new catalog sharing every
untouched instance type with the old one:

- `with_unavailable({(type, zone, capacity_type)})`: offerings EC2 recently refused
  (InsufficientInstanceCapacity and friends; the 3-minute cache) become `available=False`.
- `with_reservations([CapacityReservation])`: On-Demand Capacity Reservations with free instances
  become `reserved` offerings priced as Karpenter prices them (on-demand / 10,000,000, see
  `catalog.pricing`), so they are always the cheapest and tried first.

`filter_exotic` is Karpenter's rule for bare metal and accelerated types: they are dropped from a
NodeClaim's candidate list whenever any other candidate remains. So they are used only when a
requirement (instance-size In [metal], instance-family In [p5], ...) or a resource request (GPUs) leaves
nothing else.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.catalog.labels import CAPACITY_RESERVATION_ID, CAPACITY_TYPE, TYPE_LABELS, ZONE, ZONE_ID
from nodewright.catalog.pricing import reserved_price
from nodewright.catalog.types import ON_DEMAND, RESERVED, InstanceType, Offering
from nodewright.model.requirements import Requirements

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


@dataclass(frozen=True, slots=True)
class CapacityReservation:
    """An On-Demand Capacity Reservation the EC2NodeClass selected, with its free instance count now."""

    id: str
    instance_type: str
    zone: str
    available_count: int
    reservation_type: str = "default"  # default | capacity-block


def is_bare_metal(it: InstanceType) -> bool:
    """True for metal sizes (`metal`, `metal-24xl`, ...), Karpenter's test for the exotic metal rule."""
    return it.bare_metal or "metal" in it.size


def is_accelerated(it: InstanceType) -> bool:
    """True when the type exposes GPUs, Neuron or Gaudi devices (Karpenter's exotic resources)."""
    return bool(it.gpus) or any(a.count for a in it.accelerators)


def filter_exotic(
    instance_types: Sequence[InstanceType], requirements: Requirements | None = None
) -> list[InstanceType]:
    """Karpenter's exotic-type rule for one NodeClaim's candidates.

    Input: the instance types that fit the NodeClaim's pods, optionally with the NodeClaim's
    requirements (types whose labels do not satisfy them are dropped first). Output: the candidates that
    are neither bare metal nor accelerated, or, when that leaves none, all remaining candidates. So a
    pod asking for `nvidia.com/gpu`, or a NodePool requiring `instance-size In [metal]`, still gets them.
    Order is preserved.
    """
    candidates = list(instance_types)
    if requirements is not None and requirements.by_key:
        candidates = [it for it in candidates if type_matches(it, requirements)]
    generic = [it for it in candidates if not is_bare_metal(it) and not is_accelerated(it)]
    return generic or candidates


def type_matches(it: InstanceType, requirements: Requirements) -> bool:
    """Do the instance type's own labels satisfy `requirements`?

    Only keys an instance type decides are checked (`labels.TYPE_LABELS`: instance-type, arch, os,
    region, karpenter.k8s.aws/instance-*); a missing label is absent, so `In` fails and `NotIn` /
    `DoesNotExist` pass. Zone, capacity type and reservation keys are per offering (`offering_matches`);
    hostname, nodepool and custom labels are given to the node by its NodePool, not by its type.
    """
    labels = it.labels
    for key, value_set in requirements.by_key.items():
        if key in TYPE_LABELS and not value_set.matches(labels.get(key)):
            return False
    return True


def offering_matches(offering: Offering, requirements: Requirements) -> bool:
    """Does a node launched from this offering satisfy the zone / capacity-type / reservation requirements?"""
    by_key = requirements.by_key
    if not by_key:
        return True
    checks = (
        (ZONE, offering.zone),
        (CAPACITY_TYPE, offering.capacity_type),
        (ZONE_ID, offering.zone_id or None),
        (CAPACITY_RESERVATION_ID, offering.reservation_id or None),
    )
    for key, value in checks:
        value_set = by_key.get(key)
        if value_set is not None and not value_set.matches(value):
            return False
    return True


def available_offerings(it: InstanceType, requirements: Requirements | None = None) -> list[Offering]:
    """The type's available offerings that satisfy `requirements`, cheapest first (ties: zone, capacity type)."""
    chosen = [o for o in it.offerings if o.available and (requirements is None or offering_matches(o, requirements))]
    chosen.sort(key=lambda o: (o.price, o.zone, o.capacity_type, o.reservation_id))
    return chosen


def cheapest_price(it: InstanceType, requirements: Requirements | None = None) -> float | None:
    """The lowest price among the type's available offerings that satisfy `requirements`, or None."""
    prices = [
        o.price for o in it.offerings if o.available and (requirements is None or offering_matches(o, requirements))
    ]
    return min(prices) if prices else None


class Catalog:
    """Instance types by name. Iteration is in name order, so everything built on it is deterministic."""

    __slots__ = ("_by_name", "_types")

    def __init__(self, instance_types: Iterable[InstanceType]) -> None:
        by_name: dict[str, InstanceType] = {}
        for it in instance_types:
            by_name[it.name] = it  # a later duplicate wins, as a refreshed description should
        self._types = tuple(sorted(by_name.values(), key=lambda t: t.name))
        self._by_name: Mapping[str, InstanceType] = {it.name: it for it in self._types}

    def __len__(self) -> int:
        return len(self._types)

    def __iter__(self) -> Iterator[InstanceType]:
        return iter(self._types)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> InstanceType:
        return self._by_name[name]

    @property
    def instance_types(self) -> tuple[InstanceType, ...]:
        """Every instance type, sorted by name."""
        return self._types

    def get(self, name: str) -> InstanceType | None:
        """The instance type called `name`, or None."""
        return self._by_name.get(name)

    def zones(self) -> list[str]:
        """Every zone any offering is in, sorted."""
        return sorted({o.zone for it in self._types for o in it.offerings})

    def compatible(self, requirements: Requirements) -> list[InstanceType]:
        """Types that satisfy `requirements` (`type_matches`) and have an available offering that
        satisfies the zone / capacity-type / reservation requirements (`offering_matches`). Name order."""
        return [
            it
            for it in self._types
            if type_matches(it, requirements)
            and any(offering_matches(o, requirements) for o in it.offerings if o.available)
        ]

    def with_unavailable(self, unavailable: Collection[OfferingKey]) -> Catalog:
        """A catalog where each (instance type, zone, capacity type) in `unavailable` is `available=False`.

        Keys for unknown types or offerings are ignored; types not named are shared, not copied.
        """
        if not unavailable:
            return self
        by_type: dict[str, set[tuple[str, str]]] = {}
        for name, zone, capacity_type in unavailable:
            by_type.setdefault(name, set()).add((zone, capacity_type))
        out = []
        for it in self._types:
            keys = by_type.get(it.name)
            if keys and any((o.zone, o.capacity_type) in keys and o.available for o in it.offerings):
                offerings = tuple(
                    replace(o, available=False) if (o.zone, o.capacity_type) in keys else o for o in it.offerings
                )
                it = replace(it, offerings=offerings)
            out.append(it)
        return Catalog(out)

    def with_reservations(self, reservations: Iterable[CapacityReservation]) -> Catalog:
        """A catalog with one `reserved` offering per capacity reservation, added to its instance type.

        Price: on-demand / 10,000,000 (Karpenter's rule; 0 when the type has no on-demand price).
        Available: the reservation has free instances and the type is offered in that zone. The
        offering carries the reservation id, free count and type. Reservations for types not in the
        catalog are ignored. Existing reserved offerings are replaced, so the overlay can be re-applied.
        """
        by_type: dict[str, list[CapacityReservation]] = {}
        for reservation in reservations:
            by_type.setdefault(reservation.instance_type, []).append(reservation)
        if not by_type:
            return self
        out = []
        for it in self._types:
            mine = by_type.get(it.name)
            if mine:
                kept = tuple(o for o in it.offerings if o.capacity_type != RESERVED)
                zones = {o.zone: o.zone_id for o in kept}
                on_demand = next((o.price for o in kept if o.capacity_type == ON_DEMAND), 0.0)
                added = tuple(
                    Offering(
                        zone=r.zone,
                        capacity_type=RESERVED,
                        price=reserved_price(on_demand),
                        available=r.available_count > 0 and r.zone in zones,
                        reservation_id=r.id,
                        reservation_capacity=max(r.available_count, 0),
                        zone_id=zones.get(r.zone, ""),
                        reservation_type=r.reservation_type,
                    )
                    for r in sorted(mine, key=lambda r: r.id)
                )
                it = replace(it, offerings=kept + added)
            out.append(it)
        return Catalog(out)


__all__ = [
    "CapacityReservation",
    "Catalog",
    "OfferingKey",
    "available_offerings",
    "cheapest_price",
    "filter_exotic",
    "is_accelerated",
    "is_bare_metal",
    "offering_matches",
    "type_matches",
]
