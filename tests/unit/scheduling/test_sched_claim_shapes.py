"""New claims by shape (`shapes.ClaimShapes`): a class's new list of places reads only the claims of the shapes that
may take its batch (`Solver._new_room`). The index must hold exactly the run's new claims that have not grown, under
their current shape, in placement order, so a list made from it is the list made by visiting every claim."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from builders import pool
from full_walks import full_walks

from nodewright.model.nodepool import NodePool
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Toleration
from nodewright.scheduling import solver as solver_module
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.candidates import type_matches
from nodewright.scheduling.claims import _undefined_label
from nodewright.scheduling.pools import PoolContext, ReqKey
from nodewright.scheduling.shapes import ClaimShapes
from nodewright.scheduling.solver import Solver

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.random_generator import generate  # noqa: E402

GENERAL, BATCH = pool("general"), pool("batch")
LOSES_TYPE = object()  # stands for a type the batch's requirements leave out
WAITS = object()  # stands for claims that wait for a label the batch requires


def _context(nodepool: NodePool) -> PoolContext:
    return PoolContext(nodepool, None, Requirements({}), (), [], None)


def _claim(order: int, rkey: ReqKey, ctx: PoolContext, cpu: int = 4000, chosen: object = None) -> Bin:
    room = {"cpu": cpu, "memory": 8 << 30, "pods": 10}
    return Bin(f"c{order}", "new", {}, Requirements({}), rkey, (), room, pool=ctx, chosen=chosen, order=order)  # type: ignore[arg-type]


def _orders(shapes: ClaimShapes, ctx: PoolContext, rkey: ReqKey) -> list[int]:
    return [b.order for b in shapes.by_pool[id(ctx)][1][(rkey, id(None))]]


def test_claims_move_with_their_shape_and_leave_when_they_grow() -> None:
    shapes = ClaimShapes()
    general = _context(GENERAL)
    claims = [_claim(order, order % 2, general) for order in range(5)]
    for b in claims:
        shapes.opened(b)
    assert _orders(shapes, general, 0) == [0, 2, 4]
    claims[2].rkey = 1  # its requirements narrowed into the other shape
    shapes.reshaped(claims[2], 0)
    assert _orders(shapes, general, 0) == [0, 4]
    assert _orders(shapes, general, 1) == [1, 2, 3]  # in placement order
    shapes.grew(claims[1])
    assert _orders(shapes, general, 1) == [2, 3]
    for b in (claims[0], claims[4]):
        shapes.grew(b)
    assert (0, id(None)) not in shapes.by_pool[id(general)][1]  # an emptied shape is not asked again


def test_a_list_reads_the_claims_of_shapes_not_refused_in_placement_order() -> None:
    shapes = ClaimShapes()
    general, batch = _context(GENERAL), _context(BATCH)
    claims = [
        _claim(0, 7, general),
        _claim(1, 8, general),
        _claim(2, 7, general, cpu=500),
        _claim(3, 9, general),
        _claim(4, 7, general),
        _claim(5, 7, batch),
        _claim(6, 9, general, chosen=LOSES_TYPE),
        _claim(7, 9, general, chosen=WAITS),
        _claim(8, 9, general, cpu=500, chosen=WAITS),
    ]
    for b in claims:
        shapes.opened(b)
    asked: list[object] = []

    def pool_refuses(ctx: PoolContext) -> bool:
        asked.append(ctx.pool.name)
        return ctx is batch

    def refuses(b: Bin) -> bool:
        asked.append(b.rkey)
        return b.rkey == 8

    def fits(b: Bin) -> bool | None:
        asked.append(f"type of c{b.order}")
        return None if b.chosen is WAITS else b.chosen is not LOSES_TYPE

    pool_refused: dict[int, bool] = {}
    refused: dict[tuple[ReqKey, int], bool] = {}
    found, waiting = shapes.taking(pool_refused, pool_refuses, refused, refuses, fits)
    # c1's shape refuses; every claim of batch refuses (its shapes are not asked); c6, of c3's shape but sized for
    # a type the batch's requirements leave out, would lose its type. c2 and c8 have no room for the request but are
    # listed: the solver's walk drops a claim without room when it reaches it, as it drops any full place.
    assert [b.order for b in found] == [0, 2, 3, 4]
    assert [b.order for b in waiting] == [7, 8]
    # Once per NodePool, shape, and type of the shapes not refused.
    types = ["type of c0", "type of c3", "type of c6", "type of c7"]
    assert sorted(map(str, asked)) == ["7", "8", "9", "batch", "general", *types]
    assert shapes.taking(pool_refused, pool_refuses, refused, refuses, fits) == (found, waiting)
    assert len([a for a in asked if not str(a).startswith("type")]) == 5  # kept answers are read, not asked again


def _merged(b: Bin, requirements: Requirements) -> Requirements | None:
    """Claim b's requirements with these, worked out afresh (None: they conflict or need a label b leaves out)."""
    if b.requirements.conflict(requirements) is not None or _undefined_label(b.requirements, requirements):
        return None
    return b.requirements.intersect(requirements)


def _keeps_type(b: Bin, merged: Requirements) -> bool:
    """Whether claim b keeps its type once narrowed to `merged` (what `Claims.bin_compat` asks), worked out afresh."""
    assert b.chosen is not None
    return type_matches(b.chosen.it, merged) and bool(b.chosen.offerings_for(merged))


@contextmanager
def checked_new_room() -> Iterator[list[int]]:
    """Check every list `_new_room` makes against the one made by visiting each of the run's new claims with every
    check `_fill` applies before a placement that drops or parks a claim (room, growth, shape refusal, losing its
    type, a label it does not define yet); yields the claims left out and the claims parked, counted."""
    new_room = Solver._new_room
    left_out = [0, 0]

    def checked(
        self: Solver,
        requirements: Requirements,
        rkey: ReqKey,
        tolerations: tuple[Toleration, ...],
    ) -> tuple[list[Bin], list[Bin]]:
        found, waiting = new_room(self, requirements, rkey, tolerations)
        candidates = [
            b
            for b in self.claims.new_bins
            if not b.grown and not self.claims.refuses_for_good(b, requirements, rkey, tolerations)
        ]
        merged = {id(b): _merged(b, requirements) for b in candidates}
        # Claims without room are listed too: `_fill` drops them when it reaches them, as it drops any full place.
        every = [b for b in candidates if merged[id(b)] is not None and _keeps_type(b, merged[id(b)])]
        assert found == every
        # A claim refused but not for good waits for a label it does not define yet: `_fill` would park it.
        assert waiting == [b for b in candidates if merged[id(b)] is None]
        assert all(self.claims.may_take_later(b, requirements, rkey) for b in waiting)
        left_out[0] += len(self.claims.new_bins) - len(found)
        left_out[1] += len(waiting)
        return found, waiting

    Solver._new_room = checked  # type: ignore[method-assign]
    try:
        yield left_out
    finally:
        Solver._new_room = new_room  # type: ignore[method-assign]


@pytest.mark.parametrize("seed", [4100, 4104, 7303, 7309, 7322])
def test_a_list_from_the_shapes_is_the_list_from_every_claim(seed: int) -> None:
    cluster = generate(seed, 600)
    with checked_new_room() as left_out:
        solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert left_out[0] > 0, "the cluster must have claims a list leaves out"
    if seed == 7309:
        assert left_out[1] > 0, "the cluster must have claims a list parks"


@pytest.mark.parametrize("seed", [7309, 9113])
def test_the_shortcut_lists_give_the_plan_of_the_full_walks(seed: int) -> None:
    # New lists that leave claims without room for `_fill` to drop, and parked claims looked at only after some
    # claim narrowed, place every pod where the full walks do: the same plan, claim by claim.
    cluster = generate(seed, 2000)
    shortcut = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    with full_walks() as counts:
        full = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert counts[1] > 0, "the cluster must have lists that differ by claims without room"
    assert shortcut.to_json() == full.to_json()


@pytest.mark.parametrize("seed", [9113, 9119])
def test_an_alternative_run_is_ranked_as_its_finished_plan_would_be(seed: int) -> None:
    # The look-ahead's alternative runs are ranked without finishing their claims (`Solver.rank`): the rank must be
    # the finished plan's, or a plan could be kept or dropped wrongly.
    rank = solver_module.Solver.rank
    ranked: list[tuple[int, float, int]] = []

    def checked(self: solver_module.Solver) -> tuple[int, float, int] | None:
        found = rank(self)
        if found is not None:
            assert found == solver_module._plan_rank(self._results())
            ranked.append(found)
        return found

    cluster = generate(seed, 2000)
    solver_module.Solver.rank = checked  # type: ignore[method-assign]
    try:
        solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    finally:
        solver_module.Solver.rank = rank  # type: ignore[method-assign]
    # The first run is ranked too, then each alternative that runs (one may be known to plan as another).
    assert len(ranked) >= 2, "the cluster must run one of the look-ahead's alternatives at least"
