"""Pod events on nodes: what restarts a node's consolidateAfter timer, at most once per node every 10 seconds."""

from __future__ import annotations

from typing import Any

from nodewright.forwarder.podevents import PodEvents


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
