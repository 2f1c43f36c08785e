"""Smoke test for the scale-down benchmark (`python -m tests.bench.consolidation`): both figures print, and the
invariants hold (consolidation never raises the bill; the configuration-LP bound stays below what it reaches).
Timings are never asserted on."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("highspy")  # the LP bound: benchmark-only dependency (the `bench` extra)

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench import consolidation  # noqa: E402


def test_the_tick_figure_decides_on_a_scaled_in_fleet() -> None:
    line = consolidation.tick_figure(pods=200, runs=1)
    fields = dict(part.split("=", 1) for part in line.split(" methods: ")[0].split()[1:])
    assert int(fields["nodes"]) > 0 and int(fields["pods"]) > 0
    assert int(fields["decisions"]) > 0, line  # a third of every Deployment left: there is something to take
    assert all(re.search(rf" {method}=\d+ms/\d+", line) for method in ("emptiness", "drift", "multi-node")), line


def test_consolidation_lowers_the_bill_and_stays_above_the_bound() -> None:
    figure = consolidation.quality(1, consolidation.on_demand_cluster())
    assert figure.after <= figure.before
    assert figure.bound <= figure.after * (1 + 1e-6)
    assert 0.0 <= figure.reached <= 1.0 + 1e-6
    assert consolidation.QualityFigure.line(figure).startswith("consolidation workload=01 ")


def test_the_features_tick_has_overlays_buffers_and_repairs_in_play() -> None:
    line = consolidation.tick_figure(pods=2_000, runs=1, features=True)
    fields = dict(part.split("=", 1) for part in line.split(" methods: ")[0].split()[1:])
    assert line.startswith("tick_features ")
    assert int(fields["overlays"]) == len(consolidation.OVERLAYS), line
    assert int(fields["buffer_pods_hosted"]) == 4 * consolidation.BUFFERS, line
    assert 0 < int(fields["repairs_due"]) <= int(fields["unhealthy"]), line
    assert re.search(r" repair=\d+ms/[1-9]\d*", line), line
