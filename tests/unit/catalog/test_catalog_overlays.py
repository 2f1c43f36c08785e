"""Catalog lookups, the unavailable-offerings overlay, reserved capacity and the bare metal rule."""

from __future__ import annotations

import pytest

from nodewright.catalog import (
    ON_DEMAND,
    RESERVED,
    SPOT,
    CapacityReservation,
    Catalog,
    SnapshotSource,
    available_offerings,
    cheapest_price,
    filter_exotic,
    offering_matches,
)
from nodewright.model.requirements import Operator, Requirement, Requirements


def req(key: str, op: Operator, *values: str) -> Requirements:
    return Requirements.of([Requirement(key, op, values)])


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(SnapshotSource().instance_types())


def test_lookup(catalog: Catalog) -> None:
    assert catalog["m5.large"].vcpu == 2
    assert catalog.get("nope.large") is None
    assert "c6g.xlarge" in catalog and "nope" not in catalog
    assert [it.name for it in catalog] == sorted(it.name for it in catalog)
    assert len(catalog) == len(catalog.instance_types)


def test_with_unavailable_marks_only_named_offerings(catalog: Catalog) -> None:
    overlay = catalog.with_unavailable({("m5.large", "us-east-1a", SPOT), ("unknown.type", "us-east-1a", SPOT)})
    marked = {(o.zone, o.capacity_type): o.available for o in overlay["m5.large"].offerings}
    assert marked[("us-east-1a", SPOT)] is False
    assert marked[("us-east-1a", ON_DEMAND)] is True
    assert marked[("us-east-1b", SPOT)] is True
    # the original catalog is untouched; other types are shared, not copied
    assert all(o.available for o in catalog["m5.large"].offerings)
    assert overlay["c5.large"] is catalog["c5.large"]
    assert overlay["m5.large"].labels == catalog["m5.large"].labels
    assert catalog.with_unavailable(set()) is catalog
    # the refused offering is no longer a candidate
    zones_spot = req("karpenter.sh/capacity-type", Operator.IN, SPOT).intersect(
        req("topology.kubernetes.io/zone", Operator.IN, "us-east-1a")
    )
    assert available_offerings(catalog["m5.large"], zones_spot)
    assert available_offerings(overlay["m5.large"], zones_spot) == []
    assert "m5.large" not in {it.name for it in overlay.compatible(zones_spot)}


def test_reserved_offerings(catalog: Catalog) -> None:
    reservations = [
        CapacityReservation("cr-free", "m5.large", "us-east-1b", 3),
        CapacityReservation("cr-full", "m5.large", "us-east-1c", 0),
        CapacityReservation("cr-wrongzone", "m5.large", "us-east-1e", 5),  # m5.large is not offered in 1e
        CapacityReservation("cr-unknown", "zz.large", "us-east-1a", 1),
    ]
    overlay = catalog.with_reservations(reservations)
    reserved = {o.reservation_id: o for o in overlay["m5.large"].offerings if o.capacity_type == RESERVED}
    assert set(reserved) == {"cr-free", "cr-full", "cr-wrongzone"}
    assert reserved["cr-free"].price == pytest.approx(0.096 / 10_000_000)
    assert reserved["cr-free"].available and reserved["cr-free"].reservation_capacity == 3
    assert reserved["cr-free"].zone_id == "use1-az1"
    assert not reserved["cr-full"].available
    assert not reserved["cr-wrongzone"].available
    # reserved capacity is tried first: it is the cheapest available offering
    assert available_offerings(overlay["m5.large"])[0].reservation_id == "cr-free"
    assert cheapest_price(overlay["m5.large"]) == pytest.approx(0.096 / 10_000_000)
    # re-applying replaces rather than duplicates
    again = overlay.with_reservations([CapacityReservation("cr-free", "m5.large", "us-east-1b", 1)])
    assert [o.reservation_capacity for o in again["m5.large"].offerings if o.capacity_type == RESERVED] == [1]
    # only pods that accept reserved capacity (or this reservation id) match it
    only_od = req("karpenter.sh/capacity-type", Operator.IN, ON_DEMAND)
    assert not offering_matches(reserved["cr-free"], only_od)
    by_id = req("karpenter.k8s.aws/capacity-reservation-id", Operator.IN, "cr-free")
    assert offering_matches(reserved["cr-free"], by_id)
    assert not any(offering_matches(o, by_id) for o in catalog["m5.large"].offerings)


def test_unavailable_overlay_applies_to_reserved(catalog: Catalog) -> None:
    overlay = catalog.with_reservations([CapacityReservation("cr-1", "m5.large", "us-east-1b", 2)])
    refused = overlay.with_unavailable({("m5.large", "us-east-1b", RESERVED)})
    assert not any(o.available for o in refused["m5.large"].offerings if o.capacity_type == RESERVED)


def test_bare_metal_excluded_unless_required(catalog: Catalog) -> None:
    family = req("karpenter.k8s.aws/instance-family", Operator.IN, "c5")
    c5 = catalog.compatible(family)
    assert "c5.metal" in {it.name for it in c5}
    chosen = filter_exotic(c5, family)
    assert chosen and "c5.metal" not in {it.name for it in chosen}
    # a requirement that only metal satisfies keeps metal
    metal = family.intersect(req("karpenter.k8s.aws/instance-size", Operator.IN, "metal"))
    assert [it.name for it in filter_exotic(c5, metal)] == ["c5.metal"]
    assert [it.name for it in filter_exotic(catalog.compatible(metal))] == ["c5.metal"]


def test_accelerated_types_only_when_nothing_else_fits(catalog: Catalog) -> None:
    mixed = [catalog["m5.large"], catalog["g5.xlarge"], catalog["inf2.xlarge"]]
    assert [it.name for it in filter_exotic(mixed)] == ["m5.large"]
    # e.g. a pod requesting nvidia.com/gpu: only GPU types fit, and they stay
    gpus_only = [catalog["g5.xlarge"], catalog["p4d.24xlarge"]]
    assert filter_exotic(gpus_only) == gpus_only
    assert filter_exotic([]) == []


def test_compatible_filters_labels_and_offerings(catalog: Catalog) -> None:
    arm_1f = req("kubernetes.io/arch", Operator.IN, "arm64").intersect(
        req("topology.kubernetes.io/zone", Operator.IN, "us-east-1f")
    )
    names = {it.name for it in catalog.compatible(arm_1f)}
    assert "c6g.xlarge" in names
    for name in names:
        it = catalog[name]
        assert it.architecture == "arm64"
        assert any(o.zone == "us-east-1f" for o in it.offerings)
    # us-east-1e is an old zone: no Graviton type is offered there
    arm_1e = req("kubernetes.io/arch", Operator.IN, "arm64").intersect(
        req("topology.kubernetes.io/zone", Operator.IN, "us-east-1e")
    )
    assert catalog.compatible(arm_1e) == []
    big = req("karpenter.k8s.aws/instance-cpu", Operator.GT, "64")
    assert catalog.compatible(big) and all(it.vcpu > 64 for it in catalog.compatible(big))


def test_type_matches_ignores_node_and_offering_keys(catalog: Catalog) -> None:
    from nodewright.catalog import type_matches

    it = catalog["m5.large"]
    pool = Requirements.from_labels({"karpenter.sh/nodepool": "default", "team": "a"})
    assert type_matches(it, pool)  # nodepool and custom labels come from the NodePool, not the type
    assert type_matches(it, req("topology.kubernetes.io/zone", Operator.IN, "us-east-1a"))
    assert not type_matches(it, req("karpenter.k8s.aws/instance-gpu-name", Operator.IN, "a100"))
    assert type_matches(it, req("karpenter.k8s.aws/instance-gpu-name", Operator.DOES_NOT_EXIST))
    assert not type_matches(it, req("kubernetes.io/arch", Operator.IN, "arm64"))
    assert [t.name for t in filter_exotic([it], pool)] == ["m5.large"]
