"""Smoke test for the heterogeneous-cluster benchmark (`python -m tests.bench.hetero`) and the side-by-side runner
(`python -m tests.bench.compare`): the figure prints with its invariants kept (every pod placed once or refused,
claims within allocatable, taints tolerated, node selectors met, anti-affinity one per node), and the runner pairs
the two sides' figures. Timings are never asserted on."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nodewright.scheduling import solve  # noqa: E402
from tests.bench import compare, hetero  # noqa: E402


def test_a_small_heterogeneous_cluster_schedules_without_violations() -> None:
    cluster = hetero.hetero_cluster(1)
    assert len(cluster.nodepools) >= 10 and len({p.taints for p in cluster.nodepools}) > 1
    pending = hetero.pods(cluster, 300)
    assert len(pending) == 300 and len({p.labels["app"] for p in pending}) > 20
    results = solve(pending, **cluster.solve_kwargs())
    assert hetero.audit(results, pending, cluster) == []
    assert results.nodeclaims and len({c.nodepool for c in results.nodeclaims}) > 1


def test_compare_pairs_the_figures_of_both_sides() -> None:
    first = ["hetero cluster=hetero-1 pods=1000 pods_per_s=100 cost_per_hour=5.0", "# a note"]
    second = ["hetero cluster=hetero-1 pods=1000 pods_per_s=300 cost_per_hour=5.0"]
    lines = compare.summary({"main": [first], "tree": [second]}, ("main", "tree"))
    assert lines == ["compare hetero cluster=hetero-1 pods=1000: pods_per_s=100/300(3.000) cost_per_hour=5/5(1.000)"]
