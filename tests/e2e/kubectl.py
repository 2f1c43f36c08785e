"""kubectl for the end-to-end tests, built once from the Go module proxy with the ordinary `go` client.

`kubectl get -o wide` is how users read nodewright's printer columns, so the tests read them the same way.
The binary is a three-line `main` around `k8s.io/kubectl/pkg/cmd` at the release of the world's Kubernetes,
built into the binary cache beside the control plane (`$NODEWRIGHT_CACHE/kubectl/<version>/kubectl`) and
reused from there; a cold build takes a few minutes on two cores, a cached one nothing. Never committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from nodewright.localworld import world

# k8s.io/kubectl's release for Kubernetes v1.36.3 (staging modules are published as v0.<minor>.<patch>).
VERSION = "v0.36.3"
MAIN = """package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
"""


def binary() -> Path:
    """The kubectl binary, built first if the cache does not hold it."""
    target = world.cache_root() / "kubectl" / VERSION / "kubectl"
    if target.is_file():
        return target
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("kubectl is not cached and there is no `go` to build it with; install Go 1.26")
    with tempfile.TemporaryDirectory(prefix="kubectl-build-") as tmp:
        module = Path(tmp)
        (module / "main.go").write_text(MAIN)
        (module / "go.mod").write_text("module nodewright.local/kubectl\n\ngo 1.26\n")
        env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        for command in (
            [go, "get", f"k8s.io/kubectl@{VERSION}", f"k8s.io/component-base@{VERSION}"],
            [go, "mod", "tidy"],
            [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(module / "kubectl"), "."],
        ):
            subprocess.run(command, cwd=module, env=env, check=True, capture_output=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        shutil.copy2(module / "kubectl", partial)
        partial.replace(target)  # whole or not at all, should two sessions build at once
    return target


def kubectl(kubeconfig: str, *args: str) -> str:
    """Run kubectl against the world; returns its standard output (raises with its error output on failure)."""
    done = subprocess.run(
        [str(binary()), f"--kubeconfig={kubeconfig}", *args], capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def table(output: str) -> list[dict[str, str]]:
    """`kubectl get` output (one kind, or several kinds separated by blank lines) as rows keyed by column name.

    kubectl left-aligns each value under its column's header, so a row is cut where the header's words start
    (an empty cell stays empty instead of shifting the others).
    """
    rows: list[dict[str, str]] = []
    columns: list[tuple[str, int]] = []
    for line in output.splitlines():
        if not line.strip():
            columns = []
            continue
        if not columns:
            starts = [i for i, ch in enumerate(line) if ch != " " and (i == 0 or line[i - 1] == " ")]
            columns = [(line[start:].split()[0], start) for start in starts]
            continue
        row = {}
        for index, (name, start) in enumerate(columns):
            end = columns[index + 1][1] if index + 1 < len(columns) else len(line)
            row[name] = line[start:end].strip()
        rows.append(row)
    return rows
