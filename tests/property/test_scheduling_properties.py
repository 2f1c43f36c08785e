"""Properties of the scheduling simulation on small generated clusters.

Each example draws a few NodePools (arch / capacity type requirements, taints, labels, limits, weights),
DaemonSets, existing nodes and 1-40 pending pods in a few classes (requests, node selectors, tolerations,
zone or hostname spread, hostname anti-affinity). The checks are written against the inputs, not the
solver's internals: capacity from `allocatable_for`, labels from the catalog, limits from `capacity`.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "scheduling"))

from builders import (
    ZONES,
    affinity_term,
    by_name,
    daemonset,
    node,
    nodeclass,
    pod,
    pool,
    req,
    small_catalog,
    spread,
    toleration,
)
from full_walks import full_walks, unkept_answers

from nodewright.catalog.allocatable import allocatable_for, capacity
from nodewright.catalog.labels import ARCH, CAPACITY_TYPE, HOSTNAME, ZONE
from nodewright.catalog.types import InstanceType
from nodewright.model import resources as res
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import DaemonSet, Node, Pod
from nodewright.model.taints import Taint, untolerated
from nodewright.scheduling.results import Results
from nodewright.scheduling.solver import Solver, _plan_rank, solve
from nodewright.scheduling.templates import TemplateCache

CATALOG = small_catalog()
NODECLASS = nodeclass()
CPUS = ("100m", "250m", "500m", "1", "1500m", "3")
MEMORIES = ("128Mi", "512Mi", "1Gi", "4Gi")


class Cluster:
    def __init__(
        self,
        pools: list[NodePool],
        daemonsets: list[DaemonSet],
        nodes: list[Node],
        pods: list[Pod],
        classes: dict[str, tuple[str, int, bool]],
    ) -> None:
        self.pools = pools
        self.daemonsets = daemonsets
        self.nodes = nodes
        self.pods = pods
        # per app label: (spread kind, max skew, hostname anti-affinity)
        self.classes = classes

    def __repr__(self) -> str:
        """A compact description, so a falsifying example reads as a reproducer."""
        lines = ["Cluster("]
        for np in self.pools:
            reqs = ", ".join(str(r) for r in np.requirements)
            lines.append(
                f"  pool {np.name} weight={np.weight} [{reqs}] taints={[str(t) for t in np.taints]} "
                f"labels={dict(np.labels)} limits={dict(np.limits)}"
            )
        for ds in self.daemonsets:
            tolerates = bool(ds.pod.tolerations)
            lines.append(
                f"  daemonset {ds.name} {dict(ds.pod.requests)} selector={dict(ds.pod.node_selector)} "
                f"tolerates_all={tolerates}"
            )
        for n in self.nodes:
            lines.append(
                f"  node {n.name} {n.labels['node.kubernetes.io/instance-type']} {n.labels[ZONE]} "
                f"pool={n.labels['karpenter.sh/nodepool']} bound={len(n.pods)}x500m/512Mi"
            )
        for app, (kind, skew, anti) in self.classes.items():
            members = [p for p in self.pods if p.labels["app"] == app]
            p = members[0]
            tolerations = [t.value for t in p.tolerations]
            lines.append(
                f"  {len(members)} x {app} {dict(p.requests)} selector={dict(p.node_selector)} tolerates={tolerations} "
                f"spread={kind} maxSkew={skew} anti_affinity_hostname={anti}"
            )
        lines.append(")")
        return "\n".join(lines)

    def solve(self, rng: random.Random | None = None, templates: TemplateCache | None = None) -> Results:
        pods_, pools, types, dss, nodes = (
            list(self.pods),
            list(self.pools),
            list(CATALOG),
            list(self.daemonsets),
            list(self.nodes),
        )
        if rng is not None:
            for items in (pods_, pools, types, dss, nodes):
                rng.shuffle(items)  # type: ignore[arg-type]
        return solve(
            pods_,
            nodes=nodes,
            nodepools=pools,
            nodeclasses=[NODECLASS],
            instance_types=types,
            daemonsets=dss,
            templates=templates,
        )


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    pool_count = draw(st.integers(1, 3))
    pools: list[NodePool] = []
    for i in range(pool_count):
        name = f"pool-{i}"
        requirements = []
        arch = draw(st.sampled_from((None, "amd64", "arm64")))
        if arch:
            requirements.append(req(ARCH, "In", arch))
        requirements.append(req(CAPACITY_TYPE, "In", *draw(st.sampled_from((("spot", "on-demand"), ("on-demand",))))))
        taints = [Taint("team", "NoSchedule", name)] if draw(st.booleans()) else []
        labels = {"team": name} if draw(st.booleans()) else {}
        limits = draw(
            st.sampled_from((None, {"cpu": "8"}, {"cpu": "24"}, {"nodes": 1}, {"nodes": 3}, {"cpu": "16", "nodes": 2}))
        )
        pools.append(
            pool(name, *requirements, weight=draw(st.integers(0, 3)), taints=taints, labels=labels, limits=limits)
        )

    daemonsets = []
    for i in range(draw(st.integers(0, 2))):
        tolerations = (toleration(operator="Exists"),) if draw(st.booleans()) else ()
        selector = {ARCH: draw(st.sampled_from(("amd64", "arm64")))} if draw(st.booleans()) else {}
        cpu = draw(st.sampled_from(("100m", "300m", "700m")))
        daemonsets.append(
            daemonset(f"ds-{i}", cpu=cpu, memory="128Mi", tolerations=tolerations, node_selector=selector)
        )

    nodes = []
    for i in range(draw(st.integers(0, 2))):
        it = by_name(CATALOG, draw(st.sampled_from(("m5.large", "m5.xlarge", "m6g.large", "m5.2xlarge"))))
        owner = draw(st.sampled_from(pools)).name
        bound = [pod(f"bound-{i}-{j}", cpu="500m", memory="512Mi", ns="infra") for j in range(draw(st.integers(0, 2)))]
        nodes.append(node(f"node-{i}", it, draw(st.sampled_from(ZONES)), owner, bound))

    pods: list[Pod] = []
    classes: dict[str, tuple[str, int, bool]] = {}
    budget = 40
    for c in range(draw(st.integers(1, 4))):
        if budget <= 0:
            break
        count = draw(st.integers(1, min(12, budget)))
        budget -= count
        app = f"app-{c}"
        cpu = draw(st.sampled_from(CPUS))
        memory = draw(st.sampled_from(MEMORIES))
        selector: dict[str, str] = {}
        kind = draw(st.sampled_from(("none", "arch", "zone", "team")))
        if kind == "arch":
            selector[ARCH] = draw(st.sampled_from(("amd64", "arm64")))
        elif kind == "zone":
            selector[ZONE] = draw(st.sampled_from(ZONES))
        elif kind == "team":
            selector["team"] = draw(st.sampled_from(pools)).name
        tolerated = draw(st.sampled_from([None, *(p.name for p in pools)]))
        tolerations = (toleration("team", tolerated, "NoSchedule"),) if tolerated else ()
        spread_kind = draw(st.sampled_from(("none", "zone", "hostname", "zone-soft")))
        skew = draw(st.integers(1, 2))
        constraints = ()
        if spread_kind == "zone":
            constraints = (spread(ZONE, skew, app=app),)
        elif spread_kind == "hostname":
            constraints = (spread(HOSTNAME, skew, app=app),)
        elif spread_kind == "zone-soft":
            constraints = (spread(ZONE, skew, "ScheduleAnyway", app=app),)
        anti = draw(st.booleans()) if spread_kind == "none" else False
        classes[app] = (spread_kind, skew, anti)
        for i in range(count):
            pods.append(
                pod(
                    f"{app}-{i}",
                    cpu,
                    memory,
                    labels={"app": app},
                    node_selector=selector,
                    tolerations=tolerations,
                    topology_spread=constraints,
                    pod_anti_affinity=(affinity_term(HOSTNAME, app=app),) if anti else (),
                )
            )
    return Cluster(pools, daemonsets, nodes, pods, classes)


def daemonset_overhead(cluster: Cluster, p: NodePool, it: InstanceType) -> dict[str, int]:
    labels = {**p.labels, **it.labels, "karpenter.sh/nodepool": p.name}
    total: dict[str, int] = {}
    for ds in cluster.daemonsets:
        if untolerated(ds.pod.tolerations, p.taints) is not None:
            continue
        if any(labels.get(k) != v for k, v in ds.pod.node_selector.items()):
            continue
        total = res.add(total, ds.pod.requests)
    return total


def where(results: Results) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for claim in results.nodeclaims:
        for key in claim.pods:
            out[key].append(claim.name)
    for name, keys in results.existing.items():
        for key in keys:
            out[key].append(name)
    for u in results.unschedulable:
        out[u.pod].append("-")
    return out


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@SETTINGS
@given(clusters())
def test_every_pod_appears_exactly_once(cluster: Cluster) -> None:
    results = cluster.solve()
    placed = where(results)
    assert sorted(placed) == sorted(p.key for p in cluster.pods)
    assert all(len(v) == 1 for v in placed.values()), {k: v for k, v in placed.items() if len(v) != 1}
    assert all(u.reason for u in results.unschedulable)


@SETTINGS
@given(clusters())
def test_no_node_or_claim_over_allocatable(cluster: Cluster) -> None:
    results = cluster.solve()
    by_key = {p.key: p for p in cluster.pods}
    pools = {p.name: p for p in cluster.pools}
    for claim in results.nodeclaims:
        used = res.total(by_key[k].requests for k in claim.pods)
        for name in (claim.cheapest.instance_type, *claim.instance_types):
            it = by_name(CATALOG, name)
            need = res.add(used, daemonset_overhead(cluster, pools[claim.nodepool], it))
            alloc = allocatable_for(it, NODECLASS)
            assert res.first_shortfall(need, alloc) is None, (claim.name, name, need, dict(alloc))
    nodes = {n.name: n for n in cluster.nodes}
    for name, keys in results.existing.items():
        n = nodes[name]
        used = res.total([*(p.requests for p in n.pods), *(by_key[k].requests for k in keys)])
        assert res.first_shortfall(used, n.allocatable) is None, (name, used)


@SETTINGS
@given(clusters())
def test_placements_satisfy_requirements_and_taints(cluster: Cluster) -> None:
    results = cluster.solve()
    by_key = {p.key: p for p in cluster.pods}
    pools = {p.name: p for p in cluster.pools}
    for claim in results.nodeclaims:
        np = pools[claim.nodepool]
        for option in claim.launch_options:
            it = by_name(CATALOG, option.instance_type)
            labels = {
                **np.labels,
                **it.labels,
                ZONE: option.zone,
                CAPACITY_TYPE: option.capacity_type,
                "karpenter.sh/nodepool": np.name,
            }
            assert np.node_requirements().matches_labels(labels), (claim.name, option)
            for key in claim.pods:
                p = by_key[key]
                assert all(labels.get(k) == v for k, v in p.node_selector.items()), (key, option, p.node_selector)
        for key in claim.pods:
            assert untolerated(by_key[key].tolerations, np.taints) is None, (key, claim.nodepool)
            if cluster.classes[by_key[key].labels["app"]][0] == "zone":
                assert len(claim.zones) == 1, (claim.name, claim.zones)
    nodes = {n.name: n for n in cluster.nodes}
    for name, keys in results.existing.items():
        for key in keys:
            p = by_key[key]
            assert all(nodes[name].labels.get(k) == v for k, v in p.node_selector.items())
            assert untolerated(p.tolerations, nodes[name].taints) is None


def _usable_pool(cluster: Cluster, p: Pod) -> bool:
    for np in cluster.pools:
        if untolerated(p.tolerations, np.taints) is not None:
            continue
        reqs = np.node_requirements()
        if "team" in p.node_selector and np.labels.get("team") != p.node_selector["team"]:
            continue
        arch = p.node_selector.get(ARCH)
        if arch and not reqs.get(ARCH).matches(arch):
            continue
        return True
    return False


@SETTINGS
@given(clusters())
def test_hard_spread_and_anti_affinity_hold(cluster: Cluster) -> None:
    results = cluster.solve()
    placed = {k: v[0] for k, v in where(results).items() if v[0] != "-"}
    zone_of = {c.name: c.zones for c in results.nodeclaims}
    zone_of.update({n.name: (n.labels[ZONE],) for n in cluster.nodes})
    for app, (kind, skew, anti) in cluster.classes.items():
        members = [p for p in cluster.pods if p.labels["app"] == app]
        hosts = Counter(placed[p.key] for p in members if p.key in placed)
        if kind == "hostname":
            assert max(hosts.values(), default=0) <= skew, (app, hosts)
        if anti:
            assert max(hosts.values(), default=0) <= 1, (app, hosts)
        if kind == "zone" and _usable_pool(cluster, members[0]):
            wanted = members[0].node_selector.get(ZONE)
            eligible = [wanted] if wanted else list(ZONES)
            zones: Counter[str] = Counter({z: 0 for z in eligible})
            for p in members:
                if p.key in placed:
                    (z,) = zone_of[placed[p.key]]
                    zones[z] += 1
            assert max(zones.values()) - min(zones.values()) <= skew, (app, zones)


@SETTINGS
@given(clusters())
def test_nodepool_limits_never_exceeded(cluster: Cluster) -> None:
    results = cluster.solve()
    for np in cluster.pools:
        if not np.limits:
            continue
        claims = [c for c in results.nodeclaims if c.nodepool == np.name]
        existing = [n for n in cluster.nodes if n.labels.get("karpenter.sh/nodepool") == np.name]
        if "nodes" in np.limits and claims:
            assert len(claims) + len(existing) <= np.limits["nodes"], (np.name, len(claims), len(existing))
        if "cpu" in np.limits and claims:
            new_cpu = sum(capacity(by_name(CATALOG, c.cheapest.instance_type))["cpu"] for c in claims)
            old_cpu = sum(n.allocatable["cpu"] for n in existing)
            assert new_cpu + old_cpu <= np.limits["cpu"], (np.name, new_cpu, old_cpu)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(clusters(), st.randoms(use_true_random=False))
def test_input_order_does_not_change_output(cluster: Cluster, rng: random.Random) -> None:
    assert cluster.solve(rng).to_json() == cluster.solve().to_json()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(clusters(), st.randoms(use_true_random=False))
def test_a_cache_kept_from_an_earlier_batch_does_not_change_the_output(cluster: Cluster, rng: random.Random) -> None:
    # The earlier batch saw the same nodes (same names and labels) running other pods: what a warm provisioner
    # keeps per node (its labels, the sums of its pods) must never be served once the node's pods changed.
    earlier = copy.copy(cluster)
    earlier.nodes = [
        dataclasses.replace(n, pods=tuple(pod(f"was-{n.name}-{j}", node_name=n.name) for j in range(rng.randint(0, 3))))
        for n in cluster.nodes
    ]
    kept = TemplateCache()
    earlier.solve(templates=kept)
    assert cluster.solve(templates=kept).to_json() == cluster.solve().to_json()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(clusters())
def test_the_room_lists_shortcuts_do_not_change_the_output(cluster: Cluster) -> None:
    # Claims without room left in a new list for the walk to drop, parked claims looked at only after a claim
    # narrowed (`Solver._room`): the plan is the one of the full walks.
    with full_walks():
        full = cluster.solve().to_json()
    assert cluster.solve().to_json() == full


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(clusters())
def test_the_kept_answers_of_one_pod_batches_do_not_change_the_output(cluster: Cluster) -> None:
    # A zone spread places its pods one per batch; a new claim's sizing (for a NodePool without limits and a class
    # the look-ahead does not size) and a class's hostname terms are kept per question instead of worked out again
    # (`Claims._sized`, `Solver._hostname_terms`): the plan is the one worked out afresh at every batch.
    with unkept_answers() as counts:
        fresh = cluster.solve().to_json()
    assert cluster.solve().to_json() == fresh
    assert counts[0] >= counts[1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(clusters())
def test_an_unfinished_run_is_ranked_as_its_finished_plan(cluster: Cluster) -> None:
    # The look-ahead's alternative runs are ranked before their claims are finished (`Solver.rank`).
    rank = Solver.rank

    def checked(self: Solver) -> tuple[int, float, int] | None:
        found = rank(self)
        assert found is None or found == _plan_rank(self._results())
        return found

    Solver.rank = checked  # type: ignore[method-assign]
    try:
        cluster.solve()
    finally:
        Solver.rank = rank  # type: ignore[method-assign]
