"""Karpenter v1 NodePools and EC2NodeClasses (and v1alpha1 NodeOverlays): two fields rewritten in place, everything
else kept byte for byte.

In a cluster nodewright acts on its own `nodewright.io/v1` objects only, so it can run beside Karpenter. A v1
manifest changes in exactly two fields: `apiVersion` (`karpenter.sh/v1` NodePool, `karpenter.k8s.aws/v1`
EC2NodeClass -> `nodewright.io/v1`) and a NodePool's `spec.template.spec.nodeClassRef.group` (`karpenter.k8s.aws` ->
`nodewright.io`). Comments, order and quoting stay; each rewritten document is read back and compared with the
original, field by field. An exported object (`kubectl get -o yaml`) is re-written without its server fields.
A `karpenter.sh/v1alpha1` NodeOverlay becomes `nodewright.io/v1alpha1`, its fields unchanged (they are Karpenter's).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import yaml

from nodewright.migrate.common import API_VERSION, GROUP, MigrationError, new_metadata

# kind -> the Karpenter apiVersion that kind is migrated from.
MIGRATED = {
    "NodePool": "karpenter.sh/v1",
    "EC2NodeClass": "karpenter.k8s.aws/v1",
    "NodeOverlay": "karpenter.sh/v1alpha1",
}
# kind -> the nodewright apiVersion it becomes, where that is not nodewright.io/v1.
TARGET = {"NodeOverlay": f"{GROUP}/v1alpha1"}
KARPENTER_NODECLASS_GROUP = "karpenter.k8s.aws"
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


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


def target_version(doc: dict[str, Any]) -> str:
    """The nodewright apiVersion of the document's kind."""
    return TARGET.get(str(doc.get("kind")), API_VERSION)


def is_karpenter_v1(doc: Any) -> bool:
    """A Karpenter v1 NodePool or EC2NodeClass, or a Karpenter v1alpha1 NodeOverlay."""
    return isinstance(doc, dict) and MIGRATED.get(str(doc.get("kind"))) == doc.get("apiVersion")


def is_exported(doc: dict[str, Any]) -> bool:
    """An object read back from the API server (status or server-set metadata), not a manifest as written."""
    meta = doc.get("metadata") or {}
    return "status" in doc or any(key in meta for key in SERVER_FIELDS)


def expected(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as nodewright reads it: the two fields changed, nothing else."""
    out = copy.deepcopy(doc)
    out["apiVersion"] = target_version(doc)
    ref = node_class_ref(out)
    if ref is not None and ref.get("group") == KARPENTER_NODECLASS_GROUP:
        ref["group"] = GROUP
    return out


def exported(doc: dict[str, Any]) -> dict[str, Any]:
    """An exported v1 object as a new manifest: the two fields changed, server fields and status dropped."""
    out = expected(doc)
    out.pop("status", None)
    out["metadata"] = new_metadata(doc)
    return out


def node_class_ref(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A NodePool's nodeClassRef (None for other kinds or when missing)."""
    if doc.get("kind") != "NodePool":
        return None
    ref = ((((doc.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef")) or None
    return ref if isinstance(ref, dict) else None


def changes(doc: dict[str, Any], source: str) -> list[Change]:
    """The fields `expected` rewrites in `doc`, one Change each."""
    kind, name = str(doc.get("kind")), str((doc.get("metadata") or {}).get("name", ""))
    out = [Change(source, kind, name, "apiVersion", str(doc["apiVersion"]), target_version(doc))]
    ref = node_class_ref(doc)
    if ref is not None and ref.get("group") == KARPENTER_NODECLASS_GROUP:
        path = "spec.template.spec.nodeClassRef.group"
        out.append(Change(source, kind, name, path, KARPENTER_NODECLASS_GROUP, GROUP))
    return out


def rewrite(text: str, doc: dict[str, Any], source: str) -> str:
    """The text of one Karpenter v1 document (`doc` is it parsed) with the two fields rewritten in place."""
    name = (doc.get("metadata") or {}).get("name", "<unnamed>")
    rewritten = re.sub(
        rf"^(apiVersion:[ \t]*)([\"']?){re.escape(str(doc['apiVersion']))}\2",
        rf"\g<1>\g<2>{target_version(doc)}\g<2>",
        text,
        count=1,
        flags=re.MULTILINE,
    )
    if node_class_ref(doc) is not None:
        rewritten = re.sub(
            rf"(\bgroup:[ \t]*)([\"']?){re.escape(KARPENTER_NODECLASS_GROUP)}\2(?=[\s,}}]|$)",
            rf"\g<1>\g<2>{GROUP}\g<2>",
            rewritten,
            count=1,
        )
    if yaml.safe_load(rewritten) != expected(doc):
        raise MigrationError(
            f"{source}: {doc['kind']}/{name}: could not rewrite apiVersion and nodeClassRef.group in place without "
            f"touching anything else; set apiVersion: {target_version(doc)} (and nodeClassRef.group: {GROUP}) by hand"
        )
    return rewritten
