"""decide(): what each event does to owned and foreign instances, and the ownership map it reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_interruption_messages import messages  # the message generator of the parser's properties

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
from nodewright.interruption.decide import IGNORE, INTERRUPT, REBALANCE_ACTION, decide
from nodewright.interruption.messages import (
    HEALTH,
    REBALANCE_RECOMMENDATION,
    RESERVATION_WARNING,
    SPOT_WARNING,
    STATE_CHANGE,
    Message,
)
from nodewright.interruption.ownership import OwnedInstance, owned_instances, parse_provider_id

T = 1_772_366_400.0
NOW = T + 3
MINE = "i-0123456789abcdef0"
FOREIGN = "i-0fedcba9876543210"
OWNED = {
    MINE: OwnedInstance(MINE, "default-abc12", "ip-10-0-1-5", "m5.large", "us-east-1a", "spot"),
}


def message(kind: str, *ids: str, **fields: object) -> Message:
    return Message(id="evt-1", kind=kind, time=T, instance_ids=ids or (MINE,), **fields)  # type: ignore[arg-type]


def only_command(plan_commands: tuple[DisruptionCommand, ...]) -> DisruptionCommand:
    assert len(plan_commands) == 1
    return plan_commands[0]


def test_spot_warning_interrupts_forcefully_with_a_two_minute_deadline_and_marks_the_offering() -> None:
    plan = decide(message(SPOT_WARNING, instance_action="terminate"), OWNED, "replace", NOW)
    assert plan.action == INTERRUPT
    command = only_command(plan.commands)
    assert command == DisruptionCommand(
        nodeclaim="default-abc12",
        node="ip-10-0-1-5",
        instance_id=MINE,
        reason=SPOT_INTERRUPTION,
        forceful=True,
        trigger="evt-1",
        requested_at=NOW,
        deadline=NOW + 120,  # two minutes from receipt, not from the event's time
        action=DISRUPT,
    )
    assert set(plan.unavailable) == {("m5.large", "us-east-1a", "spot")}
    assert "evt-1" in plan.unavailable[("m5.large", "us-east-1a", "spot")]
    assert plan.decisions[0].notify
    assert "2026-03-01T12:02:03Z" in plan.reason


def test_a_redelivered_event_names_the_same_execution() -> None:
    first = only_command(decide(message(SPOT_WARNING, instance_action="stop"), OWNED, "replace", NOW).commands)
    again = only_command(decide(message(SPOT_WARNING, instance_action="stop"), OWNED, "replace", NOW + 60).commands)
    assert first.execution_name() == again.execution_name()


def test_spot_warning_without_offering_labels_marks_nothing() -> None:
    owned = {MINE: OwnedInstance(MINE, "default-abc12")}
    plan = decide(message(SPOT_WARNING, instance_action="terminate"), owned, "replace", NOW)
    assert plan.action == INTERRUPT
    assert dict(plan.unavailable) == {}


@pytest.mark.parametrize(
    ("kind", "fields", "reason", "deadline"),
    [
        # Counted from receipt, never earlier than the notice allows (the event's own deadline only when later).
        (RESERVATION_WARNING, {"not_after": T + 90}, RESERVATION_INTERRUPTION, NOW + 120),
        (RESERVATION_WARNING, {"not_after": T + 600}, RESERVATION_INTERRUPTION, T + 600),
        (STATE_CHANGE, {"state": "stopping"}, INSTANCE_STOPPING, NOW),
        (STATE_CHANGE, {"state": "terminated"}, INSTANCE_STOPPING, NOW),
        (
            HEALTH,
            {"service": "EC2", "category": "scheduledChange", "not_after": T + 86400},
            SCHEDULED_CHANGE,
            T + 86400,
        ),
        (HEALTH, {"service": "EC2", "category": "scheduledChange"}, SCHEDULED_CHANGE, None),
    ],
)
def test_involuntary_events_interrupt_forcefully(
    kind: str, fields: dict[str, object], reason: str, deadline: float | None
) -> None:
    plan = decide(message(kind, **fields), OWNED, "replace", NOW)
    assert plan.action == INTERRUPT
    command = only_command(plan.commands)
    assert (command.reason, command.forceful, command.deadline, command.action) == (reason, True, deadline, DISRUPT)
    assert dict(plan.unavailable) == {}  # only a Spot warning says the offering is short


@pytest.mark.parametrize(
    ("kind", "fields", "why"),
    [
        (STATE_CHANGE, {"state": "running"}, "instance state 'running' is not one nodewright acts on"),
        (STATE_CHANGE, {"state": "pending"}, "instance state 'pending'"),
        (HEALTH, {"service": "RDS", "category": "scheduledChange"}, "service 'RDS'"),
        (HEALTH, {"service": "EC2", "category": "issue"}, "category 'issue'"),
    ],
)
def test_events_that_take_nothing_away_are_ignored_with_the_reason(
    kind: str, fields: dict[str, object], why: str
) -> None:
    plan = decide(message(kind, **fields), OWNED, "replace", NOW)
    assert plan.action == IGNORE
    assert plan.commands == ()
    assert why in plan.reason
    assert not any(d.notify for d in plan.decisions)


def test_foreign_instances_are_ignored_and_owned_ones_still_acted_on() -> None:
    plan = decide(message(HEALTH, FOREIGN, MINE, service="EC2", category="scheduledChange"), OWNED, "replace", NOW)
    by_id = {d.instance_id: d for d in plan.decisions}
    assert by_id[FOREIGN].action == IGNORE
    assert "not an instance of this cluster" in by_id[FOREIGN].reason
    assert by_id[FOREIGN].command is None
    assert by_id[MINE].action == INTERRUPT
    assert plan.action == INTERRUPT
    only_command(plan.commands)


def test_a_foreign_spot_warning_marks_nothing() -> None:
    plan = decide(message(SPOT_WARNING, FOREIGN, instance_action="terminate"), OWNED, "replace", NOW)
    assert plan.action == IGNORE
    assert dict(plan.unavailable) == {}


def test_health_event_without_instances_is_ignored() -> None:
    plan = decide(
        Message(id="e", kind=HEALTH, time=T, instance_ids=(), service="EC2", category="scheduledChange"),
        OWNED,
        "replace",
        NOW,
    )
    assert (plan.action, plan.decisions) == (IGNORE, ())
    assert "names no EC2 instance" in plan.reason


def test_rebalance_replace_prepares_without_draining() -> None:
    plan = decide(message(REBALANCE_RECOMMENDATION), OWNED, "replace", NOW)
    assert plan.action == REBALANCE_ACTION
    command = only_command(plan.commands)
    assert (command.reason, command.action, command.forceful, command.deadline) == (REBALANCE, PREPARE, False, None)
    assert "PreferNoSchedule" in plan.reason


def test_rebalance_drain_is_a_voluntary_disruption() -> None:
    plan = decide(message(REBALANCE_RECOMMENDATION), OWNED, "drain", NOW)
    assert plan.action == REBALANCE_ACTION
    command = only_command(plan.commands)
    assert (command.reason, command.action, command.forceful, command.deadline) == (REBALANCE, DISRUPT, False, None)


def test_rebalance_ignore_starts_nothing_but_records_an_event() -> None:
    plan = decide(message(REBALANCE_RECOMMENDATION), OWNED, "ignore", NOW)
    assert (plan.action, plan.commands) == (IGNORE, ())
    assert plan.decisions[0].notify and plan.decisions[0].node == "ip-10-0-1-5"


def test_prepare_and_disrupt_for_one_event_are_different_executions() -> None:
    prepare = only_command(decide(message(REBALANCE_RECOMMENDATION), OWNED, "replace", NOW).commands)
    drain = only_command(decide(message(REBALANCE_RECOMMENDATION), OWNED, "drain", NOW).commands)
    assert prepare.execution_name() != drain.execution_name()


def test_unknown_rebalance_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="rebalance mode 'sometimes'"):
        decide(message(REBALANCE_RECOMMENDATION), OWNED, "sometimes", NOW)


# --- ownership ---------------------------------------------------------------------------------------


def claim(name: str, provider_id: str = "", node_name: str = "", **labels: str) -> dict[str, object]:
    status = {k: v for k, v in {"providerID": provider_id, "nodeName": node_name}.items() if v}
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": labels},
        "status": status,
    }


def node(name: str, provider_id: str, **labels: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": provider_id},
    }


def test_provider_ids() -> None:
    assert parse_provider_id(f"aws:///us-east-1a/{MINE}") == ("us-east-1a", MINE)
    assert parse_provider_id(f"aws:///{MINE}") is None
    assert parse_provider_id("kwok://node-1") is None
    assert parse_provider_id("") is None


def test_ownership_by_nodeclaim_provider_id_with_the_node_by_provider_id_or_name() -> None:
    claims = [
        claim(
            "a",
            f"aws:///us-east-1a/{MINE}",
            **{"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/capacity-type": "spot"},
        ),
        claim("b", f"aws:///us-east-1b/{FOREIGN}", node_name="named-b"),
        claim("pending"),  # not launched: no instance
    ]
    nodes = [
        node("node-a", f"aws:///us-east-1a/{MINE}", **{"topology.kubernetes.io/zone": "us-east-1a"}),
        node("named-b", "aws:///us-east-1b/i-00000000000000000", **{"node.kubernetes.io/instance-type": "c6g.xlarge"}),
        node("stray", "aws:///us-east-1c/i-0999999999999999a"),  # no NodeClaim: not ours to disrupt
    ]
    owned = owned_instances(claims, nodes)
    assert owned == {
        MINE: OwnedInstance(MINE, "a", "node-a", "m5.large", "us-east-1a", "spot"),
        FOREIGN: OwnedInstance(FOREIGN, "b", "named-b", "c6g.xlarge", "us-east-1b", ""),
    }


# --- a property over every kind of message ------------------------------------------------------------


@given(messages(), st.data())
def test_commands_only_for_owned_instances_and_named_by_the_event(message: Message, data: st.DataObject) -> None:
    owned_ids = data.draw(st.sets(st.sampled_from(message.instance_ids))) if message.instance_ids else set()
    owned = {i: OwnedInstance(i, f"claim-{i}", f"node-{i}", "m5.large", "us-east-1a", "spot") for i in owned_ids}
    mode = data.draw(st.sampled_from(["replace", "drain", "ignore"]))
    plan = decide(message, owned, mode, message.time + 1)

    assert [d.instance_id for d in plan.decisions] == list(message.instance_ids)
    for decision in plan.decisions:
        assert decision.reason
        if decision.command is not None:
            assert decision.instance_id in owned
            assert decision.command.trigger == message.id
            assert decision.command.nodeclaim == f"claim-{decision.instance_id}"
            assert decision.command.forceful == (decision.action == INTERRUPT)
        if decision.instance_id not in owned:
            assert decision.action == IGNORE and decision.command is None and not decision.notify
    # Offerings are marked only for a Spot warning, and only for instances that are ours.
    assert bool(plan.unavailable) == (message.kind == SPOT_WARNING and bool(owned) and plan.action == INTERRUPT)
    names = [c.execution_name() for c in plan.commands]
    assert len(names) == len(set(names))
    assert plan.action in (INTERRUPT, REBALANCE_ACTION, IGNORE) and plan.reason
