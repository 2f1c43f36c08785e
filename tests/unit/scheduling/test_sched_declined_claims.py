"""What a run keeps between batches of one class to step over places that cannot take them (`Solver._fill`): the
claims that declined one pod because narrowing them would cost more than new claims for it (`Solver._declined`), and
per request the bins found without room (`Solver.full`, left out of new lists). Both change how fast a plan is
made, never the plan: the plan with them must be the plan without them, claim by claim, while they save work."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from full_walks import unkept_skips

from nodewright.scheduling import solver as solver_module
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.claims import Claims
from nodewright.scheduling.solver import Solver

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.random_generator import generate  # noqa: E402


@contextmanager
def counted() -> Iterator[list[int]]:
    """Count the narrowing prices asked (`Claims.narrowing_dearer`) and the places the walks were handed."""
    dearer, fill = Claims.narrowing_dearer, Solver._fill
    counts = [0, 0]

    def counted_dearer(self: Claims, *args: object) -> bool:
        counts[0] += 1
        return dearer(self, *args)  # type: ignore[arg-type]

    def counted_fill(self: Solver, bins: list[Bin], *args: object) -> object:
        counts[1] += len(bins)
        return fill(self, bins, *args)  # type: ignore[arg-type]

    Claims.narrowing_dearer = counted_dearer  # type: ignore[assignment, method-assign]
    Solver._fill = counted_fill  # type: ignore[assignment, method-assign]
    try:
        yield counts
    finally:
        Claims.narrowing_dearer = dearer  # type: ignore[method-assign]
        Solver._fill = fill  # type: ignore[method-assign]


@pytest.mark.parametrize("seed", [8300, 8315])
def test_the_kept_declines_and_full_bins_give_the_plan_made_without_them(seed: int) -> None:
    cluster = generate(seed, 2000)
    with counted() as kept:
        plan = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    with counted() as unkept, unkept_skips():
        again = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert plan.to_json() == again.to_json()
    assert kept[0] < unkept[0], "the cluster must have claims that decline one pod again"
    assert kept[1] < unkept[1], "the cluster must have lists made after other lists found bins full"
