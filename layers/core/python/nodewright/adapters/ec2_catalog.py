"""Live instance catalog: EC2 DescribeInstanceTypes / DescribeInstanceTypeOfferings, the Pricing API and
DescribeSpotPriceHistory, behind the same `InstanceTypeSource` interface as the offline snapshot.

Fallbacks, each logged as a warning, never silent:
- DescribeInstanceTypes or DescribeInstanceTypeOfferings fails: the whole snapshot is returned.
- The Pricing API fails, or has no price for a type: the snapshot's on-demand price for that type.
- DescribeSpotPriceHistory fails, or has no price for a (type, zone): the snapshot's spot price for it,
  else the offline estimate from the on-demand price (`catalog.pricing.estimated_spot_price`).
- A type with no on-demand price anywhere is left out (it cannot be ranked); the count is logged.

The Pricing API is global with endpoints in a few regions; it is always called in us-east-1 and
filtered by `regionCode`. Filters select what EKS nodes run: Linux, shared tenancy, no pre-installed
software, capacity status Used (not reservation placeholder SKUs).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from nodewright.catalog.ec2_info import instance_type_from_ec2
from nodewright.catalog.labels import split_name
from nodewright.catalog.pricing import estimated_spot_price
from nodewright.catalog.refreshing import RefreshingCatalog
from nodewright.catalog.snapshot import SnapshotError, SnapshotSource
from nodewright.catalog.types import ON_DEMAND, SPOT, InstanceType, InstanceTypeSource, Offering

log = logging.getLogger(__name__)

PRICING_REGION = "us-east-1"
PRICES_TTL = 12 * 3600.0
T = TypeVar("T")
PRICING_FILTERS = (
    ("tenancy", "Shared"),
    ("operatingSystem", "Linux"),
    ("preInstalledSw", "NA"),
    ("capacitystatus", "Used"),
)


def parse_price_list(price_list: Iterable[str | Mapping[str, Any]]) -> dict[str, float]:
    """Instance type -> on-demand USD/hour from Pricing API GetProducts `PriceList` items.

    Each item is a JSON document (string, as the API returns it, or already parsed) with
    `product.attributes.instanceType` and `terms.OnDemand.<term>.priceDimensions.<dim>.pricePerUnit.USD`.
    Items without an instance type or a positive USD hourly price are skipped. When one type has several
    SKUs the lowest price wins, so the result does not depend on the order pages arrive in.
    """
    out: dict[str, float] = {}
    for raw in price_list:
        item = json.loads(raw) if isinstance(raw, str) else raw
        name = item.get("product", {}).get("attributes", {}).get("instanceType")
        if not name:
            continue
        for term in item.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                if dimension.get("unit", "Hrs") not in ("Hrs", "Hours"):
                    continue
                try:
                    price = float(dimension.get("pricePerUnit", {}).get("USD", "0"))
                except ValueError:
                    continue
                if price > 0 and (name not in out or price < out[name]):
                    out[name] = price
    return out


def latest_spot_prices(history: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """(instance type, zone) -> the most recent spot price among DescribeSpotPriceHistory items.

    Items without a SpotPrice (moto returns offerings only) or a zone are skipped.
    """
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    epoch = datetime.min.replace(tzinfo=UTC)
    for item in history:
        name, zone, price = item.get("InstanceType"), item.get("AvailabilityZone"), item.get("SpotPrice")
        if not name or not zone or price is None:
            continue
        try:
            value = float(price)
        except ValueError:
            continue
        stamp = item.get("Timestamp") or epoch
        if isinstance(stamp, datetime) and stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        key = (str(name), str(zone))
        if key not in latest or stamp > latest[key][0]:
            latest[key] = (stamp, value)
    return {key: value for key, (_, value) in latest.items()}


class LiveSource:
    """InstanceTypeSource backed by EC2 and the Pricing API, falling back to the shipped snapshot.

    Clients are passed in (boto3 clients for `ec2` in the cluster's region and `pricing` in us-east-1),
    so tests and the local world choose the endpoint. The result is computed once and reused until
    `invalidate()`; a warm Lambda keeps it (`catalog.refreshing` invalidates it every 5 minutes, Karpenter's
    TTL for instance types and offerings). Prices are kept apart for `PRICES_TTL` (12 hours: Karpenter's
    pricing controller refreshes them that often), so a refresh of the offerings does not read every price
    list again. Prices that fell back (an API failed) are not kept: the next refresh asks again.
    """

    def __init__(
        self,
        region: str,
        ec2: Any,
        pricing: Any | None = None,
        fallback: SnapshotSource | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._region = region
        self._ec2 = ec2
        self._pricing = pricing
        self._fallback = fallback or SnapshotSource(region)
        self._now = now or (lambda: datetime.now(UTC))
        self._cached: tuple[InstanceType, ...] | None = None
        self._on_demand: tuple[datetime, dict[str, float]] | None = None  # (when read, prices)
        self._spot: tuple[datetime, dict[tuple[str, str], float]] | None = None
        self.warnings: list[str] = []  # what fell back during the last refresh, for logs and tests

    def invalidate(self) -> None:
        """Forget the cached instance types and offerings; the next call asks EC2 again (prices under
        `PRICES_TTL` old are kept)."""
        self._cached = None

    def _fresh(self, kept: tuple[datetime, T] | None) -> T | None:
        if kept is None or (self._now() - kept[0]).total_seconds() >= PRICES_TTL:
            return None
        return kept[1]

    def instance_types(self) -> Sequence[InstanceType]:
        """Every instance type in the region with offerings per zone and capacity type (cached)."""
        if self._cached is None:
            self._cached = tuple(self._build())
        return self._cached

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning(message)

    def _snapshot_types(self) -> list[InstanceType]:
        try:
            return list(self._fallback.instance_types())
        except SnapshotError as error:
            self._warn(f"instance catalog snapshot unavailable: {error}")
            return []

    def _build(self) -> list[InstanceType]:
        self.warnings = []
        try:
            infos = self._describe_instance_types()
            zones_by_type = self._describe_offerings()
        except Exception as error:  # any AWS or network failure: the snapshot keeps scheduling possible
            self._warn(f"EC2 instance type discovery failed ({error!r}); using the offline snapshot")
            return self._snapshot_types()
        zone_ids = self._zone_ids()
        snapshot_types = {it.name: it for it in self._snapshot_types()}
        on_demand = self._fresh(self._on_demand)
        if on_demand is None:
            on_demand = self._on_demand_prices()
            self._on_demand = (self._now(), on_demand) if on_demand else None
        spot = self._fresh(self._spot)
        if spot is None:
            spot = self._spot_prices()
            self._spot = (self._now(), spot) if spot else None
        wanted = set(zones_by_type)
        spot = {key: price for key, price in spot.items() if key[0] in wanted}
        out: list[InstanceType] = []
        missing_price = 0
        fallback_on_demand = 0
        fallback_spot = 0
        for name in sorted(zones_by_type):
            info = infos.get(name)
            if info is None:
                continue
            known = snapshot_types.get(name)
            od_price = on_demand.get(name)
            if od_price is None and known is not None:
                od_price = next((o.price for o in known.offerings if o.capacity_type == ON_DEMAND), None)
                fallback_on_demand += od_price is not None
            if od_price is None:
                missing_price += 1
                continue
            usage = set(info.get("SupportedUsageClasses", (ON_DEMAND,)))
            known_spot = {o.zone: o.price for o in known.offerings if o.capacity_type == SPOT} if known else {}
            category = split_name(name)[2]
            offerings: list[Offering] = []
            for zone in sorted(zones_by_type[name]):
                zone_id = zone_ids.get(zone, "")
                if SPOT in usage:
                    price = spot.get((name, zone))
                    if price is None:
                        fallback_spot += 1
                        price = known_spot.get(zone)
                        if price is None:
                            price = estimated_spot_price(name, category, zone, od_price)
                    offerings.append(Offering(zone, SPOT, price, zone_id=zone_id))
                if ON_DEMAND in usage:
                    offerings.append(Offering(zone, ON_DEMAND, od_price, zone_id=zone_id))
            it = instance_type_from_ec2(info, offerings, self._region)
            if it is not None and offerings:
                out.append(it)
        if fallback_on_demand:
            self._warn(f"{fallback_on_demand} instance types use the snapshot's on-demand price")
        if fallback_spot:
            self._warn(f"{fallback_spot} spot offerings use the snapshot's or the estimated spot price")
        if missing_price:
            self._warn(f"{missing_price} instance types have no on-demand price and are left out")
        return out

    def _describe_instance_types(self) -> dict[str, Mapping[str, Any]]:
        infos: dict[str, Mapping[str, Any]] = {}
        for page in self._ec2.get_paginator("describe_instance_types").paginate():
            for info in page.get("InstanceTypes", ()):
                infos[info["InstanceType"]] = info
        return infos

    def _describe_offerings(self) -> dict[str, set[str]]:
        zones: dict[str, set[str]] = {}
        paginator = self._ec2.get_paginator("describe_instance_type_offerings")
        for page in paginator.paginate(LocationType="availability-zone"):
            for offering in page.get("InstanceTypeOfferings", ()):
                zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        return zones

    def _zone_ids(self) -> dict[str, str]:
        try:
            response = self._ec2.describe_availability_zones()
        except Exception as error:  # zone ids are a nicety; their absence only drops one label
            self._warn(f"DescribeAvailabilityZones failed ({error!r}); offerings carry no zone id")
            return {}
        return {z["ZoneName"]: z.get("ZoneId", "") for z in response.get("AvailabilityZones", ())}

    def _on_demand_prices(self) -> dict[str, float]:
        if self._pricing is None:
            self._warn("no Pricing API client; using the snapshot's on-demand prices")
            return {}
        filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": self._region}]
        filters += [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in PRICING_FILTERS]
        try:
            items: list[str] = []
            for page in self._pricing.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters):
                items.extend(page.get("PriceList", ()))
        except Exception as error:  # the Pricing API is only in a few regions and may be unreachable
            self._warn(f"Pricing API failed ({error!r}); using the snapshot's on-demand prices")
            return {}
        return parse_price_list(items)

    def _spot_prices(self) -> dict[tuple[str, str], float]:
        try:
            history: list[Mapping[str, Any]] = []
            # StartTime = now asks EC2 for the price in effect now: one entry per (type, zone).
            pages = self._ec2.get_paginator("describe_spot_price_history").paginate(
                ProductDescriptions=["Linux/UNIX"], StartTime=self._now()
            )
            for page in pages:
                history.extend(page.get("SpotPriceHistory", ()))
        except Exception as error:
            self._warn(f"DescribeSpotPriceHistory failed ({error!r}); using snapshot or estimated spot prices")
            return {}
        return latest_spot_prices(history)


def live_source(region: str, ec2: Any, session: Any | None = None) -> LiveSource:
    """A LiveSource on `ec2`, the function's EC2 client in `region` (shared with the launcher, so a cold
    container builds one), and a Pricing client in us-east-1 from `session` (endpoints from the usual
    boto3 configuration, so AWS_ENDPOINT_URL points both at a local moto server)."""
    import boto3

    session = session or boto3.session.Session()
    return LiveSource(region, ec2=ec2, pricing=session.client("pricing", region_name=PRICING_REGION))


def kept_catalog(mode: str, region: str, ec2: Any, session: Any | None = None) -> RefreshingCatalog:
    """The catalog a function keeps for its container's life: the offline snapshot (`mode` "snapshot") or the
    live source (`live_source`), asked again with Karpenter's TTLs (`catalog.refreshing`: types and offerings
    every 5 minutes, the live source's prices every 12 hours)."""
    source: InstanceTypeSource = SnapshotSource(region) if mode == "snapshot" else live_source(region, ec2, session)
    return RefreshingCatalog(source, time.monotonic)
