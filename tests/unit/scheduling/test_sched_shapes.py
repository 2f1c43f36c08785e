"""The new claims by shape (`shapes.ClaimShapes`) and the lists a class starts from them (`Solver._new_room`): asking
a shape once answers what `_fill` would find asking each of its claims, so the index changes how fast a plan is
made, never the plan."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint, Toleration
from nodewright.scheduling import solver as solver_module
from nodewright.scheduling.claims import Bin
from nodewright.scheduling.pools import ReqKey
from nodewright.scheduling.preferences import untolerated
from nodewright.scheduling.shapes import ClaimShapes
from nodewright.scheduling.solver import Solver

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.random_generator import generate  # noqa: E402


def slow_new_room(
    solver: Solver,
    request: Mapping[str, int],
    requirements: Requirements,
    rkey: ReqKey,
    tolerations: tuple[Toleration, ...],
) -> tuple[list[Bin], list[tuple[Bin, ReqKey]]]:
    """What `_fill`'s checks keep of every new claim with room, one claim at a time: the claims that may take the
    batch, and those parked until their requirements change."""
    claims = solver.claims
    found: list[Bin] = []
    parked: list[tuple[Bin, ReqKey]] = []
    for b in claims.new_bins:
        if not solver_module._with_room(request, [b]) or b.grown:
            continue
        if b.taints and untolerated(tolerations, b.taints) is not None:
            continue
        if claims.shape_compat(b, requirements, rkey) is not None:
            found.append(b)
        elif claims.may_take_later(b, requirements, rkey):
            parked.append((b, b.rkey))
    return found, parked


def check_index(solver: Solver) -> None:
    """Every new claim that has not grown is listed once, under its current shape, each list in placement order."""
    listed = [b for _, bins in solver.claims.shapes.items() for b in bins]
    assert sorted(map(id, listed)) == sorted(id(b) for b in solver.claims.new_bins if not b.grown)
    for (rkey, taints), bins in solver.claims.shapes.items():
        assert bins and all(b.rkey == rkey and b.taints == taints for b in bins)
        assert [b.order for b in bins] == sorted(b.order for b in bins)


@contextmanager
def cross_checked() -> Iterator[list[int]]:
    """Check every list `_new_room` starts against `slow_new_room`, and the index at each of them; yields a one-item
    list counting the lists checked that left out a claim the slow walk visits."""
    fast = Solver._new_room
    pruned = [0]

    def checked(
        self: Solver,
        request: Mapping[str, int],
        requirements: Requirements,
        rkey: ReqKey,
        tolerations: tuple[Toleration, ...],
        parked: list[tuple[Bin, ReqKey]],
    ) -> list[Bin]:
        check_index(self)
        before = len(parked)
        found = fast(self, request, requirements, rkey, tolerations, parked)
        expected, expected_parked = slow_new_room(self, request, requirements, rkey, tolerations)
        assert found == expected
        # The fast path parks a shape's claims whatever their room: those without come back to be dropped.
        with_room = [(b, k) for b, k in parked[before:] if solver_module._with_room(request, [b])]
        assert sorted(with_room, key=lambda p: p[0].order) == expected_parked
        visited = sum(1 for b in self.claims.new_bins if solver_module._with_room(request, [b]))
        pruned[0] += len(expected) + len(expected_parked) < visited
        return found

    Solver._new_room = checked  # type: ignore[method-assign]
    try:
        yield pruned
    finally:
        Solver._new_room = fast  # type: ignore[method-assign]


@pytest.mark.parametrize("seed", [4100, 4104, 4110])
def test_lists_started_by_shape_hold_what_the_walk_over_every_claim_keeps(seed: int) -> None:
    cluster = generate(seed, 600)
    with cross_checked() as pruned:
        solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert pruned[0] > 0, "the cluster must have claims some lists leave out"


def _claim(order: int, rkey: ReqKey, taints: tuple[Taint, ...] = ()) -> Bin:
    return Bin(f"c{order}", "new", {}, Requirements({}), rkey, taints, {}, order=order)


def test_a_claim_is_listed_under_its_current_shape_in_placement_order_until_it_grows() -> None:
    tainted = (Taint("dedicated", "batch", "NoSchedule"),)
    shapes = ClaimShapes()
    c0, c1, c2, c3 = _claim(0, 1), _claim(1, 1), _claim(2, 1, tainted), _claim(3, 1)
    for b in (c3, c0, c2, c1):
        shapes.add(b)
    assert dict(shapes.items()) == {(1, ()): [c0, c1, c3], (1, tainted): [c2]}
    c1.rkey = 2  # its requirements narrowed (a zone, say)
    shapes.move(c1, 1)
    c0.rkey = 2
    shapes.move(c0, 1)
    assert dict(shapes.items()) == {(1, ()): [c3], (1, tainted): [c2], (2, ()): [c0, c1]}
    shapes.drop(c2)  # it grew into a larger type: the room walk skips it for good
    shapes.drop(c3)
    assert dict(shapes.items()) == {(2, ()): [c0, c1]}
