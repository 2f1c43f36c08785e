"""karpenter.sh/v1beta1 NodePool -> nodewright.io/v1 NodePool.

Follows `convertFrom` in kubernetes-sigs/karpenter `pkg/apis/v1/nodepool_conversion.go` (v1.0.9): WhenUnderutilized
becomes WhenEmptyOrUnderutilized with consolidateAfter 0s; `disruption.expireAfter` moves to
`spec.template.spec.expireAfter`; budgets are carried; `nodeClassRef{apiVersion,kind,name}` becomes
`{group,kind,name}`; `kubelet` moves to the EC2NodeClass (see `kubelet`). v1beta1's defaults (WhenUnderutilized,
expireAfter 720h) are written out, since v1 would otherwise apply its own.
"""

from __future__ import annotations

from typing import Any

from nodewright.migrate import kubelet
from nodewright.migrate.common import (
    API_VERSION,
    Converted,
    check_fields,
    fail,
    new_metadata,
    node_class_ref,
    spec_of,
)

SPEC_FIELDS = ("template", "disruption", "limits", "weight")
TEMPLATE_SPEC_FIELDS = ("nodeClassRef", "requirements", "taints", "startupTaints", "kubelet")
DISRUPTION_FIELDS = ("consolidationPolicy", "consolidateAfter", "expireAfter", "budgets")
DEFAULT_EXPIRE_AFTER = "720h"


def convert(doc: dict[str, Any]) -> Converted:
    """A v1beta1 NodePool document as a nodewright.io/v1 NodePool (its kubelet still to be placed)."""
    spec = spec_of(doc)
    check_fields(doc, spec, "spec", SPEC_FIELDS)
    template = spec.get("template") or {}
    node_spec = dict(template.get("spec") or {})
    check_fields(doc, node_spec, "spec.template.spec", TEMPLATE_SPEC_FIELDS)
    ref = node_spec.pop("nodeClassRef", None)
    if not isinstance(ref, dict) or not ref.get("name"):
        raise fail(doc, "spec.template.spec.nodeClassRef", "is missing; name the EC2NodeClass (name: default)")
    if ref.get("kind", "EC2NodeClass") != "EC2NodeClass":
        raise fail(
            doc,
            "spec.template.spec.nodeClassRef.kind",
            f"{ref.get('kind')} is not EC2NodeClass; nodewright launches EC2 nodes only",
        )
    notes: list[str] = []
    settings = kubelet.read(doc, node_spec.pop("kubelet", None), "spec.template.spec.kubelet", notes)
    disruption = dict(spec.get("disruption") or {})
    check_fields(doc, disruption, "spec.disruption", DISRUPTION_FIELDS)
    new_node_spec: dict[str, Any] = {
        "nodeClassRef": node_class_ref(str(ref["name"])),
        "expireAfter": disruption.pop("expireAfter", DEFAULT_EXPIRE_AFTER),
        "requirements": node_spec.pop("requirements", None) or [],
        **node_spec,
    }
    new_spec: dict[str, Any] = {
        "template": {**({"metadata": template["metadata"]} if template.get("metadata") else {}), "spec": new_node_spec},
        "disruption": _disruption(doc, disruption),
    }
    for key in ("limits", "weight"):
        if key in spec:
            new_spec[key] = spec[key]
    out = {"apiVersion": API_VERSION, "kind": "NodePool", "metadata": new_metadata(doc), "spec": new_spec}
    return Converted(out, settings, notes)


def _disruption(doc: dict[str, Any], disruption: dict[str, Any]) -> dict[str, Any]:
    policy = disruption.get("consolidationPolicy", "WhenUnderutilized")
    out: dict[str, Any]
    if policy == "WhenUnderutilized":
        if "consolidateAfter" in disruption:
            raise fail(
                doc,
                "spec.disruption.consolidateAfter",
                "cannot be set with consolidationPolicy WhenUnderutilized (v1beta1 refused it too); remove it",
            )
        out = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    elif policy == "WhenEmpty":
        if "consolidateAfter" not in disruption:
            raise fail(
                doc,
                "spec.disruption.consolidateAfter",
                "is required with consolidationPolicy WhenEmpty "
                "(v1beta1 required it too); set how long a node stays empty first, e.g. 30s, or Never",
            )
        out = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": disruption["consolidateAfter"]}
    else:
        raise fail(doc, "spec.disruption.consolidationPolicy", f"{policy!r} is not WhenEmpty or WhenUnderutilized")
    if "budgets" in disruption:
        out["budgets"] = disruption["budgets"]
    return out
