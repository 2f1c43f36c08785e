"""The forwarder's run loop: five small threads around the pure core.

- the pod watcher lists pending pods, then watches from the list's resourceVersion, and queues what it sees;
  it re-lists on 410 Gone and reconnects with jittered, bounded back-off on any other failure;
- the node watcher does the same for the nodes nodewright launched, so a node that has joined but still
  carries `karpenter.sh/unregistered` is reported to the provisioner at once (registration.py), instead
  of waiting for the next batch of pods, which their re-send back-off may hold back for minutes;
- the pod-events watcher follows the pods bound to nodes and queues each node's pod events with its NodeClaim
  (podevents.py); they go to the provisioner, which writes `status.lastPodEventTime` (emptiness and consolidation
  wait `consolidateAfter` from it), with the next payload or in one of their own;
- the elector reads and writes the Lease every `retry_seconds` (leader.py decides) and releases it on
  shutdown, so the other replica takes over at once instead of after the lease duration;
- the main loop applies queued events to the `Batcher` and `Registrations`; when this replica leads and the
  window has closed, it takes the batch, splits it into payloads and invokes the provisioner, and when a
  node awaits registration, it sends a registration payload (no pods, the node names); every minute the
  leader publishes its heartbeat and the oldest pending pod's wait to CloudWatch (heartbeat.py).

Only the leader sends. A standby keeps the same pending set (it watches too), so on take-over it sends
every pending pod at once; pods the old leader had just sent may go out twice, which the provisioner
tolerates (pods nominated to NodeClaims in flight wait for them, and NodeClaim names derive from the batch).
"""

from __future__ import annotations

import datetime
import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodewright.forwarder.backoff import Backoff
from nodewright.forwarder.batching import Batcher, Payload, build_payloads, pod_uid
from nodewright.forwarder.config import ForwarderConfig
from nodewright.forwarder.heartbeat import oldest_pending_seconds
from nodewright.forwarder.leader import Action, Elector
from nodewright.forwarder.metrics import ForwarderMetrics
from nodewright.forwarder.outcome import InvokeResult, summarize
from nodewright.forwarder.podevents import PodEventOutbox, PodEvents, attach, pod_events_payload
from nodewright.forwarder.registration import Registrations, registration_payload
from nodewright.service.batch import PodEventHint

log = logging.getLogger("nodewright.forwarder")

STALL_SECONDS = 60.0  # /healthz fails when the main loop has not turned for this long (outside an Invoke)


class GoneError(Exception):
    """Raised by a pod source when its resourceVersion is too old (the caller re-lists)."""


class PodSourceLike(Protocol):
    """A list+watch source of raw objects (pods or nodes)."""

    def list(self) -> tuple[list[dict[str, Any]], str]: ...
    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]: ...
    def close(self) -> None: ...


class LeaseStoreLike(Protocol):
    def get(self) -> dict[str, Any] | None: ...
    def create(self, spec: Mapping[str, Any]) -> bool: ...
    def replace(self, lease: Mapping[str, Any], spec: Mapping[str, Any]) -> bool: ...


class InvokerLike(Protocol):
    def invoke(self, payload: Payload) -> InvokeResult: ...


class PublisherLike(Protocol):
    def publish(self, oldest_seconds: float) -> None: ...


def _fields(**values: Any) -> dict[str, Any]:
    return {"fields": values}


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass
class Forwarder:
    """One replica. `gone` is the exception type the sources raise for HTTP 410. Without `nodes` no
    registration is ever sent (the provisioner then finishes registrations when pods arrive)."""

    config: ForwarderConfig
    pods: PodSourceLike
    leases: LeaseStoreLike
    invoker: InvokerLike
    nodes: PodSourceLike | None = None
    # Pod events on nodes (forwarder.podevents): the bound pods' source, and the NodeClaim of a node (None when
    # nodewright did not launch it) given the node's name and the monotonic time.
    bound_pods: PodSourceLike | None = None
    nodeclaim_of: Callable[[str, float], str | None] | None = None
    gone: type[Exception] = GoneError
    metrics: ForwarderMetrics = field(default_factory=ForwarderMetrics)
    publisher: PublisherLike | None = None  # the heartbeat (heartbeat.py); None publishes nothing
    on_leadership: Callable[[bool], None] = lambda leading: None
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], datetime.datetime] = utc_now
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self.batcher = Batcher(self.config.batch)
        self.registrations = Registrations(self.config.registration)
        self.pod_events = PodEvents()
        self.pod_event_outbox = PodEventOutbox()
        self.elector = Elector(self.config.identity, self.config.lease)
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.synced = threading.Event()
        self.nodes_synced = threading.Event()
        self._lock = threading.Lock()  # guards the elector, which two threads use
        self._heartbeat = self.clock()
        self._sending = False
        self._was_leader = False
        self._next_heartbeat = self.clock()

    # ------------------------------------------------------------------ probes
    def alive(self) -> bool:
        return self._sending or self.clock() - self._heartbeat < STALL_SECONDS

    def ready(self) -> bool:
        return self.synced.is_set() and (self.nodes is None or self.nodes_synced.is_set())

    def is_leader(self) -> bool:
        with self._lock:
            return self.elector.is_leader(self.clock())

    # ------------------------------------------------------------------ watcher
    def watch_loop(self, stop: threading.Event) -> None:
        """Watch pending pods; their events are queued as RESET / ADDED / MODIFIED / DELETED."""
        self._watch(stop, self.pods, "", self.synced, "pods")

    def watch_nodes_loop(self, stop: threading.Event) -> None:
        """Watch nodewright's nodes; their events are queued with a `NODE_` prefix."""
        if self.nodes is not None:
            self._watch(stop, self.nodes, "NODE_", self.nodes_synced, "nodes")

    def watch_pod_events_loop(self, stop: threading.Event) -> None:
        """Watch the pods bound to nodes; their pod events are queued (`POD_EVENT`) for the provisioner."""
        if self.bound_pods is not None and self.nodeclaim_of is not None:
            self._watch(stop, self.bound_pods, "", threading.Event(), "bound pods", sink=self._pod_event)

    def _pod_event(self, kind: str, obj: Any) -> None:
        if kind == "RESET":
            self.pod_events.reset(obj)
            return
        node = self.pod_events.observe(kind, obj, self.clock())
        if not node or self.nodeclaim_of is None:
            return
        try:
            claim = self.nodeclaim_of(node, self.clock())
        except Exception as exc:
            self.metrics.errors.inc(labels=("pod-event",))
            log.warning("could not find a node's NodeClaim", extra=_fields(node=node, error=str(exc)))
            return
        if claim:  # a node without one is not nodewright's: nothing to record
            self.events.put(("POD_EVENT", PodEventHint(claim, node, self.wall().timestamp())))

    def _watch(
        self,
        stop: threading.Event,
        source: PodSourceLike,
        prefix: str,
        synced: threading.Event,
        what: str,
        sink: Callable[[str, Any], None] | None = None,
    ) -> None:
        put = sink or (lambda kind, obj: self.events.put((kind, obj)))
        backoff = Backoff(base=0.5, cap=30.0, rng=self.rng)
        resource_version = ""
        while not stop.is_set():
            try:
                if not resource_version:
                    items, resource_version = source.list()
                    put(prefix + "RESET", items)
                    synced.set()
                    log.info(f"listed {what}", extra=_fields(count=len(items), resource_version=resource_version))
                started, events = self.clock(), 0
                for kind, obj in source.watch(resource_version):
                    if stop.is_set():
                        return
                    events += 1
                    version = (obj.get("metadata") or {}).get("resourceVersion")
                    if version:
                        resource_version = str(version)
                    if kind != "BOOKMARK":
                        put(prefix + kind, obj)
                    backoff.reset()
                if not events and self.clock() - started < 1.0:
                    # A watch that ends at once with nothing (a proxy cutting it) must not become a busy loop.
                    stop.wait(backoff.next_delay())
            except self.gone:
                log.info(f"{what} watch expired (410 Gone): listing again")
                resource_version = ""
            except Exception as exc:
                if stop.is_set():
                    return
                delay = backoff.next_delay()
                self.metrics.errors.inc(labels=("watch",))
                log.warning(
                    f"{what} watch failed; reconnecting", extra=_fields(error=str(exc), retry_in=round(delay, 2))
                )
                stop.wait(delay)

    # ------------------------------------------------------------------ elector
    def elect_once(self) -> None:
        """Read the Lease and create, acquire or renew it as the elector decides."""
        lease = self.leases.get()
        with self._lock:
            now = self.clock()
            action = self.elector.decide(lease, now)
            if action is Action.WAIT:
                self.elector.lost()
                return
            spec = self.elector.lease_spec(lease, action, self.wall())
        written = self.leases.create(spec) if action is Action.CREATE else self.leases.replace(lease or {}, spec)
        with self._lock:
            if written:
                self.elector.succeeded(now)
            else:
                self.elector.lost()

    def elect_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.elect_once()
            except Exception as exc:
                # Leadership lapses by itself at the renew deadline if this keeps failing.
                self.metrics.errors.inc(labels=("lease",))
                log.warning("lease update failed", extra=_fields(error=str(exc)))
            self._leadership_changed()
            stop.wait(self.config.lease.retry_seconds)
        self.release()

    def release(self) -> None:
        """Hand the Lease back if we hold it (on shutdown)."""
        with self._lock:
            leading = self.elector.is_leader(self.clock())
            self.elector.lost()
        if not leading:
            return
        try:
            lease = self.leases.get()
            spec = self.elector.release_spec(lease, self.wall()) if lease else None
            if lease and spec and self.leases.replace(lease, spec):
                log.info("released the lease", extra=_fields(identity=self.config.identity))
        except Exception as exc:
            log.warning("could not release the lease", extra=_fields(error=str(exc)))
        self._leadership_changed()

    def _leadership_changed(self) -> None:
        leading = self.is_leader()
        self.metrics.leader.set(1 if leading else 0)
        if leading == self._was_leader:
            return
        self._was_leader = leading
        log.info("became leader" if leading else "stopped leading", extra=_fields(identity=self.config.identity))
        try:
            self.on_leadership(leading)
        except Exception as exc:
            log.warning("could not record the leadership change", extra=_fields(error=str(exc)))

    # ------------------------------------------------------------------ main loop
    def apply(self, kind: str, obj: Any) -> None:
        now = self.clock()
        if kind.startswith("NODE_"):
            self._apply_node(kind.removeprefix("NODE_"), obj)
            return
        if kind == "POD_EVENT":
            self.pod_event_outbox.add(obj, now)
            return
        if kind == "RESET":
            before = self.batcher.pending_count
            self.batcher.replace_all(obj, now)
            if self.batcher.pending_count > before:
                self.metrics.pending_pods_seen.inc(self.batcher.pending_count - before)
        elif kind == "DELETED":
            self.batcher.forget(pod_uid(obj))
        else:
            known = self.batcher.knows(pod_uid(obj))
            if self.batcher.observe(obj, now) and not known:
                self.metrics.pending_pods_seen.inc()
        self.metrics.pending_pods.set(self.batcher.pending_count)

    def _apply_node(self, kind: str, obj: Any) -> None:
        if kind == "RESET":
            self.registrations.replace_all(obj)
        elif kind == "DELETED":
            self.registrations.forget(str((obj.get("metadata") or {}).get("name") or ""))
        else:
            self.registrations.observe(obj)
        self.metrics.nodes_awaiting_registration.set(self.registrations.waiting_count)

    def step(self, wait: float) -> None:
        """Apply the events that arrive within `wait` seconds (at least one wait), then send if due."""
        try:
            kind, obj = self.events.get(timeout=max(wait, 0.0))
            self.apply(kind, obj)
            while True:
                kind, obj = self.events.get_nowait()
                self.apply(kind, obj)
        except queue.Empty:
            pass
        now = self.clock()
        self._heartbeat = now
        self.batcher.tick(now)
        if self.batcher.due(now) and self.is_leader():
            self.send(now)
        if self.registrations.due(now) and self.is_leader():
            self.send_registrations(now)
        if self.pod_event_outbox.due(now) and self.is_leader():
            self.send_pod_events()
        if self.publisher is not None and now >= self._next_heartbeat and self.is_leader():
            self.publish_heartbeat(now)

    def publish_heartbeat(self, now: float) -> None:
        """The leader's heartbeat and the oldest pending pod's wait, to CloudWatch (heartbeat.py)."""
        assert self.publisher is not None
        self._next_heartbeat = now + self.config.heartbeat_seconds
        oldest = oldest_pending_seconds(self.batcher.pending(), self.wall())
        try:
            self.publisher.publish(oldest)
        except Exception as exc:
            self.metrics.errors.inc(labels=("heartbeat",))
            log.warning("heartbeat not published", extra=_fields(error=str(exc)))

    def send_registrations(self, now: float) -> None:
        """Tell the provisioner which nodes have joined but still carry `karpenter.sh/unregistered`, or await
        initialization."""
        nodes = self.registrations.take(now)
        payload, events = self._with_pod_events(
            registration_payload(nodes, self.config.settings.cluster, self._sent_at())
        )
        self._sending = True
        try:
            result = self.invoker.invoke(payload)
        finally:
            self._sending = False
        self._settle_pod_events(events, result.ok)
        if result.ok:
            self.registrations.delivered((n.name for n in nodes), self.clock())
        self.metrics.invoke_latency.observe(result.seconds)
        self.metrics.registrations.inc(labels=("ok" if result.ok else "error",))
        details = _fields(
            batch_id=payload.batch_id,
            nodes=[n.name for n in nodes],
            sends=max(n.send for n in nodes),
            attempts=result.attempts,
            invoke_seconds=round(result.seconds, 3),
        )
        self._log_outcome(result, details, "registration sent", "registration not delivered; sent again shortly")

    def send_pod_events(self) -> None:
        """Send the queued pod events on their own: nothing else went out while the oldest waited."""
        events = self.pod_event_outbox.take()
        payload = pod_events_payload(events, self.config.settings.cluster, self._sent_at())
        self._sending = True
        try:
            result = self.invoker.invoke(payload)
        finally:
            self._sending = False
        self._settle_pod_events(events, result.ok)
        self.metrics.invoke_latency.observe(result.seconds)
        details = _fields(batch_id=payload.batch_id, pod_events=len(events), attempts=result.attempts)
        self._log_outcome(
            result, details, "pod events sent", "pod events not delivered; sent again with the next payload"
        )

    def _log_outcome(self, result: InvokeResult, details: dict[str, Any], sent: str, failed: str) -> None:
        """Log one invocation's outcome (the provisioner's summarized answer, or the error, counted)."""
        if result.ok:
            details["fields"]["response"] = summarize(result.response)
            log.info(sent, extra=details)
        else:
            self.metrics.errors.inc(labels=("invoke",))
            details["fields"]["error"] = result.error
            log.error(failed, extra=details)

    def _with_pod_events(self, payload: Payload) -> tuple[Payload, list[PodEventHint]]:
        """The payload with the queued pod events riding along (as many as the limits allow), and those events."""
        if not self.pod_event_outbox.count:
            return payload, []
        events = self.pod_event_outbox.take()
        joined = attach(payload, events, self.config.payload_limit)
        if joined is None:  # too large to carry them: they go on their own once due
            self.pod_event_outbox.undelivered(events, self.clock())
            return payload, []
        return joined, events

    def _settle_pod_events(self, events: list[PodEventHint], ok: bool) -> None:
        if events and not ok:
            self.pod_event_outbox.undelivered(events, self.clock())

    def _sent_at(self) -> str:
        return self.wall().strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def send(self, now: float) -> None:
        opened, last = self.batcher.window_opened_at, self.batcher.window_last_joined_at
        hints = self.batcher.take(now)
        payloads = build_payloads(hints, self.config.settings.cluster, self._sent_at(), self.config.payload_limit)
        self._sending = True
        try:
            for original in payloads:
                payload, events = self._with_pod_events(original)
                result = self.invoker.invoke(payload)
                self._settle_pod_events(events, result.ok)
                # Only a delivered batch counts towards a pod's re-send back-off; the pods of a failed one go
                # out again shortly, as if this send had not happened.
                if result.ok:
                    self.batcher.delivered(payload.uids, self.clock())
                else:
                    self.batcher.undelivered(payload.uids, self.clock())
                self.metrics.invoke_latency.observe(result.seconds)
                self.metrics.batch_size.observe(payload.pod_count)
                self.metrics.batches.inc(labels=("ok" if result.ok else "error",))
                details = _fields(
                    batch_id=payload.batch_id,
                    pods=payload.pod_count,
                    bytes=len(payload.body),
                    attempts=result.attempts,
                    invoke_seconds=round(result.seconds, 3),
                    window_seconds=round(now - opened, 3) if opened is not None else None,
                    since_last_pod_seconds=round(now - last, 3) if last is not None else None,
                    parts=len(payloads),
                )
                self._log_outcome(
                    result,
                    details,
                    "batch sent",
                    "batch not delivered; its pods go out again shortly, their back-off unchanged",
                )
        finally:
            self._sending = False

    def next_wait(self) -> float:
        """Seconds until the core needs a turn without an event (bounded so leadership changes are seen).

        A standby's window closes but is never taken, so its deadline stays in the past; it waits the full
        bound rather than spinning until it leads.
        """
        bound = min(1.0, self.config.lease.retry_seconds)
        now = self.clock()
        outbox = self.pod_event_outbox
        if (self.batcher.due(now) or self.registrations.due(now) or outbox.due(now)) and not self.is_leader():
            return bound
        candidates = (self.batcher.next_wakeup(), self.registrations.next_wakeup(), outbox.next_wakeup())
        wakeups = [w for w in candidates if w is not None]
        if not wakeups:
            return bound
        return min(bound, max(0.0, min(wakeups) - now))

    def run(self, stop: threading.Event) -> None:
        """Run until `stop` is set; then stop watching and release the Lease."""
        watcher = threading.Thread(target=self.watch_loop, args=(stop,), name="watch", daemon=True)
        node_watcher = threading.Thread(target=self.watch_nodes_loop, args=(stop,), name="watch-nodes", daemon=True)
        pod_events = threading.Thread(target=self.watch_pod_events_loop, args=(stop,), name="pod-events", daemon=True)
        elector = threading.Thread(target=self.elect_loop, args=(stop,), name="elect", daemon=True)
        watcher.start()
        node_watcher.start()
        pod_events.start()
        elector.start()
        try:
            while not stop.is_set():
                self.step(self.next_wait())
        finally:
            stop.set()
            self.pods.close()
            for source in (self.nodes, self.bound_pods):
                if source is not None:
                    source.close()
            elector.join(timeout=10)
            watcher.join(timeout=5)
            node_watcher.join(timeout=5)
            pod_events.join(timeout=5)
