"""Generate the offline instance catalog snapshot (layers/core/python/nodewright/catalog/data/<region>.json.gz).

Sources (all real data, no network):
- EC2 instance type descriptions and per-availability-zone offerings shipped inside the installed moto
  package (moto/ec2/resources/instance_types.json.gz and instance_type_offerings/availability-zone/);
- on-demand Linux prices, USD/hour, from scripts/data/ec2-on-demand-prices-<region>.json (or --prices);
- zone ids (us-east-1a -> use1-az6) from moto's region table.

Kept: types with an amd64/arm64 architecture, offered in at least one zone of the region, with an
on-demand price. Spot prices are estimated with `nodewright.catalog.pricing.estimated_spot_price` for
types whose SupportedUsageClasses include spot. Dropped types are counted and printed, never silently.

Usage: .venv/bin/python scripts/gen_catalog.py [--region us-east-1] [--prices FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from nodewright.catalog import pricing, snapshot
from nodewright.catalog.ec2_info import instance_type_from_ec2
from nodewright.catalog.labels import split_name
from nodewright.catalog.types import ON_DEMAND, SPOT, InstanceType, Offering

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO / "layers/core/python/nodewright/catalog/data"


def _moto_resources() -> Path:
    import moto.ec2  # the generator runs in the dev venv, where moto is installed

    return Path(moto.ec2.__file__).parent / "resources"


def _zone_ids(region: str) -> dict[str, str]:
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

    return {zone.name: zone.zone_id for zone in RegionsAndZonesBackend.zones.get(region, [])}


def build(region: str, prices_path: Path) -> tuple[list[InstanceType], list[str], dict[str, str], Counter[str]]:
    """The snapshot content: instance types with offerings, the zones, zone ids, and why types were dropped."""
    root = _moto_resources()
    infos: dict[str, dict[str, Any]] = json.loads(gzip.decompress((root / "instance_types.json.gz").read_bytes()))
    offerings_raw = json.loads(
        gzip.decompress((root / "instance_type_offerings/availability-zone" / f"{region}.json.gz").read_bytes())
    )
    prices: dict[str, float] = json.loads(prices_path.read_text())
    zones_by_type: dict[str, set[str]] = defaultdict(set)
    for item in offerings_raw:
        zones_by_type[item["InstanceType"]].add(item["Location"])
    zones = sorted({z for zs in zones_by_type.values() for z in zs})
    zone_ids = {z: i for z, i in _zone_ids(region).items() if z in zones}
    dropped: Counter[str] = Counter()
    out: list[InstanceType] = []
    for name in sorted(zones_by_type):
        info = infos.get(name)
        if info is None:
            dropped["no instance type description"] += 1
            continue
        usage = set(info.get("SupportedUsageClasses", ()))
        if name not in prices:
            dropped["no on-demand price"] += 1
            continue
        if ON_DEMAND not in usage:
            dropped["not sold on-demand"] += 1
            continue
        category = split_name(name)[2]
        offerings: list[Offering] = []
        for zone in sorted(zones_by_type[name]):
            zone_id = zone_ids.get(zone, "")
            if SPOT in usage:
                spot = pricing.estimated_spot_price(name, category, zone, prices[name])
                offerings.append(Offering(zone, SPOT, spot, zone_id=zone_id))
            offerings.append(Offering(zone, ON_DEMAND, prices[name], zone_id=zone_id))
        it = instance_type_from_ec2(info, offerings, region)
        if it is None:
            dropped["architecture not amd64/arm64 (mac, i386)"] += 1
            continue
        out.append(it)
    return out, zones, zone_ids, dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--prices", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    prices = args.prices or REPO / "scripts" / "data" / f"ec2-on-demand-prices-{args.region}.json"
    out_path = args.out or DEFAULT_OUT_DIR / f"{args.region}.json.gz"
    types, zones, zone_ids, dropped = build(args.region, prices)
    import moto

    data = snapshot.encode(
        args.region,
        zones,
        zone_ids,
        types,
        sources={
            "instance_types": f"moto {moto.__version__} ec2/resources/instance_types.json.gz",
            "offerings": f"moto {moto.__version__} ec2/resources/instance_type_offerings/availability-zone",
            "on_demand_prices": prices.name,
        },
        spot_rule="estimated: on-demand x (1 - category discount) x (1 + per type/zone hash variation); "
        "see nodewright.catalog.pricing",
    )
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_bytes(data)
    offerings = sum(len(t.offerings) for t in types)
    print(f"wrote {out_path}: {len(data)} bytes, {len(types)} types, {offerings} offerings")
    print(f"zones: {', '.join(zones)}")
    for reason, count in sorted(dropped.items()):
        print(f"dropped {count}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
