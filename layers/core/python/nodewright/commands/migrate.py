"""`nodewright migrate [--write] FILE...`: Karpenter v1 NodePools and EC2NodeClasses as nodewright.io/v1 objects.

In a cluster nodewright acts on its own `nodewright.io/v1` objects only, so it can run beside Karpenter. This
rewrites exactly two fields and nothing else: `apiVersion` (`karpenter.sh/v1` NodePool, `karpenter.k8s.aws/v1`
EC2NodeClass -> `nodewright.io/v1`) and a NodePool's `spec.template.spec.nodeClassRef.group`
(`karpenter.k8s.aws` -> `nodewright.io`). Comments, order, quoting and every other document stay as they are;
each rewritten document is read back and compared with the original, field by field, before it is written.

Without --write the result goes to stdout; with --write each file is rewritten in place. What changed is listed on
stderr, one line per field. Exit 1 when a document cannot be rewritten that way (it is named, with the fix).
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

GROUP = "nodewright.io"
API_VERSION = f"{GROUP}/v1"
# kind -> the Karpenter apiVersion that kind is migrated from.
MIGRATED = {"NodePool": "karpenter.sh/v1", "EC2NodeClass": "karpenter.k8s.aws/v1"}
KARPENTER_NODECLASS_GROUP = "karpenter.k8s.aws"
_SEPARATOR = re.compile(r"^---[ \t]*(#.*)?$", re.MULTILINE)


class MigrationError(ValueError):
    """A document that cannot be rewritten in place; the message names it and the fix."""


@dataclass(frozen=True, slots=True)
class Change:
    """One field rewritten in one object."""

    source: str
    kind: str
    name: str
    path: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.source}: {self.kind}/{self.name}: {self.path}: {self.before} -> {self.after}"


def add_parser(subparsers: Any) -> None:
    """Register the `migrate` sub-command."""
    parser = subparsers.add_parser(
        "migrate",
        help="rewrite Karpenter v1 NodePools / EC2NodeClasses to nodewright.io/v1",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML files")
    parser.add_argument("-w", "--write", action="store_true", help="rewrite the files in place")
    parser.set_defaults(func=run)


def _expected(doc: dict[str, Any]) -> dict[str, Any]:
    """What `doc` must read as after the migration: the two fields changed, nothing else."""
    out = copy.deepcopy(doc)
    out["apiVersion"] = API_VERSION
    ref = _node_class_ref(out)
    if ref is not None and ref.get("group") == KARPENTER_NODECLASS_GROUP:
        ref["group"] = GROUP
    return out


def _node_class_ref(doc: dict[str, Any]) -> dict[str, Any] | None:
    if doc.get("kind") != "NodePool":
        return None
    ref = ((((doc.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef")) or None
    return ref if isinstance(ref, dict) else None


def _changes(doc: dict[str, Any], source: str) -> list[Change]:
    kind, name = str(doc.get("kind")), str((doc.get("metadata") or {}).get("name", ""))
    changes = [Change(source, kind, name, "apiVersion", str(doc["apiVersion"]), API_VERSION)]
    ref = _node_class_ref(doc)
    if ref is not None and ref.get("group") == KARPENTER_NODECLASS_GROUP:
        path = "spec.template.spec.nodeClassRef.group"
        changes.append(Change(source, kind, name, path, KARPENTER_NODECLASS_GROUP, GROUP))
    return changes


def migrate_document(text: str, source: str) -> tuple[str, list[Change]]:
    """One YAML document's text, migrated (or as it was when it is not a Karpenter NodePool/EC2NodeClass)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise MigrationError(f"{source}: not valid YAML: {error}") from error
    if not isinstance(doc, dict) or MIGRATED.get(str(doc.get("kind"))) != doc.get("apiVersion"):
        return text, []
    name = (doc.get("metadata") or {}).get("name", "<unnamed>")
    kind = str(doc["kind"])
    rewritten = re.sub(
        rf"^(apiVersion:[ \t]*)([\"']?){re.escape(str(doc['apiVersion']))}\2",
        rf"\g<1>\g<2>{API_VERSION}\g<2>",
        text,
        count=1,
        flags=re.MULTILINE,
    )
    if _node_class_ref(doc) is not None:
        rewritten = re.sub(
            rf"(\bgroup:[ \t]*)([\"']?){re.escape(KARPENTER_NODECLASS_GROUP)}\2(?=[\s,}}]|$)",
            rf"\g<1>\g<2>{GROUP}\g<2>",
            rewritten,
            count=1,
        )
    if yaml.safe_load(rewritten) != _expected(doc):
        raise MigrationError(
            f"{source}: {kind}/{name}: could not rewrite apiVersion and nodeClassRef.group in place without "
            f"touching anything else; set apiVersion: {API_VERSION} (and nodeClassRef.group: {GROUP}) by hand"
        )
    return rewritten, _changes(doc, source)


def migrate_text(text: str, source: str) -> tuple[str, list[Change]]:
    """A multi-document YAML file's text, every Karpenter NodePool and EC2NodeClass in it migrated."""
    if "kind: List" in text and isinstance(loaded := yaml.safe_load(text), dict) and loaded.get("kind") == "List":
        raise MigrationError(
            f"{source}: a List (kubectl get -o yaml output) carries server fields (uid, resourceVersion, status) "
            "that do not belong in a new object; keep the NodePool and EC2NodeClass manifests you applied, or "
            "export one document per object, and migrate those"
        )
    pieces: list[str] = []
    changes: list[Change] = []
    start = 0
    for separator in [*_SEPARATOR.finditer(text), None]:
        end = separator.start() if separator is not None else len(text)
        body, found = migrate_document(text[start:end], source)
        pieces.append(body)
        changes.extend(found)
        if separator is not None:
            pieces.append(separator.group(0))
            start = separator.end()
    return "".join(pieces), changes


def run(args: argparse.Namespace) -> int:
    """Migrate `args.files`; 0 when every document could be rewritten (or needed nothing), 1 otherwise."""
    outputs: list[tuple[Path, str]] = []
    failed = False
    for name in args.files:
        path = Path(name)
        try:
            text = path.read_text(encoding="utf-8")
            migrated, changes = migrate_text(text, name)
        except OSError as error:
            print(f"{name}: cannot read the file: {error.strerror or error}", file=sys.stderr)
            failed = True
            continue
        except MigrationError as error:
            print(error, file=sys.stderr)
            failed = True
            continue
        for change in changes:
            print(change, file=sys.stderr)
        if not changes:
            print(f"{name}: no Karpenter NodePool or EC2NodeClass; left as it is", file=sys.stderr)
        outputs.append((path, migrated))
    if failed:
        return 1
    for index, (path, migrated) in enumerate(outputs):
        if args.write:
            path.write_text(migrated, encoding="utf-8")
        else:
            if index:
                sys.stdout.write("---\n")
            sys.stdout.write(migrated if migrated.endswith("\n") else migrated + "\n")
    return 0
