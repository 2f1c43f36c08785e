"""Leader election over a coordination.k8s.io/v1 Lease: the decisions, without the I/O. Pure.

It follows client-go's leaderelection: a candidate never compares the Lease's `renewTime` with its own
clock (clocks of two nodes differ); it notes when it last saw the record change on its own monotonic clock,
and considers the holder gone when the record has not changed for `leaseDurationSeconds`. The holder
renews every `renew_seconds` and steps down if it could not renew within `renew_deadline_seconds`, which
is shorter than the lease, so two replicas never both believe they lead. An empty `holderIdentity` (a
released lease) is free at once.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    """Seconds: lease duration, how often the holder renews, and how long it may fail before stepping down."""

    lease_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_seconds: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_seconds < self.renew_deadline_seconds < self.lease_seconds:
            raise ValueError("leader election needs 0 < retry_seconds < renew_deadline_seconds < lease_seconds")


class Action(Enum):
    CREATE = "create"  # no Lease exists: create it naming us
    ACQUIRE = "acquire"  # the Lease is free or expired: take it (update with its resourceVersion)
    RENEW = "renew"  # we hold it: update renewTime
    WAIT = "wait"  # someone else holds a live lease


def micro_time(at: datetime.datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    return at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(slots=True)
class Elector:
    """One candidate's view of the Lease. Feed it each read (`decide`) and each write's outcome.

    Invariant: `is_leader(now)` is true only while our last successful write is younger than the renew
    deadline, whatever the API server says later.
    """

    identity: str
    policy: LeasePolicy = field(default_factory=LeasePolicy)
    _observed: tuple[Any, ...] | None = None
    _observed_at: float = 0.0
    _renewed_at: float | None = None  # monotonic time of our last successful create/acquire/renew

    def decide(self, lease: Mapping[str, Any] | None, now: float) -> Action:
        """What to do given the Lease as read now (None if it does not exist)."""
        if lease is None:
            return Action.CREATE
        spec = lease.get("spec") if isinstance(lease.get("spec"), Mapping) else {}
        holder = (spec or {}).get("holderIdentity") or ""
        record = (holder, (spec or {}).get("renewTime"), (spec or {}).get("leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        if holder == self.identity:
            return Action.RENEW
        if not holder:
            return Action.ACQUIRE
        duration = (spec or {}).get("leaseDurationSeconds") or self.policy.lease_seconds
        if now - self._observed_at >= float(duration):
            return Action.ACQUIRE
        return Action.WAIT

    def lease_spec(self, lease: Mapping[str, Any] | None, action: Action, wall: datetime.datetime) -> dict[str, Any]:
        """The Lease spec to write for CREATE, ACQUIRE or RENEW (wall-clock times are for humans only)."""
        spec = dict((lease or {}).get("spec") or {})
        transitions = int(spec.get("leaseTransitions") or 0)
        stamp = micro_time(wall)
        out = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.policy.lease_seconds),
            "renewTime": stamp,
            "acquireTime": spec.get("acquireTime") or stamp,
            "leaseTransitions": transitions,
        }
        if action is not Action.RENEW:
            out["acquireTime"] = stamp
            out["leaseTransitions"] = transitions + (1 if action is Action.ACQUIRE else 0)
        return out

    def release_spec(self, lease: Mapping[str, Any], wall: datetime.datetime) -> dict[str, Any] | None:
        """The spec that hands the Lease back on shutdown (None when we do not hold it)."""
        spec = dict(lease.get("spec") or {})
        if spec.get("holderIdentity") != self.identity:
            return None
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=micro_time(wall))
        return spec

    def succeeded(self, now: float) -> None:
        """A create/acquire/renew write went through at `now`."""
        self._renewed_at = now

    def lost(self) -> None:
        """We learnt we do not hold the Lease (someone else does, a write conflicted, or we released it)."""
        self._renewed_at = None

    def is_leader(self, now: float) -> bool:
        return self._renewed_at is not None and now - self._renewed_at < self.policy.renew_deadline_seconds
