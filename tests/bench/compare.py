"""`python -m tests.bench.compare`: a benchmark run against this tree's solver and another commit's, side by side.

    python -m tests.bench.compare --ref main -- tests.bench.hetero --sizes 10000 --runs 3
    python -m tests.bench.compare --ref main --rounds 3 -- tests.bench.consolidation --only tick

The other commit's `layers/core/python` is exported (`git archive`) to a temporary directory; each round runs the
benchmark module once with each solver (the order alternating from round to round, so neither side always runs on
the warmer or the quieter machine), the benchmark's own code always from this tree (entries already on
`PYTHONPATH`, such as a private site with a dependency the venv lacks, follow both). Every line the benchmark prints
is shown with the side that printed it; then, per figure (a line's words before its first number), the
median over rounds of each numeric field the two sides share, and this tree's over the other's. On a shared
machine wall times are noisy: compare `cpu_*` fields and ratios from one run, not figures from different runs.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = "layers/core/python"
_FIELD = re.compile(r"(\w+)=(-?\d+(?:\.\d+)?)(?=\s|$)")
_ANY_FIELD = re.compile(r"(\w+)=(\S+)")
# Fields that name a figure (which cluster, how many pods) rather than measure it.
_NAMING = ("cluster", "pods", "nodes", "pending", "workload", "bound_pods", "mix", "input")


def export(ref: str, into: Path) -> Path:
    """The commit's core package, extracted under `into`; returns the directory to put on PYTHONPATH."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, CORE], check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryFile() as raw:
        raw.write(archive)
        raw.seek(0)
        with tarfile.open(fileobj=raw) as tar:
            tar.extractall(into, filter="data")
    return into / CORE


def compile_ahead(core: Path) -> None:
    """Byte-compile a core package, as an install is: a fresh export (or, with PYTHONDONTWRITEBYTECODE set, an edited
    tree) would otherwise compile its modules again in every process a benchmark starts, on one side only."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(core)], check=True, capture_output=True)


def run_side(core: Path, module: str, args: Sequence[str]) -> list[str]:
    """The lines the benchmark module printed with this core package first on the path."""
    # The caller's PYTHONPATH stays after them: a private site with a dependency the venv does not have yet.
    extra = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(core), str(ROOT), *extra])}
    done = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):  # 1: the benchmark found invariant violations, which it printed
        raise RuntimeError(f"{module} failed with {core}:\n{done.stderr[-3000:]}")
    return [line for line in done.stdout.splitlines() if line.strip()]


def figure_key(line: str) -> str:
    """What a figure line is about: its leading words and naming fields (cluster, pods, ...)."""
    head = line.split("=", 1)[0].rsplit(" ", 1)[0]
    naming = " ".join(f"{k}={v}" for k, v in _ANY_FIELD.findall(line) if k in _NAMING)
    return f"{head} {naming}".strip()


def summary(by_side: dict[str, list[list[str]]], sides: Sequence[str]) -> list[str]:
    """Per figure, the median of each shared numeric field per side and the ratio of the last side's over the
    first side's."""
    values: dict[str, dict[str, dict[str, list[float]]]] = {}
    order: list[str] = []
    for side in sides:
        for lines in by_side[side]:
            for line in lines:
                if line.startswith("#"):
                    continue
                key = figure_key(line)
                if key not in values:
                    values[key] = {}
                    order.append(key)
                fields = values[key].setdefault(side, {})
                for name, number in _FIELD.findall(line):
                    if name not in _NAMING:
                        fields.setdefault(name, []).append(float(number))
    out: list[str] = []
    first, last = sides[0], sides[-1]
    for key in order:
        per = values[key]
        if first not in per or last not in per:
            continue
        parts = []
        for name in per[first]:
            if name not in per[last]:
                continue
            a, b = statistics.median(per[first][name]), statistics.median(per[last][name])
            ratio = f"{b / a:.3f}" if a else "-"
            parts.append(f"{name}={a:g}/{b:g}({ratio})")
        out.append(f"compare {key}: {' '.join(parts)}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.compare", description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of the benchmark per side")
    parser.add_argument("module", help="the benchmark module, e.g. tests.bench.hetero")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments (after --)")
    args = parser.parse_args(argv)
    bench_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    sides = (args.ref, "tree")
    with tempfile.TemporaryDirectory(prefix="nodewright-compare-") as tmp:
        cores = {args.ref: export(args.ref, Path(tmp)), "tree": ROOT / CORE}
        for core in cores.values():
            compile_ahead(core)
        by_side: dict[str, list[list[str]]] = {side: [] for side in sides}
        for number in range(args.rounds):
            for side in sides if number % 2 == 0 else sides[::-1]:
                lines = run_side(cores[side], args.module, bench_args)
                by_side[side].append(lines)
                for line in lines:
                    print(f"[{side} round {number + 1}] {line}", flush=True)
    print(f"# compare: medians over {args.rounds} round(s), {args.ref} / tree (tree over {args.ref})")
    for line in summary(by_side, sides):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
