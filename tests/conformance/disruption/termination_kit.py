"""Builders for the termination ports: Karpenter's test pods as API documents, its termination controller's
reconciles as nodewright's drain rounds (`Drainer`), and a node deleted through nodewright's `Deleted` workflow
(`World`).

- `kpod(...)` is Karpenter's `test.Pod(test.PodOptions{...})`, bound to the node, owned by a ReplicaSet
  (`defaultOwnerRefs`) unless said otherwise, with the API server's default terminationGracePeriodSeconds (30).
- `Drainer` is the termination controller's awaitDrain plus the eviction queue against the node's pods: each
  `reconcile()` is one `drain_round`; an eviction the round asks for makes the pod terminating (deletionTimestamp
  = now + its grace period, as the API server does) unless a PodDisruptionBudget refuses it (`pdb_blocked`: the
  API server's 429, which nodewright asks again next round, as Karpenter's queue requeues); a deletion does the
  same with the round's grace period. `gone(...)` is the test's `ExpectDeleted` (the kubelet finished the pod).
- `World` is one NodeClaim, its Node and instance in nodewright's in-memory ports; `delete("Node")` or
  `delete("NodeClaim")` is `kubectl delete`; `run()` is what the planner and the state machine do then:
  `termination.deletions` names the forceful `Deleted` command, and the workflow's identify, drain rounds (10 s
  apart), volume checks (CheckVolumes) and terminate steps run it. `attach` and `claim` are Karpenter's
  test.VolumeAttachment and test.PersistentVolumeClaim.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.disruption.drain import DrainRound, drain_round
from nodewright.disruption.fleet import fleet_nodes
from nodewright.disruption.termination import deletions
from nodewright.model.conditions import rfc3339
from nodewright.ports import Instance
from nodewright.service import workflow
from nodewright.service.workflow import Ports
from nodewright.tags import FINALIZER, NODECLAIM

_SERVICE = Path(__file__).resolve().parents[2] / "unit" / "service"
if str(_SERVICE) not in sys.path:
    sys.path.insert(0, str(_SERVICE))

from service_fakes import FakeCloud, FixedClock, SmallCatalog, node_for, nodeclass, nodepool, pod  # noqa: E402
from test_provision_service import batch_of  # noqa: E402

# Re-exported for the ports that launch through nodewright's provisioner (the lifecycle liveness suite).
__all__ = ["FakeCloud", "FixedClock", "SmallCatalog", "batch_of", "node_for", "nodeclass", "nodepool", "pod"]

T0 = 1_800_000_000.0
NODE, CLAIM, INSTANCE = "node-a", "claim-a", "i-a"
DISRUPTED = "karpenter.sh/disrupted"


def kpod(
    name: str,
    *,
    owner: str = "ReplicaSet",
    critical: str = "",
    tolerations: Iterable[Mapping[str, Any]] = (),
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    phase: str = "Running",
    grace: int | None = 30,
    deleted_at: float | None = None,
    started_at: float | None = None,
    node: str = NODE,
) -> dict[str, Any]:
    """Karpenter's test.Pod bound to `node` (module doc)."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
    }
    if owner:
        api = "v1" if owner == "Node" else "apps/v1"
        metadata["ownerReferences"] = [{"apiVersion": api, "kind": owner, "name": f"{owner.lower()}-{name}"}]
    if deleted_at is not None:
        metadata["deletionTimestamp"] = rfc3339(deleted_at)
    spec: dict[str, Any] = {
        "nodeName": node,
        "tolerations": [dict(t) for t in tolerations],
        "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "100m"}}}],
    }
    if critical:
        spec["priorityClassName"] = critical
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    status: dict[str, Any] = {"phase": phase}
    if started_at is not None:
        status["startTime"] = rfc3339(started_at)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def key(name: str) -> str:
    return f"default/{name}"


class Drainer:
    """The node's pods and nodewright's drain rounds over them (module doc)."""

    def __init__(self, *pods: dict[str, Any], deadline: float | None = None, now: float = T0) -> None:
        self.pods = {key(p["metadata"]["name"]): p for p in pods}
        self.deadline = deadline
        self.now = now
        self.pdb_blocked: set[str] = set()
        self.refused: list[str] = []
        self.asked: list[str] = []  # every eviction asked for, refused or not, in order
        self.deleted: dict[str, int] = {}  # pod key -> the grace period of its deletion

    def reconcile(self) -> DrainRound:
        work = drain_round(list(self.pods.values()), self.now, self.deadline)
        for k in work.evict:
            self.asked.append(k)
            if k in self.pdb_blocked:
                self.refused.append(k)
                continue
            grace = self.pods[k]["spec"].get("terminationGracePeriodSeconds", 30)
            self.pods[k]["metadata"]["deletionTimestamp"] = rfc3339(self.now + grace)
        for k in work.delete:
            self.deleted[k] = work.grace[k]
            self.pods[k]["metadata"]["deletionTimestamp"] = rfc3339(self.now + work.grace[k])
        return work

    def terminating(self, name: str) -> bool:
        return bool(self.pods[key(name)]["metadata"].get("deletionTimestamp"))

    def gone(self, *names: str) -> None:
        for name in names:
            del self.pods[key(name)]

    def step(self, seconds: float) -> None:
        self.now += seconds


def _ready(doc: dict[str, Any], ready: bool = True) -> dict[str, Any]:
    doc["spec"]["taints"] = []
    doc["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    doc["metadata"]["finalizers"] = [FINALIZER]
    return doc


class World:
    """One NodeClaim with its Node and instance in nodewright's in-memory ports (module doc)."""

    def __init__(self, *pods: dict[str, Any], tgp: str | None = None, node: bool = True, ready: bool = True) -> None:
        self.clock = FixedClock(T0)
        self.cluster = InMemoryCluster([nodepool(), nodeclass()], clock=self.clock.now)
        self.cloud = FakeCloud(cluster_log=self.cluster.log)
        instance = Instance(INSTANCE, "m5.xlarge", "us-east-1a", "running", "on-demand", T0 - 3600, {NODECLAIM: CLAIM})
        self.cloud.instances[INSTANCE] = instance
        if node:
            self.cluster.put(_ready(node_for(instance, NODE), ready))
        spec: dict[str, Any] = {"expireAfter": "720h"}
        if tgp is not None:
            spec["terminationGracePeriod"] = tgp
        self.cluster.put(
            {
                "apiVersion": "nodewright.io/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": CLAIM,
                    "labels": {"karpenter.sh/nodepool": "general"},
                    "creationTimestamp": rfc3339(T0 - 3600),
                    "finalizers": [FINALIZER],
                },
                "spec": spec,
                "status": {
                    "providerID": f"aws:///us-east-1a/{INSTANCE}",
                    "nodeName": NODE if node else "",
                    "conditions": [{"type": "Registered", "status": "True" if node else "Unknown"}],
                },
            }
        )
        for p in pods:
            self.cluster.put(p)
        self.ports = Ports(self.cluster, self.cloud, InMemoryState(), self.clock)
        self.state: dict[str, Any] = {}

    def delete(self, kind: str, name: str = "") -> None:
        self.cluster.request_delete(kind, name or (NODE if kind == "Node" else CLAIM), at=rfc3339(self.clock.t))

    def commands(self) -> list[dict[str, Any]]:
        view = self.cluster.read_fleet()
        fleet = fleet_nodes(view.nodeclaims, view.nodes, {})
        return [c.to_input() for c in deletions(fleet, set(), self.clock.t)]

    def start(self, command: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The planner's tick: the Deleted command (the only one, unless given), then IdentifyCandidate."""
        if command is None:
            [command] = self.commands()
        self.state = dict(command)
        self.state["identify"] = workflow.STEPS["identify"](self.state, "deleted", self.ports)
        return dict(self.state["identify"])

    def drain(self) -> dict[str, Any]:
        """One drain round, then the state machine's wait."""
        self.state["drain"] = workflow.STEPS["drain"](self.state, "deleted", self.ports)
        self.clock.t += workflow.DRAIN_POLL_SECONDS
        return dict(self.state["drain"])

    def volumes(self) -> dict[str, Any]:
        """One CheckVolumes (the wait after the drain), then the state machine's wait."""
        self.state["volumes"] = workflow.STEPS["volumes"](self.state, "deleted", self.ports)
        self.clock.t += workflow.DRAIN_POLL_SECONDS
        return dict(self.state["volumes"])

    def attach(self, name: str, volume: str) -> None:
        """Karpenter's test.VolumeAttachment on the node, of the PersistentVolume `volume`."""
        self.cluster.put(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "VolumeAttachment",
                "metadata": {"name": name},
                "spec": {
                    "attacher": "ebs.csi.aws.com",
                    "nodeName": NODE,
                    "source": {"persistentVolumeName": volume},
                },
            }
        )

    def claim(self, name: str, volume: str) -> None:
        """Karpenter's test.PersistentVolumeClaim bound to the PersistentVolume `volume`."""
        self.cluster.put(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"volumeName": volume},
                "status": {"phase": "Bound"},
            }
        )

    def condition(self, kind: str) -> tuple[str, str]:
        """(status, reason) of the NodeClaim's condition `kind`, ("", "") when it has none."""
        doc = self.cluster.nodeclaim(CLAIM) or {}
        found = [c for c in (doc.get("status") or {}).get("conditions") or [] if c.get("type") == kind]
        return (str(found[0]["status"]), str(found[0].get("reason") or "")) if found else ("", "")

    def terminate(self) -> dict[str, Any]:
        self.state["terminate"] = workflow.STEPS["terminate"](self.state, "deleted", self.ports)
        return dict(self.state["terminate"])

    def run(self, rounds: int = 10) -> dict[str, Any]:
        """The whole workflow; asserts the drain (then the volume wait) finished within `rounds` rounds."""
        self.start()
        for _ in range(rounds):
            if self.drain()["done"]:
                break
        else:
            raise AssertionError(f"the drain did not finish in {rounds} rounds: {self.state['drain']}")
        for _ in range(rounds):
            if self.volumes()["done"]:
                return self.terminate()
        raise AssertionError(f"the volumes were not detached in {rounds} rounds: {self.state['volumes']}")

    def exists(self, kind: str, name: str) -> bool:
        return (kind, "" if kind != "Pod" else "default", name) in self.cluster.objects

    def pod_keys(self) -> set[str]:
        return {f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in self.cluster.of_kind("Pod")}
