"""In-memory Cluster and StateStore adapters: for dry runs, simulations and tests of the services.

They keep API objects as the camelCase dicts the API server would serve, so the services read them
through the same loader as in production. Nothing here talks to a network.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nodewright.ports import ClusterView, OfferingKey, PodEvent


def _key(doc: Mapping[str, Any]) -> tuple[str, str, str]:
    metadata = doc.get("metadata") or {}
    return (str(doc.get("kind", "")), str(metadata.get("namespace") or ""), str(metadata.get("name", "")))


@dataclass(frozen=True, slots=True)
class Event:
    pod: str
    reason: str
    message: str
    type: str


class InMemoryCluster:
    """A Cluster port over a dict of objects. `clock` stamps creationTimestamp on created NodeClaims."""

    def __init__(self, documents: Iterable[Mapping[str, Any]] = (), clock: Callable[[], float] | None = None) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.events: list[Event] = []
        self._event_keys: set[tuple[str, str, str]] = set()
        self._clock = clock or (lambda: 0.0)
        self.log: list[str] = []  # every write, in order, for tests that check sequencing
        for doc in documents:
            self.put(doc)

    def put(self, doc: Mapping[str, Any]) -> None:
        """Add or replace an object (tests use this as `kubectl apply`)."""
        self.objects[_key(doc)] = copy.deepcopy(dict(doc))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [d for (k, _, _), d in sorted(self.objects.items()) if k == kind]

    def nodeclaim(self, name: str) -> dict[str, Any] | None:
        return self.objects.get(("NodeClaim", "", name))

    def read(self) -> ClusterView:
        documents = []
        unbound: dict[str, dict[str, Any]] = {}
        for (kind, namespace, name), doc in sorted(self.objects.items()):
            if kind == "Pod":
                spec = doc.get("spec") or {}
                phase = (doc.get("status") or {}).get("phase")
                if phase in ("Succeeded", "Failed"):
                    continue
                if not spec.get("nodeName"):
                    unbound[f"{namespace or 'default'}/{name}"] = copy.deepcopy(doc)
                    continue
            documents.append(copy.deepcopy(doc))
        return ClusterView(documents, unbound)

    def create_nodeclaim(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        key = _key(document)
        if key in self.objects:
            return copy.deepcopy(self.objects[key])
        doc = copy.deepcopy(dict(document))
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc.setdefault("metadata", {})["creationTimestamp"] = stamp
        self.objects[key] = doc
        self.log.append(f"create nodeclaim/{key[2]}")
        return None

    def update_nodeclaim(
        self, name: str, labels: Mapping[str, str], annotations: Mapping[str, str], status: Mapping[str, Any]
    ) -> None:
        doc = self.objects[("NodeClaim", "", name)]
        metadata = doc.setdefault("metadata", {})
        metadata.setdefault("labels", {}).update(labels)
        metadata.setdefault("annotations", {}).update(annotations)
        doc.setdefault("status", {}).update(copy.deepcopy(dict(status)))
        self.log.append(f"update nodeclaim/{name}")

    def delete_nodeclaim(self, name: str) -> None:
        self.objects.pop(("NodeClaim", "", name), None)
        self.log.append(f"delete nodeclaim/{name}")

    def record_events(self, events: Sequence[PodEvent]) -> None:
        for event in events:
            key = (event.pod, event.reason, event.dedupe or event.message)
            if key in self._event_keys:
                continue
            self._event_keys.add(key)
            self.events.append(Event(event.pod, event.reason, event.message, event.type))

    def remove_node_taint(self, node: str, taint_key: str) -> None:
        doc = self.objects[("Node", "", node)]
        spec = doc.setdefault("spec", {})
        spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != taint_key]
        self.log.append(f"untaint node/{node}")


@dataclass
class InMemoryState:
    """A StateStore in a dict: offering -> (expiry, reason)."""

    marks: dict[OfferingKey, tuple[float, str]] = field(default_factory=dict)

    def unavailable_offerings(self, now: float) -> frozenset[OfferingKey]:
        return frozenset(k for k, (expiry, _) in self.marks.items() if expiry > now)

    def mark_unavailable(self, offerings: Mapping[OfferingKey, str], now: float, ttl_seconds: int) -> None:
        for offering, reason in offerings.items():
            self.marks[offering] = (now + ttl_seconds, reason)
