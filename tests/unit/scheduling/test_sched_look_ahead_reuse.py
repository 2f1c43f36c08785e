"""The look-ahead's reuse: a claim of a class reuses the last claim's answer only where a fresh scan would
give the same one, so reuse changes how fast a plan is made, never the plan."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import pytest
from builders import GiB, pods, run, small_catalog, spread

from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import InstanceType
from nodewright.model.objects import ZONE_LABEL, Pod
from nodewright.scheduling import choice
from nodewright.scheduling.choice import Mix

SHAPES = (("250m", "512Mi"), ("1", "2Gi"), ("2", "8Gi"), ("4", "8Gi"), ("4", "16Gi"), ("500m", "256Mi"))


def deployments(seed: int) -> list[Pod]:
    """A plain cluster's pending pods: Deployments of usual shapes, every fourth spread over zones."""
    rng = random.Random(seed)
    out: list[Pod] = []
    for d in range(12):
        cpu, memory = rng.choice(SHAPES)
        zonal = {"topology_spread": (spread(ZONE_LABEL, app=f"d{d}"),)} if d % 4 == 0 else {}
        # Odd counts leave a last claim with fewer pods than a node holds (the cap binds).
        out += pods(f"d{d}", rng.randint(3, 60), cpu=cpu, memory=memory, labels={"app": f"d{d}"}, **zonal)
    return out


@contextmanager
def checked_reuse() -> Iterator[list[int]]:
    """Scan afresh beside every reuse the rule allows and fail on any difference; yields a one-item list
    counting the reuses."""
    rule, mixed_choice, scan = Mix.holds_for, choice.LookAhead.mixed_choice, choice.LookAhead._best_mix
    reused = [0]
    current: list[tuple[object, ...]] = []

    def traced(
        self: choice.LookAhead, ctx: object, compat: object, cls: object, rkey: object, cap: int, chosen: object
    ) -> object:
        rate, _ = choice.own_rate(ctx, compat, cls, rkey)  # type: ignore[arg-type]
        current[:] = [(self, compat, cls, rate, chosen)]
        return mixed_choice(self, ctx, compat, cls, rkey, cap, chosen)  # type: ignore[arg-type]

    def holds_for(self: Mix, cap: int, others: list[choice._Pending]) -> bool:
        held = rule(self, cap, others)
        if held:
            look_ahead, compat, cls, rate, chosen = current[0]
            fresh = scan(look_ahead, compat, cls, cap, rate, others, chosen)  # type: ignore[arg-type]
            assert (fresh.chosen, fresh.fill) == (self.chosen, self.fill)
            reused[0] += 1
        return held

    Mix.holds_for = holds_for  # type: ignore[method-assign]
    choice.LookAhead.mixed_choice = traced  # type: ignore[assignment, method-assign]
    try:
        yield reused
    finally:
        Mix.holds_for = rule  # type: ignore[method-assign]
        choice.LookAhead.mixed_choice = mixed_choice  # type: ignore[method-assign]


@cache
def shipped_catalog() -> tuple[InstanceType, ...]:
    return tuple(SnapshotSource().instance_types())


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("catalog", ["small", "shipped"])
def test_every_reused_look_ahead_is_what_a_fresh_scan_answers(seed: int, catalog: str) -> None:
    types = small_catalog() if catalog == "small" else list(shipped_catalog())
    with checked_reuse() as reused:
        results = run(deployments(seed), types=types)
    assert reused[0] > 0, "the workload must exercise reuse"
    assert not results.unschedulable


def mix(cap: int, most: int) -> Mix:
    """A remembered answer: 3 pods of the class, then 2 of the (1000m, 1Gi) pods; sizes A then B pending."""
    return Mix(
        chosen=None,
        fill=[((1000, GiB), 2)],
        needed={(1000, GiB): 2, (500, GiB): 1},
        pending=[A, B],
        cap=cap,
        most=most,
        reach=1,
    )  # type: ignore[arg-type]


A, B = (1000, GiB, 0.1), (500, GiB, 0.05)


def pending(*sizes: tuple[tuple[int, int, float], int]) -> list[choice._Pending]:
    return [(cpu, memory, count, rate, []) for (cpu, memory, rate), count in sizes]


def test_a_lower_cap_is_reused_only_while_it_holds_every_scored_count() -> None:
    others = pending((A, 5), (B, 5))
    assert mix(cap=10, most=6).holds_for(6, others)
    assert not mix(cap=10, most=6).holds_for(5, others)  # a type that held 6 now holds 5: its score changes
    assert not mix(cap=4, most=6).holds_for(3, others)  # the old cap bound: a new one changes the scores
    assert mix(cap=4, most=6).holds_for(4, others)


def test_pending_counts_must_cover_what_any_score_took_in_the_same_order() -> None:
    answer = mix(cap=10, most=6)
    assert answer.holds_for(10, pending((A, 2), (B, 1)))
    assert not answer.holds_for(10, pending((A, 1), (B, 5)))  # a score took 2 of A
    assert not answer.holds_for(10, pending((A, 5)))  # B ran out, though a score took one
    assert not answer.holds_for(10, pending((B, 5), (A, 5)))  # the fill order changed
    assert not answer.holds_for(10, pending((A, 5), (B, 5), ((250, GiB, 0.01), 9)))  # a size appeared
