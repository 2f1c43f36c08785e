"""Smoke test for `python -m tests.bench.simulate_cli`: both inputs describe the same pods, and a small run prints one
line per input with the hash of its output. Timings are never asserted on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench import simulate_cli  # noqa: E402


def test_the_pod_documents_are_the_deployments_replicas() -> None:
    deployments = [d for d in simulate_cli.documents("deployments", 3) if d["kind"] == "Deployment"]
    pods = [d for d in simulate_cli.documents("pods", 3) if d["kind"] == "Pod"]
    assert len(deployments) == simulate_cli.WORKLOADS and len(pods) == 3 * simulate_cli.WORKLOADS
    by_app = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in deployments}
    for pod in pods:
        template = by_app[pod["metadata"]["labels"]["app"]]
        # What the template says is in the pod as it is; the API server's defaults come on top.
        assert {k: v for k, v in pod["spec"].items() if k in template and k != "containers"} == {
            k: v for k, v in template.items() if k != "containers"
        }
        container, wanted = pod["spec"]["containers"][0], template["containers"][0]
        assert {k: container[k] for k in wanted} == wanted


def test_no_two_pod_documents_are_alike_but_for_their_name() -> None:
    pods = [d for d in simulate_cli.documents("pods", 5) if d["kind"] == "Pod"]
    for key in ("name", "uid", "resourceVersion"):
        assert len({p["metadata"][key] for p in pods}) == len(pods)
    unnamed = {repr({**p, "metadata": {k: v for k, v in p["metadata"].items() if k != "name"}}) for p in pods}
    assert len(unnamed) == len(pods)
    assert all(p["status"]["phase"] == "Pending" and p["metadata"]["managedFields"] for p in pods)


def test_a_small_run_prints_one_line_per_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate_cli.main(["--replicas", "2", "--runs", "2"]) == 0  # two runs of an input must print one plan
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("simulate ")]
    assert [line.split()[1:3] for line in lines] == [
        ["input=deployments", "pods=80"],
        ["input=pods", "pods=80"],
        ["input=pods-json", "pods=80"],
    ]
    assert all(len(line.rsplit("sha=", 1)[1]) == 12 for line in lines)
    assert lines[1].rsplit("sha=", 1)[1] == lines[2].rsplit("sha=", 1)[1]  # the same objects, the same plan
