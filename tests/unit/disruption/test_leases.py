"""Leases on live executions (disruption.lease, service.leases): valid while the execution runs, void at once
when it does not, taken over by an interruption, renewed by the holder, never won by two newcomers."""

from __future__ import annotations

import pytest

from nodewright.adapters.memory import InMemoryState, InMemoryWorkflows
from nodewright.disruption.lease import LEASE_SECONDS, START_GRACE_SECONDS, Lease, keeps, live, lock_name, why_void
from nodewright.service.leases import acquire, live_leases, renew

NOW = 1_800_000_000.0
NAME = lock_name("claim-a")


def lease(owner: str = "exec-1", interruption: bool = False, acquired: float = NOW - 5) -> Lease:
    return Lease(NAME, owner, interruption, acquired, acquired + LEASE_SECONDS)


@pytest.mark.parametrize(
    ("status", "acquired", "expected"),
    [
        ("RUNNING", NOW - 3000, True),
        ("SUCCEEDED", NOW - 5, False),
        ("FAILED", NOW - 5, False),
        ("ABORTED", NOW - 5, False),
        ("", NOW - 5, True),  # taken a moment before its execution is started
        ("", NOW - START_GRACE_SECONDS - 1, False),  # its starter died before StartExecution
    ],
)
def test_a_lease_holds_while_its_execution_runs_or_is_about_to_start(
    status: str, acquired: float, expected: bool
) -> None:
    assert live(lease(acquired=acquired), status, NOW) is expected
    assert bool(why_void(lease(acquired=acquired), status, NOW)) is not expected


def test_an_expired_lease_is_void_even_while_its_execution_runs() -> None:
    expired = Lease(NAME, "exec-1", False, NOW - 7200, NOW - 1)
    assert not live(expired, "RUNNING", NOW)
    assert "expired" in why_void(expired, "RUNNING", NOW)


def test_an_interruption_takes_the_node_from_a_voluntary_holder_but_not_from_another_interruption() -> None:
    assert keeps(lease(interruption=False), "RUNNING", interruption=True, now=NOW) == ""
    assert keeps(lease(interruption=True), "RUNNING", interruption=True, now=NOW)
    assert keeps(lease(interruption=False), "RUNNING", interruption=False, now=NOW)
    assert keeps(lease(interruption=True), "FAILED", interruption=False, now=NOW) == ""


def test_acquire_takes_a_free_lease_and_reenters_its_own() -> None:
    state, workflows = InMemoryState(), InMemoryWorkflows()
    assert acquire(state, workflows, NAME, "exec-1", NOW) == ""
    assert acquire(state, workflows, NAME, "exec-1", NOW + 1) == ""
    assert state.locks[NAME].owner == "exec-1"


def test_a_running_holder_keeps_its_node_and_a_dead_one_loses_it_at_once() -> None:
    state, workflows = InMemoryState(), InMemoryWorkflows()
    workflows.start("exec-1", {})
    assert acquire(state, workflows, NAME, "exec-1", NOW) == ""

    assert acquire(state, workflows, NAME, "exec-2", NOW + 10) == "exec-1"
    workflows.statuses["exec-1"] = "FAILED"
    # Long before the TTL: the execution's end is what voids the lease.
    assert acquire(state, workflows, NAME, "exec-2", NOW + 20) == ""
    assert state.locks[NAME].owner == "exec-2"


def test_a_lease_taken_for_an_execution_that_never_started_lapses_after_the_grace() -> None:
    state, workflows = InMemoryState(), InMemoryWorkflows()
    assert acquire(state, workflows, NAME, "planned-but-never-started", NOW) == ""
    assert acquire(state, workflows, NAME, "exec-2", NOW + 30) == "planned-but-never-started"
    assert acquire(state, workflows, NAME, "exec-2", NOW + START_GRACE_SECONDS + 1) == ""


def test_an_interruption_takes_over_a_running_voluntary_holder_and_records_itself_as_one() -> None:
    state, workflows = InMemoryState(), InMemoryWorkflows()
    workflows.start("drift", {})
    acquire(state, workflows, NAME, "drift", NOW)

    assert acquire(state, workflows, NAME, "spot", NOW + 1, interruption=True) == ""
    assert state.locks[NAME].owner == "spot" and state.locks[NAME].interruption
    # The voluntary holder, at its next step, finds the node is no longer its own.
    assert not renew(state, NAME, "drift", NOW + 2)
    workflows.start("spot", {})
    assert acquire(state, workflows, NAME, "second-warning", NOW + 3, interruption=True) == "spot"


def test_a_takeover_is_one_conditional_write_so_two_newcomers_cannot_both_win() -> None:
    state = InMemoryState()
    state.acquire_lock(NAME, "dead", NOW, LEASE_SECONDS)
    assert state.take_over_lock(NAME, "first", "dead", NOW, LEASE_SECONDS)
    assert not state.take_over_lock(NAME, "second", "dead", NOW, LEASE_SECONDS)
    assert state.locks[NAME].owner == "first"


def test_renewal_moves_the_expiry_so_a_long_drain_keeps_its_lease() -> None:
    state = InMemoryState()
    state.acquire_lock(NAME, "drain", NOW, LEASE_SECONDS)
    later = NOW + LEASE_SECONDS - 10
    assert renew(state, NAME, "drain", later)
    assert state.locks[NAME].expires_at == later + LEASE_SECONDS


def test_live_leases_releases_the_dead_and_ignores_the_planner_lock() -> None:
    state, workflows = InMemoryState(), InMemoryWorkflows()
    workflows.start("alive", {})
    workflows.start("finished", {})
    workflows.statuses["finished"] = "SUCCEEDED"
    state.acquire_lock(lock_name("a"), "alive", NOW, LEASE_SECONDS)
    state.acquire_lock(lock_name("b"), "finished", NOW, LEASE_SECONDS)
    state.acquire_lock("planner/new-capacity", "batch-1/abcd", NOW - 600, 3600)

    alive, dead = live_leases(state, workflows, NOW + 1)

    assert set(alive) == {lock_name("a")}
    assert {name: status for name, (_, status) in dead.items()} == {lock_name("b"): "SUCCEEDED"}
    assert set(state.locks) == {lock_name("a"), "planner/new-capacity"}
