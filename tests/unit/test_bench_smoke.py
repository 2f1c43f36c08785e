"""Smoke test for the benchmark suite (`python -m tests.bench`): it runs, prints well-formed figures,
and the LP bounds it compares against stay below our price.

Figures are never asserted on (the machine is shared and timings are noise); the only numeric checks
are invariants: no solver violation and bound <= price, which is a theorem (see tests/bench/packing.py).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("highspy")  # benchmark-only dependency: the `bench` extra

# The benchmark is run as `python -m tests.bench` from the repository root; pytest does not put the
# root on sys.path (there is no tests/__init__.py), so the import needs it.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.__main__ import run  # noqa: E402

FIELD = r"[a-z_]+=[^\s=]+"
LINE = re.compile(rf"^(scheduling|packing) {FIELD}( {FIELD})*$")


def _fields(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split()[1:])


def test_quick_bench_prints_well_formed_figures_and_bounds_hold() -> None:
    lines: list[str] = []
    violations = run(quick=True, sizes=(120,), workloads=2, max_runs=1, emit=lines.append)

    figures = [line for line in lines if not line.startswith("#")]
    assert figures, lines
    for line in figures:
        assert LINE.match(line), f"malformed figure line: {line!r}"
    assert violations == 0, [line for line in lines if line.startswith("# violation")]

    (scheduling,) = [_fields(line) for line in figures if line.startswith("scheduling ")]
    assert scheduling["mix"] == "120"
    assert int(scheduling["nodeclaims"]) > 0
    for key in ("pods_per_s", "cpu_pods_per_s", "warm_pods_per_s", "seconds", "cost_per_hour", "peak_mib"):
        float(scheduling[key])

    packing = [_fields(line) for line in figures if line.startswith("packing workload=")]
    assert len(packing) == 2
    for fields in packing:
        ours, lp, lp_fit = float(fields["ours"]), float(fields["lp"]), float(fields["lp_fit"])
        assert 0 < lp <= lp_fit * (1 + 1e-6), fields  # the per-type LP only adds rows to the aggregate one
        assert lp_fit <= ours * (1 + 1e-6), fields
    (summary,) = [_fields(line) for line in figures if "median_ratio=" in line]
    assert float(summary["worst_ratio_fit"]) >= 1 - 1e-6
