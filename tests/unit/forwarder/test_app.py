"""The run loop's wiring with in-memory pods, Lease and provisioner, and a hand-driven clock."""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.forwarder.app import Forwarder, GoneError
from nodewright.forwarder.batching import BatchPolicy, Payload
from nodewright.forwarder.config import ForwarderConfig
from nodewright.forwarder.leader import LeasePolicy
from nodewright.forwarder.outcome import InvokeResult
from nodewright.settings import ForwarderSettings

UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


def pod(name: str, rv: str = "1", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": rv},
        "spec": {"containers": [{"name": "c"}], **spec},
        "status": {"phase": "Pending", "conditions": [UNSCHEDULABLE]},
    }


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Leases:
    """One Lease with optimistic concurrency, as the API server keeps it."""

    lease: dict[str, Any] | None = None
    version: int = 0

    def get(self) -> dict[str, Any] | None:
        return json.loads(json.dumps(self.lease)) if self.lease else None

    def create(self, spec: Mapping[str, Any]) -> bool:
        if self.lease is not None:
            return False
        self.version += 1
        self.lease = {"metadata": {"resourceVersion": str(self.version)}, "spec": dict(spec)}
        return True

    def replace(self, lease: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
        if self.lease is None or lease["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            return False
        self.version += 1
        self.lease = {"metadata": {"resourceVersion": str(self.version)}, "spec": dict(spec)}
        return True


@dataclass
class Sink:
    payloads: list[dict[str, Any]] = field(default_factory=list)
    fail: bool = False

    def invoke(self, payload: Payload) -> InvokeResult:
        self.payloads.append(json.loads(payload.body))
        if self.fail:
            return InvokeResult(False, 5, 0.1, error="throttled")
        return InvokeResult(True, 1, 0.01, {"accepted": payload.pod_count})


@dataclass
class Pods:
    """A pod source that plays scripted watch sessions: each is a list of events or an exception."""

    listing: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)
    lists: int = 0
    watched_from: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def list(self) -> tuple[list[dict[str, Any]], str]:
        self.lists += 1
        return list(self.listing), f"list-{self.lists}"

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]:
        self.watched_from.append(resource_version)
        if not self.sessions:
            self.stop.set()
            return
        session = self.sessions.pop(0)
        if isinstance(session, Exception):
            raise session
        yield from session

    def close(self) -> None:
        pass


def config(identity: str = "a", **batch: float) -> ForwarderConfig:
    return ForwarderConfig(
        settings=ForwarderSettings("demo", "provisioner", "us-east-1"),
        batch=BatchPolicy(
            **{"idle_seconds": 1.0, "max_seconds": 10.0, "resend_initial_seconds": 30.0, "resend_max_seconds": 60.0}
            | batch
        ),
        lease=LeasePolicy(lease_seconds=15, renew_deadline_seconds=10, retry_seconds=2),
        payload_limit=5 * 1024 * 1024,
        invoke_attempts=5,
        invoke_timeout_seconds=60,
        lease_name="fwd",
        lease_namespace="nodewright",
        identity=identity,
        port=8080,
        bind="127.0.0.1",
    )


def replica(identity: str, leases: Leases, sink: Sink, clock: Clock, pods: Pods | None = None, **kw: Any) -> Forwarder:
    wall = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    return Forwarder(
        config=config(identity, **kw),
        pods=pods or Pods(),
        leases=leases,
        invoker=sink,
        clock=clock,
        wall=lambda: wall,
    )


def test_only_the_leader_sends_and_a_standby_sends_everything_pending_when_it_takes_over() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    a, b = replica("a", leases, sink, clock), replica("b", leases, sink, clock)
    a.elect_once()
    b.elect_once()
    assert a.is_leader() and not b.is_leader()
    for forwarder in (a, b):
        forwarder.apply("RESET", [pod("p1"), pod("p2")])
    clock.now += 1.0
    b.step(0)
    assert sink.payloads == []  # the standby's window closed, but it does not lead
    a.step(0)
    assert len(sink.payloads) == 1 and {p["name"] for p in sink.payloads[0]["pods"]} == {"p1", "p2"}
    assert sink.payloads[0]["pods"][0] == {
        "namespace": "default",
        "name": "p1",
        "uid": "uid-p1",
        "resourceVersion": "1",
    }
    assert sink.payloads[0]["cluster"] == "demo" and sink.payloads[0]["sent_at"] == "2026-01-01T00:00:00.000000Z"
    assert a.metrics.batches.value(("ok",)) == 1 and a.metrics.batch_size.count == 1

    # a stops and hands the Lease back; b takes it on its next turn and sends what is pending.
    a.release()
    assert not a.is_leader() and leases.lease is not None and leases.lease["spec"]["holderIdentity"] == ""
    b.elect_once()
    assert b.is_leader()
    b.step(0)
    assert len(sink.payloads) == 2 and {p["name"] for p in sink.payloads[1]["pods"]} == {"p1", "p2"}


def test_a_dead_leaders_lease_is_taken_after_its_duration() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    a, b = replica("a", leases, sink, clock), replica("b", leases, sink, clock)
    a.elect_once()
    b.elect_once()
    clock.now += 14.9
    b.elect_once()
    assert not b.is_leader()
    assert not a.is_leader()  # a never renewed: it stepped down at its renew deadline already
    clock.now += 0.1
    b.elect_once()
    assert b.is_leader() and leases.lease is not None and leases.lease["spec"]["leaseTransitions"] == 1


def test_events_keep_the_pending_set_and_metrics() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    a = replica("a", leases, sink, clock)
    a.apply("RESET", [pod("p1")])
    a.apply("ADDED", pod("p2"))
    a.apply("MODIFIED", pod("p2", rv="2"))
    daemon = pod("d")
    daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds", "controller": True}]
    a.apply("ADDED", daemon)
    a.apply("DELETED", pod("p1"))
    assert a.batcher.pending_count == 1
    assert a.metrics.pending_pods_seen.value() == 2 and a.metrics.pending_pods.value() == 1


def test_an_undelivered_batch_is_sent_again_shortly_and_only_deliveries_grow_the_backoff() -> None:
    clock, leases, sink = Clock(), Leases(), Sink(fail=True)
    a = replica("a", leases, sink, clock)
    a.elect_once()
    a.apply("ADDED", pod("p1"))
    clock.now += 1.0
    a.step(0)
    assert a.metrics.batches.value(("error",)) == 1 and a.metrics.errors.value(("invoke",)) == 1
    assert a.batcher.deliveries("uid-p1") == 0
    # The failed Invoke does not count: the pod goes out again after the undelivered retry (5 s), not after
    # the re-send back-off (30 s), and under the same batch id (the same delivery).
    clock.now += 4.0
    a.step(0)
    assert len(sink.payloads) == 1
    sink.fail = False
    clock.now += 1.0
    a.step(0)
    clock.now += 1.0
    a.step(0)
    assert len(sink.payloads) == 2 and sink.payloads[1]["batch_id"] == sink.payloads[0]["batch_id"]
    assert a.batcher.deliveries("uid-p1") == 1
    # Delivered: the next send waits the re-send back-off and is a new delivery, with a new batch id.
    clock.now += 29.0
    a.elect_once()  # renews, as its elector thread does every retry period
    a.step(0)
    assert len(sink.payloads) == 2
    clock.now += 1.0
    a.step(0)
    clock.now += 1.0
    a.step(0)
    assert len(sink.payloads) == 3 and sink.payloads[2]["batch_id"] != sink.payloads[1]["batch_id"]


def test_a_large_batch_is_split_and_each_part_settles_its_own_pods() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    a = replica("a", leases, sink, clock)
    a.config = replace(a.config, payload_limit=400)
    a.elect_once()
    for i in range(6):
        a.apply("ADDED", pod(f"p{i}"))
    clock.now += 1.0
    a.step(0)
    assert len(sink.payloads) > 1
    assert sorted(p["name"] for body in sink.payloads for p in body["pods"]) == [f"p{i}" for i in range(6)]
    assert all(len(json.dumps(body, separators=(",", ":"))) <= 400 for body in sink.payloads)
    assert {a.batcher.deliveries(f"uid-p{i}") for i in range(6)} == {1}


def test_watch_relists_on_gone_and_resumes_from_the_last_version_after_errors() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    pods = Pods(
        listing=[pod("p1")],
        sessions=[
            [("ADDED", pod("p2", rv="5")), ("BOOKMARK", {"metadata": {"resourceVersion": "9"}})],
            ConnectionError("reset by peer"),
            GoneError("too old"),
            [("DELETED", pod("p1", rv="12"))],
        ],
    )
    a = replica("a", leases, sink, clock, pods)
    a.watch_loop(pods.stop)
    # list, watch from the list, resume from the bookmark (twice: after the normal end and after the
    # error), then list again after 410 Gone and watch from that list.
    assert pods.lists == 2
    assert pods.watched_from == ["list-1", "9", "9", "list-2", "12"]
    kinds = []
    while not a.events.empty():
        kinds.append(a.events.get_nowait()[0])
    assert kinds == ["RESET", "ADDED", "RESET", "DELETED"]
    assert a.metrics.errors.value(("watch",)) == 1
    assert a.ready()


def test_a_standby_with_a_closed_window_does_not_spin() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    a, b = replica("a", leases, sink, clock), replica("b", leases, sink, clock)
    a.elect_once()
    b.elect_once()
    b.apply("ADDED", pod("p1"))
    clock.now += 5.0
    assert b.batcher.due(clock.now)
    assert b.next_wait() == 1.0
    # The leader in the same state turns at once to send.
    a.apply("ADDED", pod("p1"))
    clock.now += 5.0
    a.elect_once()  # renews, as its elector thread does every retry period
    assert a.next_wait() == 0.0


def tainted_node(name: str, rv: str = "1", tainted: bool = True) -> dict[str, Any]:
    taints = [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}] if tainted else []
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": rv},
        "spec": {"providerID": f"aws:///us-east-1a/i-{name}", "taints": taints},
    }


def test_a_node_that_joins_with_the_unregistered_taint_is_reported_at_once_without_pods() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    a = replica("a", leases, sink, clock)
    a.elect_once()
    # A pod was sent long ago and is in its re-send back-off: no pod batch is due.
    a.apply("ADDED", pod("p1"))
    clock.now += 1.0
    a.step(0)
    assert len(sink.payloads) == 1
    a.apply("NODE_RESET", [])
    a.apply("NODE_ADDED", tainted_node("n1"))
    assert a.next_wait() == 0.0  # the leader turns at once to send it
    a.step(0)
    assert len(sink.payloads) == 2
    registration = sink.payloads[1]
    assert registration["pods"] == [] and registration["nodes"] == ["n1"] and registration["cluster"] == "demo"
    assert a.metrics.registrations.value(("ok",)) == 1
    assert a.metrics.nodes_awaiting_registration.value() == 1

    # Heartbeats change the node while the provisioner works: nothing more until the back-off has passed.
    a.apply("NODE_MODIFIED", tainted_node("n1", rv="2"))
    clock.now += 4.0
    a.step(0)
    assert len(sink.payloads) == 2
    # Still tainted after the back-off (its claim was not recorded yet): sent again, under a new batch id.
    clock.now += 1.0
    a.step(0)
    assert len(sink.payloads) == 3 and sink.payloads[2]["nodes"] == ["n1"]
    assert sink.payloads[2]["batch_id"] != registration["batch_id"]
    # The taint came off: the node is forgotten and never sent again.
    a.apply("NODE_MODIFIED", tainted_node("n1", rv="3", tainted=False))
    clock.now += 600.0
    a.step(0)
    assert [p["nodes"] for p in sink.payloads[3:] if "nodes" in p] == []
    assert a.metrics.nodes_awaiting_registration.value() == 0


def test_a_standby_does_not_send_registrations_and_readiness_waits_for_both_lists() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    a, b = replica("a", leases, sink, clock), replica("b", leases, sink, clock)
    nodes = Pods(listing=[tainted_node("n1")])
    b.nodes = nodes
    a.elect_once()
    b.elect_once()
    b.watch_nodes_loop(nodes.stop)
    assert not b.ready()  # pods not listed yet
    b.synced.set()
    assert b.ready()
    kind, items = b.events.get_nowait()
    assert kind == "NODE_RESET"
    b.apply(kind, items)
    assert b.registrations.due(clock.now) and b.next_wait() == 1.0  # a standby waits, it does not spin
    b.step(0)
    assert sink.payloads == []


def bound(name: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "web", "uid": f"uid-{name}", "ownerReferences": [{"kind": "Job"}]},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


def test_pod_events_go_to_the_provisioner_never_to_the_api_server() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    claims = {"n1": "claim-1"}
    a, b = (replace_nodeclaim_of(replica(identity, leases, sink, clock), claims.get) for identity in ("a", "b"))
    a.elect_once()
    b.elect_once()
    for forwarder in (a, b):
        forwarder._pod_event("RESET", [])
        forwarder._pod_event("ADDED", bound("job-0", "n1"))
        forwarder._pod_event("ADDED", bound("job-1", "n9"))  # a node nodewright did not launch: no NodeClaim
        forwarder.step(0)
    assert sink.payloads == [] and a.next_wait() == 1.0  # waiting for a payload to ride along with
    clock.now += 10.0
    a.elect_once()  # renewed, as its elector thread does every few seconds
    b.step(0)
    assert sink.payloads == []  # a standby keeps its events, and sends nothing
    a.step(0)
    [alone] = sink.payloads
    assert alone["pods"] == [] and alone["cluster"] == "demo"
    assert alone["pod_events"] == [{"nodeclaim": "claim-1", "node": "n1", "at": "2026-01-01T00:00:00Z"}]

    # The next event rides along with a pod batch; a failed Invoke puts it back for the next payload.
    clock.now += 20.0
    a.elect_once()
    a._pod_event("DELETED", bound("job-0", "n1"))
    a.apply("ADDED", pod("p1"))
    sink.fail = True
    clock.now += 1.0
    a.step(0)
    assert [p["name"] for p in sink.payloads[1]["pods"]] == ["p1"] and len(sink.payloads[1]["pod_events"]) == 1
    sink.fail = False
    # The pods' undelivered retry, then their window closes: before the events' own flush.
    clock.now += 5.0
    a.step(0)
    clock.now += 1.0
    a.step(0)
    assert sink.payloads[2]["pods"] and sink.payloads[2]["pod_events"][0]["nodeclaim"] == "claim-1"
    assert a.pod_event_outbox.count == 0


def replace_nodeclaim_of(forwarder: Forwarder, lookup: Any) -> Forwarder:
    forwarder.nodeclaim_of = lambda node, now: lookup(node)
    return forwarder
