"""Karpenter v1.14.1 pkg/apis/v1alpha1/nodeoverlay_validation_test.go (Describe "CEL/Validation"), ported case by
case onto NodeOverlay documents run through the loader `nodewright validate` and the planner use.

Each Karpenter case checks the CRD's admission rules (`env.Client.Create`) and, for requirements and capacity,
`RuntimeValidate`; nodewright checks both at once when it loads the object, so "Create fails" and "RuntimeValidate
fails" are one refusal naming the field. The suite's object has one requirement (capacity-type Exists) and a
random name.
"""

from __future__ import annotations

from typing import Any

import pytest
from overlay_kit import CAPACITY_TYPE, NODEPOOL, ZONE, overlay, requirement

from nodewright.model.label_rules import UNSUPPORTED_LABELS, WELL_KNOWN_LABELS
from nodewright.model.loader import load_documents
from nodewright.model.nodeoverlay import NodeOverlay

FILE = "pkg/apis/v1alpha1/nodeoverlay_validation_test.go"
LONG = "a" * 250  # strings.ToLower(randomdata.Alphanumeric(250))


def node_overlay(*requirements: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """The BeforeEach object, with the test's requirements (default: capacity-type Exists) and spec fields."""
    doc = overlay("test-overlay", *(requirements or (requirement(CAPACITY_TYPE, "Exists"),)))
    doc["spec"].update(spec)
    return doc


def loaded(doc: dict[str, Any]) -> NodeOverlay:
    inputs, errors = load_documents([doc], "test.yaml")
    assert errors == [], [str(e) for e in errors]
    [found] = inputs.nodeoverlays
    return found


def refused(doc: dict[str, Any], field: str = "") -> str:
    """The errors, joined; each names the NodeOverlay (and `field`, when given)."""
    inputs, errors = load_documents([doc], "test.yaml")
    assert errors and not inputs.nodeoverlays
    assert all(e.kind == "NodeOverlay" and e.name == "test-overlay" for e in errors)
    if field:
        assert any(e.path.startswith(field) for e in errors), [str(e) for e in errors]
    return "; ".join(str(e) for e in errors)


# ---------------------------------------------------------------------------------------- Context("Requirements")


def test_should_fail_for_no_values_for_in_operator() -> None:
    """It("should fail for no values for In operator")"""
    refused(node_overlay(requirement("Test", "In")), "spec.requirements[0].values")


def test_should_fail_for_no_values_for_notin_operator() -> None:
    """It("should fail for no values for NotIn operator")"""
    assert "must have a value defined" in refused(node_overlay(requirement("Test", "NotIn")))


def test_should_succeed_for_valid_requirement_keys() -> None:
    """It("should succeed for valid requirement keys") (the first of that name: one key)"""
    assert loaded(node_overlay(requirement("Test", "Exists"))).requirements[0].key == "Test"


def test_should_succeed_for_valid_requirement_keys_several() -> None:
    """It("should succeed for valid requirement keys") (the second of that name: four keys)"""
    keys = ("Test", "test.com/Test", "test.com.com/test", "key-only")
    found = loaded(node_overlay(*(requirement(k, "Exists") for k in keys)))
    assert [r.key for r in found.requirements] == list(keys)


@pytest.mark.parametrize("key", ["test.com.com}", "Test.com/test", "test/test/test", "test/", "/test"])
def test_should_fail_for_invalid_requirement_keys(key: str) -> None:
    """It("should fail for invalid requirement keys") (each key of the It)"""
    refused(node_overlay(requirement(key, "Exists")), "spec.requirements[0].key")


def test_should_allow_for_the_karpenter_sh_nodepool_label() -> None:
    """It("should allow for the karpenter.sh/nodepool label") (valid; the planner then refuses to apply it, see
    the suite's ports and the README's differences)"""
    assert loaded(node_overlay(requirement(NODEPOOL, "In", "silly-name"))).requirements[0].key == NODEPOOL


@pytest.mark.parametrize("key", [f"test.com.test.{LONG}/test", f"test.com.test/test-{LONG}"])
def test_should_fail_at_runtime_for_requirement_keys_that_are_too_long(key: str) -> None:
    """It("should fail at runtime for requirement keys that are too long")"""
    refused(node_overlay(requirement(key, "Exists")), "spec.requirements[0].key")


def test_should_allow_supported_ops() -> None:
    """It("should allow supported ops")"""
    found = loaded(
        node_overlay(
            requirement(ZONE, "In", "test"),
            requirement(ZONE, "Gt", "1"),
            requirement(ZONE, "Lt", "1"),
            requirement(ZONE, "Gte", "1"),
            requirement(ZONE, "Lte", "1"),
            requirement(ZONE, "NotIn", "1"),
            requirement(ZONE, "Exists"),
        )
    )
    assert len(found.requirements) == 7


def test_should_fail_for_unsupported_ops() -> None:
    """It("should fail for unsupported ops")"""
    assert "is not an operator" in refused(node_overlay(requirement(ZONE, "unknown", "test")), "spec.requirements[0]")


@pytest.mark.parametrize("domain", ["karpenter.sh", "karpenter.k8s.aws"])
def test_should_fail_for_restricted_domains(domain: str) -> None:
    """It("should fail for restricted domains") (each restricted domain)"""
    assert "restricted" in refused(node_overlay(requirement(f"{domain}/test", "In", "test")))


@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_should_allow_kubernetes_domains_exceptions(domain: str) -> None:
    """It("should allow kubernetes domains exceptions")"""
    loaded(node_overlay(requirement(f"{domain}/test", "In", "test")))


@pytest.mark.parametrize("domain", ["kubernetes.io", "k8s.io"])
def test_should_allow_kubernetes_subdomains_exceptions(domain: str) -> None:
    """It("should allow kubernetes subdomains exceptions")"""
    loaded(node_overlay(requirement(f"subdomain.{domain}/test", "In", "test")))


@pytest.mark.parametrize("label", sorted(WELL_KNOWN_LABELS - {NODEPOOL, CAPACITY_TYPE} - set(UNSUPPORTED_LABELS)))
def test_should_allow_well_known_label_exceptions(label: str) -> None:
    """It("should allow well known label exceptions") (each well-known label but the nodepool and capacity-type
    ones, as in Karpenter; the AWS labels nodewright cannot offer yet are refused for every object, as the README's
    Validation section lists)"""
    loaded(node_overlay(requirement(label, "In", "test")))


def test_should_allow_non_empty_set_after_removing_overlapped_value() -> None:
    """It("should allow non-empty set after removing overlapped value")"""
    loaded(node_overlay(requirement(ZONE, "In", "test", "foo"), requirement(ZONE, "NotIn", "test", "bar")))


def test_should_allow_empty_requirements() -> None:
    """It("should allow empty requirements")"""
    loaded(node_overlay(requirement("test", "Exists")))


BAD_BOUNDS = [[], ["1", "2"], ["a"], ["-1"]]


@pytest.mark.parametrize("operator", ["Gt", "Lt"])
@pytest.mark.parametrize("values", BAD_BOUNDS, ids=["none", "two", "text", "negative"])
def test_should_fail_with_invalid_gt_or_lt_values(operator: str, values: list[str]) -> None:
    """It("should fail with invalid GT or LT values")"""
    refused(node_overlay(requirement(ZONE, operator, *values)), "spec.requirements[0]")


@pytest.mark.parametrize("operator", ["Gte", "Lte"])
@pytest.mark.parametrize("values", BAD_BOUNDS, ids=["none", "two", "text", "negative"])
def test_should_fail_with_invalid_gte_or_lte_values(operator: str, values: list[str]) -> None:
    """It("should fail with invalid GTE or LTE values")"""
    refused(node_overlay(requirement(ZONE, operator, *values)), "spec.requirements[0]")


# ------------------------------------------------------------------------------------- price and priceAdjustment


def test_shout_not_be_able_to_set_both_price_and_priceadjustment() -> None:
    """It("shout not be able to set both price and priceAdjustment")"""
    assert "cannot set both" in refused(node_overlay(price="0.432", priceAdjustment="+10%"), "spec")


INVALID = [
    pytest.param("+42", id="No explicit plus sign allowed"),
    pytest.param(".5", id="Must have leading digit"),
    pytest.param("42.", id="Must have trailing digits after decimal"),
    pytest.param("42%", id="No percentage sign allowed"),
    pytest.param("3,14", id="No commas allowed"),
    pytest.param("1e10", id="No scientific notation"),
    pytest.param("0x42", id="No hex notation"),
    pytest.param("forty-two", id="No text"),
    pytest.param("42a", id="No letters"),
    pytest.param("42 ", id="No spaces (trailing)"),
    pytest.param(" 42", id="No spaces (leading)"),
    pytest.param("42.0.0", id="Multiple decimal points"),
    pytest.param("-", id="Just a sign"),
    pytest.param(".", id="Just a decimal point"),
]


@pytest.mark.parametrize(
    "value",
    [
        *INVALID,
        pytest.param("-100.0%", id="No leading digit after sign"),
        pytest.param("-101.1%", id="less -100% float"),
        pytest.param("-129", id="less -100% integer"),
    ],
)
def test_price_adjustment_invalid_input(value: str) -> None:
    """Context("priceAdjustment") DescribeTable("Invalid Input") (Karpenter's table sets `price`, not
    `priceAdjustment`; ported as written)"""
    refused(node_overlay(price=value), "spec.price")


def test_should_not_allow_an_unsigned_priceadjustment_percentage() -> None:
    """It("should not allow an unsigned priceAdjustment percentage")"""
    refused(node_overlay(priceAdjustment="1%"), "spec.priceAdjustment")


def test_should_not_allow_an_unsigned_priceadjustment_integer() -> None:
    """It("should not allow an unsigned priceAdjustment integer")"""
    refused(node_overlay(priceAdjustment="1"), "spec.priceAdjustment")


def test_should_not_allow_an_unsigned_priceadjustment_float() -> None:
    """It("should not allow an unsigned priceAdjustment float")"""
    refused(node_overlay(priceAdjustment="1.3"), "spec.priceAdjustment")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("+1%", id="should allow positive percentage value for priceAdjustment field"),
        pytest.param("-1%", id="should allow negative percentage less then 0%"),
        pytest.param("-100%", id="should allow negative percentage -100%"),
        pytest.param("+100.102%", id="should allow positive percentage greater then 100%"),
        pytest.param("+298%", id="should allow positive percentage greater then 100% with an integer"),
        pytest.param("+43", id="should allow positive integer value"),
        pytest.param("-43", id="should allow negative integer value"),
        pytest.param("+34.43", id="should allow positive float value"),
        pytest.param("-34.43", id="should allow negative float value"),
    ],
)
def test_should_allow_price_adjustment(value: str) -> None:
    """Context("priceAdjustment"): the nine It("should allow ...") cases, one per id"""
    assert loaded(node_overlay(priceAdjustment=value)).price_adjustment == value


@pytest.mark.parametrize("value", [*INVALID, pytest.param("-.42", id="No leading digit after sign")])
def test_price_invalid_input(value: str) -> None:
    """Context("price") DescribeTable("Invalid Input")"""
    refused(node_overlay(price=value), "spec.price")


def test_should_allow_integer_value() -> None:
    """Context("price") It("should allow integer value")"""
    assert loaded(node_overlay(price="43")).price == "43"


def test_should_allow_float_value() -> None:
    """Context("price") It("should allow float value")"""
    assert loaded(node_overlay(price="34.43")).price == "34.43"


# ---------------------------------------------------------------------------------------------- Context("Capacity")


def test_should_allow_custom_resources() -> None:
    """It("should allow custom resources")"""
    assert loaded(node_overlay(capacity={"smarter-devices/fuse": "1"})).capacity == {"smarter-devices/fuse": 1}


@pytest.mark.parametrize(
    ("resource", "amount"),
    [
        pytest.param("cpu", "1", id="should not allow cpu resources override"),
        pytest.param("memory", "34Gi", id="should not allow memory resources override"),
        pytest.param("pods", "324", id="should not allow pod resources override"),
    ],
)
def test_should_not_allow_resources_override(resource: str, amount: str) -> None:
    """Context("Capacity"): the three It("should not allow ... resources override") cases, one per id"""
    assert "restricted" in refused(node_overlay(capacity={resource: amount}), f'spec.capacity["{resource}"]')
