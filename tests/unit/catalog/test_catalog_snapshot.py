"""The shipped snapshot: loads fast, holds the expected facts, prices follow the documented rules."""

from __future__ import annotations

import gzip
from importlib import resources

import pytest

from nodewright.catalog import ON_DEMAND, SPOT, SnapshotError, SnapshotSource, snapshot
from nodewright.catalog.pricing import estimated_spot_price, spot_discount, zone_variation
from nodewright.catalog.types import InstanceTypeSource


@pytest.fixture(scope="module")
def snap() -> snapshot.Snapshot:
    return snapshot.load("us-east-1")


def test_snapshot_source_is_an_instance_type_source(snap: snapshot.Snapshot) -> None:
    source: InstanceTypeSource = SnapshotSource(snapshot=snap)
    assert source.instance_types() is snap.instance_types
    assert snapshot.load("us-east-1") is snap  # loaded once per process


def test_size_and_zones(snap: snapshot.Snapshot) -> None:
    assert len(snap.instance_types) > 1000
    assert snap.zones == ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f")
    assert snap.zone_ids["us-east-1a"] == "use1-az6"
    names = [it.name for it in snap.instance_types]
    assert names == sorted(names) and len(set(names)) == len(names)


def test_m5_large_facts(snap: snapshot.Snapshot) -> None:
    it = next(t for t in snap.instance_types if t.name == "m5.large")
    assert (it.vcpu, it.memory_mib, it.enis, it.ipv4_per_eni, it.architecture) == (2, 8192, 3, 10, "amd64")
    assert it.enis * (it.ipv4_per_eni - 1) + 2 == 29
    on_demand = {o.zone: o.price for o in it.offerings if o.capacity_type == ON_DEMAND}
    spot = {o.zone: o.price for o in it.offerings if o.capacity_type == SPOT}
    assert set(on_demand) == set(spot) and "us-east-1a" in on_demand
    assert set(on_demand.values()) == {0.096}  # USD/h, Linux, us-east-1
    for zone, price in spot.items():
        assert price == estimated_spot_price("m5.large", "m", zone, 0.096)
    assert all(o.zone_id.startswith("use1-az") for o in it.offerings)


def test_types_not_sold_as_spot_have_no_spot_offering(snap: snapshot.Snapshot) -> None:
    # u-*tb1 high-memory types are on-demand only in EC2's SupportedUsageClasses
    high_memory = [it for it in snap.instance_types if it.name.startswith("u-")]
    assert high_memory
    assert all(o.capacity_type == ON_DEMAND for it in high_memory for o in it.offerings)


def test_invariants_over_every_type(snap: snapshot.Snapshot) -> None:
    zones = set(snap.zones)
    for it in snap.instance_types:
        assert it.offerings, it.name
        assert it.labels, it.name
        on_demand = [o.price for o in it.offerings if o.capacity_type == ON_DEMAND]
        assert on_demand and len(set(on_demand)) == 1 and on_demand[0] > 0, it.name
        for o in it.offerings:
            assert o.zone in zones and o.available
            if o.capacity_type == SPOT:
                assert 0 < o.price <= on_demand[0], it.name


def test_bare_metal_and_gpus_present(snap: snapshot.Snapshot) -> None:
    assert any(it.bare_metal for it in snap.instance_types)
    p4d = next(t for t in snap.instance_types if t.name == "p4d.24xlarge")
    assert p4d.gpu_count == 8 and p4d.gpus[0].name == "A100" and p4d.efa_interfaces == 4


def test_encode_read_round_trip(snap: snapshot.Snapshot) -> None:
    data = snapshot.encode(snap.region, snap.zones, snap.zone_ids, snap.instance_types)
    again = snapshot.read(data)
    assert again.instance_types == snap.instance_types
    assert snapshot.encode(again.region, again.zones, again.zone_ids, again.instance_types) == data


def test_the_shipped_snapshot_stays_small_and_reads() -> None:
    # Its load time is part of the cold start, which `python -m tests.bench.coldstart` measures; a timed
    # assertion here would only fail on a busy machine.
    data = resources.files("nodewright.catalog").joinpath("data", "us-east-1.json.gz").read_bytes()
    assert len(data) < 200_000
    assert len(snapshot.read(data).instance_types) > 1000


def test_errors_name_the_problem() -> None:
    with pytest.raises(SnapshotError, match="version"):
        snapshot.decode({"version": 99})
    with pytest.raises(SnapshotError, match="malformed"):
        snapshot.decode({"version": 1, "region": "r", "zones": [], "types": [{"n": "x.large"}]})
    with pytest.raises(SnapshotError, match="gzip"):
        snapshot.read(b"not gzip")
    with pytest.raises(SnapshotError, match="eu-nowhere-1"):
        snapshot.load("eu-nowhere-1")
    with pytest.raises(SnapshotError, match="gzip"):
        snapshot.read(gzip.compress(b"{not json"))


def test_spot_estimate_rule() -> None:
    assert spot_discount("t") == 0.70
    assert spot_discount("p") == 0.45 and spot_discount("inf") == 0.45
    assert spot_discount("m") == 0.63
    variations = {zone_variation("m5.large", f"us-east-1{z}") for z in "abcdef"}
    assert len(variations) == 6 and all(-0.08 <= v < 0.08 for v in variations)
    assert zone_variation("m5.large", "us-east-1a") == zone_variation("m5.large", "us-east-1a")
    price = estimated_spot_price("m5.large", "m", "us-east-1a", 0.096)
    assert price == round(0.096 * 0.37 * (1 + zone_variation("m5.large", "us-east-1a")), 6)
