"""Node selection: nodeSelector, node affinity, taints, capacity types, exotic types, instance type options."""

from __future__ import annotations

from builders import (
    INSTANCE_TYPE,
    by_name,
    claim_of,
    itype,
    node,
    node_terms,
    pod,
    pods,
    pool,
    preferred,
    req,
    run,
    small_catalog,
    toleration,
    unschedulable,
)

from nodewright.catalog.labels import ARCH, CAPACITY_TYPE, INSTANCE_FAMILY, INSTANCE_SIZE, ZONE
from nodewright.catalog.types import ON_DEMAND, SPOT
from nodewright.model.taints import Taint

# ----- nodeSelector ------------------------------------------------------------------------------------


def test_node_selector_arch_limits_types() -> None:
    results = run([pod("arm", node_selector={ARCH: "arm64"})])
    (claim,) = results.nodeclaims
    assert claim.instance_types == ("m6g.large",)
    assert claim.labels.get(ARCH) in (None, "arm64")


def test_node_selector_zone_pins_claim_zone() -> None:
    results = run(pods("z", 3, node_selector={ZONE: "us-east-1b"}))
    assert results.nodeclaims
    for claim in results.nodeclaims:
        assert claim.zones == ("us-east-1b",)
        assert all(o.zone == "us-east-1b" for o in claim.launch_options)


def test_node_selector_custom_label_goes_to_pool_that_sets_it() -> None:
    pools = [pool("general", weight=50), pool("team-a", labels={"team": "a"})]
    results = run([pod("mine", node_selector={"team": "a"}), pod("any")], pools=pools)
    assert claim_of(results, "default/mine").nodepool == "team-a"
    assert claim_of(results, "default/mine").labels["team"] == "a"
    assert claim_of(results, "default/any").nodepool == "general"


def test_node_selector_custom_label_no_pool_defines_is_unschedulable() -> None:
    results = run(
        [pod("mine", node_selector={"team": "b"})], pools=[pool("general"), pool("team-a", labels={"team": "a"})]
    )
    reason = unschedulable(results)["default/mine"]
    assert "team" in reason
    assert "NodePool general" in reason and "NodePool team-a" in reason


def test_node_selector_matches_existing_node_labels() -> None:
    cat = small_catalog()
    existing = [
        node("plain", by_name(cat, "m5.xlarge")),
        node("labelled", by_name(cat, "m5.xlarge"), labels={"disk": "ssd"}),
    ]
    results = run([pod("ssd", node_selector={"disk": "ssd"})], nodes=existing)
    assert results.existing == {"labelled": ("default/ssd",)}
    assert not results.nodeclaims


# ----- required node affinity ------------------------------------------------------------------------


def test_required_affinity_in_and_notin() -> None:
    terms = node_terms([req(INSTANCE_FAMILY, "In", "m5"), req(INSTANCE_SIZE, "NotIn", "large", "xlarge")])
    results = run([pod("p", required_node_terms=terms)])
    (claim,) = results.nodeclaims
    assert claim.instance_types and all(t.startswith("m5.") for t in claim.instance_types)
    assert not {"m5.large", "m5.xlarge"} & set(claim.instance_types)
    assert "m5.metal" not in claim.instance_types  # exotic rule still applies


def test_required_affinity_ored_terms_first_impossible_second_used() -> None:
    terms = node_terms([req(ZONE, "In", "us-west-2a")], [req(ARCH, "In", "arm64")])
    results = run([pod("p", required_node_terms=terms)])
    (claim,) = results.nodeclaims
    assert claim.instance_types == ("m6g.large",)


def test_required_affinity_ored_terms_every_type_satisfies_a_term() -> None:
    terms = node_terms([req(INSTANCE_TYPE, "In", "r5.large")], [req(ARCH, "In", "arm64")])
    results = run(pods("p", 2, required_node_terms=terms))
    assert results.nodeclaims and not results.unschedulable
    for claim in results.nodeclaims:
        for name in claim.instance_types:
            assert name == "r5.large" or by_name(small_catalog(), name).architecture == "arm64"


def test_required_affinity_gt_lt_on_cpu_label() -> None:
    terms = node_terms(
        [req("karpenter.k8s.aws/instance-cpu", "Gt", "4"), req("karpenter.k8s.aws/instance-cpu", "Lt", "32")]
    )
    results = run([pod("p", cpu="100m", required_node_terms=terms)])
    (claim,) = results.nodeclaims
    assert set(claim.instance_types) == {"m5.2xlarge", "m5.4xlarge"}


def test_required_affinity_unsatisfiable_names_requirement() -> None:
    terms = node_terms([req(ARCH, "In", "s390x")])
    results = run([pod("p", required_node_terms=terms)], pools=[pool("a"), pool("b")])
    reason = unschedulable(results)["default/p"]
    assert ARCH in reason and "NodePool a" in reason and "NodePool b" in reason


# ----- preferred node affinity -------------------------------------------------------------------------


def test_preferred_affinity_honored_when_possible() -> None:
    results = run(pods("p", 2, preferred_node_terms=(preferred(50, req(ZONE, "In", "us-east-1c")),)))
    assert results.nodeclaims
    for claim in results.nodeclaims:
        assert claim.zones == ("us-east-1c",)


def test_preferred_affinity_relaxed_when_impossible() -> None:
    results = run([pod("p", preferred_node_terms=(preferred(50, req(INSTANCE_TYPE, "In", "x9.huge")),))])
    assert not results.unschedulable
    assert len(results.nodeclaims) == 1


def test_preferred_affinity_heavier_preference_kept_when_they_conflict() -> None:
    prefs = (preferred(10, req(ZONE, "In", "us-east-1a")), preferred(90, req(ZONE, "In", "us-east-1b")))
    results = run([pod("p", preferred_node_terms=prefs)])
    (claim,) = results.nodeclaims
    assert claim.zones == ("us-east-1b",)


def test_preferred_affinity_wins_over_cheaper_type() -> None:
    results = run([pod("p", cpu="500m", preferred_node_terms=(preferred(1, req(INSTANCE_FAMILY, "In", "r5")),))])
    (claim,) = results.nodeclaims
    assert claim.instance_types == ("r5.large",)


# ----- taints and tolerations ----------------------------------------------------------------------------


def test_no_schedule_taint_blocks_pod_without_toleration() -> None:
    tainted = pool("gpu", taints=[Taint("dedicated", "NoSchedule", "gpu")])
    results = run([pod("p")], pools=[tainted])
    assert not results.nodeclaims
    reason = unschedulable(results)["default/p"]
    assert "dedicated=gpu:NoSchedule" in reason and "NodePool gpu" in reason


def test_no_schedule_taint_tolerated() -> None:
    tainted = pool("gpu", taints=[Taint("dedicated", "NoSchedule", "gpu")])
    for tol in (toleration("dedicated", "gpu", "NoSchedule"), toleration("dedicated", operator="Exists")):
        results = run([pod("p", tolerations=(tol,))], pools=[tainted])
        (claim,) = results.nodeclaims
        assert claim.nodepool == "gpu"
        assert Taint("dedicated", "NoSchedule", "gpu") in claim.taints


def test_toleration_with_wrong_value_does_not_tolerate() -> None:
    tainted = pool("gpu", taints=[Taint("dedicated", "NoSchedule", "gpu")])
    results = run([pod("p", tolerations=(toleration("dedicated", "infra", "NoSchedule"),))], pools=[tainted])
    assert "default/p" in unschedulable(results)


def test_untolerating_pods_go_to_untainted_pool_even_if_tainted_pool_weighs_more() -> None:
    pools = [pool("tainted", weight=100, taints=[Taint("team", "NoSchedule", "x")]), pool("open")]
    results = run([pod("p"), pod("t", tolerations=(toleration("team", "x"),))], pools=pools)
    assert claim_of(results, "default/p").nodepool == "open"
    assert claim_of(results, "default/t").nodepool == "tainted"


def test_prefer_no_schedule_does_not_block() -> None:
    results = run([pod("p")], pools=[pool("soft", taints=[Taint("spotty", "PreferNoSchedule")])])
    (claim,) = results.nodeclaims
    assert claim.pods == ("default/p",)


def test_startup_taints_are_ignored_for_scheduling() -> None:
    startup = Taint("node.cilium.io/agent-not-ready", "NoSchedule", "true")
    results = run([pod("p")], pools=[pool("cilium", startup_taints=[startup])])
    (claim,) = results.nodeclaims
    assert claim.startup_taints == (startup,)
    assert startup not in claim.taints


def test_tainted_existing_node_is_skipped() -> None:
    cat = small_catalog()
    existing = [node("tainted", by_name(cat, "m5.xlarge"), taints=[Taint("maint", "NoSchedule")])]
    results = run([pod("p")], nodes=existing)
    assert not results.existing
    assert len(results.nodeclaims) == 1


def test_no_execute_taint_blocks_like_no_schedule() -> None:
    results = run([pod("p")], pools=[pool("x", taints=[Taint("evict", "NoExecute")])])
    assert "evict:NoExecute" in unschedulable(results)["default/p"]


# ----- capacity types ------------------------------------------------------------------------------------


def test_spot_chosen_when_allowed_and_cheaper() -> None:
    both = pool("both", req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND))
    (claim,) = run([pod("p")], pools=[both]).nodeclaims
    assert claim.cheapest.capacity_type == SPOT
    assert claim.capacity_types == (SPOT, ON_DEMAND) or set(claim.capacity_types) == {SPOT, ON_DEMAND}


def test_pool_without_capacity_type_requirement_may_launch_spot() -> None:
    # Karpenter v1 adds no capacity-type default to a NodePool (the on-demand default belonged to the
    # v1alpha5 webhook): the NodeClaim takes the capacity types of its offerings and spot wins when offered.
    (claim,) = run([pod("p")], pools=[pool("open")]).nodeclaims
    assert claim.cheapest.capacity_type == SPOT
    assert set(claim.capacity_types) == {SPOT, ON_DEMAND}


def test_on_demand_only_when_required_by_pool() -> None:
    od = pool("od", req(CAPACITY_TYPE, "In", ON_DEMAND))
    (claim,) = run([pod("p")], pools=[od]).nodeclaims
    assert claim.capacity_types == (ON_DEMAND,)
    assert all(o.capacity_type == ON_DEMAND for o in claim.launch_options)
    assert claim.cheapest.price == 0.077  # m6g.large on-demand, the cheapest type


def test_on_demand_only_when_required_by_pod() -> None:
    both = pool("both", req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND))
    (claim,) = run([pod("p", node_selector={CAPACITY_TYPE: ON_DEMAND})], pools=[both]).nodeclaims
    assert claim.capacity_types == (ON_DEMAND,)
    assert claim.cheapest.capacity_type == ON_DEMAND


def test_on_demand_chosen_when_spot_is_pricier() -> None:
    types = [itype("m5.large", 2, 8, 0.096, 0.200)]
    both = pool("both", req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND))
    (claim,) = run([pod("p")], pools=[both], types=types).nodeclaims
    assert claim.cheapest.capacity_type == ON_DEMAND
    assert claim.cheapest.price == 0.096


# ----- exotic types ------------------------------------------------------------------------------------


def test_no_gpu_or_metal_types_unless_asked() -> None:
    results = run(pods("p", 30, cpu="1", memory="2Gi"))
    for claim in results.nodeclaims:
        assert "g4dn.xlarge" not in claim.instance_types
        assert "m5.metal" not in claim.instance_types


def test_metal_used_when_nothing_else_fits() -> None:
    (claim,) = run([pod("huge", cpu="40", memory="64Gi")]).nodeclaims
    assert claim.instance_types == ("m5.metal",)


def test_metal_used_when_pool_asks_for_it() -> None:
    metal = pool("metal", req(INSTANCE_SIZE, "In", "metal"))
    (claim,) = run([pod("p")], pools=[metal]).nodeclaims
    assert claim.instance_types == ("m5.metal",)


# ----- instance type options ------------------------------------------------------------------------------


def test_claim_keeps_every_fitting_type_cheapest_first() -> None:
    od = pool("od", req(CAPACITY_TYPE, "In", ON_DEMAND))
    (claim,) = run([pod("p", cpu="1", memory="2Gi")], pools=[od]).nodeclaims
    prices = {it.name: min(o.price for o in it.offerings if o.capacity_type == ON_DEMAND) for it in small_catalog()}
    assert list(claim.instance_types) == sorted(claim.instance_types, key=lambda n: (prices[n], n))
    assert set(claim.instance_types) == {
        "c5.large",
        "m6g.large",
        "m5.large",
        "r5.large",
        "m5.xlarge",
        "m5.2xlarge",
        "m5.4xlarge",
    }
    assert claim.instance_types[0] == "m6g.large"  # 0.077 beats c5.large's 0.085
    assert claim.cheapest.instance_type == "m6g.large"
    assert [o.price for o in claim.launch_options] == sorted(o.price for o in claim.launch_options)


def test_claim_requirements_list_instance_types_zones_and_capacity_types() -> None:
    (claim,) = run([pod("p")]).nodeclaims
    by_key = {r.key: r for r in claim.requirements}
    assert set(by_key[INSTANCE_TYPE].values) == set(claim.instance_types)
    assert set(by_key[ZONE].values) == set(claim.zones)
    assert set(by_key[CAPACITY_TYPE].values) == set(claim.capacity_types)
    assert by_key["karpenter.sh/nodepool"].values == ("default",)


def test_min_values_keeps_enough_families() -> None:
    families = pool("mv", req(INSTANCE_FAMILY, "In", "c5", "m5", "r5", min_values=2))
    (claim,) = run([pod("p", cpu="1", memory="1Gi")], pools=[families]).nodeclaims
    assert len({n.split(".")[0] for n in claim.instance_types}) >= 2
