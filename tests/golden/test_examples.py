"""Golden scenarios: the examples simulate to exactly the recorded decisions.

A change to the scheduler, the catalog snapshot or the examples that moves a pod, picks another
instance type or changes a price shows up here as a diff. When the change is intended, regenerate with
`NODEWRIGHT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/golden` and review the diff of the JSON files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodewright.catalog.snapshot import SnapshotSource
from nodewright.model.loader import load_files
from nodewright.scheduling import solve_inputs

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent

SCENARIOS = {
    "examples": sorted((ROOT / "examples").glob("*.yaml")),
    "karpenter-v1": sorted((ROOT / "examples" / "karpenter-v1").glob("*.yaml")),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_matches_golden(name: str) -> None:
    files = SCENARIOS[name]
    assert files, f"no YAML files for scenario {name}"
    inputs, errors = load_files(files)
    assert not errors, [str(e) for e in errors]
    results = solve_inputs(inputs, SnapshotSource().instance_types())
    actual = results.to_json()
    path = GOLDEN / f"{name}.json"
    if os.environ.get("NODEWRIGHT_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n")
    expected = json.loads(path.read_text())
    assert actual == expected


def test_examples_place_every_pod_and_respect_the_zone_spread() -> None:
    inputs, errors = load_files(SCENARIOS["examples"])
    assert not errors
    results = solve_inputs(inputs, SnapshotSource().instance_types())
    placed = [p for c in results.nodeclaims for p in c.pods] + [p for ps in results.existing.values() for p in ps]
    assert sorted(placed) == sorted(p.key for p in inputs.pending_pods)
    assert results.unschedulable == ()
    # shop/web spreads over zones with maxSkew 1: every claim holding web pods is pinned to one zone.
    zone_of = {n.name: n.labels["topology.kubernetes.io/zone"] for n in inputs.nodes}
    per_zone: dict[str, int] = {}
    for node, pods in results.existing.items():
        for pod in pods:
            if pod.startswith("shop/web-"):
                per_zone[zone_of[node]] = per_zone.get(zone_of[node], 0) + 1
    for claim in results.nodeclaims:
        web = [p for p in claim.pods if p.startswith("shop/web-")]
        if web:
            assert len(claim.zones) == 1, claim
            per_zone[claim.zones[0]] = per_zone.get(claim.zones[0], 0) + len(web)
    assert sum(per_zone.values()) == 12
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    gpu_claims = [c for c in results.nodeclaims if c.nodepool == "gpu"]
    assert gpu_claims and all(c.cheapest.instance_type.startswith(("g", "p")) for c in gpu_claims)
