"""A disruption command: the one input of the disruption workflow, and how its execution is named.

Both triggers build one of these: the interruption Lambda (from an EventBridge event) and the planner
(from a schedule tick). The state machine's every step reads the same document, so its shape is the
contract between them; `to_input()` and `from_input()` are its only writers and readers.

Execution names are derived, not random: a redelivered event or a re-run planner tick asks for the same
name, and Step Functions refuses a second execution with a name it has seen (ExecutionAlreadyExists), so
a duplicate never starts a second workflow.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Reasons, in Karpenter's words where Karpenter has one.
SPOT_INTERRUPTION = "SpotInterruption"
REBALANCE = "RebalanceRecommendation"
SCHEDULED_CHANGE = "ScheduledChange"
INSTANCE_STOPPING = "InstanceStopping"  # stopping, stopped, shutting-down, terminated
RESERVATION_INTERRUPTION = "CapacityReservationInterruption"
EXPIRED = "Expired"
REASONS = (SPOT_INTERRUPTION, REBALANCE, SCHEDULED_CHANGE, INSTANCE_STOPPING, RESERVATION_INTERRUPTION, EXPIRED)

# What the workflow does with the node: replace it and take it away, or (rebalance `replace` mode) only
# launch its replacement early and make it PreferNoSchedule.
DISRUPT = "disrupt"
PREPARE = "prepare"

_NAME_LIMIT = 80  # Step Functions execution names: 1-80 characters
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class CommandError(ValueError):
    """A workflow input that is not a disruption command; names the field."""


@dataclass(frozen=True, slots=True)
class DisruptionCommand:
    """Disrupt one NodeClaim (and its Node, if registered) for a reason.

    `forceful`: involuntary (an interruption) or Expired: budgets and do-not-disrupt do not hold it back.
    `deadline`: epoch seconds after which the node is gone anyway (two minutes after a Spot warning) or
    after which remaining pods are deleted; None when only the NodePool's terminationGracePeriod bounds it.
    `trigger`: what asked for it (an EventBridge event id, or `planner:<nodeclaim>:<creation>`); together
    with the NodeClaim it makes the execution name.
    """

    nodeclaim: str
    node: str
    instance_id: str
    reason: str
    forceful: bool
    trigger: str
    requested_at: float
    deadline: float | None = None
    action: str = DISRUPT

    def execution_name(self) -> str:
        """`<reason>-<nodeclaim>-<hash>`, at most 80 characters of [A-Za-z0-9_-]; equal for equal
        (trigger, nodeclaim, action), so a duplicate request names the same execution."""
        digest = hashlib.sha256(f"{self.trigger}|{self.nodeclaim}|{self.action}".encode()).hexdigest()[:16]
        stem = _UNSAFE.sub("-", f"{self.reason}-{self.nodeclaim}").strip("-")
        return f"{stem[: _NAME_LIMIT - len(digest) - 1]}-{digest}"

    def to_input(self) -> dict[str, Any]:
        """The workflow's input document (JSON-safe; times as RFC 3339 UTC and as epoch seconds)."""
        return {
            "nodeclaim": self.nodeclaim,
            "node": self.node,
            "instance_id": self.instance_id,
            "reason": self.reason,
            "forceful": self.forceful,
            "action": self.action,
            "trigger": self.trigger,
            "requested_at": self.requested_at,
            "requested": _iso(self.requested_at),
            "deadline": self.deadline,
            "deadline_at": _iso(self.deadline) if self.deadline is not None else None,
        }

    @staticmethod
    def from_input(document: Mapping[str, Any]) -> DisruptionCommand:
        """Read a workflow input back; raises CommandError naming the missing or malformed field."""

        def text(field: str, required: bool = True) -> str:
            value = document.get(field, "")
            if not isinstance(value, str) or (required and not value):
                raise CommandError(f"workflow input: {field}: expected a non-empty string, got {value!r}")
            return value

        reason = text("reason")
        if reason not in REASONS:
            raise CommandError(f"workflow input: reason: {reason!r} is not one of {', '.join(REASONS)}")
        action = text("action")
        if action not in (DISRUPT, PREPARE):
            raise CommandError(f"workflow input: action: {action!r} is not {DISRUPT!r} or {PREPARE!r}")
        forceful = document.get("forceful")
        if not isinstance(forceful, bool):
            raise CommandError(f"workflow input: forceful: expected true or false, got {forceful!r}")
        requested_at = document.get("requested_at")
        if not isinstance(requested_at, int | float) or isinstance(requested_at, bool):
            raise CommandError(f"workflow input: requested_at: expected epoch seconds, got {requested_at!r}")
        deadline = document.get("deadline")
        if deadline is not None and (not isinstance(deadline, int | float) or isinstance(deadline, bool)):
            raise CommandError(f"workflow input: deadline: expected epoch seconds or null, got {deadline!r}")
        return DisruptionCommand(
            nodeclaim=text("nodeclaim"),
            node=text("node", required=False),
            instance_id=text("instance_id", required=False),
            reason=reason,
            forceful=forceful,
            trigger=text("trigger"),
            requested_at=float(requested_at),
            deadline=float(deadline) if deadline is not None else None,
            action=action,
        )


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
