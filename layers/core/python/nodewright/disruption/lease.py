"""Leases on live executions: who may hold a node for disruption, decided from the lease and its execution's status.

A lease is the item `lock / nodeclaim/<name>` of the state store: the execution that holds the node (`owner`),
whether that execution is an interruption, when it was taken and until when its TTL runs. It is valid while its
execution is RUNNING, or for `START_GRACE_SECONDS` after it was taken when Step Functions does not know the execution
yet (the planner takes a lease for the execution it is about to start). The TTL is only a backstop for when Step
Functions cannot be asked: every holder renews it as it works (`LEASE_SECONDS`).

Pure: the lease, the execution's status and the time in; a verdict with its reason out.
"""

from __future__ import annotations

from dataclasses import dataclass

LOCK_PREFIX = "nodeclaim/"
RUNNING = "RUNNING"
# Step Functions knows an execution within a second of StartExecution; a lease whose execution is still unknown
# this long after it was taken belongs to a starter that died before starting it.
START_GRACE_SECONDS = 60
# The TTL a holder writes and renews: longer than any step and any wait between two renewals.
LEASE_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class Lease:
    """One held lock: `name` (`nodeclaim/<name>` or another lock's name), the execution (or invocation) that holds
    it, whether it is an interruption's, and when it was taken and expires (epoch seconds)."""

    name: str
    owner: str
    interruption: bool = False
    acquired_at: float = 0.0
    expires_at: float = 0.0

    @property
    def nodeclaim(self) -> str:
        """The NodeClaim a disruption lease is on ("" for other locks)."""
        return self.name.removeprefix(LOCK_PREFIX) if self.name.startswith(LOCK_PREFIX) else ""


def lock_name(nodeclaim: str) -> str:
    """The lease of a NodeClaim's disruption."""
    return f"{LOCK_PREFIX}{nodeclaim}"


def live(lease: Lease, status: str, now: float) -> bool:
    """Whether `lease` still holds at `now`, given its execution's Step Functions `status` ("" when Step Functions
    does not know the execution). A TTL that ran out ends it whatever the status says."""
    if lease.expires_at <= now:
        return False
    if status == RUNNING:
        return True
    return status == "" and now - lease.acquired_at < START_GRACE_SECONDS


def keeps(held: Lease, status: str, interruption: bool, now: float) -> str:
    """Why `held` keeps its node against a newcomer ("" when the newcomer may take it over): a lease that is no
    longer live is void, and an interruption takes the node from any holder that is not one."""
    if not live(held, status, now):
        return ""
    if interruption and not held.interruption:
        return ""
    kind = "an interruption" if held.interruption else "a disruption"
    return f"execution {held.owner} ({kind}, {status.lower() or 'starting'}) holds {held.name}"


def why_void(lease: Lease, status: str, now: float) -> str:
    """Why a lease no longer holds, for the reconciliation's reasons ("" while it does)."""
    if live(lease, status, now):
        return ""
    if lease.expires_at <= now:
        return f"its lease expired {int(now - lease.expires_at)}s ago"
    if status:
        return f"its execution {lease.owner} is {status}"
    return f"its execution {lease.owner} was never started ({int(now - lease.acquired_at)}s after the lease)"
