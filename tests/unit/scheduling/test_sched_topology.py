"""Topology: spread constraints, pod affinity and anti-affinity, host ports."""

from __future__ import annotations

from collections import Counter

from builders import (
    ZONES,
    affinity_term,
    by_name,
    claim_of,
    host_port,
    node,
    pod,
    pods,
    pool,
    req,
    run,
    small_catalog,
    spread,
    unschedulable,
    weighted,
)

from nodewright.catalog.labels import ARCH, CAPACITY_TYPE, HOSTNAME, ZONE
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Node
from nodewright.scheduling.results import Results


def zone_of(results: Results, pod_key: str, node_zones: dict[str, str] | None = None) -> str:
    for claim in results.nodeclaims:
        if pod_key in claim.pods:
            assert len(claim.zones) == 1, f"{claim.name} is not pinned to one zone: {claim.zones}"
            return claim.zones[0]
    for name, keys in results.existing.items():
        if pod_key in keys:
            assert node_zones is not None
            return node_zones[name]
    raise AssertionError(f"{pod_key} not placed")


def zone_counts(results: Results, keys: list[str], node_zones: dict[str, str] | None = None) -> Counter[str]:
    return Counter(zone_of(results, k, node_zones) for k in keys)


def host_counts(results: Results, keys: list[str]) -> Counter[str]:
    where: dict[str, str] = {}
    for claim in results.nodeclaims:
        for p in claim.pods:
            where[p] = claim.name
    for name, placed in results.existing.items():
        for p in placed:
            where[p] = name
    return Counter(where[k] for k in keys if k in where)


def keys(prefix: str, n: int, ns: str = "default") -> list[str]:
    return [f"{ns}/{prefix}-{i}" for i in range(n)]


# ----- topology spread -----------------------------------------------------------------------------------


def test_zone_spread_max_skew_1_balances_zones() -> None:
    web = pods("web", 6, labels={"app": "web"}, topology_spread=(spread(ZONE, 1, app="web"),))
    results = run(web)
    assert not results.unschedulable
    assert zone_counts(results, keys("web", 6)) == Counter({z: 2 for z in ZONES})


def test_zone_spread_uneven_count_keeps_skew() -> None:
    web = pods("web", 7, cpu="100m", labels={"app": "web"}, topology_spread=(spread(ZONE, 1, app="web"),))
    counts = zone_counts(run(web), keys("web", 7))
    assert sorted(counts.values()) == [2, 2, 3]


def test_zone_spread_limited_to_zones_the_pod_may_use() -> None:
    web = pods(
        "web",
        4,
        labels={"app": "web"},
        node_selector={},
        required_node_terms=(),
        topology_spread=(spread(ZONE, 1, app="web"),),
    )
    only_two = pool("two", req(ZONE, "In", "us-east-1a", "us-east-1b"))
    counts = zone_counts(run(web, pools=[only_two]), keys("web", 4))
    assert counts == Counter({"us-east-1a": 2, "us-east-1b": 2})


def test_hostname_spread_max_skew_1_one_per_node() -> None:
    web = pods("web", 4, cpu="100m", labels={"app": "web"}, topology_spread=(spread(HOSTNAME, 1, app="web"),))
    results = run(web)
    assert not results.unschedulable
    assert len(results.nodeclaims) == 4
    assert max(host_counts(results, keys("web", 4)).values()) == 1


def test_hostname_spread_max_skew_2() -> None:
    web = pods("web", 6, cpu="100m", labels={"app": "web"}, topology_spread=(spread(HOSTNAME, 2, app="web"),))
    results = run(web)
    assert not results.unschedulable
    assert max(host_counts(results, keys("web", 6)).values()) <= 2
    assert len(results.nodeclaims) == 3


def full_node_in_b_and_pool_in_a() -> tuple[Node, NodePool]:
    # A full node in zone b makes b a domain with zero matching pods; the NodePool only launches in zone a.
    filler = pod("filler", cpu="1900m", memory="1Gi")
    full_b = node("full-b", by_name(small_catalog(), "c5.large"), zone="us-east-1b", bound=[filler])
    return full_b, pool("zone-a", req(ZONE, "In", "us-east-1a"))


def test_schedule_anyway_places_when_skew_would_break() -> None:
    full_b, zone_a = full_node_in_b_and_pool_in_a()
    soft = pods(
        "soft",
        3,
        cpu="100m",
        labels={"app": "soft"},
        topology_spread=(spread(ZONE, 1, "ScheduleAnyway", app="soft"),),
    )
    results = run(soft, pools=[zone_a], nodes=[full_b])
    assert not results.unschedulable
    assert zone_counts(results, keys("soft", 3)) == Counter({"us-east-1a": 3})


def test_schedule_anyway_is_still_preferred() -> None:
    soft = pods("soft", 3, labels={"app": "soft"}, topology_spread=(spread(ZONE, 1, "ScheduleAnyway", app="soft"),))
    assert zone_counts(run(soft), keys("soft", 3)) == Counter({z: 1 for z in ZONES})


def test_spread_selector_counts_another_deployments_pods() -> None:
    cat = small_catalog()
    old = [pod(f"web-old-{i}", cpu="100m", labels={"app": "web", "version": "v1"}) for i in range(2)]
    roomy = node("roomy-a", by_name(cat, "m5.4xlarge"), zone="us-east-1a", bound=old)
    new = pods(
        "web-new",
        4,
        cpu="100m",
        labels={"app": "web", "version": "v2"},
        topology_spread=(spread(ZONE, 1, app="web"),),
    )
    results = run(new, nodes=[roomy])
    assert not results.unschedulable
    counts = zone_counts(results, keys("web-new", 4), {"roomy-a": "us-east-1a"})
    # zone a already has 2 matching pods: the new ones fill b and c first.
    assert counts == Counter({"us-east-1b": 2, "us-east-1c": 2})


def test_spread_shared_by_two_pending_deployments() -> None:
    constraint = (spread(ZONE, 1, tier="fe"),)
    a = pods("a", 3, cpu="2", labels={"tier": "fe", "app": "a"}, topology_spread=constraint)
    b = pods("b", 3, cpu="1", labels={"tier": "fe", "app": "b"}, topology_spread=constraint)
    results = run(a + b)
    assert not results.unschedulable
    counts = zone_counts(results, keys("a", 3) + keys("b", 3))
    assert counts == Counter({z: 2 for z in ZONES})


def test_min_domains_above_available_zones_limits_each_zone_to_max_skew() -> None:
    web = pods(
        "web", 6, cpu="100m", labels={"app": "web"}, topology_spread=(spread(ZONE, 1, min_domains=5, app="web"),)
    )
    results = run(web)
    placed = [k for k in keys("web", 6) if k not in unschedulable(results)]
    assert len(placed) == 3
    assert zone_counts(results, placed) == Counter({z: 1 for z in ZONES})


def test_min_domains_met_behaves_like_plain_spread() -> None:
    web = pods(
        "web", 6, cpu="100m", labels={"app": "web"}, topology_spread=(spread(ZONE, 1, min_domains=3, app="web"),)
    )
    results = run(web)
    assert not results.unschedulable
    assert zone_counts(results, keys("web", 6)) == Counter({z: 2 for z in ZONES})


def test_spread_in_other_namespace_is_not_counted() -> None:
    cat = small_catalog()
    other_ns = [pod(f"x-{i}", cpu="100m", ns="other", labels={"app": "web"}) for i in range(3)]
    roomy = node("roomy-a", by_name(cat, "m5.4xlarge"), zone="us-east-1a", bound=other_ns)
    web = pods("web", 3, cpu="100m", labels={"app": "web"}, topology_spread=(spread(ZONE, 1, app="web"),))
    results = run(web, nodes=[roomy])
    counts = zone_counts(results, keys("web", 3), {"roomy-a": "us-east-1a"})
    assert counts == Counter({z: 1 for z in ZONES})


# ----- pod affinity ----------------------------------------------------------------------------------------


def test_required_affinity_hostname_lands_on_node_with_matching_pod() -> None:
    cat = small_catalog()
    db = node("db-node", by_name(cat, "m5.2xlarge"), zone="us-east-1b", bound=[pod("db", labels={"app": "db"})])
    other = node("other", by_name(cat, "m5.2xlarge"), zone="us-east-1a")
    cache = pods("cache", 2, cpu="500m", pod_affinity=(affinity_term(HOSTNAME, app="db"),))
    results = run(cache, nodes=[other, db])
    assert results.existing == {"db-node": tuple(keys("cache", 2))}


def test_required_affinity_hostname_unschedulable_when_that_node_is_full() -> None:
    cat = small_catalog()
    db = node("db-node", by_name(cat, "c5.large"), bound=[pod("db", cpu="1800m", labels={"app": "db"})])
    cache = [pod("cache", cpu="500m", pod_affinity=(affinity_term(HOSTNAME, app="db"),))]
    results = run(cache, nodes=[db])
    assert not results.nodeclaims
    assert "pod affinity" in unschedulable(results)["default/cache"]


def test_required_affinity_zone_follows_matching_pod() -> None:
    cat = small_catalog()
    db = node(
        "db-node", by_name(cat, "c5.large"), zone="us-east-1c", bound=[pod("db", cpu="1800m", labels={"app": "db"})]
    )
    cache = pods("cache", 3, cpu="1", pod_affinity=(affinity_term(ZONE, app="db"),))
    results = run(cache, nodes=[db])
    assert not results.unschedulable
    assert zone_counts(results, keys("cache", 3)) == Counter({"us-east-1c": 3})


def test_required_affinity_without_any_match_is_unschedulable() -> None:
    results = run([pod("cache", pod_affinity=(affinity_term(ZONE, app="db"),))])
    assert not results.nodeclaims
    assert "pod affinity" in unschedulable(results)["default/cache"]


def test_self_affinity_zone_puts_all_in_one_zone() -> None:
    web = pods("web", 8, cpu="1", labels={"app": "web"}, pod_affinity=(affinity_term(ZONE, app="web"),))
    results = run(web)
    assert not results.unschedulable
    assert len(zone_counts(results, keys("web", 8))) == 1


def test_affinity_to_pending_pods_of_other_deployment() -> None:
    db = pods("db", 1, cpu="1", labels={"app": "db"}, node_selector={ZONE: "us-east-1b"})
    app = pods("app", 2, cpu="3", pod_affinity=(affinity_term(ZONE, app="db"),))
    results = run(app + db)
    assert not results.unschedulable
    assert zone_counts(results, keys("app", 2) + keys("db", 1)) == Counter({"us-east-1b": 3})


def test_preferred_affinity_followed_when_possible() -> None:
    cat = small_catalog()
    db = node(
        "db-node", by_name(cat, "c5.large"), zone="us-east-1c", bound=[pod("db", cpu="1800m", labels={"app": "db"})]
    )
    app = pods("app", 2, preferred_pod_affinity=(weighted(100, ZONE, app="db"),))
    results = run(app, nodes=[db])
    assert not results.unschedulable
    assert zone_counts(results, keys("app", 2)) == Counter({"us-east-1c": 2})


def test_preferred_affinity_relaxed_when_no_match() -> None:
    results = run(pods("app", 2, preferred_pod_affinity=(weighted(100, ZONE, app="db"),)))
    assert not results.unschedulable


# ----- pod anti-affinity ------------------------------------------------------------------------------------


def test_required_anti_affinity_hostname_one_per_node() -> None:
    web = pods("web", 4, cpu="100m", labels={"app": "web"}, pod_anti_affinity=(affinity_term(HOSTNAME, app="web"),))
    results = run(web)
    assert not results.unschedulable
    assert len(results.nodeclaims) == 4
    assert all(len(c.pods) == 1 for c in results.nodeclaims)


def test_required_anti_affinity_zone_at_most_one_per_zone() -> None:
    web = pods("web", 5, cpu="100m", labels={"app": "web"}, pod_anti_affinity=(affinity_term(ZONE, app="web"),))
    results = run(web)
    placed = [k for k in keys("web", 5) if k not in unschedulable(results)]
    assert len(placed) == 3
    assert zone_counts(results, placed) == Counter({z: 1 for z in ZONES})
    assert all("anti-affinity" in r for r in unschedulable(results).values())


def test_anti_affinity_against_other_deployment_on_existing_node() -> None:
    cat = small_catalog()
    roomy = node("roomy", by_name(cat, "m5.4xlarge"), bound=[pod("db", labels={"app": "db"})])
    app = [pod("app", pod_anti_affinity=(affinity_term(HOSTNAME, app="db"),))]
    results = run(app, nodes=[roomy])
    assert not results.existing
    assert len(results.nodeclaims) == 1


def test_symmetric_anti_affinity_of_existing_pod_hostname() -> None:
    cat = small_catalog()
    loner = pod("loner", labels={"app": "loner"}, pod_anti_affinity=(affinity_term(HOSTNAME, app="web"),))
    roomy = node("roomy", by_name(cat, "m5.4xlarge"), bound=[loner])
    web = pods("web", 2, labels={"app": "web"})
    results = run(web, nodes=[roomy])
    assert "roomy" not in results.existing
    assert sum(len(c.pods) for c in results.nodeclaims) == 2


def test_symmetric_anti_affinity_of_existing_pod_zone() -> None:
    cat = small_catalog()
    loner = pod("loner", cpu="1800m", labels={"app": "loner"}, pod_anti_affinity=(affinity_term(ZONE, app="web"),))
    full_a = node("full-a", by_name(cat, "c5.large"), zone="us-east-1a", bound=[loner])
    web = pods("web", 3, labels={"app": "web"})
    results = run(web, nodes=[full_a])
    assert not results.unschedulable
    assert "us-east-1a" not in zone_counts(results, keys("web", 3))


def test_preferred_anti_affinity_spreads_when_possible() -> None:
    web = pods(
        "web", 3, cpu="100m", labels={"app": "web"}, preferred_pod_anti_affinity=(weighted(50, HOSTNAME, app="web"),)
    )
    results = run(web)
    assert not results.unschedulable
    assert len(results.nodeclaims) == 3


def test_preferred_anti_affinity_relaxed_when_impossible() -> None:
    web = pods(
        "web",
        3,
        cpu="100m",
        memory="128Mi",
        labels={"app": "web"},
        preferred_pod_anti_affinity=(weighted(50, HOSTNAME, app="web"),),
    )
    results = run(web, pools=[pool("capped", limits={"nodes": 1})])
    assert not results.unschedulable
    assert len(results.nodeclaims) == 1
    assert len(results.nodeclaims[0].pods) == 3


# ----- host ports -------------------------------------------------------------------------------------------------


def test_host_port_one_pod_per_node() -> None:
    agents = pods("agent", 3, cpu="100m", host_ports=(host_port(8080),))
    results = run(agents)
    assert not results.unschedulable
    assert len(results.nodeclaims) == 3


def test_host_port_conflict_with_existing_pod() -> None:
    cat = small_catalog()
    busy = node("busy", by_name(cat, "m5.4xlarge"), bound=[pod("old", host_ports=(host_port(8080),))])
    results = run([pod("new", cpu="100m", host_ports=(host_port(8080),))], nodes=[busy])
    assert not results.existing
    assert len(results.nodeclaims) == 1


def test_different_host_ports_share_a_node() -> None:
    cat = small_catalog()
    busy = node("busy", by_name(cat, "m5.4xlarge"), bound=[pod("old", host_ports=(host_port(8080),))])
    results = run([pod("new", cpu="100m", host_ports=(host_port(9090),))], nodes=[busy])
    assert results.existing == {"busy": ("default/new",)}


def test_host_port_pods_of_two_deployments_do_not_share() -> None:
    a = pod("a", cpu="100m", host_ports=(host_port(53),))
    b = pod("b", cpu="200m", host_ports=(host_port(53),))
    results = run([a, b])
    assert claim_of(results, "default/a").name != claim_of(results, "default/b").name


def test_spread_on_capacity_type_or_arch_without_a_nodepool_constraint_balances_over_offered_values() -> None:
    """Issue 22 item 14: a NodePool with no requirement on the spread's key still has domains, the values its
    instance types and offerings give (Karpenter's buildDomainGroups), so the pods are balanced over them
    rather than left unschedulable."""
    for key, values in ((CAPACITY_TYPE, {"spot", "on-demand"}), (ARCH, {"amd64", "arm64"})):
        results = run(
            pods("p", 6, cpu="100m", memory="128Mi", labels={"app": "p"}, topology_spread=(spread(key, 1, app="p"),))
        )
        assert not results.unschedulable
        per_value: Counter[str] = Counter()
        for claim in results.nodeclaims:
            [value] = next(r.values for r in claim.requirements if r.key == key)
            per_value[value] += len(claim.pods)
        assert set(per_value) == values and sorted(per_value.values()) == [3, 3], (key, per_value)
