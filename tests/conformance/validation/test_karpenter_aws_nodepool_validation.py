"""aws/karpenter-provider-aws v1.14.1 `pkg/apis/v1/nodepool_validation_cel_test.go` (Describe "CEL/Validation"):
NodePools against the AWS provider's well-known labels and known values, ported case by case onto NodePool
YAML run through `nodewright validate`'s loader. The core suite is in test_karpenter_nodepool_validation.py.
"""

from __future__ import annotations

import pytest
from karpenter_yaml import loaded, nodepool, refused

from nodewright.model.label_rules import TENANCY_LABEL, UNSUPPORTED_LABELS, WELL_KNOWN_LABELS

REQS = "spec.template.spec.requirements"


def only(key: str, operator: str, values: list[str]) -> str:
    """test.ReplaceRequirements: the one requirement of the pool."""
    return nodepool(requirements=f"- {{key: {key}, operator: {operator}, values: [{', '.join(values)}]}}")


@pytest.mark.parametrize("key", sorted(WELL_KNOWN_LABELS - {"karpenter.sh/capacity-type", TENANCY_LABEL}))
def test_requirements_should_allow_well_known_label_exceptions(key: str) -> None:
    """Context("Requirements") It("should allow well known label exceptions"). Difference for the well-known labels no
    nodewright node carries yet (placement groups, interruptible reservations): a named error."""
    text = only(key, "In", ["test"])
    if key in UNSUPPORTED_LABELS:
        refused(text, f"{REQS}[0].key", "not supported yet by nodewright")
    else:
        assert loaded(text).requirements[0].values == ("test",)


def test_should_fail_validation_with_only_invalid_capacity_types() -> None:
    """It("should fail validation with only invalid capacity types")"""
    refused(
        only("karpenter.sh/capacity-type", "In", ["xspot"]),
        f"{REQS}[0].values",
        "no value of karpenter.sh/capacity-type is valid",
    )


def test_should_pass_validation_with_valid_capacity_types() -> None:
    """It("should pass validation with valid capacity types")"""
    assert loaded(only("karpenter.sh/capacity-type", "In", ["on-demand"])).requirements[0].values == ("on-demand",)


def test_should_fail_open_if_invalid_and_valid_capacity_types_are_present() -> None:
    """It("should fail open if invalid and valid capacity types are present"): the invalid value matches no offering."""
    pool = loaded(only("karpenter.sh/capacity-type", "In", ["on-demand", "xspot"]))
    assert pool.requirements[0].values == ("on-demand", "xspot")


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(["xdedicated"], id="should fail validation with only invalid tenancy types"),
        pytest.param(["default"], id="should pass validation with valid tenancy types"),
        pytest.param(["default", "xdedicated"], id="should fail open if invalid and valid tenancy types are present"),
    ],
)
def test_tenancy_is_not_supported_yet(values: list[str]) -> None:
    """The three tenancy It(...), difference: nodewright launches default-tenancy instances only and does not label
    nodes with their tenancy, so any requirement on it is refused by name."""
    refused(only(TENANCY_LABEL, "In", values), f"{REQS}[0].key", "dedicated tenancy is not supported yet by nodewright")


@pytest.mark.parametrize("key", sorted(WELL_KNOWN_LABELS))
def test_labels_should_allow_well_known_label_exceptions(key: str) -> None:
    """Context("Labels") It("should allow well known label exceptions"): a template label on a well-known key, with
    any value. Difference for the well-known labels no nodewright node carries yet."""
    text = nodepool(labels=f"{{{key}: test}}")
    if key in UNSUPPORTED_LABELS:
        refused(text, f'spec.template.metadata.labels["{key}"]', "not supported yet by nodewright")
    else:
        assert loaded(text).labels == {key: "test"}
