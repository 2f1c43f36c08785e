"""NodeOverlays applied to a catalog: the prices and extended resources every simulation then sees.

`apply_overlays(catalog, overlays)` follows Karpenter v1.14's NodeOverlay controller and store
(`pkg/controllers/nodeoverlay/controller.go`, `store.go`):

- Overlays are taken by weight, highest first; of equal weights the name later in the alphabet first.
- An overlay selects an instance type when the type's labels satisfy its requirements and at least one of the
  type's offerings satisfies the zone / capacity-type / zone-id / reservation requirements; it then selects those
  offerings (price) and the whole type (capacity).
- Price: each selected offering takes the first overlay's price change (the highest weight wins); a later overlay
  of the same weight that selects an offering already priced conflicts.
- Capacity: each extended resource takes the first overlay's amount; a later overlay of the same weight that sets
  a resource the last applied overlay (of that weight) set on the same type conflicts.
- A conflicting overlay is applied nowhere (all or nothing), and is reported with the overlay it conflicts with.
  A price change always applies to the listed price, never to another overlay's result.

One difference, by design: nodewright's catalog is shared by every NodePool, where Karpenter applies overlays per
NodePool. An overlay whose requirements name a key the catalog does not decide (`karpenter.sh/nodepool`, a
NodePool's template labels, any custom label, and `kubernetes.io/os` / `node.kubernetes.io/windows-build`, which
follow the EC2NodeClass's AMI family) would change prices for some NodePools only; it is refused, with the reason
in its status, rather than applied to all or none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.catalog.catalog import Catalog, offering_matches, type_matches
from nodewright.catalog.labels import CAPACITY_RESERVATION_TYPE, OFFERING_LABELS, TYPE_LABELS
from nodewright.catalog.types import InstanceType, Offering
from nodewright.model.nodeoverlay import NodeOverlay, adjusted_price
from nodewright.model.requirements import NORMALIZED_LABELS, Requirements

CONFLICT = "Conflict"
UNSUPPORTED = "UnsupportedRequirement"
# The operating system is the EC2NodeClass's (its AMI family), not the instance type's: per NodePool.
PER_NODECLASS_KEYS = frozenset({"kubernetes.io/os", "node.kubernetes.io/windows-build"})
CATALOG_KEYS = (TYPE_LABELS | OFFERING_LABELS) - PER_NODECLASS_KEYS

PriceKey = tuple[str, str, str, str]  # (instance type, zone, capacity type, reservation id)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an overlay was applied nowhere: `reason` is Conflict or UnsupportedRequirement, `message` says more."""

    overlay: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class OverlayResult:
    """The overlaid catalog and what each overlay did.

    `applied`: overlay name -> how many offerings it priced and types it gave capacity (only overlays applied at
    all, even when a heavier overlay won every offering they select). `refused`: overlay name -> `Refusal`.
    Invariant: every overlay given is in exactly one of the two."""

    catalog: Catalog
    applied: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    refused: Mapping[str, Refusal] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The `nodeoverlays` object of `simulate --json` and `disrupt --json`: the overlays applied, by name, and
        those refused with reason and message."""
        refused = sorted(self.refused.values(), key=lambda r: r.overlay)
        return {
            "applied": sorted(self.applied),
            "refused": [{"name": r.overlay, "reason": r.reason, "message": r.message} for r in refused],
        }


def order_by_weight(overlays: Iterable[NodeOverlay]) -> list[NodeOverlay]:
    """Karpenter's `OrderByWeight`: the highest weight first; of equal weights the name later in the alphabet."""
    return sorted(overlays, key=lambda o: (o.weight, o.name), reverse=True)


def unsupported_keys(overlay: NodeOverlay) -> list[str]:
    """The overlay's requirement keys that depend on the NodePool, not the catalog (see the module)."""
    keys = {NORMALIZED_LABELS.get(r.key, r.key) for r in overlay.requirements}
    return sorted(k for k in keys if k not in CATALOG_KEYS)


@dataclass(slots=True)
class _PriceUpdate:
    change: str
    overlay: str
    lowest_weight: int
    lowest_overlay: str


@dataclass(slots=True)
class _CapacityUpdate:
    resources: dict[str, tuple[int, str]] = field(default_factory=dict)  # resource -> (amount, overlay)
    lowest_weight: int = 0
    lowest_resources: frozenset[str] = frozenset()
    lowest_overlay: str = ""


@dataclass(slots=True)
class _Store:
    prices: dict[PriceKey, _PriceUpdate] = field(default_factory=dict)
    capacity: dict[str, _CapacityUpdate] = field(default_factory=dict)


def _offering_selected(o: Offering, requirements: Requirements) -> bool:
    """`offering_matches`, and the capacity reservation type (an offering key the scheduler does not ask about)."""
    reservation_type = requirements.by_key.get(CAPACITY_RESERVATION_TYPE)
    if reservation_type is not None and not reservation_type.matches(o.reservation_type or None):
        return False
    return offering_matches(o, requirements)


def _selected(catalog: Catalog, requirements: Requirements) -> list[tuple[InstanceType, list[Offering]]]:
    """Each instance type the requirements select, with the offerings they select (available or not)."""
    out = []
    for it in catalog:
        if not type_matches(it, requirements):
            continue
        offerings = [o for o in it.offerings if _offering_selected(o, requirements)]
        if offerings:
            out.append((it, offerings))
    return out


def _price_key(it: InstanceType, o: Offering) -> PriceKey:
    return (it.name, o.zone, o.capacity_type, o.reservation_id)


def _conflict(store: _Store, overlay: NodeOverlay, selected: list[tuple[InstanceType, list[Offering]]]) -> str:
    """The message of the first conflict with an overlay already stored, or "" (Karpenter's
    isPriceUpdatesConflicting / isCapacityUpdatesConflicting; overlays come in weight order)."""
    for it, offerings in selected:
        if overlay.price_change is not None:
            for o in offerings:
                found = store.prices.get(_price_key(it, o))
                if found is not None and found.lowest_weight == overlay.weight:
                    where = f"{it.name} {o.capacity_type} in {o.zone}"
                    return (
                        f"conflicts with NodeOverlay {found.lowest_overlay}: both set the price of {where} "
                        f"at weight {overlay.weight}"
                    )
        if overlay.capacity:
            cap = store.capacity.get(it.name)
            if cap is not None and cap.lowest_weight == overlay.weight:
                both = sorted(set(overlay.capacity) & cap.lowest_resources)
                if both:
                    return (
                        f"conflicts with NodeOverlay {cap.lowest_overlay}: both set {', '.join(both)} on {it.name} "
                        f"at weight {overlay.weight}"
                    )
    return ""


def _store(store: _Store, overlay: NodeOverlay, selected: list[tuple[InstanceType, list[Offering]]]) -> tuple[int, int]:
    """Record the overlay's updates where no heavier overlay set them first.

    Returns (offerings it priced, types it gave capacity)."""
    priced = sized = 0
    change = overlay.price_change
    for it, offerings in selected:
        if change is not None:
            for o in offerings:
                key = _price_key(it, o)
                found = store.prices.get(key)
                if found is None:
                    store.prices[key] = _PriceUpdate(change, overlay.name, overlay.weight, overlay.name)
                    priced += 1
                else:
                    found.lowest_weight, found.lowest_overlay = overlay.weight, overlay.name
        if overlay.capacity:
            cap = store.capacity.setdefault(it.name, _CapacityUpdate())
            for resource, amount in overlay.capacity.items():
                cap.resources.setdefault(resource, (amount, overlay.name))
            cap.lowest_weight, cap.lowest_resources = overlay.weight, frozenset(overlay.capacity)
            cap.lowest_overlay = overlay.name
            sized += 1
    return priced, sized


def evaluate(
    catalog: Catalog, overlays: Sequence[NodeOverlay]
) -> tuple[_Store, dict[str, tuple[int, int]], dict[str, Refusal]]:
    """Decide every overlay against the catalog: the updates to make, the overlays applied and those refused."""
    store = _Store()
    applied: dict[str, tuple[int, int]] = {}
    refused: dict[str, Refusal] = {}
    for overlay in order_by_weight(overlays):
        keys = unsupported_keys(overlay)
        if keys:
            refused[overlay.name] = Refusal(
                overlay.name,
                UNSUPPORTED,
                f"requirements on {', '.join(keys)} cannot be honoured: their values depend on the NodePool or its "
                "EC2NodeClass, and nodewright applies overlays to the catalog every NodePool shares, so an overlay "
                "may select only on instance type and offering labels (instance type, family, size, arch, zone, "
                "capacity type, ...)",
            )
            continue
        selected = _selected(catalog, Requirements.of(overlay.requirements))
        message = _conflict(store, overlay, selected)
        if message:
            refused[overlay.name] = Refusal(overlay.name, CONFLICT, message)
            continue
        applied[overlay.name] = _store(store, overlay, selected)
    return store, applied, refused


# Overlaid instance types kept by (the original type's id, its updates): a planner applies the same overlays to the
# same listed types every tick, and the scheduler's caches key prepared NodePools by the identity of the types, so
# an unchanged overlay must give the very same objects. Each entry holds its original, so an id is not reused.
_MEMO: dict[tuple[int, tuple[object, ...]], tuple[InstanceType, InstanceType]] = {}
_MEMO_LIMIT = 50_000


def _overlaid(it: InstanceType, store: _Store) -> InstanceType:
    prices = tuple(
        (i, update.change, update.overlay)
        for i, o in enumerate(it.offerings)
        if (update := store.prices.get(_price_key(it, o))) is not None
    )
    cap = store.capacity.get(it.name)
    resources = tuple(sorted(cap.resources.items())) if cap is not None else ()
    if not prices and not resources:
        return it
    key = (id(it), (prices, resources))
    found = _MEMO.get(key)
    if found is not None and found[0] is it:
        return found[1]
    changed = {i: (change, name) for i, change, name in prices}
    offerings = (
        tuple(
            replace(o, price=adjusted_price(o.price, changed[i][0]), price_overlay=changed[i][1]) if i in changed else o
            for i, o in enumerate(it.offerings)
        )
        if changed
        else it.offerings  # a capacity overlay alone shares the offerings
    )
    made = replace(it, offerings=offerings, overlay_capacity=dict(resources) if resources else it.overlay_capacity)
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = (it, made)
    return made


def apply_overlays(catalog: Catalog, overlays: Sequence[NodeOverlay]) -> OverlayResult:
    """The catalog with the overlays applied (see the module), and what each overlay did.

    Input: a catalog as the simulation would read it (reservations added, refused offerings marked) and validated
    overlays. Output: a new catalog sharing every type no overlay changed; changed offerings carry the overlay's
    name in `price_overlay`, changed types their extended resources in `overlay_capacity`. With no overlays the
    catalog itself is returned."""
    if not overlays:
        return OverlayResult(catalog)
    store, applied, refused = evaluate(catalog, overlays)
    if not store.prices and not store.capacity:
        return OverlayResult(catalog, applied, refused)
    return OverlayResult(Catalog(_overlaid(it, store) for it in catalog), applied, refused)


def overlaid_catalog(catalog: Catalog, overlays: Sequence[NodeOverlay]) -> Catalog:
    """`apply_overlays(...).catalog`: what a simulation reads."""
    return apply_overlays(catalog, overlays).catalog


def price_overlay(
    catalog: Catalog, instance_type: str, zone: str, capacity_type: str, reservation_id: str = ""
) -> str | None:
    """The NodeOverlay that set the price of this offering, or None (listed price, or an offering not known)."""
    it = catalog.get(instance_type)
    if it is None:
        return None
    for o in it.offerings:
        if (
            o.zone == zone
            and o.capacity_type == capacity_type
            and (not reservation_id or o.reservation_id == reservation_id)
        ):
            return o.price_overlay or None
    return None
