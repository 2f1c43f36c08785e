"""`nodewright simulate`: the JSON shape on the examples, and invalid input refused with named errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodewright.cli import main

EXAMPLES = sorted(str(p) for p in (Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def test_json_output_has_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--json", *EXAMPLES]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"nodeclaims", "existing", "unschedulable", "cost_per_hour", "nodeoverlays"}
    assert out["nodeoverlays"] == {"applied": [], "refused": []}
    claim = out["nodeclaims"][0]
    assert set(claim) == {
        "name", "nodepool", "instance_types", "capacity_types", "zones",
        "instance_type", "capacity_type", "zone", "price_per_hour", "pods", "price_overlay",
    }  # fmt: skip
    assert claim["price_overlay"] is None  # the examples have no NodeOverlay
    assert claim["instance_type"] == claim["instance_types"][0]
    assert out["cost_per_hour"] == pytest.approx(sum(c["price_per_hour"] for c in out["nodeclaims"]), abs=1e-6)


def test_table_output_ends_with_the_total(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", *EXAMPLES]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("TOTAL $") and "unschedulable" in last


def test_invalid_input_is_refused_with_the_field_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "pool.yaml"
    bad.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {weigth: 3}\n")
    assert main(["simulate", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{bad}: NodePool/x: spec.weigth:" in captured.err and "weight" in captured.err


OVERLAYS = """\
apiVersion: nodewright.io/v1alpha1
kind: NodeOverlay
metadata: {name: half-c7i}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [c7i]}]
  priceAdjustment: "-50%"
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: team-a}
spec:
  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [default]}]
  price: "0.001"
"""


def test_json_names_the_nodeoverlay_behind_a_price_and_the_refused_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--json", *EXAMPLES]) == 0
    plain = json.loads(capsys.readouterr().out)
    overlays = tmp_path / "overlays.yaml"
    overlays.write_text(OVERLAYS)
    assert main(["simulate", "--json", *EXAMPLES, str(overlays)]) == 0
    out = json.loads(capsys.readouterr().out)
    overlaid = [c for c in out["nodeclaims"] if c["price_overlay"] == "half-c7i"]
    assert overlaid and all(c["instance_type"].startswith("c7i.") for c in overlaid)
    assert not any(c["instance_type"].startswith("c7i.") for c in plain["nodeclaims"])  # only with the overlay
    assert out["cost_per_hour"] < plain["cost_per_hour"]
    [refused] = out["nodeoverlays"]["refused"]
    assert (refused["name"], refused["reason"]) == ("team-a", "UnsupportedRequirement")
    assert out["nodeoverlays"]["applied"] == ["half-c7i"]
    assert main(["simulate", *EXAMPLES, str(overlays)]) == 0
    table = capsys.readouterr().out
    assert "price set by NodeOverlay half-c7i" in table and "team-a: UnsupportedRequirement" in table


def _program(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m nodewright ARGV` as cli.program runs it, with an atexit hook that says whether the interpreter's
    own exit ran."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('interpreter exit', file=sys.stderr))\n"
        f"sys.argv = ['nodewright', *{list(argv)!r}]\n"
        "from nodewright.cli import program\n"
        "program()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # its output buffered, as by default
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)


def test_the_program_ends_at_once_after_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m nodewright simulate` ends its process once its output is flushed (no interpreter teardown):
    the same output and exit code as `main`; other commands, and a refused input, exit as usual otherwise."""
    assert main(["simulate", "--json", *EXAMPLES]) == 0
    expected = capsys.readouterr().out
    done = _program(tmp_path, "simulate", "--json", *EXAMPLES)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")
    bad = tmp_path / "pool.yaml"
    bad.write_text("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {weigth: 3}\n")
    refused = _program(tmp_path, "simulate", str(bad))
    assert refused.returncode == 1 and "spec.weigth" in refused.stderr and "interpreter exit" not in refused.stderr
    validated = _program(tmp_path, "validate", "-q", *EXAMPLES)
    assert (validated.returncode, validated.stderr) == (0, "interpreter exit\n")


def test_the_cycle_collector_rests_during_simulate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole command (load, catalog, solve, output) runs with the collector paused; it is back after."""
    import gc

    from nodewright.commands import simulate

    seen: list[bool] = []
    load, solve = simulate.load_or_report, simulate.solve_inputs
    monkeypatch.setattr(simulate, "load_or_report", lambda *a, **k: seen.append(gc.isenabled()) or load(*a, **k))
    monkeypatch.setattr(simulate, "solve_inputs", lambda *a: seen.append(gc.isenabled()) or solve(*a))
    assert gc.isenabled()
    assert main(["simulate", "--json", *EXAMPLES]) == 0
    assert seen == [False, False] and gc.isenabled()
