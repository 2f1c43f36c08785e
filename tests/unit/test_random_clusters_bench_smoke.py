"""Smoke test for the random-cluster benchmark (`python -m tests.bench.random_clusters`): the generator is seeded and
its clusters are schedulable by construction, plans keep their invariants, the LP bound stays below the price it
bounds (a theorem, see tests/bench/random_bound.py), the audit catches a broken plan, and the figure lines have the
stable keys `tests.bench.compare` pairs. Timings are never asserted on."""

from __future__ import annotations

import dataclasses
import datetime
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("highspy")  # benchmark-only dependency: the `bench` extra

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nodewright.scheduling import solve  # noqa: E402
from tests.bench import compare, random_clusters  # noqa: E402
from tests.bench.random_bound import cfg_bound  # noqa: E402
from tests.bench.random_generator import generate  # noqa: E402

FIELD = r"[a-z_]+=[^\s=]+"
LINE = re.compile(rf"^random (summary )?{FIELD}( {FIELD})*$")
SEEDS = (3, 11)


def _fields(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)


def test_clusters_are_seeded_and_varied() -> None:
    first, again = generate(3, 400), generate(3, 400)
    assert [p.key for p in first.pending] == [p.key for p in again.pending]
    assert first.nodepools == again.nodepools
    assert len(first.pending) == 400
    clusters = [generate(seed, 400) for seed in range(12)]
    assert len({len(c.nodepools) for c in clusters}) > 3
    assert len({len(c.workloads) for c in clusters}) > 6
    features = " ".join(c.features() for c in clusters)
    for feature in ("zone_spread=", "hostname_spread=", "anti_affinity=", "zone_affinity=", "gpu=", "toleration="):
        assert feature in features, feature
    assert any(c.nodes and any(n.pods for n in c.nodes) for c in clusters)
    assert any(p.limits for c in clusters for p in c.nodepools)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_cluster_schedules_every_pod_without_violations_and_the_bound_holds(seed: int) -> None:
    cluster = generate(seed, 400)
    results = solve(cluster.pending, **cluster.solve_kwargs())
    assert random_clusters.audit(results, cluster) == []
    assert results.unschedulable == ()
    bound = cfg_bound(results.nodeclaims, cluster, budget_seconds=2.0)
    assert bound is not None and bound.pods == sum(len(c.pods) for c in results.nodeclaims)
    assert 0 < bound.value <= results.cost_per_hour * (1 + 1e-6)


def test_the_audit_catches_a_pod_on_a_node_it_may_not_use() -> None:
    cluster = generate(3, 400)
    results = solve(cluster.pending, **cluster.solve_kwargs())
    by_key = {p.key: p for p in cluster.pending}
    # Give a claim holding a pod with a node selector another value of the label that pod selects.
    claim = next(c for c in results.nodeclaims if any(by_key[k].node_selector for k in c.pods))
    pod = next(by_key[k] for k in claim.pods if by_key[k].node_selector)
    key = sorted(pod.node_selector)[0]
    broken = dataclasses.replace(claim, labels={**claim.labels, key: "elsewhere"})
    moved = dataclasses.replace(results, nodeclaims=tuple(broken if c is claim else c for c in results.nodeclaims))
    problems = random_clusters.audit(moved, cluster)
    assert any(pod.key in p and "not met" in p for p in problems), problems
    # And a pod placed twice.
    doubled = dataclasses.replace(claim, pods=(*claim.pods, claim.pods[0]))
    twice = dataclasses.replace(results, nodeclaims=tuple(doubled if c is claim else c for c in results.nodeclaims))
    assert any("appears 2 times" in p for p in random_clusters.audit(twice, cluster))


def test_the_bench_prints_figures_compare_can_pair() -> None:
    lines: list[str] = []
    findings = random_clusters.run(SEEDS, (300,), max_runs=1, budget_seconds=1.0, lp_seconds=1.0, emit=lines.append)
    assert findings == 0, [line for line in lines if line.startswith("#")]
    figures = [line for line in lines if not line.startswith("#")]
    for line in figures:
        assert LINE.match(line), f"malformed figure line: {line!r}"
    per_seed = [_fields(line) for line in figures if line.startswith("random cluster=")]
    assert [f["cluster"] for f in per_seed] == [f"random-{s}" for s in SEEDS]
    for fields in per_seed:
        assert fields["pods"] == "300" and fields["unschedulable"] == "0" and fields["violations"] == "0"
        float(fields["pods_per_s"]), float(fields["cost_per_hour"]), float(fields["ratio_cfg"])
        assert float(fields["warm_pods_per_s"]) > 0 and float(fields["warm_cpu_pods_per_s"]) > 0
    keys = {compare.figure_key(line) for line in figures}
    assert keys == {"random cluster=random-3 pods=300", "random cluster=random-11 pods=300", "random summary pods=300"}
    (summary,) = [_fields(line) for line in figures if line.startswith("random summary")]
    assert summary["slowest"] in {"random-3", "random-11"} and summary["seeds"] == "2"
    assert summary["slowest_warm"] in {"random-3", "random-11"} and float(summary["median_warm_pods_per_s"]) > 0
    assert float(summary["median_ratio_cfg"]) >= 1 - 1e-6


def test_seeds_parse_and_default_to_a_range_of_the_day() -> None:
    assert random_clusters.parse_seeds(["100-102", "7"]) == [100, 101, 102, 7]
    today = random_clusters.default_seeds(datetime.date(2026, 12, 5))
    assert len(today) == random_clusters.SEEDS_PER_RUN and today == list(range(today[0], today[0] + len(today)))
    assert random_clusters.default_seeds(datetime.date(2026, 12, 6))[0] != today[0]
    assert random_clusters.describe_seeds(today) == f"{today[0]}-{today[-1]}"


def test_bound_keeps_a_label_the_nodepool_does_not_define() -> None:
    # A pod selecting `team: data` runs only where the NodePool labels or requires `team` (Karpenter refuses the others:
    # nothing would set the label); well-known keys a NodePool leaves open stay open.
    from nodewright.model.objects import Pod
    from nodewright.model.requirements import Requirements
    from tests.bench.random_bound import _compatible, _Profile

    def pod(selector: dict[str, str]) -> Pod:
        return Pod(namespace="d", name="p", uid="u", labels={}, requests={"cpu": 100}, node_selector=selector)

    open_pool = _Profile((), Requirements.from_labels({"karpenter.sh/nodepool": "general"}))
    team_pool = _Profile((), Requirements.from_labels({"karpenter.sh/nodepool": "team", "team": "data"}))
    assert not _compatible(pod({"team": "data"}), open_pool)
    assert _compatible(pod({"team": "data"}), team_pool)
    assert _compatible(pod({"topology.kubernetes.io/zone": "us-east-1a"}), open_pool)
