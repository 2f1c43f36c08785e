"""Pod events on nodes: what restarts a node's consolidateAfter timer, at most once per node every 10 seconds, and
how the events reach the provisioner (which writes them; the forwarder may not)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from nodewright.forwarder.batching import Payload
from nodewright.forwarder.podevents import (
    PodEventOutbox,
    PodEvents,
    attach,
    pod_events_batch_id,
    pod_events_payload,
)
from nodewright.service.batch import PodEventHint, parse_batch


def pod(name: str, node: str = "n1", phase: str = "Running", owner: str = "ReplicaSet", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "web",
            "uid": f"u-{name}",
            "ownerReferences": [{"kind": owner}],
            **meta,
        },
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def test_a_list_is_no_event_but_binding_finishing_terminating_and_deleting_are() -> None:
    events = PodEvents(dedupe_seconds=0.0)
    events.reset([pod("a"), pod("b")])
    assert events.observe("MODIFIED", pod("a"), 1.0) == ""  # nothing changed
    assert events.observe("ADDED", pod("c", node="n2"), 2.0) == "n2"  # newly bound
    assert events.observe("MODIFIED", pod("a", phase="Succeeded"), 3.0) == "n1"  # finished
    assert events.observe("MODIFIED", pod("b", deletionTimestamp="2027-01-01T00:00:00Z"), 4.0) == "n1"
    assert events.observe("DELETED", pod("c", node="n2"), 5.0) == "n2"


def test_daemonset_pods_do_not_count() -> None:
    events = PodEvents(dedupe_seconds=0.0)
    assert events.observe("ADDED", pod("agent", owner="DaemonSet"), 1.0) == ""
    assert events.observe("DELETED", pod("agent", owner="DaemonSet"), 2.0) == ""


def test_a_node_is_written_at_most_once_per_dedupe_window() -> None:
    events = PodEvents(dedupe_seconds=10.0)
    assert events.observe("ADDED", pod("a"), 100.0) == "n1"
    assert events.observe("ADDED", pod("b"), 105.0) == ""
    assert events.observe("ADDED", pod("c", node="n2"), 105.0) == "n2"
    assert events.observe("DELETED", pod("a"), 110.0) == "n1"


E1, E2 = PodEventHint("claim-1", "n1", 1_800_000_000.0), PodEventHint("claim-2", "n2", 1_800_000_005.0)


def test_the_outbox_keeps_the_latest_event_per_claim_and_is_due_after_the_flush() -> None:
    box = PodEventOutbox(flush_seconds=10.0)
    assert not box.due(0.0) and box.next_wakeup() is None
    box.add(E1, 100.0)
    box.add(replace(E1, at=E1.at + 3), 104.0)  # a later event on the same claim replaces the time, not the wait
    box.add(replace(E1, at=E1.at - 3), 105.0)  # an older one changes nothing
    box.add(E2, 106.0)
    assert box.count == 2 and box.next_wakeup() == 110.0
    assert not box.due(109.9) and box.due(110.0)
    assert box.take() == [replace(E1, at=E1.at + 3), E2] and box.count == 0


def test_events_of_a_failed_invoke_go_again_unless_a_later_one_came() -> None:
    box = PodEventOutbox(flush_seconds=10.0)
    box.add(E1, 100.0)
    box.add(E2, 100.0)
    taken = box.take(limit=1)
    assert taken == [E1] and box.count == 1
    box.add(replace(E1, at=E1.at + 1), 101.0)
    box.undelivered(taken, 102.0)
    assert box.take() == [E2, replace(E1, at=E1.at + 1)]


def test_pod_events_ride_along_within_the_payload_limit_or_go_on_their_own() -> None:
    base = Payload("b" * 64, b'{"batch_id":"b","cluster":"demo","sent_at":"","pods":[]}', 0, ("u1",))
    joined = attach(base, [E1], limit=10_000)
    assert joined is not None and (joined.batch_id, joined.uids) == (base.batch_id, base.uids)
    body = json.loads(joined.body)
    assert body["pod_events"] == [{"nodeclaim": "claim-1", "node": "n1", "at": "2027-01-15T08:00:00Z"}]
    assert parse_batch(body).pod_events == (E1,)
    assert attach(base, [E1], limit=len(base.body) + 10) is None
    assert attach(base, [], limit=0) is base
    alone = pod_events_payload([E1, E2], "demo", "2027-01-15T08:00:10Z")
    batch = parse_batch(json.loads(alone.body))
    assert batch.pods == () and batch.nodes == () and batch.pod_events == (E1, E2)
    assert alone.batch_id == batch.batch_id == pod_events_batch_id([E2, E1])
