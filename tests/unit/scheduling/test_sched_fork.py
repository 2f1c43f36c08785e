"""Solver.fork: a solve's look-ahead alternatives start from the registered nodes, claims in flight and topology
counts, copied, so each run plans as a freshly built one would and runs never see each other's placements."""

from __future__ import annotations

from builders import (
    affinity_term,
    by_name,
    inflight,
    node,
    nodeclass,
    pods,
    pool,
    small_catalog,
    spread,
)

from nodewright.catalog.labels import HOSTNAME, ZONE
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.objects import Node, Pod
from nodewright.scheduling.choice import MIX_ALTERNATIVES, MIX_BELOW_PODS, MIX_DEPTH
from nodewright.scheduling.classes import VolumeIndex
from nodewright.scheduling.existing import SolveInputs
from nodewright.scheduling.solver import Solver, pod_classes
from nodewright.scheduling.templates import TemplateCache


def _cluster() -> tuple[list[Node], list[NodeClaim], list[Pod]]:
    catalog = small_catalog()
    web = {"app": "web"}
    nodes = [
        node("n1", by_name(catalog, "m5.xlarge"), "us-east-1a", bound=pods("web-a", 2, labels=web)),
        node("n2", by_name(catalog, "m5.large"), "us-east-1b", bound=pods("web-b", 1, labels=web)),
    ]
    claims = [inflight("c1", by_name(catalog, "m5.xlarge"), "us-east-1c", nominated=pods("web-c", 1, labels=web))]
    pending = [
        *pods("web", 9, labels=web, topology_spread=(spread(ZONE, app="web"),)),
        *pods("solo", 3, labels={"app": "solo"}, pod_anti_affinity=(affinity_term(HOSTNAME, app="solo"),)),
        *pods("big", 6, cpu="6", memory="20Gi"),
    ]
    return nodes, claims, pending


def _solver(limits: dict[str, str] | None = None, mix: tuple[int, int] = (MIX_BELOW_PODS, MIX_DEPTH)) -> Solver:
    nodes, claims, pending = _cluster()
    volumes = VolumeIndex((), (), ())
    nodepool = pool(limits=limits)
    templates = TemplateCache()
    inputs = (nodes, claims, [nodepool], [nodeclass()], small_catalog(), (), volumes, templates)
    return Solver(SolveInputs(*inputs), pod_classes(pending, nodes, claims, volumes, templates), *mix)


def test_a_fork_plans_as_a_freshly_built_run() -> None:
    for below, depth in MIX_ALTERNATIVES:
        forked = _solver().fork(below, depth).run()
        assert forked.to_json() == _solver(mix=(below, depth)).run().to_json()


def test_runs_do_not_see_each_others_placements_or_limits() -> None:
    limits = {"cpu": "64"}
    original = _solver(limits)
    fork = original.fork(MIX_BELOW_PODS, MIX_DEPTH)
    first = original.run()
    assert first.nodeclaims, "the workload opens new claims, which take from the limits"
    # The fork still starts from the registered state: its existing bins hold only their own pods, its limits
    # are whole, its topology counts only what was already running.
    assert [len(b.pods) for b in fork.bins] == [2, 1, 1]
    assert all(b.kind != "new" for b in fork.bins)
    assert [c.remaining for c in fork.pools.contexts] == [c.remaining for c in _solver(limits).pools.contexts]
    assert sum(sum(c.values()) for c in fork.topology.counts) == sum(
        sum(c.values()) for c in _solver(limits).topology.counts
    )
    assert fork.run().to_json() == first.to_json()


def test_the_alternatives_start_is_copied_only_when_a_look_ahead_can_be_skipped() -> None:
    nodes, claims, _ = _cluster()
    volumes = VolumeIndex((), (), ())
    templates = TemplateCache()
    inputs = (nodes, claims, [pool()], [nodeclass()], small_catalog(), (), volumes, templates)
    small = pods("small", 30, cpu="500m", memory="1Gi")
    solver = Solver(SolveInputs(*inputs), pod_classes(small, nodes, claims, volumes, templates))
    assert not solver.look_ahead.may_skip
    solver.run()
    assert not solver.look_ahead.mix_skipped  # what may_skip promises
    large = pods("large", 30, cpu="2", memory="4Gi")
    assert Solver(SolveInputs(*inputs), pod_classes(large, nodes, claims, volumes, templates)).look_ahead.may_skip


def test_a_node_without_room_for_any_class_is_shared_and_others_are_copied() -> None:
    catalog = small_catalog()
    nodes = [
        node("roomy", by_name(catalog, "m5.xlarge")),
        node("full", by_name(catalog, "m5.large"), bound=pods("busy", 1, cpu="1500m")),
    ]
    volumes = VolumeIndex((), (), ())
    templates = TemplateCache()
    pending = [*pods("one", 2, cpu="1"), *pods("half", 2, cpu="500m", memory="4Gi")]
    inputs = (nodes, (), [pool()], [nodeclass()], catalog, (), volumes, templates)
    solver = Solver(SolveInputs(*inputs), pod_classes(pending, nodes, (), volumes, templates))
    full, roomy = sorted(solver.bins, key=lambda b: b.name)
    # "full" has ~0.4 vCPU left: less than any class asks for (the least of each resource over the classes).
    fork = solver.fork(MIX_BELOW_PODS, MIX_DEPTH)
    shared = {b.name: b for b in fork.bins}
    assert shared["full"] is full and shared["roomy"] is not roomy
    assert solver.run().to_json() == fork.run().to_json()
    assert len(full.pods) == full.bound  # no run placed a pod on the shared node
