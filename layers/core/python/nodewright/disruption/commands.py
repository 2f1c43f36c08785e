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
EMPTY = "Empty"
DRIFTED = "Drifted"
UNDERUTILIZED = "Underutilized"
DELETED = "Deleted"  # a NodeClaim or Node deleted through the API server (kubectl, or its NodePool's deletion)
UNHEALTHY = "Unhealthy"  # node repair: a node condition matched a repair policy past its toleration
REASONS = (
    SPOT_INTERRUPTION,
    REBALANCE,
    SCHEDULED_CHANGE,
    INSTANCE_STOPPING,
    RESERVATION_INTERRUPTION,
    EXPIRED,
    EMPTY,
    DRIFTED,
    UNDERUTILIZED,
    DELETED,
    UNHEALTHY,
)
# What AWS is taking away anyway, and broken nodes being repaired: these take a node from any other disruption that
# holds it (see disruption.lease), as Karpenter's interruption and health controllers delete a NodeClaim whatever
# else is under way.
INTERRUPTIONS = frozenset({SPOT_INTERRUPTION, SCHEDULED_CHANGE, INSTANCE_STOPPING, RESERVATION_INTERRUPTION, UNHEALTHY})
# Decisions IdentifyCandidate checks again against the cluster as it is when the execution runs (after Karpenter's
# 15-second validation delay): pods may have landed on the nodes since the planner decided.
VALIDATED_METHODS = frozenset({"emptiness", "single-node", "multi-node"})

# What the workflow does with the node: replace it and take it away, or (rebalance `replace` mode) only
# launch its replacement early and make it PreferNoSchedule.
DISRUPT = "disrupt"
PREPARE = "prepare"

_NAME_LIMIT = 80  # Step Functions execution names: 1-80 characters
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class CommandError(ValueError):
    """A workflow input that is not a disruption command; names the field."""


@dataclass(frozen=True, slots=True)
class Target:
    """One node a command disrupts: its NodeClaim, Node (empty before it registers) and instance."""

    nodeclaim: str
    node: str = ""
    instance_id: str = ""


@dataclass(frozen=True, slots=True)
class ReplacementOffering:
    """One offering a consolidation's replacement may launch as (instance type, capacity type, zone, $/hour)."""

    instance_type: str
    capacity_type: str
    zone: str
    price: float


@dataclass(frozen=True, slots=True)
class Replacement:
    """The NodeClaim launched in place of the candidates: the offerings it may use, cheapest first. For a
    consolidation every one of them is strictly cheaper than the candidates together (`ceiling`)."""

    nodepool: str
    options: tuple[ReplacementOffering, ...]
    ceiling: float = 0.0

    @property
    def price(self) -> float:
        return self.options[0].price if self.options else 0.0

    @property
    def instance_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.instance_type for o in self.options))

    @property
    def capacity_types(self) -> tuple[str, ...]:
        return tuple(sorted({o.capacity_type for o in self.options}))

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({o.zone for o in self.options}))

    def to_json(self) -> dict[str, Any]:
        """The `replacement` object of `nodewright disrupt --json`."""
        return {
            "instance_types": list(self.instance_types),
            "capacity_types": list(self.capacity_types),
            "zones": list(self.zones),
            "price_per_hour": round(self.price, 6),
        }

    def to_input(self) -> dict[str, Any]:
        """The workflow's form: every allowed offering, so LaunchReplacement launches nothing else."""
        return {
            "nodepool": self.nodepool,
            "ceiling": self.ceiling,
            "options": [[o.instance_type, o.capacity_type, o.zone, o.price] for o in self.options],
        }

    @staticmethod
    def from_input(document: Mapping[str, Any]) -> Replacement:
        """Read `to_input()` back; ValueError naming the field when malformed."""
        options = []
        for i, raw in enumerate(document.get("options") or []):
            if not isinstance(raw, list | tuple) or len(raw) != 4:
                raise ValueError(f"replacement.options[{i}]: expected [instance type, capacity type, zone, price]")
            options.append(ReplacementOffering(str(raw[0]), str(raw[1]), str(raw[2]), float(raw[3])))
        return Replacement(str(document.get("nodepool") or ""), tuple(options), float(document.get("ceiling") or 0))


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
    method: str = ""
    others: tuple[Target, ...] = ()
    replacement: Replacement | None = None

    @property
    def targets(self) -> tuple[Target, ...]:
        """Every node of the command: the first, then the others of a multi-node consolidation."""
        return (Target(self.nodeclaim, self.node, self.instance_id), *self.others)

    @property
    def interruption(self) -> bool:
        """The node goes whatever nodewright does (AWS takes the instance, or it is broken): the command outranks
        every other holder of the node."""
        return self.forceful and self.reason in INTERRUPTIONS

    @property
    def validated(self) -> bool:
        """IdentifyCandidate re-checks the decision against the cluster before anything is done."""
        return self.method in VALIDATED_METHODS

    def execution_name(self) -> str:
        """`<reason>-<nodeclaim>-<hash>`, at most 80 characters of [A-Za-z0-9_-]; equal for equal
        (trigger, nodeclaims, action), so a duplicate request names the same execution."""
        names = ",".join(t.nodeclaim for t in self.targets)
        digest = hashlib.sha256(f"{self.trigger}|{names}|{self.action}".encode()).hexdigest()[:16]
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
            "method": self.method,
            "validate": self.validated,
            "others": [{"nodeclaim": t.nodeclaim, "node": t.node, "instance_id": t.instance_id} for t in self.others],
            "replacement": self.replacement.to_input() if self.replacement is not None else None,
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
        others = document.get("others") or []
        if not isinstance(others, list) or not all(isinstance(o, Mapping) and o.get("nodeclaim") for o in others):
            raise CommandError("workflow input: others: expected a list of {nodeclaim, node, instance_id}")
        raw_replacement = document.get("replacement")
        replacement = None
        if raw_replacement is not None:
            if not isinstance(raw_replacement, Mapping):
                raise CommandError("workflow input: replacement: expected an object or null")
            try:
                replacement = Replacement.from_input(raw_replacement)
            except (TypeError, ValueError) as error:
                raise CommandError(f"workflow input: {error}") from None
        method = document.get("method") or ""
        if not isinstance(method, str):
            raise CommandError(f"workflow input: method: expected a string, got {method!r}")
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
            method=method,
            others=tuple(
                Target(str(o["nodeclaim"]), str(o.get("node") or ""), str(o.get("instance_id") or "")) for o in others
            ),
            replacement=replacement,
        )


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
