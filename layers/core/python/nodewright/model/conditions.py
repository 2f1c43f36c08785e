"""Status conditions (metav1.Condition) of nodewright's objects, merged by type.

Several writers set conditions on one NodeClaim: the provisioner (Launched, Registered, Initialized, Ready), the
planner (Drifted, Consolidatable) and the disruption workflow (DisruptionReason). Each writes only its own types, so
a write merges by type: a condition given replaces the one of its type, the others stay, and `lastTransitionTime`
moves only when the status changes (as Kubernetes' meta.SetStatusCondition does).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition to set. `reason` is CamelCase (as the API requires); `message` is for people."""

    type: str
    status: str
    reason: str
    message: str = ""


def rfc3339(epoch: float) -> str:
    """Epoch seconds as the API server writes timestamps (UTC, second precision)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(stamp: object) -> float | None:
    """An API server timestamp (RFC 3339) as epoch seconds; None when absent or malformed."""
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() if stamp else None
    except ValueError:
        return None


def merge_conditions(
    existing: Sequence[Mapping[str, Any]], updates: Sequence[Condition], clear: Collection[str], now: float
) -> list[dict[str, Any]]:
    """Inputs: the object's current `status.conditions`, the conditions to set, the types to remove, the time.
    Output: the new list, sorted by type. Invariant: a type neither set nor cleared is returned unchanged; a set
    condition whose status is unchanged keeps its `lastTransitionTime`."""
    by_type: dict[str, dict[str, Any]] = {
        str(c.get("type")): dict(c) for c in existing if isinstance(c, Mapping) and c.get("type")
    }
    for kind in clear:
        by_type.pop(kind, None)
    for update in updates:
        previous = by_type.get(update.type)
        since = previous.get("lastTransitionTime") if previous and previous.get("status") == update.status else None
        by_type[update.type] = {
            "type": update.type,
            "status": update.status,
            "reason": update.reason,
            "message": update.message,
            "lastTransitionTime": since or rfc3339(now),
        }
    return [by_type[k] for k in sorted(by_type)]


def condition_of(doc: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The condition of this type in an object's status, or None."""
    for c in (doc.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def is_true(doc: Mapping[str, Any], kind: str) -> bool:
    """True when the object has the condition with status True."""
    found = condition_of(doc, kind)
    return found is not None and found.get("status") == TRUE
