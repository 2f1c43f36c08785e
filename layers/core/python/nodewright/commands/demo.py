"""`nodewright demo`: the main job on the example cluster in `examples/`.

Validates the examples, then runs the scheduling simulation on them and prints the decisions. Once the
local world can run the provisioner (see the README), the demo will run there instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nodewright.commands import simulate


def add_parser(subparsers: Any) -> None:
    """Register the `demo` sub-command."""
    parser = subparsers.add_parser("demo", help="simulate the example cluster", description=__doc__)
    parser.add_argument("--examples", default="examples", help="folder with the example YAML (default: examples)")
    parser.add_argument("--json", action="store_true", help="print the decisions as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Simulate every YAML file directly in the examples folder."""
    folder = Path(args.examples)
    files = sorted(str(p) for p in folder.glob("*.yaml"))
    if not files:
        print(f"{folder}: no YAML files found (run from the repository root or pass --examples)", file=sys.stderr)
        return 1
    print(f"simulating {', '.join(files)}", file=sys.stderr)
    return simulate.run(argparse.Namespace(files=files, json=args.json))
