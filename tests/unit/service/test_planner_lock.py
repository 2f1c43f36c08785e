"""The planner lock outlives a slow holder (heartbeat) and a holder that lost it creates nothing (fencing)."""

from __future__ import annotations

import time

from service_fakes import FixedClock, SmallCatalog, pod
from test_provision_service import actions, batch_of, world

from nodewright.adapters.memory import InMemoryState
from nodewright.scheduling import Results
from nodewright.service.provision import provision
from nodewright.service.provision.serial import LOCK_TTL_SECONDS, PLANNER_LOCK, PlannerLock, one_planner

CATALOG = SmallCatalog()


def test_a_planner_running_past_the_ttl_keeps_the_lock_while_its_heartbeat_renews_it() -> None:
    state, clock = InMemoryState(), FixedClock()
    taken_at = clock.t
    with one_planner(state, "slow", clock, time.sleep, heartbeat_seconds=0.01) as lock:
        assert isinstance(lock, PlannerLock)
        clock.t += 50
        deadline = time.monotonic() + 5
        while state.locks[PLANNER_LOCK].expires_at < clock.t + LOCK_TTL_SECONDS and time.monotonic() < deadline:
            time.sleep(0.01)
        clock.t += 30  # 80 s after it was taken: past the TTL of the first write
        assert state.acquire_lock(PLANNER_LOCK, "other", clock.t, LOCK_TTL_SECONDS) == "slow"
        assert lock.check() == ""
    assert clock.t - taken_at > LOCK_TTL_SECONDS
    assert state.acquire_lock(PLANNER_LOCK, "other", clock.t, LOCK_TTL_SECONDS) == "other"  # released at the end


def test_a_renewal_that_finds_another_owner_fences_the_holder() -> None:
    state, clock = InMemoryState(), FixedClock()
    lock = PlannerLock(state, "first", clock, clock.t)
    state.acquire_lock(PLANNER_LOCK, "first", clock.t, LOCK_TTL_SECONDS)
    clock.t += LOCK_TTL_SECONDS + 1
    assert state.acquire_lock(PLANNER_LOCK, "second", clock.t, LOCK_TTL_SECONDS) == "second"
    assert not lock.renew()
    assert "second" in lock.check()


def test_a_planner_slower_than_the_ttl_creates_no_nodeclaim_once_another_took_the_lock() -> None:
    """The interleaving of issue 21 item 11: the first holder plans for 70 s (no renewal lands), a second planner
    takes the expired lock and plans the same pods; the first must not create NodeClaims for them too."""
    cluster, cloud, state, clock = world(pod("web-0"), pod("web-1"))

    def slow(results: Results) -> Results:
        clock.t += 70
        assert state.acquire_lock(PLANNER_LOCK, "second-planner", clock.t, LOCK_TTL_SECONDS) == "second-planner"
        return results

    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG, plan_filter=slow)
    assert cluster.of_kind("NodeClaim") == [] and not cloud.fleets and not result.launched
    [busy] = actions(result, "busy")
    assert "planner lock" in busy.reason
    # The second planner's lock is left alone.
    assert state.locks[PLANNER_LOCK].owner == "second-planner"


def test_a_planner_whose_lock_is_about_to_expire_unrenewed_creates_nothing() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))

    def slow(results: Results) -> Results:
        clock.t += LOCK_TTL_SECONDS - 1  # nobody took it yet, but nothing renewed it either
        return results

    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG, plan_filter=slow)
    assert cluster.of_kind("NodeClaim") == [] and not cloud.fleets
    assert "not renewed in time" in actions(result, "busy")[0].reason
