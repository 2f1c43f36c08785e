"""NodePool parsing: every Karpenter v1 field, every validation rule, and the error format."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.model.nodepool import Budget, NodePool
from nodewright.model.parse import parse_nodepool
from nodewright.model.requirements import Operator, Requirement

from .helpers import NODEPOOL, with_field, without_field

REQS = "spec.template.spec.requirements"


def ok(doc: dict[str, Any]) -> NodePool:
    pool, errors = parse_nodepool(doc, "pools.yaml")
    assert errors == [], [str(e) for e in errors]
    assert pool is not None
    return pool


def errors_of(doc: dict[str, Any]) -> list[str]:
    pool, errors = parse_nodepool(doc, "pools.yaml")
    assert pool is None
    assert errors
    return [str(e) for e in errors]


def one_error(doc: dict[str, Any]) -> str:
    messages = errors_of(doc)
    assert len(messages) == 1, messages
    return messages[0]


def requirement(**fields: Any) -> dict[str, Any]:
    return with_field(NODEPOOL, REQS, [fields])


def test_minimal_pool_gets_karpenter_defaults() -> None:
    pool = ok(NODEPOOL)
    assert pool.name == "default"
    assert pool.node_class_ref.name == "default"
    assert pool.expire_after_seconds == 720 * 3600
    assert pool.disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert pool.disruption.budgets == (Budget(nodes="10%"),)
    assert pool.weight == 0
    assert pool.api_version == "karpenter.sh/v1"
    assert pool.source == "pools.yaml"


def test_nodewright_api_version_is_accepted() -> None:
    assert ok(with_field(NODEPOOL, "apiVersion", "nodewright.io/v1")).api_version == "nodewright.io/v1"


def test_pre_v1_api_version_is_named() -> None:
    message = one_error(with_field(NODEPOOL, "apiVersion", "karpenter.sh/v1beta1"))
    assert message.startswith("pools.yaml: NodePool/default: apiVersion: ")
    assert "pre-v1" in message


def test_full_pool() -> None:
    doc = with_field(
        NODEPOOL,
        "spec",
        {
            "template": {
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                    "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
                    "startupTaints": [{"key": "init", "effect": "NoExecute"}],
                    "expireAfter": "Never",
                    "terminationGracePeriod": "1h30m",
                },
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "Never",
                "budgets": [
                    {"nodes": "0", "schedule": "@daily", "duration": "10m", "reasons": ["Drifted", "Empty"]},
                    {"nodes": "100%"},
                ],
            },
            "limits": {"cpu": 1000, "memory": "1000Gi", "nodes": "10", "nvidia.com/gpu": "8"},
            "weight": 100,
        },
    )
    pool = ok(doc)
    assert pool.labels == {"team": "a"}
    assert pool.annotations == {"note": "x"}
    assert pool.requirements == (Requirement("karpenter.sh/capacity-type", Operator.IN, ("spot",)),)
    assert [str(t) for t in pool.taints] == ["gpu=true:NoSchedule"]
    assert [str(t) for t in pool.startup_taints] == ["init:NoExecute"]
    assert pool.expire_after_seconds is None
    assert pool.termination_grace_period_seconds == 5400
    assert pool.disruption.consolidation_policy == "WhenEmpty"
    assert pool.disruption.consolidate_after_seconds is None
    assert pool.disruption.budgets == (
        Budget(nodes="0", schedule="@daily", duration_seconds=600, reasons=("Drifted", "Empty")),
        Budget(nodes="100%"),
    )
    assert pool.limits == {"cpu": 1_000_000, "memory": 1000 * 2**30, "nodes": 10, "nvidia.com/gpu": 8}
    assert pool.weight == 100


# ---------------------------------------------------------------------------------------- operators


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"key": "team", "operator": "In", "values": ["a", "b"]}, Requirement("team", Operator.IN, ("a", "b"))),
        ({"key": "team", "operator": "NotIn", "values": ["a"]}, Requirement("team", Operator.NOT_IN, ("a",))),
        ({"key": "team", "operator": "Exists"}, Requirement("team", Operator.EXISTS)),
        ({"key": "team", "operator": "DoesNotExist"}, Requirement("team", Operator.DOES_NOT_EXIST)),
        (
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
            Requirement("karpenter.k8s.aws/instance-generation", Operator.GT, ("2",)),
        ),
        (
            {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["65"]},
            Requirement("karpenter.k8s.aws/instance-cpu", Operator.LT, ("65",)),
        ),
        (
            {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 3},
            Requirement("node.kubernetes.io/instance-type", Operator.EXISTS, (), 3),
        ),
        (
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "c5"], "minValues": 2},
            Requirement("karpenter.k8s.aws/instance-family", Operator.IN, ("m5", "c5"), 2),
        ),
    ],
)
def test_operators_accepted(fields: dict[str, Any], expected: Requirement) -> None:
    assert ok(requirement(**fields)).requirements == (expected,)


@pytest.mark.parametrize(
    ("fields", "path", "fragment"),
    [
        ({"key": "a", "operator": "Equals", "values": ["x"]}, "operator", '"Equals" is not an operator; use one of'),
        ({"key": "a", "operator": "in", "values": ["x"]}, "operator", "did you mean In?"),
        ({"key": "a", "operator": "In"}, "values", "operator In needs at least one value"),
        ({"key": "a", "operator": "In", "values": []}, "values", "needs at least one value"),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, "values", "takes no values"),
        ({"key": "a", "operator": "DoesNotExist", "values": ["x"]}, "values", "takes no values"),
        ({"key": "a", "operator": "Gt", "values": ["x"]}, "values", "exactly one non-negative integer"),
        ({"key": "a", "operator": "Gt", "values": ["1", "2"]}, "values", "exactly one"),
        ({"key": "a", "operator": "Lt", "values": []}, "values", "exactly one"),
        ({"key": "a", "operator": "Lt", "values": ["-1"]}, "values", "non-negative"),
        ({"key": "a", "operator": "In", "values": ["x"], "minValues": 2}, "minValues", "asks for more values"),
        ({"key": "a", "operator": "Exists", "minValues": 0}, "minValues", "from 1 to 50"),
        ({"key": "a", "operator": "Exists", "minValues": 51}, "minValues", "from 1 to 50"),
        ({"key": "a", "operator": "In", "values": [2]}, "values[0]", "must be a string"),
        ({"operator": "Exists"}, "key", "is required"),
        ({"key": "a"}, "operator", "is required"),
        ({"key": "bad key!", "operator": "Exists"}, "key", "not a valid label key"),
        ({"key": "a", "operator": "Exists", "value": ["x"]}, "value", "did you mean values?"),
    ],
)
def test_operator_rules(fields: dict[str, Any], path: str, fragment: str) -> None:
    message = one_error(requirement(**fields))
    assert message.startswith(f"pools.yaml: NodePool/default: {REQS}[0].{path}: "), message
    assert fragment in message


def test_error_names_the_requirement_index() -> None:
    reqs = [
        {"key": "a", "operator": "Exists"},
        {"key": "b", "operator": "Exists"},
        {"key": "c", "operator": "Equals", "values": ["x"]},
    ]
    message = one_error(with_field(NODEPOOL, REQS, reqs))
    assert message == (
        "pools.yaml: NodePool/default: spec.template.spec.requirements[2].operator: "
        '"Equals" is not an operator; use one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte'
    )


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("karpenter.sh/nodepool", "sets it to the NodePool's name"),
        ("kubernetes.io/hostname", "each node gets its own"),
        ("karpenter.sh/anything", 'label domain "karpenter.sh" is restricted'),
        ("team.karpenter.sh/x", 'label domain "karpenter.sh" is restricted'),
        ("karpenter.k8s.aws/instance-familly", "did you mean karpenter.k8s.aws/instance-family?"),
        ("karpenter.k8s.aws/ec2nodeclass", 'label domain "karpenter.k8s.aws" is restricted'),
        ("karpenter.k8s.aws/instance-tenancy", "dedicated tenancy is not supported yet by nodewright"),
        ("karpenter.k8s.aws/placement-group-id", "placement groups are not supported yet"),
    ],
)
def test_restricted_requirement_keys(key: str, fragment: str) -> None:
    message = one_error(requirement(key=key, operator="Exists"))
    assert message.startswith(f"pools.yaml: NodePool/default: {REQS}[0].key: "), message
    assert fragment in message


@pytest.mark.parametrize(
    "key",
    [
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "kubernetes.io/arch",
        "beta.kubernetes.io/arch",
        "failure-domain.beta.kubernetes.io/zone",
        "karpenter.sh/capacity-type",
        "karpenter.k8s.aws/instance-gpu-count",
        "topology.k8s.aws/zone-id",
        "node.kubernetes.io/team",
        "kubelet.kubernetes.io/team",
        "example.com/team",
        # Labels the kubelet may not register with: registration copies them from the NodeClaim, as Karpenter.
        "kubernetes.io/custom",
        "node-role.kubernetes.io/worker",
        "kops.k8s.io/instancegroup",
    ],
)
def test_allowed_requirement_keys(key: str) -> None:
    assert ok(requirement(key=key, operator="Exists")).requirements[0].key == key


@pytest.mark.parametrize("key", ["node-role.kubernetes.io/control-plane", "kops.k8s.io/instancegroup"])
@pytest.mark.parametrize("operator", ["NotIn", "DoesNotExist"])
def test_kubernetes_domain_labels_may_be_excluded(key: str, operator: str) -> None:
    values = ["x"] if operator == "NotIn" else None
    fields = {"key": key, "operator": operator, **({"values": values} if values else {})}
    assert ok(requirement(**fields)).requirements[0].operator.value == operator


def test_capacity_types_fail_only_when_none_is_valid() -> None:
    message = one_error(requirement(key="karpenter.sh/capacity-type", operator="In", values=["ondemand"]))
    assert message.startswith(f"pools.yaml: NodePool/default: {REQS}[0].values: no value of karpenter.sh/capacity-type")
    assert "did you mean on-demand?" in message
    mixed = ok(requirement(key="karpenter.sh/capacity-type", operator="In", values=["spot", "xspot"]))
    assert mixed.requirements[0].values == ("spot", "xspot")
    short = one_error(requirement(key="karpenter.sh/capacity-type", operator="In", values=["spot", "x"], minValues=2))
    assert "minValues 2 needs that many valid values" in short


@pytest.mark.parametrize(("key", "value"), [("kubernetes.io/arch", "arm"), ("kubernetes.io/os", "linuxx")])
def test_other_well_known_labels_take_any_value(key: str, value: str) -> None:
    assert ok(requirement(key=key, operator="In", values=[value])).requirements[0].values == (value,)


@pytest.mark.parametrize(
    ("operator", "value", "stored"),
    [
        ("Gte", "4", Requirement("karpenter.k8s.aws/instance-cpu", Operator.GT, ("3",), 2)),
        ("Lte", "0", Requirement("karpenter.k8s.aws/instance-cpu", Operator.LT, ("1",), 2)),
    ],
)
def test_inclusive_bounds_become_the_equivalent_exclusive_ones(operator: str, value: str, stored: Requirement) -> None:
    pool = ok(requirement(key="karpenter.k8s.aws/instance-cpu", operator=operator, values=[value], minValues=2))
    assert pool.requirements == (stored,)


# ------------------------------------------------------------------------------------------ fields


def test_typo_suggests_nearest_field() -> None:
    doc = with_field(NODEPOOL, "spec.template.spec.requirments", [])
    assert (
        'pools.yaml: NodePool/default: spec.template.spec.requirments: unknown field "requirments"; '
        "did you mean requirements?" in errors_of(doc)
    )


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("spec.weight", 0, "spec.weight: 0 is out of range; use an integer from 1 to 100"),
        ("spec.weight", 101, "spec.weight: 101 is out of range"),
        ("spec.weight", "10", "spec.weight: must be an integer"),
        ("spec.limits", {"cpu": "lots"}, "spec.limits[\"cpu\"]: 'lots' is not a quantity"),
        ("spec.limits", {"memory": "-1Gi"}, "is negative"),
        ("spec.template.spec.expireAfter", "30d", 'spec.template.spec.expireAfter: "30d" uses the unit "d"'),
        ("spec.template.spec.terminationGracePeriod", "Never", "not allowed here"),
        ("spec.template.spec.taints", [{"key": "a", "effect": "NoSchedul"}], "did you mean NoSchedule?"),
        ("spec.template.spec.taints", [{"effect": "NoSchedule"}], "taints[0].key: is required"),
        (
            "spec.template.spec.taints",
            [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}],
            "taints[1]: duplicate taint a:NoSchedule",
        ),
        ("spec.template.spec.startupTaints", [{"key": "a"}], "startupTaints[0].effect: is required"),
        ("spec.template.metadata.labels", {"karpenter.sh/nodepool": "x"}, "is restricted"),
        ("spec.template.metadata.labels", {"team": "not valid!"}, "not a valid label value"),
        ("spec.template.metadata.labels", {"team": 5}, 'must be a string, not an integer (quote it: "5")'),
        ("spec.template.metadata.labels", {f"k{i}": "v" for i in range(101)}, "has 101 labels; at most 100"),
        (
            "spec.template.spec.startupTaints",
            [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
            "startupTaints[0]: duplicate taint dedicated:NoSchedule; it is in spec.template.spec.taints already",
        ),
        ("spec.template.spec.kubelet", {"maxPods": 10}, "kubelet settings moved to the EC2NodeClass"),
        ("spec.replicas", -1, "at least 0"),
        (
            "spec.template.spec.nodeClassRef",
            {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"},
            "name: is required",
        ),
        (
            "spec.template.spec.nodeClassRef",
            {"group": "example.com", "kind": "EC2NodeClass", "name": "x"},
            'group: "example.com" is not supported',
        ),
        (
            "spec.template.spec.nodeClassRef",
            {"group": "karpenter.k8s.aws", "kind": "AKSNodeClass", "name": "x"},
            'kind: "AKSNodeClass" is not supported',
        ),
        (
            "spec.template.spec.nodeClassRef",
            {"apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "name": "x"},
            "apiVersion is the v1beta1 form",
        ),
        ("metadata.name", "Not_Valid", "metadata.name: "),
    ],
)
def test_field_rules(path: str, value: Any, fragment: str) -> None:
    doc = with_field(
        NODEPOOL, "spec.template.spec.taints", [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
    )
    messages = errors_of(with_field(doc, path, value))
    assert any(fragment in m for m in messages), messages


def test_required_fields() -> None:
    assert "spec.template.spec.nodeClassRef: is required" in one_error(
        without_field(NODEPOOL, "spec.template.spec.nodeClassRef")
    )
    assert "spec.template.spec.requirements: is required" in one_error(
        without_field(NODEPOOL, "spec.template.spec.requirements")
    )
    assert "spec: is required" in one_error(without_field(NODEPOOL, "spec"))
    assert "metadata.name: is required" in " ".join(errors_of(with_field(NODEPOOL, "metadata", {})))


# -------------------------------------------------------------------------------------- disruption


def disruption(**fields: Any) -> dict[str, Any]:
    return with_field(NODEPOOL, "spec.disruption", fields)


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"consolidationPolicy": "WhenUnderutilized", "consolidateAfter": "0s"}, "renamed WhenEmptyOrUnderutilized"),
        ({"consolidationPolicy": "Sometimes", "consolidateAfter": "0s"}, '"Sometimes" is not valid'),
        ({"consolidationPolicy": "WhenEmpty"}, "consolidateAfter: is required in Karpenter v1"),
        ({"consolidateAfter": "5 minutes"}, "spec.disruption.consolidateAfter:"),
        ({"consolidateAfter": "0s", "expireAfter": "720h"}, "moved to spec.template.spec.expireAfter"),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "10"}] * 51}, "at most 50"),
        ({"consolidateAfter": "0s", "budgets": [{}]}, "budgets[0].nodes: is required"),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "101%"}]}, "not a node count or percentage"),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "ten"}]}, "not a node count or percentage"),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": 3}]}, 'must be a string, not an integer (quote it: "3")'),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "@daily"}]}, "must be set together"),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "duration": "1h"}]}, "must be set together"),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "0 9 * *", "duration": "1h"}]}, "4 fields"),
        (
            {"consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "@daily", "duration": "30s"}]},
            "hours and minutes",
        ),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "reasons": ["Expired"]}]}, '"Expired" is not valid'),
        ({"consolidateAfter": "0s", "budgets": [{"nodes": "1", "reason": ["Empty"]}]}, "did you mean reasons?"),
        (
            {"consolidateAfter": "0s", "budgets": [{"nodes": "1", "reasons": ["Empty", "Empty"]}]},
            "reasons[1]: duplicate reason Empty",
        ),
    ],
)
def test_disruption_rules(fields: dict[str, Any], fragment: str) -> None:
    messages = errors_of(disruption(**fields))
    assert any(fragment in m for m in messages), messages


def test_budget_duration_accepts_go_string_form() -> None:
    pool = ok(disruption(consolidateAfter="0s", budgets=[{"nodes": "1", "schedule": "@daily", "duration": "1h30m0s"}]))
    assert pool.disruption.budgets[0].duration_seconds == 5400


def test_all_errors_of_a_document_are_reported() -> None:
    doc = with_field(NODEPOOL, "spec.weight", 0)
    doc = with_field(doc, "spec.template.spec.expireAfter", "forever")
    doc = with_field(doc, REQS, [{"key": "a", "operator": "Equals"}, {"key": "b", "operator": "Gt", "values": []}])
    doc = with_field(doc, "spec.limitz", {})
    paths = [m.split(": ")[2] for m in errors_of(doc)]
    assert paths == [
        "spec.limitz",
        f"{REQS}[0].operator",
        f"{REQS}[1].values",
        "spec.template.spec.expireAfter",
        "spec.weight",
    ]
