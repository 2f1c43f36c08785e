"""Karpenter v1.14.1 pkg/controllers/nodeoverlay/suite_test.go, ported case by case (one test per It, one per
DescribeTable Entry).

Karpenter's controller reconciles every NodeOverlay against each NodePool's instance types, writes the
ValidationSucceeded condition and fills the store the decorated cloud provider applies. In nodewright the
planner does the same from the catalog every simulation reads: `overlay_kit.reconcile` loads the documents,
applies the valid overlays to the catalog (`catalog.overlay`) and writes the conditions through the planner's
status writer (`service.overlay_status`). "GetInstanceTypes + ApplyAll" is reading the overlaid catalog.

Cases whose overlays select on `karpenter.sh/nodepool` or a NodePool's template label assert nodewright's intended
difference (the overlay is refused with reason UnsupportedRequirement and changes nothing); cases about fetching
instance types per NodePool have no counterpart, as the catalog is not read per NodePool, and are skipped with
that reason.
"""

from __future__ import annotations

import pytest
from overlay_kit import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    NODEPOOL,
    OS,
    ZONE,
    default_type,
    fake_type,
    offering,
    overlay,
    reconcile,
    requirement,
    reset_types,
)

FILE = "pkg/controllers/nodeoverlay/suite_test.go"
LONG_KEY = "test.com.test/test-" + "a" * 250  # fails runtime validation: the name part is over 63 characters
PER_NODEPOOL = (
    "nodewright reads one catalog for every NodePool, not instance types per NodePool, so there is no "
    "per-NodePool GetInstanceTypes to fail or to leave unevaluated"
)
PRICE = {"price": "price", "adjustment": "price_adjustment"}


def three_offerings_type() -> list:
    """The Offering Requirements BeforeEach: one type, spot z1 1.02, on-demand z2 2.02, spot z3 3.02, reserved z4."""
    return [
        fake_type(
            "default-instance-type",
            offerings=[
                offering("test-zone-1", "spot", 1.020),
                offering("test-zone-2", "on-demand", 2.020),
                offering("test-zone-3", "spot", 3.020),
                offering("test-zone-4", "reserved", 4.020),
            ],
        )
    ]


def zone_types() -> list:
    """default-instance-type-zone-one / -two / -four: one offering each (spot z1, on-demand z2, reserved z4)."""
    return [
        fake_type("default-instance-type-zone-one", offerings=[offering("test-zone-1", "spot", 1.020)]),
        fake_type("default-instance-type-zone-two", offerings=[offering("test-zone-2", "on-demand", 2.020)]),
        fake_type("default-instance-type-zone-four", offerings=[offering("test-zone-4", "reserved", 4.020)]),
    ]


def priced(kind: str, value: str) -> dict[str, str]:
    return {PRICE[kind]: value}


# ------------------------------------------------------------------------------------------ Describe("Validation")


def test_should_return_the_same_instance_type_when_zero_overlay_are_applied() -> None:
    """It("should return the same instance type when zero overlay are applied")"""
    types = [default_type()]
    done = reconcile(types, [])
    assert done.catalog.instance_types == tuple(types)  # the very same objects
    assert done.prices("default-instance-type") == [1.020]


def test_should_pass_with_a_single_overlay() -> None:
    """It("should pass with a single overlay")"""
    done = reconcile(
        [default_type()], [overlay("a", requirement(INSTANCE_TYPE, "In", "default-instance-type"), weight=10)]
    )
    assert done.succeeded("a") and done.condition("a", "Ready")["status"] == "True"


def test_should_fail_validation_for_invalid_requirements_values() -> None:
    """Context("Runtime Validation") It("should fail validation for invalid requirements values")"""
    done = reconcile([default_type()], [overlay("a", requirement(LONG_KEY, "Exists"), weight=10)])
    assert not done.succeeded("a") and done.reason("a") == "RuntimeValidation"
    assert done.condition("a", "Ready")["status"] == "False"


def test_should_fail_validation_for_invalid_capacity_values() -> None:
    """Context("Runtime Validation") It("should fail validation for invalid capacity values") (the test adds a
    resource to Karpenter's well-known set; nodewright's set is fixed, so a well-known resource, cpu, is used)."""
    doc = overlay("a", requirement(INSTANCE_TYPE, "In", "default-instance-type"), weight=10, capacity={"cpu": "5"})
    done = reconcile([default_type()], [doc])
    assert not done.succeeded("a") and done.reason("a") == "RuntimeValidation"


def test_should_fail_when_requirements_overlays_overlap() -> None:
    """Describe("Instance types Requirements") It("should fail when requirements overlays overlap")"""
    docs = [
        overlay("overlay-a", requirement(ARCH, "In", "arm64"), weight=10, price="1.03"),
        overlay("overlay-b", requirement(CAPACITY_TYPE, "Exists"), weight=10, price="23"),
    ]
    done = reconcile(reset_types(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")
    assert "overlay-b" in done.condition("overlay-a")["message"]  # the message names the other overlay


def test_should_succeed_with_requirements_overlays_dont_overlap_instance_types() -> None:
    """Describe("Instance types Requirements") It("should succeed with requirements overlays don't overlap"):
    overlay-b selects on kubernetes.io/os, which in nodewright follows the EC2NodeClass's AMI family, not the
    instance type; nodewright's difference refuses it (UnsupportedRequirement) rather than letting it apply to
    every NodePool or none. overlay-a succeeds as in Karpenter and is the only one applied."""
    types = [fake_type("arm-instance-type", arch="arm64", os="linux"), fake_type("amd-instance-type", os="ios")]
    docs = [
        overlay("overlay-a", requirement(ARCH, "In", "arm64"), weight=10, price="1.03"),
        overlay("overlay-b", requirement(OS, "In", "ios"), weight=10, price="23"),
    ]
    done = reconcile(types, docs)
    assert done.succeeded("overlay-a")
    assert not done.succeeded("overlay-b") and done.reason("overlay-b") == "UnsupportedRequirement"
    assert "kubernetes.io/os" in done.condition("overlay-b")["message"]
    assert done.prices("arm-instance-type") == [1.03] * 5 and not done.price_overlaid("amd-instance-type")


def test_should_fail_with_requirements_overlays_overlap_on_zone() -> None:
    """Describe("Offering Requirements") It("should fail with requirements overlays overlap on zone")"""
    docs = [
        overlay("overlay-a", requirement(ZONE, "In", "test-zone-1", "test-zone-4"), weight=10, price="1.03"),
        overlay("overlay-b", requirement(CAPACITY_TYPE, "Exists"), weight=10, price="23"),
    ]
    done = reconcile(three_offerings_type(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")


def test_should_fail_with_requirements_overlays_overlap_on_capacity_type() -> None:
    """Describe("Offering Requirements") It("should fail with requirements overlays overlap on capacity type")"""
    docs = [
        overlay("overlay-a", requirement(CAPACITY_TYPE, "Exists"), weight=10, price="1.03"),
        overlay("overlay-b", requirement(CAPACITY_TYPE, "In", "spot"), weight=10, price="23"),
    ]
    done = reconcile(three_offerings_type(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")


def test_should_succeed_with_requirements_overlays_dont_overlap_offerings() -> None:
    """Describe("Offering Requirements") It("should succeed with requirements overlays don't overlap")"""
    docs = [
        overlay("overlay-a", requirement(ZONE, "In", "test-zone-6", "test-zone-4"), weight=10, price="1.03"),
        overlay("overlay-b", requirement(CAPACITY_TYPE, "In", "spot"), weight=10, price="23"),
    ]
    done = reconcile(three_offerings_type(), docs)
    assert done.succeeded("overlay-a") and done.succeeded("overlay-b")
    assert done.prices("default-instance-type", zone="test-zone-4") == [1.03]
    assert done.prices("default-instance-type", capacity_type="spot") == [23.0, 23.0]


def test_should_fail_with_requirements_overlays_overlap() -> None:
    """Describe("Offering Requirements") It("should fail with requirements overlays overlap")"""
    docs = [
        overlay("overlay-a", requirement(ZONE, "In", "test-zone-1", "test-zone-4"), weight=10, price="1.03"),
        overlay("overlay-b", requirement(CAPACITY_TYPE, "In", "spot"), weight=10, price="23"),
    ]
    done = reconcile(three_offerings_type(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")
    # All or nothing: overlay-a's reserved offering in test-zone-4 keeps its price.
    assert done.prices("default-instance-type", zone="test-zone-4") == [4.020]


PAIRS_CONFLICTING = [
    pytest.param(("price", "1.03"), ("price", "23"), id="Price"),
    pytest.param(("adjustment", "+54"), ("adjustment", "-2"), id="PriceAdjustment"),
]
PAIRS_SAME = [
    pytest.param(("price", "100"), ("price", "100"), id="Price"),
    pytest.param(("adjustment", "+100"), ("adjustment", "+100"), id="PriceAdjustment"),
]


def _overlapping_pricing_updates_conflict(a: tuple[str, str], b: tuple[str, str]) -> None:
    """Two overlays of weight 10 whose instance types overlap, with the pricing updates `a` and `b`: overlay-a is
    refused with Conflict and overlay-b applied, as both DescribeTables expect."""
    docs = [
        overlay(
            "overlay-a",
            requirement(INSTANCE_TYPE, "In", "default-instance-type", "small-instance-type"),
            weight=10,
            **priced(*a),
        ),
        overlay(
            "overlay-b",
            requirement(INSTANCE_TYPE, "In", "default-instance-type", "gpu-vendor-instance-type"),
            weight=10,
            **priced(*b),
        ),
    ]
    done = reconcile([default_type()], docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")


@pytest.mark.parametrize(("a", "b"), PAIRS_CONFLICTING)
def test_should_fail_with_conflicting_pricing_updates_overlays_with_overlapping_requirements(a, b) -> None:
    """Context("Pricing Updates") DescribeTable("should fail with conflicting pricing updates overlays with
    overlapping requirements")"""
    _overlapping_pricing_updates_conflict(a, b)


@pytest.mark.parametrize(("a", "b"), PAIRS_SAME)
def test_should_fail_with_pricing_updates_are_the_same_overlays_with_overlapping_requirements(a, b) -> None:
    """Context("Pricing Updates") DescribeTable("should fail with pricing updates are the same overlays with
    overlapping requirements"): equal changes conflict too."""
    _overlapping_pricing_updates_conflict(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(("price", "54"), ("price", "23"), id="Price"),
        pytest.param(("adjustment", "+54"), ("adjustment", "-2"), id="PriceAdjustment"),
    ],
)
def test_should_pass_with_conflicting_pricing_updates_overlays_with_mutually_exclusive_requirements(a, b) -> None:
    """Context("Pricing Updates") DescribeTable("should pass with conflicting pricing updates overlays with mutually
    exclusive requirements")"""
    docs = [
        overlay("overlay-a", requirement(INSTANCE_TYPE, "In", "default-instance-type"), weight=10, **priced(*a)),
        overlay("overlay-b", requirement(INSTANCE_TYPE, "NotIn", "default-instance-type"), weight=10, **priced(*b)),
    ]
    done = reconcile([default_type()], docs)
    assert done.succeeded("overlay-a") and done.succeeded("overlay-b")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(("price", "34"), ("price", "2"), id="Price"),
        pytest.param(("adjustment", "-4"), ("adjustment", "-2"), id="PriceAdjustment"),
    ],
)
def test_should_pass_with_conflicting_pricing_update_overlays_with_mutually_exclusive_weights(a, b) -> None:
    """Context("Pricing Updates") DescribeTable("should pass with conflicting pricing update overlays with mutually
    exclusive weights")"""
    docs = [
        overlay("overlay-a", requirement(INSTANCE_TYPE, "In", "default-instance-type"), weight=10, **priced(*a)),
        overlay(
            "overlay-b",
            requirement(INSTANCE_TYPE, "In", "default-instance-type", "gpu-vendor-instance-type"),
            weight=20,
            **priced(*b),
        ),
    ]
    done = reconcile([default_type()], docs)
    assert done.succeeded("overlay-a") and done.succeeded("overlay-b")
    assert done.catalog["default-instance-type"].offerings[0].price_overlay == "overlay-b"  # the heavier one


def _capacity_pair(a_values, a_weight, a_capacity, b_values, b_weight, b_capacity, b_operator="In"):
    return [
        overlay("overlay-a", requirement(INSTANCE_TYPE, "In", *a_values), weight=a_weight, capacity=a_capacity),
        overlay("overlay-b", requirement(INSTANCE_TYPE, b_operator, *b_values), weight=b_weight, capacity=b_capacity),
    ]


def test_should_fail_with_conflicting_capacity_overlays_with_overlapping_requirements() -> None:
    """Context("Capacity Adjustment") It("should fail with conflicting capacity overlays with overlapping
    requirements")"""
    docs = _capacity_pair(
        ("default-instance-type", "small-instance-type"),
        10,
        {"smarter-devices/fuse": "1"},
        ("default-instance-type", "gpu-vendor-instance-type"),
        10,
        {"smarter-devices/fuse": "54"},
    )
    done = reconcile([default_type()], docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")
    assert done.capacity("default-instance-type") == {"smarter-devices/fuse": 54}


def test_should_fail_with_conflicting_capacity_overlays_with_multiple_overlays() -> None:
    """Context("Capacity Adjustment") It("should fail with conflicting capacity overlays with multiple overlays")"""
    docs = [
        overlay(
            "conflicting-overlay-1",
            requirement(INSTANCE_TYPE, "In", "default-instance-type", "small-instance-type"),
            weight=10,
            capacity={"hugepage-1Gi": "2Gi"},
        ),
        overlay(
            "good-overlay-1",
            requirement(INSTANCE_TYPE, "In", "default-instance-type"),
            weight=10,
            capacity={"smarter-devices/fuse": "1"},
        ),
        overlay(
            "conflicting-overlay-2",
            requirement(INSTANCE_TYPE, "In", "default-instance-type"),
            weight=10,
            capacity={"hugepage-1Gi": "3Gi"},
        ),
    ]
    done = reconcile([default_type()], docs)
    assert not done.succeeded("conflicting-overlay-1") and done.reason("conflicting-overlay-1") == "Conflict"
    assert done.succeeded("good-overlay-1") and done.succeeded("conflicting-overlay-2")
    assert done.capacity("default-instance-type") == {"smarter-devices/fuse": 1, "hugepage-1Gi": 3 * 2**30}


def test_should_pass_with_capacity_adjustment_are_the_same_overlays_with_overlapping_requirements() -> None:
    """Context("Capacity Adjustment") It("should pass with capacity adjustment are the same overlays with overlapping
    requirements") (despite its name, Karpenter expects overlay-a to conflict: equal amounts conflict too)."""
    docs = _capacity_pair(
        ("default-instance-type", "small-instance-type"),
        10,
        {"smarter-devices/fuse": "54"},
        ("default-instance-type", "gpu-vendor-instance-type"),
        10,
        {"smarter-devices/fuse": "54"},
    )
    done = reconcile([default_type()], docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")


def test_should_pass_with_conflicting_capacity_overlays_with_mutually_exclusive_requirements() -> None:
    """Context("Capacity Adjustment") It("should pass with conflicting capacity overlays with mutually exclusive
    requirements")"""
    docs = _capacity_pair(
        ("default-instance-type",),
        10,
        {"smarter-devices/fuse": "54"},
        ("default-instance-type",),
        10,
        {"smarter-devices/fuse": "5"},
        b_operator="NotIn",
    )
    done = reconcile([default_type()], docs)
    assert done.succeeded("overlay-a") and done.succeeded("overlay-b")


def test_should_pass_with_conflicting_capacity_overlays_with_mutually_exclusive_weights() -> None:
    """Context("Capacity Adjustment") It("should pass with conflicting capacity overlays with mutually exclusive
    weights")"""
    docs = _capacity_pair(
        ("default-instance-type",),
        10,
        {"smarter-devices/fuse": "55"},
        ("default-instance-type", "gpu-vendor-instance-type"),
        20,
        {"smarter-devices/fuse": "5"},
    )
    done = reconcile([default_type()], docs)
    assert done.succeeded("overlay-a") and done.succeeded("overlay-b")
    assert done.capacity("default-instance-type") == {"smarter-devices/fuse": 5}


def test_should_pass_with_non_conflicting_capacity_overlays_with_overlapping_requirements() -> None:
    """Context("Capacity Adjustment") It("should pass with non conflicting capacity overlays with overlapping
    requirements")"""
    docs = _capacity_pair(
        ("default-instance-type",),
        10,
        {"smarter-devices/fuse": "55"},
        ("default-instance-type", "gpu-vendor-instance-type"),
        20,
        {"smarter-devices/buz": "5"},
    )
    done = reconcile([default_type()], docs)
    assert done.succeeded("overlay-a") and done.succeeded("overlay-b")
    assert done.capacity("default-instance-type") == {"smarter-devices/fuse": 55, "smarter-devices/buz": 5}


# ----------------------------------------------------------------------- Describe("Instance Type Controller")


def _refused_per_nodepool(done, name: str) -> None:
    """nodewright's difference: an overlay on a NodePool-dependent key is refused, and changes nothing."""
    assert not done.succeeded(name) and done.reason(name) == "UnsupportedRequirement"
    assert "karpenter.sh/nodepool" in done.condition(name)["message"] or "test-label" in done.condition(name)["message"]
    assert not done.price_overlaid("default-instance-type") and done.capacity("default-instance-type") == {}


@pytest.mark.parametrize("change", [("price", "13234.223"), ("adjustment", "+1000")], ids=["Price", "PriceAdjustment"])
def test_should_pass_with_conflicting_pricing_update_overlays_with_mutually_exclusive_weights_nodepool(change) -> None:
    """Context("Price Updates") Context("Requirements") DescribeTable("should pass with conflicting pricing update
    overlays with mutually exclusive weights"): an overlay on karpenter.sh/nodepool. Karpenter prices one NodePool's
    offerings only; nodewright refuses it (UnsupportedRequirement) and both pools keep 1.020."""
    done = reconcile(
        [default_type()], [overlay("a", requirement(NODEPOOL, "In", "default"), weight=10, **priced(*change))]
    )
    _refused_per_nodepool(done, "a")
    assert done.prices("default-instance-type") == [1.020]


@pytest.mark.parametrize(
    ("a", "b"),
    [(("price", "13234.223"), ("price", "232.11")), (("adjustment", "+1000"), ("adjustment", "+2500"))],
    ids=["Price", "PriceAdjustment"],
)
def test_should_pass_with_conflicting_pricing_update_overlays_for_all_nodepools(a, b) -> None:
    """Context("Price Updates") Context("Requirements") DescribeTable("should pass with conflicting pricing update
    overlays for all nodepools"): one overlay per NodePool by karpenter.sh/nodepool; both refused here."""
    docs = [
        overlay("a", requirement(NODEPOOL, "In", "pool-one"), weight=10, **priced(*a)),
        overlay("b", requirement(NODEPOOL, "In", "pool-two"), weight=10, **priced(*b)),
    ]
    done = reconcile([default_type()], docs)
    _refused_per_nodepool(done, "a")
    _refused_per_nodepool(done, "b")


@pytest.mark.parametrize("change", [("price", "13234.223"), ("adjustment", "+1000")], ids=["Price", "PriceAdjustment"])
def test_should_only_apply_pricing_updates_for_nodeclaim_spec_labels_that_defined_in_the_overlay_requirements(
    change,
) -> None:
    """Context("Price Updates") Context("Requirements") DescribeTable("should only apply pricing updates for nodeclaim
    spec labels that defined in the overlay requirements"): an overlay on a NodePool template label; refused here."""
    done = reconcile(
        [default_type()], [overlay("a", requirement("test-label", "In", "test-value"), weight=10, **priced(*change))]
    )
    _refused_per_nodepool(done, "a")


@pytest.mark.parametrize("change", [("price", "13234.223"), ("adjustment", "+1000")], ids=["Price", "PriceAdjustment"])
def test_should_not_apply_pricing_updates_for_invalid_overlays(change) -> None:
    """Context("Price Updates") DescribeTable("should not apply pricing updates for invalid overlays")"""
    done = reconcile([default_type()], [overlay("a", requirement(LONG_KEY, "Exists"), weight=10, **priced(*change))])
    assert not done.succeeded("a")
    assert done.prices("default-instance-type") == [1.020]


@pytest.mark.parametrize("change", [("price", "13234.223"), ("adjustment", "+1000")], ids=["Price", "PriceAdjustment"])
def test_should_not_apply_adjustments_for_overlays_that_do_not_overlap_with_instance_types_requirements(change) -> None:
    """Context("Price Updates") DescribeTable("should not apply adjustments for overlays that do not overlap with
    instance types requirements")"""
    doc = overlay(
        "a", requirement(INSTANCE_TYPE, "In", "default-instance-type-not-found"), weight=10, **priced(*change)
    )
    done = reconcile([default_type()], [doc])
    assert done.succeeded("a") and done.prices("default-instance-type") == [1.020]


@pytest.mark.parametrize(
    ("change", "expected"),
    [(("price", "13234.223"), 13234.223), (("adjustment", "+1000"), 1001.020)],
    ids=["Price", "PriceAdjustment"],
)
def test_should_apply_pricing_updates_for_instances_types(change, expected) -> None:
    """Context("Price Updates") DescribeTable("should apply pricing updates for instances types")"""
    doc = overlay("a", requirement(INSTANCE_TYPE, "In", "default-instance-type"), weight=10, **priced(*change))
    done = reconcile([default_type()], [doc])
    assert done.prices("default-instance-type") == [pytest.approx(expected)]
    assert done.catalog["default-instance-type"].offerings[0].price_overlay == "a"


@pytest.mark.parametrize(
    ("change", "expected"),
    [(("price", "12321.32"), 12321.32), (("adjustment", "+1000"), 1005.020)],
    ids=["Price", "PriceAdjustment"],
)
def test_should_apply_pricing_updates_for_instances_types_for_capacity_type(change, expected) -> None:
    """Context("Price Updates") DescribeTable("should apply pricing updates for instances types for capacity type")"""
    types = [
        fake_type(
            "default-instance-type",
            offerings=[offering("test-zone-1", "spot", 1.020), offering("test-zone-1", "on-demand", 5.020)],
        )
    ]
    done = reconcile(types, [overlay("a", requirement(CAPACITY_TYPE, "In", "on-demand"), weight=10, **priced(*change))])
    assert done.prices("default-instance-type", capacity_type="on-demand") == [pytest.approx(expected)]
    assert done.prices("default-instance-type", capacity_type="spot") == [pytest.approx(1.020)]


@pytest.mark.parametrize(
    ("change", "expected"),
    [(("price", "121.421"), 121.421), (("adjustment", "+1000"), 1001.020)],
    ids=["Price", "PriceAdjustment"],
)
def test_should_apply_pricing_updates_for_instances_types_for_availability_zone(change, expected) -> None:
    """Context("Price Updates") DescribeTable("should apply pricing updates for instances types for availability
    zone")"""
    types = [
        fake_type(
            "default-instance-type",
            offerings=[offering("test-zone-1", "spot", 1.020), offering("test-zone-2", "spot", 5.020)],
        )
    ]
    done = reconcile(types, [overlay("a", requirement(ZONE, "In", "test-zone-1"), weight=10, **priced(*change))])
    assert done.prices("default-instance-type", zone="test-zone-1") == [pytest.approx(expected)]
    assert done.prices("default-instance-type", zone="test-zone-2") == [pytest.approx(5.020)]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (("price", "121.421"), ("price", "165.421"), (121.421, 121.421, 165.421)),
        (("adjustment", "+201"), ("adjustment", "-0.5"), (203.020, 205.020, 0.52)),
    ],
    ids=["Price", "PriceAdjustment"],
)
def test_should_update_price_updates_offerings_instance_types_from_multiple_overlays(a, b, expected) -> None:
    """Context("Price Updates") DescribeTable("should update price updates offerings instance types from multiple
    overlays")"""
    types = [
        fake_type(
            "default-instance-type",
            offerings=[
                offering("test-zone-1", "spot", 1.020),
                offering("test-zone-2", "on-demand", 2.020),
                offering("test-zone-4", "reserved", 4.020),
            ],
        )
    ]
    docs = [
        overlay("overlay-a", requirement(ZONE, "In", "test-zone-2", "test-zone-4"), weight=10, **priced(*a)),
        overlay("overlay-b", requirement(CAPACITY_TYPE, "In", "spot"), weight=10, **priced(*b)),
    ]
    done = reconcile(types, docs)
    assert done.prices("default-instance-type", zone="test-zone-2") == [pytest.approx(expected[0])]
    assert done.prices("default-instance-type", zone="test-zone-4") == [pytest.approx(expected[1])]
    assert done.prices("default-instance-type", capacity_type="spot") == [pytest.approx(expected[2])]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (("price", "121.421"), ("price", "165.421"), (121.421, 165.421)),
        (("adjustment", "+201"), ("adjustment", "-1.5"), (203.020, 2.520)),
    ],
    ids=["Price", "PriceAdjustment"],
)
def test_should_update_price_updates_offerings_instance_types_from_multiple_overlays_with_different_weights(
    a, b, expected
) -> None:
    """Context("Price Updates") DescribeTable("should update price updates offerings instance types from multiple
    overlays with different weights")"""
    types = [
        fake_type(
            "default-instance-type",
            offerings=[
                offering("test-zone-1", "spot", 1.020),
                offering("test-zone-2", "on-demand", 2.020),
                offering("test-zone-4", "reserved", 4.020),
            ],
        )
    ]
    docs = [
        overlay("a-test-100", requirement(ZONE, "In", "test-zone-2"), weight=20, **priced(*a)),
        overlay("b-test-100", requirement(ZONE, "In", "test-zone-2", "test-zone-4"), weight=10, **priced(*b)),
    ]
    done = reconcile(types, docs)
    assert done.prices("default-instance-type", zone="test-zone-2") == [pytest.approx(expected[0])]
    assert done.prices("default-instance-type", zone="test-zone-4") == [pytest.approx(expected[1])]


@pytest.mark.parametrize(
    ("a", "b"),
    [(("price", "382"), ("price", "100")), (("adjustment", "-23"), ("adjustment", "+10"))],
    ids=["Price", "PriceAdjustment"],
)
def test_should_not_partial_apply_instance_types_in_a_nodepool(a, b) -> None:
    """Context("Price Updates") DescribeTable("should not partial apply instance types in a nodepool")"""
    docs = [
        overlay(
            "overlay-a",
            requirement(
                INSTANCE_TYPE, "In", "default-instance-type", "small-instance-type", "gpu-vendor-b-instance-type"
            ),
            weight=10,
            **priced(*a),
        ),
        overlay(
            "overlay-b",
            requirement(INSTANCE_TYPE, "In", "small-instance-type", "gpu-vendor-instance-type"),
            weight=10,
            **priced(*b),
        ),
    ]
    done = reconcile(reset_types(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")
    overlaid = {it.name for it in done.catalog if done.price_overlaid(it.name)}
    assert overlaid == {"small-instance-type", "gpu-vendor-instance-type"}


@pytest.mark.parametrize(
    ("a", "b"),
    [(("price", "382"), ("price", "100")), (("adjustment", "+10"), ("adjustment", "-23"))],
    ids=["Price", "PriceAdjustment"],
)
def test_should_not_partial_apply_for_a_subset_of_nodepools(a, b) -> None:
    """Context("Price Updates") DescribeTable("should not partial apply for a subset of nodepools"): Karpenter checks
    the overlays against two NodePools' instance types; nodewright's one catalog holds them all, with the same
    outcome: overlay-a conflicts and is applied to no type of either pool."""
    docs = [
        overlay(
            "overlay-a",
            requirement(
                INSTANCE_TYPE, "In", "default-instance-type", "small-instance-type", "gpu-vendor-b-instance-type"
            ),
            weight=10,
            **priced(*a),
        ),
        overlay(
            "overlay-b",
            requirement(INSTANCE_TYPE, "In", "small-instance-type", "gpu-vendor-instance-type"),
            weight=10,
            **priced(*b),
        ),
    ]
    done = reconcile(reset_types(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")
    assert not done.price_overlaid("default-instance-type") and not done.price_overlaid("gpu-vendor-b-instance-type")


def test_should_only_apply_override_for_nodepool_that_defined_in_the_overlay_requirements() -> None:
    """Context("Capacity") Context("Requirements") It("should only apply override for nodepool that defined in the
    overlay requirements"): refused here (karpenter.sh/nodepool)."""
    doc = overlay("a", requirement(NODEPOOL, "In", "default"), weight=10, capacity={"smarter-devices/fuse": "1"})
    _refused_per_nodepool(reconcile([default_type()], [doc]), "a")


def test_should_pass_with_conflicting_capcaity_update_overlays_for_all_nodepools() -> None:
    """Context("Capacity") Context("Requirements") It("should pass with conflicting capcaity update overlays for all
    nodepools"): refused here (karpenter.sh/nodepool)."""
    docs = [
        overlay("a", requirement(NODEPOOL, "In", "pool-one"), weight=10, capacity={"smarter-devices/fuse": "1"}),
        overlay("b", requirement(NODEPOOL, "In", "pool-two"), weight=10, capacity={"dumb-devices/bar": "2"}),
    ]
    done = reconcile([default_type()], docs)
    _refused_per_nodepool(done, "a")
    _refused_per_nodepool(done, "b")


def test_should_only_apply_price_adjustments_for_nodeclaim_spec_labels_that_defined_in_the_overlay_requirements() -> (
    None
):
    """Context("Capacity") Context("Requirements") It("should only apply price adjustments for nodeclaim spec labels
    that defined in the overlay requirements"): refused here (a NodePool template label)."""
    doc = overlay("a", requirement("test-label", "In", "test-value"), weight=10, capacity={"smarter-devices/fuse": "1"})
    _refused_per_nodepool(reconcile([default_type()], [doc]), "a")


def test_should_not_apply_capacity_adjustments_for_invalid_overlay() -> None:
    """Context("Capacity") It("should not apply capacity adjustments for invalid overlay")"""
    doc = overlay("a", requirement(LONG_KEY, "Exists"), weight=10, capacity={"smarter-devices/fuse": "1"})
    done = reconcile([default_type()], [doc])
    assert not done.succeeded("a") and done.capacity("default-instance-type") == {}


def test_should_not_apply_capacity_adjustments_for_instances_types_that_do_not_overlap() -> None:
    """Context("Capacity") It("should not apply capacity adjustments for instances types that do not overlap")"""
    doc = overlay(
        "a",
        requirement(INSTANCE_TYPE, "In", "default-instance-type-not-found"),
        weight=10,
        capacity={"smarter-devices/fuse": "1"},
    )
    assert reconcile([default_type()], [doc]).capacity("default-instance-type") == {}


def test_should_apply_capacity_adjustments_for_instances_types() -> None:
    """Context("Capacity") It("should apply capacity adjustments for instances types")"""
    doc = overlay(
        "a",
        requirement(INSTANCE_TYPE, "In", "default-instance-type"),
        weight=10,
        capacity={"smarter-devices/fuse": "1"},
    )
    assert reconcile([default_type()], [doc]).capacity("default-instance-type") == {"smarter-devices/fuse": 1}


def test_should_update_capacity_for_instance_types_from_multiple_overlays() -> None:
    """Context("Capacity") It("should update capacity for instance types from multiple overlays")"""
    docs = [
        overlay(
            "a",
            requirement(ZONE, "In", "test-zone-2", "test-zone-4"),
            weight=10,
            capacity={"smarter-devices/fuse": "1"},
        ),
        overlay("b", requirement(CAPACITY_TYPE, "In", "spot"), weight=10, capacity={"hugepages-1Gi": "2Gi"}),
    ]
    done = reconcile(zone_types(), docs)
    assert done.capacity("default-instance-type-zone-one") == {"hugepages-1Gi": 2 * 2**30}
    assert done.capacity("default-instance-type-zone-two") == {"smarter-devices/fuse": 1}
    assert done.capacity("default-instance-type-zone-four") == {"smarter-devices/fuse": 1}
    assert done.prices("default-instance-type-zone-two") == [2.020]  # capacity overlays leave prices


def test_should_update_capacity_for_one_instance_types_from_multiple_overlays() -> None:
    """Context("Capacity") It("should update capacity for one instance types from multiple overlays")"""
    docs = [
        overlay(
            "a",
            requirement(INSTANCE_TYPE, "In", "default-instance-type-zone-one"),
            weight=10,
            capacity={"smarter-devices/fuse": "1"},
        ),
        overlay(
            "b",
            requirement(INSTANCE_TYPE, "In", "default-instance-type-zone-one"),
            weight=10,
            capacity={"hugepages-1Gi": "2Gi"},
        ),
    ]
    done = reconcile(zone_types()[:1], docs)
    assert done.capacity("default-instance-type-zone-one") == {"smarter-devices/fuse": 1, "hugepages-1Gi": 2 * 2**30}


def test_should_update_price_offerings_instance_types_from_multiple_overlays_with_different_weights() -> None:
    """Context("Capacity") It("should update price offerings instance types from multiple overlays with different
    weights") (capacity overlays, despite the name)"""
    docs = [
        overlay("a", requirement(ZONE, "In", "test-zone-2"), weight=20, capacity={"smarter-devices/fuse": "1"}),
        overlay(
            "b", requirement(ZONE, "In", "test-zone-2", "test-zone-4"), weight=10, capacity={"hugepages-1Gi": "2Gi"}
        ),
    ]
    done = reconcile(zone_types(), docs)
    assert done.capacity("default-instance-type-zone-two")["smarter-devices/fuse"] == 1
    assert done.capacity("default-instance-type-zone-four") == {"hugepages-1Gi": 2 * 2**30}
    assert done.prices("default-instance-type-zone-two") == [2.020] and done.prices(
        "default-instance-type-zone-four"
    ) == [4.020]


def test_should_apply_higher_weight_overlay_when_multiple_overlays_match_the_same_instance_type() -> None:
    """Context("Capacity") It("should apply higher weight overlay when multiple overlays match the same instance
    type")"""
    docs = [
        overlay(
            "overlay-a",
            requirement(INSTANCE_TYPE, "In", "default-instance-type"),
            weight=10,
            capacity={"smarter-devices/fuse": "5"},
        ),
        overlay(
            "overlay-b",
            requirement(INSTANCE_TYPE, "In", "default-instance-type"),
            weight=20,
            capacity={"smarter-devices/fuse": "99"},
        ),
    ]
    done = reconcile([default_type()], docs)
    assert done.succeeded("overlay-a") and done.succeeded("overlay-b")
    assert done.capacity("default-instance-type") == {"smarter-devices/fuse": 99}


def test_should_that_there_is_not_a_partial_application_for_instance_types() -> None:
    """Context("Capacity") It("should that there is not a partial application for instance types")"""
    docs = [
        overlay(
            "overlay-a",
            requirement(
                INSTANCE_TYPE, "In", "default-instance-type", "small-instance-type", "gpu-vendor-b-instance-type"
            ),
            weight=10,
            capacity={"smarter-devices/buz": "54"},
        ),
        overlay(
            "overlay-b",
            requirement(INSTANCE_TYPE, "In", "small-instance-type", "gpu-vendor-instance-type"),
            weight=10,
            capacity={"smarter-devices/buz": "21"},
        ),
    ]
    done = reconcile(reset_types(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.succeeded("overlay-b")
    given = {it.name for it in done.catalog if done.capacity(it.name)}
    assert given == {"small-instance-type", "gpu-vendor-instance-type"}


def test_should_that_there_is_not_a_partial_application_for_nodepools() -> None:
    """Context("Capacity") It("should that there is not a partial application for nodepools"): one catalog for both
    NodePools, the same all-or-nothing outcome."""
    docs = [
        overlay(
            "overlay-a",
            requirement(INSTANCE_TYPE, "In", "default-instance-type", "small-instance-type"),
            weight=10,
            capacity={"smarter-devices/buz": "54"},
        ),
        overlay(
            "overlay-b",
            requirement(INSTANCE_TYPE, "In", "small-instance-type", "gpu-vendor-instance-type"),
            weight=10,
            capacity={"smarter-devices/buz": "21"},
        ),
    ]
    done = reconcile(reset_types(), docs)
    assert not done.succeeded("overlay-a") and done.reason("overlay-a") == "Conflict"
    assert done.capacity("default-instance-type") == {}
    assert done.capacity("small-instance-type") == {"smarter-devices/buz": 21}


def test_should_apply_pricing_and_capacity_adjustment_from_two_overlays_on_the_same_instance_type() -> None:
    """It("should apply pricing and capacity adjustment from two overlays on the same instance type")"""
    docs = [
        overlay(
            "price", requirement(INSTANCE_TYPE, "In", "default-instance-type"), weight=10, price_adjustment="+1000.0"
        ),
        overlay(
            "capacity",
            requirement(INSTANCE_TYPE, "In", "default-instance-type"),
            weight=10,
            capacity={"smarter-devices/fuse": "1"},
        ),
    ]
    done = reconcile([default_type()], docs)
    assert done.prices("default-instance-type") == [pytest.approx(1001.020)]
    assert done.capacity("default-instance-type") == {"smarter-devices/fuse": 1}


def test_should_have_an_empty_instance_types_set_when_cloudprovider_does_not_return_instance_types() -> None:
    """It("should have an empty instance types set when cloudprovider does not return instance types")"""
    doc = overlay(
        "a",
        requirement(INSTANCE_TYPE, "In", "default-instance-type"),
        weight=10,
        capacity={"smarter-devices/fuse": "1"},
    )
    done = reconcile([], [doc])
    assert len(done.catalog) == 0 and done.succeeded("a")


@pytest.mark.skip(reason=PER_NODEPOOL)
def test_should_have_an_empty_instance_types_set_when_cloudprovider_return_an_error() -> None:
    """It("should have an empty instance types set when cloudprovider return an error")"""


def test_should_not_return_instance_type_requirements_with_nodepool_nodeclass_and_custom_nodepool_labels() -> None:
    """It("should not return instance type requirements with nodepool, nodeclass, and custom nodepool labels"): an
    overlaid type carries only its own labels; the NodePool's are not added to it."""
    doc = overlay(
        "a",
        requirement(INSTANCE_TYPE, "In", "default-instance-type"),
        weight=10,
        capacity={"smarter-devices/fuse": "1"},
    )
    done = reconcile([default_type()], [doc])
    assert set(done.catalog["default-instance-type"].labels) == {INSTANCE_TYPE, ARCH, OS}


# ---------------------------------------------------------------------------------- Describe("Failure Isolation")


@pytest.mark.skip(reason=PER_NODEPOOL)
def test_should_evaluate_healthy_nodepools_when_one_nodepool_fails_getinstancetypes() -> None:
    """It("should evaluate healthy NodePools when one NodePool fails GetInstanceTypes")"""


@pytest.mark.skip(reason=PER_NODEPOOL)
def test_should_update_the_store_even_when_one_nodepool_fails() -> None:
    """It("should update the store even when one NodePool fails")"""


@pytest.mark.skip(reason=PER_NODEPOOL)
def test_should_use_normal_requeue_interval_when_all_nodepools_succeed() -> None:
    """It("should use normal requeue interval when all NodePools succeed")"""


@pytest.mark.skip(reason=PER_NODEPOOL)
def test_should_recover_when_a_previously_failing_nodepool_becomes_healthy() -> None:
    """It("should recover when a previously failing NodePool becomes healthy")"""
