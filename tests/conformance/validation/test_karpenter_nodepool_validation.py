"""kubernetes-sigs/karpenter v1.14.1 `pkg/apis/v1/nodepool_validation_cel_test.go` (Describe "CEL/Validation",
each case both the CRD's admission rules and `RuntimeValidate`) and `pkg/apis/v1/nodepool_default_test.go`,
ported case by case onto NodePool YAML run through `nodewright validate`'s loader.

The suite's object is the NodePool of its BeforeEach, with the AWS provider's nodeClassRef (the core suite's
TestNodeClass is a test double; nodewright reads EC2NodeClass references only). Where nodewright differs on
purpose, the test asserts nodewright's behaviour and says why; the README's "Validation" section lists each
difference.
"""

from __future__ import annotations

import pytest
import yaml
from karpenter_yaml import REQUIREMENTS, loaded, nodepool, refused, requirement

from nodewright.model.label_rules import UNSUPPORTED_LABELS, WELL_KNOWN_LABELS
from nodewright.model.nodepool import Budget
from nodewright.model.parse import nodepool_update_problems

LONG = "a" * 250  # strings.ToLower(randomdata.Alphanumeric(250))


# ---------------------------------------------------------------------------------- Context("Disruption")


def test_should_succeed_on_a_disabled_expire_after() -> None:
    """It("should succeed on a disabled expireAfter")"""
    assert loaded(nodepool(spec__template__spec__expireAfter="Never")).expire_after_seconds is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param("30s", 30, id="single unit"),
        pytest.param("1h30m5s", 5405, id="multiple units"),
        pytest.param("Never", None, id="never"),
    ],
)
def test_should_succeed_on_a_valid_expire_after(value: str, seconds: int | None) -> None:
    """DescribeTable("should succeed on a valid expireAfter")"""
    assert loaded(nodepool(spec__template__spec__expireAfter=value)).expire_after_seconds == seconds


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
    refused(nodepool(spec__template__spec__expireAfter=value), "spec.template.spec.expireAfter", value)


def test_should_succeed_on_a_disabled_consolidate_after() -> None:
    """It("should succeed on a disabled consolidateAfter")"""
    pool = loaded(nodepool(spec__disruption="consolidateAfter: Never"))
    assert pool.disruption.consolidate_after_seconds is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param("30s", 30, id="single unit"),
        pytest.param("1h30m5s", 5405, id="multiple units"),
        pytest.param("Never", None, id="never"),
    ],
)
def test_should_succeed_on_a_valid_consolidate_after(value: str, seconds: int | None) -> None:
    """DescribeTable("should succeed on a valid consolidateAfter")"""
    pool = loaded(nodepool(spec__disruption=f"consolidateAfter: {value}"))
    assert pool.disruption.consolidate_after_seconds == seconds


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("-1s", id="negative"),
        pytest.param("1hr", id="invalid unit"),
        pytest.param("FooNever", id="partial match"),
    ],
)
def test_should_fail_on_an_invalid_consolidate_after(value: str) -> None:
    """DescribeTable("should fail on an invalid consolidateAfter")"""
    refused(nodepool(spec__disruption=f"consolidateAfter: {value}"), "spec.disruption.consolidateAfter", value)


@pytest.mark.parametrize(
    ("after", "policy"),
    [
        pytest.param(
            "30s", "WhenEmpty", id="should succeed when setting consolidateAfter with consolidationPolicy=WhenEmpty"
        ),
        pytest.param(
            "30s",
            "WhenEmptyOrUnderutilized",
            id="should succeed when setting consolidateAfter with consolidationPolicy=WhenUnderutilized",
        ),
        pytest.param(
            "Never",
            "WhenEmptyOrUnderutilized",
            id="should succeed when setting consolidateAfter to 'Never' with consolidationPolicy=WhenUnderutilized",
        ),
        pytest.param(
            "Never",
            "WhenEmpty",
            id="should succeed when setting consolidateAfter to 'Never' with consolidationPolicy=WhenEmpty",
        ),
    ],
)
def test_consolidate_after_with_each_policy(after: str, policy: str) -> None:
    """The four It(...) on consolidateAfter with a consolidationPolicy."""
    pool = loaded(nodepool(spec__disruption=f"{{consolidateAfter: {after}, consolidationPolicy: {policy}}}"))
    assert pool.disruption.consolidation_policy == policy


@pytest.mark.parametrize("policy", ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"])
def test_should_succeed_on_a_valid_consolidation_policy(policy: str) -> None:
    """DescribeTable("should succeed on a valid consolidationPolicy") and ("should pass RuntimeValidate for valid
    consolidationPolicy"). Balanced (v1.14) is accepted like the others: nodewright does not consolidate yet
    under any policy (README)."""
    pool = loaded(nodepool(spec__disruption=f"{{consolidateAfter: 0s, consolidationPolicy: {policy}}}"))
    assert pool.disruption.consolidation_policy == policy


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param('"1"', id="quoted 1"),
        pytest.param('"2"', id="quoted 2"),
        pytest.param('"3"', id="quoted 3"),
        pytest.param('"0"', id="level 0"),
        pytest.param('"4"', id="level 4"),
        pytest.param('"10"', id="level 10"),
        pytest.param("balanced", id="lowercase balanced"),
        pytest.param("whenempty", id="lowercase whenempty"),
        pytest.param('""', id="empty string"),
        pytest.param("WhenUnderutilized", id="WhenUnderutilized"),
        pytest.param("foo", id="arbitrary string"),
    ],
)
def test_should_fail_on_an_invalid_consolidation_policy(policy: str) -> None:
    """DescribeTable("should fail on an invalid consolidationPolicy")"""
    refused(
        nodepool(spec__disruption=f"{{consolidateAfter: 0s, consolidationPolicy: {policy}}}"),
        "spec.disruption.consolidationPolicy",
    )


def test_lower_case_policies_name_the_right_spelling() -> None:
    """Entry("lowercase balanced") and Entry("WhenUnderutilized"): the message names the fix."""
    refused(
        nodepool(spec__disruption="{consolidateAfter: 0s, consolidationPolicy: balanced}"),
        "spec.disruption",
        "did you mean Balanced?",
    )
    refused(
        nodepool(spec__disruption="{consolidateAfter: 0s, consolidationPolicy: WhenUnderutilized}"),
        "spec.disruption.consolidationPolicy",
        "renamed WhenEmptyOrUnderutilized",
    )


def budgets(text: str) -> str:
    return nodepool(spec__disruption=f"consolidateAfter: 0s\nbudgets:\n{text}")


# metav1.Duration reaches the API server as Go's Duration.String(): 20m is "20m0s".
@pytest.mark.parametrize(
    ("budget", "path", "fragment"),
    [
        pytest.param(
            '- {nodes: "10", schedule: "*", duration: 20m0s}',
            "schedule",
            "has 1 fields",
            id="should fail when creating a budget with an invalid cron",
        ),
        pytest.param(
            '- {nodes: "10", schedule: "* * * * ", duration: 20m0s}',
            "schedule",
            "has 4 fields",
            id="should fail when creating a schedule with less than 5 entries",
        ),
        pytest.param(
            '- {nodes: "10", schedule: "* * * * *", duration: -20m0s}',
            "duration",
            "",
            id="should fail when creating a budget with a negative duration",
        ),
        pytest.param(
            '- {nodes: "10", schedule: "* * * * *", duration: 30s}',
            "duration",
            "hours and minutes",
            id="should fail when creating a budget with a seconds duration",
        ),
        pytest.param(
            '- {nodes: "-10"}',
            "nodes",
            "not a node count",
            id="should fail when creating a budget with a negative value int",
        ),
        pytest.param(
            '- {nodes: "-10%"}',
            "nodes",
            "not a node count",
            id="should fail when creating a budget with a negative value percent",
        ),
        pytest.param(
            '- {nodes: "1000%"}',
            "nodes",
            "not a node count",
            id="should fail when creating a budget with a value percent with more than 3 digits",
        ),
        pytest.param(
            '- {nodes: "10", schedule: "* * * * *"}',
            "duration",
            "set together",
            id="should fail when creating a budget with a cron but no duration",
        ),
        pytest.param(
            '- {nodes: "10", duration: 20m0s}',
            "schedule",
            "set together",
            id="should fail when creating a budget with a duration but no cron",
        ),
    ],
)
def test_invalid_budgets(budget: str, path: str, fragment: str) -> None:
    """The It(...) refusing one budget."""
    refused(budgets(budget), f"spec.disruption.budgets[0].{path}", fragment)


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        pytest.param(
            '- {nodes: "10", schedule: "* * * * *", duration: 20m0s}',
            Budget("10", "* * * * *", 1200),
            id="should succeed when creating a budget with both duration and cron",
        ),
        pytest.param(
            '- {nodes: "10", schedule: "* * * * *", duration: 2h20m0s}',
            Budget("10", "* * * * *", 8400),
            id="should succeed when creating a budget with hours and minutes in duration",
        ),
        pytest.param(
            '- {nodes: "10"}', Budget("10"), id="should succeed when creating a budget with neither duration nor cron"
        ),
        pytest.param(
            '- {nodes: "10", schedule: "@annually", duration: 20m0s}',
            Budget("10", "@annually", 1200),
            id="should succeed when creating a budget with special cased crons",
        ),
    ],
)
def test_valid_budgets(budget: str, expected: Budget) -> None:
    """The It(...) accepting one budget."""
    assert loaded(budgets(budget)).disruption.budgets == (expected,)


def test_should_fail_when_creating_two_budgets_where_one_has_an_invalid_crontab() -> None:
    """It("should fail when creating two budgets where one has an invalid crontab")"""
    text = budgets(
        '- {nodes: "10", schedule: "@annually", duration: 20m0s}\n- {nodes: "10", schedule: "*", duration: 20m0s}'
    )
    refused(text, "spec.disruption.budgets[1].schedule")


def test_should_fail_when_creating_multiple_budgets_where_one_doesnt_have_both_schedule_and_duration() -> None:
    """It("should fail when creating multiple budgets where one doesn't have both schedule and duration")"""
    text = budgets(
        '- {nodes: "10", duration: 20m0s}\n- {nodes: "10", schedule: "* * * * *", duration: 20m0s}\n- {nodes: "10"}'
    )
    refused(text, "spec.disruption.budgets[0].schedule", "set together")


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param("Drifted", id="should allow disruption reason Drifted"),
        pytest.param("Underutilized", id="should allow disruption reason Underutilized"),
        pytest.param("Empty", id="should allow disruption reason Empty"),
    ],
)
def test_should_succeed_when_creating_a_budget_with_valid_reasons(reason: str) -> None:
    """DescribeTable("should succeed when creating a budget with valid reasons")"""
    text = budgets(f'- {{nodes: "10", schedule: "* * * * *", duration: 20m0s, reasons: [{reason}]}}')
    assert loaded(text).disruption.budgets[0].reasons == (reason,)


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param("invalid", id="should not allow invalid reason"),
        pytest.param("expired", id="should not allow expired disruption reason"),
        pytest.param('""', id="should not allow empty reason"),
    ],
)
def test_should_fail_when_creating_a_budget_with_invalid_reasons(reason: str) -> None:
    """DescribeTable("should fail when creating a budget with invalid reasons")"""
    text = budgets(f'- {{nodes: "10", schedule: "* * * * *", duration: 20m0s, reasons: [{reason}]}}')
    refused(text, "spec.disruption.budgets[0].reasons[0]", "use one of Underutilized, Empty, Drifted")


def test_should_allow_setting_multiple_reasons() -> None:
    """It("should allow setting multiple reasons")"""
    text = budgets('- {nodes: "10", schedule: "* * * * *", duration: 20m0s, reasons: [Drifted, Empty]}')
    assert loaded(text).disruption.budgets[0].reasons == ("Drifted", "Empty")


# --------------------------------------------------------------------------------------- Context("Taints")

INVALID_KEYS = ["test.com.com}", "Test.com/test", "test/test/test", "test/", "/test"]


def test_should_succeed_for_valid_taints() -> None:
    """It("should succeed for valid taints")"""
    taints = """
- {key: a, value: b, effect: NoSchedule}
- {key: c, value: d, effect: NoExecute}
- {key: e, value: f, effect: PreferNoSchedule}
- {key: Test, value: f, effect: PreferNoSchedule}
- {key: test.com/Test, value: f, effect: PreferNoSchedule}
- {key: test.com.com/test, value: f, effect: PreferNoSchedule}
- {key: key-only, effect: NoExecute}
"""
    assert [t.key for t in loaded(nodepool(taints=taints)).taints] == [
        "a",
        "c",
        "e",
        "Test",
        "test.com/Test",
        "test.com.com/test",
        "key-only",
    ]


@pytest.mark.parametrize("key", INVALID_KEYS)
def test_should_fail_for_invalid_taint_keys(key: str) -> None:
    """It("should fail for invalid taint keys")"""
    refused(nodepool(taints=f'- {{key: "{key}", effect: NoSchedule}}'), "spec.template.spec.taints[0].key")


@pytest.mark.parametrize("key", [f"test.com.test.{LONG}/test", f"test.com.test/test-{LONG}"])
def test_should_fail_at_runtime_for_taint_keys_that_are_too_long(key: str) -> None:
    """It("should fail at runtime for taint keys that are too long")"""
    refused(nodepool(taints=f"- {{key: {key}, effect: NoSchedule}}"), "spec.template.spec.taints[0].key")


def test_should_fail_for_missing_taint_key() -> None:
    """It("should fail for missing taint key")"""
    refused(nodepool(taints="- {effect: NoSchedule}"), "spec.template.spec.taints[0].key", "is required")


def test_should_fail_for_invalid_taint_value() -> None:
    """It("should fail for invalid taint value")"""
    refused(
        nodepool(taints='- {key: invalid-value, effect: NoSchedule, value: "???"}'),
        "spec.template.spec.taints[0].value",
    )


def test_should_fail_for_invalid_taint_effect() -> None:
    """It("should fail for invalid taint effect")"""
    refused(
        nodepool(taints='- {key: invalid-effect, effect: "???"}'), "spec.template.spec.taints[0].effect", "use one of"
    )


def test_should_not_fail_for_same_key_with_different_effects() -> None:
    """It("should not fail for same key with different effects")"""
    pool = loaded(nodepool(taints="- {key: a, effect: NoSchedule}\n- {key: a, effect: NoExecute}"))
    assert [str(t) for t in pool.taints] == ["a:NoSchedule", "a:NoExecute"]


# --------------------------------------------------------------------------------- Context("Requirements")


def test_should_succeed_for_valid_requirement_keys() -> None:
    """It("should succeed for valid requirement keys")"""
    keys = ["Test", "test.com/Test", "test.com.com/test", "key-only"]
    pool = loaded(nodepool(requirements="".join(requirement(k, "Exists") for k in keys)))
    assert [r.key for r in pool.requirements] == keys


@pytest.mark.parametrize("key", INVALID_KEYS)
def test_should_fail_for_invalid_requirement_keys(key: str) -> None:
    """It("should fail for invalid requirement keys")"""
    refused(nodepool(requirements=requirement(f'"{key}"', "Exists")), f"{REQUIREMENTS}[0].key")


@pytest.mark.parametrize("key", [f"test.com.test.{LONG}/test", f"test.com.test/test-{LONG}"])
def test_should_fail_at_runtime_for_requirement_keys_that_are_too_long(key: str) -> None:
    """It("should fail at runtime for requirement keys that are too long")"""
    refused(nodepool(requirements=requirement(key, "Exists")), f"{REQUIREMENTS}[0].key")


def test_should_fail_for_the_nodepool_label_requirement() -> None:
    """It("should fail for the karpenter.sh/nodepool label") in Context("Requirements")"""
    refused(
        nodepool(requirements=requirement("karpenter.sh/nodepool", "In", ["x"])), f"{REQUIREMENTS}[0].key", "restricted"
    )


def test_should_allow_supported_ops() -> None:
    """It("should allow supported ops"), and Karpenter's Gte / Lte (stored as the equivalent Gt / Lt)."""
    zone = "topology.kubernetes.io/zone"
    text = nodepool(
        requirements=requirement(zone, "In", ["test"])
        + requirement(zone, "Gt", ["1"])
        + requirement(zone, "Lt", ["1"])
        + requirement(zone, "NotIn")
        + requirement(zone, "Exists")
        + requirement(zone, "Gte", ["1"])
        + requirement(zone, "Lte", ["1"])
    )
    operators = [(r.operator.value, r.values) for r in loaded(text).requirements]
    assert operators == [
        ("In", ("test",)),
        ("Gt", ("1",)),
        ("Lt", ("1",)),
        ("NotIn", ()),
        ("Exists", ()),
        ("Gt", ("0",)),
        ("Lt", ("2",)),
    ]


def test_should_fail_for_unsupported_ops() -> None:
    """It("should fail for unsupported ops")"""
    text = nodepool(requirements=requirement("topology.kubernetes.io/zone", "unknown", ["test"]))
    refused(text, f"{REQUIREMENTS}[0].operator", "use one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte")


@pytest.mark.parametrize("domain", ["karpenter.sh", "karpenter.k8s.aws"])
def test_should_fail_for_restricted_domains(domain: str) -> None:
    """It("should fail for restricted domains"): RestrictedLabelDomains, with the AWS provider's domain."""
    refused(
        nodepool(requirements=requirement(f"{domain}/test", "In", ["test"])),
        f"{REQUIREMENTS}[0].key",
        f'label domain "{domain}"',
    )


def test_should_fail_for_restricted_labels() -> None:
    """It("should fail for restricted labels"): RestrictedLabels + "/test", which is no label key at all; the
    restricted label itself is refused too."""
    refused(nodepool(requirements=requirement("kubernetes.io/hostname/test", "In", ["test"])), f"{REQUIREMENTS}[0].key")
    refused(
        nodepool(requirements=requirement("kubernetes.io/hostname", "In", ["test"])),
        f"{REQUIREMENTS}[0].key",
        "restricted",
    )


@pytest.mark.parametrize(
    "key", ["kubernetes.io/test", "k8s.io/test", "subdomain.kubernetes.io/test", "subdomain.k8s.io/test"]
)
def test_kubernetes_domains_are_allowed(key: str) -> None:
    """It("should allow kubernetes domains") and It("should allow kubernetes subdomains exceptions"): accepted,
    as in Karpenter since v1.9; the kubelet may not register with such a label, so registration copies the
    NodeClaim's labels onto the node (`service.provision.lifecycle`)."""
    for operator in ("In", "NotIn"):
        assert loaded(nodepool(requirements=requirement(key, operator, ["test"]))).requirements[0].key == key
    assert loaded(nodepool(requirements=requirement(key, "DoesNotExist"))).requirements[0].key == key


@pytest.mark.parametrize(
    "key", ["node.kubernetes.io/pool", "kubelet.kubernetes.io/pool", "team.node.kubernetes.io/pool"]
)
def test_kubernetes_domains_the_kubelet_may_set_are_allowed(key: str) -> None:
    """It("should allow kubernetes domains"), for the namespaces the kubelet may label its own node with."""
    assert loaded(nodepool(requirements=requirement(key, "In", ["test"]))).requirements[0].key == key


SUPPORTED_WELL_KNOWN = sorted(WELL_KNOWN_LABELS - {"karpenter.sh/capacity-type"} - set(UNSUPPORTED_LABELS))


@pytest.mark.parametrize("key", SUPPORTED_WELL_KNOWN)
def test_should_allow_well_known_label_exceptions(key: str) -> None:
    """It("should allow well known label exceptions"): every well-known label but the capacity type (whose values are
    checked) takes any value, here "test". The set is core's with the AWS provider's additions."""
    assert loaded(nodepool(requirements=requirement(key, "In", ["test"]))).requirements[0].values == ("test",)


@pytest.mark.parametrize("key", sorted(UNSUPPORTED_LABELS))
def test_well_known_labels_nodewright_cannot_offer_are_named(key: str) -> None:
    """It("should allow well known label exceptions"), difference: tenancy, placement groups and interruptible
    reservations are well-known to Karpenter, but no nodewright node carries them yet."""
    refused(
        nodepool(requirements=requirement(key, "In", ["test"])),
        f"{REQUIREMENTS}[0].key",
        "not supported yet by nodewright",
    )


def test_beta_labels_are_checked_as_their_ga_names() -> None:
    """ValidateRequirement normalizes beta labels before the restricted-label check."""
    for key in (
        "beta.kubernetes.io/arch",
        "failure-domain.beta.kubernetes.io/zone",
        "beta.kubernetes.io/instance-type",
    ):
        assert loaded(nodepool(requirements=requirement(key, "In", ["test"]))).requirements[0].key == key


def test_should_allow_non_empty_set_after_removing_overlapped_value() -> None:
    """It("should allow non-empty set after removing overlapped value")"""
    zone = "topology.kubernetes.io/zone"
    pool = loaded(
        nodepool(requirements=requirement(zone, "In", ["test", "foo"]) + requirement(zone, "NotIn", ["test", "bar"]))
    )
    assert len(pool.requirements) == 2


def test_should_allow_empty_requirements() -> None:
    """It("should allow empty requirements")"""
    assert loaded(nodepool(requirements="[]")).requirements == ()


BAD_BOUNDS = [
    pytest.param([], id="none"),
    pytest.param(["1", "2"], id="two"),
    pytest.param(["a"], id="not a number"),
    pytest.param(["-1"], id="negative"),
]


@pytest.mark.parametrize("values", BAD_BOUNDS)
@pytest.mark.parametrize("operator", ["Gt", "Lt"])
def test_should_fail_with_invalid_gt_or_lt_values(operator: str, values: list[str]) -> None:
    """It("should fail with invalid GT or LT values")"""
    text = nodepool(requirements=requirement("topology.kubernetes.io/zone", operator, values))
    refused(text, f"{REQUIREMENTS}[0].values", "exactly one non-negative integer")


@pytest.mark.parametrize("values", BAD_BOUNDS)
@pytest.mark.parametrize("operator", ["Gte", "Lte"])
def test_should_fail_with_invalid_gte_or_lte_values(operator: str, values: list[str]) -> None:
    """It("should fail with invalid GTE or LTE values")"""
    text = nodepool(requirements=requirement("topology.kubernetes.io/zone", operator, values))
    refused(text, f"{REQUIREMENTS}[0].values", "exactly one non-negative integer")


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
    text = nodepool(requirements=requirement("node.kubernetes.io/instance-type", operator, values, min_values))
    refused(text, f"{REQUIREMENTS}[0].minValues", "from 1 to 50")


def test_should_allow_more_than_50_values_if_min_values_is_not_specified() -> None:
    """It("should allow more than 50 values if minValues is not specified.")"""
    types = [f"instance{i}" for i in range(90)]
    pool = loaded(nodepool(requirements=requirement("node.kubernetes.io/instance-type", "In", types)))
    assert len(pool.requirements[0].values) == 90


def test_should_error_when_min_values_is_greater_than_the_number_of_unique_values() -> None:
    """It("should error when minValues is greater than the number of unique values specified within In operator")"""
    text = nodepool(requirements=requirement("node.kubernetes.io/instance-type", "In", ["insance-type-1"], 2))
    refused(text, f"{REQUIREMENTS}[0].minValues", "asks for more values than the 1 listed")


# --------------------------------------------------------------------------------------- Context("Labels")


def test_should_allow_unrecognized_labels() -> None:
    """It("should allow unrecognized labels")"""
    assert loaded(nodepool(labels="{foo: silly-name}")).labels == {"foo": "silly-name"}


def test_should_fail_for_the_nodepool_label() -> None:
    """It("should fail for the karpenter.sh/nodepool label") in Context("Labels")"""
    refused(
        nodepool(labels="{karpenter.sh/nodepool: silly-name}"),
        'spec.template.metadata.labels["karpenter.sh/nodepool"]',
        "restricted",
    )


def test_should_fail_for_invalid_label_keys() -> None:
    """It("should fail for invalid label keys")"""
    refused(
        nodepool(labels='{"spaces are not allowed": silly-name}'),
        'spec.template.metadata.labels["spaces are not allowed"]',
    )


@pytest.mark.parametrize("key", [f"test.com.test.{LONG}/test", f"test.com.test/test-{LONG}"])
def test_should_fail_at_runtime_for_label_keys_that_are_too_long(key: str) -> None:
    """It("should fail at runtime for label keys that are too long")"""
    refused(nodepool(labels=f"{{{key}: silly-name}}"), "spec.template.metadata.labels")


def test_should_fail_for_invalid_label_values() -> None:
    """It("should fail for invalid label values")"""
    refused(
        nodepool(labels='{silly-name: "/ is not allowed"}'),
        'spec.template.metadata.labels["silly-name"]',
        "not a valid label value",
    )


@pytest.mark.parametrize("domain", ["karpenter.sh", "karpenter.k8s.aws"])
def test_should_fail_for_restricted_label_domains(domain: str) -> None:
    """It("should fail for restricted label domains")"""
    refused(
        nodepool(labels=f"{{{domain}/unknown: silly-name}}"),
        "spec.template.metadata.labels",
        f'label domain "{domain}"',
    )


@pytest.mark.parametrize(
    "labels",
    [
        pytest.param(
            "{kops.k8s.io/instancegroup: karpenter-nodes, kops.k8s.io/gpu: '1'}", id="should allow labels kOps require"
        ),
        pytest.param(
            "{kubernetes.io/key: test-value}",
            id="should allow labels prefixed with the kubernetes domain (kubernetes.io)",
        ),
        pytest.param("{k8s.io/key: test-value}", id="should allow labels prefixed with the kubernetes domain (k8s.io)"),
        pytest.param(
            "{subdomain.kubernetes.io/key: test-value}",
            id="should allow subdomain labels prefixed with the kubernetes domain",
        ),
        pytest.param(
            "{subdomain.k8s.io/key: test-value}",
            id="should allow subdomain labels prefixed with the kubernetes domain (k8s)",
        ),
    ],
)
def test_labels_in_the_kubernetes_domains_are_allowed(labels: str) -> None:
    """As Karpenter: labels in the kubernetes.io and k8s.io namespaces are accepted (registration copies the
    NodeClaim's labels onto the node, which the kubelet may not do)."""
    assert loaded(nodepool(labels=labels)).labels == {k: str(v) for k, v in yaml.safe_load(labels).items()}


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("kubernetes.io", id="should allow labels in kubernetes domains (kubernetes.io)"),
        pytest.param("k8s.io", id="should allow labels in kubernetes domains (k8s.io)"),
        pytest.param(
            "subdomain.kubernetes.io", id="should allow subdomain labels in restricted domains exceptions list"
        ),
        pytest.param(
            "subdomain.k8s.io", id="should allow subdomain labels in restricted domains exceptions list (k8s)"
        ),
        pytest.param("node.kubernetes.io/pool", id="the kubelet's own namespace"),
    ],
)
def test_labels_without_a_restricted_prefix_are_allowed(key: str) -> None:
    """It("should allow labels in kubernetes domains") and It("should allow subdomain labels in restricted domains
    exceptions list"): "kubernetes.io" as a key has no prefix at all."""
    assert loaded(nodepool(labels=f"{{{key}: test-value}}")).labels == {key: "test-value"}


# ----------------------------------------------------------------------------- Context("TerminationGracePeriod")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [pytest.param("30s", 30, id="single unit"), pytest.param("1h30m5s", 5405, id="multiple units")],
)
def test_should_succeed_on_a_valid_termination_grace_period(value: str, seconds: int) -> None:
    """DescribeTable("should succeed on a valid terminationGracePeriod")"""
    assert (
        loaded(nodepool(spec__template__spec__terminationGracePeriod=value)).termination_grace_period_seconds == seconds
    )


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
    refused(nodepool(spec__template__spec__terminationGracePeriod=value), "spec.template.spec.terminationGracePeriod")


# ------------------------------------------------------------------------------------ Context("NodeClassRef")

REF = "spec.template.spec.nodeClassRef"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("group", "karpenter.test.mutated.sh", id="should fail to mutate group"),
        pytest.param("group", "TestNodeClass2", id="should fail to mutate kind"),
    ],
)
def test_other_node_class_groups(field: str, value: str) -> None:
    """It("should fail to mutate group") / It("should fail to mutate kind") test immutability on update, which a file
    has none of; the groups they switch to are refused anyway: nodewright reads EC2NodeClasses only."""
    refused(nodepool(**{f"{REF.replace('.', '__')}__{field}": value}), f"{REF}.{field}", "is not supported")


@pytest.mark.parametrize(
    "field",
    [
        pytest.param("group", id="should fail if group is unset"),
        pytest.param("kind", id="should fail if kind is unset"),
        pytest.param("name", id="should fail if name is unset"),
    ],
)
def test_node_class_ref_fields_must_be_set(field: str) -> None:
    """It("should fail if group/kind/name is unset")"""
    refused(nodepool(**{f"{REF.replace('.', '__')}__{field}": '""'}), f"{REF}.{field}", "must not be empty")


# -------------------------------------------------------------------------------------- Context("Replicas")


@pytest.mark.parametrize(
    "replicas",
    [
        pytest.param("5", id="should succeed when replicas is set to a positive value"),
        pytest.param("0", id="should succeed when replicas is set to zero"),
        pytest.param("1000", id="should succeed when replicas is set to a large value"),
    ],
)
def test_valid_replicas_values(replicas: str) -> None:
    """Context("Valid Replicas Values"): the pool loads as a static pool of that many nodes."""
    pool = loaded(nodepool(spec__replicas=replicas))
    assert pool.static and pool.replicas == int(replicas)


def test_should_fail_when_replicas_is_set_to_a_negative_value() -> None:
    """Context("Invalid Replicas Values"): It("should fail when replicas is set to a negative value")."""
    refused(nodepool(spec__replicas="-100"), "spec.replicas", "0")


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        pytest.param({"spec__limits": "{cpu: '1000'}"}, 'spec.limits["cpu"]', id="limits.cpu"),
        pytest.param({"spec__limits": "{memory: 2000Gi}"}, 'spec.limits["memory"]', id="limits.memory"),
        pytest.param({"spec__limits": "{pods: '10'}"}, 'spec.limits["pods"]', id="limits.pods"),
        pytest.param(
            {"spec__limits": "{ephemeral-storage: 10Gi}"},
            'spec.limits["ephemeral-storage"]',
            id="limits.ephemeral-storage",
        ),
        pytest.param({"spec__weight": "25"}, "spec.weight", id="weight"),
    ],
)
def test_should_fail_for_incompatible_fields(changes: dict[str, str], path: str) -> None:
    """DescribeTable("should fail for incompatible fields"), 10 replicas: refused at the field, saying static
    pools do not support it; the same field loads on a dynamic pool."""
    found = refused(nodepool(spec__replicas="10", **changes), path, "static NodePools")
    assert len(found) == 1, found
    loaded(nodepool(**changes))


COMPATIBLE_REQUIREMENTS = (
    requirement(
        "node.kubernetes.io/instance-type",
        "In",
        ["m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "r5.large", "r5.xlarge"],
        min_values=3,
    )
    + requirement("topology.kubernetes.io/zone", "In", ["us-west-2a", "us-west-2b", "us-west-2c"])
    + requirement("karpenter.sh/capacity-type", "In", ["on-demand", "spot"])
    + requirement("kubernetes.io/arch", "In", ["amd64"])
    + requirement("karpenter.k8s.aws/instance-memory", "Gt", ["8192"])
    + requirement("karpenter.k8s.aws/instance-cpu", "Lt", ["64"])
)


STARTUP_TAINT = "[{key: example.com/initializing, value: 'true', effect: NoSchedule}]"


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"spec__limits": "{nodes: '100'}"}, id="limits.nodes"),
        pytest.param(
            {
                "spec__disruption": (
                    "consolidationPolicy: WhenEmptyOrUnderutilized\n"
                    "consolidateAfter: 5m\n"
                    "budgets:\n"
                    "  - {nodes: 20%, schedule: '0 9 * * mon-fri', duration: 8h0m0s, reasons: [Drifted, Empty]}\n"
                    "  - {nodes: 30%, schedule: '0 22 * * sat,sun', duration: 4h0m0s, reasons: [Underutilized]}\n"
                    "  - {nodes: '5'}\n"
                )
            },
            id="disruption with multiple budgets",
        ),
        pytest.param({"labels": "{environment: production}"}, id="template labels"),
        pytest.param(
            {"spec__template__metadata__annotations": "{example.com/last-updated: '2024-01-01'}"},
            id="template annotations",
        ),
        pytest.param({"taints": "[{key: gpu-workload, value: enabled, effect: NoSchedule}]"}, id="taints"),
        pytest.param(
            {"spec__template__spec__startupTaints": STARTUP_TAINT},
            id="startup taints",
        ),
        pytest.param({"requirements": COMPATIBLE_REQUIREMENTS}, id="requirements"),
        pytest.param({"spec__template__spec__expireAfter": "72h"}, id="expireAfter"),
        pytest.param({"spec__template__spec__terminationGracePeriod": "5m0s"}, id="terminationGracePeriod"),
    ],
)
def test_should_succeed_for_compatible_fields(changes: dict[str, str]) -> None:
    """DescribeTable("should succeed for compatible fields"), 10 replicas: the static pool loads with the field."""
    pool = loaded(nodepool(spec__replicas="10", **changes))
    assert pool.replicas == 10


def test_should_succeed_when_consolidate_after_is_omitted_on_a_static_nodepool() -> None:
    """It("should succeed when consolidateAfter is omitted on a static NodePool"): a static pool ignores it, so a
    disruption stanza without it loads (a dynamic pool must name it)."""
    text = nodepool(spec__replicas="3", spec__disruption="budgets: [{nodes: '1'}]")
    assert loaded(text).replicas == 3
    refused(nodepool(spec__disruption="budgets: [{nodes: '1'}]"), "spec.disruption.consolidateAfter")


@pytest.mark.parametrize(
    ("created", "updated", "refusal"),
    [
        pytest.param(
            {"spec__replicas": "3"},
            {"spec__replicas": "5"},
            "",
            id="should succeed when increasing replicas in a NodePool",
        ),
        pytest.param(
            {"spec__replicas": "3"},
            {},
            "cannot be removed",
            id="should fail when changing the NodePool from static to dynamic",
        ),
        pytest.param(
            {},
            {"spec__replicas": "3"},
            "cannot be added",
            id="should fail when changing the NodePool from dynamic to static",
        ),
        pytest.param(
            {"spec__replicas": "3", "spec__limits": "{nodes: '10'}"},
            {"spec__replicas": "3", "spec__limits": "{nodes: '100'}"},
            "",
            id="should succeed when changing the static NodePool nodes limit",
        ),
    ],
)
def test_replicas_update_scenarios(created: dict[str, str], updated: dict[str, str], refusal: str) -> None:
    """Context("Update Scenarios"): the CRD's transition rule, as `nodewright validate --previous` checks it
    (`nodepool_update_problems`): each version loads on its own, the update is refused only when it adds or removes
    spec.replicas."""
    problems = nodepool_update_problems(loaded(nodepool(**created)), loaded(nodepool(**updated)))
    if refusal:
        assert [(p.path, refusal in p.message) for p in problems] == [("spec.replicas", True)], problems
    else:
        assert problems == []


# ------------------------------------------------------------------- nodepool_default_test.go Describe("CEL/Default")


def test_should_default_the_disruption_stanza_when_undefined() -> None:
    """It("should default the disruption stanza when undefined")"""
    disruption = loaded(nodepool()).disruption
    assert disruption.consolidate_after_seconds == 0
    assert disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert disruption.budgets == (Budget(nodes="10%"),)
