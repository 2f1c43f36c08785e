"""The simulations of one snapshot fork its registered cluster (`disruption.registered`) instead of walking the fleet
each time: every simulation must still hand the solver what a walk of the whole fleet would, so its plan is the plan
of a from-scratch solve, whichever simulations ran before it on the same snapshot."""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import replace

import pytest
from cluster_builder import Cluster

from nodewright.disruption.candidates import GRACEFUL, Candidate, candidates
from nodewright.disruption.simulate import SETTLING_TAINT, currently_reschedulable, movable, simulate
from nodewright.disruption.state import ClusterState
from nodewright.model import resources as res
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.objects import Node, Pod
from nodewright.scheduling import Results, existing, solve
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.classes import VolumeIndex
from nodewright.scheduling.existing import Registration, SolveInputs

POOL = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}
TYPES = ("m5.large", "m5.xlarge", "m5.2xlarge", "c5.xlarge", "r5.large")
ANTI = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
}


def _cluster(seed: int) -> Cluster:
    """A cluster with what a simulation treats apart: nodes still starting, a node not Ready, a locked node, a
    node holding a pod with anti-affinity, DaemonSet pods, pending pods, nodes of two NodePools and zones."""
    rng = random.Random(seed)
    cluster = Cluster()
    cluster.pool("general", disruption=POOL)
    cluster.pool("batch", disruption=POOL)
    for i in range(14):
        name = f"node-{i:02d}"
        cluster.node(
            name,
            rng.choice(TYPES),
            zone=rng.choice(("us-east-1a", "us-east-1b")),
            pool=rng.choice(("general", "batch")),
            initialized=i not in (3, 9),
            ready=i != 5,
        )
        cluster.pod(f"agent-{i:02d}", name, cpu="100m", memory="64Mi", owner="DaemonSet")
        for j in range(rng.randrange(0, 5)):
            cpu = rng.choice(("100m", "250m", "500m", "1"))
            cluster.pod(f"web-{i:02d}-{j}", name, cpu=cpu, memory=rng.choice(("128Mi", "512Mi", "1Gi")))
    cluster.pod("solo-0", "node-07", cpu="100m", memory="128Mi", labels={"app": "solo"}, **ANTI)
    # Pods its anti-affinity keeps off node-07 (they have no terms of their own, so nodes go to the solver condensed).
    for i in (0, 1, 2, 4):
        cluster.pod(f"twin-{i}", f"node-{i:02d}", cpu="100m", memory="128Mi", labels={"app": "solo"})
    for k in range(rng.randrange(0, 4)):
        cluster.pod(f"pending-{k}", cpu="250m", memory="256Mi")
    return cluster


def _from_scratch(state: ClusterState, group: Sequence[Candidate], also: Collection[str], ceiling: float) -> Results:
    """The solve a simulation made before the registered cluster was shared: every input found by walking the
    whole fleet and every node (as `simulate` did up to 0.34, without its one-NodeClaim retries)."""
    names = {c.name for c in group}
    leaving = names | set(also)
    gone = {m.node for m in state.fleet if m.node and (m.nodeclaim in leaving or state.disrupting(m))}
    moving = [p for c in group for p in movable(state, c)]
    displaced = [
        replace(p, node_name="")
        for m in state.fleet
        if m.node in gone and m.nodeclaim not in names
        for p in state.pods_on(m)
        if currently_reschedulable(state, p)
    ]
    members = {m.nodeclaim: m for m in state.fleet}
    pending_by_key = {p.key: p for p in state.inputs.pending_pods}
    inflight: list[NodeClaim] = []
    waiting: set[str] = set()
    for claim in state.inputs.nodeclaims:
        member = members.get(claim.name)
        if member is None or member.registered or claim.name in leaving or state.disrupting(member):
            continue
        mine = tuple(pending_by_key[k] for k in member.nominated if k in pending_by_key)
        waiting.update(p.key for p in mine)
        inflight.append(replace(claim, nominated_pods=mine, requests=res.total(p.requests for p in mine)))
    pods: list[Pod] = [*moving, *displaced, *(p for p in state.inputs.pending_pods if p.key not in waiting)]
    starting = {m.node for m in state.fleet if m.node and not m.initialized}
    usable = [n for n in state.inputs.nodes if n.name not in gone and (n.ready or n.name in starting)]
    nodes: list[Node] = usable
    if pods and not any(p.pod_anti_affinity or p.topology_spread or p.host_ports or p.pvc_names for p in pods):
        least = {r: min(p.requests.get(r, 0) for p in pods) for r in ("cpu", "memory", "pods")}
        nodes = []
        for node in usable:
            if any(p.pod_anti_affinity for p in node.pods):
                nodes.append(node)
            elif all(state.room(node).allocatable.get(r, 0) >= least[r] for r in least):
                nodes.append(state.room(node))
    kept = {n.name for n in nodes} & starting
    node_of = {m.nodeclaim: m.node for m in state.fleet if m.node in kept}
    known = [*inflight, *(replace(c, node_name=node_of[c.name]) for c in state.inputs.nodeclaims if c.name in node_of)]
    return solve(
        pods,
        nodes=nodes,
        nodeclaims=known,
        nodepools=[state.bounded(p) for p in state.inputs.nodepools],
        nodeclasses=state.inputs.nodeclasses,
        instance_types=state.catalog.instance_types,
        daemonsets=state.inputs.daemonsets,
        templates=state.templates,
        price_ceiling=ceiling,
    )


@pytest.mark.parametrize("seed", range(6))
def test_each_simulation_of_a_snapshot_plans_as_a_from_scratch_solve(seed: int) -> None:
    cluster = _cluster(seed)
    shared = cluster.state(locked=["claim-node-11"])
    found, _ = candidates(shared, GRACEFUL)
    assert len(found) >= 6
    rng = random.Random(seed)
    # Groups in the order multi-node consolidation's binary search tries prefixes (longest, shorter, longer again),
    # then single nodes, some with NodeClaims chosen earlier in the tick: every one on the same snapshot.
    groups = [found[:8], found[:4], found[:6], found[:2], found[:8], *([c] for c in found[:5])]
    checked = 0
    for group in groups:
        also = {c.name for c in rng.sample(found, 2)} - {c.name for c in group}
        ceiling = sum(c.price for c in group)
        sim = simulate(shared, group, also, ceiling=ceiling)
        fresh = simulate(cluster.state(locked=["claim-node-11"]), group, also, ceiling=ceiling)
        reference = _from_scratch(shared, group, also, ceiling)
        assert sim.results == reference == fresh.results
        checked += bool(reference.existing or reference.nodeclaims)
    assert checked, "no simulation placed a pod: the comparison proved nothing"


def test_the_registered_cluster_leaves_out_the_nodes_being_disrupted_and_keeps_the_starting_ones() -> None:
    cluster = _cluster(0)
    state = cluster.state(locked=["claim-node-11"])
    base = state.registered()
    assert "node-11" in base.disrupting and "node-11" in base.gone(())
    usable = {u.node.name for u in base.usable}
    assert "node-05" not in usable  # not Ready, and not one of ours still starting
    assert {"node-03", "node-09"} <= usable and set(base.starting) == {"node-03", "node-09"}
    assert "node-07" in {u.node.name for u in base.usable if u.anti_affinity}
    assert base.gone(["claim-node-02"]) == {"node-11", "node-02"}
    assert state.registered() is base  # worked out once per snapshot


SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
    ]
}


def _limited_cluster(seed: int) -> Cluster:
    """`_cluster` with limits on a NodePool (what its nodes count against them depends on which nodes stay) and,
    for odd seeds, a pending pod with a zone spread (the simulations then hand the solver every node as it is)."""
    cluster = _cluster(seed)
    cluster.find("NodePool", "batch")["spec"]["limits"] = {"cpu": "40", "memory": "200Gi"}
    if seed % 2:
        cluster.pod("spread-0", cpu="250m", memory="256Mi", labels={"app": "spread"}, **SPREAD)
    return cluster


@pytest.mark.parametrize("seed", range(6))
def test_a_forked_registration_plans_as_a_registration_from_scratch(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every simulation of one snapshot, in binary-search order, with settling nodes (their bins registered again
    with a taint), NodePool limits and one-NodeClaim retries (other NodePools and limits per solve): the plan of
    the forked registration is the plan of a solve that registers every node from scratch."""
    cluster = _limited_cluster(seed)
    shared = cluster.state(locked=["claim-node-11"])
    found, _ = candidates(shared, GRACEFUL)
    rng = random.Random(seed)
    groups = [found[:8], found[:4], found[:6], found[:2], found[:8], *([c] for c in found[:5])]
    runs = []
    for group in groups:
        names = {c.name for c in group}
        settling = {n.name for n in shared.inputs.nodes if rng.random() < 0.3} - {
            n for c in group for n in shared.registered().nodes_of.get(c.name, ())
        }
        runs.append((group, settling, sum(c.price for c in group)))
        sim = simulate(shared, group, one_claim=True, ceiling=runs[-1][2], settling=settling)
        runs[-1] += (sim.results, names)
    assert shared.registered().solver, "the simulations did not fork a registration"
    with monkeypatch.context() as m:
        m.setattr(Registration, "fork", lambda self, inputs: Registration(inputs))
        for group, settling, ceiling, results, _names in runs:
            fresh = simulate(
                cluster.state(locked=["claim-node-11"]), group, one_claim=True, ceiling=ceiling, settling=settling
            )
            assert results == fresh.results
    assert any(r[3].existing or r[3].nodeclaims for r in runs), "no simulation placed a pod: it proved nothing"


def test_a_fork_counts_the_limits_and_keeps_the_bins_of_a_registration_from_scratch() -> None:
    """The fork's NodePool limits left, entries in order and bins (content, numbers read as what they number)
    are those of a registration of the same nodes from scratch, whatever nodes it takes away or hands over
    changed."""
    cluster = _limited_cluster(0)
    state = cluster.state()
    nodes = list(state.inputs.nodes)
    inputs = (state.inputs.nodepools, state.inputs.nodeclasses, state.catalog.instance_types, state.inputs.daemonsets)
    volumes = VolumeIndex((), (), ())
    base = Registration(SolveInputs(nodes, (), *inputs, volumes, state.templates))
    rng = random.Random(3)
    for _ in range(20):
        kept = [n for n in nodes if rng.random() < 0.6]
        handed = [replace(n, taints=(*n.taints, SETTLING_TAINT)) if rng.random() < 0.2 else n for n in kept]
        fork = base.fork(SolveInputs(handed, (), *inputs, volumes, state.templates))
        scratch = Registration(SolveInputs(handed, (), *inputs, volumes, state.templates))
        assert fork.shared and not scratch.shared
        assert [c.remaining for c in fork.pools.contexts] == [c.remaining for c in scratch.pools.contexts]
        assert [_content(e.bin, fork) for e in fork.entries] == [_content(e.bin, scratch) for e in scratch.entries]
        assert [e.order for e in fork.entries] == [e.order for e in scratch.entries]
    limited = [c.remaining for c in base.pools.contexts if c.remaining is not None]
    assert limited, "no NodePool had limits: the counts were not checked"


def _content(b: Bin | None, registration: Registration) -> object:
    if b is None:
        return None
    keys = registration.pools.req_keys
    return (b.name, b.labels, b.requirements, keys[b.rkey], keys[b.shape], b.taints, b.remaining, b.pods, b.volumes)


def test_a_fork_registers_only_the_nodes_it_hands_over_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of forking: a simulation that takes nodes away and hands two over with a taint registers those two,
    not the fleet again."""
    state = _limited_cluster(0).state()
    nodes = list(state.inputs.nodes)
    inputs = (state.inputs.nodepools, state.inputs.nodeclasses, state.catalog.instance_types, state.inputs.daemonsets)
    volumes = VolumeIndex((), (), ())
    base = Registration(SolveInputs(nodes, (), *inputs, volumes, state.templates))
    registered: list[str] = []
    real = existing.node_bin
    monkeypatch.setattr(existing, "node_bin", lambda node, *rest: registered.append(node.name) or real(node, *rest))
    handed = [replace(n, taints=(*n.taints, SETTLING_TAINT)) if i < 2 else n for i, n in enumerate(nodes[3:])]
    fork = base.fork(SolveInputs(handed, (), *inputs, volumes, state.templates))
    assert registered == [n.name for n in handed[:2]]
    assert len(fork.entries) == len(handed)
