"""A spread's node filter judged once per claim shape (`Topology.admits`): claims of one requirement set and taints
are counted alike, so the answer kept for the first is each one's own; it changes how fast a plan is made, never
the plan."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nodewright.scheduling import solver as solver_module
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.classes import TopologyTerm
from nodewright.scheduling.topology import Topology

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.random_generator import generate  # noqa: E402


@pytest.mark.parametrize("seed", [4100, 7322])
def test_every_kept_answer_is_the_claims_own_and_claims_share_them(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    admits = Topology.admits
    claims_asked = [0]
    kept: dict[int, dict[object, bool]] = {}  # the answers kept, per solve's topology (the runs of a solve share them)

    def checked(self: Topology, term: TopologyTerm, b: Bin) -> bool:
        found = admits(self, term, b)
        labels = b.labels if b.kind == "node" else None
        assert found == term.node_filter.admits(labels, b.requirements, b.taints)
        if b.kind != "node":
            claims_asked[0] += 1
            kept[id(self.admitted)] = self.admitted  # type: ignore[assignment]
        return found

    monkeypatch.setattr(Topology, "admits", checked)
    cluster = generate(seed, 800)
    solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    answers = sum(len(a) for a in kept.values())
    assert 0 < answers < claims_asked[0], "claims of one shape must share an answer"
