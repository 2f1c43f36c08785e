"""Batching of pending pods: the window, the re-send cadence, batch ids and payload splitting.

Pure: time comes in as `now` (seconds on any monotonic clock), nothing is read from the environment, and
nothing here talks to Kubernetes or AWS. The forwarder's I/O loop feeds pod events in and takes batches out.

The window (DESIGN.md "idle 1 s, max 10 s"): it opens when a pod becomes eligible to be sent and closes
`idle_seconds` after the last pod that joined it or `max_seconds` after the first, whichever comes first.

What goes out is a hint, not a pod: each pod's namespace, name, uid and resourceVersion. The provisioner reads
the pods themselves from the API server and acts only on what it reads there.

Re-sends follow Karpenter's provisioning loop, which looks at a pending pod again every 10 seconds until it
runs: a pod still pending after a *delivered* batch may join a window again after
`min(resend_max, resend_initial * 2**(n-1))` seconds, n being the number of batches that delivered it (10 s
and 10 s by default: no growth). Only deliveries count. A batch whose Invoke failed (after the invoker's own
bounded retries) puts its pods back after `undelivered_retry_seconds`, their count unchanged, so an outage of
the function does not push the pods' next evaluation minutes away once it is over. A pod that stops being
pending (bound, deleted, changed) is forgotten, count and all.

Batch ids: the hash of each pod's `uid:resourceVersion:delivery`, delivery being the number of the delivery
this send is for that pod. An Invoke retried for the same delivery keeps its id (the provisioner answers a
delivery that launched from its record instead of launching again); the next delivery of a still-pending pod
is a new id, which the provisioner evaluates afresh.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.model.pending import is_pending
from nodewright.service.batch import PodHint

# AWS Lambda's limit for a synchronous invocation's request is 6 MB; stay well below it by default.
LAMBDA_SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
DEFAULT_PAYLOAD_LIMIT = 5 * 1024 * 1024
# Karpenter requeues every provisionable pod 10 seconds after it last looked at it.
KARPENTER_REQUEUE_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class BatchPolicy:
    """Timings of the window, the re-send cadence and the retry of an undelivered batch, in seconds."""

    idle_seconds: float = 1.0
    max_seconds: float = 10.0
    resend_initial_seconds: float = KARPENTER_REQUEUE_SECONDS
    resend_max_seconds: float = KARPENTER_REQUEUE_SECONDS
    undelivered_retry_seconds: float = 5.0

    def __post_init__(self) -> None:
        if not 0 < self.idle_seconds <= self.max_seconds:
            raise ValueError("the batch window needs 0 < idle_seconds <= max_seconds")
        if not 0 < self.resend_initial_seconds <= self.resend_max_seconds:
            raise ValueError("the re-send back-off needs 0 < resend_initial_seconds <= resend_max_seconds")
        if self.undelivered_retry_seconds <= 0:
            raise ValueError("undelivered_retry_seconds must be positive")

    def resend_delay(self, deliveries: int) -> float:
        """Seconds a pod waits after its `deliveries`-th delivered batch (1-based) before it may be sent again."""
        # The exponent is capped before it is used, so a pod stuck for days does not overflow a float.
        exponent = min(max(deliveries - 1, 0), 32)
        return float(min(self.resend_max_seconds, self.resend_initial_seconds * 2**exponent))


def _metadata(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = pod.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def pod_uid(pod: Mapping[str, Any]) -> str:
    """The pod's UID (namespace/name when the object has none, e.g. a hand-written manifest)."""
    metadata = _metadata(pod)
    uid = metadata.get("uid")
    if isinstance(uid, str) and uid:
        return uid
    return f"{metadata.get('namespace', 'default')}/{metadata.get('name', '')}"


def hint_of(pod: Mapping[str, Any], delivery: int = 1) -> PodHint:
    """The hint for a pod in API JSON form."""
    metadata = _metadata(pod)
    version = metadata.get("resourceVersion")
    return PodHint(
        str(metadata.get("namespace") or "default"),
        str(metadata.get("name") or ""),
        pod_uid(pod),
        version if isinstance(version, str) else "",
        delivery,
    )


def batch_id(hints: Iterable[PodHint]) -> str:
    """sha256 hex of the sorted `uid:resourceVersion:delivery` lines (the order of `hints` does not matter).

    The same pods in the same versions for the same delivery give the same id (a retried Invoke); a pod
    that changed, or a later delivery of a pod still pending, gives a new one.
    """
    lines = sorted(f"{h.uid}:{h.resource_version}:{h.delivery}" for h in hints)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass(slots=True)
class _Pending:
    pod: Mapping[str, Any]
    deliveries: int = 0
    eligible_at: float = 0.0  # when the pod may join a window again


@dataclass(slots=True)
class Batcher:
    """The set of pending pods and the open window over them.

    Invariants: every uid in the window is a pending pod; a pod is in the window at most once; `take`
    empties the window and holds its pods back until `delivered` or `undelivered` says how the send went
    (by default as if undelivered, so a pod is never lost).
    """

    policy: BatchPolicy = field(default_factory=BatchPolicy)
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _window: dict[str, None] = field(default_factory=dict)  # insertion-ordered set of uids
    _opened_at: float | None = None
    _last_joined_at: float | None = None

    # ----------------------------------------------------------------- events in
    def observe(self, pod: Mapping[str, Any], now: float) -> bool:
        """An ADDED or MODIFIED pod. Returns True when it is pending (whether or not it joined the window)."""
        uid = pod_uid(pod)
        if not is_pending(pod):
            self.forget(uid)
            return False
        entry = self._pending.get(uid)
        if entry is None:
            entry = self._pending[uid] = _Pending(pod)
        else:
            # Still pending: keep its count and back-off, send the latest version when it goes out.
            entry.pod = pod
        self._maybe_join(uid, entry, now)
        return True

    def pending(self) -> list[Mapping[str, Any]]:
        """Every pending pod as last observed, sent or not (read them, do not change them)."""
        return [entry.pod for entry in self._pending.values()]

    def forget(self, uid: str) -> None:
        """A DELETED pod, or one that is no longer pending."""
        self._pending.pop(uid, None)
        self._window.pop(uid, None)
        if not self._window:
            self._opened_at = self._last_joined_at = None

    def replace_all(self, pods: Iterable[Mapping[str, Any]], now: float) -> None:
        """A fresh list of every pod (after a (re-)list): pods missing from it are gone."""
        seen = set()
        for pod in pods:
            seen.add(pod_uid(pod))
            self.observe(pod, now)
        for uid in [uid for uid in self._pending if uid not in seen]:
            self.forget(uid)

    def tick(self, now: float) -> None:
        """Let pods whose back-off has passed join the window (call before `due`)."""
        for uid, entry in self._pending.items():
            self._maybe_join(uid, entry, now)

    def _maybe_join(self, uid: str, entry: _Pending, now: float) -> None:
        if uid in self._window or now < entry.eligible_at:
            return
        self._window[uid] = None
        if self._opened_at is None:
            self._opened_at = now
        self._last_joined_at = now

    # ----------------------------------------------------------------- batches out
    def deadline(self) -> float | None:
        """When the open window closes (None when no window is open)."""
        if self._opened_at is None or self._last_joined_at is None:
            return None
        return min(self._last_joined_at + self.policy.idle_seconds, self._opened_at + self.policy.max_seconds)

    def next_wakeup(self) -> float | None:
        """The earliest time something can change without an event: the window closing or a back-off ending."""
        times = [
            entry.eligible_at for uid, entry in self._pending.items() if uid not in self._window and entry.eligible_at
        ]
        deadline = self.deadline()
        if deadline is not None:
            times.append(deadline)
        return min(times) if times else None

    def due(self, now: float) -> bool:
        """True when the window is open and has closed by `now`."""
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def take(self, now: float) -> list[PodHint]:
        """Close the window: the hints of its pods (join order), each numbered with the delivery it is for."""
        out = []
        for uid in self._window:
            entry = self._pending[uid]
            entry.eligible_at = now + self.policy.undelivered_retry_seconds
            out.append(hint_of(entry.pod, entry.deliveries + 1))
        self._window.clear()
        self._opened_at = self._last_joined_at = None
        return out

    def delivered(self, uids: Iterable[str], now: float) -> None:
        """The provisioner received these pods: count the delivery and start each one's re-send back-off."""
        for uid in uids:
            entry = self._pending.get(uid)
            if entry is not None:
                entry.deliveries += 1
                entry.eligible_at = now + self.policy.resend_delay(entry.deliveries)

    def undelivered(self, uids: Iterable[str], now: float) -> None:
        """The Invoke failed for good: these pods go out again after `undelivered_retry_seconds`, uncounted."""
        for uid in uids:
            entry = self._pending.get(uid)
            if entry is not None:
                entry.eligible_at = now + self.policy.undelivered_retry_seconds

    def knows(self, uid: str) -> bool:
        """True when the pod is currently pending (as far as the events so far tell)."""
        return uid in self._pending

    @property
    def window_opened_at(self) -> float | None:
        """When the open window's first pod joined (None when no window is open)."""
        return self._opened_at

    @property
    def window_last_joined_at(self) -> float | None:
        """When the open window's latest pod joined (None when no window is open)."""
        return self._last_joined_at

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    @property
    def window_size(self) -> int:
        return len(self._window)

    def deliveries(self, uid: str) -> int:
        """How many delivered batches held the pod (0 if none, or unknown)."""
        entry = self._pending.get(uid)
        return entry.deliveries if entry else 0


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Payload:
    """One Invoke's request body, what it holds, and the uids of its pods (to settle their back-off)."""

    batch_id: str
    body: bytes
    pod_count: int
    uids: tuple[str, ...] = ()


def build_payloads(
    hints: Sequence[PodHint], cluster: str, sent_at: str, limit: int = DEFAULT_PAYLOAD_LIMIT
) -> list[Payload]:
    """Split a batch into request bodies of at most `limit` bytes each, keeping the pods' order.

    Each body is `{"batch_id", "cluster", "sent_at", "pods": [{"namespace", "name", "uid",
    "resourceVersion"}]}` (compact JSON, UTF-8) and its batch id is the hash of its own hints. A hint is
    about a hundred bytes, so the default limit holds some fifty thousand pods.
    """
    # Everything but the pods has a fixed size: a batch id is always 64 hex digits.
    overhead = len(_dumps({"batch_id": "0" * 64, "cluster": cluster, "sent_at": sent_at, "pods": []}).encode())
    payloads: list[Payload] = []
    chunk: list[PodHint] = []
    encoded: list[str] = []
    size = overhead

    def flush() -> None:
        if not chunk:
            return
        identity = batch_id(chunk)
        prefix = _dumps({"batch_id": identity, "cluster": cluster, "sent_at": sent_at, "pods": []})[: -len("[]}")]
        body = (prefix + "[" + ",".join(encoded) + "]}").encode()
        payloads.append(Payload(identity, body, len(chunk), tuple(h.uid for h in chunk)))

    for hint in hints:
        text = _dumps(hint.to_json())
        cost = len(text.encode()) + (1 if chunk else 0)  # the separating comma
        if chunk and size + cost > limit:
            flush()
            chunk, encoded, size = [], [], overhead
            cost = len(text.encode())
        chunk.append(hint)
        encoded.append(text)
        size += cost
    flush()
    return payloads
