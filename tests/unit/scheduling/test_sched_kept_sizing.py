"""A new claim's sizing kept per question (`Claims._sized`): the plans are those of a sizing worked out afresh for
every new claim, on workloads where the question's parts differ (the cap, a NodePool's limits, the look-ahead)."""

from __future__ import annotations

import random

import pytest
from builders import pods, pool, run, spread
from full_walks import unkept_answers

from nodewright.model.objects import HOSTNAME_LABEL, ZONE_LABEL, Pod

# Usual request shapes, and large ones the look-ahead sizes with the free pods to come (at least 2 cpu or 8Gi).
SHAPES = (("250m", "512Mi"), ("1", "2Gi"), ("2", "8Gi"), ("4", "8Gi"), ("4", "16Gi"), ("500m", "256Mi"), ("3", "4Gi"))


def deployments(seed: int) -> list[Pod]:
    """Deployments of usual shapes: every third spread over zones with maxSkew 1 and over hosts with maxSkew 1 or
    2 (one-pod batches, caps of one or two), the others free (look-ahead) or spread over hosts only."""
    rng = random.Random(seed)
    out: list[Pod] = []
    for d in range(12):
        cpu, memory = rng.choice(SHAPES)
        app = {"app": f"d{d}"}
        host = spread(HOSTNAME_LABEL, max_skew=rng.choice((1, 2)), **app)
        terms = {0: (spread(ZONE_LABEL, **app), host), 1: (), 2: (host,)}[d % 3]
        out += pods(f"d{d}", rng.randint(3, 40), cpu=cpu, memory=memory, labels=app, topology_spread=terms)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("limited", [False, True])
def test_kept_sizings_plan_as_fresh_ones(seed: int, limited: bool) -> None:
    # A heavier NodePool with a cpu limit that runs out while claims open (its answers change), or without one.
    pools = [pool("capped", weight=10, limits={"cpu": "40"} if limited else None), pool("rest")]
    with unkept_answers() as counts:
        fresh = run(deployments(seed), pools=pools)
    assert counts[1] > 0, "the workload must ask questions `_sized` keeps"
    assert counts[0] > counts[1], "and questions it must ask afresh (limits, look-ahead)"
    assert run(deployments(seed), pools=pools).to_json() == fresh.to_json()
