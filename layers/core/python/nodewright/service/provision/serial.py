"""One planner of new capacity at a time: the provisioner and the disruption workflow's LaunchReplacement.

Both read the cluster, simulate and create NodeClaims for pods that need capacity. Run side by side (a wave
of Spot interruptions and a batch of pending pods), each would plan without the other's NodeClaims and the
same pods could get capacity twice. So planning holds one lock in the state store (a conditional write, the
same mechanism as the workflow's per-node locks) from reading the cluster until its NodeClaims exist; a
second planner waits for it and then reads those NodeClaims as capacity in flight, with their nominated
pods. Launching does not need the lock: a claim launches as soon as it exists (`pipeline`), and the lock is
released once the batch's last NodeClaim does, since from then on they all count for whoever plans next.

A holder can run longer than the lock's TTL (a Lambda may run 120 s; the TTL is 60 s, so that a holder that
died frees it soon). So a heartbeat thread renews the lock every `HEARTBEAT_SECONDS` while it is held, and the
holder asks `PlannerLock.check()` before it creates each NodeClaim (fencing): a holder whose last renewal is
too old, or whose renewal found another owner, creates nothing more, and its remaining pods are planned again
(a batch: in the next window; a replacement: the step is retried). Without this, a slow holder and the next
one would both create NodeClaims for the same pods.

A planner that cannot take the lock within `LOCK_WAIT_SECONDS` gives up with a `busy` decision.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from nodewright.ports import Clock, StateStore

PLANNER_LOCK = "planner/new-capacity"
LOCK_TTL_SECONDS = 60
HEARTBEAT_SECONDS = 15.0
# The lock is not trusted this close to its expiry: the write a check lets through must land before it.
FENCE_MARGIN_SECONDS = 10
LOCK_WAIT_SECONDS = 20.0
POLL_SECONDS = 0.2


class PlannerLockLost(Exception):
    """The planner lock is no longer certainly ours: nothing more may be created under it."""


class PlannerLock:
    """The planner lock while held: when it was last renewed, and whether a renewal found another owner."""

    def __init__(self, state: StateStore, owner: str, clock: Clock, taken_at: float) -> None:
        self._state = state
        self._clock = clock
        self.owner = owner
        self.valid_until = taken_at + LOCK_TTL_SECONDS
        self.taken_by = ""  # the owner a renewal found instead of us
        self._guard = threading.Lock()

    def renew(self) -> bool:
        """Extend the lock by its TTL from now; False (and remembered) when another owner holds it. A state
        store error leaves the lock as it was: it then expires unless a later renewal succeeds."""
        now = self._clock.now()
        try:
            holder = self._state.acquire_lock(PLANNER_LOCK, self.owner, now, LOCK_TTL_SECONDS)
        except Exception:  # the heartbeat must not die of one failed write; `check` sees the age
            return False
        with self._guard:
            if holder == self.owner:
                self.valid_until = max(self.valid_until, now + LOCK_TTL_SECONDS)
                return True
            self.taken_by = self.taken_by or holder
            return False

    def check(self) -> str:
        """ "" while the lock is certainly ours; else why it is not (fencing: asked before each NodeClaim)."""
        with self._guard:
            if self.taken_by:
                return f"the planner lock was taken over by {self.taken_by}"
            left = self.valid_until - self._clock.now()
        if left < FENCE_MARGIN_SECONDS:
            return f"the planner lock was not renewed in time ({left:.0f}s of its TTL left)"
        return ""

    def fence(self) -> None:
        """Raise PlannerLockLost unless the lock is certainly ours."""
        why = self.check()
        if why:
            raise PlannerLockLost(why)


@contextmanager
def one_planner(
    state: StateStore,
    owner: str,
    clock: Clock,
    sleep: Callable[[float], None],
    wait_seconds: float = LOCK_WAIT_SECONDS,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
) -> Iterator[PlannerLock | str]:
    """Hold the planner lock for the block, renewed every `heartbeat_seconds`. Yields the held `PlannerLock`,
    or the holder that kept it (a string) when it could not be taken."""
    holder = ""
    for _ in range(max(1, int(wait_seconds / POLL_SECONDS))):
        holder = state.acquire_lock(PLANNER_LOCK, owner, clock.now(), LOCK_TTL_SECONDS)
        if holder == owner:
            break
        sleep(POLL_SECONDS)
    if holder != owner:
        yield holder
        return
    lock = PlannerLock(state, owner, clock, clock.now())
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(heartbeat_seconds):
            lock.renew()

    heartbeat = threading.Thread(target=beat, name="planner-lock-heartbeat", daemon=True)
    heartbeat.start()
    try:
        yield lock
    finally:
        stop.set()
        heartbeat.join()
        state.release_lock(PLANNER_LOCK, owner)
