"""Files of YAML documents -> migrated files: dispatch by apiVersion and kind, Lists expanded, kubelets placed.

Every document must be something `migrate` converts (a Karpenter Provisioner, AWSNodeTemplate, NodePool or
EC2NodeClass of any API version nodewright knows, or a `kubectl get -o yaml` List of them) or already nodewright's;
anything else is an error rather than a silent pass-through. Errors are collected over every document, and when
there is one no file is written.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from nodewright.migrate import (
    awsnodetemplate_v1alpha1,
    ec2nodeclass_v1beta1,
    karpenter_v1,
    kubelet,
    nodepool_v1beta1,
    provisioner_v1alpha5,
)
from nodewright.migrate.common import API_VERSION, Converted, MigrationError, Options, describe
from nodewright.migrate.karpenter_v1 import Change

_SEPARATOR = re.compile(r"^---[ \t]*(#.*)?$", re.MULTILINE)
KNOWN = (
    "karpenter.sh/v1alpha5 Provisioner, karpenter.k8s.aws/v1alpha1 AWSNodeTemplate, karpenter.sh/v1beta1 or v1 "
    "NodePool, karpenter.k8s.aws/v1beta1 or v1 EC2NodeClass, karpenter.sh/v1alpha1 NodeOverlay"
)


@dataclass(slots=True)
class Piece:
    """One part of an output file: text kept as written, or converted objects to write out.

    doc: for text kept as written, the v1 object it holds (as nodewright reads it), or None.
    """

    separator: str = ""
    text: str = ""
    objects: list[Converted] = field(default_factory=list)
    doc: dict[str, Any] | None = None


@dataclass(slots=True)
class Migrated:
    """A migrated file: its pieces, the in-place changes and the notes for stderr."""

    source: str
    pieces: list[Piece] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (user data) as `|` blocks, as people write them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.startswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def dump(doc: dict[str, Any]) -> str:
    """One object as YAML, keys in the order they were built."""
    return yaml.dump(doc, Dumper=_BlockDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


def convert_object(doc: Any, options: Options) -> list[Converted]:
    """One old-API object as nodewright.io/v1 objects (a NodePool's kubelet not yet placed)."""
    if not isinstance(doc, dict):
        raise MigrationError(f"a document is {type(doc).__name__}, not an object; migrate reads {KNOWN}")
    version, kind = doc.get("apiVersion"), doc.get("kind")
    if version == "karpenter.sh/v1alpha5" and kind == "Provisioner":
        return provisioner_v1alpha5.convert(doc, options)
    if version == "karpenter.k8s.aws/v1alpha1" and kind == "AWSNodeTemplate":
        return [awsnodetemplate_v1alpha1.convert(doc, options)]
    if version == "karpenter.sh/v1beta1" and kind == "NodePool":
        return [nodepool_v1beta1.convert(doc)]
    if version == "karpenter.k8s.aws/v1beta1" and kind == "EC2NodeClass":
        return [ec2nodeclass_v1beta1.convert(doc, options)]
    ours = version == API_VERSION and kind in ("NodePool", "EC2NodeClass")
    if karpenter_v1.is_karpenter_v1(doc) or ours or (version == f"{API_VERSION}alpha1" and kind == "NodeOverlay"):
        return [Converted(karpenter_v1.exported(doc))]
    raise MigrationError(
        f"{describe(doc)}: apiVersion {version} kind {kind} is not something migrate converts ({KNOWN}); "
        "give migrate only those (keep other manifests in other files)"
    )


def _document(text: str, separator: str, source: str, options: Options, out: Migrated) -> None:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise MigrationError(f"not valid YAML: {error}") from error
    if doc is None:
        out.pieces.append(Piece(separator, text=text))
    elif isinstance(doc, dict) and doc.get("kind") == "List":
        items = doc.get("items") or []
        out.pieces.append(Piece(separator, objects=[c for item in items for c in convert_object(item, options)]))
    elif isinstance(doc, dict) and doc.get("apiVersion") == API_VERSION:
        out.notes.append(f"{source}: {describe(doc)} is already {API_VERSION}; left as it is")
        out.pieces.append(Piece(separator, text=text, doc=doc))
    elif karpenter_v1.is_karpenter_v1(doc) and not karpenter_v1.is_exported(doc):
        rewritten = karpenter_v1.rewrite(text, doc, source)
        out.pieces.append(Piece(separator, text=rewritten, doc=karpenter_v1.expected(doc)))
        out.changes.extend(karpenter_v1.changes(doc, source))
    else:
        out.pieces.append(Piece(separator, objects=convert_object(doc, options)))


def migrate_texts(files: list[tuple[str, str]], options: Options) -> list[Migrated]:
    """Each (source, text) migrated; raises MigrationError naming every document that cannot be (one per line)."""
    results: list[Migrated] = []
    errors: list[str] = []
    for source, text in files:
        out = Migrated(source)
        start, before = 0, ""
        for separator in [*_SEPARATOR.finditer(text), None]:
            end = separator.start() if separator is not None else len(text)
            try:
                _document(text[start:end], before, source, options, out)
            except MigrationError as error:
                errors.append(f"{source}: {error}")
            if separator is not None:
                start, before = separator.end(), separator.group(0)
        results.append(out)
    if errors:
        raise MigrationError("\n".join(errors))
    _open_kubelet_targets(results)
    objects = [c for result in results for piece in result.pieces for c in piece.objects]
    extra = kubelet.place(objects)
    seen: dict[tuple[str, str], str] = {}
    for result in results:
        for piece in result.pieces:
            piece.objects = [
                o for c in piece.objects for o in [c, *(extra.get(c.name, []) if c.kind == "EC2NodeClass" else [])]
            ]
            for item in piece.objects or ([Converted(piece.doc)] if piece.doc else []):
                result.notes.extend(f"{result.source}: {note}" for note in item.notes)
                key = (item.kind, item.name)
                if key in seen:
                    errors.append(
                        f"{result.source}: {item.kind}/{item.name} is written twice (also from "
                        f"{seen[key]}); rename one, e.g. the AWSNodeTemplate or the inline provider's "
                        "Provisioner"
                    )
                seen[key] = result.source
    if errors:
        raise MigrationError("\n".join(errors))
    return results


def _open_kubelet_targets(results: list[Migrated]) -> None:
    """A v1 EC2NodeClass kept as text that must take a converted NodePool's kubelet is written out instead."""
    converted = [c for result in results for piece in result.pieces for c in piece.objects]
    have = {c.name for c in converted if c.kind == "EC2NodeClass"}
    wanted = {
        c.doc["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        for c in converted
        if c.kind == "NodePool" and c.kubelet is not None
    }
    for result in results:
        for piece in result.pieces:
            doc = piece.doc
            if doc and doc.get("kind") == "EC2NodeClass" and doc["metadata"]["name"] in wanted - have:
                item = Converted(copy.deepcopy(doc))
                item.notes.append(f"{describe(doc)}: written out whole (comments dropped) to take a NodePool's kubelet")
                piece.objects, piece.doc = [item], None


def render(result: Migrated) -> str:
    """A migrated file's text: kept pieces as they were (with their `---` lines), converted objects as YAML."""
    out = ""
    for piece in result.pieces:
        if piece.objects:
            lead = piece.separator + "\n" if piece.separator else ("---\n" if out.strip() else "")
            out += lead + "---\n".join(dump(item.doc) for item in piece.objects)
        else:
            out += piece.separator + piece.text
    return out
