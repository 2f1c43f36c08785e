"""`nodewright validate FILE...`: check NodePools, EC2NodeClasses and workloads before using them.

Prints one `ok` line per object when everything is valid (exit 0); otherwise prints every error to stderr,
each as `<file>: <kind>/<name>: <field path>: <what is wrong>`, and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from nodewright.model.inputs import ClusterInputs
from nodewright.model.loader import load_files


def add_parser(subparsers: Any) -> None:
    """Register the `validate` sub-command."""
    parser = subparsers.add_parser(
        "validate",
        help="check NodePool / EC2NodeClass / workload YAML files",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML files")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing when all objects are valid")
    parser.set_defaults(func=run)


def load_or_report(files: Sequence[str]) -> ClusterInputs | None:
    """Load the files; on any error print every one to stderr (and a count) and return None."""
    inputs, errors = load_files(files)
    if not errors:
        return inputs
    for error in errors:
        print(error, file=sys.stderr)
    print(f"{len(errors)} error{'s' if len(errors) != 1 else ''} found", file=sys.stderr)
    return None


def run(args: argparse.Namespace) -> int:
    """Validate the files named in `args.files`; 0 when all are valid, 1 otherwise."""
    inputs = load_or_report(args.files)
    if inputs is None:
        return 1
    if not args.quiet:
        for obj in inputs.objects:
            print(f"ok  {obj}")
        if not inputs.objects:
            print("no objects found", file=sys.stderr)
    return 0
