"""NodeOverlays applied to the shipped catalog (`catalog.overlay`): prices, extended resources, what the scheduler
then chooses, and the identity of unchanged types (which keeps the scheduler's caches warm across ticks)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.catalog import Catalog, SnapshotSource, allocatable
from nodewright.catalog.overlay import apply_overlays, order_by_weight, price_overlay
from nodewright.model.loader import load_text
from nodewright.model.nodeoverlay import NodeOverlay, adjusted_price, parse_nodeoverlay
from nodewright.scheduling import solve_inputs

FAMILY = "karpenter.k8s.aws/instance-family"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(SnapshotSource().instance_types())


def overlay(name: str, *requirements: tuple[str, str, list[str]], **spec: Any) -> NodeOverlay:
    doc = {
        "apiVersion": "nodewright.io/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [{"key": k, "operator": op, "values": v} for k, op, v in requirements], **spec},
    }
    found, errors = parse_nodeoverlay(doc)
    assert found is not None, errors
    return found


@pytest.mark.parametrize(
    ("price", "change", "expected"),
    [
        (1.0, None, 1.0),
        (1.0, "0.42", 0.42),
        (1.0, "+1", 2.0),
        (1.0, "-0.5", 0.5),
        (1.0, "-2", 0.0),  # never below zero
        (0.2, "-50%", 0.1),
        (0.2, "+10%", 0.22),
        (0.2, "-100%", 0.0),
    ],
)
def test_adjusted_price_replaces_adds_or_scales_and_never_goes_below_zero(
    price: float, change: str | None, expected: float
) -> None:
    assert adjusted_price(price, change) == pytest.approx(expected)


def test_overlays_are_taken_by_weight_then_by_the_later_name() -> None:
    found = order_by_weight([overlay("a", weight=5), overlay("b"), overlay("c", weight=5), overlay("z")])
    assert [o.name for o in found] == ["c", "a", "z", "b"]


def test_a_percentage_on_a_family_changes_only_its_offerings_and_names_itself(catalog: Catalog) -> None:
    half = overlay("half-r5", (FAMILY, "In", ["r5"]), priceAdjustment="-50%")
    result = apply_overlays(catalog, [half])
    assert result.applied["half-r5"][0] == sum(len(it.offerings) for it in catalog if it.family == "r5")
    for o_before, o_after in zip(catalog["r5.large"].offerings, result.catalog["r5.large"].offerings, strict=True):
        assert o_after.price == pytest.approx(o_before.price / 2) and o_after.price_overlay == "half-r5"
    assert result.catalog["m5.large"] is catalog["m5.large"]  # untouched types are shared
    o = catalog["r5.large"].offerings[0]
    assert price_overlay(result.catalog, "r5.large", o.zone, o.capacity_type) == "half-r5"
    assert price_overlay(result.catalog, "m5.large", o.zone, o.capacity_type) is None


def test_applying_the_same_overlays_again_gives_the_same_objects(catalog: Catalog) -> None:
    """A planner applies its overlays every tick; the scheduler's template cache is keyed by type identity."""
    half = overlay("half-r5", (FAMILY, "In", ["r5"]), priceAdjustment="-50%")
    first = apply_overlays(catalog, [half]).catalog
    second = apply_overlays(catalog, [overlay("half-r5", (FAMILY, "In", ["r5"]), priceAdjustment="-50%")]).catalog
    assert first["r5.large"] is second["r5.large"]
    changed = apply_overlays(catalog, [overlay("half-r5", (FAMILY, "In", ["r5"]), priceAdjustment="-40%")]).catalog
    assert changed["r5.large"] is not first["r5.large"]


def test_an_overlay_on_the_nodepool_label_is_refused_and_changes_nothing(catalog: Catalog) -> None:
    pooled = overlay("team", ("karpenter.sh/nodepool", "In", ["team-a"]), price="0.01")
    result = apply_overlays(catalog, [pooled])
    assert result.catalog is catalog and result.refused["team"].reason == "UnsupportedRequirement"
    assert "karpenter.sh/nodepool" in result.refused["team"].message


def test_capacity_adds_an_extended_resource_the_scheduler_can_place_pods_on(catalog: Catalog) -> None:
    fuse = overlay(
        "fuse", ("node.kubernetes.io/instance-type", "In", ["m5.xlarge"]), capacity={"smarter-devices/fuse": "4"}
    )
    result = apply_overlays(catalog, [fuse])
    assert allocatable(result.catalog["m5.xlarge"])["smarter-devices/fuse"] == 4
    assert "smarter-devices/fuse" not in allocatable(catalog["m5.xlarge"])
    text = """
apiVersion: nodewright.io/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: NodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {k: v}}]
  securityGroupSelectorTerms: [{tags: {k: v}}]
---
apiVersion: nodewright.io/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: nodewright.io, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: v1
kind: Pod
metadata: {name: fuse-user, namespace: default}
spec:
  containers:
  - name: app
    image: app
    resources:
      requests: {cpu: 100m, smarter-devices/fuse: "1"}
      limits: {smarter-devices/fuse: "1"}
"""
    inputs, errors = load_text(text, "cluster.yaml")
    assert errors == []
    without = solve_inputs(inputs, catalog.instance_types)
    assert [u.pod for u in without.unschedulable] == ["default/fuse-user"]
    with_fuse = solve_inputs(inputs, result.catalog.instance_types)
    [claim] = with_fuse.nodeclaims
    assert claim.instance_types == ("m5.xlarge",)


def test_a_capacity_reservation_type_requirement_selects_only_those_reserved_offerings(catalog: Catalog) -> None:
    from nodewright.catalog import CapacityReservation

    zone = catalog["p5.48xlarge"].offerings[0].zone
    reserved = catalog.with_reservations(
        [
            CapacityReservation("cr-block", "p5.48xlarge", zone, 1, "capacity-block"),
            CapacityReservation("cr-odcr", "p5.48xlarge", zone, 1, "default"),
        ]
    )
    blocks = overlay("blocks", ("karpenter.k8s.aws/capacity-reservation-type", "In", ["capacity-block"]), price="5")
    result = apply_overlays(reserved, [blocks])
    priced = {o.reservation_id or o.capacity_type: o.price_overlay for o in result.catalog["p5.48xlarge"].offerings}
    assert priced["cr-block"] == "blocks" and priced["cr-odcr"] == "" and priced["on-demand"] == ""


def test_an_overlay_on_the_operating_system_is_refused_as_it_follows_the_nodeclass(catalog: Catalog) -> None:
    windows = overlay("licence", ("kubernetes.io/os", "In", ["windows"]), priceAdjustment="+0.5")
    result = apply_overlays(catalog, [windows])
    assert result.catalog is catalog and result.refused["licence"].reason == "UnsupportedRequirement"
    assert "kubernetes.io/os" in result.refused["licence"].message
