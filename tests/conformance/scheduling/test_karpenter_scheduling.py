"""Karpenter v1.14.1 pkg/controllers/provisioning/scheduling/suite_test.go, its constraint sections, ported case
by case: Custom Constraints (NodePool labels, well-known labels, constraint validation, scheduling logic with
every operator), Preferential Fallback, Instance Type Compatibility, Binpacking, In-Flight Nodes and Existing
Nodes. The suite repeats its Well Known Labels, Constraints Validation and Scheduling Logic contexts a second
time with the same cases (less Gte/Lte and the NodePool readiness case); each is ported once.

Each test names the Context and It it mirrors. The suite's NodePool allows every capacity type; its catalog is
fake.CloudProvider's default (see sched_fake: default-instance-type is c5.xlarge, small-instance-type t3.small,
arm-instance-type r6g.4xlarge, spot in zones 1-2 and on-demand in all three). The fake's numeric label
(fake.IntegerInstanceLabelKey, the vCPU count) is karpenter.k8s.aws/instance-cpu. A pod without requests in
Karpenter's case requests 10m and 16Mi here.
"""

from __future__ import annotations

import dataclasses

import pytest
from builders import daemonset, host_port, itype, node, pod, pods, pool, preferred, req, run, unschedulable
from sched_fake import (
    ARM,
    DEFAULT,
    SMALL,
    ZONE_1,
    ZONE_2,
    ZONE_3,
    Cluster,
    default_catalog,
    from_yaml,
    real,
    spread_catalog,
)

from nodewright.catalog.labels import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_CPU,
    INSTANCE_LOCAL_NVME,
    INSTANCE_SIZE,
    INSTANCE_TYPE,
    OS,
    ZONE,
)
from nodewright.catalog.types import ON_DEMAND, SPOT
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.objects import HOSTNAME_LABEL, Node, NodeSelectorTerm, Pod, PreferredSchedulingTerm
from nodewright.model.requirements import Requirement
from nodewright.model.taints import Taint
from nodewright.scheduling.results import Results

FILE = "pkg/controllers/provisioning/scheduling/suite_test.go"


def suite_pool(*requirements: Requirement, **kwargs: object) -> object:
    """The suite's NodePool: every capacity type, plus what a case adds (a case that sets requirements
    replaces the capacity-type requirement, as Karpenter's cases do)."""
    reqs = requirements or (req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND, "reserved"),)
    return pool("default", *reqs, **kwargs)  # type: ignore[arg-type]


def required(*requirements: Requirement) -> tuple[NodeSelectorTerm, ...]:
    return (NodeSelectorTerm(tuple(requirements)),)


def p(name: str = "p", cpu: str = "10m", memory: str = "16Mi", **kwargs: object) -> Pod:
    return pod(name, cpu, memory, **kwargs)  # type: ignore[arg-type]


def one(results: Results, pod_: Pod, cluster: Cluster | None = None) -> dict[str, str]:
    """ExpectScheduled for a single provision: the labels of the claim (its cheapest option) the pod is on."""
    assert not results.unschedulable, results.unschedulable
    claim = next(c for c in results.nodeclaims if pod_.key in c.pods)
    it = {t.name: t for t in (cluster.types if cluster else default_catalog())}[claim.cheapest.instance_type]
    return {**it.labels, **claim.labels, ZONE: claim.cheapest.zone, CAPACITY_TYPE: claim.cheapest.capacity_type}


def solve_one(pod_: Pod, *pools: object, types: list | None = None) -> Results:  # type: ignore[type-arg]
    return run([pod_], pools=list(pools or (suite_pool(),)), types=types if types is not None else default_catalog())  # type: ignore[arg-type]


def labels_of(pod_: Pod, *pools: object) -> dict[str, str]:
    return one(solve_one(pod_, *pools), pod_)


def not_scheduled(pod_: Pod, *pools: object, types: list | None = None) -> str:  # type: ignore[type-arg]
    results = solve_one(pod_, *pools, types=types)
    assert not results.nodeclaims and not results.existing
    return unschedulable(results)[pod_.key]


# ----- Custom Constraints / NodePool with Labels ---------------------------------------------------------


def test_nodepool_labels_should_schedule_unconstrained_pods_that_dont_have_matching_node_selectors() -> None:
    """Describe("Custom Constraints") Context("NodePool with Labels") It("should schedule unconstrained pods
    that don't have matching node selectors")."""
    assert labels_of(p(), suite_pool(labels={"test-key": "test-value"}))["test-key"] == "test-value"


def test_nodepool_labels_should_not_schedule_pods_that_have_conflicting_node_selectors() -> None:
    """It("should not schedule pods that have conflicting node selectors")."""
    reason = not_scheduled(
        p(node_selector={"test-key": "different-value"}), suite_pool(labels={"test-key": "test-value"})
    )
    assert "test-key" in reason


def test_nodepool_labels_should_not_schedule_pods_that_have_node_selectors_with_undefined_key() -> None:
    """It("should not schedule pods that have node selectors with undefined key")."""
    assert "label test-key is not defined" in not_scheduled(p(node_selector={"test-key": "test-value"}))


def test_nodepool_labels_should_schedule_pods_that_have_matching_requirements() -> None:
    """It("should schedule pods that have matching requirements")."""
    pending = p(required_node_terms=required(req("test-key", "In", "test-value", "another-value")))
    assert labels_of(pending, suite_pool(labels={"test-key": "test-value"}))["test-key"] == "test-value"


def test_nodepool_labels_should_not_schedule_pods_that_have_conflicting_requirements() -> None:
    """It("should not schedule pods that have conflicting requirements")."""
    pending = p(required_node_terms=required(req("test-key", "In", "another-value")))
    not_scheduled(pending, suite_pool(labels={"test-key": "test-value"}))


# ----- Well Known Labels ---------------------------------------------------------------------------------


def test_well_known_labels_should_use_nodepool_constraints() -> None:
    """Context("Well Known Labels") It("should use NodePool constraints")."""
    assert labels_of(p(), suite_pool(req(ZONE, "In", ZONE_2)))[ZONE] == ZONE_2


def test_well_known_labels_should_use_node_selectors() -> None:
    """It("should use node selectors")."""
    pending = p(node_selector={ZONE: ZONE_2})
    assert labels_of(pending, suite_pool(req(ZONE, "In", ZONE_1, ZONE_2)))[ZONE] == ZONE_2


def test_well_known_labels_should_not_schedule_nodes_with_a_hostname_selector() -> None:
    """It("should not schedule nodes with a hostname selector")."""
    assert "a new node gets a name of its own" in not_scheduled(p(node_selector={HOSTNAME_LABEL: "red-node"}))


def test_well_known_labels_should_not_schedule_the_pod_if_nodeselector_unknown() -> None:
    """It("should not schedule the pod if nodeselector unknown")."""
    not_scheduled(p(node_selector={ZONE: "unknown"}), suite_pool(req(ZONE, "In", ZONE_1)))


def test_well_known_labels_should_not_schedule_if_node_selector_outside_of_nodepool_constraints() -> None:
    """It("should not schedule if node selector outside of NodePool constraints")."""
    not_scheduled(p(node_selector={ZONE: ZONE_2}), suite_pool(req(ZONE, "In", ZONE_1)))


def test_well_known_labels_should_schedule_compatible_requirements_with_operator_in() -> None:
    """It("should schedule compatible requirements with Operator=In")."""
    assert labels_of(p(required_node_terms=required(req(ZONE, "In", ZONE_3))))[ZONE] == ZONE_3


def test_well_known_labels_should_schedule_compatible_requirements_with_operator_gt() -> None:
    """It("should schedule compatible requirements with Operator=Gt"): only the arm type has more than 8."""
    assert labels_of(p(), suite_pool(req(INSTANCE_CPU, "Gt", "8")))[INSTANCE_CPU] == "16"


def test_well_known_labels_should_schedule_compatible_requirements_with_operator_lt() -> None:
    """It("should schedule compatible requirements with Operator=Lt"): the cheapest below 8 is the small type."""
    assert labels_of(p(), suite_pool(req(INSTANCE_CPU, "Lt", "8")))[INSTANCE_CPU] == "2"


def bound_pool(operator: str, value: str) -> object:
    """The suite's NodePool with one integer bound on the cpu label, read by the NodePool parser (Gte and Lte
    are Karpenter v1.9+ operators)."""
    inputs = from_yaml(
        f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements: [{{key: {INSTANCE_CPU}, operator: {operator}, values: ["{value}"]}}]
"""
    )
    return inputs.nodepools[0]


def test_well_known_labels_should_schedule_compatible_requirements_with_operator_gte() -> None:
    """It("should schedule compatible requirements with Operator=Gte"): Gte 16, as the NodePool parser reads it."""
    assert labels_of(p(), bound_pool("Gte", "16"))[INSTANCE_CPU] == "16"


def test_well_known_labels_should_schedule_compatible_requirements_with_operator_lte() -> None:
    """It("should schedule compatible requirements with Operator=Lte"): Lte 2."""
    assert labels_of(p(), bound_pool("Lte", "2"))[INSTANCE_CPU] == "2"


def test_well_known_labels_should_not_schedule_incompatible_preferences_and_requirements_with_operator_in() -> None:
    """It("should not schedule incompatible preferences and requirements with Operator=In")."""
    assert "topology.kubernetes.io/zone In [unknown]" in not_scheduled(
        p(required_node_terms=required(req(ZONE, "In", "unknown")))
    )


def test_well_known_labels_should_schedule_compatible_requirements_with_operator_not_in() -> None:
    """It("should schedule compatible requirements with Operator=NotIn")."""
    pending = p(required_node_terms=required(req(ZONE, "NotIn", ZONE_1, ZONE_2, "unknown")))
    assert labels_of(pending)[ZONE] == ZONE_3


def test_well_known_labels_should_not_schedule_incompatible_preferences_and_requirements_with_operator_not_in() -> None:
    """It("should not schedule incompatible preferences and requirements with Operator=NotIn")."""
    not_scheduled(p(required_node_terms=required(req(ZONE, "NotIn", ZONE_1, ZONE_2, ZONE_3, "unknown"))))


ALL_ZONES = req(ZONE, "In", ZONE_1, ZONE_2, ZONE_3, "unknown")


def test_well_known_labels_should_schedule_compatible_preferences_and_requirements_with_operator_in() -> None:
    """It("should schedule compatible preferences and requirements with Operator=In")."""
    pending = p(
        required_node_terms=required(ALL_ZONES),
        preferred_node_terms=(preferred(1, req(ZONE, "In", ZONE_2, "unknown")),),
    )
    assert labels_of(pending)[ZONE] == ZONE_2


def test_well_known_labels_should_schedule_incompatible_preferences_and_requirements_with_operator_in() -> None:
    """It("should schedule incompatible preferences and requirements with Operator=In")."""
    pending = p(
        required_node_terms=required(ALL_ZONES), preferred_node_terms=(preferred(1, req(ZONE, "In", "unknown")),)
    )
    assert labels_of(pending)[ZONE] in (ZONE_1, ZONE_2, ZONE_3)


def test_well_known_labels_should_schedule_compatible_preferences_and_requirements_with_operator_not_in() -> None:
    """It("should schedule compatible preferences and requirements with Operator=NotIn")."""
    pending = p(
        required_node_terms=required(ALL_ZONES),
        preferred_node_terms=(preferred(1, req(ZONE, "NotIn", ZONE_1, ZONE_3)),),
    )
    assert labels_of(pending)[ZONE] == ZONE_2


def test_well_known_labels_should_schedule_incompatible_preferences_and_requirements_with_operator_not_in() -> None:
    """It("should schedule incompatible preferences and requirements with Operator=NotIn")."""
    pending = p(
        required_node_terms=required(ALL_ZONES),
        preferred_node_terms=(preferred(1, req(ZONE, "NotIn", ZONE_1, ZONE_2, ZONE_3)),),
    )
    assert labels_of(pending)[ZONE] in (ZONE_1, ZONE_2, ZONE_3)


def test_well_known_labels_should_schedule_compatible_node_selectors_preferences_and_requirements() -> None:
    """It("should schedule compatible node selectors, preferences and requirements")."""
    three = req(ZONE, "In", ZONE_1, ZONE_2, ZONE_3)
    pending = p(
        node_selector={ZONE: ZONE_3}, required_node_terms=required(three), preferred_node_terms=(preferred(1, three),)
    )
    assert labels_of(pending)[ZONE] == ZONE_3


def test_well_known_labels_should_combine_multidimensional_node_selectors_preferences_and_requirements() -> None:
    """It("should combine multidimensional node selectors, preferences and requirements")."""
    pending = p(
        node_selector={ZONE: ZONE_3, INSTANCE_TYPE: ARM},
        required_node_terms=required(req(ZONE, "In", ZONE_1, ZONE_3), req(INSTANCE_TYPE, "In", DEFAULT, ARM)),
        preferred_node_terms=(preferred(1, req(ZONE, "NotIn", "unknown"), req(INSTANCE_TYPE, "NotIn", "unknown")),),
    )
    labels = labels_of(pending)
    assert (labels[ZONE], labels[INSTANCE_TYPE]) == (ZONE_3, ARM)


# ----- Constraints Validation ----------------------------------------------------------------------------


def test_constraints_validation_should_not_schedule_pods_that_have_node_selectors_with_restricted_labels() -> None:
    """Context("Constraints Validation") It("should not schedule pods that have node selectors with restricted
    labels"): kubernetes.io/hostname, the one restricted label, names no node that exists."""
    not_scheduled(p(required_node_terms=required(req(HOSTNAME_LABEL, "In", "test"))))


def test_constraints_validation_should_not_schedule_pods_that_have_node_selectors_with_restricted_domains() -> None:
    """It("should not schedule pods that have node selectors with restricted domains"): karpenter.sh."""
    assert "karpenter.sh/test" in not_scheduled(p(required_node_terms=required(req("karpenter.sh/test", "In", "test"))))


@pytest.mark.parametrize(
    "wording",
    [
        "should schedule pods that have node selectors with label in the kubernetes domains",
        "should schedule pods that have node selectors with label in kubernetes domains",
    ],
)
def test_constraints_validation_should_schedule_pods_with_node_selectors_with_label_in_the_kubernetes_domains(
    wording: str,
) -> None:
    """It("should schedule pods that have node selectors with label in the kubernetes domains") and its twin in
    the suite's repeated contexts, It("should schedule pods that have node selectors with label in kubernetes
    domains"), the same case (each parametrize id is one exact text): labels a NodePool's requirements set in
    kubernetes.io and k8s.io land on the node. Whether the NodePool parser accepts such keys is the validation
    suite's case."""
    prov = suite_pool(req("kubernetes.io/test", "In", "test-value"), req("k8s.io/test", "In", "test-value"))
    labels = labels_of(p(), prov)
    assert labels["kubernetes.io/test"] == labels["k8s.io/test"] == "test-value"


def test_constraints_validation_should_schedule_pods_with_label_in_subdomain_from_kubernetes_domains() -> None:
    """It("should schedule pods that have node selectors with label in subdomain from kubernetes domains")."""
    prov = suite_pool(
        req("subdomain.kubernetes.io/test", "In", "test-value"), req("subdomain.k8s.io/test", "In", "test-value")
    )
    labels = labels_of(p(), prov)
    assert labels["subdomain.kubernetes.io/test"] == labels["subdomain.k8s.io/test"] == "test-value"


def test_constraints_validation_should_schedule_pods_with_node_selectors_with_label_in_wellknown_label_list() -> None:
    """It("should schedule pods that have node selectors with label in wellknown label list")."""
    selectors = ({ZONE: ZONE_1}, {INSTANCE_TYPE: DEFAULT}, {ARCH: "arm64"}, {OS: "linux"}, {CAPACITY_TYPE: SPOT})
    pending = [p(f"p-{i}", node_selector=s) for i, s in enumerate(selectors)]
    results = run(pending, pools=[suite_pool()], types=default_catalog())
    assert not results.unschedulable
    assert sum(len(c.pods) for c in results.nodeclaims) == len(selectors)


# ----- Scheduling Logic ----------------------------------------------------------------------------------


def test_scheduling_logic_should_not_schedule_pods_with_nodepool_which_is_not_ready() -> None:
    """Context("Scheduling Logic") It("should not schedule pods with nodePool which is not ready "): a NodePool
    is not ready when its EC2NodeClass is missing; it launches nothing and the reason says why."""
    reason = not_scheduled(p(), pool("default", node_class="missing"))
    assert "EC2NodeClass missing not found" in reason


def test_scheduling_logic_should_not_schedule_pods_with_in_operator_and_undefined_key() -> None:
    """It("should not schedule pods that have node selectors with In operator and undefined key")."""
    not_scheduled(p(required_node_terms=required(req("test-key", "In", "test-value"))))


def test_scheduling_logic_should_schedule_pods_with_not_in_operator_and_undefined_key() -> None:
    """It("should schedule pods that have node selectors with NotIn operator and undefined key")."""
    assert "test-key" not in labels_of(p(required_node_terms=required(req("test-key", "NotIn", "test-value"))))


def test_scheduling_logic_should_not_schedule_pods_with_exists_operator_and_undefined_key() -> None:
    """It("should not schedule pods that have node selectors with Exists operator and undefined key")."""
    not_scheduled(p(required_node_terms=required(req("test-key", "Exists"))))


def test_scheduling_logic_should_schedule_pods_with_does_not_exists_operator_and_undefined_key() -> None:
    """It("should schedule pods that with DoesNotExists operator and undefined key")."""
    assert "test-key" not in labels_of(p(required_node_terms=required(req("test-key", "DoesNotExist"))))


KEYED = req("test-key", "In", "test-value")


def test_scheduling_logic_should_schedule_unconstrained_pods_that_dont_have_matching_node_selectors() -> None:
    """It("should schedule unconstrained pods that don't have matching node selectors")."""
    assert labels_of(p(), suite_pool(KEYED))["test-key"] == "test-value"


def test_scheduling_logic_should_schedule_pods_with_matching_value_and_in_operator() -> None:
    """It("should schedule pods that have node selectors with matching value and In operator")."""
    assert labels_of(p(required_node_terms=required(KEYED)), suite_pool(KEYED))["test-key"] == "test-value"


def test_scheduling_logic_should_not_schedule_pods_with_matching_value_and_not_in_operator() -> None:
    """It("should not schedule pods that have node selectors with matching value and NotIn operator")."""
    not_scheduled(p(required_node_terms=required(req("test-key", "NotIn", "test-value"))), suite_pool(KEYED))


def test_scheduling_logic_should_schedule_the_pod_with_exists_operator_and_defined_key() -> None:
    """It("should schedule the pod with Exists operator and defined key")."""
    assert (
        labels_of(p(required_node_terms=required(req("test-key", "Exists"))), suite_pool(KEYED))["test-key"]
        == "test-value"
    )


def test_scheduling_logic_should_not_schedule_the_pod_with_does_not_exists_operator_and_defined_key() -> None:
    """It("should not schedule the pod with DoesNotExists operator and defined key")."""
    not_scheduled(p(required_node_terms=required(req("test-key", "DoesNotExist"))), suite_pool(KEYED))


def test_scheduling_logic_should_not_schedule_pods_with_different_value_and_in_operator() -> None:
    """It("should not schedule pods that have node selectors with different value and In operator")."""
    not_scheduled(p(required_node_terms=required(req("test-key", "In", "another-value"))), suite_pool(KEYED))


def test_scheduling_logic_should_schedule_pods_with_different_value_and_not_in_operator() -> None:
    """It("should schedule pods that have node selectors with different value and NotIn operator")."""
    pending = p(required_node_terms=required(req("test-key", "NotIn", "another-value")))
    assert labels_of(pending, suite_pool(KEYED))["test-key"] == "test-value"


TWO_VALUES = req("test-key", "In", "test-value", "another-value")


def test_scheduling_logic_should_schedule_compatible_pods_to_the_same_node() -> None:
    """It("should schedule compatible pods to the same node")."""
    first = p("a", required_node_terms=required(req("test-key", "In", "test-value")))
    second = p("b", required_node_terms=required(req("test-key", "NotIn", "another-value")))
    cluster = Cluster([suite_pool(TWO_VALUES)])
    cluster.provision(first, second)
    assert cluster.where(first) == cluster.where(second) is not None
    assert cluster.labels_of(first)["test-key"] == "test-value"


def test_scheduling_logic_should_schedule_incompatible_pods_to_the_different_node() -> None:
    """It("should schedule incompatible pods to the different node")."""
    first = p("a", required_node_terms=required(req("test-key", "In", "test-value")))
    second = p("b", required_node_terms=required(req("test-key", "In", "another-value")))
    cluster = Cluster([suite_pool(TWO_VALUES)])
    cluster.provision(first, second)
    assert cluster.where(first) != cluster.where(second)
    assert (cluster.labels_of(first)["test-key"], cluster.labels_of(second)["test-key"]) == (
        "test-value",
        "another-value",
    )


def test_scheduling_logic_exists_operator_should_not_overwrite_the_existing_value() -> None:
    """It("Exists operator should not overwrite the existing value")."""
    not_scheduled(p(required_node_terms=required(req(ZONE, "In", "non-existent-zone"), req(ZONE, "Exists"))))


# ----- Preferential Fallback -----------------------------------------------------------------------------


def test_preferential_fallback_required_should_not_relax_the_final_term() -> None:
    """Describe("Preferential Fallback") Context("Required") It("should not relax the final term")."""
    prov = suite_pool(req(ZONE, "In", ZONE_1), req(INSTANCE_TYPE, "In", DEFAULT))
    not_scheduled(p(required_node_terms=required(req(ZONE, "In", "invalid"))), prov)


def test_preferential_fallback_required_should_relax_multiple_terms() -> None:
    """It("should relax multiple terms"): ORed terms are tried in order; the first that fits wins."""
    terms = tuple(NodeSelectorTerm((req(ZONE, "In", zone),)) for zone in ("invalid", "invalid", ZONE_1, ZONE_2))
    assert labels_of(p(required_node_terms=terms))[ZONE] == ZONE_1


def test_preferential_fallback_preferred_should_relax_all_terms() -> None:
    """Context("Preferred") It("should relax all terms")."""
    prefs = (preferred(1, req(ZONE, "In", "invalid")), preferred(1, req(INSTANCE_TYPE, "In", "invalid")))
    labels_of(p(preferred_node_terms=prefs))


def test_preferential_fallback_preferred_should_relax_to_use_lighter_weights() -> None:
    """It("should relax to use lighter weights")."""
    prefs = (
        preferred(100, req(INSTANCE_TYPE, "In", "test-zone-3")),
        preferred(50, req(ZONE, "In", ZONE_2)),
        preferred(1, req(ZONE, "In", ZONE_1)),
    )
    assert labels_of(p(preferred_node_terms=prefs), suite_pool(req(ZONE, "In", ZONE_1, ZONE_2)))[ZONE] == ZONE_2


def test_preferential_fallback_preferred_should_schedule_even_if_preference_is_conflicting_with_requirement() -> None:
    """It("should schedule even if preference is conflicting with requirement")."""
    pending = p(
        preferred_node_terms=(preferred(1, req(ZONE, "NotIn", ZONE_3)),),
        required_node_terms=required(req(ZONE, "In", ZONE_3)),
    )
    assert labels_of(pending)[ZONE] == ZONE_3


def test_preferential_fallback_preferred_should_schedule_even_if_preference_requirements_are_conflicting() -> None:
    """It("should schedule even if preference requirements are conflicting")."""
    pref = PreferredSchedulingTerm(1, NodeSelectorTerm((req(ZONE, "In", "invalid"), req(ZONE, "NotIn", "invalid"))))
    labels_of(p(preferred_node_terms=(pref,)))


# ----- Instance Type Compatibility -----------------------------------------------------------------------


def test_instance_type_compatibility_should_not_schedule_if_requesting_more_resources_than_any_type_has() -> None:
    """Describe("Instance Type Compatibility") It("should not schedule if requesting more resources than any
    instance type has")."""
    assert "no instance type has enough cpu" in not_scheduled(p(cpu="512"))


def test_instance_type_compatibility_should_launch_pods_with_different_archs_on_different_instances() -> None:
    """It("should launch pods with different archs on different instances")."""
    cluster = Cluster([suite_pool(req(ARCH, "In", "arm64", "amd64"))])
    amd, arm = p("amd", node_selector={ARCH: "amd64"}), p("arm", node_selector={ARCH: "arm64"})
    cluster.provision(amd, arm)
    assert None is not cluster.where(amd) != cluster.where(arm) is not None


def test_instance_type_compatibility_should_exclude_types_not_supported_by_pod_constraints_instance_type() -> None:
    """It("should exclude instance types that are not supported by the pod constraints (node affinity/instance
    type)"): the arm type conflicts with the NodePool's amd64."""
    not_scheduled(p(required_node_terms=required(req(INSTANCE_TYPE, "In", ARM))), suite_pool(req(ARCH, "In", "amd64")))


def test_instance_type_compatibility_should_exclude_types_not_supported_by_pod_constraints_operating_system() -> None:
    """It("should exclude instance types that are not supported by the pod constraints (node affinity/operating
    system)")."""
    reason = not_scheduled(p(required_node_terms=required(req(OS, "In", "ios"))), suite_pool(req(ARCH, "In", "amd64")))
    assert "kubernetes.io/os In [ios]" in reason


def test_instance_type_compatibility_should_exclude_types_not_supported_by_the_provider_constraints_arch() -> None:
    """It("should exclude instance types that are not supported by the provider constraints (arch)"): the pod's
    14-cpu limit (taken as its request) fits only the arm type, which the NodePool excludes."""
    inputs = from_yaml(
        """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {limits: {cpu: "14"}}}]
"""
    )
    pending = inputs.pending_pods[0]
    assert pending.requests["cpu"] == 14000
    assert "no instance type has enough cpu" in not_scheduled(pending, suite_pool(req(ARCH, "In", "amd64")))


def test_instance_type_compatibility_should_launch_pods_with_different_operating_systems_on_different_instances() -> (
    None
):
    """It("should launch pods with different operating systems on different instances").

    Different on purpose: nodewright launches Linux nodes only (AL2023, Bottlerocket), so the Windows pod is
    unschedulable with a reason, while the Linux pod launches its node.
    """
    linux, windows = p("linux", node_selector={OS: "linux"}), p("windows", node_selector={OS: "windows"})
    results = run([linux, windows], pools=[suite_pool(req(ARCH, "In", "arm64", "amd64"))], types=default_catalog())
    assert set(unschedulable(results)) == {windows.key}
    assert "kubernetes.io/os In [windows]" in unschedulable(results)[windows.key]
    assert [c.pods for c in results.nodeclaims] == [(linux.key,)]


def test_instance_type_compatibility_should_launch_pods_with_different_instance_type_selectors_apart() -> None:
    """It("should launch pods with different instance type node selectors on different instances"): one with
    the beta label, one with the GA label."""
    cluster = Cluster([suite_pool(req(ARCH, "In", "arm64", "amd64"))])
    small = p("small", node_selector={"beta.kubernetes.io/instance-type": SMALL})
    default = p("default", node_selector={INSTANCE_TYPE: DEFAULT})
    cluster.provision(small, default)
    assert cluster.where(small) != cluster.where(default)
    assert (cluster.labels_of(small)[INSTANCE_TYPE], cluster.labels_of(default)[INSTANCE_TYPE]) == (SMALL, DEFAULT)


def test_instance_type_compatibility_should_launch_pods_with_different_zone_selectors_on_different_instances() -> None:
    """It("should launch pods with different zone selectors on different instances")."""
    cluster = Cluster([suite_pool(req(ARCH, "In", "arm64", "amd64"))])
    first, second = p("a", node_selector={ZONE: ZONE_1}), p("b", node_selector={ZONE: ZONE_2})
    cluster.provision(first, second)
    assert cluster.where(first) != cluster.where(second)
    assert (cluster.labels_of(first)[ZONE], cluster.labels_of(second)[ZONE]) == (ZONE_1, ZONE_2)


# Karpenter's two fake extended resources, on the first and second of fake.InstanceTypes(5): here the NVIDIA
# GPU of g4dn.xlarge and the Inferentia device of inf1.xlarge, beside plain types.
GPU_CATALOG = ("t3.small", "c5.large", "c5.xlarge", "g4dn.xlarge", "inf1.xlarge")


def extended_pod(name: str, limits: str) -> Pod:
    inputs = from_yaml(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers: [{{name: c, image: x, resources: {{limits: {{{limits}}}}}}}]
"""
    )
    return inputs.pending_pods[0]


def test_instance_type_compatibility_should_launch_pods_with_resources_not_on_one_type_on_different_instances() -> None:
    """It("should launch pods with resources that aren't on any single instance type on different instances")."""
    gpu = extended_pod("gpu", '"nvidia.com/gpu": "1"')
    neuron = extended_pod("neuron", '"aws.amazon.com/neuron": "1"')
    cluster = Cluster([suite_pool()], [real(name) for name in GPU_CATALOG])
    cluster.provision(gpu, neuron)
    assert cluster.where(gpu) != cluster.where(neuron)
    assert (cluster.labels_of(gpu)[INSTANCE_TYPE], cluster.labels_of(neuron)[INSTANCE_TYPE]) == (
        "g4dn.xlarge",
        "inf1.xlarge",
    )


def test_instance_type_compatibility_should_fail_to_schedule_a_pod_with_requests_not_on_a_single_type() -> None:
    """It("should fail to schedule a pod with resources requests that aren't on a single instance type")."""
    both = extended_pod("both", '"nvidia.com/gpu": "1", "aws.amazon.com/neuron": "1"')
    not_scheduled(both, types=[real(name) for name in GPU_CATALOG])


# fake.InstanceTypes(5) with its size label (large: over 4 vCPU and 8 GiB): here instance-size, whose only
# "large" fake type is c5.2xlarge and whose optional label (on some types only) is instance-local-nvme.
SIZED_CATALOG = ("t3.small", "c5.large", "c5.xlarge", "c5.2xlarge")


def test_provider_specific_labels_should_filter_instance_types_that_match_labels() -> None:
    """Context("Provider Specific Labels") It("should filter instance types that match labels")."""
    cluster = Cluster([suite_pool()], [real(name) for name in SIZED_CATALOG])
    large, small = (
        p("large", node_selector={INSTANCE_SIZE: "2xlarge"}),
        p("small", node_selector={INSTANCE_SIZE: "small"}),
    )
    cluster.provision(large, small)
    assert (cluster.labels_of(large)[INSTANCE_TYPE], cluster.labels_of(small)[INSTANCE_TYPE]) == (
        "c5.2xlarge",
        "t3.small",
    )


def test_provider_specific_labels_should_not_schedule_with_incompatible_labels() -> None:
    """It("should not schedule with incompatible labels")."""
    types = [real(name) for name in SIZED_CATALOG]
    first = p("a", node_selector={INSTANCE_SIZE: "2xlarge", INSTANCE_TYPE: "t3.small"})
    second = p("b", node_selector={INSTANCE_SIZE: "small", INSTANCE_TYPE: "c5.2xlarge"})
    results = run([first, second], pools=[suite_pool()], types=types)
    assert set(unschedulable(results)) == {first.key, second.key}


def test_provider_specific_labels_should_schedule_optional_labels() -> None:
    """It("should schedule optional labels"): only c5d.2xlarge has local NVMe."""
    types = [real(name) for name in (*SIZED_CATALOG, "c5d.2xlarge")]
    labels = one(
        solve_one(p(required_node_terms=required(req(INSTANCE_LOCAL_NVME, "Exists"))), types=types),
        p(),
        Cluster([], types),
    )
    assert labels[INSTANCE_TYPE] == "c5d.2xlarge" and INSTANCE_LOCAL_NVME in labels


def test_provider_specific_labels_should_schedule_without_optional_labels_if_disallowed() -> None:
    """It("should schedule without optional labels if disallowed")."""
    types = [real(name) for name in (*SIZED_CATALOG, "c5d.2xlarge")]
    pending = p(required_node_terms=required(req(INSTANCE_LOCAL_NVME, "DoesNotExist")))
    results = solve_one(pending, pool("default"), types=types)
    assert not results.unschedulable
    assert all("c5d.2xlarge" not in c.instance_types for c in results.nodeclaims)


# ----- Binpacking ----------------------------------------------------------------------------------------


def provisioned(pending: list[Pod], *pools: object, types: list | None = None) -> Cluster:  # type: ignore[type-arg]
    cluster = Cluster(list(pools or (suite_pool(),)), types)  # type: ignore[arg-type]
    results = cluster.provision(*pending)
    assert not results.unschedulable, results.unschedulable
    return cluster


def test_binpacking_should_schedule_a_small_pod_on_the_smallest_instance() -> None:
    """Describe("Binpacking") It("should schedule a small pod on the smallest instance")."""
    small = p(memory="100M")
    assert provisioned([small]).labels_of(small)[INSTANCE_TYPE] == SMALL


def test_binpacking_should_schedule_a_small_pod_on_the_smallest_possible_instance_type() -> None:
    """It("should schedule a small pod on the smallest possible instance type"): Karpenter's 2000M pod nearly
    fills its 2 GiB fake type; t3.small's allocatable (after kube-reserved and eviction) holds 1.3G."""
    small = p(memory="1300M")
    assert provisioned([small]).labels_of(small)[INSTANCE_TYPE] == SMALL


def test_binpacking_should_take_pod_runtime_class_into_consideration() -> None:
    """It("should take pod runtime class into consideration"): 1 cpu plus the RuntimeClass's 2-cpu overhead
    (spec.overhead, which admission copies from the RuntimeClass) does not fit the small type."""
    inputs = from_yaml(
        """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  runtimeClassName: my-runtime-class
  overhead: {cpu: "2"}
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
    )
    pending = inputs.pending_pods[0]
    assert pending.requests["cpu"] == 3000
    assert provisioned([pending]).labels_of(pending)[INSTANCE_TYPE] == DEFAULT


def test_binpacking_should_schedule_multiple_small_pods_on_the_smallest_possible_instance_type() -> None:
    """It("should schedule multiple small pods on the smallest possible instance type")."""
    five = pods("p", 5, cpu="10m", memory="10M")
    cluster = provisioned(five)
    assert {cluster.where(x) for x in five} == {cluster.where(five[0])}
    assert cluster.labels_of(five[0])[INSTANCE_TYPE] == SMALL


def test_binpacking_should_create_new_nodes_when_a_node_is_at_capacity() -> None:
    """It("should create new nodes when a node is at capacity"): two pods fill the default type (Karpenter's
    1.8G pods on its 4 GiB fake type; 3G pods on c5.xlarge's 6.4 GiB allocatable), so 40 pods take 20."""
    forty = pods("p", 40, cpu="10m", memory="3G", node_selector={ARCH: "amd64"})
    cluster = provisioned(forty)
    assert len({cluster.where(x) for x in forty}) == 20
    assert {cluster.labels_of(x)[INSTANCE_TYPE] for x in forty} == {DEFAULT}


def test_binpacking_should_pack_small_and_large_pods_together() -> None:
    """It("should pack small and large pods together"): two large pods leave room for one small one on each
    default node, so 40 large and 20 small pods take 20 nodes."""
    large = pods("large", 40, cpu="10m", memory="3G", node_selector={ARCH: "amd64"})
    small = pods("small", 20, cpu="10m", memory="800M", node_selector={ARCH: "amd64"})
    cluster = provisioned(large + small)
    assert len({cluster.where(x) for x in large + small}) == 20
    assert {cluster.labels_of(x)[INSTANCE_TYPE] for x in large + small} == {DEFAULT}


def test_binpacking_should_pack_nodes_tightly() -> None:
    """It("should pack nodes tightly"): the first pod nearly fills the largest type; the second gets a smaller
    one (fake.InstanceTypes(5): 1-5 vCPU; here 2-8 vCPU, pods of 6.5 and 1.5 cpu)."""
    big, little = p("big", cpu="6500m"), p("little", cpu="1500m")
    cluster = provisioned([big, little], types=[real(name) for name in SIZED_CATALOG])
    assert cluster.where(big) != cluster.where(little)
    assert cluster.labels_of(big)[INSTANCE_TYPE] != cluster.labels_of(little)[INSTANCE_TYPE]


def test_binpacking_should_handle_zero_quantity_resource_requests() -> None:
    """It("should handle zero-quantity resource requests")."""
    inputs = from_yaml(
        """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers:
    - name: c
      image: x
      resources: {requests: {foo.com/weird-resources: "0"}, limits: {foo.com/weird-resources: "0"}}
"""
    )
    labels_of(inputs.pending_pods[0])


def test_binpacking_should_not_schedule_pods_that_exceed_every_instance_types_capacity() -> None:
    """It("should not schedule pods that exceed every instance type's capacity")."""
    assert "no instance type has enough memory" in not_scheduled(p(memory="2Ti"))


def test_binpacking_should_create_new_nodes_when_a_node_is_at_capacity_due_to_pod_limits_per_node() -> None:
    """It("should create new nodes when a node is at capacity due to pod limits per node"): Karpenter's fake
    types hold 5 pods each, so 25 pods take 5 small nodes; t3.small holds 11 (its ENI limit), so 3."""
    many = pods("p", 25, cpu="1m", memory="1M", node_selector={ARCH: "amd64"})
    cluster = provisioned(many)
    assert len({cluster.where(x) for x in many}) == 3
    assert {cluster.labels_of(x)[INSTANCE_TYPE] for x in many} == {SMALL}


INIT_POD = """
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: default}}
spec:
  initContainers: [{{name: i, image: x, resources: {{requests: {{cpu: "2", memory: {init_memory}}}}}}}]
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
"""


def test_binpacking_should_take_into_account_init_container_resource_requests_when_binpacking() -> None:
    """It("should take into account initContainer resource requests when binpacking"): the init container's 2
    cpu do not fit the small type."""
    pending = from_yaml(INIT_POD.format(init_memory="1Gi")).pending_pods[0]
    assert pending.requests["cpu"] == 2000
    assert provisioned([pending]).labels_of(pending)[INSTANCE_TYPE] == DEFAULT


def test_binpacking_should_not_schedule_pods_when_init_container_requests_exceed_available_types() -> None:
    """It("should not schedule pods when initContainer resource requests are greater than available instance
    types")."""
    pending = from_yaml(INIT_POD.format(init_memory="1Ti")).pending_pods[0]
    assert "no instance type has enough memory" in not_scheduled(pending)


def test_binpacking_should_select_for_valid_instance_types_regardless_of_price() -> None:
    """It("should select for valid instance types, regardless of price"): sizes and prices do not correlate;
    the cheapest, largest type is chosen and all three are listed."""
    types = [
        itype("m1.medium", 2, 4, 3.0, zones=(ZONE_1,)),
        itype("m1.small", 2, 2, 2.0, zones=(ZONE_1,)),
        itype("m1.large", 4, 8, 1.0, zones=(ZONE_1,)),
    ]
    pending = extended_pod("p", 'cpu: "1m", memory: "1Mi"')
    results = run([pending], pools=[suite_pool()], types=types)
    claim = results.nodeclaims[0]
    assert claim.cheapest.instance_type == "m1.large"
    assert set(claim.instance_types) == {"m1.small", "m1.medium", "m1.large"}


# ----- In-Flight Nodes -----------------------------------------------------------------------------------


def test_in_flight_should_not_launch_a_second_node_if_an_in_flight_node_can_support_the_pod() -> None:
    """Describe("In-Flight Nodes") It("should not launch a second node if there is an in-flight node that can
    support the pod")."""
    cluster = Cluster([suite_pool()], inflight=True)
    first, second = p("a"), p("b")
    cluster.provision(first)
    results = cluster.provision(second)
    assert not results.nodeclaims
    assert cluster.where(first) == cluster.where(second) is not None


def test_in_flight_should_not_launch_a_second_node_if_an_in_flight_node_can_support_the_pod_selectors() -> None:
    """It("should not launch a second node if there is an in-flight node that can support the pod (node
    selectors)"): the claim launched in zone 2 takes a pod for zones 1-2, not one for zones 1 and 3."""
    cluster = Cluster([suite_pool()], inflight=True)
    first = p("a", required_node_terms=required(req(ZONE, "In", ZONE_2)))
    second = p("b", required_node_terms=required(req(ZONE, "In", ZONE_1, ZONE_2)))
    third = p("c", required_node_terms=required(req(ZONE, "In", ZONE_1, ZONE_3)))
    for pending in (first, second, third):
        cluster.provision(pending)
    assert cluster.where(first) == cluster.where(second)
    assert cluster.where(third) not in (None, cluster.where(first))


def test_in_flight_should_launch_a_second_node_if_a_pod_wont_fit_on_the_existing_node() -> None:
    """It("should launch a second node if a pod won't fit on the existingNodes node"): the first pod fills
    more than half of its node's cpu (Karpenter's 1001m of 2 cpu; here 1.1 of t3.small's 1.93)."""
    cluster = Cluster([suite_pool()], inflight=True)
    first, second = p("a", cpu="1100m"), p("b", cpu="1100m")
    cluster.provision(first)
    assert cluster.labels_of(first)[INSTANCE_TYPE] == SMALL
    cluster.provision(second)
    assert cluster.where(second) not in (None, cluster.where(first))


def test_in_flight_should_launch_a_second_node_if_a_pod_isnt_compatible_with_the_existing_node() -> None:
    """It("should launch a second node if a pod isn't compatible with the existingNodes node (node
    selector)")."""
    cluster = Cluster([suite_pool()], inflight=True)
    first, second = p("a"), p("b", node_selector={ARCH: "arm64"})
    cluster.provision(first)
    cluster.provision(second)
    assert cluster.where(second) not in (None, cluster.where(first))


def test_in_flight_should_launch_a_second_node_if_an_in_flight_node_is_terminating() -> None:
    """It("should launch a second node if an in-flight node is terminating"): a deleted claim and node are no
    longer in the cluster the solver is given, and a node being disrupted takes no pods either."""
    cluster = Cluster([suite_pool()])
    first, second = p("a"), p("b")
    cluster.provision(first)
    name = cluster.where(first)
    assert name is not None
    cluster.nodes[name] = dataclasses.replace(
        cluster.nodes[name], taints=(Taint("karpenter.sh/disrupted", "NoSchedule"),), pods=()
    )
    cluster.provision(second)
    assert cluster.where(second) not in (None, name)


def test_in_flight_topology_should_balance_pods_across_zones_with_in_flight_nodes() -> None:
    """Context("Topology") It("should balance pods across zones with in-flight nodes"): the second round fills
    the three claims in flight (3/3/3) without launching more."""
    labels = {"foo": "bar"}
    spread_ = (dataclasses.replace(_zone_spread(), label_selector=_selector(labels)),)
    cluster = Cluster([suite_pool()], spread_catalog(), inflight=True)
    cluster.provision(*pods("a", 4, cpu="10m", memory="16Mi", labels=labels, topology_spread=spread_))
    assert cluster.skew(ZONE, labels) == [1, 1, 2]
    launched = len(cluster.claims)
    results = cluster.provision(*pods("b", 5, cpu="10m", memory="16Mi", labels=labels, topology_spread=spread_))
    assert cluster.skew(ZONE, labels) == [3, 3, 3]
    assert not results.nodeclaims and len(cluster.claims) == launched


def test_in_flight_topology_should_balance_pods_across_hostnames_with_in_flight_nodes() -> None:
    """It("should balance pods across hostnames with in-flight nodes"): hostname spread prefers new nodes, so
    the second round launches five more."""
    labels = {"foo": "bar"}
    spread_ = (_hostname_spread(labels),)
    cluster = Cluster([suite_pool()], inflight=True)
    cluster.provision(*pods("a", 4, cpu="10m", memory="16Mi", labels=labels, topology_spread=spread_))
    assert cluster.skew(HOSTNAME_LABEL, labels) == [1, 1, 1, 1]
    cluster.provision(*pods("b", 5, cpu="10m", memory="16Mi", labels=labels, topology_spread=spread_))
    assert cluster.skew(HOSTNAME_LABEL, labels) == [1] * 9


def _selector(labels: dict[str, str]) -> object:
    from builders import selector

    return selector(**labels)


def _zone_spread() -> object:
    from builders import spread

    return spread(ZONE, 1)


def _hostname_spread(labels: dict[str, str]) -> object:
    from builders import spread

    return spread(HOSTNAME_LABEL, 1, **labels)


def registered_empty(cluster: Cluster, **node_fields: object) -> Node:
    """Provision one 8-cpu pod (an 16-cpu arm node in Karpenter's catalog), register its node with
    `node_fields` and delete the pod, so the node is empty."""
    first = pod("first", "8", "16Mi")
    cluster.provision(first)
    claim_name = cluster.where(first)
    assert claim_name is not None and claim_name in cluster.claims
    node_ = cluster.register(claim_name, pods=(), **node_fields)
    return node_


def test_in_flight_taints_should_assume_pod_will_schedule_to_a_tainted_node_with_no_taints() -> None:
    """Context("Taints") It("should assume pod will schedule to a tainted node with no taints")."""
    cluster = Cluster([suite_pool()], inflight=True)
    empty = registered_empty(cluster, taints=())
    second = p("b")
    cluster.provision(second)
    assert cluster.where(second) == empty.name


NOT_READY = Taint("node.kubernetes.io/not-ready", "NoExecute")
INITIALIZED = {"karpenter.sh/initialized": "true"}


def test_in_flight_taints_should_assume_pod_schedules_to_a_node_with_ephemeral_not_ready_taint_when_uninitialized() -> (
    None
):
    """It("should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute
    when the node is uninitialized"): the taint is expected to go while the claim's node is not initialized,
    and counts once it is."""
    cluster = Cluster([suite_pool()], inflight=True)
    empty = registered_empty(cluster, taints=(NOT_READY,), ready=False)
    second = p("b")
    cluster.provision(second)
    assert cluster.where(second) == empty.name
    cluster.nodes[empty.name] = dataclasses.replace(
        empty, labels={**empty.labels, **INITIALIZED}, taints=(NOT_READY,), pods=()
    )
    third = p("c")
    cluster.provision(third)
    assert cluster.where(third) not in (None, empty.name)


def test_in_flight_taints_should_not_assume_pod_will_schedule_to_a_tainted_node() -> None:
    """It("should not assume pod will schedule to a tainted node"): an initialized node's taint counts."""
    cluster = Cluster([suite_pool()], inflight=True)
    taint = Taint("foo.com/taint", "NoSchedule", "tainted")
    empty = registered_empty(cluster, taints=(taint,))
    cluster.claims = {k: dataclasses.replace(c, initialized=True) for k, c in cluster.claims.items()}
    second = p("b")
    cluster.provision(second)
    assert cluster.where(second) not in (None, empty.name)


STARTUP = Taint("foo.com/taint", "NoSchedule", "tainted")


def test_in_flight_taints_should_assume_pod_will_schedule_to_a_tainted_node_with_a_custom_startup_taint() -> None:
    """It("should assume pod will schedule to a tainted node with a custom startup taint")."""
    cluster = Cluster([suite_pool(startup_taints=[STARTUP])], inflight=True)
    empty = registered_empty(cluster)
    assert STARTUP in empty.taints
    second = p("b")
    cluster.provision(second)
    assert cluster.where(second) == empty.name


def test_in_flight_taints_should_not_assume_pod_will_schedule_to_a_node_with_startup_taints_after_init() -> None:
    """It("should not assume pod will schedule to a node with startup taints after initialization"): the
    startup taint is back after initialization, so it counts."""
    startup = Taint("ignore-me", "NoSchedule", "nothing-to-see-here")
    cluster = Cluster([suite_pool(startup_taints=[startup])], inflight=True)
    empty = registered_empty(cluster, taints=(startup,))
    cluster.claims = {k: dataclasses.replace(c, initialized=True) for k, c in cluster.claims.items()}
    second = p("b")
    cluster.provision(second)
    assert cluster.where(second) not in (None, empty.name)


def test_in_flight_taints_should_consider_a_tainted_not_ready_node_as_in_flight_even_if_initialized() -> None:
    """It("should consider a tainted NotReady node as in-flight even if initialized"): in Karpenter's case the
    taints are applied to the node after the cluster state last saw it, so the scheduler still sees an
    uninitialized node; here that is a node whose NodeClaim is not initialized yet."""
    taints = (
        Taint("node.kubernetes.io/not-ready", "NoSchedule"),
        Taint("node.kubernetes.io/unreachable", "NoSchedule"),
        Taint("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule", "true"),
    )
    cluster = Cluster([suite_pool()], inflight=True)
    first = p("a")
    cluster.provision(first)
    name = cluster.where(first)
    assert name is not None
    node_ = cluster.register(name, taints=taints, ready=False)
    second = p("b")
    cluster.provision(second)
    assert cluster.where(second) == node_.name


DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: ds, namespace: default}}
spec:
  selector: {{matchLabels: {{app: ds}}}}
  template:
    metadata: {{labels: {{app: ds}}}}
    spec:
      {node_selector}
      containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
"""


def ds_pod(name: str, node_name: str, cpu: str = "1", memory: str = "2Gi") -> Pod:
    """A DaemonSet pod bound to a node (owned by DaemonSet ds)."""
    return dataclasses.replace(pod(name, cpu, memory), owner_kind="DaemonSet", owner_name="ds", node_name=node_name)


def test_in_flight_daemonsets_should_track_daemonset_usage_separately() -> None:
    """Context("Daemonsets") It("should track daemonset usage separately so we know how many DS resources are
    remaining to be scheduled"): once the DaemonSet's pod is bound to the node, nothing more is held back for
    it, so a pod of all the cpu left fits there."""
    ds = from_yaml(DAEMONSET.format(node_selector="")).daemonsets
    cluster = Cluster([suite_pool()], daemonsets=ds, inflight=True)
    empty = registered_empty(cluster)
    bound = ds_pod("ds-pod", empty.name)
    cluster.nodes[empty.name] = dataclasses.replace(empty, pods=(bound,))
    left = empty.allocatable["cpu"] - bound.requests["cpu"]
    second = p("b", cpu=f"{left}m")
    cluster.provision(second)
    assert cluster.where(second) == empty.name


def test_in_flight_daemonsets_should_hold_back_room_for_daemonset_pods_not_bound_yet() -> None:
    """The same case before the DaemonSet pod binds: its requests are held back on the node, so a pod that
    needs more than the cpu left beside them does not go there (Karpenter's ExistingNode remaining daemon
    resources); one that needs exactly that does."""
    ds = from_yaml(DAEMONSET.format(node_selector="")).daemonsets
    cluster = Cluster([suite_pool()], daemonsets=ds, inflight=True)
    empty = registered_empty(cluster)
    second = p("b", cpu=f"{empty.allocatable['cpu'] - 500}m")
    cluster.provision(second)
    assert cluster.where(second) != empty.name
    third = p("c", cpu=f"{empty.allocatable['cpu'] - 1000}m")
    cluster.provision(third)
    assert cluster.where(third) == empty.name


def test_in_flight_daemonsets_should_handle_unexpected_daemonset_pods_binding_to_the_node() -> None:
    """It("should handle unexpected daemonset pods binding to the node"): a label the node was not expected to
    get lets a DaemonSet pod bind that was not held back; the room left is what is left, never more."""
    ds = from_yaml(DAEMONSET.format(node_selector="nodeSelector: {my-node-label: value}")).daemonsets
    cluster = Cluster([suite_pool()], daemonsets=ds, inflight=True)
    empty = registered_empty(cluster)
    bound = ds_pod("ds-pod", empty.name)
    cluster.nodes[empty.name] = dataclasses.replace(
        empty, labels={**empty.labels, "my-node-label": "value"}, pods=(bound,)
    )
    too_big = p("b", cpu=f"{empty.allocatable['cpu'] - 500}m")
    cluster.provision(too_big)
    assert cluster.where(too_big) not in (None, empty.name)


def test_in_flight_daemonsets_should_handle_daemonset_resources_with_node_affinity_for_initialized_and_registered() -> (
    None
):
    """Context("Daemonsets") It("Should properly handle DaemonSet resources with Node Affinity for
    `karpenter.sh/initialized` and `karpenter.sh/registered`"): two 1-cpu DaemonSets, each requiring one of the
    labels a node gets as it comes up. Both count on a new node, so a 2-cpu pod needs 4 cpu, more than the
    default type's allocatable: the 16-cpu arm type launches (with one or neither counted, the default type
    would). Neither label becomes a requirement or label of the claim. Karpenter then reads its cluster state's
    DaemonSet requests of the node (0, then 2 once the DaemonSet pods bind); here it is the solver's view of
    the registered node, labelled as nodewright's lifecycle labels it: the DaemonSet pods are held back until
    they bind and count as bound pods after, so either way a pod of all the cpu left beside them fits there
    and one of 1m more does not."""
    lifecycle = {"karpenter.sh/registered": "true", "karpenter.sh/initialized": "true"}
    daemonsets = [
        daemonset(f"ds-{key.split('/')[1]}", "1", "0", required_node_terms=required(req(key, "In", "true")))
        for key in lifecycle
    ]
    cluster = Cluster([suite_pool()], daemonsets=daemonsets, inflight=True)
    initial = p("initial", cpu="2")
    (planned,) = cluster.provision(initial).nodeclaims
    assert planned.cheapest.instance_type == ARM and DEFAULT not in planned.instance_types
    for key in lifecycle:
        assert key not in {r.key for r in planned.requirements} and key not in planned.labels

    claim_name = cluster.where(initial)
    assert claim_name is not None
    registered = cluster.register(claim_name, pods=())  # the initial pod is deleted: the node is empty
    name = registered.name
    cluster.nodes[name] = dataclasses.replace(registered, labels={**registered.labels, **lifecycle})
    left = registered.allocatable["cpu"] - 2000

    def lands_there(cpu: int) -> bool:
        pending = p(f"q-{cpu}", cpu=f"{cpu}m")
        results = run(
            [pending],
            nodes=list(cluster.nodes.values()),
            nodeclaims=list(cluster.claims.values()),
            pools=[suite_pool()],
            types=default_catalog(),
            daemonsets=daemonsets,
        )
        return results.existing.get(name) == (pending.key,)

    assert lands_there(left) and not lands_there(left + 1)
    bound = tuple(
        dataclasses.replace(
            pod(f"{ds.name}-pod", "1", "0", ns=ds.namespace), owner_kind="DaemonSet", owner_name=ds.name, node_name=name
        )
        for ds in daemonsets
    )
    cluster.nodes[name] = dataclasses.replace(cluster.nodes[name], pods=bound)
    assert lands_there(left) and not lands_there(left + 1)


def test_in_flight_should_pack_in_flight_nodes_before_launching_new_nodes() -> None:
    """It("should pack in-flight nodes before launching new nodes"): batches of 1-cpu pods over ten rounds
    leave at most one node with a cpu to spare (Karpenter's fake type holds four; c5.xlarge holds three)."""
    types = [real(DEFAULT)]
    cluster = Cluster([suite_pool()], types, inflight=True)
    for batch, count in enumerate((3, 7, 1, 9, 4, 0, 8, 2, 6, 5)):
        cluster.provision(*pods(f"r{batch}", count, cpu="1", memory="16Mi"))
    free = 0
    allocatable = 3920  # c5.xlarge: 4000m less kube-reserved
    for claim in cluster.claims.values():
        used = sum(x.requests["cpu"] for x in claim.nominated_pods)
        free += 1 if allocatable - used >= 1000 else 0
    assert free <= 1


def test_in_flight_should_not_launch_a_second_node_for_the_same_pod_2011() -> None:
    """It("should not launch a second node if there is an in-flight node that can support the pod (#2011)"):
    the pod is still pending after its claim launched (not bound yet); it goes to that claim again."""
    cluster = Cluster([suite_pool()], inflight=True)
    first = p("a")
    cluster.provision(first)
    claim_name = cluster.where(first)
    assert claim_name is not None
    claim = cluster.claims[claim_name]
    cluster.claims[claim_name] = dataclasses.replace(claim, nominated_pods=())
    results = cluster.provision(first)
    assert not results.nodeclaims
    assert results.existing == {claim_name: (first.key,)}


def test_in_flight_should_order_initialized_nodes_for_scheduling_uninitialized_nodes_when_all_others_inflight() -> None:
    """It("should order initialized nodes for scheduling uninitialized nodes when all other nodes are inflight"):
    100 NodeClaims launched by the fake cloud provider (its cheapest offering: the small type, spot, zone 1);
    99 have no node yet, one has a node that is initialized. The pod goes to that node, wherever its claim
    stands among the others (Karpenter picks it at random; here first, in the middle and last)."""
    small = real(SMALL)
    for elem in (0, 57, 99):
        claims: list[NodeClaim] = []
        nodes: list[Node] = []
        for i in range(100):
            claim = NodeClaim(
                name=f"claim-{i:03d}",
                nodepool="default",
                labels={"karpenter.sh/nodepool": "default"},
                instance_type=small.name,
                zone=ZONE_1,
                capacity_type=SPOT,
            )
            if i == elem:
                node_ = node(f"node-{i:03d}", small, ZONE_1, labels={CAPACITY_TYPE: SPOT})
                nodes.append(dataclasses.replace(node_, nodeclaim_name=claim.name))
                claim = dataclasses.replace(claim, node_name=node_.name, registered=True, initialized=True)
            claims.append(claim)
        results = run([p()], nodes=nodes, nodeclaims=claims, pools=[suite_pool()], types=default_catalog())
        assert not results.nodeclaims
        assert results.existing == {f"node-{elem:03d}": ("default/p",)}, elem


def test_in_flight_should_schedule_pods_with_the_same_host_port_to_different_nodes() -> None:
    """It("should schedule pods with the same host port to different nodes"): two pods of one batch, each asking
    for host port 8080."""
    cluster = Cluster([suite_pool()])
    first, second = (p(name, host_ports=(host_port(8080),)) for name in ("a", "b"))
    cluster.provision(first, second)
    assert cluster.where(first) not in (None, cluster.where(second))
    assert cluster.where(second) is not None


def _claim_with_node(name: str, initialized: bool) -> tuple[NodeClaim, Node]:
    it = real(DEFAULT)
    node_ = node(f"node-{name}", it, ZONE_1)
    claim = NodeClaim(
        name=name,
        nodepool="default",
        labels={"karpenter.sh/nodepool": "default"},
        instance_type=it.name,
        zone=ZONE_1,
        capacity_type=ON_DEMAND,
        node_name=node_.name,
        registered=True,
        initialized=initialized,
    )
    return claim, node_


def test_existing_nodes_should_order_initialized_nodes_for_scheduling_uninitialized_nodes() -> None:
    """Describe("Existing Nodes") It("should order initialized nodes for scheduling uninitialized nodes"): of 100
    claims with nodes, the pod goes to the one that is initialized."""
    pairs = [_claim_with_node(f"claim-{i:03d}", initialized=(i == 57)) for i in range(100)]
    results = run(
        [p()],
        nodes=[n for _, n in pairs],
        nodeclaims=[c for c, _ in pairs],
        pools=[suite_pool()],
        types=default_catalog(),
    )
    assert results.existing == {"node-claim-057": ("default/p",)}


def test_existing_nodes_should_schedule_a_pod_to_an_existing_node_unowned_by_karpenter() -> None:
    """It("should schedule a pod to an existing node unowned by Karpenter")."""
    unowned = Node("unowned", {HOSTNAME_LABEL: "unowned"}, allocatable={"cpu": 10000, "memory": 10 << 30, "pods": 110})
    results = run([p()], nodes=[unowned], pools=[suite_pool()], types=default_catalog())
    assert results.existing == {"unowned": ("default/p",)}


def test_existing_nodes_should_schedule_multiple_pods_to_an_existing_node_unowned_by_karpenter() -> None:
    """It("should schedule multiple pods to an existing node unowned by Karpenter")."""
    unowned = Node("unowned", {HOSTNAME_LABEL: "unowned"}, allocatable={"cpu": 10000, "memory": 100 << 30, "pods": 110})
    hundred = pods("p", 100, cpu="10m", memory="16Mi")
    results = run(hundred, nodes=[unowned], pools=[suite_pool()], types=default_catalog())
    assert not results.nodeclaims and len(results.existing["unowned"]) == 100


def test_existing_nodes_should_consider_a_pod_incompatible_with_an_existing_node_but_compatible_with_nodepool() -> None:
    """It("should consider a pod incompatible with an existing node but compatible with NodePool"): the node
    has no zone label; without a NodePool the pod stays pending, with one it launches."""
    bare = Node("bare", {HOSTNAME_LABEL: "bare"}, allocatable={"cpu": 10000, "memory": 10 << 30, "pods": 110})
    zonal = p(required_node_terms=required(req(ZONE, "In", ZONE_1)))
    alone = run([zonal], nodes=[bare], pools=[], types=default_catalog())
    assert zonal.key in unschedulable(alone)
    with_pool = run([zonal], nodes=[bare], pools=[suite_pool()], types=default_catalog())
    assert not with_pool.unschedulable and with_pool.nodeclaims[0].zones == (ZONE_1,)


def test_existing_nodes_daemonsets_should_not_subtract_overhead_not_strictly_compatible_with_an_existing_node() -> None:
    """Context("Daemonsets") It("should not subtract daemonset overhead that is not strictly compatible with an
    existing node"): the DaemonSet requires zone 1, which the node lacks, so nothing is held back for it there;
    a new node of the NodePool (which may be in zone 1) must hold it, and no type can."""
    ds = from_yaml(
        """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, namespace: default}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]
      containers: [{name: c, image: x, resources: {requests: {cpu: "100", memory: 100Gi}}}]
"""
    ).daemonsets
    small = Node("small", {HOSTNAME_LABEL: "small"}, allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 110})
    first = p("a", cpu="1", memory="1Gi")
    results = run([first], nodes=[small], pools=[suite_pool()], types=default_catalog(), daemonsets=ds)
    assert results.existing == {"small": (first.key,)}
    full = dataclasses.replace(small, pods=(dataclasses.replace(first, node_name="small"),))
    second = p("b", cpu="1", memory="1Gi")
    results = run([second], nodes=[full], pools=[suite_pool()], types=default_catalog(), daemonsets=ds)
    assert "DaemonSet" in unschedulable(results)[second.key]


# ----- NodePool requirements instance filtering ------------------------------------------------------------------
# Karpenter's pod error reads "nodepool requirements filtered out all available instance types"; nodewright's names
# the NodePool and the requirement no instance type satisfies.

FILTERED = "NodePool default: no instance type satisfies"


def test_nodepool_filtering_should_return_appropriate_pod_error_when_no_available_instance_types_exist() -> None:
    """Describe("NodePool requirements instance filtering") It("should return appropriate pod error when no
    available instance types exist"): a pod schedules, then the NodePool requires a type that does not exist;
    a pod too large for the first node fails with the NodePool's requirement named."""
    cluster = Cluster([suite_pool()])
    first = p("normal")
    assert not cluster.provision(first).unschedulable
    assert cluster.where(first) is not None
    cluster.pools = [suite_pool(req(INSTANCE_TYPE, "In", "non-existent-instance-type"))]  # type: ignore[list-item]
    results = cluster.provision(p("test-pod-filtered", cpu="32", memory="256Gi"))
    assert not results.nodeclaims and not results.existing
    reason = unschedulable(results)["default/test-pod-filtered"]
    assert f"{FILTERED} node.kubernetes.io/instance-type In [non-existent-instance-type]" in reason


def test_nodepool_filtering_should_handle_multiple_pods_when_requirements_filter_out_all_instance_types() -> None:
    """It("should handle multiple pods when requirements filter out all instance types")."""
    results = run(
        [p("pod-1"), p("pod-2"), p("pod-3")],
        pools=[suite_pool(req(ARCH, "In", "non-existent-arch"))],  # type: ignore[list-item]
        types=default_catalog(),
    )
    reasons = unschedulable(results)
    assert not results.nodeclaims and len(reasons) == 3
    assert all(f"{FILTERED} kubernetes.io/arch In [non-existent-arch]" in r for r in reasons.values())


def test_nodepool_filtering_should_handle_conflicting_requirements_that_eliminate_all_instance_types() -> None:
    """It("should handle conflicting requirements that eliminate all instance types"): arch In [amd64] and
    In [arm64] together allow no value."""
    reason = not_scheduled(
        p("conflicting-requirements-pod"), suite_pool(req(ARCH, "In", "amd64"), req(ARCH, "In", "arm64"))
    )
    assert f"{FILTERED} kubernetes.io/arch In []" in reason


def test_nodepool_filtering_should_handle_zone_requirements_that_filter_out_all_instance_types() -> None:
    """It("should handle zone requirements that filter out all instance types")."""
    pool_ = suite_pool(req(ZONE, "In", "non-existent-zone-1", "non-existent-zone-2"))
    reason = not_scheduled(p("zone-filtered-pod"), pool_)
    assert f"{FILTERED} topology.kubernetes.io/zone In [non-existent-zone-1, non-existent-zone-2]" in reason
