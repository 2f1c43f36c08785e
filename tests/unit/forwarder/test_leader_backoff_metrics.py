"""Leader-election decisions, jittered back-off and the metrics exposition."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pytest

from nodewright.forwarder.backoff import Backoff
from nodewright.forwarder.leader import Action, Elector, LeasePolicy, micro_time
from nodewright.forwarder.metrics import Counter, ForwarderMetrics, Histogram

POLICY = LeasePolicy(lease_seconds=15, renew_deadline_seconds=10, retry_seconds=2)
WALL = datetime.datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC)


def lease(holder: str, renew: str = "t1", transitions: int = 0, duration: int = 15) -> dict[str, Any]:
    return {
        "metadata": {"name": "nodewright-forwarder", "resourceVersion": "9"},
        "spec": {
            "holderIdentity": holder,
            "renewTime": renew,
            "leaseTransitions": transitions,
            "leaseDurationSeconds": duration,
        },
    }


# ------------------------------------------------------------------------------------------- leader


def test_no_lease_means_create_and_then_lead() -> None:
    elector = Elector("a", POLICY)
    assert elector.decide(None, now=0.0) is Action.CREATE
    spec = elector.lease_spec(None, Action.CREATE, WALL)
    assert spec == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "renewTime": "2026-01-01T12:00:00.123456Z",
        "acquireTime": "2026-01-01T12:00:00.123456Z",
        "leaseTransitions": 0,
    }
    assert not elector.is_leader(0.0)
    elector.succeeded(0.0)
    assert elector.is_leader(9.9)
    # Without a successful renewal the holder steps down at the renew deadline, before the lease expires.
    assert not elector.is_leader(10.0)


def test_a_live_lease_held_by_another_is_respected_until_it_stops_changing_for_its_duration() -> None:
    elector = Elector("b", POLICY)
    assert elector.decide(lease("a", "t1"), now=100.0) is Action.WAIT
    assert elector.decide(lease("a", "t2"), now=110.0) is Action.WAIT  # renewed: the clock restarts
    assert elector.decide(lease("a", "t2"), now=124.9) is Action.WAIT
    assert elector.decide(lease("a", "t2"), now=125.0) is Action.ACQUIRE
    spec = elector.lease_spec(lease("a", "t2", transitions=3), Action.ACQUIRE, WALL)
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 4


def test_the_holder_renews_keeping_acquire_time_and_transitions() -> None:
    elector = Elector("a", POLICY)
    current = lease("a", transitions=2)
    current["spec"]["acquireTime"] = "earlier"
    assert elector.decide(current, now=0.0) is Action.RENEW
    spec = elector.lease_spec(current, Action.RENEW, WALL)
    assert spec["acquireTime"] == "earlier" and spec["leaseTransitions"] == 2
    assert spec["renewTime"] == micro_time(WALL)


def test_a_released_lease_is_free_at_once_and_release_only_by_the_holder() -> None:
    holder, other = Elector("a", POLICY), Elector("b", POLICY)
    released = holder.release_spec(lease("a"), WALL)
    assert released is not None and released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
    assert other.decide({"spec": released}, now=0.0) is Action.ACQUIRE
    assert other.release_spec(lease("a"), WALL) is None


def test_losing_the_lease_ends_leadership_immediately() -> None:
    elector = Elector("a", POLICY)
    elector.succeeded(0.0)
    elector.lost()
    assert not elector.is_leader(0.1)


def test_inconsistent_lease_timings_are_refused() -> None:
    with pytest.raises(ValueError):
        LeasePolicy(lease_seconds=10, renew_deadline_seconds=10, retry_seconds=2)


# ------------------------------------------------------------------------------------------ backoff


def test_backoff_grows_is_jittered_and_bounded() -> None:
    backoff = Backoff(base=1.0, cap=8.0, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(8)]
    ceilings = [1, 2, 4, 8, 8, 8, 8, 8]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling
    assert len(set(delays)) == len(delays)  # jitter: no two equal
    backoff.reset()
    assert 0.5 <= backoff.next_delay() <= 1.0


def test_backoff_is_reproducible_with_a_seed() -> None:
    first = [Backoff(rng=random.Random(1)).next_delay() for _ in range(3)]
    assert first == [Backoff(rng=random.Random(1)).next_delay() for _ in range(3)]


# ------------------------------------------------------------------------------------------ metrics


def test_exposition_has_every_metric_with_types() -> None:
    metrics = ForwarderMetrics()
    metrics.pending_pods_seen.inc(3)
    metrics.batches.inc(labels=("ok",))
    metrics.batches.inc(labels=("error",))
    metrics.batch_size.observe(7)
    metrics.invoke_latency.observe(0.2)
    metrics.errors.inc(labels=('watch "410"\n',))
    metrics.leader.set(1)
    text = metrics.render()
    assert (
        "# TYPE nodewright_forwarder_pending_pods_seen_total counter\nnodewright_forwarder_pending_pods_seen_total 3\n"
        in text
    )
    assert 'nodewright_forwarder_batches_total{outcome="error"} 1\n' in text
    assert 'nodewright_forwarder_batches_total{outcome="ok"} 1\n' in text
    assert 'nodewright_forwarder_batch_size_pods_bucket{le="5"} 0\n' in text
    assert 'nodewright_forwarder_batch_size_pods_bucket{le="10"} 1\n' in text
    assert 'nodewright_forwarder_invoke_seconds_bucket{le="0.25"} 1\n' in text
    assert "nodewright_forwarder_invoke_seconds_count 1\n" in text
    assert 'nodewright_forwarder_errors_total{kind="watch \\"410\\"\\n"} 1\n' in text
    assert "nodewright_forwarder_leader 1\n" in text
    assert text.endswith("\n")


def test_counters_refuse_to_go_down_and_wrong_labels() -> None:
    counter = Counter("c", "help", ("a",))
    with pytest.raises(ValueError):
        counter.inc(-1, labels=("x",))
    with pytest.raises(ValueError):
        counter.inc(labels=())
    with pytest.raises(ValueError):
        Histogram("h", "help", buckets=(2.0, 1.0))
