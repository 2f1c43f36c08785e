"""The planner lock outlives a slow holder (heartbeat) and a holder that lost it creates nothing (fencing)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from service_fakes import FakeCloud, FixedClock, SmallCatalog, nodeclass, nodepool, pod
from test_provision_service import actions, batch_of, world

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.ports import ProvisioningView
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


class LaggingCache(InMemoryCluster):
    """The watch cache (resourceVersion=0) has not seen the NodeClaims created since `freeze()`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cached_claims: list[dict[str, Any]] | None = None

    def freeze(self) -> None:
        self.cached_claims = [dict(c) for c in self.of_kind("NodeClaim")]

    def read_for_provisioning(self) -> ProvisioningView:
        view = super().read_for_provisioning()
        return view if self.cached_claims is None else replace(view, nodeclaims=list(self.cached_claims))


def test_a_planner_that_takes_the_lock_right_after_another_created_nodeclaims_counts_them_despite_a_lagging_cache() -> (
    None
):
    """Issue 21 item 12: one pod, two instances. The first batch creates a NodeClaim for the pod; the watch cache
    has not seen it when the next batch (the pod sent again) takes the lock."""
    clock = FixedClock()
    cluster = LaggingCache([nodepool(), nodeclass(), pod("web-0")], clock=clock.now)
    cloud, state = FakeCloud(cluster_log=cluster.log), InMemoryState()
    cluster.freeze()
    first = provision(batch_of(cluster, "b1"), cluster, cloud, state, clock, CATALOG)
    assert len(first.launched) == 1
    clock.t += 5
    second = provision(batch_of(cluster, "b2"), cluster, cloud, state, clock, CATALOG)
    assert not second.launched and len(cloud.fleets) == 1
    assert [d.subject for d in actions(second, "waiting")] == ["pod/web/web-0"]
