"""`nodewright simulate`: the JSON shape on the examples, and invalid input refused with named errors."""

from __future__ import annotations

import json
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
