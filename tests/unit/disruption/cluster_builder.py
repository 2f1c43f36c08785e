"""Build clusters as the API server would serve them (NodePools, EC2NodeClasses, NodeClaims, Nodes, Pods, PDBs),
for the disruption core's tests. Nodes get the allocatable their instance type really has (the shipped catalog)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import InstanceType
from nodewright.disruption.drift import hash_annotations
from nodewright.disruption.state import ClusterState, DisruptionSettings, cluster_state
from nodewright.model.loader import load_documents
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.service.provision import node_resources

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
# On-demand m5 only: no node is worth replacing by the same type bought as spot, or by a cheaper family, so a test
# sees the one move it is about.
M5_ON_DEMAND = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]},
]
_SNAPSHOT = SnapshotSource()
_TYPES: dict[tuple[str, ...], tuple[InstanceType, ...]] = {}


def instance_types(families: Sequence[str] = ("m5", "c5", "r5", "m6g", "t3")) -> tuple[InstanceType, ...]:
    """The shipped catalog, a few families and three zones (fast, real prices)."""
    key = tuple(families)
    if key not in _TYPES:
        _TYPES[key] = tuple(
            replace(it, offerings=tuple(o for o in it.offerings if o.zone in ZONES))
            for it in _SNAPSHOT.instance_types()
            if it.family in families
        )
    return _TYPES[key]


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Cluster:
    """A cluster under construction; `state()` loads it as the planner would."""

    def __init__(self, now: float = T0) -> None:
        self.now = now
        self.docs: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self.pool()
        self.nodeclass()

    # ------------------------------------------------------------------------------------ objects

    def pool(self, name: str = "general", disruption: Mapping[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
        template_spec: dict[str, Any] = {
            "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ],
        }
        template_spec.update(spec)
        doc: dict[str, Any] = {
            "apiVersion": "nodewright.io/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {
                "template": {"metadata": {"labels": {"team": "web"}}, "spec": template_spec},
                "disruption": {"consolidateAfter": "0s", **(disruption or {})},
            },
        }
        self._replace("NodePool", name, doc)
        return doc

    def nodeclass(self, name: str = "default", **spec: Any) -> dict[str, Any]:
        doc = {
            "apiVersion": "nodewright.io/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": name},
            "spec": {
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "demo-node",
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
                **spec,
            },
        }
        self._replace("EC2NodeClass", name, doc)
        return doc

    def _replace(self, kind: str, name: str, doc: dict[str, Any]) -> None:
        self.docs = [d for d in self.docs if not (d["kind"] == kind and d["metadata"]["name"] == name)]
        self.docs.append(doc)

    def node(
        self,
        name: str,
        instance_type: str = "m5.xlarge",
        zone: str = "us-east-1a",
        capacity_type: str = "on-demand",
        pool: str = "general",
        age: float = 3600.0,
        ready: bool = True,
        initialized: bool = True,
        annotations: Mapping[str, str] | None = None,
        claim_annotations: Mapping[str, str] | None = None,
        claim_labels: Mapping[str, str] | None = None,
        stamped: bool = True,
        taints: Sequence[Mapping[str, str]] = (),
        conditions: Sequence[Mapping[str, Any]] = (),
        **claim_spec: Any,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A launched, registered NodeClaim (`claim-<name>`) and its Node `<name>`."""
        it = next(t for t in _SNAPSHOT.instance_types() if t.name == instance_type)
        resources = node_resources(it, EC2NodeClass(name="default"))
        instance = f"i-{name}"
        created = iso(self.now - age)
        labels = {
            "karpenter.sh/nodepool": pool,
            "karpenter.sh/capacity-type": capacity_type,
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": zone,
            "kubernetes.io/arch": it.architecture,
            "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": name,
            "team": "web",
        }
        stamps: dict[str, str] = {}
        if stamped:
            loaded, _ = load_documents([d for d in self.docs if d["kind"] in ("NodePool", "EC2NodeClass")], "builder")
            found = loaded.nodepool(pool)
            if found is not None:
                stamps = hash_annotations(found, loaded.nodeclass(found.node_class_ref.name))
        claim_conditions = [
            {"type": "Launched", "status": "True", "lastTransitionTime": created},
            {"type": "Registered", "status": "True", "lastTransitionTime": created},
            *(
                [{"type": "Initialized", "status": "True", "lastTransitionTime": created}]
                if initialized
                else [{"type": "Initialized", "status": "False", "lastTransitionTime": created}]
            ),
            *conditions,
        ]
        claim = {
            "apiVersion": "nodewright.io/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": f"claim-{name}",
                "labels": {**labels, **(claim_labels or {})},
                "annotations": {**stamps, **(claim_annotations or {})},
                "creationTimestamp": created,
            },
            "spec": {
                "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
                "expireAfter": "720h",
                **claim_spec,
            },
            "status": {
                "providerID": f"aws:///{zone}/{instance}",
                "nodeName": name,
                "imageID": "ami-current",
                "conditions": claim_conditions,
                **resources,
            },
        }
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": dict(annotations or {}),
                "creationTimestamp": created,
            },
            "spec": {"providerID": f"aws:///{zone}/{instance}", "taints": [dict(t) for t in taints]},
            "status": {
                # A node not Ready went so a minute ago: well within node repair's toleration (30 minutes).
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "lastTransitionTime": created if ready else iso(self.now - 60),
                    }
                ],
                **resources,
            },
        }
        self.docs.extend([claim, node])
        return claim, node

    def pod(
        self,
        name: str,
        node: str = "",
        cpu: str = "500m",
        memory: str = "512Mi",
        namespace: str = "web",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        owner: str = "ReplicaSet",
        bound_ago: float = 3600.0,
        **spec: Any,
    ) -> dict[str, Any]:
        """A pod, bound to `node` when given (pending otherwise)."""
        pod_spec: dict[str, Any] = {
            "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            **spec,
        }
        status: dict[str, Any] = {"phase": "Pending"}
        if node:
            pod_spec["nodeName"] = node
            status = {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": iso(self.now - bound_ago)}
                ],
            }
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{next(self._ids)}",
                "labels": dict(labels or {"app": name.rsplit("-", 1)[0]}),
                "annotations": dict(annotations or {}),
                "ownerReferences": [{"kind": owner, "name": "owner"}] if owner else [],
            },
            "spec": pod_spec,
            "status": status,
        }
        self.docs.append(doc)
        return doc

    def pdb(
        self, name: str, selector: Mapping[str, str], namespace: str = "web", allowed: int | None = None, **spec: Any
    ) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": dict(selector)}, **spec},
        }
        if allowed is not None:
            doc["status"] = {"disruptionsAllowed": allowed}
        self.docs.append(doc)
        return doc

    def buffer(
        self,
        name: str,
        replicas: int,
        cpu: str = "1",
        node: str = "",
        namespace: str = "web",
        **buffer_spec: Any,
    ) -> list[dict[str, Any]]:
        """A CapacityBuffer of `replicas` pods of `cpu` each and its PodTemplate (both named `name`); `node` pins the
        template to that node's hostname, so the buffer's room is on that node."""
        spec: dict[str, Any] = {
            "containers": [{"name": "app", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]
        }
        if node:
            spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "template": {"metadata": {"labels": {"buffer": name}}, "spec": spec},
        }
        buffer = {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityBuffer",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{next(self._ids)}"},
            "spec": {"podTemplateRef": {"name": name}, "replicas": replicas, **buffer_spec},
        }
        self.docs.extend([template, buffer])
        return [template, buffer]

    def find(self, kind: str, name: str) -> dict[str, Any]:
        return next(d for d in self.docs if d["kind"] == kind and d["metadata"]["name"] == name)

    # -------------------------------------------------------------------------------------- state

    def state(
        self,
        locked: Iterable[str] = (),
        spot_to_spot: bool = False,
        types: Sequence[InstanceType] | None = None,
        now: float | None = None,
    ) -> ClusterState:
        found, errors = cluster_state(
            copy.deepcopy(self.docs),
            types if types is not None else instance_types(),
            self.now if now is None else now,
            frozenset(locked),
            DisruptionSettings(spot_to_spot=spot_to_spot),
        )
        assert not errors, errors
        return found
