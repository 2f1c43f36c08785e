"""Karpenter v1.14.1 pkg/controllers/nodeoverlay/store_test.go, ported case by case.

Karpenter's store holds the updates the controller decided and applies them with copy-on-write: what an overlay
does not change is shared with the original instance type. nodewright's `catalog.overlay` does the same with
immutable dataclasses (an unchanged offering or type is the same object), which is what keeps the scheduler's
caches, keyed by identity, warm across planner ticks. The store's internals (`updates`, `evaluatedNodePools`) are
reached here through overlays, as the controller would set them.
"""

from __future__ import annotations

import pytest
from overlay_kit import CAPACITY_TYPE, INSTANCE_TYPE, ZONE, fake_type, offering, overlay, reconcile, requirement

from nodewright.catalog.allocatable import capacity

FILE = "pkg/controllers/nodeoverlay/store_test.go"
PER_NODEPOOL = (
    "nodewright reads one catalog for every NodePool, not instance types per NodePool, so there is no "
    "per-NodePool GetInstanceTypes to fail or to leave unevaluated"
)


def m5_large():
    return fake_type(
        "m5.large", offerings=[offering("us-west-2a", "on-demand", 0.096), offering("us-west-2b", "on-demand", 0.096)]
    )


@pytest.mark.parametrize(
    ("price", "extra", "offerings_shared", "capacity_shared"),
    [
        pytest.param("+0.01", None, False, True, id="price overlay only - offerings copied, others shared"),
        pytest.param(
            None, {"hugepages-2Mi": "100Mi"}, True, False, id="capacity overlay only - capacity copied, others shared"
        ),
        pytest.param(
            "+0.01", {"hugepages-2Mi": "100Mi"}, False, False, id="both overlays - only modified fields copied"
        ),
    ],
)
def test_should_handle_different_overlay_scenarios(price, extra, offerings_shared, capacity_shared) -> None:
    """Describe("Store Apply Selective Copy") DescribeTable("should handle different overlay scenarios")"""
    original = m5_large()
    docs = []
    if price is not None:
        docs.append(overlay("price", requirement(ZONE, "In", "us-west-2a"), weight=10, price_adjustment=price))
    if extra is not None:
        docs.append(overlay("capacity", requirement(INSTANCE_TYPE, "In", "m5.large"), weight=10, capacity=extra))
    result = reconcile([original], docs).catalog["m5.large"]
    assert result.labels is original.labels  # requirements: shared
    assert (result.offerings is original.offerings) == offerings_shared
    assert result.offerings[1] is original.offerings[1]  # the offering no overlay selects: shared either way
    assert (result.overlay_capacity is original.overlay_capacity) == capacity_shared


def test_should_correctly_apply_price_overlay_to_specific_offerings() -> None:
    """Describe("Store Apply Correctness") Context("with price overlay") It("should correctly apply price overlay to
    specific offerings")"""
    original = m5_large()
    doc = overlay("a", requirement(ZONE, "In", "us-west-2a"), weight=10, price_adjustment="+0.01")
    result = reconcile([original], [doc]).catalog["m5.large"]
    assert result.offerings[0].price == pytest.approx(0.106) and result.offerings[0].price_overlay == "a"
    assert result.offerings[1] is original.offerings[1] and result.offerings[1].price == 0.096
    assert original.offerings[0].price == 0.096 and original.offerings[0].price_overlay == ""  # not mutated


def test_should_correctly_apply_capacity_overlay() -> None:
    """Describe("Store Apply Correctness") Context("with capacity overlay") It("should correctly apply capacity
    overlay")"""
    original = m5_large()
    doc = overlay("a", requirement(INSTANCE_TYPE, "In", "m5.large"), weight=10, capacity={"hugepages-2Mi": "100Mi"})
    result = reconcile([original], [doc]).catalog["m5.large"]
    added = capacity(result)
    assert added["hugepages-2Mi"] == 100 * 2**20
    assert added["memory"] == capacity(original)["memory"]  # the type's own resources stay
    assert "hugepages-2Mi" not in capacity(original)  # the original is not mutated


def test_should_apply_different_overlays_to_different_node_pools() -> None:
    """Describe("Store Apply Isolation Between NodePools") It("should apply different overlays to different node
    pools"): nodewright's intended difference: overlays selecting a NodePool are refused (UnsupportedRequirement)
    and both NodePools read the one catalog unchanged."""
    original = m5_large()
    docs = [
        overlay("pool-a", requirement("karpenter.sh/nodepool", "In", "pool-a"), weight=10, price_adjustment="+0.01"),
        overlay("pool-b", requirement("karpenter.sh/nodepool", "In", "pool-b"), weight=10, price_adjustment="+0.05"),
    ]
    done = reconcile([original], docs)
    assert done.reason("pool-a") == "UnsupportedRequirement" and done.reason("pool-b") == "UnsupportedRequirement"
    assert done.catalog["m5.large"] is original


@pytest.mark.skip(reason=PER_NODEPOOL)
def test_should_return_error_for_unevaluated_node_pool() -> None:
    """Describe("Store Apply Unevaluated NodePool") It("should return error for unevaluated node pool")"""


def test_should_integrate_overlays_through_the_public_interface() -> None:
    """Describe("NodeOverlay Store Integration") It("should integrate overlays through the public interface"): one
    overlay gives m5.large hugepages and prices its spot offering; m5.xlarge is untouched."""
    large = fake_type(
        "m5.large", offerings=[offering("us-west-2a", "on-demand", 0.096), offering("us-west-2a", "spot", 0.0288)]
    )
    xlarge = fake_type("m5.xlarge", offerings=[offering("us-west-2a", "on-demand", 0.192)])
    doc = overlay(
        "a",
        requirement(INSTANCE_TYPE, "In", "m5.large"),
        requirement(CAPACITY_TYPE, "In", "spot"),
        weight=100,
        capacity={"hugepages-2Mi": "100Mi"},
        price_adjustment="-50%",
    )
    done = reconcile([large, xlarge], [doc])
    assert "hugepages-2Mi" in capacity(done.catalog["m5.large"])
    assert done.catalog["m5.xlarge"] is xlarge and "hugepages-2Mi" not in capacity(xlarge)
    assert done.prices("m5.large", capacity_type="spot") == [pytest.approx(0.0144)]
    assert done.prices("m5.large", capacity_type="on-demand") == [0.096]
    assert "hugepages-2Mi" not in capacity(large)  # the original is not mutated
