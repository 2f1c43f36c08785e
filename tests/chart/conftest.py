"""Fixtures for the chart's tests: the helm binary (built from the Go module proxy into the cache, like the
local world's control plane) and a renderer."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "nodewright"
CRD_CHART = ROOT / "charts" / "nodewright-crd"
REQUIRED = (
    "clusterName=demo",
    "region=us-east-1",
    "provisionerFunction=arn:aws:lambda:us-east-1:123456789012:function:p",
)


def helm_binary() -> Path:
    """The cached helm (scripts/build-helm.sh: a cache hit in milliseconds, a cold build in minutes)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-helm.sh")], capture_output=True, text=True, timeout=1800, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def helm() -> Path:
    return helm_binary()


class Rendered:
    """`helm template` output: every document, and lookups by kind and name."""

    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.docs = docs

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self.docs if d["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        [doc] = [d for d in self.of_kind(kind) if name is None or d["metadata"]["name"] == name]
        return doc


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="session")
def render(helm: Path) -> Any:
    def rendered(*sets: str, namespace: str = "nodewright", release: str = "nodewright") -> Rendered:
        args = ["template", release, str(CHART), "-n", namespace, "--include-crds"]
        for value in (*REQUIRED, *sets):
            args += ["--set", value]
        done = run_helm(helm, *args)
        assert done.returncode == 0, done.stderr
        return Rendered([d for d in yaml.safe_load_all(done.stdout) if d])

    return rendered


@pytest.fixture(scope="session")
def refused(helm: Path) -> Any:
    """`helm template` with the required values and `sets`, expected to fail: returns its stderr."""

    def failed(*sets: str, namespace: str = "nodewright") -> str:
        args = ["template", "nodewright", str(CHART), "-n", namespace]
        for value in (*REQUIRED, *sets):
            args += ["--set", value]
        done = run_helm(helm, *args)
        assert done.returncode != 0, done.stdout[-2000:]
        return done.stderr

    return failed
