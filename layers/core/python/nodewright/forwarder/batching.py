"""Batching of pending pods: the window, the per-pod re-send back-off, batch ids and payload splitting.

Pure: time comes in as `now` (seconds on any monotonic clock), nothing is read from the environment, and
nothing here talks to Kubernetes or AWS. The forwarder's I/O loop feeds pod events in and takes batches out.

The window (DESIGN.md "idle 1 s, max 10 s"): it opens when a pod becomes eligible to be sent and closes
`idle_seconds` after the last pod that joined it or `max_seconds` after the first, whichever comes first.
A pod is eligible when it is pending and was never sent, or when its re-send back-off has passed: after
the n-th send a pod that is still pending waits `min(resend_max, resend_initial * 2**(n-1))` seconds before
it may join a window again, so a pod that no capacity can help does not cause a storm of batches. A pod
that stops being pending (bound, deleted, changed) is forgotten, back-off and all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.forwarder.projection import is_pending, project_pod

# AWS Lambda's limit for a synchronous invocation's request is 6 MB; stay well below it by default.
LAMBDA_SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
DEFAULT_PAYLOAD_LIMIT = 5 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BatchPolicy:
    """Timings of the window and the re-send back-off, in seconds."""

    idle_seconds: float = 1.0
    max_seconds: float = 10.0
    resend_initial_seconds: float = 30.0
    resend_max_seconds: float = 600.0

    def __post_init__(self) -> None:
        if not 0 < self.idle_seconds <= self.max_seconds:
            raise ValueError("the batch window needs 0 < idle_seconds <= max_seconds")
        if not 0 < self.resend_initial_seconds <= self.resend_max_seconds:
            raise ValueError("the re-send back-off needs 0 < resend_initial_seconds <= resend_max_seconds")

    def resend_delay(self, sends: int) -> float:
        """Seconds a pod waits after its `sends`-th send (1-based) before it may be sent again."""
        # The exponent is capped before it is used, so a pod stuck for days does not overflow a float.
        exponent = min(max(sends - 1, 0), 32)
        return float(min(self.resend_max_seconds, self.resend_initial_seconds * 2**exponent))


def pod_uid(pod: Mapping[str, Any]) -> str:
    """The pod's UID (namespace/name when the object has none, e.g. a hand-written manifest)."""
    metadata = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    uid = (metadata or {}).get("uid")
    if isinstance(uid, str) and uid:
        return uid
    return f"{(metadata or {}).get('namespace', 'default')}/{(metadata or {}).get('name', '')}"


def _resource_version(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    value = (metadata or {}).get("resourceVersion")
    return value if isinstance(value, str) else ""


def batch_id(pods: Iterable[Mapping[str, Any]]) -> str:
    """sha256 hex of the sorted `uid:resourceVersion` lines of the pods (order of `pods` does not matter).

    The same pods in the same versions give the same id, which the provisioner uses for idempotency; any
    change to a pod (a new resourceVersion) gives a new id.
    """
    lines = sorted(f"{pod_uid(pod)}:{_resource_version(pod)}" for pod in pods)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass(slots=True)
class _Pending:
    projection: dict[str, Any]
    sends: int = 0
    eligible_at: float = 0.0  # when the pod may join a window again


@dataclass(slots=True)
class Batcher:
    """The set of pending pods and the open window over them.

    Invariants: every uid in the window is a pending pod; a pod is in the window at most once; `take`
    empties the window and starts each taken pod's back-off.
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
            entry = self._pending[uid] = _Pending(project_pod(pod))
        else:
            # Still pending: keep its back-off, send the latest version when it goes out.
            entry.projection = project_pod(pod)
        self._maybe_join(uid, entry, now)
        return True

    def pending(self) -> list[dict[str, Any]]:
        """The projections of every pending pod, sent or not (read them, do not change them)."""
        return [entry.projection for entry in self._pending.values()]

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
        times = [entry.eligible_at for uid, entry in self._pending.items() if uid not in self._window and entry.sends]
        deadline = self.deadline()
        if deadline is not None:
            times.append(deadline)
        return min(times) if times else None

    def due(self, now: float) -> bool:
        """True when the window is open and has closed by `now`."""
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def take(self, now: float) -> list[dict[str, Any]]:
        """Close the window: return its pods' projections (join order) and start their back-off."""
        out = []
        for uid in self._window:
            entry = self._pending[uid]
            entry.sends += 1
            entry.eligible_at = now + self.policy.resend_delay(entry.sends)
            out.append(entry.projection)
        self._window.clear()
        self._opened_at = self._last_joined_at = None
        return out

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

    def sends(self, uid: str) -> int:
        """How many times the pod has been taken into a batch (0 if never or unknown)."""
        entry = self._pending.get(uid)
        return entry.sends if entry else 0


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Payload:
    """One Invoke's request body and what it holds."""

    batch_id: str
    body: bytes
    pod_count: int


def build_payloads(
    projections: Sequence[Mapping[str, Any]], cluster: str, sent_at: str, limit: int = DEFAULT_PAYLOAD_LIMIT
) -> tuple[list[Payload], list[Mapping[str, Any]]]:
    """Split a batch into request bodies of at most `limit` bytes each, keeping the pods' order.

    Each body is `{"batch_id", "cluster", "sent_at", "pods"}` (compact JSON, UTF-8) and its batch id is the
    hash of its own pods. Returns the payloads and the projections that alone exceed `limit` (they cannot
    be sent at all; the caller reports them).
    """
    # Everything but the pods has a fixed size: a batch id is always 64 hex digits.
    head = _dumps({"batch_id": "0" * 64, "cluster": cluster, "sent_at": sent_at, "pods": []})
    overhead = len(head.encode())
    payloads: list[Payload] = []
    oversized: list[Mapping[str, Any]] = []
    chunk: list[Mapping[str, Any]] = []
    encoded: list[str] = []
    size = overhead

    def flush() -> None:
        if not chunk:
            return
        identity = batch_id(chunk)
        prefix = _dumps({"batch_id": identity, "cluster": cluster, "sent_at": sent_at, "pods": []})[: -len("[]}")]
        body = (prefix + "[" + ",".join(encoded) + "]}").encode()
        payloads.append(Payload(identity, body, len(chunk)))

    for projection in projections:
        text = _dumps(projection)
        cost = len(text.encode()) + (1 if chunk else 0)  # the separating comma
        if overhead + len(text.encode()) > limit:
            oversized.append(projection)
            continue
        if size + cost > limit:
            flush()
            chunk, encoded, size = [], [], overhead
            cost = len(text.encode())
        chunk.append(projection)
        encoded.append(text)
        size += cost
    flush()
    return payloads, oversized
