"""Registration events: nodes that joined but still carry `karpenter.sh/unregistered`.

A node nodewright launched registers with the `karpenter.sh/unregistered` NoExecute taint (from its user
data); the provisioner takes it off once it has matched the node to its NodeClaim by providerID. Without
this module the provisioner only did that when the next batch of pending pods reached it, which the pods'
re-send back-off delays by 30 s or more. Instead the forwarder watches nodes and, as soon as one with a
providerID still carries the taint, sends a registration payload: no pods, the node names, and a batch id
of its own.

Pure: time comes in as `now`; nothing here talks to Kubernetes or AWS.

Re-sends: a node that still carries the taint after a registration was delivered (the NodeClaim was not yet
recorded with its providerID) is sent again after `min(max, initial * 2**(n-1))` seconds, n counting
delivered registrations, however often the node changes meanwhile, so a node whose claim never matches does
not cause a storm. An Invoke that failed counts nothing: the node goes out again after `initial` seconds.
The same holds for a node that has registered but is not yet initialized (no `karpenter.sh/initialized`
label while it is Ready): the provisioner then checks its startup taints and resources and labels it.
The batch id hashes each node's uid, resourceVersion and delivery number, so every registration event gets
its own id, while a retried Invoke of the same payload keeps it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.forwarder.batching import Payload
from nodewright.launch.userdata import UNREGISTERED_TAINT

# Only nodes Karpenter-style provisioners launched carry this label (nodewright writes it into the user data);
# the node watch selects on it so a large cluster's other nodes never reach the forwarder.
NODE_LABEL_SELECTOR = "karpenter.sh/nodepool"
INITIALIZED_LABEL = "karpenter.sh/initialized"


@dataclass(frozen=True, slots=True)
class RegistrationPolicy:
    """Re-send back-off of a node that still carries the taint, in seconds."""

    resend_initial_seconds: float = 5.0
    resend_max_seconds: float = 60.0

    def __post_init__(self) -> None:
        if not 0 < self.resend_initial_seconds <= self.resend_max_seconds:
            raise ValueError("the registration back-off needs 0 < resend_initial_seconds <= resend_max_seconds")

    def resend_delay(self, sends: int) -> float:
        """Seconds a node waits after its `sends`-th delivered registration (1-based) before it is sent again."""
        exponent = min(max(sends - 1, 0), 32)
        return float(min(self.resend_max_seconds, self.resend_initial_seconds * 2**exponent))


def awaits_registration(node: Mapping[str, Any]) -> bool:
    """True when the node has a providerID and still carries `karpenter.sh/unregistered`, or is Ready and not
    yet labelled `karpenter.sh/initialized` (the provisioner decides whether it is)."""
    spec = node.get("spec") if isinstance(node.get("spec"), Mapping) else {}
    if not (spec or {}).get("providerID"):
        return False
    taints = (spec or {}).get("taints") or []
    if any(isinstance(t, Mapping) and t.get("key") == UNREGISTERED_TAINT.key for t in taints):
        return True
    labels = _metadata(node).get("labels")
    if isinstance(labels, Mapping) and labels.get(INITIALIZED_LABEL) == "true":
        return False
    status = node.get("status") if isinstance(node.get("status"), Mapping) else {}
    conditions = (status or {}).get("conditions") or []
    return any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _metadata(node: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = node.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


@dataclass(slots=True)
class _Waiting:
    uid: str
    resource_version: str
    deliveries: int = 0
    eligible_at: float = 0.0


@dataclass(frozen=True, slots=True)
class NodeRegistration:
    """One node in a registration payload, as of the version that was seen."""

    name: str
    uid: str
    resource_version: str
    send: int  # the delivery this is for: 1 for the first registration of this node, 2 for the first re-send, ...


@dataclass(slots=True)
class Registrations:
    """The nodes awaiting registration, and which of them are due to be sent."""

    policy: RegistrationPolicy = field(default_factory=RegistrationPolicy)
    _waiting: dict[str, _Waiting] = field(default_factory=dict)

    def observe(self, node: Mapping[str, Any]) -> bool:
        """An ADDED or MODIFIED node. Returns True when it awaits registration."""
        metadata = _metadata(node)
        name = str(metadata.get("name") or "")
        if not name or not awaits_registration(node):
            self.forget(name)
            return False
        uid, version = str(metadata.get("uid") or ""), str(metadata.get("resourceVersion") or "")
        entry = self._waiting.get(name)
        if entry is None or entry.uid != uid:
            # A new node, or a node deleted and registered again under the same name: no back-off to keep.
            self._waiting[name] = _Waiting(uid, version)
        else:
            entry.resource_version = version
        return True

    def forget(self, name: str) -> None:
        """A DELETED node, or one that lost the taint."""
        self._waiting.pop(name, None)

    def replace_all(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every selected node (after a (re-)list): nodes missing from it are gone."""
        seen = set()
        for node in nodes:
            seen.add(str(_metadata(node).get("name") or ""))
            self.observe(node)
        for name in [name for name in self._waiting if name not in seen]:
            self.forget(name)

    def due(self, now: float) -> bool:
        """True when at least one node may be sent now."""
        return any(now >= entry.eligible_at for entry in self._waiting.values())

    def next_wakeup(self) -> float | None:
        """When the earliest back-off ends (None when no node waits)."""
        return min((entry.eligible_at for entry in self._waiting.values()), default=None)

    def take(self, now: float) -> list[NodeRegistration]:
        """The nodes due now (by name), held back until `delivered` or `undelivered` settles them (by default
        as if undelivered)."""
        out = []
        for name in sorted(self._waiting):
            entry = self._waiting[name]
            if now < entry.eligible_at:
                continue
            entry.eligible_at = now + self.policy.resend_initial_seconds
            out.append(NodeRegistration(name, entry.uid, entry.resource_version, entry.deliveries + 1))
        return out

    def delivered(self, names: Iterable[str], now: float) -> None:
        """The provisioner received these nodes: count it and start each one's back-off."""
        for name in names:
            entry = self._waiting.get(name)
            if entry is not None:
                entry.deliveries += 1
                entry.eligible_at = now + self.policy.resend_delay(entry.deliveries)

    @property
    def waiting_count(self) -> int:
        return len(self._waiting)


def registration_batch_id(nodes: Iterable[NodeRegistration]) -> str:
    """sha256 hex of the sorted `registration:uid:resourceVersion:send` lines (never equal to a pod batch id)."""
    lines = sorted(f"registration:{n.uid}:{n.resource_version}:{n.send}" for n in nodes)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def registration_payload(nodes: list[NodeRegistration], cluster: str, sent_at: str) -> Payload:
    """The Invoke payload of a registration: `{"batch_id", "cluster", "sent_at", "pods": [], "nodes": [names]}`.

    A node name is short, so even thousands of nodes stay far below the payload limit: no splitting.
    """
    identity = registration_batch_id(nodes)
    body = {"batch_id": identity, "cluster": cluster, "sent_at": sent_at, "pods": [], "nodes": [n.name for n in nodes]}
    return Payload(identity, json.dumps(body, separators=(",", ":")).encode(), 0)
