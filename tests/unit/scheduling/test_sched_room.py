"""The solver's lists of bins worth visiting (`Solver._room`): the CPU index a class's first list starts from,
and new claims parked until their requirements change. Both only skip visits that could not place a pod."""

from __future__ import annotations

from builders import by_name, node, nodeclass, pods, pool, small_catalog

from nodewright.model.objects import Node
from nodewright.scheduling.classes import VolumeIndex
from nodewright.scheduling.solver import Solver, pod_classes
from nodewright.scheduling.templates import TemplateCache


def _solver(nodes: list[Node]) -> Solver:
    volumes = VolumeIndex((), (), ())
    pending = pods("p", 1)
    templates = TemplateCache()
    inputs = (nodes, (), [pool()], [nodeclass()], small_catalog(), (), volumes, templates)
    return Solver(*inputs, pod_classes(pending, nodes, (), volumes, templates))


def _nodes() -> list[Node]:
    catalog = small_catalog()
    large, xlarge = by_name(catalog, "m5.large"), by_name(catalog, "m5.xlarge")
    # n1 and n3 keep ~3 vCPU free; n2 is nearly full.
    return [node("n1", xlarge), node("n2", large, bound=pods("busy", 1, cpu="1500m")), node("n3", xlarge)]


def test_a_first_list_holds_the_bins_with_the_cpu_for_the_request_in_placement_order() -> None:
    solver = _solver(_nodes())
    request = {"cpu": 2000, "memory": 1 << 30, "pods": 1}
    kept = solver._room(request, (("cpu", 2000),), ("two-cpu",))
    assert [b.name for b in kept] == ["n1", "n3"]
    small = {"cpu": 100, "memory": 1 << 20, "pods": 1}
    assert [b.name for b in solver._room(small, (("cpu", 100),), ("small",))] == ["n1", "n2", "n3"]


def test_a_parked_bin_comes_back_in_order_once_its_requirements_change() -> None:
    solver = _solver(_nodes())
    n1, n2, n3 = solver.bins
    key = ("parked",)
    solver.room[key] = ([n1, n3], len(solver.bins))
    solver.parked[key] = [(n2, n2.rkey)]
    request = {"cpu": 100, "memory": 1 << 20, "pods": 1}
    assert solver._room(request, (("cpu", 100),), key) == [n1, n3]
    n2.rkey = solver.pools.req_id_of((("changed", ()),))  # its requirements narrowed
    assert solver._room(request, (("cpu", 100),), key) == [n1, n2, n3]
    assert solver.parked[key] == []
