"""interruption.trust: a deadline counts from receipt and never rushes a drain; what EC2 says outranks the event."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from test_interruption_messages import messages  # the message generator of the parser's properties

from nodewright.interruption.messages import (
    HEALTH,
    REBALANCE_RECOMMENDATION,
    RESERVATION_WARNING,
    SPOT_WARNING,
    STATE_CHANGE,
    Message,
)
from nodewright.interruption.trust import NOTICE_SECONDS, drain_deadline, instance_refusal, message_refusal
from nodewright.ports import Instance

T = 1_772_366_400.0


@given(messages(), st.floats(min_value=-3600, max_value=3600))
def test_a_deadline_never_comes_sooner_than_the_notice_after_receipt(message: Message, delay: float) -> None:
    received = message.time + delay
    deadline = drain_deadline(message, received)
    if message.kind == REBALANCE_RECOMMENDATION or (message.kind == HEALTH and message.deadline is None):
        assert deadline is None
        return
    assert deadline is not None
    assert deadline >= received + NOTICE_SECONDS.get(message.kind, 0.0)
    if message.deadline is not None and message.deadline > received + NOTICE_SECONDS.get(message.kind, 0.0):
        assert deadline == message.deadline  # a later deadline the event itself sets is kept


def warning(kind: str = SPOT_WARNING, **fields: object) -> Message:
    base = {"account": "123456789012", "region": "us-east-1"}
    return Message(id="evt-1", kind=kind, time=T, instance_ids=("i-0123456789abcdef0",), **{**base, **fields})  # type: ignore[arg-type]


def test_a_warning_is_trusted_within_its_notice_and_refused_after() -> None:
    assert message_refusal(warning(), "123456789012", "us-east-1", T + 119) == ""
    assert "past its notice" in message_refusal(warning(), "123456789012", "us-east-1", T + 121)
    later = warning(RESERVATION_WARNING, not_after=T + 600)
    assert message_refusal(later, "123456789012", "us-east-1", T + 300) == ""
    assert "past its notice" in message_refusal(later, "123456789012", "us-east-1", T + 601)
    # A state change has no notice: the instance is going already, however late the event comes.
    assert message_refusal(warning(STATE_CHANGE, state="stopping"), "123456789012", "us-east-1", T + 3600) == ""


def test_an_envelope_without_an_account_or_region_is_refused() -> None:
    assert "from account (none)" in message_refusal(warning(account=""), "123456789012", "us-east-1", T)
    assert "from region (none)" in message_refusal(warning(region=""), "123456789012", "us-east-1", T)


def test_ec2_outranks_the_event() -> None:
    spot = Instance("i-0123456789abcdef0", "m5.large", "us-east-1a", "running", "spot")
    on_demand = Instance("i-0123456789abcdef0", "m5.large", "us-east-1a", "running", "on-demand")
    assert instance_refusal(warning(), spot) == ""
    assert "not spot" in instance_refusal(warning(), on_demand)
    assert "not spot" in instance_refusal(warning(REBALANCE_RECOMMENDATION), on_demand)
    assert "is running, not stopping" in instance_refusal(warning(STATE_CHANGE, state="stopping"), spot)
    stopped = Instance("i-0123456789abcdef0", "m5.large", "us-east-1a", "stopping", "on-demand")
    assert instance_refusal(warning(STATE_CHANGE, state="stopping"), stopped) == ""
