"""The offline instance catalog: a gzip JSON snapshot shipped in the package, and its loader.

`scripts/gen_catalog.py` writes `catalog/data/<region>.json.gz` from real data (the EC2 instance type
and per-zone offering data that moto ships, and the on-demand price table in `shared/data`); spot
prices in it are the deterministic estimate described in `catalog.pricing`. The snapshot serves the
simulator, the benchmark and, in the Lambdas, as the fallback when the EC2 or Pricing API fails.

File shape (version 1), kept compact because it is read on every Lambda cold start:

    {"version": 1, "region": "us-east-1", "zones": ["us-east-1a", ...], "zone_ids": {"us-east-1a": "use1-az6"},
     "sources": {...}, "spot_rule": "...",
     "types": [{"n": name, "c": vcpu, "m": MiB, "a": arch, "e": ENIs, "i": IPv4/ENI, "od": USD/h,
                "z": [zone index, ...], "s": [spot USD/h per zone in "z", absent: no spot],
                optional: "h" hypervisor (default nitro), "bm" bare metal, "g"/"x" GPUs/accelerators as
                [name, manufacturer, count, MiB, cores], "nv" NVMe GB, "ev" EBS volume limit,
                "nb"/"eb" network/EBS Mbps, "cm" CPU manufacturer, "ck" MHz, "et" encryption in
                transit, "ef" EFA supported, "en" EFA interfaces}]}

Every field the loader needs is in the file; family, category, generation, size and labels are derived
from the name and facts on load, so they cannot drift from `catalog.labels`.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from nodewright.catalog.labels import split_name, well_known_labels
from nodewright.catalog.types import GPU, ON_DEMAND, SPOT, InstanceType, Offering

VERSION = 1
DEFAULT_REGION = "us-east-1"


class SnapshotError(ValueError):
    """The snapshot file is missing or not in the expected shape."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A loaded snapshot: the region, its zones (with zone ids) and every instance type with offerings."""

    region: str
    zones: tuple[str, ...]
    zone_ids: Mapping[str, str]
    instance_types: tuple[InstanceType, ...]

    def on_demand_prices(self) -> dict[str, float]:
        """Instance type -> on-demand USD/hour, from the first on-demand offering of each type."""
        out: dict[str, float] = {}
        for it in self.instance_types:
            for offering in it.offerings:
                if offering.capacity_type == ON_DEMAND:
                    out[it.name] = offering.price
                    break
        return out

    def spot_prices(self) -> dict[tuple[str, str], float]:
        """(instance type, zone) -> estimated spot USD/hour."""
        return {
            (it.name, o.zone): o.price for it in self.instance_types for o in it.offerings if o.capacity_type == SPOT
        }


def _devices(raw: Sequence[Sequence[Any]]) -> tuple[GPU, ...]:
    return tuple(GPU(str(d[0]), str(d[1]), int(d[2]), int(d[3]), int(d[4]) if len(d) > 4 else 0) for d in raw)


def _decode_type(
    record: Mapping[str, Any], zones: Sequence[str], zone_ids: Mapping[str, str], region: str
) -> InstanceType:
    name = record["n"]
    family, size, category, generation = split_name(name)
    on_demand = float(record["od"])
    zone_indexes = record["z"]
    spot = record.get("s")
    offerings: list[Offering] = []
    for position, index in enumerate(zone_indexes):
        zone = zones[index]
        zone_id = zone_ids.get(zone, "")
        if spot is not None:
            offerings.append(Offering(zone, SPOT, float(spot[position]), True, "", 0, zone_id))
        offerings.append(Offering(zone, ON_DEMAND, on_demand, True, "", 0, zone_id))
    it = InstanceType(
        name=name,
        family=family,
        category=category,
        generation=generation or 0,
        size=size,
        vcpu=record["c"],
        memory_mib=record["m"],
        architecture=record["a"],
        enis=record["e"],
        ipv4_per_eni=record["i"],
        hypervisor=record.get("h", "nitro"),
        bare_metal=bool(record.get("bm", 0)),
        gpus=_devices(record.get("g", ())),
        accelerators=_devices(record.get("x", ())),
        local_nvme_gib=record.get("nv", 0),
        ebs_volume_limit=record.get("ev", 27),
        network_bandwidth_mbps=record.get("nb", 0),
        ebs_bandwidth_mbps=record.get("eb", 0),
        cpu_manufacturer=record.get("cm", ""),
        encryption_in_transit=bool(record.get("et", 0)),
        efa_supported=bool(record.get("ef", 0)),
        efa_interfaces=record.get("en", 0),
        cpu_clock_mhz=record.get("ck", 0),
        offerings=tuple(offerings),
    )
    # The instance is frozen; labels are derived from it, so they are set once, right after creation,
    # instead of building the whole object twice (this loop runs ~1,300 times per cold start).
    object.__setattr__(it, "labels", well_known_labels(it, region))
    return it


def decode(document: Mapping[str, Any]) -> Snapshot:
    """Build a Snapshot from the parsed JSON document. Raises SnapshotError on another version/shape."""
    if document.get("version") != VERSION:
        raise SnapshotError(f"snapshot version {document.get('version')!r} is not {VERSION}")
    try:
        region = str(document["region"])
        zones = tuple(document["zones"])
        zone_ids = dict(document.get("zone_ids", {}))
        types = tuple(_decode_type(r, zones, zone_ids, region) for r in document["types"])
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise SnapshotError(f"snapshot is malformed: {error!r}") from error
    return Snapshot(region, zones, zone_ids, types)


def _device_record(devices: Iterable[GPU]) -> list[list[Any]]:
    return [[d.name, d.manufacturer, d.count, d.memory_mib, d.cores] for d in devices]


def encode_type(it: InstanceType, zone_index: Mapping[str, int]) -> dict[str, Any]:
    """The compact record of one instance type (its facts and its on-demand and spot offerings).

    Requires at least one on-demand offering; spot offerings, when present, must cover the same zones.
    """
    on_demand = sorted((o for o in it.offerings if o.capacity_type == ON_DEMAND), key=lambda o: zone_index[o.zone])
    if not on_demand:
        raise SnapshotError(f"{it.name}: no on-demand offering")
    spot_by_zone = {o.zone: o.price for o in it.offerings if o.capacity_type == SPOT}
    record: dict[str, Any] = {
        "n": it.name,
        "c": it.vcpu,
        "m": it.memory_mib,
        "a": it.architecture,
        "e": it.enis,
        "i": it.ipv4_per_eni,
        "od": on_demand[0].price,
        "z": [zone_index[o.zone] for o in on_demand],
    }
    if spot_by_zone:
        record["s"] = [spot_by_zone[o.zone] for o in on_demand]
    optional: dict[str, Any] = {
        "h": it.hypervisor if it.hypervisor != "nitro" else None,
        "bm": 1 if it.bare_metal else None,
        "g": _device_record(it.gpus) or None,
        "x": _device_record(it.accelerators) or None,
        "nv": it.local_nvme_gib or None,
        "ev": it.ebs_volume_limit if it.ebs_volume_limit != 27 else None,
        "nb": it.network_bandwidth_mbps or None,
        "eb": it.ebs_bandwidth_mbps or None,
        "cm": it.cpu_manufacturer or None,
        "ck": it.cpu_clock_mhz or None,
        "et": 1 if it.encryption_in_transit else None,
        "ef": 1 if it.efa_supported else None,
        "en": it.efa_interfaces or None,
    }
    record.update({k: v for k, v in optional.items() if v is not None})
    return record


def encode(
    region: str, zones: Sequence[str], zone_ids: Mapping[str, str], instance_types: Iterable[InstanceType], **meta: Any
) -> bytes:
    """Serialize a snapshot to gzip JSON bytes (deterministic: sorted types, fixed gzip mtime)."""
    zone_index = {zone: i for i, zone in enumerate(zones)}
    document: dict[str, Any] = {
        "version": VERSION,
        "region": region,
        "zones": list(zones),
        "zone_ids": dict(zone_ids),
        **meta,
        "types": [encode_type(it, zone_index) for it in sorted(instance_types, key=lambda t: t.name)],
    }
    text = json.dumps(document, separators=(",", ":"), sort_keys=False)
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def read(data: bytes) -> Snapshot:
    """Parse gzip JSON bytes written by `encode`."""
    try:
        document = json.loads(gzip.decompress(data))
    except (OSError, ValueError) as error:
        raise SnapshotError(f"snapshot is not gzip JSON: {error}") from error
    return decode(document)


_loaded: dict[str, Snapshot] = {}


def load(region: str = DEFAULT_REGION) -> Snapshot:
    """The snapshot shipped for `region`, loaded once per process and then shared (it is immutable).

    Raises SnapshotError when no snapshot ships for the region.
    """
    cached = _loaded.get(region)
    if cached is not None:
        return cached
    resource = resources.files("nodewright.catalog").joinpath("data", f"{region}.json.gz")
    try:
        data = resource.read_bytes()
    except FileNotFoundError as error:
        raise SnapshotError(f"no instance catalog snapshot ships for region {region!r}") from error
    snapshot = read(data)
    _loaded[region] = snapshot
    return snapshot


class SnapshotSource:
    """InstanceTypeSource backed by the shipped snapshot (offline simulation, fallback for the live source)."""

    def __init__(self, region: str = DEFAULT_REGION, snapshot: Snapshot | None = None) -> None:
        self._region = region
        self._snapshot = snapshot

    @property
    def snapshot(self) -> Snapshot:
        """The loaded snapshot (loaded on first use)."""
        if self._snapshot is None:
            self._snapshot = load(self._region)
        return self._snapshot

    def instance_types(self) -> Sequence[InstanceType]:
        """Every instance type in the snapshot with its spot and on-demand offerings per zone."""
        return self.snapshot.instance_types
