"""The forwarder's payload as the provisioner receives it, and its validation.

Kept apart from `service.provision` so that the provisioner's handler can check a payload without
importing the whole core first, and so the forwarder can build hints without importing it either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from nodewright.model.resource_version import reached

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PodHint:
    """A pod the forwarder saw pending: where to read it, and the version it saw.

    The provisioner reads the pod itself from the API server and acts on what it reads; the hint only says
    which pods to look at. `delivery` (1-based) numbers the forwarder's deliveries of this pod, for its batch
    ids; it is not sent.
    """

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    delivery: int = 1

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def confirmed_by(self, pod: Mapping[str, Any]) -> bool:
        """True when `pod` (API JSON, as read) is the object the forwarder saw, at the version it saw or a later
        one: what was read is then no older than what the forwarder knew. Any other answer (another uid, an older
        version, a version that is not an etcd revision) confirms nothing."""
        metadata = pod.get("metadata") or {}
        if self.uid and metadata.get("uid") != self.uid:
            return False
        version = str(metadata.get("resourceVersion") or "")
        return not self.resource_version or version == self.resource_version or reached(version, self.resource_version)

    def to_json(self) -> dict[str, str]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "resourceVersion": self.resource_version,
        }


@dataclass(frozen=True, slots=True)
class PodEventHint:
    """The forwarder saw a pod event on `node` (a pod bound to it, finished, terminating or deleted) at `at`
    (epoch seconds), and took `nodeclaim` for the node's NodeClaim.

    A claim, not a fact: the provisioner writes `status.lastPodEventTime` only once the API server confirms that
    the NodeClaim and the node exist and belong together, and never later than its own clock
    (`service.provision.podevents`).
    """

    nodeclaim: str
    node: str
    at: float

    def to_json(self) -> dict[str, str]:
        return {"nodeclaim": self.nodeclaim, "node": self.node, "at": rfc3339(self.at)}


def rfc3339(epoch: float) -> str:
    """Epoch seconds as the API server writes timestamps (UTC, whole seconds)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Batch:
    """The forwarder's payload: hints of pending pods, with an id for the delivery.

    A registration payload has no pods and names `nodes` that joined with `karpenter.sh/unregistered` (or
    await initialization). Any payload may carry `pod_events` (a payload of its own when nothing else is sent).
    The planner's payload for short CapacityBuffers has no pods and names `buffers`.
    """

    batch_id: str
    cluster: str
    pods: Sequence[PodHint]
    sent_at: str = ""
    nodes: Sequence[str] = ()
    pod_events: Sequence[PodEventHint] = ()
    # The planner's request for CapacityBuffers' capacity: buffer `namespace/name` -> the keys of its virtual pods to
    # plan (`service.buffers`). The provisioner resolves the buffers itself; the keys only say which of their pods.
    buffers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class PayloadError(ValueError):
    """The forwarder's payload is malformed; the message names the field and what it must be."""


MAX_BATCH_ID = 256
# At most this many pod events in one payload (the forwarder sends the rest with the next one): each costs the
# provisioner two consistent GETs, so a payload cannot make it read without bound.
MAX_POD_EVENTS = 500
# At most this many virtual pods of CapacityBuffers in one payload (the planner asks again on its next tick).
MAX_BUFFER_PODS = 1000


def _entries(field: str, raw: list[Any], parse: Callable[[Any], T | None], shape: str, problems: list[str]) -> list[T]:
    """Each item of a payload list parsed; an item that does not parse is named in `problems` with its index."""
    out: list[T] = []
    for index, item in enumerate(raw):
        parsed = parse(item)
        if parsed is None:
            problems.append(f"{field}[{index}]: must be {shape}")
        else:
            out.append(parsed)
    return out


def _hint(item: Any) -> PodHint | None:
    """A hint (`{"namespace", "name", "uid", "resourceVersion"}`), or a pod object as forwarders before
    hints sent it (only its metadata is read); None when it is neither."""
    if not isinstance(item, Mapping):
        return None
    metadata = item.get("metadata")
    source: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else item
    name, namespace = source.get("name"), source.get("namespace") or "default"
    uid, version = source.get("uid") or "", source.get("resourceVersion") or ""
    if not (isinstance(name, str) and name) or not all(isinstance(v, str) for v in (namespace, uid, version)):
        return None
    return PodHint(namespace, name, uid, version)


def _pod_event(item: Any) -> PodEventHint | None:
    """`{"nodeclaim", "node", "at"}` with non-empty strings, `at` an RFC 3339 time with its zone; else None."""
    if not isinstance(item, Mapping):
        return None
    claim, node, at = item.get("nodeclaim"), item.get("node"), item.get("at")
    if not all(isinstance(v, str) and v for v in (claim, node, at)):
        return None
    try:
        when = datetime.fromisoformat(str(at).replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return PodEventHint(str(claim), str(node), when.timestamp())


def parse_batch(payload: Any) -> Batch:
    """Validate the forwarder's payload into a Batch.

    `payload` is the decoded JSON: `batch_id` (1-256 characters), `cluster` (non-empty), `pods` (a list of
    hints: objects with a non-empty `name` and optional `namespace`, `uid`, `resourceVersion`), optional
    `sent_at` (string), `nodes` (a list of node names) and `pod_events` (at most `MAX_POD_EVENTS` objects with
    string `nodeclaim`, `node` and an RFC 3339 `at`). Unknown keys are ignored, so a newer forwarder can
    add some. Raises PayloadError naming every wrong field.
    """
    if not isinstance(payload, Mapping):
        raise PayloadError(f"payload: expected a JSON object from the forwarder, got {type(payload).__name__}")
    problems: list[str] = []

    def text(key: str, required: bool, limit: int = 0) -> str:
        value = payload.get(key, None if required else "")
        if not isinstance(value, str) or (required and not value):
            problems.append(f"{key}: {'missing or empty' if value in (None, '') else 'must be a string'}")
            return ""
        if limit and len(value) > limit:
            problems.append(f"{key}: {len(value)} characters, at most {limit} allowed")
        return value

    batch_id = text("batch_id", True, MAX_BATCH_ID)
    cluster = text("cluster", True)
    sent_at = text("sent_at", False)
    raw = payload.get("pods")
    hints: list[PodHint] = []
    if not isinstance(raw, list):
        problems.append("pods: must be a list of pod hints (an empty list for a registration payload)")
    else:
        hints = _entries(
            "pods",
            raw,
            _hint,
            "an object with a non-empty string `name` and string `namespace`, `uid` and `resourceVersion`",
            problems,
        )
    nodes = payload.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        problems.append("nodes: must be a list of node names")
        nodes = []
    events: list[PodEventHint] = []
    raw_events = payload.get("pod_events", [])
    if not isinstance(raw_events, list):
        problems.append("pod_events: must be a list of pod events")
    elif len(raw_events) > MAX_POD_EVENTS:
        problems.append(f"pod_events: {len(raw_events)} entries, at most {MAX_POD_EVENTS} allowed")
    else:
        events = _entries(
            "pod_events",
            raw_events,
            _pod_event,
            "an object with non-empty string `nodeclaim` and `node` and an RFC 3339 `at` with its time zone",
            problems,
        )
    buffers = _buffers(payload.get("buffers", []), problems)
    if problems:
        raise PayloadError("payload: " + "; ".join(problems[:20]))
    return Batch(batch_id, cluster, tuple(hints), sent_at, tuple(nodes), tuple(events), buffers)


def _buffers(raw: Any, problems: list[str]) -> dict[str, tuple[str, ...]]:
    """`buffers`: a list of `{"namespace", "name", "pods": [virtual pod keys]}`, at most `MAX_BUFFER_PODS` pods."""
    if not isinstance(raw, list):
        problems.append("buffers: must be a list of CapacityBuffers with the virtual pods to plan")
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for index, item in enumerate(raw):
        item = item if isinstance(item, Mapping) else {}
        namespace, name, pods = item.get("namespace"), item.get("name"), item.get("pods")
        if not (isinstance(namespace, str) and namespace and isinstance(name, str) and name):
            problems.append(f"buffers[{index}]: must have a non-empty string `namespace` and `name`")
            continue
        if not isinstance(pods, list) or not all(isinstance(p, str) and p.startswith(f"{namespace}/") for p in pods):
            problems.append(f"buffers[{index}].pods: must be a list of `{namespace}/<virtual pod name>` keys")
            continue
        out[f"{namespace}/{name}"] = tuple(pods)
    if sum(len(p) for p in out.values()) > MAX_BUFFER_PODS:
        problems.append(f"buffers: more than {MAX_BUFFER_PODS} virtual pods in one payload")
    return out
