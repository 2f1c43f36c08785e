"""NodeOverlay status, as Karpenter's NodeOverlay controller writes it (`pkg/controllers/nodeoverlay/controller.go`).

Each nodewright.io NodeOverlay gets two conditions: ValidationSucceeded and Ready (Ready follows it). They are
False with a reason when the overlay is applied nowhere:

- `RuntimeValidation`: the object does not validate (the fields and their fixes in the message); Karpenter's
  reason for what its runtime validation refuses, used here for every validation error of a stored object.
- `Conflict`: another overlay of the same weight changes the same offering's price or the same extended resource
  of the same instance type (`catalog.overlay`); the message names it.
- `UnsupportedRequirement`: a requirement on a label the shared catalog does not decide (`karpenter.sh/nodepool`,
  NodePool labels), which nodewright refuses rather than applying it to every NodePool or none.

Who writes: the planner on its tick, from the catalog its simulations use, only when a condition changed, and only
to nodewright.io objects (Karpenter's are Karpenter's to write).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.catalog.overlay import OverlayResult, Refusal
from nodewright.model.conditions import FALSE, TRUE, Condition
from nodewright.model.loader import load_documents
from nodewright.model.nodeoverlay import KIND
from nodewright.ports import Cluster
from nodewright.service.status import READY, VALIDATION, StatusReport

RUNTIME_VALIDATION = "RuntimeValidation"


def overlay_conditions(errors: Sequence[str], refusal: Refusal | None) -> list[Condition]:
    """The ValidationSucceeded and Ready conditions of one overlay: its validation errors ("path: message") first,
    then its refusal by `catalog.overlay`; True when it has neither."""
    if errors:
        verdict = Condition(VALIDATION, FALSE, RUNTIME_VALIDATION, "; ".join(errors))
    elif refusal is not None:
        verdict = Condition(VALIDATION, FALSE, refusal.reason, refusal.message)
    else:
        verdict = Condition(VALIDATION, TRUE, VALIDATION)
    ready = (
        Condition(READY, TRUE, READY)
        if verdict.status == TRUE
        else Condition(READY, FALSE, verdict.reason, verdict.message)
    )
    return [verdict, ready]


def write_overlay_status(
    cluster: Cluster, overlays: Sequence[Mapping[str, Any]], result: OverlayResult | None
) -> StatusReport:
    """Write the conditions of every nodewright.io NodeOverlay whose conditions changed.

    `overlays`: the NodeOverlay documents as listed; `result`: what applying the valid ones to the catalog did
    (None: nothing was applied, so no refusals)."""
    report = StatusReport()
    errors: dict[str, list[str]] = {}
    for error in load_documents(overlays, "cluster")[1]:
        if error.kind == KIND:
            errors.setdefault(error.name, []).append(f"{error.path}: {error.message}")
    refused = result.refused if result is not None else {}
    for doc in overlays:
        if not str(doc.get("apiVersion", "")).startswith("nodewright.io/"):
            continue
        name = str((doc.get("metadata") or {}).get("name", ""))
        conditions = overlay_conditions(errors.get(name, ()), refused.get(name))
        ready = conditions[1]
        report.ready[f"nodeoverlay/{name}"] = (
            ready.status if ready.status == TRUE else f"{ready.status} ({ready.reason})"
        )
        if _changed(doc, conditions):
            cluster.set_status(KIND, name, {}, conditions)
            report.written.append(f"nodeoverlay/{name}")
    return report


def _changed(doc: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    have = {
        c.get("type"): (c.get("status"), c.get("reason"), c.get("message") or "")
        for c in (doc.get("status") or {}).get("conditions") or []
        if isinstance(c, Mapping)
    }
    return any(have.get(c.type) != (c.status, c.reason, c.message) for c in conditions)
