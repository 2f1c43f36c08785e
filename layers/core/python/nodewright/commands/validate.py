"""`nodewright validate FILE...`: check NodePools, EC2NodeClasses and workloads before using them.

Prints one `ok` line per object when everything is valid (exit 0); otherwise prints every error to stderr,
each as `<file>: <kind>/<name>: <field path>: <what is wrong>`, and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

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


def run(args: argparse.Namespace) -> int:
    """Validate the files named in `args.files`; 0 when all are valid, 1 otherwise."""
    inputs, errors = load_files(args.files)
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        count = len(errors)
        print(f"{count} error{'s' if count != 1 else ''} found", file=sys.stderr)
        return 1
    if not args.quiet:
        for obj in inputs.objects:
            print(f"ok  {obj}")
        if not inputs.objects:
            print("no objects found", file=sys.stderr)
    return 0
