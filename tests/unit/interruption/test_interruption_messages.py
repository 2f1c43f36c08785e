"""The event parsers: each of the five event shapes, the errors that name what is wrong, and two properties
(any well-formed event round-trips through render_event; removing any required field is reported by path)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.interruption.messages import (
    HEALTH,
    INSTANCE_STATES,
    REBALANCE_RECOMMENDATION,
    RESERVATION_WARNING,
    SPOT_ACTIONS,
    SPOT_WARNING,
    STATE_CHANGE,
    EventError,
    Message,
    parse_event,
    render_event,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "events"
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()


def event(source: str, detail_type: str, detail: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "e-1",
        "detail-type": detail_type,
        "source": source,
        "account": "123456789012",
        "time": "2026-03-01T12:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": detail,
        **top,
    }


def spot(**detail: Any) -> dict[str, Any]:
    return event(
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        {"instance-id": "i-0123456789abcdef0", "instance-action": "terminate", **detail},
    )


def test_spot_warning_deadline_is_two_minutes_after_the_event() -> None:
    message = parse_event(spot())
    assert message.kind == SPOT_WARNING
    assert message.id == "e-1"
    assert message.instance_ids == ("i-0123456789abcdef0",)
    assert message.time == T0
    assert message.instance_action == "terminate"
    assert message.deadline == T0 + 120


def test_spot_hibernation_has_no_notice_period() -> None:
    assert parse_event(spot(**{"instance-action": "hibernate"})).deadline == T0


def test_rebalance_has_no_deadline() -> None:
    message = parse_event(
        event("aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": "i-0123456789abcdef0"})
    )
    assert message.kind == REBALANCE_RECOMMENDATION
    assert message.deadline is None


def test_state_change_reads_the_state_and_its_deadline_is_now() -> None:
    message = parse_event(
        event(
            "aws.ec2",
            "EC2 Instance State-change Notification",
            {"instance-id": "i-0123456789abcdef0", "state": "shutting-down"},
        )
    )
    assert (message.kind, message.state, message.deadline) == (STATE_CHANGE, "shutting-down", T0)


def test_reservation_warning_takes_the_termination_time_when_given() -> None:
    detail = {"instance-id": "i-0123456789abcdef0", "instance-action": "terminate", "azId": "use1-az1"}
    base = event("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", detail)
    assert parse_event(base).deadline == T0 + 120
    with_time = copy.deepcopy(base)
    with_time["detail"]["instance-termination-time"] = "2026-03-01T12:01:30Z"
    message = parse_event(with_time)
    assert message.kind == RESERVATION_WARNING
    assert message.deadline == T0 + 90


def test_health_event_keeps_only_instances_and_reads_an_rfc1123_start_time() -> None:
    message = parse_event(
        event(
            "aws.health",
            "AWS Health Event",
            {
                "service": "EC2",
                "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
                "eventTypeCategory": "scheduledChange",
                "startTime": "Sun, 01 Mar 2026 14:00:00 GMT",
                "affectedEntities": [
                    {"entityValue": "i-0123456789abcdef0"},
                    {"entityValue": "vol-0123456789abcdef0"},
                    {"entityValue": "i-0123456789abcdef1"},
                    {"entityValue": "i-0123456789abcdef0"},
                ],
            },
        )
    )
    assert message.kind == HEALTH
    assert message.instance_ids == ("i-0123456789abcdef0", "i-0123456789abcdef1")
    assert (message.service, message.category) == ("EC2", "scheduledChange")
    assert message.deadline == T0 + 2 * 3600


@pytest.mark.parametrize(
    ("mutate", "path", "problem"),
    [
        (lambda e: e["detail"].pop("instance-id"), "detail.instance-id", "missing"),
        (lambda e: e["detail"].update({"instance-id": 7}), "detail.instance-id", "expected a string, got a number"),
        (lambda e: e["detail"].update({"instance-id": "vol-1"}), "detail.instance-id", "is not an EC2 instance id"),
        (lambda e: e["detail"].update({"instance-action": "explode"}), "detail.instance-action", "is not one of"),
        (lambda e: e.pop("detail"), "detail", "missing"),
        (lambda e: e.update({"detail": []}), "detail", "expected an object, got a list"),
        (lambda e: e.pop("id"), "id", "missing"),
        (lambda e: e.update({"id": ""}), "id", "empty"),
        (lambda e: e.update({"time": "yesterday"}), "time", "is not an RFC 3339 time"),
        (lambda e: e.update({"time": "2026-03-01T12:00:00"}), "time", "has no time zone"),
        (lambda e: e.update({"detail-type": "EC2 Instance Launch"}), "detail-type", "no parser for source"),
        (lambda e: e.update({"source": "aws.s3"}), "detail-type", "no parser for source 'aws.s3'"),
    ],
)
def test_malformed_spot_warning_names_the_field(mutate: Any, path: str, problem: str) -> None:
    document = spot()
    mutate(document)
    with pytest.raises(EventError) as raised:
        parse_event(document)
    assert raised.value.path == path
    assert problem in raised.value.problem
    assert str(raised.value).startswith(f"{path}: ")


def test_a_non_object_is_an_error() -> None:
    with pytest.raises(EventError, match=r"^event: expected a JSON object, got a list$"):
        parse_event([1, 2])


def test_health_entity_without_value_is_named_by_index() -> None:
    document = event(
        "aws.health",
        "AWS Health Event",
        {
            "service": "EC2",
            "eventTypeCategory": "scheduledChange",
            "affectedEntities": [{"entityValue": "i-0123456789abcdef0"}, {}],
        },
    )
    with pytest.raises(EventError, match=r"^detail\.affectedEntities\[1\]\.entityValue: missing$"):
        parse_event(document)


def test_state_change_with_an_unknown_state_is_an_error() -> None:
    document = event(
        "aws.ec2", "EC2 Instance State-change Notification", {"instance-id": "i-0123456789abcdef0", "state": "melting"}
    )
    with pytest.raises(EventError, match=r"^detail\.state: 'melting' is not one of pending"):
        parse_event(document)


def test_example_events_parse_and_the_malformed_one_does_not() -> None:
    kinds = set()
    for path in sorted(EXAMPLES.glob("*.json")):
        document = json.loads(path.read_text())
        if path.name.startswith("malformed"):
            with pytest.raises(EventError):
                parse_event(document)
        else:
            kinds.add(parse_event(document).kind)
    assert kinds == {SPOT_WARNING, REBALANCE_RECOMMENDATION, STATE_CHANGE, HEALTH, RESERVATION_WARNING}


# --- properties --------------------------------------------------------------------------------------

instance_ids = st.from_regex(r"\Ai-[0-9a-f]{8,17}\Z")
times = st.integers(min_value=1_500_000_000, max_value=2_000_000_000).map(float)
event_ids = st.uuids().map(str)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from([SPOT_WARNING, REBALANCE_RECOMMENDATION, STATE_CHANGE, HEALTH, RESERVATION_WARNING]))
    common = {
        "id": draw(event_ids),
        "kind": kind,
        "time": draw(times),
        "region": "eu-west-1",
        "account": "111122223333",
    }
    if kind == HEALTH:
        ids = tuple(draw(st.lists(instance_ids, max_size=5, unique=True)))
        return Message(
            instance_ids=ids,
            service=draw(st.sampled_from(["EC2", "EBS", "RDS"])),
            category=draw(st.sampled_from(["scheduledChange", "issue", "accountNotification"])),
            type_code=draw(st.sampled_from(["", "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"])),
            not_after=draw(st.none() | times),
            **common,
        )
    one = (draw(instance_ids),)
    if kind == SPOT_WARNING:
        return Message(instance_ids=one, instance_action=draw(st.sampled_from(SPOT_ACTIONS)), **common)
    if kind == STATE_CHANGE:
        return Message(instance_ids=one, state=draw(st.sampled_from(INSTANCE_STATES)), **common)
    if kind == RESERVATION_WARNING:
        return Message(
            instance_ids=one,
            instance_action=draw(st.sampled_from(("", *SPOT_ACTIONS))),
            not_after=draw(st.none() | times),
            **common,
        )
    return Message(instance_ids=one, **common)


@given(messages())
def test_well_formed_events_round_trip(message: Message) -> None:
    rendered = render_event(message)
    assert parse_event(json.loads(json.dumps(rendered))) == message


# Required fields per kind, written from the event shapes (not read from the parser).
REQUIRED = {
    SPOT_WARNING: ["id", "source", "detail-type", "time", "detail", "detail.instance-id", "detail.instance-action"],
    REBALANCE_RECOMMENDATION: ["id", "source", "detail-type", "time", "detail", "detail.instance-id"],
    STATE_CHANGE: ["id", "source", "detail-type", "time", "detail", "detail.instance-id", "detail.state"],
    HEALTH: ["id", "source", "detail-type", "time", "detail", "detail.service", "detail.eventTypeCategory"],
    RESERVATION_WARNING: ["id", "source", "detail-type", "time", "detail", "detail.instance-id"],
}


@given(messages(), st.data())
def test_any_missing_required_field_is_named(message: Message, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(REQUIRED[message.kind]))
    document = render_event(message)
    parent: dict[str, Any] = document
    *parents, leaf = path.split(".")
    for key in parents:
        parent = parent[key]
    del parent[leaf]
    with pytest.raises(EventError) as raised:
        parse_event(document)
    assert raised.value.path == path
    assert raised.value.problem == "missing"
