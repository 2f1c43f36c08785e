"""The live catalog adapter against moto's EC2 (DescribeInstanceTypes, offerings, spot price history).

moto has no Pricing API, so GetProducts is exercised with botocore's Stubber on a real `pricing` client,
fed responses in the shape the Pricing API returns (PriceList items are JSON strings). moto's spot price
history is a placeholder (0.00001 for every offering), so a recorded history replaces it where the test
needs real-looking prices and the per-zone snapshot fallback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from nodewright.adapters.ec2_catalog import LiveSource, latest_spot_prices, parse_price_list
from nodewright.catalog import ON_DEMAND, SPOT, Catalog, SnapshotSource, allocatable

REGION = "us-east-1"
NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def price_item(instance_type: str, usd: str, sku: str = "SKU1") -> str:
    """One GetProducts PriceList entry, in the API's shape (a JSON string)."""
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "sku": sku,
                "attributes": {
                    "instanceType": instance_type,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "regionCode": REGION,
                },
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "offerTermCode": "JRTCKXETXF",
                        "sku": sku,
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "pricePerUnit": {"USD": usd},
                                "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                            }
                        },
                    }
                }
            },
            "version": "20260701000000",
        }
    )


def stubbed_pricing(pages: list[list[str]]) -> tuple[Any, Stubber]:
    client = boto3.client("pricing", region_name="us-east-1")
    stubber = Stubber(client)
    for i, page in enumerate(pages):
        response: dict[str, Any] = {"PriceList": page, "FormatVersion": "aws_v1"}
        if i < len(pages) - 1:
            response["NextToken"] = f"page-{i + 1}"
        stubber.add_response(
            "get_products",
            response,
            {"ServiceCode": "AmazonEC2", "Filters": ANY, **({"NextToken": f"page-{i}"} if i else {})},
        )
    stubber.activate()
    return client, stubber


def test_parse_price_list_reads_the_api_shape() -> None:
    items = [
        price_item("m5.large", "0.0960000000"),
        price_item("c5.large", "0.085"),
        price_item("m5.large", "0.2", "SKU2"),
    ]
    items.append(json.dumps({"product": {"attributes": {}}, "terms": {}}))  # not an instance SKU
    items.append(price_item("x.zero", "0.0000000000"))  # placeholder SKUs carry 0
    assert parse_price_list(items) == {"m5.large": 0.096, "c5.large": 0.085}


def test_latest_spot_price_wins() -> None:
    history: list[dict[str, Any]] = [
        {
            "InstanceType": "m5.large",
            "AvailabilityZone": "us-east-1a",
            "SpotPrice": "0.040",
            "Timestamp": datetime(2026, 7, 1, 10, tzinfo=UTC),
        },
        {
            "InstanceType": "m5.large",
            "AvailabilityZone": "us-east-1a",
            "SpotPrice": "0.035",
            "Timestamp": datetime(2026, 7, 1, 11, tzinfo=UTC),
        },
        {
            "InstanceType": "m5.large",
            "AvailabilityZone": "us-east-1b",
            "SpotPrice": "0.030",
            "Timestamp": datetime(2026, 7, 1, 9, tzinfo=UTC),
        },
        {"InstanceType": "m5.large", "AvailabilityZone": "us-east-1c"},  # moto: offering without a price
    ]
    assert latest_spot_prices(history) == {("m5.large", "us-east-1a"): 0.035, ("m5.large", "us-east-1b"): 0.030}


def test_live_source_against_moto(ec2: Any) -> None:
    pricing, stubber = stubbed_pricing([[price_item("m5.large", "0.1")], [price_item("c6g.xlarge", "0.2")]])
    source = LiveSource(REGION, ec2, pricing, now=lambda: NOW)
    catalog = Catalog(source.instance_types())
    stubber.assert_no_pending_responses()  # both Pricing pages were read
    snapshot = Catalog(SnapshotSource(REGION).instance_types())
    assert len(catalog) > 1000

    m5 = catalog["m5.large"]
    assert (m5.vcpu, m5.memory_mib, m5.enis, m5.ipv4_per_eni) == (2, 8192, 3, 10)
    assert m5.labels["karpenter.k8s.aws/instance-family"] == "m5"
    assert allocatable(m5)["pods"] == 29
    zones = {o.zone for o in m5.offerings}
    assert zones == {o.zone for o in snapshot["m5.large"].offerings}
    assert all(o.zone_id.startswith("use1-az") for o in m5.offerings)
    # live on-demand price from the Pricing API (page 1 and page 2)
    assert {o.price for o in m5.offerings if o.capacity_type == ON_DEMAND} == {0.1}
    assert {o.price for o in catalog["c6g.xlarge"].offerings if o.capacity_type == ON_DEMAND} == {0.2}
    # no live price for c5.large: the snapshot's on-demand price
    assert {o.price for o in catalog["c5.large"].offerings if o.capacity_type == ON_DEMAND} == {
        o.price for o in snapshot["c5.large"].offerings if o.capacity_type == ON_DEMAND
    }
    # moto answers DescribeSpotPriceHistory with a placeholder 0.00001 for every offering; the adapter
    # takes what EC2 says (no moto special case), so every spot offering carries it
    live_spot = {o.zone: o.price for o in m5.offerings if o.capacity_type == SPOT}
    assert set(live_spot) == zones and set(live_spot.values()) == {0.00001}
    assert any("on-demand price" in w for w in source.warnings)
    # types without any on-demand price (mac, types newer than the price table) are left out, loudly
    assert "mac2.metal" not in catalog
    assert any("no on-demand price" in w for w in source.warnings)
    # cached: a second call does not ask AWS again (the stubber has no responses left)
    assert source.instance_types() is source.instance_types()


class _WithSpotHistory:
    """moto's EC2 client, except that DescribeSpotPriceHistory returns recorded prices (moto has none)."""

    def __init__(self, ec2: Any, history: list[dict[str, Any]]) -> None:
        self._ec2, self._history = ec2, history
        self.spot_calls: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)

    def get_paginator(self, name: str) -> Any:
        if name != "describe_spot_price_history":
            return self._ec2.get_paginator(name)
        outer = self

        class Paginator:
            def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
                outer.spot_calls.append(kwargs)
                yield {"SpotPriceHistory": outer._history}

        return Paginator()


def test_live_spot_prices_are_used(ec2: Any) -> None:
    history = [
        {"InstanceType": "m5.large", "AvailabilityZone": "us-east-1a", "SpotPrice": "0.0123", "Timestamp": NOW},
        {"InstanceType": "gone.large", "AvailabilityZone": "us-east-1a", "SpotPrice": "0.5", "Timestamp": NOW},
    ]
    client = _WithSpotHistory(ec2, history)
    source = LiveSource(REGION, client, None, now=lambda: NOW)
    catalog = Catalog(source.instance_types())
    prices = {o.zone: o.price for o in catalog["m5.large"].offerings if o.capacity_type == SPOT}
    assert prices["us-east-1a"] == 0.0123
    # other zones had no live price: snapshot's
    snapshot = Catalog(SnapshotSource(REGION).instance_types())
    assert prices["us-east-1b"] == next(
        o.price for o in snapshot["m5.large"].offerings if o.capacity_type == SPOT and o.zone == "us-east-1b"
    )
    assert client.spot_calls == [{"ProductDescriptions": ["Linux/UNIX"], "StartTime": NOW}]
    assert "gone.large" not in catalog
    assert any("no Pricing API client" in w for w in source.warnings)


def test_falls_back_to_snapshot_when_ec2_fails() -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    stubber = Stubber(ec2)
    stubber.add_client_error(
        "describe_instance_types", service_error_code="UnauthorizedOperation", http_status_code=403
    )
    stubber.activate()
    source = LiveSource(REGION, ec2, None)
    types = source.instance_types()
    assert [it.name for it in types] == [it.name for it in SnapshotSource(REGION).instance_types()]
    assert any("using the offline snapshot" in w for w in source.warnings)


def test_pricing_failure_uses_snapshot_prices(ec2: Any) -> None:
    pricing = boto3.client("pricing", region_name="us-east-1")
    stubber = Stubber(pricing)
    stubber.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
    stubber.activate()
    source = LiveSource(REGION, ec2, pricing, now=lambda: NOW)
    catalog = Catalog(source.instance_types())
    assert {o.price for o in catalog["m5.large"].offerings if o.capacity_type == ON_DEMAND} == {0.096}
    assert any("Pricing API failed" in w for w in source.warnings)


def test_a_refresh_reads_offerings_again_but_keeps_prices_for_twelve_hours(ec2: Any) -> None:
    from datetime import timedelta

    from nodewright.adapters.ec2_catalog import PRICES_TTL

    history = [{"InstanceType": "m5.large", "AvailabilityZone": "us-east-1a", "SpotPrice": "0.02", "Timestamp": NOW}]
    client = _WithSpotHistory(ec2, history)
    # One page of prices for the first read, one for the read after 12 hours; none in between.
    pricing, stubber = stubbed_pricing([[price_item("m5.large", "0.1")]])
    clock = [NOW]
    source = LiveSource(REGION, client, pricing, now=lambda: clock[0])
    first = Catalog(source.instance_types())
    source.invalidate()
    clock[0] = NOW + timedelta(seconds=PRICES_TTL - 1)
    again = Catalog(source.instance_types())
    assert again is not first and len(client.spot_calls) == 1  # offerings read again, prices kept
    assert {o.price for o in again["m5.large"].offerings if o.capacity_type == ON_DEMAND} == {0.1}
    stubber.add_response("get_products", {"PriceList": [price_item("m5.large", "0.2")], "FormatVersion": "aws_v1"})
    source.invalidate()
    clock[0] = NOW + timedelta(seconds=PRICES_TTL)
    later = Catalog(source.instance_types())
    assert {o.price for o in later["m5.large"].offerings if o.capacity_type == ON_DEMAND} == {0.2}
    assert len(client.spot_calls) == 2
