"""kubernetes-sigs/karpenter v1.14.1 `pkg/apis/v1/nodeclaim_validation_cel_test.go` (Describe "Validation"), ported
case by case onto NodeClaim YAML run through `nodewright validate`'s loader.

nodewright reads NodeClaims from the API server (almost all of them its own) and from files given to `simulate`
as capacity in flight. It checks their shape as Karpenter's CRD does, with one deliberate difference: the
restricted-key and non-negative-bound rules are not applied, because a NodeClaim's requirements carry what its
pods asked for (any label key, negative bounds from pods' Gt/Lt, and Gt -1 for a NodePool's Gte 0), and a claim
refused on reading would look like capacity that is not in flight, so nodewright would launch it twice.
"""

from __future__ import annotations

import pytest
from karpenter_yaml import loaded, nodeclaim, refused, requirement

REQS = "spec.requirements"


# --------------------------------------------------------------------------------------- Context("Taints")


def test_should_succeed_for_valid_taints() -> None:
    """It("should succeed for valid taints")"""
    taints = (
        "- {key: a, value: b, effect: NoSchedule}\n- {key: c, value: d, effect: NoExecute}\n"
        "- {key: e, value: f, effect: PreferNoSchedule}\n- {key: key-only, effect: NoExecute}"
    )
    assert [str(t) for t in loaded(nodeclaim(spec__taints=taints)).taints] == [
        "a=b:NoSchedule",
        "c=d:NoExecute",
        "e=f:PreferNoSchedule",
        "key-only:NoExecute",
    ]


def test_should_fail_for_invalid_taint_keys() -> None:
    """It("should fail for invalid taint keys"): key "???" and no effect."""
    refused(nodeclaim(spec__taints='- {key: "???"}'), "spec.taints[0].key", "is not a valid taint key")


def test_should_fail_for_missing_taint_key() -> None:
    """It("should fail for missing taint key")"""
    refused(nodeclaim(spec__taints="- {effect: NoSchedule}"), "spec.taints[0].key", "is required")


def test_should_fail_for_invalid_taint_value() -> None:
    """It("should fail for invalid taint value")"""
    refused(nodeclaim(spec__taints='- {key: invalid-value, effect: NoSchedule, value: "???"}'), "spec.taints[0].value")


def test_should_fail_for_invalid_taint_effect() -> None:
    """It("should fail for invalid taint effect")"""
    refused(nodeclaim(spec__taints='- {key: invalid-effect, effect: "???"}'), "spec.taints[0].effect")


def test_should_not_fail_for_same_key_with_different_effects() -> None:
    """It("should not fail for same key with different effects")"""
    claim = loaded(nodeclaim(spec__taints="- {key: a, effect: NoSchedule}\n- {key: a, effect: NoExecute}"))
    assert len(claim.taints) == 2


# ---------------------------------------------------------------------------------- Context("NodeClassRef")


def test_should_succeed_for_valid_group() -> None:
    """It("should succeed for valid group"), with the group of the NodeClass nodewright launches."""
    ref = "{group: karpenter.k8s.aws, kind: EC2NodeClass, name: nodeclass-test}"
    assert loaded(nodeclaim(spec__nodeClassRef=ref)).node_class == "nodeclass-test"


def test_should_fail_for_invalid_group() -> None:
    """It("should fail for invalid group")"""
    ref = "{group: karpenter.test.sh/v1, kind: EC2NodeClass, name: nodeclass-test}"
    refused(nodeclaim(spec__nodeClassRef=ref), "spec.nodeClassRef.group", "is not supported")


# ---------------------------------------------------------------------------------- Context("Requirements")


def test_should_allow_supported_ops() -> None:
    """It("should allow supported ops"), with Karpenter's Gte and Lte."""
    zone = "topology.kubernetes.io/zone"
    text = nodeclaim(
        spec__requirements=requirement(zone, "In", ["test"])
        + requirement(zone, "Gt", ["1"])
        + requirement(zone, "Lt", ["1"])
        + requirement(zone, "NotIn")
        + requirement(zone, "Exists")
        + requirement(zone, "Gte", ["1"])
        + requirement(zone, "Lte", ["1"])
    )
    assert [r.operator.value for r in loaded(text).requirements] == ["In", "Gt", "Lt", "NotIn", "Exists", "Gt", "Lt"]


def test_should_fail_for_unsupported_ops() -> None:
    """It("should fail for unsupported ops")"""
    text = nodeclaim(spec__requirements=requirement("topology.kubernetes.io/zone", "unknown", ["test"]))
    refused(text, f"{REQS}[0].operator", "is not an operator")


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("karpenter.sh/test", id="should fail for restricted domains"),
        pytest.param("karpenter.k8s.aws/test", id="should fail for restricted domains (AWS)"),
        pytest.param("kubernetes.io/hostname", id="should fail for restricted labels"),
    ],
)
def test_restricted_keys_are_read(key: str) -> None:
    """It("should fail for restricted domains") / It("should fail for restricted labels"), difference: read as written
    (see the module docstring)."""
    assert loaded(nodeclaim(spec__requirements=requirement(key, "In", ["test"]))).requirements[0].key == key


def test_restricted_labels_plus_suffix_is_no_label_key() -> None:
    """It("should fail for restricted labels") as written: RestrictedLabels + "/test" is no valid key at all."""
    refused(nodeclaim(spec__requirements=requirement("kubernetes.io/hostname/test", "In", ["test"])), f"{REQS}[0].key")


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("kubernetes.io/test", id="should allow kubernetes domains"),
        pytest.param("k8s.io/test", id="should allow kubernetes domains (k8s.io)"),
        pytest.param("subdomain.kubernetes.io/test", id="should allow kubernetes subdomains"),
        pytest.param("subdomain.k8s.io/test", id="should allow kubernetes subdomains (k8s.io)"),
        pytest.param("karpenter.sh/nodepool", id="should allow well known label exceptions (nodepool, on a NodeClaim)"),
        pytest.param("node.kubernetes.io/instance-type", id="should allow well known label exceptions"),
    ],
)
def test_allowed_keys(key: str) -> None:
    """It("should allow kubernetes domains"), It("should allow kubernetes subdomains"), It("should allow well known
    label exceptions")"""
    assert loaded(nodeclaim(spec__requirements=requirement(key, "In", ["test"]))).requirements[0].key == key


def test_should_allow_non_empty_set_after_removing_overlapped_value() -> None:
    """It("should allow non-empty set after removing overlapped value")"""
    zone = "topology.kubernetes.io/zone"
    text = nodeclaim(
        spec__requirements=requirement(zone, "In", ["test", "foo"]) + requirement(zone, "NotIn", ["test", "bar"])
    )
    assert len(loaded(text).requirements) == 2


def test_should_allow_empty_requirements() -> None:
    """It("should allow empty requirements")"""
    assert loaded(nodeclaim(spec__requirements="[]")).requirements == ()


@pytest.mark.parametrize(
    "values", [pytest.param([], id="none"), pytest.param(["1", "2"], id="two"), pytest.param(["a"], id="not a number")]
)
@pytest.mark.parametrize("operator", ["Gt", "Lt", "Gte", "Lte"])
def test_should_fail_with_invalid_bounds(operator: str, values: list[str]) -> None:
    """It("should fail with invalid GT or LT values") and It("should fail with invalid GTE or LTE values")"""
    text = nodeclaim(spec__requirements=requirement("topology.kubernetes.io/zone", operator, values))
    refused(text, f"{REQS}[0].values", "exactly one integer")


@pytest.mark.parametrize("operator", ["Gt", "Lt"])
def test_negative_bounds_are_read(operator: str) -> None:
    """Entry "-1" of the two It(...) above, difference: read as written (see the module docstring)."""
    text = nodeclaim(spec__requirements=requirement("karpenter.k8s.aws/instance-cpu", operator, ["-1"]))
    assert loaded(text).requirements[0].values == ("-1",)


@pytest.mark.parametrize(
    ("operator", "values", "min_values"),
    [
        pytest.param("In", ["insance-type-1"], -1, id="should error when minValues is negative"),
        pytest.param("In", ["insance-type-1"], 0, id="should error when minValues is zero"),
        pytest.param("Exists", None, 51, id="should error when minValues is more than 50"),
    ],
)
def test_min_values_out_of_range(operator: str, values: list[str] | None, min_values: int) -> None:
    """The three It(...) on minValues' range."""
    text = nodeclaim(spec__requirements=requirement("node.kubernetes.io/instance-type", operator, values, min_values))
    refused(text, f"{REQS}[0].minValues", "from 1 to 50")


def test_should_allow_more_than_50_values_if_min_values_is_not_specified() -> None:
    """It("should allow more than 50 values if minValues is not specified.")"""
    types = [f"instance{i}" for i in range(90)]
    claim = loaded(nodeclaim(spec__requirements=requirement("node.kubernetes.io/instance-type", "In", types)))
    assert len(claim.requirements[0].values) == 90


def test_should_error_when_min_values_is_greater_than_the_number_of_unique_values() -> None:
    """It("should error when minValues is greater than the number of unique values specified within In operator")"""
    text = nodeclaim(spec__requirements=requirement("node.kubernetes.io/instance-type", "In", ["insance-type-1"], 2))
    refused(text, f"{REQS}[0].minValues", "asks for more values")


def test_should_error_when_requirements_is_greater_than_100() -> None:
    """It("should error when requirements is greater than 100")"""
    text = nodeclaim(spec__requirements="".join(requirement(f"key-{i}", "In", [f"value-{i}"]) for i in range(101)))
    refused(text, REQS, "has 101 entries; at most 100 are allowed")


# -------------------------------------------------------------------------- Context("TerminationGracePeriod")


@pytest.mark.parametrize("value", [pytest.param("30s", id="single unit"), pytest.param("1h30m5s", id="multiple units")])
def test_should_succeed_on_a_valid_termination_grace_period(value: str) -> None:
    """DescribeTable("should succeed on a valid terminationGracePeriod")"""
    loaded(nodeclaim(spec__terminationGracePeriod=value))


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("-1s", id="negative"),
        pytest.param("1hr", id="invalid unit"),
        pytest.param("Never", id="never"),
        pytest.param("FooNever", id="partial match"),
    ],
)
def test_should_fail_on_an_invalid_termination_grace_period(value: str) -> None:
    """DescribeTable("should fail on an invalid terminationGracePeriod")"""
    refused(nodeclaim(spec__terminationGracePeriod=value), "spec.terminationGracePeriod")


# ------------------------------------------------------------------------------------ Context("ExpireAfter")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("30s", id="single unit"),
        pytest.param("1h30m5s", id="multiple units"),
        pytest.param("Never", id="never"),
    ],
)
def test_should_succeed_on_a_valid_expire_after(value: str) -> None:
    """DescribeTable("should succeed on a valid expireAfter")"""
    loaded(nodeclaim(spec__expireAfter=value))


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("-1s", id="negative"),
        pytest.param("1hr", id="invalid unit"),
        pytest.param("FooNever", id="partial match"),
    ],
)
def test_should_fail_on_an_invalid_expire_after(value: str) -> None:
    """DescribeTable("should fail on an invalid expireAfter")"""
    refused(nodeclaim(spec__expireAfter=value), "spec.expireAfter")
