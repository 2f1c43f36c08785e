"""The batch window, the per-pod re-send cadence, batch ids and payload splitting, on an injected clock."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from nodewright.forwarder.batching import (
    Batcher,
    BatchPolicy,
    PodHint,
    batch_id,
    build_payloads,
    hint_of,
)

UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


def pod(name: str, rv: str = "1", pending: bool = True, **spec: Any) -> dict[str, Any]:
    condition = UNSCHEDULABLE if pending else {"type": "PodScheduled", "status": "True"}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": rv},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec},
        "status": {"phase": "Pending", "conditions": [condition]},
    }


def names(hints: list[PodHint]) -> list[str]:
    return [h.name for h in hints]


def sent(batcher: Batcher, now: float) -> list[PodHint]:
    """Take the window and deliver it, as the run loop does after a successful Invoke."""
    hints = batcher.take(now)
    batcher.delivered((h.uid for h in hints), now)
    return hints


POLICY = BatchPolicy(idle_seconds=1.0, max_seconds=10.0, resend_initial_seconds=30.0, resend_max_seconds=120.0)


# ----------------------------------------------------------------------------------------- the window


def test_window_closes_one_idle_second_after_the_last_new_pod() -> None:
    batcher = Batcher(POLICY)
    batcher.observe(pod("a"), now=100.0)
    batcher.observe(pod("b"), now=100.6)
    assert batcher.deadline() == pytest.approx(101.6)
    assert not batcher.due(101.5)
    assert batcher.due(101.6)
    assert names(batcher.take(101.6)) == ["a", "b"]
    assert batcher.deadline() is None and not batcher.due(200.0)


def test_window_closes_ten_seconds_after_the_first_pod_even_if_pods_keep_coming() -> None:
    batcher = Batcher(POLICY)
    now = 0.0
    for i in range(20):
        batcher.observe(pod(f"p{i}"), now)
        assert batcher.due(now) == (now >= 10.0)
        now += 0.5
    assert batcher.deadline() == 10.0
    assert len(batcher.take(10.0)) == 20


def test_an_update_of_a_pod_already_in_the_window_does_not_extend_it() -> None:
    batcher = Batcher(POLICY)
    batcher.observe(pod("a", rv="1"), now=0.0)
    batcher.observe(pod("a", rv="2"), now=0.9)
    assert batcher.deadline() == 1.0
    # The newest version is what goes out.
    assert batcher.take(1.0)[0].resource_version == "2"


def test_pods_that_stop_being_pending_leave_the_window() -> None:
    batcher = Batcher(POLICY)
    batcher.observe(pod("a"), now=0.0)
    batcher.observe(pod("b"), now=0.0)
    batcher.observe(pod("a", pending=False), now=0.5)
    batcher.forget("uid-b")
    assert batcher.deadline() is None
    assert batcher.take(5.0) == []
    assert batcher.pending_count == 0


def test_daemonset_and_bound_pods_never_enter() -> None:
    batcher = Batcher(POLICY)
    daemon = pod("d")
    daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds", "controller": True}]
    assert not batcher.observe(daemon, now=0.0)
    assert not batcher.observe(pod("b", nodeName="node-1"), now=0.0)
    assert batcher.deadline() is None and batcher.pending_count == 0


def test_replace_all_forgets_pods_missing_from_a_relist() -> None:
    batcher = Batcher(POLICY)
    batcher.observe(pod("a"), now=0.0)
    batcher.observe(pod("gone"), now=0.0)
    batcher.replace_all([pod("a"), pod("c")], now=0.5)
    assert names(batcher.take(2.0)) == ["a", "c"]


# ---------------------------------------------------------------------------------- re-send back-off


def test_a_still_pending_pod_is_resent_only_after_its_backoff_which_doubles_per_delivery() -> None:
    batcher = Batcher(POLICY)
    batcher.observe(pod("a"), now=0.0)
    assert names(sent(batcher, 1.0)) == ["a"]
    # Events for the same pod during the back-off do not open a window.
    batcher.observe(pod("a", rv="2"), now=5.0)
    batcher.tick(30.9)
    assert batcher.deadline() is None
    assert batcher.next_wakeup() == 31.0
    batcher.tick(31.0)
    assert batcher.due(32.0)
    [again] = sent(batcher, 32.0)
    assert (again.name, again.delivery) == ("a", 2)
    assert batcher.deliveries("uid-a") == 2
    # Second back-off is twice the first, and the cap holds from then on.
    batcher.tick(32.0 + 59.9)
    assert batcher.deadline() is None
    batcher.tick(32.0 + 60.0)
    sent(batcher, 93.0)
    batcher.tick(93.0 + 119.9)
    assert batcher.deadline() is None
    batcher.tick(93.0 + 120.0)
    assert batcher.deadline() is not None


def test_the_default_cadence_is_karpenters_ten_second_requeue() -> None:
    batcher = Batcher()
    batcher.observe(pod("a"), now=0.0)
    now = 1.0
    for delivery in range(1, 5):
        [hint] = sent(batcher, now)
        assert hint.delivery == delivery
        assert batcher.next_wakeup() == now + 10.0
        batcher.tick(now + 10.0)
        now += 11.0


def test_an_undelivered_batch_comes_back_soon_without_counting() -> None:
    batcher = Batcher(POLICY)
    batcher.observe(pod("a"), now=0.0)
    [first] = batcher.take(1.0)
    batcher.undelivered([first.uid], 1.0)
    assert batcher.deliveries("uid-a") == 0
    batcher.tick(5.9)
    assert batcher.deadline() is None
    batcher.tick(6.0)
    [retry] = batcher.take(7.0)
    # The same delivery, so the same batch id: a retried Invoke of it, as far as the provisioner can tell.
    assert retry.delivery == first.delivery == 1
    assert batch_id([retry]) == batch_id([first])
    # A take that is never settled counts as undelivered: the pod is not lost.
    batcher.tick(12.0)
    assert batcher.due(13.0)


def test_a_pod_that_was_scheduled_and_becomes_pending_again_starts_afresh() -> None:
    batcher = Batcher(POLICY)
    batcher.observe(pod("a"), now=0.0)
    sent(batcher, 1.0)
    batcher.observe(pod("a", pending=False), now=2.0)
    batcher.observe(pod("a", rv="3"), now=3.0)
    assert batcher.deadline() == 4.0
    assert batcher.deliveries("uid-a") == 0


def test_resend_delay_is_capped_and_does_not_overflow() -> None:
    assert POLICY.resend_delay(1) == 30.0
    assert POLICY.resend_delay(2) == 60.0
    assert POLICY.resend_delay(3) == 120.0
    assert POLICY.resend_delay(10_000) == 120.0


@pytest.mark.parametrize(
    "kwargs",
    [{"idle_seconds": 0}, {"idle_seconds": 11}, {"resend_initial_seconds": 999}, {"undelivered_retry_seconds": 0}],
)
def test_policy_rejects_inconsistent_timings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BatchPolicy(**kwargs)


# ------------------------------------------------------------------------------------------- batch id


def test_batch_id_depends_on_uids_versions_and_delivery_not_order() -> None:
    a, b = hint_of(pod("a")), hint_of(pod("b"))
    assert batch_id([a, b]) == batch_id([b, a])
    assert batch_id([a, b]) != batch_id([a, hint_of(pod("b", rv="2"))])
    assert batch_id([a, b]) != batch_id([a, hint_of(pod("b"), delivery=2)])
    assert batch_id([a]) != batch_id([a, b])
    assert len(batch_id([a])) == 64 and int(batch_id([a]), 16) >= 0


def test_batch_id_is_sha256_of_sorted_uid_version_delivery_lines() -> None:
    import hashlib

    expected = hashlib.sha256(b"uid-a:1:1\nuid-b:7:3").hexdigest()
    assert batch_id([hint_of(pod("b", rv="7"), delivery=3), hint_of(pod("a"))]) == expected


# ------------------------------------------------------------------------------------------ splitting


def test_one_payload_when_the_batch_fits_and_it_carries_hints_only() -> None:
    hints = [hint_of(pod(f"p{i}", labels={"app": "web"})) for i in range(3)]
    [payload] = build_payloads(hints, "demo", "2026-01-01T00:00:00Z")
    body = json.loads(payload.body)
    assert body == {
        "batch_id": batch_id(hints),
        "cluster": "demo",
        "sent_at": "2026-01-01T00:00:00Z",
        "pods": [
            {"namespace": "default", "name": f"p{i}", "uid": f"uid-p{i}", "resourceVersion": "1"} for i in range(3)
        ],
    }
    assert payload.batch_id == body["batch_id"] and payload.pod_count == 3
    assert payload.uids == ("uid-p0", "uid-p1", "uid-p2")


def test_large_batches_split_under_the_limit_keeping_order_and_every_pod() -> None:
    hints = [hint_of(pod(f"p{i:03d}")) for i in range(200)]
    one = len(json.dumps(hints[0].to_json(), separators=(",", ":")))
    limit = 20 * one  # about 20 pods per payload
    payloads = build_payloads(hints, "demo", "2026-01-01T00:00:00Z", limit=limit)
    assert len(payloads) > 5
    out = []
    for payload in payloads:
        assert len(payload.body) <= limit
        body = json.loads(payload.body)
        assert body["batch_id"] == payload.batch_id
        out.extend(body["pods"])
    assert [p["name"] for p in out] == [h.name for h in hints]
    assert [u for p in payloads for u in p.uids] == [h.uid for h in hints]
    # Greedy packing: no payload could have taken the next payload's first pod.
    for current, following in itertools.pairwise(payloads):
        first = json.dumps(json.loads(following.body)["pods"][0], separators=(",", ":"))
        assert len(current.body) + 1 + len(first.encode()) > limit


def test_a_thousand_pods_fit_in_one_small_payload() -> None:
    hints = [hint_of(pod(f"web-7d4b9-{i:05d}")) for i in range(1000)]
    [payload] = build_payloads(hints, "demo", "t")
    assert len(payload.body) < 100_000


def test_no_pods_no_payloads() -> None:
    assert build_payloads([], "demo", "t") == []
