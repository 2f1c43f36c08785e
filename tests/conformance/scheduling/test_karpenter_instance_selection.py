"""Karpenter v1.14.1 pkg/controllers/provisioning/scheduling/instance_selection_test.go, ported case by case (its
cases are v1.9.1's: since then only the way the Go code builds fake instance types changed).

Each test names the It it mirrors. The suite's NodePool allows spot and on-demand, amd64 and arm64; its
catalog (fake.InstanceTypesAssorted) is `assorted_catalog()`: real types of both architectures in every zone
for both capacity types. Karpenter's "one of the cheapest instances" compares with the cheapest offering of
its catalog, where every size exists for every arch, zone and capacity type at one price; with real types
the cheapest differs by arch, zone and capacity type, so a case compares with the cheapest offering that
its constraints allow. The MinValues cases build their own types, as Karpenter's do; its numeric custom
label (karpenter/numerical-value) is the numeric well-known label karpenter.k8s.aws/instance-generation,
and its 1-vCPU / 1 GiB types (fake overhead 100m, 10Mi) are types that hold one of the case's pods.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence

from builders import itype, nodeclass, pod, pool, req, run, unschedulable
from sched_fake import ZONE_1, ZONE_2, ZONE_3, assorted_catalog

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import ARCH, CAPACITY_TYPE, INSTANCE_FAMILY, INSTANCE_GENERATION, INSTANCE_TYPE, OS, ZONE
from nodewright.catalog.types import ON_DEMAND, SPOT, InstanceType, Offering
from nodewright.model import resources as res
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.objects import NodeSelectorTerm, Pod
from nodewright.model.requirements import Requirement
from nodewright.scheduling.results import PlannedNodeClaim, Results

FILE = "pkg/controllers/provisioning/scheduling/instance_selection_test.go"


def suite_pool(*requirements: Requirement) -> object:
    """The suite's NodePool; a case that sets requirements replaces the defaults, as Karpenter's do."""
    defaults = (req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND), req(ARCH, "In", "arm64", "amd64"))
    return pool("default", *(requirements or defaults))


def pending(*requirements: Requirement) -> Pod:
    terms = (NodeSelectorTerm(tuple(requirements)),) if requirements else ()
    return pod("p", "10m", "16Mi", required_node_terms=terms)


def only_claim(results: Results) -> PlannedNodeClaim:
    assert not results.unschedulable, results.unschedulable
    assert len(results.nodeclaims) == 1
    return results.nodeclaims[0]


def cheapest(types: Sequence[InstanceType], allowed: Callable[[InstanceType, Offering], bool]) -> float:
    """The lowest price of an offering the case's constraints allow (Karpenter's minPrice)."""
    return min(o.price for it in types for o in it.offerings if allowed(it, o))


def assert_cheapest(
    claim: PlannedNodeClaim,
    types: Sequence[InstanceType],
    *,
    arch: str | None = None,
    zone: str | None = None,
    capacity_type: str | None = None,
) -> None:
    """The claim launches as the cheapest allowed offering, and every type and offering it lists satisfies
    the constraints (ExpectInstancesWithLabel / ExpectInstancesWithOffering)."""

    def allowed(it: InstanceType, o: Offering) -> bool:
        return (
            (arch is None or it.architecture == arch)
            and (zone is None or o.zone == zone)
            and (capacity_type is None or o.capacity_type == capacity_type)
        )

    assert claim.cheapest.price == cheapest(types, allowed)
    by_name = {it.name: it for it in types}
    for name in claim.instance_types:
        assert arch is None or by_name[name].labels[ARCH] == arch
        assert by_name[name].labels[OS] == "linux"
    for option in claim.launch_options:
        assert zone is None or option.zone == zone
        assert capacity_type is None or option.capacity_type == capacity_type
    if zone is not None:
        assert claim.zones == (zone,)
    if capacity_type is not None:
        assert claim.capacity_types == (capacity_type,)


def test_should_schedule_on_one_of_the_cheapest_instances() -> None:
    """It("should schedule on one of the cheapest instances")."""
    types = assorted_catalog()
    claim = only_claim(run([pending()], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types)


def test_should_schedule_on_one_of_the_cheapest_instances_pod_arch_amd64() -> None:
    """It("should schedule on one of the cheapest instances (pod arch = amd64)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending(req(ARCH, "In", "amd64"))], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types, arch="amd64")


def test_should_schedule_on_one_of_the_cheapest_instances_pod_arch_arm64() -> None:
    """It("should schedule on one of the cheapest instances (pod arch = arm64)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending(req(ARCH, "In", "arm64"))], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types, arch="arm64")


def test_should_schedule_on_one_of_the_cheapest_instances_prov_arch_amd64() -> None:
    """It("should schedule on one of the cheapest instances (prov arch = amd64)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending()], pools=[suite_pool(req(ARCH, "In", "amd64"))], types=types))
    assert_cheapest(claim, types, arch="amd64")


def test_should_schedule_on_one_of_the_cheapest_instances_prov_arch_arm64() -> None:
    """It("should schedule on one of the cheapest instances (prov arch = arm64)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending()], pools=[suite_pool(req(ARCH, "In", "arm64"))], types=types))
    assert_cheapest(claim, types, arch="arm64")


def windows_node_class() -> EC2NodeClass:
    """The suite's node class as a Windows one: Karpenter's fake catalog has Windows offerings; in EC2 a type runs
    Windows when its EC2NodeClass's AMI family is Windows (amd64 only), so that is where the os label comes from."""
    return nodeclass(ami_family_setting="windows2022")


def assert_windows(claim: PlannedNodeClaim, types: Sequence[InstanceType]) -> None:
    """The claim is a Windows node of the cheapest amd64 offering (Windows runs on amd64 types only)."""
    cheapest_amd64 = cheapest(types, lambda it, _o: it.architecture == "amd64")
    assert claim.cheapest.price == cheapest_amd64
    assert claim.labels[OS] == "windows"
    by_name = {it.name: it for it in types}
    assert all(by_name[name].architecture == "amd64" for name in claim.instance_types)


def test_should_schedule_on_one_of_the_cheapest_instances_prov_os_windows() -> None:
    """It("should schedule on one of the cheapest instances (prov os = windows)") (twice in the file)."""
    types = assorted_catalog()
    prov = suite_pool(req(OS, "In", "windows"))
    claim = only_claim(run([pending()], pools=[prov], types=types, classes=[windows_node_class()]))
    assert_windows(claim, types)
    # The same NodePool with a Linux node class can launch nothing: no Linux type is windows.
    linux = run([pending()], pools=[prov], types=types)
    assert not linux.nodeclaims and "kubernetes.io/os In [windows]" in unschedulable(linux)["default/p"]


def test_should_schedule_on_one_of_the_cheapest_instances_pod_os_windows() -> None:
    """It("should schedule on one of the cheapest instances (pod os = windows)")."""
    types = assorted_catalog()
    claim = only_claim(
        run([pending(req(OS, "In", "windows"))], pools=[suite_pool()], types=types, classes=[windows_node_class()])
    )
    assert_windows(claim, types)


def test_should_schedule_on_one_of_the_cheapest_instances_pod_os_linux() -> None:
    """It("should schedule on one of the cheapest instances (pod os = linux)") (twice in the file)."""
    types = assorted_catalog()
    claim = only_claim(run([pending(req(OS, "In", "linux"))], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types)


def test_should_schedule_on_one_of_the_cheapest_instances_prov_zone_2() -> None:
    """It("should schedule on one of the cheapest instances (prov zone = test-zone-2)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending()], pools=[suite_pool(req(ZONE, "In", ZONE_2))], types=types))
    assert_cheapest(claim, types, zone=ZONE_2)


def test_should_schedule_on_one_of_the_cheapest_instances_pod_zone_2() -> None:
    """It("should schedule on one of the cheapest instances (pod zone = test-zone-2)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending(req(ZONE, "In", ZONE_2))], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types, zone=ZONE_2)


def test_should_schedule_on_one_of_the_cheapest_instances_prov_ct_spot() -> None:
    """It("should schedule on one of the cheapest instances (prov ct = spot)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending()], pools=[suite_pool(req(CAPACITY_TYPE, "In", SPOT))], types=types))
    assert_cheapest(claim, types, capacity_type=SPOT)


def test_should_schedule_on_one_of_the_cheapest_instances_pod_ct_spot() -> None:
    """It("should schedule on one of the cheapest instances (pod ct = spot)")."""
    types = assorted_catalog()
    claim = only_claim(run([pending(req(CAPACITY_TYPE, "In", SPOT))], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types, capacity_type=SPOT)


def test_should_schedule_on_one_of_the_cheapest_instances_prov_ct_ondemand_prov_zone_1() -> None:
    """It("should schedule on one of the cheapest instances (prov ct = ondemand, prov zone = test-zone-1)")."""
    types = assorted_catalog()
    prov = suite_pool(req(CAPACITY_TYPE, "In", ON_DEMAND), req(ZONE, "In", ZONE_1))
    claim = only_claim(run([pending()], pools=[prov], types=types))
    assert_cheapest(claim, types, zone=ZONE_1, capacity_type=ON_DEMAND)


def test_should_schedule_on_one_of_the_cheapest_instances_pod_ct_spot_pod_zone_1() -> None:
    """It("should schedule on one of the cheapest instances (pod ct = spot, pod zone = test-zone-1)")."""
    types = assorted_catalog()
    p = pending(req(CAPACITY_TYPE, "In", SPOT), req(ZONE, "In", ZONE_1))
    claim = only_claim(run([p], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types, zone=ZONE_1, capacity_type=SPOT)


def test_should_schedule_on_one_of_the_cheapest_instances_prov_ct_spot_pod_zone_2() -> None:
    """It("should schedule on one of the cheapest instances (prov ct = spot, pod zone = test-zone-2)")."""
    types = assorted_catalog()
    prov = suite_pool(req(CAPACITY_TYPE, "In", SPOT))
    claim = only_claim(run([pending(req(ZONE, "In", ZONE_2))], pools=[prov], types=types))
    assert_cheapest(claim, types, zone=ZONE_2, capacity_type=SPOT)


def test_should_schedule_on_one_of_the_cheapest_instances_prov_ondemand_zone_1_arm64_windows() -> None:
    """It("should schedule on one of the cheapest instances (prov ct = ondemand/test-zone-1/arm64/windows)"):
    different on purpose: Karpenter's fake catalog has arm64 Windows offerings, EC2 has none (the EKS Windows AMIs
    are amd64 only, and Karpenter's AWS provider gives arm64 types no Windows OS), so even with a Windows node
    class nothing launches; without the Windows requirement the same NodePool launches the cheapest on-demand
    arm64 offering in zone 1."""
    types = assorted_catalog()
    linux = (req(ARCH, "In", "arm64"), req(CAPACITY_TYPE, "In", ON_DEMAND), req(ZONE, "In", ZONE_1))
    prov = suite_pool(*linux, req(OS, "In", "windows"))
    windows = run([pending()], pools=[prov], types=types, classes=[windows_node_class()])
    assert not windows.nodeclaims and "default/p" in unschedulable(windows)
    claim = only_claim(run([pending()], pools=[suite_pool(*linux)], types=types))
    assert_cheapest(claim, types, arch="arm64", zone=ZONE_1, capacity_type=ON_DEMAND)


def test_should_schedule_on_one_of_the_cheapest_instances_prov_spot_zone_2_pod_amd64_linux() -> None:
    """It("should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod = amd64/linux)"):
    as in Karpenter, the NodePool's requirements are arch and os, the pod's capacity type and zone."""
    types = assorted_catalog()
    prov = suite_pool(req(ARCH, "In", "amd64"), req(OS, "In", "linux"))
    p = pending(req(CAPACITY_TYPE, "In", SPOT), req(ZONE, "In", ZONE_2))
    claim = only_claim(run([p], pools=[prov], types=types))
    assert_cheapest(claim, types, arch="amd64", zone=ZONE_2, capacity_type=SPOT)


def test_should_schedule_on_one_of_the_cheapest_instances_pod_spot_zone_2_amd64_linux() -> None:
    """It("should schedule on one of the cheapest instances (pod ct = spot/test-zone-2/amd64/linux)")."""
    types = assorted_catalog()
    p = pending(
        req(ARCH, "In", "amd64"), req(OS, "In", "linux"), req(CAPACITY_TYPE, "In", SPOT), req(ZONE, "In", ZONE_2)
    )
    claim = only_claim(run([p], pools=[suite_pool()], types=types))
    assert_cheapest(claim, types, arch="amd64", zone=ZONE_2, capacity_type=SPOT)


def without_arm(types: Sequence[InstanceType], zone: str | None = None) -> list[InstanceType]:
    """The catalog without arm64 offerings (in `zone` only, when given), as the cases filter the fake types."""
    kept = []
    for it in types:
        if it.architecture == "arm64":
            offerings = tuple(o for o in it.offerings if zone is not None and o.zone != zone)
            if not offerings:
                continue
            it = dataclasses.replace(it, offerings=offerings)
        kept.append(it)
    return kept


def test_should_not_schedule_if_no_instance_type_matches_selector_pod_arch_arm() -> None:
    """It("should not schedule if no instance type matches selector (pod arch = arm)")."""
    results = run([pending(req(ARCH, "In", "arm64"))], pools=[suite_pool()], types=without_arm(assorted_catalog()))
    assert "default/p" in unschedulable(results)
    assert not results.nodeclaims


def test_should_not_schedule_if_no_instance_type_matches_selector_pod_arch_arm_zone_2() -> None:
    """It("should not schedule if no instance type matches selector (pod arch = arm zone=test-zone-2)")."""
    types = without_arm(assorted_catalog(), ZONE_2)
    results = run([pending(req(ARCH, "In", "arm64"), req(ZONE, "In", ZONE_2))], pools=[suite_pool()], types=types)
    assert "default/p" in unschedulable(results)
    assert not results.nodeclaims


def test_should_not_schedule_if_no_instance_type_matches_selector_prov_arch_arm_pod_zone_2() -> None:
    """It("should not schedule if no instance type matches selector (prov arch = arm / pod zone=test-zone-2)")."""
    types = without_arm(assorted_catalog(), ZONE_2)
    prov = suite_pool(req(ARCH, "In", "arm64"))
    results = run([pending(req(ZONE, "In", ZONE_2))], pools=[prov], types=types)
    assert "default/p" in unschedulable(results)
    assert not results.nodeclaims
    elsewhere = run([pending(req(ZONE, "In", ZONE_3))], pools=[prov], types=types)
    assert only_claim(elsewhere).zones == (ZONE_3,)  # the arm64 types are still offered in the other zones


def test_should_schedule_on_an_instance_with_enough_resources() -> None:
    """It("should schedule on an instance with enough resources"): for every size, every type a claim lists
    holds all of the claim's pods, and scheduling changes no instance type.

    Different on purpose: Karpenter puts the three pods on one node (a NodeClaim takes every pod that some
    type fits, then launches the cheapest such type). nodewright sizes each claim for the lowest price per
    pod, so where three small nodes cost less than one that holds all three it plans the small ones; the
    test asserts the plan never costs more than Karpenter's one node.
    """
    types = assorted_catalog()
    before = copy.deepcopy(types)
    by_name = {it.name: it for it in types}
    for cpu in ("100m", "1", "2", "2500m", "4", "8", "16"):
        for memory in ("100Mi", "1Gi", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi"):
            pods = [pod(f"p-{i}", cpu, memory) for i in range(3)]
            results = run(pods, pools=[suite_pool()], types=types)
            assert not results.unschedulable, (cpu, memory)
            assert sum(len(c.pods) for c in results.nodeclaims) == 3
            for claim in results.nodeclaims:
                held = res.total(p.requests for p in pods if p.key in claim.pods)
                for name in claim.instance_types:
                    assert res.fits(held, allocatable_for(by_name[name], None)), (cpu, memory, name)
            total = res.total(p.requests for p in pods)
            one_node = min(o.price for it in types if res.fits(total, allocatable_for(it, None)) for o in it.offerings)
            assert results.cost_per_hour <= one_node + 1e-9, (cpu, memory)
    assert types == before


def test_should_schedule_on_cheaper_on_demand_instance_even_when_spot_price_ordering_differs() -> None:
    """It("should schedule on cheaper on-demand instance even when spot price ordering would place other
    instance types first")."""
    first = itype("a1.large", 2, 4, 1.0, 0.2, zones=(ZONE_1,))
    second = itype("b1.large", 2, 4, 1.3, 0.1, zones=(ZONE_1,))
    claim = only_claim(
        run([pending()], pools=[pool("default", req(CAPACITY_TYPE, "In", ON_DEMAND))], types=[first, second])
    )
    assert claim.cheapest.instance_type == "a1.large"
    assert claim.cheapest.capacity_type == ON_DEMAND


# ----- MinValues -----------------------------------------------------------------------------------------

GENERATION = INSTANCE_GENERATION  # Karpenter's karpenter/numerical-value


def spot_only(name: str, vcpu: int, price: float, arch: str = "arm64") -> InstanceType:
    """A made-up type with one spot offering, as the MinValues cases build theirs. The name's digits are
    its generation (a2.large: generation 2)."""
    it = itype(name, vcpu, vcpu * 2, price, arch=arch, zones=(ZONE_1,))
    return dataclasses.replace(it, offerings=(Offering(ZONE_1, SPOT, price),))


def two_pods() -> list[Pod]:
    """Two pods of which a 2-vCPU type holds one and a 4-vCPU type both (Karpenter's 0.9-cpu pods on its
    1- and 4-vCPU fake types)."""
    return [pod(f"p-{i}", "1", "256Mi") for i in range(2)]


def assert_apart(results: Results, at_least: int = 2) -> None:
    """Both pods scheduled, on different nodes, each claim listing at least `at_least` instance types."""
    assert not results.unschedulable, results.unschedulable
    assert len(results.nodeclaims) == 2
    assert all(len(c.instance_types) >= at_least for c in results.nodeclaims)


def test_min_values_should_schedule_respecting_the_min_values_from_instance_type_requirements() -> None:
    """Context("MinValues") It("should schedule respecting the minValues from instance-type requirements")."""
    types = [spot_only("a1.large", 2, 0.52), spot_only("a1.xlarge", 4, 1.0)]
    prov = pool("default", req(INSTANCE_TYPE, "In", "a1.large", "a1.xlarge", min_values=2))
    assert_apart(run(two_pods(), pools=[prov], types=types))


def test_min_values_should_schedule_respecting_the_min_values_in_gt_operator() -> None:
    """It("should schedule respecting the minValues in Gt operator")."""
    types = [spot_only("a2.large", 2, 0.52), spot_only("a3.large", 2, 1.0), spot_only("a4.xlarge", 4, 1.2)]
    prov = pool("default", req(GENERATION, "Gt", "2", min_values=2))
    results = run(two_pods(), pools=[prov], types=types)
    assert_apart(results)
    assert all(set(c.instance_types) == {"a3.large", "a4.xlarge"} for c in results.nodeclaims)


def test_min_values_scheduler_should_fail_if_the_min_values_in_gt_operator_is_not_satisfied() -> None:
    """It("scheduler should fail if the minValues in Gt operator is not satisfied"): the pods' Gt 2 leaves
    one generation of the two the NodePool's minValues asks for."""
    types = [spot_only("a2.large", 2, 0.52), spot_only("a3.xlarge", 4, 1.0)]
    prov = pool("default", req(GENERATION, "Exists", min_values=2))
    pods = [
        pod(f"p-{i}", "1", "256Mi", required_node_terms=(NodeSelectorTerm((req(GENERATION, "Gt", "2"),)),))
        for i in range(2)
    ]
    results = run(pods, pools=[prov], types=types)
    assert not results.nodeclaims
    reasons = unschedulable(results)
    assert set(reasons) == {"default/p-0", "default/p-1"}
    assert all(f"minValues 2 for {GENERATION}" in reason for reason in reasons.values())


def test_min_values_should_schedule_respecting_the_min_values_in_lt_operator() -> None:
    """It("should schedule respecting the minValues in Lt operator")."""
    types = [spot_only("a2.large", 2, 0.52), spot_only("a3.xlarge", 4, 1.0), spot_only("a4.2xlarge", 8, 1.2)]
    prov = pool("default", req(GENERATION, "Lt", "4", min_values=2))
    results = run(two_pods(), pools=[prov], types=types)
    assert_apart(results)
    assert all("a4.2xlarge" not in c.instance_types for c in results.nodeclaims)


def test_min_values_scheduler_should_fail_if_the_min_values_in_lt_operator_is_not_satisfied() -> None:
    """It("scheduler should fail if the minValues in Lt operator is not satisfied")."""
    types = [spot_only("a2.large", 2, 0.52), spot_only("a4.xlarge", 4, 1.2)]
    prov = pool("default", req(GENERATION, "Lt", "4", min_values=2))
    results = run(two_pods(), pools=[prov], types=types)
    assert not results.nodeclaims
    assert set(unschedulable(results)) == {"default/p-0", "default/p-1"}


def test_min_values_should_take_the_max_of_the_min_values_of_in_and_not_in_operators() -> None:
    """It("should schedule considering the max of the minValues of In and NotIn operators in the
    instance-type requirements"): In [1, 2, 3] minValues 1 and NotIn [3] minValues 2 leave types 1 and 2,
    both needed; type 2 alone would hold both pods."""
    types = [spot_only("a1.large", 2, 0.52), spot_only("a1.xlarge", 4, 1.0), spot_only("a1.2xlarge", 8, 1.2)]
    prov = pool(
        "default",
        req(INSTANCE_TYPE, "In", "a1.large", "a1.xlarge", "a1.2xlarge", min_values=1),
        req(INSTANCE_TYPE, "NotIn", "a1.2xlarge", min_values=2),
    )
    results = run(two_pods(), pools=[prov], types=types)
    assert_apart(results)
    assert all(set(c.instance_types) == {"a1.large", "a1.xlarge"} for c in results.nodeclaims)


def test_min_values_should_take_the_max_of_the_min_values_of_gt_and_lt_operators() -> None:
    """It("should schedule considering the max of the minValues of Gt and Lt operators.")."""
    types = [
        spot_only("a2.large", 2, 0.52),
        spot_only("a3.large", 2, 1.0),
        spot_only("a4.xlarge", 4, 1.2),
        spot_only("a5.xlarge", 4, 1.2),
    ]
    prov = pool("default", req(GENERATION, "Gt", "2", min_values=1), req(GENERATION, "Lt", "5", min_values=2))
    results = run(two_pods(), pools=[prov], types=types)
    assert_apart(results)
    assert all(set(c.instance_types) == {"a3.large", "a4.xlarge"} for c in results.nodeclaims)


def test_min_values_should_fail_if_the_minimum_number_of_instance_types_is_not_met() -> None:
    """It("schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the
    requirement"): ten types, minValues 11."""
    types = assorted_catalog()[:10]
    results = run([pending()], pools=[pool("default", req(INSTANCE_TYPE, "Exists", min_values=11))], types=types)
    assert not results.nodeclaims
    assert "minValues 11 for node.kubernetes.io/instance-type" in unschedulable(results)["default/p"]


def test_min_values_should_fail_if_the_minimum_is_not_met_after_truncation() -> None:
    """It("schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the
    requirement after truncation"). Karpenter's case truncates to one type (MaxInstanceTypes = 1); ours keeps
    the 60 cheapest, so the case has 60 cheap types of one family and a dearer one of another: two families
    fit, but the claim's 60 types hold one, and minValues 2 on the family fails."""
    cheap = [spot_only(f"a1.size{i}", 2, 0.10 + i / 1000) for i in range(60)]
    types = [*cheap, spot_only("b1.large", 2, 5.0)]
    prov = pool("default", req(INSTANCE_FAMILY, "Exists", min_values=2))
    results = run(two_pods(), pools=[prov], types=types)
    assert not results.nodeclaims
    assert all(f"minValues 2 for {INSTANCE_FAMILY}" in r for r in unschedulable(results).values())
    untruncated = run(two_pods(), pools=[prov], types=[*cheap[:10], types[-1]])
    assert not untruncated.unschedulable  # with fewer cheap types both families make the list


def test_min_values_should_pick_the_max_of_min_values_of_multiple_operators_on_one_key() -> None:
    """It("should schedule and pick the max of minValues of InstanceTypes if multiple operators are used for
    the same requirement.")."""
    types = [spot_only("a1.large", 2, 0.52), spot_only("a1.xlarge", 4, 1.0)]
    prov = pool(
        "default",
        req(INSTANCE_TYPE, "Exists", min_values=1),
        req(INSTANCE_TYPE, "In", "a1.large", "a1.xlarge", min_values=2),
    )
    assert_apart(run(two_pods(), pools=[prov], types=types))


def test_min_values_should_respect_multiple_requirement_keys_with_min_values() -> None:
    """It("should schedule and respect multiple requirement keys with minValues"): both architectures must
    be among each claim's types, and only the amd64 type holds both pods."""
    types = [spot_only("a1.large", 2, 0.52, arch="arm64"), spot_only("b1.xlarge", 4, 1.0, arch="amd64")]
    prov = pool(
        "default", req(ARCH, "Exists", min_values=2), req(INSTANCE_TYPE, "In", "a1.large", "b1.xlarge", min_values=1)
    )
    assert_apart(run(two_pods(), pools=[prov], types=types))
