"""`python -m tests.bench`: print the scheduling benchmarks, one line per figure (see the README).

    python -m tests.bench                  # the mix at 1k, 5k, 10k, 20k pods and 24 packing workloads
    python -m tests.bench --quick          # CI smoke: the 1k mix and 5 packing workloads
    python -m tests.bench --only packing   # or --only mix

Lines that start with `#` are notes and invariant violations, not figures. The exit status is 1 when
any invariant was violated (a solver bug), never because a figure is slow: figures on a shared
machine are noisy and are for people to read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from tests.bench import mix, packing

_SHOWN_PROBLEMS = 5  # per figure; the count is on the figure's line, the first few name the pods


def run(
    *,
    quick: bool = False,
    only: str | None = None,
    sizes: Sequence[int] | None = None,
    workloads: int | None = None,
    max_runs: int = 3,
    emit: Callable[[str], None] = print,
) -> int:
    """Run the selected benchmarks, emitting each line as it is measured; returns the violation count."""
    violations = 0
    if only in (None, "mix"):
        emit("# scheduling: solve() wall time, median of runs; peak_mib from tracemalloc (Python heap)")
        for size in sizes or (mix.SIZES[:1] if quick else mix.SIZES):
            figure, problems = mix.measure(size, max_runs)
            emit(figure.line())
            violations += len(problems)
            for problem in problems[:_SHOWN_PROBLEMS]:
                emit(f"# violation: {problem}")
    if only in (None, "packing"):
        emit(
            "# packing: ratio = ours / aggregate LP bound; ratio_fit = ours / per-type LP bound (tighter); "
            "ratio_cfg = ours / configuration LP bound (tightest)"
        )
        count = workloads or (packing.QUICK_WORKLOADS if quick else packing.WORKLOADS)
        figures = []
        for number in range(count):
            figure, problems = packing.measure(packing.make_workload(number))
            figures.append(figure)
            emit(figure.line())
            violations += len(problems)
            for problem in problems[:_SHOWN_PROBLEMS]:
                emit(f"# violation: {problem}")
        emit(packing.summary(figures))
    return violations


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small subset for CI smoke runs")
    parser.add_argument("--only", choices=("mix", "packing"), help="run one benchmark only")
    parser.add_argument("--sizes", type=int, nargs="+", help="mix sizes in pods (overrides the defaults)")
    parser.add_argument("--workloads", type=int, help="number of packing workloads (overrides the defaults)")
    args = parser.parse_args(argv)

    def emit(line: str) -> None:
        # Flushed per line so a long run shows progress when piped (make, tee, CI logs).
        print(line, flush=True)

    violations = run(quick=args.quick, only=args.only, sizes=args.sizes, workloads=args.workloads, emit=emit)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
