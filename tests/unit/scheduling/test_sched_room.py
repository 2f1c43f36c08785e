"""The solver's lists of bins worth visiting (`Solver._room`): the CPU index a class's first list starts from,
and new claims parked until their requirements change. Both only skip visits that could not place a pod."""

from __future__ import annotations

from typing import Any

from builders import by_name, node, nodeclass, placement, pod, pods, pool, req, run, small_catalog, spread, toleration

from nodewright.catalog.labels import HOSTNAME, ZONE
from nodewright.model.objects import Node
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint, Toleration
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.choice import MIX_BELOW_PODS, MIX_DEPTH
from nodewright.scheduling.claims import Claims
from nodewright.scheduling.classes import VolumeIndex
from nodewright.scheduling.existing import SolveInputs
from nodewright.scheduling.pools import PoolContext
from nodewright.scheduling.solver import Solver, pod_classes
from nodewright.scheduling.templates import TemplateCache


def _solver(nodes: list[Node]) -> Solver:
    volumes = VolumeIndex((), (), ())
    pending = pods("p", 1)
    templates = TemplateCache()
    inputs = (nodes, (), [pool()], [nodeclass()], small_catalog(), (), volumes, templates)
    return Solver(SolveInputs(*inputs), pod_classes(pending, nodes, (), volumes, templates))


def _nodes() -> list[Node]:
    catalog = small_catalog()
    large, xlarge = by_name(catalog, "m5.large"), by_name(catalog, "m5.xlarge")
    # n1 and n3 keep ~3 vCPU free; n2 is nearly full.
    return [node("n1", xlarge), node("n2", large, bound=pods("busy", 1, cpu="1500m")), node("n3", xlarge)]


def _room(
    solver: Solver, request: dict[str, int], key: tuple[object, ...], tolerations: tuple[Toleration, ...] = ()
) -> list[Bin]:
    anything = Requirements({})
    return solver._room(request, key, anything, solver.pools.req_id(anything), tolerations)


def test_a_first_list_holds_the_bins_with_the_cpu_for_the_request_in_placement_order() -> None:
    solver = _solver(_nodes())
    request = {"cpu": 2000, "memory": 1 << 30, "pods": 1}
    assert [b.name for b in _room(solver, request, ("two-cpu",))] == ["n1", "n3"]
    small = {"cpu": 100, "memory": 1 << 20, "pods": 1}
    assert [b.name for b in _room(solver, small, ("small",))] == ["n1", "n2", "n3"]


def test_a_first_list_leaves_out_nodes_whose_taints_or_labels_refuse_the_batch_in_every_run() -> None:
    catalog = small_catalog()
    gpu_taint = Taint("nvidia.com/gpu", "NoSchedule", "true")
    nodes = [
        node("n1", by_name(catalog, "m5.xlarge"), "us-east-1a"),
        node("n2", by_name(catalog, "m5.xlarge"), "us-east-1a", taints=[gpu_taint]),
        node("n3", by_name(catalog, "m5.xlarge"), "us-east-1b"),
    ]
    solver = _solver(nodes)
    fork = solver.fork(MIX_BELOW_PODS, MIX_DEPTH)
    zone_a = Requirements.of([req(ZONE, "In", "us-east-1a")])
    request = {"cpu": 1000, "memory": 1 << 30, "pods": 1}
    names = [b.name for b in solver._room(request, ("a",), zone_a, solver.pools.req_id(zone_a), ())]
    assert names == ["n1"]  # n2's taint is not tolerated, n3 is in another zone
    tolerated = (toleration("nvidia.com/gpu", "true", "NoSchedule"),)
    names = [b.name for b in solver._room(request, ("a-gpu",), zone_a, solver.pools.req_id(zone_a), tolerated)]
    assert names == ["n1", "n2"]
    # The fork's list is made of its own copies, from the positions the first run found.
    assert fork.eligible is solver.eligible
    kept = fork._room(request, ("a",), zone_a, fork.pools.req_id(zone_a), ())
    assert kept == [fork.bins[0]] and kept[0] is not solver.bins[0]


def test_a_parked_bin_comes_back_in_order_once_its_requirements_change() -> None:
    solver = _solver(_nodes())
    n1, n2, n3 = solver.bins
    key = ("parked",)
    solver.room[key] = ([n1, n3], len(solver.bins))
    solver.parked[key] = ([n2], [n2.rkey])
    request = {"cpu": 100, "memory": 1 << 20, "pods": 1}
    assert _room(solver, request, key) == [n1, n3]
    # Its requirements narrowed, which `Claims.assign` counts: a list looks at its parked bins only after a count.
    n2.rkey = solver.pools.req_id_of((("changed", ()),))
    assert _room(solver, request, key) == [n1, n3]
    solver.claims.narrowed += 1
    assert _room(solver, request, key) == [n1, n2, n3]
    assert solver.parked[key] == ([], [])


def test_nodes_alike_but_for_their_name_share_answers_unless_a_requirement_names_a_host() -> None:
    catalog = small_catalog()
    alike = [node(name, by_name(catalog, "m5.xlarge"), "us-east-1a") for name in ("n1", "n2")]
    pending = [*pods("any", 4, cpu="1"), pod("pinned", "1", node_selector={HOSTNAME: "n2"})]
    results = run(pending, nodes=alike)
    assert placement(results)["default/pinned"] == "n2"
    solver = _solver(alike)
    n1, n2 = solver.bins
    assert n1.shape == n2.shape and n1.rkey != n2.rkey
    anywhere = Requirements({})
    on_n2 = Requirements.of([req(HOSTNAME, "In", "n2")])
    assert solver.claims.labels_meet(n1, anywhere, solver.pools.req_id(anywhere))
    assert not solver.claims.labels_meet(n1, on_n2, solver.pools.req_id(on_n2))
    assert solver.claims.labels_meet(n2, on_n2, solver.pools.req_id(on_n2))


def test_a_nodepool_that_refuses_for_good_is_sized_once_and_keeps_its_reason() -> None:
    # A heavier NodePool with a taint the pods do not tolerate refuses every claim: `_open_claim` sizes it once
    # per requirement set, tolerations and request, then passes it over with the reason it gave.
    gpu = pool("gpu", weight=50, taints=[Taint("nvidia.com/gpu", "NoSchedule", "true")])
    sized: list[str] = []
    size_claim = Claims._size_claim

    def counted(self: Claims, ctx: PoolContext, *args: Any) -> Any:
        sized.append(ctx.pool.name)
        return size_claim(self, ctx, *args)

    spread_pods = pods("p", 6, cpu="3", topology_spread=(spread(HOSTNAME, app="p"),), labels={"app": "p"})
    Claims._size_claim = counted  # type: ignore[method-assign]
    try:
        results = run(spread_pods, pools=[gpu, pool("general")])
        nowhere = run(pods("big", 2, cpu="500"), pools=[gpu, pool("general")])
    finally:
        Claims._size_claim = size_claim  # type: ignore[method-assign]
    assert len(results.nodeclaims) == 6 and not results.unschedulable
    assert sized.count("gpu") == 2  # once for the spread pods' six claims, once for the pods no type holds
    reasons = {u.reason for u in nowhere.unschedulable}
    assert len(reasons) == 1
    assert "NodePool gpu: taint nvidia.com/gpu=true:NoSchedule is not tolerated" in reasons.pop()
