"""What an interruption message is trusted with: checked before it may delete anything, and the deadline it sets.

An event on the interruption queue is a claim, not a fact: it may be late (SQS redelivers, a Lambda was throttled),
stale (replayed from a dead-letter queue), or forged (anyone who may send to the queue). So:

- The message must come from this stack's account and region (`message_refusal`), and a warning must arrive within
  its notice: a Spot or capacity-reservation warning received more than two minutes after it was sent (or after
  the reservation's termination time) is about an instance that is gone, or is not a warning at all.
- What EC2 says of the instance must agree (`instance_refusal`): a Spot warning, or a rebalance recommendation, for
  an instance EC2 says is not spot; a state change to stopping or terminated for an instance EC2 says is running.
- The deadline of the drain counts from receipt, never from the sender's clock (`drain_deadline`): `received +
  notice`, or the event's own deadline when that is later (a Health event's start time). Karpenter does not take
  the deadline from the event either: it deletes the NodeClaim, whose drain counts from that deletion.

Pure: the message, what EC2 said, the expected account and region and the time of receipt in; a reason out.
"""

from __future__ import annotations

from nodewright.interruption.messages import (
    HEALTH,
    REBALANCE_RECOMMENDATION,
    RESERVATION_WARNING,
    SPOT_NOTICE_SECONDS,
    SPOT_WARNING,
    STATE_CHANGE,
    Message,
)
from nodewright.ports import Instance

# How long after receipt a drain may take at least, per kind: a warning's notice; a Health event gives days, but its
# drain is never rushed below a warning's; an instance already stopping has none left.
NOTICE_SECONDS = {SPOT_WARNING: SPOT_NOTICE_SECONDS, RESERVATION_WARNING: SPOT_NOTICE_SECONDS, HEALTH: 120.0}
_WARNINGS = (SPOT_WARNING, RESERVATION_WARNING)
_RUNNING = ("pending", "running")


def message_refusal(message: Message, account: str, region: str, received: float) -> str:
    """Why no instance of `message` may be acted on ("" when it may): another account or region, or a warning
    received after its notice ran out."""
    if message.account != account:
        return f"event {message.id} is from account {message.account or '(none)'}, not this stack's {account}"
    if message.region != region:
        return f"event {message.id} is from region {message.region or '(none)'}, not this stack's {region}"
    if message.kind in _WARNINGS:
        ends = message.not_after if message.not_after is not None else message.time + SPOT_NOTICE_SECONDS
        if received > ends:
            late = int(received - message.time)
            return f"warning {message.id} received {late}s after it was sent, past its notice: stale or not real"
    return ""


def instance_refusal(message: Message, instance: Instance) -> str:
    """Why `message` may not act on `instance`, as EC2 describes it now ("" when it may)."""
    if message.kind in (SPOT_WARNING, REBALANCE_RECOMMENDATION) and instance.capacity_type != "spot":
        return f"EC2 says {instance.id} is {instance.capacity_type or 'not'} capacity, not spot"
    if message.kind == STATE_CHANGE and instance.state in _RUNNING:
        return f"EC2 says {instance.id} is {instance.state}, not {message.state}"
    return ""


def drain_deadline(message: Message, received: float) -> float | None:
    """When the drain deletes what it could not evict: `received` plus the kind's notice, or the event's own
    deadline when that is later; None when the event sets none (a Health event without a start time)."""
    own = message.deadline
    if message.kind == REBALANCE_RECOMMENDATION or (message.kind == HEALTH and own is None):
        return None
    floor = received + NOTICE_SECONDS.get(message.kind, 0.0)
    return floor if own is None else max(floor, own)
