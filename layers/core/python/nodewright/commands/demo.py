"""`nodewright demo`: the main job on the local world, with the example cluster in `examples/`.

Starts (or reuses) the local world, deploys nodewright into it, applies the examples and waits until
their pods run on nodes nodewright launched; the last line is a JSON summary
(`pods_total`, `pods_running`, `nodes`, `nodeclaims`, `cost_per_hour`, `seconds`). With `--simulate`
it only runs the scheduling simulation on the examples and prints the decisions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nodewright.commands import simulate


def add_parser(subparsers: Any) -> None:
    """Register the `demo` sub-command."""
    parser = subparsers.add_parser("demo", help="run the example cluster on the local world", description=__doc__)
    parser.add_argument("--examples", default="examples", help="folder with the example YAML (default: examples)")
    parser.add_argument("--simulate", action="store_true", help="only simulate the examples (no local world)")
    parser.add_argument("--json", action="store_true", help="with --simulate: print the decisions as JSON")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the pods to run")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every example pod runs (or, with --simulate, when the examples simulate)."""
    folder = Path(args.examples)
    files = sorted(str(p) for p in folder.glob("*.yaml"))
    if not files:
        print(f"{folder}: no YAML files found (run from the repository root or pass --examples)", file=sys.stderr)
        return 1
    if args.simulate:
        return simulate.run(argparse.Namespace(files=files, json=args.json))
    from nodewright.localworld import demo

    summary = demo.run(folder, args.timeout, log=lambda line: print(line, file=sys.stderr))
    demo.print_summary(summary)
    return 0 if summary["pods_total"] and summary["pods_running"] == summary["pods_total"] else 1
