"""What every conversion shares: the target group, the error type, exported-object clean-up, small readers."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from nodewright.model.durations import format_duration

GROUP = "nodewright.io"
API_VERSION = f"{GROUP}/v1"
NODECLASS_KIND = "EC2NodeClass"
# Karpenter's converter leaves the same placeholder for `envsubst`: v1 needs a node role, the old APIs named an
# instance profile (or the global aws.defaultInstanceProfile setting) instead.
ROLE_PLACEHOLDER = "$KARPENTER_NODE_ROLE"
# kubectl's record of the last apply: it describes the old object, not the new one.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class MigrationError(ValueError):
    """A document that cannot be migrated; the message names the object, the field and the fix."""


@dataclass(frozen=True, slots=True)
class Options:
    """How old objects are converted.

    role: the node role written into EC2NodeClasses that name no instance profile (ROLE_PLACEHOLDER if unset).
    ignore_defaults: do not write out v1alpha5's defaulted requirements (karpenter-convert's --ignore-defaults).
    """

    role: str = ROLE_PLACEHOLDER
    ignore_defaults: bool = False


@dataclass(slots=True)
class Converted:
    """One nodewright.io/v1 object made from an old one.

    doc: the object as written. kubelet: a NodePool's kubelet settings still to be placed on its EC2NodeClass
    (None for none). notes: what the user should know (printed on stderr).
    """

    doc: dict[str, Any]
    kubelet: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.doc["kind"])

    @property
    def name(self) -> str:
        return str(self.doc["metadata"]["name"])


def describe(doc: dict[str, Any]) -> str:
    """`Kind/name` of a document, for messages."""
    return f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name', '<unnamed>')}"


def fail(doc: dict[str, Any], path: str, problem: str) -> MigrationError:
    """An error naming the object and the field; `problem` says what is wrong and the fix."""
    return MigrationError(f"{describe(doc)}: {path}: {problem}")


def new_metadata(doc: dict[str, Any]) -> dict[str, Any]:
    """The metadata a new object keeps from an old (or exported) one: name, labels, annotations.

    Server fields (uid, resourceVersion, managedFields, ...) and finalizers belong to the old object; kubectl's
    last-applied annotation describes it. As karpenter-convert, nothing else is carried.
    """
    meta = doc.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise fail(doc, "metadata.name", "is missing; every object needs a name")
    out: dict[str, Any] = {"name": name}
    if meta.get("labels"):
        out["labels"] = copy.deepcopy(meta["labels"])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    if annotations:
        out["annotations"] = annotations
    return out


def spec_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's spec (a copy), an error when it is not a map."""
    spec = doc.get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise fail(doc, "spec", "must be a map")
    return copy.deepcopy(spec)


def check_fields(doc: dict[str, Any], raw: dict[str, Any], path: str, known: tuple[str, ...]) -> None:
    """Refuse fields the old API did not have: a typo would otherwise be dropped without a word."""
    for key in raw:
        if key not in known:
            raise fail(
                doc,
                f"{path}.{key}",
                f"is not a field of {doc.get('apiVersion')} {doc.get('kind')}; "
                f"remove it (known fields: {', '.join(known)})",
            )


def seconds(doc: dict[str, Any], value: Any, path: str) -> str:
    """A v1alpha5 TTL in seconds as a Go-style duration; negative or non-integer values are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(doc, path, f"{value!r} is not a whole number of seconds")
    if value < 0:
        raise fail(doc, path, f"{value} is negative; use 0 or more seconds (or remove the field)")
    return format_duration(value)


def node_class(metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """A nodewright.io/v1 EC2NodeClass document."""
    return {"apiVersion": API_VERSION, "kind": NODECLASS_KIND, "metadata": metadata, "spec": spec}


def node_class_ref(name: str) -> dict[str, str]:
    """A NodePool's reference to a nodewright EC2NodeClass."""
    return {"group": GROUP, "kind": NODECLASS_KIND, "name": name}
