"""Pod events on nodes, as Karpenter's pod-events controller keeps them: `status.lastPodEventTime` of a NodeClaim.

Emptiness and consolidation wait `consolidateAfter` after the last pod event on a node: a pod bound to it, one that
finished (Succeeded or Failed), one that started terminating, one deleted. DaemonSet pods do not count (they come
and go with the node itself). The planner sees additions in the pods it lists; removals it can only learn from
here. The forwarder watches the pods bound to nodes and notes at most one event per node every 10 seconds
(Karpenter's dedupe), since scheduling events come in bursts (`PodEvents`).

The forwarder does not write the time itself: it may not patch NodeClaim status, since whoever may could also point
a claim's providerID at a node nodewright did not launch and have the planner drain it. The events go to the
provisioner in the payloads the leader sends anyway (`pod_events`: NodeClaim, node, time), or in one of their own
`FLUSH_SECONDS` after the oldest was noted when nothing else goes out (`PodEventOutbox`); the provisioner writes
the time once the API server confirms the claim and the node (`service.provision.podevents`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.forwarder.batching import Payload
from nodewright.service.batch import MAX_POD_EVENTS, PodEventHint

DEDUPE_SECONDS = 10.0  # Karpenter's dedupeTimeout for lastPodEventTime writes
# A pod event waits at most this long for a payload to ride along with; consolidateAfter is seconds to hours, and
# Karpenter's own writes lag by up to its 10 s dedupe too.
FLUSH_SECONDS = 10.0
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class _Seen:
    node: str
    terminal: bool
    terminating: bool


def _seen(pod: Mapping[str, Any]) -> _Seen | None:
    metadata = pod.get("metadata") or {}
    if any(o.get("kind") == "DaemonSet" for o in metadata.get("ownerReferences") or []):
        return None
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    if not node:
        return None
    phase = (pod.get("status") or {}).get("phase")
    return _Seen(node, phase in _TERMINAL, bool(metadata.get("deletionTimestamp")))


def _uid(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return str(metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}")


@dataclass
class PodEvents:
    """Watch events of bound pods in; the nodes whose NodeClaim should record a pod event out (pure)."""

    dedupe_seconds: float = DEDUPE_SECONDS
    _pods: dict[str, _Seen] = field(default_factory=dict)
    _written: dict[str, float] = field(default_factory=dict)

    def reset(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list: remember each pod's state; a list is not an event."""
        self._pods = {}
        for pod in pods:
            seen = _seen(pod)
            if seen is not None:
                self._pods[_uid(pod)] = seen

    def observe(self, kind: str, pod: Mapping[str, Any], now: float) -> str:
        """The node to record a pod event on for this watch event ("" for none): a pod newly bound (ADDED), newly
        terminal or terminating (MODIFIED), or gone (DELETED); at most once per node per `dedupe_seconds`."""
        uid = _uid(pod)
        seen = _seen(pod)
        before = self._pods.pop(uid, None)
        if kind == "DELETED":
            node = before.node if before is not None else (seen.node if seen is not None else "")
            return self._due(node, now)
        if seen is None:
            return ""
        self._pods[uid] = seen
        changed = (
            before is None
            or before.node != seen.node
            or (seen.terminal and not before.terminal)
            or (seen.terminating and not before.terminating)
        )
        return self._due(seen.node, now) if changed else ""

    def _due(self, node: str, now: float) -> str:
        if not node or now - self._written.get(node, -self.dedupe_seconds) < self.dedupe_seconds:
            return ""
        self._written[node] = now
        return node


@dataclass(slots=True)
class _Queued:
    event: PodEventHint
    noted_at: float  # monotonic, for the flush


@dataclass
class PodEventOutbox:
    """Pod events waiting to go to the provisioner, the latest per NodeClaim (pure; `now` is monotonic).

    Both replicas keep one, so a standby that takes over sends what the old leader may not have.
    """

    flush_seconds: float = FLUSH_SECONDS
    _queued: dict[str, _Queued] = field(default_factory=dict)

    def add(self, event: PodEventHint, now: float) -> None:
        """Note an event; a later one for the same NodeClaim replaces it (only the latest time is written)."""
        before = self._queued.get(event.nodeclaim)
        if before is None:
            self._queued[event.nodeclaim] = _Queued(event, now)
        elif event.at >= before.event.at:
            before.event = event

    def take(self, limit: int = MAX_POD_EVENTS) -> list[PodEventHint]:
        """Up to `limit` events, oldest noted first, removed until `undelivered` puts them back."""
        chosen = sorted(self._queued.values(), key=lambda q: q.noted_at)[: max(limit, 0)]
        for queued in chosen:
            del self._queued[queued.event.nodeclaim]
        return [q.event for q in chosen]

    def undelivered(self, events: Iterable[PodEventHint], now: float) -> None:
        """Events whose Invoke failed (after the invoker's own retries): queued again unless a later one came
        meanwhile, to go with the next payload or `flush_seconds` from now."""
        for event in events:
            self.add(event, now)

    def due(self, now: float) -> bool:
        """True when the oldest event has waited `flush_seconds` for a payload to ride along with."""
        wakeup = self.next_wakeup()
        return wakeup is not None and now >= wakeup

    def next_wakeup(self) -> float | None:
        """When the oldest event is due on its own (None when none waits)."""
        oldest = min((q.noted_at for q in self._queued.values()), default=None)
        return None if oldest is None else oldest + self.flush_seconds

    @property
    def count(self) -> int:
        return len(self._queued)


def _encoded(events: Sequence[PodEventHint]) -> str:
    return json.dumps([e.to_json() for e in events], separators=(",", ":"))


def attach(payload: Payload, events: Sequence[PodEventHint], limit: int) -> Payload | None:
    """`payload` with `"pod_events": [...]` added, or None when that would make it larger than `limit` bytes.

    The batch id stays the payload's own: a retried Invoke carries the same events again, and writing them twice
    changes nothing (the time only moves forward).
    """
    if not events:
        return payload
    extra = ',"pod_events":' + _encoded(events) + "}"
    body = payload.body.decode()
    if not body.endswith("}") or len(payload.body) - 1 + len(extra.encode()) > limit:
        return None
    return Payload(payload.batch_id, (body[:-1] + extra).encode(), payload.pod_count, payload.uids)


def pod_events_batch_id(events: Iterable[PodEventHint]) -> str:
    """sha256 hex of the sorted `pod-event:nodeclaim:node:time` lines (never equal to a pod or registration id)."""
    lines = sorted(f"pod-event:{e.nodeclaim}:{e.node}:{e.at}" for e in events)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def pod_events_payload(events: Sequence[PodEventHint], cluster: str, sent_at: str) -> Payload:
    """A payload of pod events alone: `{"batch_id", "cluster", "sent_at", "pods": [], "pod_events": [...]}`."""
    identity = pod_events_batch_id(events)
    body = {"batch_id": identity, "cluster": cluster, "sent_at": sent_at, "pods": []}
    encoded = json.dumps(body, separators=(",", ":"))[:-1] + ',"pod_events":' + _encoded(events) + "}"
    return Payload(identity, encoded.encode(), 0)
