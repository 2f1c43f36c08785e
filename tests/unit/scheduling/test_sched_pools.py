"""NodePools: limits, weights, placement order, unschedulable reasons and the JSON shape of Results."""

from __future__ import annotations

import dataclasses
import json

from builders import (
    INSTANCE_TYPE,
    affinity_term,
    by_name,
    inflight,
    node,
    nodeclass,
    pod,
    pods,
    pool,
    req,
    run,
    small_catalog,
    toleration,
    unschedulable,
)

from nodewright.catalog.allocatable import capacity
from nodewright.catalog.labels import ARCH, CAPACITY_TYPE, HOSTNAME, ZONE
from nodewright.catalog.types import ON_DEMAND
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import parse_resources
from nodewright.model.taints import Taint
from nodewright.scheduling.candidates import req_key
from nodewright.scheduling.solver import solve
from nodewright.scheduling.templates import PoolCompat, TemplateCache


def launched_cpu(results: object, pool_name: str) -> int:
    total = 0
    for claim in results.nodeclaims:  # type: ignore[attr-defined]
        if claim.nodepool == pool_name:
            total += capacity(by_name(small_catalog(), claim.cheapest.instance_type))["cpu"]
    return total


# ----- limits -------------------------------------------------------------------------------------------


def test_cpu_limit_is_never_exceeded() -> None:
    capped = pool("capped", limits={"cpu": "8"})
    results = run(pods("p", 10, cpu="1500m", memory="512Mi"), pools=[capped])
    assert launched_cpu(results, "capped") <= 8000
    assert results.unschedulable
    assert all("limits" in r and "NodePool capped" in r for r in unschedulable(results).values())


def test_node_limit_is_never_exceeded() -> None:
    capped = pool("capped", limits={"nodes": 2})
    results = run(pods("p", 6, cpu="100m", memory="128Mi", topology_spread=()), pools=[capped])
    assert len(results.nodeclaims) <= 2
    apart = (affinity_term(HOSTNAME, app="solo"),)
    solos = [pod(f"solo-{i}", cpu="1", labels={"app": "solo"}, pod_anti_affinity=apart) for i in range(4)]
    results = run(solos, pools=[capped])
    assert len(results.nodeclaims) == 2
    assert len(results.unschedulable) == 2
    assert all("nodes" in r for r in unschedulable(results).values())


def test_limits_count_existing_nodes_of_the_pool() -> None:
    cat = small_catalog()
    capped = pool("capped", limits={"cpu": "8"})
    existing = node("old", by_name(cat, "m5.xlarge"), pool_name="capped", bound=[pod("busy", cpu="3900m")])
    results = run(pods("p", 6, cpu="1500m", memory="512Mi"), pools=[capped], nodes=[existing])
    assert launched_cpu(results, "capped") <= 4000


def test_limits_count_existing_nodes_by_capacity_not_allocatable() -> None:
    # Karpenter counts a node's capacity. m5.xlarge: 14.8Gi capacity, 13.8Gi allocatable. Of a 22Gi limit
    # that leaves 7.2Gi, short of an m5.large's 7.4Gi capacity (counting allocatable would leave 8.2Gi).
    cat = small_catalog()
    capped = pool("capped", limits={"memory": "22Gi"})
    existing = node("old", by_name(cat, "m5.xlarge"), pool_name="capped", bound=[pod("busy", memory="13Gi")])
    results = run([pod("big", memory="5Gi")], pools=[capped], nodes=[existing])
    assert not results.nodeclaims
    assert "limits" in unschedulable(results)["default/big"]


def test_limits_count_unlaunched_claim_as_its_largest_option() -> None:
    # A claim that has not launched may still become its largest listed type (m5.2xlarge, 8 vCPU), so a
    # 9-vCPU limit leaves 1 vCPU: not enough for any new node. Counting its requests would leave 5.5.
    capped = pool("capped", limits={"cpu": "9"})
    claim = NodeClaim(
        name="capped-unlaunched",
        nodepool="capped",
        requirements=(req(INSTANCE_TYPE, "In", "m5.xlarge", "m5.2xlarge"), req(CAPACITY_TYPE, "In", ON_DEMAND)),
        labels={"karpenter.sh/nodepool": "capped"},
        requests=parse_resources({"cpu": "3500m", "memory": "1Gi", "pods": 1}),
        node_class="default",
    )
    results = run([pod("p", cpu="1")], pools=[capped], nodeclaims=[claim])
    assert not results.nodeclaims
    assert "limits" in unschedulable(results)["default/p"]


def test_limits_count_registered_claim_once() -> None:
    # The claim has a node: the node's capacity counts, the claim does not count a second time.
    cat = small_catalog()
    capped = pool("capped", limits={"cpu": "10"})
    it = by_name(cat, "m5.xlarge")
    existing = node("old", it, pool_name="capped", bound=[pod("busy", cpu="3900m")])
    launched = dataclasses.replace(inflight("capped-old", it, pool_name="capped"), node_name="old")
    results = run([pod("p", cpu="1500m")], pools=[capped], nodes=[existing], nodeclaims=[launched])
    assert not results.unschedulable
    assert len(results.nodeclaims) == 1


def test_limit_spills_over_to_next_pool() -> None:
    first = pool("first", weight=100, limits={"cpu": "4"})
    second = pool("second")
    results = run(pods("p", 6, cpu="1500m", memory="512Mi"), pools=[first, second])
    assert not results.unschedulable
    assert launched_cpu(results, "first") <= 4000
    assert {c.nodepool for c in results.nodeclaims} == {"first", "second"}


# ----- weights ---------------------------------------------------------------------------------------------


def test_higher_weight_pool_first_even_if_pricier() -> None:
    pricey = pool("pricey", req(INSTANCE_TYPE, "In", "m5.2xlarge"), req(CAPACITY_TYPE, "In", ON_DEMAND), weight=50)
    cheap = pool("cheap", weight=10)
    results = run(pods("p", 3), pools=[cheap, pricey])
    assert {c.nodepool for c in results.nodeclaims} == {"pricey"}
    assert all(c.instance_types == ("m5.2xlarge",) for c in results.nodeclaims)


def test_lower_weight_pool_used_when_higher_cannot_serve() -> None:
    arm = pool("arm", req(ARCH, "In", "arm64"), weight=50)
    amd = pool("amd", req(ARCH, "In", "amd64"))
    results = run([pod("big", cpu="3")], pools=[arm, amd])
    (claim,) = results.nodeclaims
    assert claim.nodepool == "amd"


def test_equal_weights_take_the_name_later_in_the_alphabet_first() -> None:
    """Karpenter's OrderByWeight: among NodePools of equal weight, the one named later in the alphabet first."""
    for weight in (0, 30):
        alpha, beta = pool("alpha", weight=weight), pool("beta", weight=weight)
        for order in ([alpha, beta], [beta, alpha]):
            results = run([pod("p", cpu="1")], pools=order)
            assert {c.nodepool for c in results.nodeclaims} == {"beta"}


# ----- placement order -------------------------------------------------------------------------------------


def test_existing_node_with_room_used_before_new_claims() -> None:
    cat = small_catalog()
    results = run(pods("p", 2), nodes=[node("roomy", by_name(cat, "m5.2xlarge"))])
    assert results.existing == {"roomy": ("default/p-0", "default/p-1")}
    assert not results.nodeclaims


def test_existing_node_overflow_goes_to_new_claim() -> None:
    cat = small_catalog()
    results = run(pods("p", 5, cpu="1"), nodes=[node("small", by_name(cat, "m5.xlarge"))])
    assert len(results.existing["small"]) == 3
    assert sum(len(c.pods) for c in results.nodeclaims) == 2


def test_in_flight_nodeclaim_used_before_new_claims() -> None:
    cat = small_catalog()
    claim = inflight("default-abc", by_name(cat, "m5.2xlarge"), nominated=[pod("first", cpu="2")])
    results = run(pods("p", 3), nodeclaims=[claim])
    assert results.existing == {"default-abc": ("default/p-0", "default/p-1", "default/p-2")}
    assert not results.nodeclaims


def test_existing_node_before_in_flight_claim() -> None:
    cat = small_catalog()
    claim = inflight("default-abc", by_name(cat, "m5.2xlarge"))
    results = run([pod("p")], nodes=[node("zz-node", by_name(cat, "m5.2xlarge"))], nodeclaims=[claim])
    assert results.existing == {"zz-node": ("default/p",)}


def test_cordoned_node_not_used() -> None:
    cat = small_catalog()
    cordoned = node("cordoned", by_name(cat, "m5.2xlarge"))
    cordoned = type(cordoned)(**{**{f: getattr(cordoned, f) for f in cordoned.__slots__}, "unschedulable": True})
    results = run([pod("p")], nodes=[cordoned])
    assert not results.existing


# ----- unschedulable reasons ---------------------------------------------------------------------------------


def test_reason_names_constraint_and_every_pool() -> None:
    pools = [
        pool("tainted", taints=[Taint("dedicated", "NoSchedule", "x")]),
        pool("arm", req(ARCH, "In", "arm64")),
    ]
    results = run([pod("p", cpu="3")], pools=pools)
    reason = unschedulable(results)["default/p"]
    assert "NodePool tainted" in reason and "dedicated=x:NoSchedule" in reason
    assert "NodePool arm" in reason and "cpu" in reason


def test_reason_when_nodeclass_missing() -> None:
    results = run([pod("p")], pools=[pool("orphan", node_class="missing")])
    reason = unschedulable(results)["default/p"]
    assert "NodePool orphan" in reason and "missing" in reason


# ----- Results.to_json ---------------------------------------------------------------------------------------


def test_to_json_shape() -> None:
    cat = small_catalog()
    pools = [pool("default", req(CAPACITY_TYPE, "In", "spot", "on-demand"))]
    pending = [
        *pods("web", 3, cpu="1"),
        pod("arm", cpu="500m", node_selector={ARCH: "arm64"}),
        pod("nope", tolerations=(toleration("x"),), node_selector={ARCH: "s390x"}),
    ]
    results = solve(
        pending,
        nodes=[node("old", by_name(cat, "m5.large"))],
        nodepools=pools,
        nodeclasses=[nodeclass()],
        instance_types=cat,
    )
    doc = results.to_json()
    assert json.loads(json.dumps(doc)) == doc
    assert set(doc) == {"nodeclaims", "existing", "unschedulable", "cost_per_hour"}
    assert doc["nodeclaims"]
    for c in doc["nodeclaims"]:
        assert set(c) == {
            "name",
            "nodepool",
            "instance_types",
            "capacity_types",
            "zones",
            "instance_type",
            "capacity_type",
            "zone",
            "price_per_hour",
            "pods",
        }
        assert c["nodepool"] == "default" and c["name"].startswith("default-")
        assert c["instance_type"] == c["instance_types"][0]
        assert c["capacity_type"] in c["capacity_types"] and c["zone"] in c["zones"]
        assert isinstance(c["price_per_hour"], float) and c["price_per_hour"] > 0
        assert c["pods"] == sorted(c["pods"]) and all("/" in p for p in c["pods"])
    assert doc["existing"] == {"old": ["default/web-0"]} or list(doc["existing"]) == ["old"]
    assert doc["unschedulable"] == [{"pod": "default/nope", "reason": doc["unschedulable"][0]["reason"]}]
    assert ARCH in doc["unschedulable"][0]["reason"]
    assert doc["cost_per_hour"] == round(sum(c["price_per_hour"] for c in doc["nodeclaims"]), 6)
    names = [c["name"] for c in doc["nodeclaims"]]
    assert len(names) == len(set(names))
    placed = [p for c in doc["nodeclaims"] for p in c["pods"]] + [p for ps in doc["existing"].values() for p in ps]
    assert sorted([*placed, "default/nope"]) == sorted(p.key for p in pending)


def test_to_json_empty() -> None:
    assert run([]).to_json() == {"nodeclaims": [], "existing": {}, "unschedulable": [], "cost_per_hour": 0.0}


# ----- price ceiling (consolidation's replacement) --------------------------------------------------------


def test_price_ceiling_plans_only_types_with_an_offering_below_it() -> None:
    # A 3-vCPU pod needs 4 vCPUs. Without a ceiling its claim may launch any type that large; below 0.20/h only
    # those with an offering (of any capacity type, as the bound is loose) under it: m5.xlarge and m5.2xlarge
    # (spot 0.070 and 0.140), not m5.4xlarge (0.280), the GPU or the metal type. Below 0.06 none fits.
    big = [pod("big", cpu="3", memory="1Gi")]
    [free] = run(big).nodeclaims
    assert "m5.4xlarge" in free.instance_types
    [capped] = run(big, price_ceiling=0.20).nodeclaims
    assert set(capped.instance_types) == {"m5.xlarge", "m5.2xlarge"}
    assert not run(big, price_ceiling=0.06).nodeclaims


def test_price_ceiling_below_every_type_names_the_price() -> None:
    results = run(pods("p", 1), price_ceiling=0.01)
    [reason] = unschedulable(results).values()
    assert "priced below 0.0100/hour" in reason


def test_price_ceiling_leaves_existing_nodes_of_dearer_types_counted() -> None:
    # The existing m5.4xlarge (0.768/h, spot 0.280) is dearer than the ceiling, yet its type is still known: it
    # counts its capacity (63,565 MB), not its allocatable (62,523 MB), against the NodePool's memory limit.
    # Under 63957Mi (67,064 MB) the smallest new node (c5.large, 3,972 MB) does not fit, which counting the
    # allocatable would let it; under 64500Mi it does. The node's 15 pods leave no room for another 1-vCPU pod.
    catalog = small_catalog()
    big = node("big", by_name(catalog, "m5.4xlarge"), bound=pods("full", 15, cpu="1", memory="1Gi"))
    one = pods("p", 1, cpu="1", memory="1Gi")
    tight = run(one, pools=[pool("default", limits={"memory": "63957Mi"})], nodes=[big], price_ceiling=0.2)
    [reason] = unschedulable(tight).values()
    assert "limits" in reason
    roomy = run(one, pools=[pool("default", limits={"memory": "64500Mi"})], nodes=[big], price_ceiling=0.2)
    assert roomy.nodeclaims and not roomy.unschedulable


def test_price_ceiling_cut_is_kept_and_recomputes_its_frontier() -> None:
    cache = TemplateCache()
    types = small_catalog()
    template = cache.template(pool(), nodeclass(), types, (), tuple(map(id, types)))
    full = template.compat(template.requirements, req_key(template.requirements))
    assert isinstance(full, PoolCompat)
    assert full.below(100.0) is full
    cut = full.below(0.04)
    assert isinstance(cut, PoolCompat) and full.below(0.038) is cut  # the same floors below: the same cut
    names = [c.it.name for _, c in cut.candidates]
    assert names and all(c.floor < 0.04 for _, c in cut.candidates) and "r5.large" not in names
    # Its frontier is its own: no kept candidate is left out because a dropped one beat it.
    for index, (_, candidate) in enumerate(cut.candidates):
        if candidate.exotic:
            continue
        beaten = any(
            all(a >= b for a, b in zip(cut.candidates[i][1].basics, candidate.basics, strict=True))
            for i in cut.frontier
            if i != index
        )
        assert index in cut.frontier or beaten


def test_requirement_sets_that_price_the_same_types_share_the_priced_candidates() -> None:
    # Requirement sets that differ only in a label that leaves no type out (here, a team label the NodePool sets)
    # price the same candidates: the answers share them, but each keeps its own requirements and domains.
    cache = TemplateCache()
    types = small_catalog()
    team = req("team", "In", "a", "b")
    template = cache.template(pool("default", team), nodeclass(), types, (), tuple(map(id, types)))

    def answer(*extra: Requirement) -> PoolCompat:
        requirements = template.requirements.intersect(Requirements.of(list(extra)))
        found = template.compat(requirements, req_key(requirements))
        assert isinstance(found, PoolCompat)
        return found

    team_a, team_b = answer(req("team", "In", "a")), answer(req("team", "In", "b"))
    assert team_a is not team_b and team_a.candidates is team_b.candidates and team_a.choices is team_b.choices
    assert team_a.domains_of("team") == {"a"} and team_b.domains_of("team") == {"b"}
    arm = answer(req("team", "In", "a"), req(ARCH, "In", "arm64"))
    assert arm.candidates is not team_a.candidates
    assert {c.it.labels[ARCH] for _, c in arm.candidates} == {"arm64"}
    zone = answer(req("team", "In", "a"), req(ZONE, "In", "us-east-1a"))
    assert zone.candidates is not team_a.candidates and zone.zones == {"us-east-1a"}


# ----- what a TemplateCache keeps across solves -------------------------------------------------------------


def test_a_shared_cache_plans_as_fresh_ones_do() -> None:
    # The planner's simulations of a tick share one cache and the same node objects; each answer must be what a
    # solve with nothing cached gives, whatever was asked before (other pods, other ceilings, other pools).
    catalog = small_catalog()
    nodes = [
        node("a", by_name(catalog, "m5.xlarge"), bound=pods("on-a", 3, cpu="1", memory="2Gi")),
        node("b", by_name(catalog, "m5.2xlarge"), zone="us-east-1b", bound=pods("on-b", 2, cpu="2", memory="4Gi")),
    ]
    asks = [
        (pods("p", 5, cpu="700m", memory="1Gi"), None, [pool()]),
        (pods("q", 3, cpu="3", memory="6Gi"), 0.2, [pool()]),
        (pods("q", 3, cpu="3", memory="6Gi"), 0.1, [pool()]),  # the same answer, cut lower
        (pods("r", 8, cpu="500m", memory="3Gi"), 0.1, [pool("capped", limits={"nodes": 3})]),
        (pods("p", 5, cpu="700m", memory="1Gi"), 0.15, [pool()]),
    ]
    shared = TemplateCache()
    for pending, ceiling, pools in asks * 2:
        cached = run(pending, pools=pools, nodes=nodes, price_ceiling=ceiling, templates=shared)
        fresh = run(pending, pools=pools, nodes=nodes, price_ceiling=ceiling)
        assert cached.to_json() == fresh.to_json()


def test_node_labels_are_kept_per_label_mapping() -> None:
    cache = TemplateCache()
    it = by_name(small_catalog(), "m5.large")
    first = node("n1", it)
    known = cache.node_labels(first)
    assert cache.node_labels(first) is known
    # A node rebuilt with other pods keeps its label mapping, and its parsed labels.
    assert cache.node_labels(dataclasses.replace(first, pods=())) is known
    assert known.labels[HOSTNAME] == "n1" and known.requirements.get(INSTANCE_TYPE).matches("m5.large")
    relabelled = dataclasses.replace(first, labels={**first.labels, INSTANCE_TYPE: "m5.xlarge"})
    assert cache.node_labels(relabelled).requirements.get(INSTANCE_TYPE).matches("m5.xlarge")


def test_a_nodes_key_is_found_as_the_same_requirements_plain_key() -> None:
    # The node's key hashes once; it must still be equal to, and hash like, the key req_key makes.
    known = TemplateCache().node_labels(node("n1", by_name(small_catalog(), "m5.large")))
    plain = req_key(known.requirements)
    assert known.key == plain and hash(known.key) == hash(plain)
    assert {plain: 1}[known.key] == 1 and {known.key: 2}[plain] == 2
