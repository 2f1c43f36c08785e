"""Karpenter v1.14.1 pkg/controllers/provisioning/scheduling/topology_test.go, ported case by case (its cases are
v1.9.1's: the file changed only in Go loop syntax since).

Each test names the Describe/Context and It it mirrors. The facts (pods, constraints, NodePools and the
expected skews) are Karpenter's; the fake instance types are real ones (see sched_fake). A pod without
requests in Karpenter's test requests 10m and 16Mi here (every pod here requests something).
"""

from __future__ import annotations

import dataclasses

from builders import (
    affinity_term,
    node,
    pod,
    pool,
    preferred,
    pvc,
    req,
    selector,
    spread,
    toleration,
    weighted,
    zonal_pv,
)
from sched_fake import ZONE_1, ZONE_2, ZONE_3, Cluster, spread_catalog

from nodewright.catalog.labels import ARCH, CAPACITY_TYPE, ZONE
from nodewright.catalog.types import ON_DEMAND, SPOT
from nodewright.model.errors import Collector
from nodewright.model.kube import parse_pod
from nodewright.model.objects import (
    HOSTNAME_LABEL,
    LabelSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.taints import Taint

LABELS = {"test": "test"}


def base_pool(*requirements: Requirement, **kwargs: object) -> object:
    """The suite's NodePool: capacity type Exists, plus what a test adds."""
    return pool("default", req(CAPACITY_TYPE, "Exists"), *requirements, **kwargs)  # type: ignore[arg-type]


def make(prefix: str, count: int, cpu: str = "10m", **kwargs: object) -> list:  # type: ignore[type-arg]
    return [pod(f"{prefix}-{i}", cpu, "16Mi", **kwargs) for i in range(count)]  # type: ignore[arg-type]


def zonal(max_skew: int = 1, when: str = "DoNotSchedule", **kwargs: object) -> TopologySpreadConstraint:
    return dataclasses.replace(spread(ZONE, max_skew, when, **LABELS), **kwargs)  # type: ignore[arg-type]


# ----- Topology ------------------------------------------------------------------------------------------


def test_should_ignore_unknown_topology_keys() -> None:
    """It("should ignore unknown topology keys"): a key no node or NodePool has leaves the pods pending."""
    cluster = Cluster([base_pool()])
    pods = make("p", 2, labels=LABELS, topology_spread=(spread("unknown", 1, **LABELS),))
    results = cluster.provision(*pods)
    assert len(results.unschedulable) == 2


def test_should_not_spread_when_a_nil_label_selector_is_defined() -> None:
    """It("should not spread when a nil label selector is defined"): a spread without labelSelector counts
    no pod (Kubernetes reads a nil selector as selecting nothing), so both pods share a node."""
    doc = {
        "metadata": {"name": "p", "namespace": "default", "labels": LABELS},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
        },
    }
    docs = [
        {"apiVersion": "v1", "kind": "Pod", **doc, "metadata": {**doc["metadata"], "name": f"p-{i}"}} for i in range(2)
    ]
    parsed = [parse_pod(Collector("test", "Pod", "p"), d) for d in docs]
    cluster = Cluster([base_pool()])
    cluster.provision(*(p.pod for p in parsed if p is not None))
    assert cluster.skew(ZONE, LABELS) == [2]


# ----- Zonal ---------------------------------------------------------------------------------------------


def test_zonal_should_balance_pods_across_zones_match_labels() -> None:
    """Context("Zonal") It("should balance pods across zones (match labels)")."""
    cluster = Cluster([base_pool()])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [1, 1, 2]


def test_zonal_should_balance_pods_across_zones_match_expressions() -> None:
    """It("should balance pods across zones (match expressions)")."""
    selector = LabelSelector(match_expressions=(Requirement("test", Operator.IN, ("test",)),))
    constraint = TopologySpreadConstraint(1, ZONE, "DoNotSchedule", selector)
    cluster = Cluster([base_pool()])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(constraint,)))
    assert cluster.skew(ZONE, LABELS) == [1, 1, 2]


def test_zonal_should_respect_nodepool_zonal_constraints() -> None:
    """It("should respect NodePool zonal constraints")."""
    cluster = Cluster([base_pool(req(ZONE, "In", ZONE_1, ZONE_2))])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [2, 2]


def test_zonal_should_respect_nodepool_zonal_constraints_subset_with_labels() -> None:
    """It("should respect NodePool zonal constraints (subset) with labels")."""
    cluster = Cluster([base_pool(labels={ZONE: ZONE_1})])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [4]


def test_zonal_should_respect_nodepool_zonal_constraints_subset_with_labels_across_nodepools() -> None:
    """It("should respect NodePool zonal constraints (subset) with labels across NodePools")."""
    pools = [base_pool(labels={ZONE: ZONE_1}), pool("other", labels={ZONE: ZONE_2})]
    cluster = Cluster(pools)
    cluster.provision(*make("p", 6, labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [3, 3]


def test_zonal_should_respect_nodepool_zonal_constraints_existing_pod() -> None:
    """It("should respect NodePool zonal constraints (existing pod)"): a 1.1-cpu pod fills a node in zone
    3, then the NodePool is limited to zones 1 and 2: two per zone, the rest stay pending."""
    cluster = Cluster([base_pool()])
    cluster.provision(pod("first", "1100m", "16Mi", labels=LABELS, node_selector={ZONE: ZONE_3}))
    cluster.pools = [base_pool(req(ZONE, "In", ZONE_1, ZONE_2))]
    cluster.provision(*make("p", 6, cpu="1100m", labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [1, 2, 2]


def test_zonal_should_schedule_to_the_non_minimum_domain_if_its_all_thats_available() -> None:
    """It("should schedule to the non-minimum domain if its all that's available"): maxSkew 5; zones 1
    and 2 hold one pod each, then only zone 3 may grow: to 6."""
    cluster = Cluster([base_pool()])
    five = (zonal(max_skew=5),)
    for zone in (ZONE_1, ZONE_2):
        cluster.pools = [base_pool(req(ZONE, "In", zone))]
        cluster.provision(pod(f"first-{zone}", "1100m", "16Mi", labels=LABELS, topology_spread=five))
    cluster.pools = [base_pool(req(ZONE, "In", ZONE_3))]
    cluster.provision(*make("p", 10, cpu="1100m", labels=LABELS, topology_spread=five))
    assert cluster.skew(ZONE, LABELS) == [1, 1, 6]


def test_zonal_should_only_schedule_to_minimum_domains_if_already_violating_max_skew() -> None:
    """It("should only schedule to minimum domains if already violating max skew"): 9 pods spread 3/3/3;
    those outside zone 1 are deleted (so zone 1 holds 3, the others none); 3 new pods give 3/2/1."""
    cluster = Cluster([base_pool()])
    cluster.provision(*make("a", 9, cpu="1100m", labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [3, 3, 3]
    for name, n in list(cluster.nodes.items()):
        if n.labels[ZONE] != ZONE_1:
            cluster.nodes[name] = dataclasses.replace(n, pods=())
    cluster.provision(*make("b", 3, cpu="1100m", labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [1, 2, 3]


def test_zonal_should_not_violate_max_skew_when_unsat_do_not_schedule() -> None:
    """It("should not violate max-skew when unsat = do not schedule"): one pod in zone 1, then the NodePool
    is limited to zones 2 and 3: two each, the rest stay pending."""
    cluster = Cluster([base_pool(req(ZONE, "In", ZONE_1))])
    cluster.provision(pod("first", "1100m", "16Mi", labels=LABELS, topology_spread=(zonal(),)))
    cluster.pools = [base_pool(req(ZONE, "In", ZONE_2, ZONE_3))]
    cluster.provision(*make("p", 10, cpu="1100m", labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [1, 2, 2]


def test_zonal_should_not_violate_max_skew_when_unsat_do_not_schedule_discover_domains() -> None:
    """It("should not violate max-skew when unsat = do not schedule (discover domains)"): the first pod has
    no spread, yet its zone is a domain the later pods count."""
    cluster = Cluster([base_pool(req(ZONE, "In", ZONE_1))])
    cluster.provision(pod("first", "1100m", "16Mi", labels=LABELS))
    cluster.pools = [base_pool(req(ZONE, "In", ZONE_2, ZONE_3))]
    cluster.provision(*make("p", 10, cpu="1100m", labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [1, 2, 2]


def match_all_when_label_selector_is_not_specified(key: str) -> None:
    """Karpenter's case: one pod, then ExpectSkew of a spread on `key` without labelSelector (which counts
    every pod) is [1]. Its pod carries no spread; here it carries that spread with an empty selector (which
    selects every pod, unlike a nil one), so the solver's count of every pod is what is exercised."""
    constraint = TopologySpreadConstraint(1, key, "DoNotSchedule", LabelSelector())
    cluster = Cluster([base_pool()])
    cluster.provision(pod("p", "10m", "16Mi", topology_spread=(constraint,)))
    assert cluster.skew(key) == [1]


def handle_interdependent_selectors() -> None:
    """Karpenter's case: five pods without labels, each with a hostname spread (maxSkew 1) selecting the label
    they lack. The spread selects no pending pod, so no count grows and all five share one node."""
    cluster = Cluster([base_pool()])
    pods = make("p", 5, topology_spread=(spread(HOSTNAME_LABEL, 1, **LABELS),))
    cluster.provision(*pods)
    assert len({cluster.node_of(p).name for p in pods}) == 1  # type: ignore[union-attr]


def test_zonal_should_match_all_pods_when_label_selector_is_not_specified() -> None:
    """Context("Zonal") It("should match all pods when labelSelector is not specified"): the zone key."""
    match_all_when_label_selector_is_not_specified(ZONE)


def test_zonal_should_handle_interdependent_selectors() -> None:
    """Context("Zonal") It("should handle interdependent selectors") (Karpenter's spread is on hostname here
    too)."""
    handle_interdependent_selectors()


def test_zonal_should_respect_min_domains_constraints() -> None:
    """It("should respect minDomains constraints"): minDomains 3 over 2 zones treats the minimum as 0."""
    cluster = Cluster([base_pool(req(ZONE, "In", ZONE_1, ZONE_2))])
    cluster.provision(*make("p", 3, labels=LABELS, topology_spread=(zonal(min_domains=3),)))
    assert cluster.skew(ZONE, LABELS) == [1, 1]


def test_zonal_satisfied_min_domains_equal_allows_expected_scheduling() -> None:
    """It("satisfied minDomains constraints (equal) should allow expected pod scheduling")."""
    cluster = Cluster([base_pool(req(ZONE, "In", ZONE_1, ZONE_2, ZONE_3))])
    cluster.provision(*make("p", 11, labels=LABELS, topology_spread=(zonal(min_domains=3),)))
    assert cluster.skew(ZONE, LABELS) == [3, 4, 4]


# ----- Hostname ------------------------------------------------------------------------------------------


def test_hostname_should_balance_pods_across_nodes() -> None:
    """Context("Hostname") It("should balance pods across nodes")."""
    cluster = Cluster([base_pool()])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(spread(HOSTNAME_LABEL, 1, **LABELS),)))
    assert cluster.skew(HOSTNAME_LABEL, LABELS) == [1, 1, 1, 1]


def test_hostname_should_balance_pods_on_the_same_hostname_up_to_maxskew() -> None:
    """It("should balance pods on the same hostname up to maxskew")."""
    cluster = Cluster([base_pool()])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(spread(HOSTNAME_LABEL, 4, **LABELS),)))
    assert cluster.skew(HOSTNAME_LABEL, LABELS) == [4]


# ----- CapacityType --------------------------------------------------------------------------------------


def ct_spread(when: str = "DoNotSchedule") -> TopologySpreadConstraint:
    return spread(CAPACITY_TYPE, 1, when, **LABELS)


def test_capacity_type_should_balance_pods_across_capacity_types() -> None:
    """Context("CapacityType") It("should balance pods across capacity types")."""
    cluster = Cluster([base_pool()])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [2, 2]


def test_capacity_type_should_respect_nodepool_capacity_type_constraints() -> None:
    """It("should respect NodePool capacity type constraints")."""
    cluster = Cluster([pool("default", req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND))])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [2, 2]


def test_capacity_type_should_not_violate_max_skew_when_unsat_do_not_schedule() -> None:
    """It("should not violate max-skew when unsat = do not schedule (capacity type)")."""
    cluster = Cluster([pool("default", req(CAPACITY_TYPE, "In", SPOT))])
    cluster.provision(*make("a", 1, cpu="1100m", labels=LABELS, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [1]
    cluster.pools = [pool("default", req(CAPACITY_TYPE, "In", ON_DEMAND))]
    cluster.provision(*make("b", 5, cpu="1100m", labels=LABELS, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [1, 2]


def test_capacity_type_should_violate_max_skew_when_unsat_schedule_anyway() -> None:
    """It("should violate max-skew when unsat = schedule anyway (capacity type)")."""
    cluster = Cluster([pool("default", req(CAPACITY_TYPE, "In", SPOT))])
    cluster.provision(*make("a", 1, cpu="1100m", labels=LABELS, topology_spread=(ct_spread("ScheduleAnyway"),)))
    cluster.pools = [pool("default", req(CAPACITY_TYPE, "In", ON_DEMAND))]
    cluster.provision(*make("b", 5, cpu="1100m", labels=LABELS, topology_spread=(ct_spread("ScheduleAnyway"),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [1, 5]


def test_capacity_type_should_only_count_scheduled_pods_with_matching_labels_on_nodes_with_a_domain() -> None:
    """It("should only count running/scheduled pods with matching labels scheduled to nodes with a
    corresponding domain"): 2 on spot, 1 on on-demand, a node without the label ignored; two new pods
    both go on-demand."""
    types = spread_catalog()
    spot = node("spot", types[0], ZONE_1, bound=make("s", 2, labels=LABELS), labels={CAPACITY_TYPE: SPOT})
    od = node("od", types[0], ZONE_1, bound=make("o", 1, labels=LABELS), labels={CAPACITY_TYPE: ON_DEMAND})
    other = node("other", types[0], ZONE_1, bound=make("x", 1, ns="elsewhere", labels=LABELS))
    spot = dataclasses.replace(spot, pods=spot.pods + tuple(make("nolabel", 1, ns="default")))
    cluster = Cluster([base_pool()], types, nodes=[spot, od, other])
    cluster.provision(*make("p", 2, labels=LABELS, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [2, 3]


def test_capacity_type_should_balance_pods_across_capacity_types_node_required_affinity_constrained() -> None:
    """It("should balance pods across capacity-types (node required affinity constrained)"): the pods'
    requirements (spot in zone 2) exclude the existing on-demand node from the count, so all five go to
    spot."""
    cluster = Cluster([base_pool()])
    on_demand = node_terms_of(req(ZONE, "In", ZONE_1), req(CAPACITY_TYPE, "In", ON_DEMAND))
    cluster.provision(pod("first", "10m", "16Mi", labels=LABELS, required_node_terms=on_demand))
    spot = node_terms_of(req(ZONE, "In", ZONE_2), req(CAPACITY_TYPE, "In", SPOT))
    cluster.provision(*make("p", 5, labels=LABELS, required_node_terms=spot, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [1, 5]


def test_capacity_type_should_balance_pods_across_capacity_types_no_constraints() -> None:
    """It("should balance pods across capacity-types (no constraints)"): one on-demand pod exists, the
    NodePool can only create spot: two more pods, then max-skew holds the rest."""
    cluster = Cluster([base_pool()])
    cluster.provision(pod("first", "10m", "16Mi", labels=LABELS, node_selector={CAPACITY_TYPE: ON_DEMAND}))
    cluster.pools = [pool("default", req(CAPACITY_TYPE, "In", SPOT))]
    cluster.provision(*make("p", 5, cpu="2", labels=LABELS, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [1, 2]


def test_capacity_type_should_balance_pods_across_arch_no_constraints() -> None:
    """It("should balance pods across arch (no constraints)")."""
    cluster = Cluster([base_pool()])
    cluster.provision(pod("first", "10m", "16Mi", labels=LABELS, node_selector={ARCH: "amd64"}))
    cluster.pools = [pool("default", req(ARCH, "In", "arm64"))]
    cluster.provision(*make("p", 5, cpu="2", labels=LABELS, topology_spread=(spread(ARCH, 1, **LABELS),)))
    assert cluster.skew(ARCH, LABELS) == [1, 2]


def test_capacity_type_should_match_all_pods_when_label_selector_is_not_specified() -> None:
    """Context("CapacityType") It("should match all pods when labelSelector is not specified"): the
    capacity-type key."""
    match_all_when_label_selector_is_not_specified(CAPACITY_TYPE)


def test_capacity_type_should_handle_interdependent_selectors() -> None:
    """Context("CapacityType") It("should handle interdependent selectors"): the same case as the Zonal
    context's (a hostname spread), repeated in Karpenter's CapacityType context."""
    handle_interdependent_selectors()


def node_terms_of(*requirements: Requirement) -> tuple[NodeSelectorTerm, ...]:
    return (NodeSelectorTerm(tuple(requirements)),)


# ----- Combined Hostname and Zonal Topology --------------------------------------------------------------


def test_combined_should_spread_pods_while_respecting_both_constraints_hostname_and_zonal() -> None:
    """Context("Combined Hostname and Zonal Topology") It("should spread pods while respecting both
    constraints (hostname and zonal)"), round by round."""
    both = (zonal(), spread(HOSTNAME_LABEL, 3, **LABELS))
    cluster = Cluster([base_pool()])
    for prefix, count, expected in (("a", 2, [1, 1]), ("b", 3, [1, 2, 2]), ("c", 5, [3, 3, 4]), ("d", 11, [7, 7, 7])):
        cluster.provision(*make(prefix, count, labels=LABELS, topology_spread=both))
        assert cluster.skew(ZONE, LABELS) == expected
        assert max(cluster.skew(HOSTNAME_LABEL, LABELS)) <= 3


def test_combined_should_balance_pods_across_nodepool_requirements() -> None:
    """It("should balance pods across NodePool requirements"): a spot NodePool with 4 values of a custom
    label and an on-demand one with 1: 4 pods per value, so 16 spot and 4 on-demand."""
    key = "capacity.spread.4-1"
    pools = [
        pool("spot", req(CAPACITY_TYPE, "In", SPOT), req(key, "In", "2", "3", "4", "5")),
        pool("on-demand", req(CAPACITY_TYPE, "In", ON_DEMAND), req(key, "In", "1")),
    ]
    cluster = Cluster(pools)
    results = cluster.provision(*make("p", 20, labels=LABELS, topology_spread=(spread(key, 1, **LABELS),)))
    assert not results.unschedulable
    assert cluster.skew(key, LABELS) == [4, 4, 4, 4, 4]
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [4, 16]


def test_combined_should_spread_pods_while_respecting_both_constraints_disabled_pool() -> None:
    """It("should spread pods while respecting both constraints") (first of the two): zone 3's NodePool
    has a cpu limit of 0, so one pod per zone in zones 1 and 2, one pod per node."""
    pools = [
        base_pool(req(ZONE, "In", ZONE_1, ZONE_2)),
        pool("b", req(ZONE, "In", ZONE_3), limits={"cpu": "0"}),
    ]
    both = (zonal(), spread(HOSTNAME_LABEL, 1, "ScheduleAnyway", **LABELS))
    cluster = Cluster(pools)
    cluster.provision(*make("p", 10, labels=LABELS, topology_spread=both))
    assert cluster.skew(ZONE, LABELS) == [1, 1]
    assert cluster.skew(HOSTNAME_LABEL, LABELS) == [1, 1]


def test_combined_should_spread_pods_while_respecting_capacity_type_and_hostname() -> None:
    """It("should spread pods while respecting both constraints") (capacity type and hostname)."""
    both = (ct_spread(), spread(HOSTNAME_LABEL, 3, **LABELS))
    cluster = Cluster([base_pool()])
    for prefix, count, expected in (("a", 2, [1, 1]), ("b", 3, [2, 3]), ("c", 5, [5, 5]), ("d", 11, [10, 11])):
        cluster.provision(*make(prefix, count, labels=LABELS, topology_spread=both))
        assert cluster.skew(CAPACITY_TYPE, LABELS) == expected
        assert max(cluster.skew(HOSTNAME_LABEL, LABELS)) <= 3


# ----- NodeTaintsPolicy / NodeAffinityPolicy --------------------------------------------------------------

_TAINT = Taint("taintname", "NoSchedule", "taintvalue")


def _tainted_label_nodes(label: str, extra: dict[str, str] | None = None, taints: tuple[Taint, ...] = ()) -> list:  # type: ignore[type-arg]
    types = spread_catalog()
    return [
        node(f"n-{value}", types[0], ZONE_1, labels={label: value, **(extra or {})}, taints=taints)
        for value in ("foo", "bar")
    ]


def test_node_taints_policy_ignore_counts_tainted_nodes_domains() -> None:
    """Context("NodeTaintsPolicy") It("should balance pods across a label (NodeTaintsPolicy=ignore)"):
    foo and bar (tainted nodes) and baz (the NodePool) are domains; only baz can take pods: one."""
    label = "fake-label"
    cluster = Cluster([base_pool(labels={label: "baz"})], nodes=_tainted_label_nodes(label, taints=(_TAINT,)))
    constraint = dataclasses.replace(spread(label, 1, **LABELS), node_taints_policy="Ignore")
    cluster.provision(*make("p", 5, cpu="1", labels=LABELS, topology_spread=(constraint,)))
    assert cluster.skew(label, LABELS) == [1]


def test_node_taints_policy_honor_skips_tainted_nodes_domains() -> None:
    """It("should balance pods across a label (NodeTaintsPolicy=honor)"): the tainted nodes' domains do
    not count, so all five pods go to baz."""
    label = "fake-label"
    cluster = Cluster([base_pool(labels={label: "baz"})], nodes=_tainted_label_nodes(label, taints=(_TAINT,)))
    constraint = dataclasses.replace(spread(label, 1, **LABELS), node_taints_policy="Honor")
    cluster.provision(*make("p", 5, cpu="1", labels=LABELS, topology_spread=(constraint,)))
    assert cluster.skew(label, LABELS) == [5]


def test_node_taints_policy_honor_mutually_exclusive_nodepools_share_domains() -> None:
    """It("should balance pods across a label when mutually exclusive NodePools (by taints) share domains
    (NodeTaintsPolicy=honor)"): foo 2, bar 1, baz 3."""
    label = "fake-label"
    pools = [
        pool(
            f"np-{i}",
            req(CAPACITY_TYPE, "Exists"),
            req(label, "In", *values),
            taints=[Taint("taint-key", "NoSchedule", f"np-{i}")],
        )
        for i, values in enumerate((("foo", "bar"), ("foo", "baz")))
    ]
    constraint = dataclasses.replace(spread(label, 1, **LABELS), node_taints_policy="Honor")
    pods = []
    for i in range(2):
        tolerate = (toleration("taint-key", f"np-{i}", "NoSchedule"),)
        pods += make(f"d{i}", (i + 1) * 2, labels=LABELS, tolerations=tolerate, topology_spread=(constraint,))
    cluster = Cluster(pools)
    cluster.provision(*pods)
    assert cluster.skew(label, LABELS) == [1, 2, 3]


def test_node_affinity_policy_ignore_counts_nodes_the_pod_cannot_use() -> None:
    """Context("NodeAffinityPolicy") It("should balance pods across a label (NodeAffinityPolicy=ignore)")."""
    label = "fake-label"
    nodes = _tainted_label_nodes(label, {"selector": "mismatch"})
    cluster = Cluster([base_pool(labels={label: "baz", "selector": "value"})], nodes=nodes)
    constraint = dataclasses.replace(spread(label, 1, **LABELS), node_affinity_policy="Ignore")
    pending = make("p", 5, cpu="1", labels=LABELS, node_selector={"selector": "value"}, topology_spread=(constraint,))
    cluster.provision(*pending)
    assert cluster.skew(label, LABELS) == [1]


def test_node_affinity_policy_honor_counts_only_nodes_the_pod_can_use() -> None:
    """It("should balance pods across a label (NodeAffinityPolicy=honor)")."""
    label = "fake-label"
    nodes = _tainted_label_nodes(label, {"selector": "mismatch"})
    cluster = Cluster([base_pool(labels={label: "baz", "selector": "value"})], nodes=nodes)
    constraint = dataclasses.replace(spread(label, 1, **LABELS), node_affinity_policy="Honor")
    pending = make("p", 5, cpu="1", labels=LABELS, node_selector={"selector": "value"}, topology_spread=(constraint,))
    cluster.provision(*pending)
    assert cluster.skew(label, LABELS) == [5]


# ----- Combined Zonal and Capacity Type / Zonal Topology and Node Affinity ----------------------------------


def test_combined_zonal_and_capacity_type_should_spread_pods_while_respecting_both_constraints() -> None:
    """Context("Combined Zonal and Capacity Type Topology") It("should spread pods while respecting both
    constraints"): every zone and capacity type stays within one of the others."""
    both = (zonal(), ct_spread())
    cluster = Cluster([base_pool()])
    for prefix, count in (("a", 1), ("b", 2), ("c", 3), ("d", 4)):
        cluster.provision(*make(prefix, count, labels=LABELS, topology_spread=both))
        zones, types = cluster.skew(ZONE, LABELS), cluster.skew(CAPACITY_TYPE, LABELS)
        assert zones[-1] - (zones[0] if len(zones) == 3 else 0) <= 1
        assert types[-1] - (types[0] if len(types) == 2 else 0) <= 1


def test_zonal_and_node_affinity_should_limit_spread_options_by_node_selector() -> None:
    """Context("Combined Zonal Topology and Node Affinity") It("should limit spread options by nodeSelector")."""
    cluster = Cluster([base_pool()])
    pending = make("a", 5, labels=LABELS, topology_spread=(zonal(),), node_selector={ZONE: ZONE_1})
    pending += make("b", 10, labels=LABELS, topology_spread=(zonal(),), node_selector={ZONE: ZONE_2})
    cluster.provision(*pending)
    assert cluster.skew(ZONE, LABELS) == [5, 10]


def test_zonal_and_node_affinity_should_limit_spread_options_by_node_requirements() -> None:
    """It("should limit spread options by node requirements")."""
    cluster = Cluster([base_pool()])
    terms = node_terms_of(req(ZONE, "In", ZONE_1, ZONE_2))
    cluster.provision(*make("p", 10, labels=LABELS, topology_spread=(zonal(),), required_node_terms=terms))
    assert cluster.skew(ZONE, LABELS) == [5, 5]


def test_zonal_and_node_affinity_should_limit_spread_options_by_required_node_affinity() -> None:
    """It("should limit spread options by required node affinity"), round by round."""
    cluster = Cluster([base_pool()])
    terms = node_terms_of(req(ZONE, "In", ZONE_1, ZONE_2))
    cluster.provision(*make("a", 6, labels=LABELS, topology_spread=(zonal(),), required_node_terms=terms))
    assert cluster.skew(ZONE, LABELS) == [3, 3]
    cluster.pools = [pool("default", req(ZONE, "In", ZONE_1, ZONE_2, ZONE_3))]
    terms = node_terms_of(req(ZONE, "In", ZONE_2, ZONE_3))
    cluster.provision(*make("b", 1, labels=LABELS, topology_spread=(zonal(),), required_node_terms=terms))
    assert cluster.skew(ZONE, LABELS) == [1, 3, 3]
    cluster.provision(*make("c", 5, labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [4, 4, 4]


def test_zonal_and_node_affinity_should_not_limit_spread_options_by_preferred_node_affinity() -> None:
    """It("should not limit spread options by preferred node affinity"): 2/2/2, not 3/3/0."""
    cluster = Cluster([base_pool()])
    prefer = (preferred(1, req(ZONE, "In", ZONE_1, ZONE_2)),)
    cluster.provision(*make("p", 6, labels=LABELS, topology_spread=(zonal(),), preferred_node_terms=prefer))
    assert cluster.skew(ZONE, LABELS) == [2, 2, 2]


def test_capacity_type_and_node_affinity_should_limit_spread_options_by_node_selector() -> None:
    """Context("Combined Capacity Type Topology and Node Affinity") It("should limit spread options by
    nodeSelector")."""
    cluster = Cluster([base_pool()])
    anyway = ct_spread("ScheduleAnyway")
    pending = make("s", 5, labels=LABELS, topology_spread=(anyway,), node_selector={CAPACITY_TYPE: SPOT})
    pending += make("o", 5, labels=LABELS, topology_spread=(anyway,), node_selector={CAPACITY_TYPE: ON_DEMAND})
    cluster.provision(*pending)
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [5, 5]


def test_capacity_type_and_node_affinity_should_limit_spread_options_by_node_affinity() -> None:
    """It("should limit spread options by node affinity (capacity type)"), round by round."""
    cluster = Cluster([base_pool()])
    spot_only = node_terms_of(req(CAPACITY_TYPE, "In", SPOT))
    cluster.provision(*make("a", 3, labels=LABELS, topology_spread=(ct_spread(),), required_node_terms=spot_only))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [3]
    both = node_terms_of(req(CAPACITY_TYPE, "In", ON_DEMAND, SPOT))
    cluster.provision(*make("b", 1, labels=LABELS, topology_spread=(ct_spread(),), required_node_terms=both))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [1, 3]
    cluster.provision(*make("c", 5, labels=LABELS, topology_spread=(ct_spread(),)))
    assert cluster.skew(CAPACITY_TYPE, LABELS) == [4, 5]


# ----- Pod Affinity/Anti-Affinity ------------------------------------------------------------------------

SECURITY = {"security": "s2"}


def test_should_respect_pod_affinity_hostname() -> None:
    """Context("Pod Affinity/Anti-Affinity") It("should respect pod affinity (hostname)")."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    follower = pod("follower", "10m", "16Mi", pod_affinity=(affinity_term(HOSTNAME_LABEL, **SECURITY),))
    others = make("other", 10)
    cluster.provision(target, follower, *others)
    assert cluster.node_of(target) == cluster.node_of(follower)


def test_should_respect_pod_affinity_arch() -> None:
    """It("should respect pod affinity (arch)"): the follower lands on a node of the target's arch."""
    cluster = Cluster([base_pool()])
    target = pod("target", "2", "16Mi", labels=SECURITY, node_selector={ARCH: "arm64"})
    follower = pod("follower", "1", "16Mi", pod_affinity=(affinity_term(ARCH, **SECURITY),))
    results = cluster.provision(target, follower)
    assert not results.unschedulable
    assert cluster.node_of(follower).labels[ARCH] == "arm64"  # type: ignore[union-attr]


def test_should_respect_self_pod_affinity_zone() -> None:
    """It("should respect self pod affinity (zone)"): all three in one zone."""
    cluster = Cluster([base_pool()])
    cluster.provision(*make("p", 3, labels=SECURITY, pod_affinity=(affinity_term(ZONE, **SECURITY),)))
    assert cluster.skew(ZONE, SECURITY) == [3]


def test_should_respect_self_pod_affinity_zone_with_constraint() -> None:
    """It("should respect self pod affinity (zone w/ constraint)"): the pods' own zone requirement wins."""
    cluster = Cluster([base_pool()])
    terms = node_terms_of(req(ZONE, "In", ZONE_3))
    pending = make("p", 3, labels=SECURITY, pod_affinity=(affinity_term(ZONE, **SECURITY),), required_node_terms=terms)
    cluster.provision(*pending)
    assert all(cluster.node_of(p).labels[ZONE] == ZONE_3 for p in pending)  # type: ignore[union-attr]


def test_should_allow_violation_of_preferred_pod_affinity() -> None:
    """It("should allow violation of preferred pod affinity")."""
    cluster = Cluster([base_pool()])
    prefer = (weighted(50, HOSTNAME_LABEL, security="s2"),)
    p = pod("p", "10m", "16Mi", preferred_pod_affinity=prefer)
    cluster.provision(p)
    assert cluster.node_of(p) is not None


def test_should_separate_nodes_using_simple_pod_anti_affinity_on_hostname() -> None:
    """It("should separate nodes using simple pod anti-affinity on hostname")."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    avoider = pod("avoider", "10m", "16Mi", pod_anti_affinity=(affinity_term(HOSTNAME_LABEL, **SECURITY),))
    cluster.provision(avoider, target)
    assert cluster.node_of(target) != cluster.node_of(avoider)


def test_should_not_violate_pod_anti_affinity_on_zone() -> None:
    """It("should not violate pod anti-affinity on zone"): a selected pod in every zone, the avoider
    stays pending."""
    cluster = Cluster([base_pool()])
    zonal_pods = [
        pod(f"z{i}", "2", "16Mi", labels=SECURITY, node_selector={ZONE: z})
        for i, z in enumerate((ZONE_1, ZONE_2, ZONE_3))
    ]
    avoider = pod("avoider", "10m", "16Mi", pod_anti_affinity=(affinity_term(ZONE, **SECURITY),))
    cluster.provision(*zonal_pods, avoider)
    assert all(cluster.node_of(p) is not None for p in zonal_pods)
    assert cluster.node_of(avoider) is None


def test_should_not_violate_pod_anti_affinity_on_zone_other_schedules_first() -> None:
    """It("should not violate pod anti-affinity on zone (other schedules first)"): the selected pod's zone
    is not decided yet, so the avoider waits for a round."""
    cluster = Cluster([base_pool()])
    target = pod("target", "2", "16Mi", labels=SECURITY)
    avoider = pod("avoider", "10m", "16Mi", pod_anti_affinity=(affinity_term(ZONE, **SECURITY),))
    cluster.provision(target, avoider)
    assert cluster.node_of(target) is not None
    assert cluster.node_of(avoider) is None
    cluster.provision(avoider)  # the next round sees the target's zone
    assert cluster.node_of(avoider).labels[ZONE] != cluster.node_of(target).labels[ZONE]  # type: ignore[union-attr]


def test_should_not_violate_pod_anti_affinity_arch() -> None:
    """It("should not violate pod anti-affinity (arch)")."""
    cluster = Cluster([base_pool()])
    tsc = (spread(HOSTNAME_LABEL, 1, **SECURITY),)
    first = pod("first", "2", "16Mi", labels=SECURITY, topology_spread=tsc, node_selector={ARCH: "arm64"})
    second = pod(
        "second",
        "1",
        "16Mi",
        labels=SECURITY,
        topology_spread=tsc,
        pod_anti_affinity=(affinity_term(ARCH, **SECURITY),),
    )
    results = cluster.provision(first, second)
    assert not results.unschedulable
    assert cluster.node_of(first).labels[ARCH] != cluster.node_of(second).labels[ARCH]  # type: ignore[union-attr]


def test_should_violate_preferred_pod_anti_affinity_on_zone_inverse() -> None:
    """It("should violate preferred pod anti-affinity on zone (inverse)")."""
    cluster = Cluster([base_pool()])
    anti = (weighted(10, ZONE, **SECURITY),)
    zonal_pods = [
        pod(f"z{i}", "2", "16Mi", preferred_pod_anti_affinity=anti, node_selector={ZONE: z})
        for i, z in enumerate((ZONE_1, ZONE_2, ZONE_3))
    ]
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    cluster.provision(*zonal_pods, target)
    assert all(cluster.node_of(p) is not None for p in (*zonal_pods, target))


def test_should_not_violate_pod_anti_affinity_on_zone_inverse() -> None:
    """It("should not violate pod anti-affinity on zone (inverse)")."""
    cluster = Cluster([base_pool()])
    anti = (affinity_term(ZONE, **SECURITY),)
    zonal_pods = [
        pod(f"z{i}", "2", "16Mi", pod_anti_affinity=anti, node_selector={ZONE: z})
        for i, z in enumerate((ZONE_1, ZONE_2, ZONE_3))
    ]
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    cluster.provision(*zonal_pods, target)
    assert all(cluster.node_of(p) is not None for p in zonal_pods)
    assert cluster.node_of(target) is None


def test_should_not_violate_pod_anti_affinity_on_zone_schroedinger() -> None:
    """It("should not violate pod anti-affinity on zone (Schrödinger)"). Karpenter leaves the selected pod
    pending for a round because the avoider's zone is not decided yet; nodewright decides the avoider's
    zone before it places it (its claim is pinned to that zone), so the selected pod lands in another zone
    in the same round (a README difference). Either way the two never share a zone."""
    cluster = Cluster([base_pool()])
    avoider = pod("avoider", "2", "16Mi", pod_anti_affinity=(affinity_term(ZONE, **SECURITY),))
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    results = cluster.provision(avoider, target)
    assert not results.unschedulable
    assert cluster.node_of(avoider).labels[ZONE] != cluster.node_of(target).labels[ZONE]  # type: ignore[union-attr]
    zones = {c.pods[0]: c.zones for c in results.nodeclaims}
    assert all(len(z) == 1 for z in zones.values())  # each claim is pinned to its zone


def test_should_not_schedule_pods_with_affinity_to_a_non_existent_pod() -> None:
    """It("should not schedule pods with affinity to a non-existent pod")."""
    cluster = Cluster([base_pool()])
    p = pod("p", "10m", "16Mi", pod_affinity=(affinity_term(ZONE, security="nothing"),))
    cluster.provision(p)
    assert cluster.node_of(p) is None


def test_should_support_pod_affinity_with_zone_topology_constrained_target() -> None:
    """It("should support pod affinity with zone topology (constrained target)")."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", labels=SECURITY, node_selector={ZONE: ZONE_1})
    followers = make("f", 5, pod_affinity=(affinity_term(ZONE, **SECURITY),))
    cluster.provision(target, *followers)
    assert all(cluster.node_of(p).labels[ZONE] == ZONE_1 for p in followers)  # type: ignore[union-attr]


def test_should_handle_multiple_dependent_affinities() -> None:
    """It("should handle multiple dependent affinities"): a chain db <- web <- cache <- ui, one node."""
    cluster = Cluster([base_pool()])
    db = pod("db", "10m", "16Mi", labels={"type": "db"})
    web = pod("web", "10m", "16Mi", labels={"type": "web"}, pod_affinity=(affinity_term(HOSTNAME_LABEL, type="db"),))
    cache = pod(
        "cache", "10m", "16Mi", labels={"type": "cache"}, pod_affinity=(affinity_term(HOSTNAME_LABEL, type="web"),)
    )
    ui = pod("ui", "10m", "16Mi", labels={"type": "ui"}, pod_affinity=(affinity_term(HOSTNAME_LABEL, type="cache"),))
    cluster.provision(db, web, cache, ui)
    assert len({cluster.node_of(p).name for p in (db, web, cache, ui)}) == 1  # type: ignore[union-attr]


def test_should_fail_to_schedule_pods_with_unsatisfiable_dependencies() -> None:
    """It("should fail to schedule pods with unsatisfiable dependencies")."""
    cluster = Cluster([base_pool()])
    p = pod("p", "10m", "16Mi", labels={"type": "db"}, pod_affinity=(affinity_term(HOSTNAME_LABEL, type="web"),))
    cluster.provision(p)
    assert cluster.node_of(p) is None


def test_should_filter_pod_affinity_topologies_by_namespace_no_matching_pods() -> None:
    """It("should filter pod affinity topologies by namespace, no matching pods")."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", ns="other", labels=SECURITY)
    follower = pod("follower", "10m", "16Mi", pod_affinity=(affinity_term(HOSTNAME_LABEL, **SECURITY),))
    cluster.provision(target, follower)
    assert cluster.node_of(follower) is None


# ----- Taints ----------------------------------------------------------------------------------------------


def test_taints_should_schedule_pods_that_tolerate_nodepool_constraints() -> None:
    """Describe("Taints") It("should schedule pods that tolerate NodePool constraints")."""
    taint = Taint("test-key", "NoSchedule", "test-value")
    cluster = Cluster([base_pool(taints=[taint])])
    ok = [
        pod("exists", "10m", "16Mi", tolerations=(toleration("test-key", operator="Exists"),)),
        pod("equal", "10m", "16Mi", tolerations=(toleration("test-key", "test-value", "NoSchedule"),)),
    ]
    refused = pod("none", "10m", "16Mi")
    cluster.provision(*ok, refused)
    assert all(cluster.node_of(p) is not None for p in ok)
    assert cluster.node_of(refused) is None


def parsed_pods(names: list[str], labels: dict[str, str], constraint: dict[str, object]) -> list:  # type: ignore[type-arg]
    """Pods read by the parser, as Karpenter's suite writes them: a 10m/16Mi container and one spread
    constraint given as its YAML mapping (for fields only the parser handles: matchLabelKeys, selectors)."""
    out = []
    for name in names:
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                "topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", **constraint}],
            },
        }
        parsed = parse_pod(Collector("test", "Pod", name), doc)
        assert parsed is not None
        out.append(parsed.pod)
    return out


# ----- The cases ported second (same file, same order as Karpenter's) ---------------------------------------


def test_should_not_spread_an_invalid_label_selector() -> None:
    """It("should not spread an invalid label selector"): a selector value no label can have selects no pod,
    so the spread counts nothing and both pods share a node (Karpenter skips the case on Kubernetes 1.27 and
    newer, whose admission refuses such a pod; the facts are the same)."""
    selector = {"matchLabels": {"app.kubernetes.io/name": "{{ zqfmgb }}"}}
    pending = parsed_pods(["p-0", "p-1"], LABELS, {"topologyKey": ZONE, "labelSelector": selector})
    cluster = Cluster([base_pool()])
    cluster.provision(*pending)
    assert cluster.skew(ZONE, LABELS) == [2]


def test_zonal_should_respect_nodepool_zonal_constraints_subset_with_requirements() -> None:
    """Context("Zonal") It("should respect NodePool zonal constraints (subset) with requirements")."""
    cluster = Cluster([pool("default", req(ZONE, "In", ZONE_1, ZONE_2))])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [2, 2]


def test_zonal_should_respect_nodepool_zonal_constraints_subset_with_requirements_and_labels() -> None:
    """It("should respect NodePool zonal constraints (subset) with requirements and labels")."""
    cluster = Cluster([pool("default", req(ZONE, "In", ZONE_1, ZONE_2), labels={ZONE: ZONE_1})])
    cluster.provision(*make("p", 4, labels=LABELS, topology_spread=(zonal(),)))
    assert cluster.skew(ZONE, LABELS) == [4]


def test_zonal_should_only_count_scheduled_pods_with_matching_labels_on_nodes_with_a_domain() -> None:
    """It("should only count running/scheduled pods with matching labels scheduled to nodes with a
    corresponding domain") (Zonal): zone 1 holds two, zone 2 one; a pod without the labels, one in another
    namespace and one on a node without a zone do not count, so the two new pods make 2/2/1. Karpenter's
    case also has pods that do not count because they are not running: not marked unschedulable (so not
    pending), finished (Succeeded, Failed) or terminating; the Kubernetes adapter does not list those."""
    types = spread_catalog()
    first = node(
        "first",
        types[0],
        ZONE_1,
        bound=[*make("n", 1), *make("wrong", 1, ns="elsewhere", labels=LABELS), *make("a", 2, labels=LABELS)],
    )
    second = node("second", types[0], ZONE_2, bound=make("b", 1, labels=LABELS))
    third = node("third", types[0], ZONE_3, bound=make("c", 1, labels=LABELS))
    third = dataclasses.replace(third, labels={k: v for k, v in third.labels.items() if k != ZONE})
    cluster = Cluster([base_pool()], types, nodes=[first, second, third])
    new = make("p", 2, labels=LABELS, topology_spread=(zonal(),))
    cluster.provision(*new)
    assert cluster.skew(ZONE, LABELS) == [1, 2, 2]
    assert sorted(cluster.labels_of(p)[ZONE] for p in new) == [ZONE_2, ZONE_3]


def test_zonal_satisfied_min_domains_greater_than_minimum_allows_expected_scheduling() -> None:
    """It("satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling")."""
    cluster = Cluster([pool("default", req(ZONE, "In", ZONE_1, ZONE_2, ZONE_3))])
    cluster.provision(*make("p", 11, labels=LABELS, topology_spread=(zonal(min_domains=2),)))
    assert cluster.skew(ZONE, LABELS) == [3, 4, 4]


def _app_spread(app: str) -> TopologySpreadConstraint:
    return spread(HOSTNAME_LABEL, 1, app=app)


def test_hostname_balance_multiple_deployments_with_hostname_topology_spread() -> None:
    """Context("Hostname") It("balance multiple deployments with hostname topology spread"): two pods of each
    app, one per node per app, on the fewest nodes: two."""
    cluster = Cluster([base_pool()])
    pending = [
        pod(f"{app}-{i}", "10m", "16Mi", labels={"app": app}, topology_spread=(_app_spread(app),))
        for app in ("app1", "app2")
        for i in range(2)
    ]
    results = cluster.provision(*pending)
    assert not results.unschedulable
    assert len({cluster.where(p) for p in pending}) == 2


def test_hostname_balance_multiple_deployments_with_hostname_topology_spread_and_varying_arch() -> None:
    """It("balance multiple deployments with hostname topology spread & varying arch"): four nodes."""
    cluster = Cluster([base_pool()])
    pending = [
        pod(
            f"{app}-{i}",
            "10m",
            "16Mi",
            labels={"app": app},
            topology_spread=(_app_spread(app),),
            required_node_terms=node_terms_of(req(ARCH, "In", arch)),
        )
        for app, arch in (("app1", "amd64"), ("app2", "arm64"))
        for i in range(2)
    ]
    results = cluster.provision(*pending)
    assert not results.unschedulable
    assert len({cluster.where(p) for p in pending}) == 4


def test_match_label_keys_should_support_match_label_keys() -> None:
    """Context("MatchLabelKeys") It("should support matchLabelKeys"): the spread counts each deployment's pods
    apart (test-label a or b), so two nodes hold one of each; read through the parser, which adds the pod's
    value of each matchLabelKeys key to the selector."""
    keyed = {"topologyKey": HOSTNAME_LABEL, "labelSelector": {"matchLabels": LABELS}, "matchLabelKeys": ["test-label"]}
    pending = [
        pod_
        for value in ("value-a", "value-b")
        for pod_ in parsed_pods([f"{value}-0", f"{value}-1"], {**LABELS, "test-label": value}, keyed)
    ]
    cluster = Cluster([base_pool()])
    cluster.provision(*pending)
    assert cluster.skew(HOSTNAME_LABEL, LABELS) == [2, 2]


def test_match_label_keys_should_ignore_unknown_labels_specified_in_match_label_keys() -> None:
    """It("should ignore unknown labels specified in matchLabelKeys"): a key the pod lacks adds nothing."""
    keyed = {"topologyKey": HOSTNAME_LABEL, "labelSelector": {"matchLabels": LABELS}, "matchLabelKeys": ["test-label"]}
    cluster = Cluster([base_pool()])
    cluster.provision(*parsed_pods([f"p-{i}" for i in range(4)], LABELS, keyed))
    assert cluster.skew(HOSTNAME_LABEL, LABELS) == [1, 1, 1, 1]


def _discovered_pools() -> list:  # type: ignore[type-arg]
    """The default NodePool sets fake-label foo; a tainted one sets bar."""
    return [
        base_pool(req("fake-label", "In", "foo")),
        pool(
            "tainted",
            req(CAPACITY_TYPE, "Exists"),
            req("fake-label", "In", "bar"),
            taints=[Taint("taint-key", "NoSchedule", "taint-value")],
        ),
    ]


def test_node_taints_policy_ignore_discovered_from_the_nodepool() -> None:
    """Context("NodeTaintsPolicy") It("should balance pods across a label when discovered from the nodepool
    (NodeTaintsPolicy=ignore)"): bar counts as a domain though no pod can go there, so one pod lands in foo
    and the other waits."""
    constraint = dataclasses.replace(spread("fake-label", 1, **LABELS), node_taints_policy="Ignore")
    cluster = Cluster(_discovered_pools())
    results = cluster.provision(*make("p", 2, labels=LABELS, topology_spread=(constraint,)))
    assert cluster.skew("fake-label", LABELS) == [1]
    assert len(results.unschedulable) == 1


def test_node_taints_policy_honor_discovered_from_the_nodepool() -> None:
    """It("should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=honor)"):
    the pods do not tolerate bar's NodePool, so bar is no domain and both land in foo."""
    constraint = dataclasses.replace(spread("fake-label", 1, **LABELS), node_taints_policy="Honor")
    cluster = Cluster(_discovered_pools())
    cluster.provision(*make("p", 2, labels=LABELS, topology_spread=(constraint,)))
    assert cluster.skew("fake-label", LABELS) == [2]


def test_combined_hostname_zonal_and_capacity_type_should_spread_pods_while_respecting_all_constraints() -> None:
    """Context("Combined Hostname, Zonal, and Capacity Type Topology") It("should spread pods while
    respecting all constraints"): rounds of 1 to 14 pods, every pod scheduled and every skew within its
    maxSkew after each round (capacity type 1, zone 2, hostname 3)."""
    constraints = (ct_spread(), zonal(max_skew=2), spread(HOSTNAME_LABEL, 3, **LABELS))
    cluster = Cluster([base_pool()], spread_catalog())
    for i in range(1, 15):
        pending = make(f"r{i}", i, labels=LABELS, topology_spread=constraints)
        results = cluster.provision(*pending)
        assert not results.unschedulable, i
        for key, skew in ((CAPACITY_TYPE, 1), (ZONE, 2)):
            counts = cluster.skew(key, LABELS)
            domains = {CAPACITY_TYPE: 2, ZONE: 3}[key]
            counts += [0] * (domains - len(counts))
            assert max(counts) - min(counts) <= skew, (i, key, counts)
        hosts = cluster.skew(HOSTNAME_LABEL, LABELS)
        assert max(hosts) - min(hosts) <= 3, (i, hosts)


def test_should_schedule_a_pod_with_empty_pod_affinity_and_anti_affinity() -> None:
    """Context("Pod Affinity/Anti-Affinity") It("should schedule a pod with empty pod affinity and
    anti-affinity")."""
    cluster = Cluster([base_pool()])
    p = pod("p", "10m", "16Mi", pod_affinity=(), pod_anti_affinity=())
    cluster.provision(p)
    assert cluster.where(p) is not None


def test_should_respect_self_pod_affinity_hostname() -> None:
    """It("should respect self pod affinity (hostname)"): all three on one node."""
    cluster = Cluster([base_pool()])
    pending = make("p", 3, labels=SECURITY, pod_affinity=(affinity_term(HOSTNAME_LABEL, **SECURITY),))
    cluster.provision(*pending)
    assert len({cluster.where(p) for p in pending}) == 1 and cluster.where(pending[0]) is not None


def test_should_respect_self_pod_affinity_for_first_empty_topology_domain_only_hostname() -> None:
    """It("should respect self pod affinity for first empty topology domain only (hostname)"): the first pods
    choose one node; what it cannot hold stays pending (Karpenter's fake node holds 5 pods; here 3-cpu pods
    of which the largest type, r6g.4xlarge, holds 5), and a later batch does not start another node."""
    cluster = Cluster([base_pool()])
    term = (affinity_term(HOSTNAME_LABEL, **SECURITY),)
    first = make("a", 10, cpu="3", labels=SECURITY, pod_affinity=term)
    results = cluster.provision(*first)
    placed = [p for p in first if cluster.where(p) is not None]
    assert len(placed) == 5 and len({cluster.where(p) for p in placed}) == 1
    assert len(results.unschedulable) == 5
    second = make("b", 10, cpu="3", labels=SECURITY, pod_affinity=term)
    results = cluster.provision(*second)
    assert len(results.unschedulable) == 10


def test_should_respect_self_pod_affinity_for_first_empty_topology_domain_only_constrained_zones() -> None:
    """It("should respect self pod affinity for first empty topology domain only (hostname/constrained
    zones)"): a matching pod already runs in zone 1, so pods that must be in zones 2-3 have no node to join."""
    cluster = Cluster([base_pool()])
    term = (affinity_term(HOSTNAME_LABEL, **SECURITY),)
    cluster.provision(pod("first", "10m", "16Mi", labels=SECURITY, node_selector={ZONE: ZONE_1}, pod_affinity=term))
    zones = node_terms_of(req(ZONE, "In", ZONE_2, ZONE_3))
    results = cluster.provision(*make("p", 10, labels=SECURITY, required_node_terms=zones, pod_affinity=term))
    assert len(results.unschedulable) == 10


def test_should_allow_two_nodes_when_two_pods_with_matching_affinities_have_incompatible_selectors() -> None:
    """It("should allow two nodes to be created when two pods with matching affinities have incompatible
    selectors")."""
    cluster = Cluster([base_pool()])
    term = (affinity_term(ZONE, security="s1"),)
    first = pod(
        "a",
        "10m",
        "16Mi",
        labels={"security": "s1"},
        pod_affinity=term,
        required_node_terms=node_terms_of(req(ZONE, "In", ZONE_2)),
    )
    second = pod(
        "b",
        "10m",
        "16Mi",
        labels={"security": "s1"},
        pod_affinity=term,
        required_node_terms=node_terms_of(req(ZONE, "In", ZONE_3)),
    )
    results = cluster.provision(first, second)
    assert not results.unschedulable
    assert (cluster.labels_of(first)[ZONE], cluster.labels_of(second)[ZONE]) == (ZONE_2, ZONE_3)
    assert cluster.where(first) != cluster.where(second)


def test_should_allow_violation_of_preferred_pod_affinity_beside_a_hostname_spread() -> None:
    """It("should allow violation of preferred pod affinity"), with Karpenter's ten spread pods beside it."""
    cluster = Cluster([base_pool()])
    spread_pods = make("s", 10, labels=LABELS, topology_spread=(spread(HOSTNAME_LABEL, 1, **LABELS),))
    follower = pod("f", "10m", "16Mi", preferred_pod_affinity=(weighted(50, HOSTNAME_LABEL, **SECURITY),))
    cluster.provision(*spread_pods, follower)
    assert cluster.where(follower) is not None


def test_should_allow_violation_of_preferred_pod_anti_affinity() -> None:
    """It("should allow violation of preferred pod anti-affinity"): three zone-spread pods take every zone,
    and ten pods that prefer to avoid them schedule anyway."""
    cluster = Cluster([base_pool()])
    avoiders = make("a", 10, preferred_pod_anti_affinity=(weighted(50, ZONE, **LABELS),))
    cluster.provision(*make("s", 3, labels=LABELS, topology_spread=(zonal(),)), *avoiders)
    assert all(cluster.where(p) is not None for p in avoiders)


def _zone_pods(anti: dict[str, object]) -> list:  # type: ignore[type-arg]
    return [pod(f"z{i}", "2", "16Mi", node_selector={ZONE: z}, **anti) for i, z in enumerate((ZONE_1, ZONE_2, ZONE_3))]  # type: ignore[arg-type]


def test_should_not_violate_pod_anti_affinity_on_zone_inverse_with_existing_nodes() -> None:
    """It("should not violate pod anti-affinity on zone (inverse w/existing nodes)"): the pods with the
    anti-affinity already run, one per zone; a pod they select cannot go anywhere."""
    cluster = Cluster([base_pool()])
    cluster.provision(*_zone_pods({"pod_anti_affinity": (affinity_term(ZONE, **SECURITY),)}))
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    results = cluster.provision(target)
    assert "default/target" in {u.pod for u in results.unschedulable}


def test_should_violate_preferred_pod_anti_affinity_on_zone_inverse_with_existing_nodes() -> None:
    """It("should violate preferred pod anti-affinity on zone (inverse w/existing nodes)")."""
    cluster = Cluster([base_pool()])
    cluster.provision(*_zone_pods({"preferred_pod_anti_affinity": (weighted(10, ZONE, **SECURITY),)}))
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    cluster.provision(target)
    assert cluster.where(target) is not None


def test_should_allow_violation_of_a_pod_affinity_preference_with_a_conflicting_required_constraint() -> None:
    """It("should allow violation of a pod affinity preference with a conflicting required constraint"): one
    pod per host by the spread, so only one of three can join the target; all schedule on three nodes."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    pending = make(
        "p",
        3,
        labels=LABELS,
        topology_spread=(spread(HOSTNAME_LABEL, 1, **LABELS),),
        preferred_pod_affinity=(weighted(50, HOSTNAME_LABEL, **SECURITY),),
    )
    results = cluster.provision(*pending, target)
    assert not results.unschedulable
    assert cluster.skew(HOSTNAME_LABEL, LABELS) == [1, 1, 1]


def test_should_support_pod_anti_affinity_with_a_zone_topology() -> None:
    """It("should support pod anti-affinity with a zone topology"): Karpenter takes one round per pod, since
    it cannot know the zone of a claim whose zone is open; nodewright pins each claim's zone when it places a
    pod with zone terms, so the three land in three zones in the first round (see the Schrödinger case),
    and no later round places another."""
    cluster = Cluster([base_pool()])
    anti = (affinity_term(ZONE, **SECURITY),)
    results = cluster.provision(*make("a", 3, labels=SECURITY, pod_anti_affinity=anti))
    assert not results.unschedulable
    assert cluster.skew(ZONE, SECURITY) == [1, 1, 1]
    results = cluster.provision(*make("b", 3, labels=SECURITY, pod_anti_affinity=anti))
    assert len(results.unschedulable) == 3
    assert cluster.skew(ZONE, SECURITY) == [1, 1, 1]


def test_should_support_pod_affinity_with_zone_topology_unconstrained_target() -> None:
    """It("should support pod affinity with zone topology (unconstrained target)"): the target's zone is
    open in the first round, so the ten followers wait; in the next they join its zone."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", labels=SECURITY)
    followers = make("f", 10, pod_affinity=(affinity_term(ZONE, **SECURITY),))
    results = cluster.provision(*followers, target)
    assert len(results.unschedulable) == 10 and cluster.where(target) is not None
    cluster.provision(*followers)
    assert {cluster.labels_of(p)[ZONE] for p in followers} == {cluster.labels_of(target)[ZONE]}


def _spread_ten() -> list:  # type: ignore[type-arg]
    return make("s", 10, labels=LABELS, topology_spread=(spread(HOSTNAME_LABEL, 1, **LABELS),))


def test_should_filter_pod_affinity_topologies_by_namespace_matching_pods_namespace_list() -> None:
    """It("should filter pod affinity topologies by namespace, matching pods namespace list")."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", ns="other-ns-list", labels=SECURITY)
    term = PodAffinityTerm(selector(**SECURITY), HOSTNAME_LABEL, namespaces=("other-ns-list",))
    follower = pod("follower", "10m", "16Mi", pod_affinity=(term,))
    cluster.provision(*_spread_ten(), target, follower)
    assert cluster.where(follower) == cluster.where(target) is not None


def test_should_filter_pod_affinity_topologies_by_namespace_empty_namespace_selector() -> None:
    """It("should filter pod affinity topologies by namespace, empty namespace selector")."""
    cluster = Cluster([base_pool()])
    target = pod("target", "10m", "16Mi", ns="empty-ns-selector", labels=SECURITY)
    term = PodAffinityTerm(selector(**SECURITY), HOSTNAME_LABEL, all_namespaces=True)
    follower = pod("follower", "10m", "16Mi", pod_affinity=(term,))
    cluster.provision(*_spread_ten(), target, follower)
    assert cluster.where(follower) == cluster.where(target) is not None


def test_taints_should_taint_nodes_with_nodepool_taints() -> None:
    """Describe("Taints") It("should taint nodes with NodePool taints")."""
    taint = Taint("test", "NoSchedule", "bar")
    cluster = Cluster([base_pool(taints=[taint])])
    p = pod("p", "10m", "16Mi", tolerations=(toleration(effect="NoSchedule", operator="Exists"),))
    cluster.provision(p)
    assert taint in cluster.nodes[cluster.where(p)].taints  # type: ignore[index]


def test_taints_should_not_schedule_pods_that_do_not_tolerate_nodepool_taints() -> None:
    """The second half of It("should schedule pods that tolerate NodePool constraints"): no toleration, a
    key mismatch and a value mismatch stay pending."""
    cluster = Cluster([base_pool(taints=[Taint("test-key", "NoSchedule", "test-value")])])
    refused = [
        pod("none", "10m", "16Mi"),
        pod("key", "10m", "16Mi", tolerations=(toleration("invalid", operator="Exists"),)),
        pod("value", "10m", "16Mi", tolerations=(toleration("test-key", effect="NoSchedule"),)),
    ]
    results = cluster.provision(*refused)
    assert len(results.unschedulable) == 3


def test_taints_should_provision_nodes_with_taints_and_schedule_pods_if_the_taint_is_only_a_startup_taint() -> None:
    """It("should provision nodes with taints and schedule pods if the taint is only a startup taint")."""
    startup = Taint("ignore-me", "NoSchedule", "nothing-to-see-here")
    results = Cluster([base_pool(startup_taints=[startup])]).provision(pod("p", "10m", "16Mi"))
    assert not results.unschedulable
    assert results.nodeclaims[0].startup_taints == (startup,)


def test_taints_should_not_generate_taints_for_op_exists() -> None:
    """It("should not generate taints for OpExists"): a toleration adds no taint to the node."""
    results = Cluster([base_pool()]).provision(
        pod("p", "10m", "16Mi", tolerations=(toleration("test-key", effect="NoExecute", operator="Exists"),))
    )
    assert results.nodeclaims[0].taints == ()


def test_topology_with_volume_requirements_should_schedule_pod_with_pvc_and_min_domains_3() -> None:
    """Describe("Topology with Volume Requirements") It("should schedule pod with PVC and TSC minDomains=3 when
    pods are spread across 3 zones"): the volume's zone decides where the pod goes, not which domains the
    spread counts, so the fourth pod joins zone 1 (2/1/1)."""
    labels = {"app": "test"}
    constraint = dataclasses.replace(spread(ZONE, 1, **labels), min_domains=3)
    cluster = Cluster([pool("default", req(CAPACITY_TYPE, "In", ON_DEMAND))])
    cluster.provision(*make("p", 3, labels=labels, topology_spread=(constraint,)))
    assert cluster.skew(ZONE, labels) == [1, 1, 1]
    with_volume = pod("v", "10m", "16Mi", labels=labels, topology_spread=(constraint,), pvc_names=("test-pvc",))
    cluster.provision(
        with_volume,
        pvcs=[pvc("test-pvc", volume="test-pv")],
        pvs=[zonal_pv("test-pv", ZONE_1)],
    )
    assert cluster.labels_of(with_volume)[ZONE] == ZONE_1
    assert cluster.skew(ZONE, labels) == [1, 1, 2]


def test_topology_keys_written_with_beta_names_count_as_their_ga_names() -> None:
    """Not a Karpenter It: the issue's case of spreads and anti-affinity written with
    failure-domain.beta.kubernetes.io/zone. The kubelet labels nodes with both names, so they spread and
    separate by zone as with topology.kubernetes.io/zone (before, no domain matched and every pod stayed
    pending)."""
    beta = "failure-domain.beta.kubernetes.io/zone"
    cluster = Cluster([base_pool()], spread_catalog())
    cluster.provision(*make("s", 4, labels=LABELS, topology_spread=(spread(beta, 1, **LABELS),)))
    assert cluster.skew(ZONE, LABELS) == [1, 1, 2]
    apart = Cluster([base_pool()], spread_catalog())
    results = apart.provision(*make("a", 4, labels=SECURITY, pod_anti_affinity=(affinity_term(beta, **SECURITY),)))
    assert apart.skew(ZONE, SECURITY) == [1, 1, 1]
    assert len(results.unschedulable) == 1
