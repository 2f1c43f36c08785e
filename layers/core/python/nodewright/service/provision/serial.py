"""One planner of new capacity at a time: the provisioner and the disruption workflow's LaunchReplacement.

Both read the cluster, simulate and create NodeClaims for pods that need capacity. Run side by side (a wave
of Spot interruptions and a batch of pending pods), each would plan without the other's NodeClaims and the
same pods could get capacity twice. So planning holds one lock in the state store (a conditional write, the
same mechanism as the workflow's per-node locks) from reading the cluster until its NodeClaims exist; a
second planner waits for it and then reads those NodeClaims as capacity in flight, with their nominated
pods. Launching does not need the lock: a claim launches as soon as it exists (`pipeline`), and the lock is
released once the batch's last NodeClaim does, since from then on they all count for whoever plans next.

The lock expires by itself (`LOCK_TTL_SECONDS`) should its holder die; a planner that cannot take it within
`LOCK_WAIT_SECONDS` gives up with a `busy` decision and its pods are evaluated again in the next window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from nodewright.ports import Clock, StateStore

PLANNER_LOCK = "planner/new-capacity"
LOCK_TTL_SECONDS = 60
LOCK_WAIT_SECONDS = 20.0
POLL_SECONDS = 0.2


@contextmanager
def one_planner(
    state: StateStore,
    owner: str,
    clock: Clock,
    sleep: Callable[[float], None],
    wait_seconds: float = LOCK_WAIT_SECONDS,
) -> Iterator[str]:
    """Hold the planner lock for the block. Yields "" when it is ours, else the holder that kept it."""
    holder = ""
    for _ in range(max(1, int(wait_seconds / POLL_SECONDS))):
        holder = state.acquire_lock(PLANNER_LOCK, owner, clock.now(), LOCK_TTL_SECONDS)
        if holder == owner:
            break
        sleep(POLL_SECONDS)
    if holder != owner:
        yield holder
        return
    try:
        yield ""
    finally:
        state.release_lock(PLANNER_LOCK, owner)
