"""The local world synthesizes the CDK app with the context a bench or test asks for (clusterNodes sizes the
planner's memory: infra/sizing.py), besides the world's own values."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodewright.localworld import deploy, world


def _state(tmp_path: Path) -> world.WorldState:
    return world.WorldState(
        state_dir=str(tmp_path),
        cluster="c1",
        region="us-east-1",
        endpoint_url="http://127.0.0.1:1",
        api_server="https://127.0.0.1:2",
        kubeconfig="",
        ca_file="",
        node_role_name="",
        node_role_arn="",
        vpc_id="",
        subnet_ids={},
        security_group_id="",
        pids={},
        logs={},
        ready_seconds=0.0,
        short_waits=True,
    )


def _synthesized_argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> list[str]:
    seen: list[list[str]] = []

    def run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(deploy.subprocess, "run", run)
    deploy.synthesize(_state(tmp_path), lambda _line: None, **kwargs)
    [argv] = seen
    return argv


def _context(argv: list[str]) -> dict[str, str]:
    values = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"]
    return dict(value.split("=", 1) for value in values)


def test_extra_context_reaches_cdk_synth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = _synthesized_argv(tmp_path, monkeypatch, context={"clusterNodes": "3000"})
    assert _context(argv) == {
        "clusterName": "c1",
        "catalog": "snapshot",
        "stackName": deploy.STACK,
        "clusterNodes": "3000",
    }


def test_without_extra_context_only_the_worlds_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = _synthesized_argv(tmp_path, monkeypatch)
    assert _context(argv) == {"clusterName": "c1", "catalog": "snapshot", "stackName": deploy.STACK}
