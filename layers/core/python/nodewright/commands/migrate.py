"""`nodewright migrate [--write] [--role ROLE] [--ignore-defaults] FILE...`: Karpenter objects as nodewright.io/v1.

Reads Karpenter's objects of every API version and writes nodewright's:
- v1 NodePools and EC2NodeClasses change in two fields only (apiVersion, nodeClassRef.group), in place: comments,
  order and quoting stay;
- v1alpha5 Provisioners, v1alpha1 AWSNodeTemplates and v1beta1 NodePools / EC2NodeClasses are converted as
  Karpenter's own conversion code, its converter and its migration guides do (kubelet settings move to the
  EC2NodeClass, one class per distinct kubelet);
- `kubectl get -o yaml` output (a List, or one object) is read alike; server fields and status are dropped.
A document migrate cannot convert is an error. Without --write the result goes to stdout; with --write each file
is rewritten in place. Changes and notes go to stderr. Exit 1, with nothing written, when any document cannot be
migrated (each is named, with the field and the fix).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nodewright.migrate.common import ROLE_PLACEHOLDER, MigrationError, Options
from nodewright.migrate.documents import migrate_texts, render
from nodewright.migrate.karpenter_v1 import Change

__all__ = ["Change", "MigrationError", "add_parser", "migrate_text", "run"]


def add_parser(subparsers: Any) -> None:
    """Register the `migrate` sub-command."""
    parser = subparsers.add_parser(
        "migrate",
        help="convert Karpenter NodePools / EC2NodeClasses / Provisioners / AWSNodeTemplates to nodewright.io/v1",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML files")
    parser.add_argument("-w", "--write", action="store_true", help="rewrite the files in place")
    parser.add_argument(
        "--role",
        default=ROLE_PLACEHOLDER,
        help="node IAM role for EC2NodeClasses converted from objects that name no instance profile "
        f"(default: the placeholder {ROLE_PLACEHOLDER}, for envsubst)",
    )
    parser.add_argument(
        "--ignore-defaults",
        action="store_true",
        help="do not write out the requirements v1alpha5 defaulted (linux, amd64, on-demand, c/m/r > gen 2)",
    )
    parser.set_defaults(func=run)


def migrate_text(text: str, source: str, options: Options | None = None) -> tuple[str, list[Change]]:
    """One file's text migrated, and the fields rewritten in place in its v1 documents; raises MigrationError
    (every problem, one per line)."""
    (result,) = migrate_texts([(source, text)], options or Options())
    return render(result), result.changes


def run(args: argparse.Namespace) -> int:
    """Migrate `args.files`; 0 when every document could be migrated, 1 (nothing written) otherwise."""
    options = Options(role=args.role, ignore_defaults=args.ignore_defaults)
    texts: list[tuple[str, str]] = []
    for name in args.files:
        try:
            texts.append((name, Path(name).read_text(encoding="utf-8")))
        except OSError as error:
            print(f"{name}: cannot read the file: {error.strerror or error}", file=sys.stderr)
            return 1
    try:
        results = migrate_texts(texts, options)
    except MigrationError as error:
        print(error, file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return 1
    for result in results:
        for line in [*map(str, result.changes), *result.notes]:
            print(line, file=sys.stderr)
        converted = [item for piece in result.pieces for item in piece.objects]
        for item in converted:
            print(f"{result.source}: {item.kind}/{item.name}: written as {item.doc['apiVersion']}", file=sys.stderr)
        if converted:
            print(f"{result.source}: comments in converted documents are not kept", file=sys.stderr)
    if any(ROLE_PLACEHOLDER in render(r) for r in results) and args.role == ROLE_PLACEHOLDER:
        print(
            f"EC2NodeClass role is the placeholder {ROLE_PLACEHOLDER}: substitute your node role (envsubst) or "
            "pass --role",
            file=sys.stderr,
        )
    for index, result in enumerate(results):
        text = render(result)
        if args.write:
            Path(result.source).write_text(text, encoding="utf-8")
        else:
            if index:
                sys.stdout.write("---\n")
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
