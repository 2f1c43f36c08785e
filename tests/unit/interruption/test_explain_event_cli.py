"""`nodewright explain-event`: the documented JSON shape on every example event, the readable line, events
nodewright ignores, the rebalance modes, and malformed or unreadable input refused with the field named."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from nodewright.cli import main

EVENTS = Path(__file__).resolve().parents[3] / "examples" / "events"


def explain_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["explain-event", "--json", *args]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    assert set(out) == {"action", "instances", "reason", "deadline"}
    return out


@pytest.mark.parametrize(
    ("example", "action", "instances", "deadline"),
    [
        ("spot-interruption-warning.json", "interrupt", ["i-0a1b2c3d4e5f60718"], "2026-03-01T12:02:00Z"),
        ("rebalance-recommendation.json", "rebalance", ["i-0a1b2c3d4e5f60718"], None),
        ("state-change-stopping.json", "interrupt", ["i-0f9e8d7c6b5a40312"], "2026-03-01T12:10:00Z"),
        (
            "health-scheduled-change.json",
            "interrupt",
            ["i-0a1b2c3d4e5f60718", "i-0f9e8d7c6b5a40312"],
            "2026-03-15T09:00:00Z",
        ),
        (
            "capacity-reservation-interruption-warning.json",
            "interrupt",
            ["i-0c3d5e7f9a1b20466"],
            "2026-03-01T12:22:00Z",
        ),
    ],
)
def test_each_example_is_explained(
    capsys: pytest.CaptureFixture[str], example: str, action: str, instances: list[str], deadline: str | None
) -> None:
    out = explain_json(capsys, str(EVENTS / example))
    assert (out["action"], out["instances"], out["deadline"]) == (action, instances, deadline)
    assert "assuming the instances belong to this cluster" in str(out["reason"])


def test_spot_warning_says_its_offering_is_marked(capsys: pytest.CaptureFixture[str]) -> None:
    out = explain_json(capsys, str(EVENTS / "spot-interruption-warning.json"))
    assert "forcefully by 2026-03-01T12:02:00Z" in str(out["reason"])
    assert "marked unavailable for 180 s" in str(out["reason"])


def test_readable_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain-event", str(EVENTS / "spot-interruption-warning.json")]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("INTERRUPT: i-0a1b2c3d4e5f60718 - Spot interruption warning (terminate)")


def test_rebalance_modes(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EVENTS / "rebalance-recommendation.json")
    assert "PreferNoSchedule" in str(explain_json(capsys, path)["reason"])
    assert "voluntary disruption" in str(explain_json(capsys, "--rebalance", "drain", path)["reason"])
    ignored = explain_json(capsys, "--rebalance", "ignore", path)
    assert ignored["action"] == "ignore" and ignored["deadline"] is None


def test_an_event_nodewright_does_not_act_on_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    event = json.loads((EVENTS / "state-change-stopping.json").read_text())
    event["detail"]["state"] = "running"
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(event)))
    out = explain_json(capsys, "-")
    assert out["action"] == "ignore" and out["deadline"] is None
    assert "'running' is not one nodewright acts on" in str(out["reason"])
    assert "assuming" not in str(out["reason"])  # ownership did not matter


def test_malformed_event_exits_non_zero_naming_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    path = EVENTS / "malformed-spot-warning.json"
    assert main(["explain-event", "--json", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == f"{path}: detail.instance-id: missing"


def test_unreadable_and_non_json_files_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain-event", str(tmp_path / "absent.json")]) == 1
    assert "absent.json: cannot read" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    assert main(["explain-event", str(broken)]) == 1
    assert "broken.json: not JSON" in capsys.readouterr().err
