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

from nodewright.disruption.lease import Lease
from nodewright.model.conditions import Condition, merge_conditions
from nodewright.model.objects import LabelSelector
from nodewright.ports import (
    BLOCKED,
    EVICTED,
    GONE,
    ClusterView,
    FleetView,
    NodeEvent,
    OfferingKey,
    PodEvent,
    ProvisioningView,
)
from nodewright.tags import CORDONED, FINALIZER

# Read by `capacity_buffers` rather than as cluster documents (the planner loads them as buffers).
BUFFER_KINDS = ("CapacityBuffer", "PodTemplate")


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
        self.reads: list[str] = []  # every read, in order, for tests that check what a decision read
        self.eviction_blocked: set[str] = set()  # ns/name of pods whose eviction a PDB would refuse
        for doc in documents:
            self.put(doc)

    def put(self, doc: Mapping[str, Any]) -> None:
        """Add or replace an object (tests use this as `kubectl apply`)."""
        self.objects[_key(doc)] = copy.deepcopy(dict(doc))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [d for (k, _, _), d in sorted(self.objects.items()) if k == kind]

    def nodeclaim(self, name: str) -> dict[str, Any] | None:
        return self.objects.get(("NodeClaim", "", name))

    def _live_pods(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for (kind, namespace, name), doc in sorted(self.objects.items()):
            if kind == "Pod" and (doc.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                out.append((f"{namespace or 'default'}/{name}", doc))
        return out

    def read(self) -> ClusterView:
        self.reads.append("read")
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
            if kind in BUFFER_KINDS:
                continue  # read with the buffers (`capacity_buffers`)
            documents.append(copy.deepcopy(doc))
        return ClusterView(documents, unbound, self.capacity_buffers())

    def capacity_buffers(self) -> Sequence[Mapping[str, Any]]:
        buffers = [copy.deepcopy(d) for d in self.of_kind("CapacityBuffer")]
        named: dict[tuple[str, str, str], dict[str, Any]] = {}
        for buffer in buffers:
            namespace = (buffer.get("metadata") or {}).get("namespace") or ""
            spec = buffer.get("spec") or {}
            template, scalable = spec.get("podTemplateRef") or {}, spec.get("scalableRef") or {}
            key = ("PodTemplate", namespace, str(template.get("name", ""))) if template else None
            if scalable and (scalable.get("apiGroup") or "apps") == "apps":
                key = (str(scalable.get("kind", "")), namespace, str(scalable.get("name", "")))
            if key is not None and key in self.objects:
                named[key] = copy.deepcopy(self.objects[key])
        return [*buffers, *named.values()]

    def set_capacity_buffer_status(
        self, buffer: Mapping[str, Any], fields: Mapping[str, Any], conditions: Sequence[Condition] = ()
    ) -> None:
        doc = self.objects.get(_key(buffer))
        if doc is None:
            return
        status = doc.setdefault("status", {})
        status.update(copy.deepcopy(dict(fields)))
        if conditions:
            status["conditions"] = merge_conditions(status.get("conditions") or [], conditions, (), self._clock())
        self.log.append(f"status capacitybuffer/{_key(buffer)[1]}/{_key(buffer)[2]}")

    def read_for_provisioning(self) -> ProvisioningView:
        self.reads.append("read_for_provisioning")
        return ProvisioningView(
            nodepools=[copy.deepcopy(d) for d in self.of_kind("NodePool")],
            nodeclasses=[copy.deepcopy(d) for d in self.of_kind("EC2NodeClass")],
            nodeclaims=[copy.deepcopy(d) for d in self.of_kind("NodeClaim")],
            nodes=[copy.deepcopy(d) for d in self.of_kind("Node")],
            daemonsets=[copy.deepcopy(d) for d in self.of_kind("DaemonSet")],
            storage_classes=[copy.deepcopy(d) for d in self.of_kind("StorageClass")],
            pending=self._pending(),
            nodeoverlays=[copy.deepcopy(d) for d in self.of_kind("NodeOverlay")],
        )

    def _pending(self) -> dict[str, dict[str, Any]]:
        return {
            key: copy.deepcopy(doc) for key, doc in self._live_pods() if not (doc.get("spec") or {}).get("nodeName")
        }

    def nodeclaims(self) -> Sequence[Mapping[str, Any]]:
        self.reads.append("nodeclaims")
        return [copy.deepcopy(d) for d in self.of_kind("NodeClaim")]

    def pending_pods(self, namespaces: Sequence[str] | None = None) -> Mapping[str, Mapping[str, Any]]:
        if namespaces is None:
            self.reads.append("pending_pods")
            return self._pending()
        self.reads.extend(f"pending_pods {namespace}" for namespace in namespaces)
        return {k: doc for k, doc in self._pending().items() if k.split("/", 1)[0] in namespaces}

    def bound_pods(self, namespace: str | None, selector: LabelSelector | None) -> Sequence[Mapping[str, Any]]:
        self.reads.append(f"bound_pods {namespace or '*'}")
        out = []
        for _, doc in self._live_pods():
            metadata = doc.get("metadata") or {}
            if not (doc.get("spec") or {}).get("nodeName"):
                continue
            if namespace is not None and (metadata.get("namespace") or "default") != namespace:
                continue
            if selector is not None and not selector.matches(metadata.get("labels") or {}):
                continue
            out.append(copy.deepcopy(doc))
        return out

    def volumes(
        self, claims: Sequence[tuple[str, str]]
    ) -> tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]:
        self.reads.append("volumes")
        pvcs = [
            copy.deepcopy(d)
            for namespace, name in sorted(set(claims))
            if (d := self.objects.get(("PersistentVolumeClaim", namespace, name))) is not None
        ]
        names = {str((c.get("spec") or {}).get("volumeName") or "") for c in pvcs} - {""}
        pvs = [copy.deepcopy(d) for n in sorted(names) if (d := self.objects.get(("PersistentVolume", "", n)))]
        return pvcs, pvs

    def get_nodeclaim(self, name: str) -> Mapping[str, Any] | None:
        self.reads.append(f"get nodeclaim/{name}")
        found = self.objects.get(("NodeClaim", "", name))
        return copy.deepcopy(found) if found is not None else None

    def get_node(self, name: str) -> Mapping[str, Any] | None:
        self.reads.append(f"get node/{name}")
        found = self.objects.get(("Node", "", name))
        return copy.deepcopy(found) if found is not None else None

    def set_status(self, kind: str, name: str, fields: Mapping[str, Any], conditions: Sequence[Condition] = ()) -> None:
        doc = self.objects.get((kind, "", name))
        # Only nodewright's own group: Karpenter's objects are Karpenter's to write.
        if doc is None or not str(doc.get("apiVersion", "")).startswith("nodewright.io/"):
            return
        status = doc.setdefault("status", {})
        status.update(copy.deepcopy(dict(fields)))
        if conditions:
            status["conditions"] = merge_conditions(status.get("conditions") or [], conditions, (), self._clock())
        self.log.append(f"status {kind.lower()}/{name}")

    def label_node(self, node: str, labels: Mapping[str, str | None]) -> None:
        doc = self.objects.get(("Node", "", node))
        if doc is None:
            return
        current = doc.setdefault("metadata", {}).setdefault("labels", {})
        for k, v in labels.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = v
        self.log.append(f"label node/{node} {','.join(f'{k}={v}' for k, v in sorted(labels.items()))}")

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

    def set_nodeclaim_conditions(self, name: str, conditions: Sequence[Condition], clear: Sequence[str] = ()) -> None:
        doc = self.objects.get(("NodeClaim", "", name))
        if doc is None:
            return
        status = doc.setdefault("status", {})
        status["conditions"] = merge_conditions(status.get("conditions") or [], conditions, clear, self._clock())
        self.log.append(f"conditions nodeclaim/{name}")

    def delete_nodeclaim(self, name: str) -> None:
        self.objects.pop(("NodeClaim", "", name), None)
        self.log.append(f"delete nodeclaim/{name}")

    def request_nodeclaim_deletion(self, name: str) -> None:
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.request_delete("NodeClaim", name, stamp)
        self.log.append(f"request deletion nodeclaim/{name}")

    def record_events(self, events: Sequence[PodEvent]) -> None:
        for event in events:
            key = (event.pod, event.reason, event.dedupe or event.message)
            if key in self._event_keys:
                continue
            self._event_keys.add(key)
            self.events.append(Event(event.pod, event.reason, event.message, event.type))

    def remove_node_taint(self, node: str, taint_key: str, effect: str = "") -> None:
        doc = self.objects.get(("Node", "", node))
        if doc is None:
            return
        spec = doc.setdefault("spec", {})
        taints = spec.get("taints") or []
        kept = [t for t in taints if t.get("key") != taint_key or (effect and t.get("effect") != effect)]
        if len(kept) != len(taints):
            spec["taints"] = kept
            self.log.append(f"untaint node/{node}")

    def read_fleet(self) -> FleetView:
        self.reads.append("read_fleet")
        return FleetView(
            [copy.deepcopy(d) for d in self.of_kind("NodePool")],
            [copy.deepcopy(d) for d in self.of_kind("NodeClaim")],
            [copy.deepcopy(d) for d in self.of_kind("Node")],
            [copy.deepcopy(d) for d in self.of_kind("EC2NodeClass")],
        )

    def volume_attachments(self, node: str) -> Sequence[Mapping[str, Any]]:
        self.reads.append(f"volume_attachments {node}")
        return [
            copy.deepcopy(d) for d in self.of_kind("VolumeAttachment") if (d.get("spec") or {}).get("nodeName") == node
        ]

    def pods_on_node(self, node: str) -> Sequence[Mapping[str, Any]]:
        self.reads.append(f"pods_on_node {node}")
        return [
            copy.deepcopy(d)
            for d in self.of_kind("Pod")
            if (d.get("spec") or {}).get("nodeName") == node
            and (d.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]

    def add_node_taint(self, node: str, key: str, value: str, effect: str) -> bool:
        doc = self.objects.get(("Node", "", node))
        if doc is None:
            return False
        taints = doc.setdefault("spec", {}).setdefault("taints", [])
        if any(t.get("key") == key and t.get("effect") == effect for t in taints):
            return False
        taints.append({"key": key, "effect": effect, **({"value": value} if value else {})})
        self.log.append(f"taint node/{node} {key}:{effect}")
        return True

    def set_unschedulable(self, node: str, unschedulable: bool) -> None:
        doc = self.objects.get(("Node", "", node))
        if doc is None:
            return
        spec = doc.setdefault("spec", {})
        annotations = doc.setdefault("metadata", {}).setdefault("annotations", {})
        if unschedulable and not spec.get("unschedulable"):
            spec["unschedulable"] = True
            annotations[CORDONED] = "true"
            self.log.append(f"cordon node/{node}")
        elif not unschedulable and CORDONED in annotations:
            spec.pop("unschedulable", None)
            del annotations[CORDONED]
            self.log.append(f"uncordon node/{node}")

    def evict_pod(self, namespace: str, name: str) -> str:
        """Evicts unless a test listed the pod in `eviction_blocked` (as a PodDisruptionBudget would)."""
        if ("Pod", namespace, name) not in self.objects:
            return GONE
        if f"{namespace}/{name}" in self.eviction_blocked:
            self.log.append(f"evict pod/{namespace}/{name}: blocked")
            return BLOCKED
        del self.objects[("Pod", namespace, name)]
        self.log.append(f"evict pod/{namespace}/{name}")
        return EVICTED

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        if self.objects.pop(("Pod", namespace, name), None) is not None:
            self.log.append(f"delete pod/{namespace}/{name}")

    def delete_node(self, name: str) -> None:
        if self.objects.pop(("Node", "", name), None) is not None:
            self.log.append(f"delete node/{name}")

    def add_node_finalizer(self, name: str) -> None:
        metadata = (self.objects.get(("Node", "", name)) or {}).get("metadata")
        if metadata is None or metadata.get("deletionTimestamp"):
            return
        finalizers = metadata.setdefault("finalizers", [])
        if FINALIZER not in finalizers:
            finalizers.append(FINALIZER)

    def request_delete(self, kind: str, name: str, at: str = "2026-01-01T00:00:00Z") -> None:
        """What `kubectl delete` does to a cluster-scoped object: gone at once without finalizers, else marked
        with a deletionTimestamp until its finalizers are removed."""
        doc = self.objects.get((kind, "", name))
        if doc is None:
            return
        if (doc.get("metadata") or {}).get("finalizers"):
            doc["metadata"].setdefault("deletionTimestamp", at)
        else:
            del self.objects[(kind, "", name)]

    def record_node_events(self, events: Sequence[NodeEvent]) -> None:
        for event in events:
            subject = f"{event.kind.lower()}/{event.node}"
            key = (subject, event.reason, event.dedupe or event.message)
            if key in self._event_keys:
                continue
            self._event_keys.add(key)
            self.events.append(Event(subject, event.reason, event.message, event.type))


@dataclass
class InMemoryState:
    """A StateStore in dicts: offering -> (expiry, reason); lock name -> its lease."""

    marks: dict[OfferingKey, tuple[float, str]] = field(default_factory=dict)
    locks: dict[str, Lease] = field(default_factory=dict)
    deliveries: dict[str, tuple[float, dict[str, Any]]] = field(default_factory=dict)

    def recall_delivery(self, batch_id: str, now: float) -> Mapping[str, Any] | None:
        expiry, answer = self.deliveries.get(batch_id, (0.0, {}))
        return copy.deepcopy(answer) if expiry > now else None

    def remember_delivery(self, batch_id: str, answer: Mapping[str, Any], now: float, ttl_seconds: int) -> None:
        self.deliveries[batch_id] = (now + ttl_seconds, copy.deepcopy(dict(answer)))

    def acquire_lock(self, name: str, owner: str, now: float, ttl_seconds: int, interruption: bool = False) -> str:
        held = self.lease(name, now)
        if held is not None and held.owner != owner:
            return held.owner
        self.locks[name] = Lease(name, owner, interruption, now, now + ttl_seconds)
        return owner

    def take_over_lock(
        self, name: str, owner: str, previous: str, now: float, ttl_seconds: int, interruption: bool = False
    ) -> bool:
        current = self.locks.get(name)
        if current is not None and current.owner != previous:
            return False
        self.locks[name] = Lease(name, owner, interruption, now, now + ttl_seconds)
        return True

    def lease(self, name: str, now: float) -> Lease | None:
        held = self.locks.get(name)
        return held if held is not None and held.expires_at > now else None

    def release_lock(self, name: str, owner: str) -> None:
        held = self.locks.get(name)
        if held is not None and held.owner == owner:
            del self.locks[name]

    def leases(self, now: float) -> Mapping[str, Lease]:
        return {name: held for name, held in self.locks.items() if held.expires_at > now}

    def unavailable_offerings(self, now: float) -> frozenset[OfferingKey]:
        return frozenset(k for k, (expiry, _) in self.marks.items() if expiry > now)

    def mark_unavailable(self, offerings: Mapping[OfferingKey, str], now: float, ttl_seconds: int) -> None:
        for offering, reason in offerings.items():
            self.marks[offering] = (now + ttl_seconds, reason)


@dataclass
class InMemoryWorkflows:
    """A Workflows port that records what it started: name -> input, and each execution's status (RUNNING when
    started; tests and simulations move it on)."""

    started: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)

    def start(self, name: str, document: Mapping[str, Any]) -> bool:
        if name in self.started:
            return False
        self.started[name] = copy.deepcopy(dict(document))
        self.statuses[name] = "RUNNING"
        return True

    def status(self, name: str) -> str:
        return self.statuses.get(name, "")
