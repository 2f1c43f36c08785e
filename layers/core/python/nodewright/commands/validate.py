"""`nodewright validate FILE...`: check NodePools, EC2NodeClasses, NodeOverlays and workloads before using them.

Prints one `ok` line per object when everything is valid (exit 0); otherwise prints every error to stderr,
each as `<file>: <kind>/<name>: <field path>: <what is wrong>`, and exits 1.

With `--node-role NAME` (repeatable; default: $NODEWRIGHT_NODE_ROLE and $NODEWRIGHT_NODE_ROLES, which the
local world exports) an EC2NodeClass whose spec.role is none of them is an error: the stack's node role and its
`nodeRoles` context are the only roles nodewright may pass to EC2.

With `--previous FILE` (repeatable) each NodePool is also checked as an update of the NodePool of the same name in
those files, as the CRD's transition rule checks it: a pool cannot turn static (spec.replicas added) or dynamic
(removed) after creation.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from nodewright import settings
from nodewright.model.inputs import ClusterInputs
from nodewright.model.loader import load_files
from nodewright.model.parse import nodepool_update_problems
from nodewright.model.roles import role_errors


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
    parser.add_argument(
        "--node-role",
        action="append",
        default=None,
        metavar="NAME",
        help="a node role EC2NodeClasses may name (repeatable; the stack's NodeRoleName output and nodeRoles)",
    )
    parser.add_argument(
        "--previous",
        action="append",
        default=[],
        metavar="FILE",
        help="the NodePools as they are now (e.g. kubectl get nodepools -o yaml): each pool in FILE... is checked as "
        "an update of the one of the same name, as the CRD's transition rules check it (spec.replicas)",
    )
    parser.set_defaults(func=run)


def load_or_report(files: Sequence[str], summaries: bool = True) -> ClusterInputs | None:
    """Load the files; on any error print every one to stderr (and a count) and return None. `summaries`: give
    each object the one-line summary `validate` prints (`model.loader.load_files`)."""
    inputs, errors = load_files(files, summaries)
    if not errors:
        return inputs
    for error in errors:
        print(error, file=sys.stderr)
    print(f"{len(errors)} error{'s' if len(errors) != 1 else ''} found", file=sys.stderr)
    return None


def node_roles(given: Sequence[str] | None) -> list[str]:
    """The roles to check `spec.role` against: the flags, else the environment; empty means no check."""
    if given:
        return list(given)
    stack_role = os.environ.get(settings.NODE_ROLE, "").strip()
    return [r for r in (stack_role, *settings.node_roles(os.environ)) if r]


def run(args: argparse.Namespace) -> int:
    """Validate the files named in `args.files`; 0 when all are valid, 1 otherwise."""
    inputs = load_or_report(args.files)
    if inputs is None:
        return 1
    roles = node_roles(args.node_role)
    if roles:
        sources = {o.name: o.source for o in inputs.objects if o.kind == "EC2NodeClass"}
        errors = role_errors(inputs.nodeclasses, roles, sources)
        for error in errors:
            print(error, file=sys.stderr)
        if errors:
            print(f"{len(errors)} error{'s' if len(errors) != 1 else ''} found", file=sys.stderr)
            return 1
    if args.previous:
        previous = load_or_report(args.previous, summaries=False)
        if previous is None:
            return 1
        before = {p.name: p for p in previous.nodepools}
        problems = [
            e for p in inputs.nodepools if p.name in before for e in nodepool_update_problems(before[p.name], p)
        ]
        for error in problems:
            print(error, file=sys.stderr)
        if problems:
            print(f"{len(problems)} error{'s' if len(problems) != 1 else ''} found", file=sys.stderr)
            return 1
    if not args.quiet:
        for obj in inputs.objects:
            print(f"ok  {obj}")
        if not inputs.objects:
            print("no objects found", file=sys.stderr)
    return 0
