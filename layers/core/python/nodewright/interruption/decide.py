"""From a Message to what nodewright does about each instance it names, with a reason for every choice.

- Spot warning, capacity-reservation warning, Health scheduled change for EC2, and a state change to
  stopping / stopped / shutting-down / terminated: **interrupt**. The disruption workflow runs forceful
  (budgets and do-not-disrupt cannot hold back what AWS is taking anyway) with the deadline the event
  implies (`Message.deadline`). A Spot warning also marks its offering (type, zone, spot) unavailable, so
  the replacement and the next batches do not ask for the capacity that is being reclaimed.
- Rebalance recommendation, by the rebalance mode:
  `replace` (default): **rebalance**, a PREPARE command: the workflow launches the replacement early and
  taints the node PreferNoSchedule; nothing is drained, because the instance may well keep running. It is
  not forceful: nothing is taken away, so nothing overrides budgets or do-not-disrupt.
  `drain`: **rebalance**, a DISRUPT command that is *not* forceful and has no deadline: a recommendation
  is not a notice, so the node is replaced and drained like a voluntary disruption (budgets, PDBs and
  do-not-disrupt hold it back). Should the Spot warning follow, that event starts its own forceful
  workflow with the two-minute deadline.
  `ignore`: **ignore**; only a Kubernetes event on the node records it.
- Everything else is **ignore** with the reason: other states, Health events for other services or
  categories, and instances this cluster does not own (acknowledged, never retried).
- A message `interruption.trust` does not trust (another account or region, a warning past its notice, a Spot
  warning for an instance EC2 says is not spot, a state change EC2 contradicts) is **refuse**: acknowledged, logged
  and counted, and nothing is started or deleted.

The deadline of an interrupting command counts from receipt (`trust.drain_deadline`), never from the event's time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from nodewright.disruption.commands import (
    DISRUPT,
    INSTANCE_STOPPING,
    PREPARE,
    REBALANCE,
    RESERVATION_INTERRUPTION,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    DisruptionCommand,
)
from nodewright.interruption.messages import (
    HEALTH,
    REBALANCE_RECOMMENDATION,
    RESERVATION_WARNING,
    SPOT_WARNING,
    STATE_CHANGE,
    Message,
)
from nodewright.interruption.ownership import OwnedInstance
from nodewright.interruption.trust import drain_deadline

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type), as ports.OfferingKey

INTERRUPT = "interrupt"
REBALANCE_ACTION = "rebalance"
REFUSE = "refuse"
IGNORE = "ignore"
ACTIONS = (INTERRUPT, REBALANCE_ACTION, REFUSE, IGNORE)  # in order of precedence for a message's summary

REBALANCE_REPLACE = "replace"
REBALANCE_DRAIN = "drain"
REBALANCE_IGNORE = "ignore"
REBALANCE_MODES = (REBALANCE_REPLACE, REBALANCE_IGNORE, REBALANCE_DRAIN)

ACTING_STATES = ("stopping", "stopped", "shutting-down", "terminated")
HEALTH_SERVICE = "EC2"
HEALTH_CATEGORY = "scheduledChange"
SPOT = "spot"

# Kubernetes event reasons on the node, in Karpenter's words where it has them.
EVENT_SPOT_INTERRUPTED = "SpotInterrupted"
EVENT_REBALANCE = "SpotRebalanceRecommendation"
EVENT_STOPPING = "InstanceStopping"
EVENT_TERMINATING = "InstanceTerminating"
EVENT_SCHEDULED_CHANGE = "InstanceScheduledChange"
EVENT_RESERVATION_INTERRUPTED = "CapacityReservationInterrupted"


@dataclass(frozen=True, slots=True)
class Decision:
    """What happens to one instance. `command` is the workflow to start (None for ignore and for rebalance
    in `ignore` mode); `event_reason`, when set, is the reason of the Kubernetes event to record on the node
    (owned instances only), with `reason` as its message."""

    instance_id: str
    action: str
    reason: str
    nodeclaim: str = ""
    node: str = ""
    command: DisruptionCommand | None = None
    event_reason: str = ""

    @property
    def notify(self) -> bool:
        return bool(self.event_reason)


@dataclass(frozen=True, slots=True)
class Plan:
    """The decisions for every instance of a message, the offerings to mark unavailable (with why), and a
    one-line summary: the most significant action (interrupt > rebalance > ignore) and its reason."""

    message: Message
    decisions: tuple[Decision, ...]
    unavailable: Mapping[OfferingKey, str] = field(default_factory=dict)
    action: str = IGNORE
    reason: str = ""

    @property
    def commands(self) -> tuple[DisruptionCommand, ...]:
        return tuple(d.command for d in self.decisions if d.command is not None)


def decide(
    message: Message,
    owned: Mapping[str, OwnedInstance],
    rebalance_mode: str,
    now: float,
    refused: Mapping[str, str] | None = None,
) -> Plan:
    """Decide for every instance the message names. `owned`: instance id -> this cluster's NodeClaim and Node
    (instances not in it are ignored); `rebalance_mode`: replace | drain | ignore; `now`: epoch seconds, when the
    message was received (the commands' `requested_at`, and where their deadlines count from); `refused`: instance
    id -> why the message may not act on it (`interruption.trust`). Raises ValueError for an unknown rebalance
    mode."""
    if rebalance_mode not in REBALANCE_MODES:
        raise ValueError(f"rebalance mode {rebalance_mode!r} is not one of {', '.join(REBALANCE_MODES)}")
    skip = ignored_reason(message)
    refused = refused or {}
    decisions: list[Decision] = []
    unavailable: dict[OfferingKey, str] = {}
    for instance_id in message.instance_ids:
        instance = owned.get(instance_id)
        if skip is not None:
            decisions.append(Decision(instance_id, IGNORE, skip))
        elif instance_id in refused:
            decisions.append(Decision(instance_id, REFUSE, f"refused: {refused[instance_id]}"))
        elif instance is None:
            decisions.append(
                Decision(
                    instance_id,
                    IGNORE,
                    f"{instance_id} is not an instance of this cluster (no NodeClaim records it); acknowledged",
                )
            )
        else:
            decision = _decide_owned(message, instance, rebalance_mode, now)
            decisions.append(decision)
            if message.kind == SPOT_WARNING and instance.instance_type and instance.zone:
                unavailable[(instance.instance_type, instance.zone, SPOT)] = (
                    f"Spot interruption warning {message.id} for {instance_id}"
                )
    action, reason = _summary(message, decisions, skip)
    return Plan(message, tuple(decisions), unavailable, action, reason)


def ignored_reason(message: Message) -> str | None:
    """Why a message is ignored whatever instance it names, or None when it is acted on."""
    if message.kind == STATE_CHANGE and message.state not in ACTING_STATES:
        return f"instance state {message.state!r} is not one nodewright acts on ({', '.join(ACTING_STATES)})"
    if message.kind == HEALTH:
        if message.service != HEALTH_SERVICE:
            return f"Health event for service {message.service!r}: only {HEALTH_SERVICE} events concern nodes"
        if message.category != HEALTH_CATEGORY:
            return (
                f"Health event category {message.category!r}: only {HEALTH_CATEGORY} takes instances away "
                f"({message.type_code or 'no event type code'})"
            )
    return None


def _decide_owned(message: Message, instance: OwnedInstance, mode: str, now: float) -> Decision:
    names = [f"NodeClaim {instance.nodeclaim}"] if instance.nodeclaim else []
    names += [f"Node {instance.node}"] if instance.node else []
    subject = f"{instance.instance_id} ({', '.join(names)})" if names else instance.instance_id

    def command(reason: str, forceful: bool, deadline: float | None, action: str = DISRUPT) -> DisruptionCommand:
        return DisruptionCommand(
            nodeclaim=instance.nodeclaim,
            node=instance.node,
            instance_id=instance.instance_id,
            reason=reason,
            forceful=forceful,
            # The event id names the execution: a redelivered event asks for the same one.
            trigger=message.id,
            requested_at=now,
            deadline=deadline,
            action=action,
        )

    def interrupt(reason: str, why: str, event_reason: str) -> Decision:
        deadline = drain_deadline(message, now)
        by = f" by {_iso(deadline)}" if deadline is not None else ""
        return Decision(
            instance.instance_id,
            INTERRUPT,
            f"{why}: replace and drain {subject} forcefully{by}",
            instance.nodeclaim,
            instance.node,
            command(reason, True, deadline),
            event_reason,
        )

    if message.kind == SPOT_WARNING:
        offering = (
            f"; offering ({instance.instance_type}, {instance.zone}, spot) marked unavailable"
            if instance.instance_type and instance.zone
            else ""
        )
        decision = interrupt(
            SPOT_INTERRUPTION, f"Spot interruption warning ({message.instance_action})", EVENT_SPOT_INTERRUPTED
        )
        return replace(decision, reason=decision.reason + offering)
    if message.kind == RESERVATION_WARNING:
        return interrupt(
            RESERVATION_INTERRUPTION, "capacity reservation interruption warning", EVENT_RESERVATION_INTERRUPTED
        )
    if message.kind == STATE_CHANGE:
        stopping = message.state in ("stopping", "stopped")
        return interrupt(
            INSTANCE_STOPPING, f"instance is {message.state}", EVENT_STOPPING if stopping else EVENT_TERMINATING
        )
    if message.kind == HEALTH:
        return interrupt(
            SCHEDULED_CHANGE, f"AWS Health scheduled change {message.type_code}".rstrip(), EVENT_SCHEDULED_CHANGE
        )
    if message.kind == REBALANCE_RECOMMENDATION:
        if mode == REBALANCE_REPLACE:
            return Decision(
                instance.instance_id,
                REBALANCE_ACTION,
                f"rebalance recommendation (mode replace): launch a replacement for {subject} early and taint it "
                "PreferNoSchedule; no drain",
                instance.nodeclaim,
                instance.node,
                command(REBALANCE, False, None, PREPARE),
                event_reason=EVENT_REBALANCE,
            )
        if mode == REBALANCE_DRAIN:
            return Decision(
                instance.instance_id,
                REBALANCE_ACTION,
                f"rebalance recommendation (mode drain): replace and drain {subject} as a voluntary disruption "
                "(budgets, PDBs and do-not-disrupt apply)",
                instance.nodeclaim,
                instance.node,
                command(REBALANCE, False, None),
                event_reason=EVENT_REBALANCE,
            )
        return Decision(
            instance.instance_id,
            IGNORE,
            f"rebalance recommendation (mode ignore): recorded as an event on {subject} only",
            instance.nodeclaim,
            instance.node,
            event_reason=EVENT_REBALANCE,
        )
    raise ValueError(f"no decision for message kind {message.kind!r}")  # every parser's kind is handled above


def _summary(message: Message, decisions: list[Decision], skip: str | None) -> tuple[str, str]:
    if not decisions:
        return IGNORE, skip or f"{message.detail_type} names no EC2 instance"
    for action in ACTIONS:
        chosen = [d for d in decisions if d.action == action]
        if chosen:
            # One reason in full; the other instances with this action are named, not repeated in full.
            others = [d.instance_id for d in chosen[1:]]
            return action, chosen[0].reason + (f"; likewise {', '.join(others)}" if others else "")
    raise AssertionError("every decision has one of ACTIONS")  # pragma: no cover


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
