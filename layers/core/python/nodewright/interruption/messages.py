"""EventBridge events that take instances away, parsed into one typed `Message` per event.

One parser per (source, detail-type); each checks exactly the fields nodewright acts on and raises
`EventError` naming the field path (`detail.instance-id`) and what is wrong with it. Fields nodewright
does not read are not checked, so AWS adding a field never breaks the handler. An event whose
(source, detail-type) has no parser is an error too: the EventBridge rules select only these five, so
anything else on the queue was sent by mistake and belongs in the dead-letter queue where a person sees it.

`render_event` is the inverse (a message back to the event AWS would send); the tests and the example
events use it, and parse(render(m)) == m is a property test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

# Kinds of message, one per parser.
SPOT_WARNING = "spot-interruption-warning"
REBALANCE_RECOMMENDATION = "rebalance-recommendation"
STATE_CHANGE = "state-change"
HEALTH = "health"
RESERVATION_WARNING = "capacity-reservation-interruption-warning"

EC2_SOURCE = "aws.ec2"
HEALTH_SOURCE = "aws.health"
SPOT_DETAIL_TYPE = "EC2 Spot Instance Interruption Warning"
REBALANCE_DETAIL_TYPE = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE_DETAIL_TYPE = "EC2 Instance State-change Notification"
HEALTH_DETAIL_TYPE = "AWS Health Event"
RESERVATION_DETAIL_TYPE = "EC2 Capacity Reservation Instance Interruption Warning"

# (source, detail-type) -> kind; the EventBridge rules in infra/interruption.py match exactly these.
EVENT_TYPES: Mapping[tuple[str, str], str] = {
    (EC2_SOURCE, SPOT_DETAIL_TYPE): SPOT_WARNING,
    (EC2_SOURCE, REBALANCE_DETAIL_TYPE): REBALANCE_RECOMMENDATION,
    (EC2_SOURCE, STATE_CHANGE_DETAIL_TYPE): STATE_CHANGE,
    (HEALTH_SOURCE, HEALTH_DETAIL_TYPE): HEALTH,
    (EC2_SOURCE, RESERVATION_DETAIL_TYPE): RESERVATION_WARNING,
}
_DETAIL_TYPES = {kind: key for key, kind in EVENT_TYPES.items()}

# EC2 instance states (the `detail.state` of a state-change notification).
INSTANCE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down", "terminated")
# What a Spot interruption does to the instance (`detail.instance-action`).
SPOT_ACTIONS = ("terminate", "stop", "hibernate")
# A Spot interruption warning is sent two minutes before the instance is stopped or terminated; the event
# itself carries no action time, so the deadline is the event's time plus this.
SPOT_NOTICE_SECONDS = 120.0
# Interruptible capacity reservations give the same two-minute notice, and also say the termination time.
RESERVATION_NOTICE_SECONDS = 120.0

_INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,32}$")


class EventError(ValueError):
    """An event nodewright cannot read: `path` names the field (`detail.state`), `problem` what is wrong."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Message:
    """What an interruption event says, in the terms nodewright decides on.

    `time`: the event's time (epoch seconds). `instance_ids`: the instances it is about (one for EC2
    events; the affected instances for a Health event, other entities left out). `state`: the new state
    of a state-change notification. `instance_action`: terminate, stop or hibernate (Spot and capacity
    reservation warnings). `service`, `category`, `type_code`: a Health event's `service`,
    `eventTypeCategory` and `eventTypeCode`. `not_after`: the time the event names for the change
    (a reservation's `instance-termination-time`, a Health event's `startTime`), if it names one.
    """

    id: str
    kind: str
    time: float
    instance_ids: tuple[str, ...]
    state: str = ""
    instance_action: str = ""
    service: str = ""
    category: str = ""
    type_code: str = ""
    not_after: float | None = None
    region: str = ""
    account: str = ""

    @property
    def source(self) -> str:
        return _DETAIL_TYPES[self.kind][0]

    @property
    def detail_type(self) -> str:
        return _DETAIL_TYPES[self.kind][1]

    @property
    def deadline(self) -> float | None:
        """When the instance is gone, as far as the event says (epoch seconds), or None if it does not say.

        Spot: two minutes after the warning, except hibernation, which starts at once (no notice period).
        Capacity reservation: its `instance-termination-time`, else two minutes after the warning.
        State change: the instance is already stopping or gone, so the deadline is the event's time.
        Health: the scheduled change's start time. Rebalance: none (it is a recommendation).
        """
        if self.kind == SPOT_WARNING:
            return self.time if self.instance_action == "hibernate" else self.time + SPOT_NOTICE_SECONDS
        if self.kind == RESERVATION_WARNING:
            return self.not_after if self.not_after is not None else self.time + RESERVATION_NOTICE_SECONDS
        if self.kind == STATE_CHANGE:
            return self.time
        if self.kind == HEALTH:
            return self.not_after
        return None


def parse_event(event: Any) -> Message:
    """Parse one EventBridge event (a decoded JSON object) into a Message.

    Raises EventError naming the field path and what is wrong: a missing or mistyped field, an instance id
    that is not one, an unknown (source, detail-type).
    """
    if not isinstance(event, Mapping):
        raise EventError("event", f"expected a JSON object, got {_kind_of(event)}")
    event_id = _string(event, "id", "id")
    source = _string(event, "source", "source")
    detail_type = _string(event, "detail-type", "detail-type")
    kind = EVENT_TYPES.get((source, detail_type))
    if kind is None:
        known = "; ".join(f"{s} / {d}" for s, d in EVENT_TYPES)
        raise EventError(
            "detail-type", f"no parser for source {source!r} with detail-type {detail_type!r} (known: {known})"
        )
    time = _timestamp(_string(event, "time", "time"), "time")
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise EventError("detail", "missing" if detail is None else f"expected an object, got {_kind_of(detail)}")
    region = event.get("region")
    account = event.get("account")
    base = Message(
        id=event_id,
        kind=kind,
        time=time,
        instance_ids=(),
        region=region if isinstance(region, str) else "",
        account=account if isinstance(account, str) else "",
    )
    return _PARSERS[kind](base, detail)


def _spot(base: Message, detail: Mapping[str, Any]) -> Message:
    action = _choice(detail, "instance-action", SPOT_ACTIONS)
    return replace(base, instance_ids=(_instance_id(detail),), instance_action=action)


def _rebalance(base: Message, detail: Mapping[str, Any]) -> Message:
    return replace(base, instance_ids=(_instance_id(detail),))


def _state_change(base: Message, detail: Mapping[str, Any]) -> Message:
    state = _choice(detail, "state", INSTANCE_STATES)
    return replace(base, instance_ids=(_instance_id(detail),), state=state)


def _reservation(base: Message, detail: Mapping[str, Any]) -> Message:
    # Only the instance is required: the action and termination time are read when present, since the
    # warning means termination in two minutes either way.
    action = _choice(detail, "instance-action", SPOT_ACTIONS) if "instance-action" in detail else ""
    termination = None
    if "instance-termination-time" in detail:
        termination = _timestamp(
            _string(detail, "instance-termination-time", "detail.instance-termination-time"),
            "detail.instance-termination-time",
        )
    return replace(base, instance_ids=(_instance_id(detail),), instance_action=action, not_after=termination)


def _health(base: Message, detail: Mapping[str, Any]) -> Message:
    service = _string(detail, "service", "detail.service")
    category = _string(detail, "eventTypeCategory", "detail.eventTypeCategory")
    code = detail.get("eventTypeCode", "")
    if not isinstance(code, str):
        raise EventError("detail.eventTypeCode", f"expected a string, got {_kind_of(code)}")
    entities = detail.get("affectedEntities", [])
    if not isinstance(entities, list):
        raise EventError("detail.affectedEntities", f"expected a list, got {_kind_of(entities)}")
    instances: list[str] = []
    for index, entity in enumerate(entities):
        path = f"detail.affectedEntities[{index}]"
        if not isinstance(entity, Mapping):
            raise EventError(path, f"expected an object, got {_kind_of(entity)}")
        value = _string(entity, "entityValue", f"{path}.entityValue")
        # A Health event for EC2 can name other entities (volumes, hosts); only instances are nodes.
        if _INSTANCE_ID.match(value) and value not in instances:
            instances.append(value)
    start = None
    if "startTime" in detail:
        start = _health_time(_string(detail, "startTime", "detail.startTime"), "detail.startTime")
    return replace(
        base,
        instance_ids=tuple(instances),
        service=service,
        category=category,
        type_code=code,
        not_after=start,
    )


_PARSERS: Mapping[str, Callable[[Message, Mapping[str, Any]], Message]] = {
    SPOT_WARNING: _spot,
    REBALANCE_RECOMMENDATION: _rebalance,
    STATE_CHANGE: _state_change,
    HEALTH: _health,
    RESERVATION_WARNING: _reservation,
}


def render_event(message: Message) -> dict[str, Any]:
    """The EventBridge event AWS would send for this message (times rendered to whole seconds)."""
    detail: dict[str, Any]
    if message.kind == HEALTH:
        detail = {
            "eventArn": f"arn:aws:health:{message.region or 'us-east-1'}::event/EC2/{message.type_code}/{message.id}",
            "service": message.service,
            "eventTypeCode": message.type_code,
            "eventTypeCategory": message.category,
            "affectedEntities": [{"entityValue": i} for i in message.instance_ids],
        }
        if message.not_after is not None:
            detail["startTime"] = _iso(message.not_after)
    else:
        detail = {"instance-id": message.instance_ids[0]}
        if message.instance_action:
            detail["instance-action"] = message.instance_action
        if message.kind == STATE_CHANGE:
            detail["state"] = message.state
        if message.kind == RESERVATION_WARNING and message.not_after is not None:
            detail["instance-termination-time"] = _iso(message.not_after)
    region = message.region or "us-east-1"
    account = message.account or "123456789012"
    return {
        "version": "0",
        "id": message.id,
        "detail-type": message.detail_type,
        "source": message.source,
        "account": account,
        "time": _iso(message.time),
        "region": region,
        "resources": [f"arn:aws:ec2:{region}:{account}:instance/{i}" for i in message.instance_ids],
        "detail": detail,
    }


def _string(parent: Mapping[str, Any], key: str, path: str) -> str:
    value = parent.get(key)
    if value is None:
        raise EventError(path, "missing")
    if not isinstance(value, str):
        raise EventError(path, f"expected a string, got {_kind_of(value)}")
    if not value.strip():
        raise EventError(path, "empty")
    return value


def _choice(parent: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    path = f"detail.{key}"
    value = _string(parent, key, path)
    if value not in allowed:
        raise EventError(path, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _instance_id(detail: Mapping[str, Any]) -> str:
    value = _string(detail, "instance-id", "detail.instance-id")
    if not _INSTANCE_ID.match(value):
        raise EventError("detail.instance-id", f"{value!r} is not an EC2 instance id (i- and 8 to 32 hex digits)")
    return value


def _timestamp(value: str, path: str) -> float:
    """RFC 3339 with a zone (EventBridge writes yyyy-mm-ddThh:mm:ssZ) -> epoch seconds."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise EventError(path, f"{value!r} is not an RFC 3339 time (yyyy-mm-ddThh:mm:ssZ)") from None
    if parsed.tzinfo is None:
        raise EventError(path, f"{value!r} has no time zone (expected e.g. 2026-01-02T03:04:05Z)")
    return parsed.timestamp()


def _health_time(value: str, path: str) -> float:
    """Health writes its times as RFC 1123 (`Sat, 05 Jun 2021 15:10:09 GMT`); RFC 3339 is accepted too."""
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        parsed = None
    if parsed is not None and parsed.tzinfo is not None:
        return parsed.timestamp()
    try:
        return _timestamp(value, path)
    except EventError:
        raise EventError(path, f"{value!r} is neither an RFC 1123 nor an RFC 3339 time") from None


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}.get(
        type(value), "an object" if isinstance(value, Mapping) else type(value).__name__
    )
