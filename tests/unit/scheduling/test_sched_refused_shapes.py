"""New claims refused by shape (`Solver._fill`, `Claims.refuses_for_good`): a new list drops, on one look-up per shape
of claim (requirement set and NodePool), the claims whose taints or requirements refuse the batch for good. The
answer kept per shape must be each claim's own, so it changes how fast a plan is made, never the plan."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from builders import placement, pod, pool, run, toleration

from nodewright.model.taints import Taint
from nodewright.scheduling import solver as solver_module
from nodewright.scheduling.claims import Claims
from nodewright.scheduling.solver import Solver

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.random_generator import generate  # noqa: E402


@contextmanager
def checked_shapes() -> Iterator[list[int]]:
    """Before every `_fill`, check each kept answer against the claim's own, for every new claim it will visit;
    yields a one-item list counting the claims a kept answer refused."""
    fill = Solver._fill
    refused = [0]

    def checked(self: Solver, bins: list[object], *args: object) -> object:
        requirements, rkey, variant = args[5], args[6], args[7]  # after parked, cls, pods, request, closing
        answers = self.claims.refused.get((rkey, variant.tolerations), {})
        for b in bins:
            kept = answers.get((b.rkey, id(b.pool))) if b.kind == "new" and not b.grown else None  # type: ignore[attr-defined]
            if kept is not None:
                assert kept == self.claims.refuses_for_good(b, requirements, rkey, variant.tolerations)  # type: ignore[arg-type, attr-defined]
                refused[0] += kept
        return fill(self, bins, *args)  # type: ignore[arg-type]

    Solver._fill = checked  # type: ignore[assignment, method-assign]
    try:
        yield refused
    finally:
        Solver._fill = fill  # type: ignore[method-assign]


@pytest.mark.parametrize("seed", [4100, 4104, 4110])
def test_every_claim_a_kept_answer_refuses_refuses_on_its_own(seed: int) -> None:
    cluster = generate(seed, 600)
    with checked_shapes() as refused:
        solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert refused[0] > 0, "the cluster must have claims a list refuses by shape"


@pytest.mark.parametrize("seed", [4101, 4108])
def test_the_plan_is_the_one_made_without_refusing_by_shape(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = generate(seed, 600)
    fast = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    monkeypatch.setattr(Claims, "refuses_for_good", lambda *_: False)  # every claim goes through every check
    slow = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert fast == slow


def test_a_shape_refused_for_pods_without_a_toleration_still_takes_pods_with_it() -> None:
    taint = Taint("dedicated", "NoSchedule", "batch")
    tolerates = (toleration("dedicated", "batch", "NoSchedule"),)
    pending = [
        pod("large", "3", tolerations=tolerates),  # opens a claim in the tainted NodePool, with room left
        pod("plain", "600m"),  # no toleration: its list refuses the tainted claim's shape
        pod("small", "500m", tolerations=tolerates),  # same requirements, other tolerations: the claim takes it
    ]
    pools = [pool("tainted", weight=10, taints=[taint]), pool("general")]
    where = placement(run(pending, pools=pools))
    assert where["default/small"] == where["default/large"] != where["default/plain"]
