"""Everything the scheduling simulation reads about a cluster, as loaded from files or the API server."""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.model.capacitybuffer import BufferResolution
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import (
    DaemonSet,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    StorageClass,
)


@dataclass(frozen=True, slots=True)
class LoadedObject:
    """One object that loaded cleanly, with a one-line description for `nodewright validate`."""

    source: str
    kind: str
    name: str  # namespace/name for namespaced kinds
    summary: str

    def __str__(self) -> str:
        return f"{self.source}: {self.kind}/{self.name} ({self.summary})"


@dataclass(frozen=True, slots=True)
class ClusterInputs:
    """The cluster as the scheduler sees it.

    `nodes` carry the pods bound to them (`Node.pods`); `pending_pods` are the pods still to place, in input
    order (CapacityBuffers' virtual pods last). `objects` lists every loaded document (workloads once, not per pod)
    for summaries.
    """

    nodepools: tuple[NodePool, ...] = ()
    nodeclasses: tuple[EC2NodeClass, ...] = ()
    nodes: tuple[Node, ...] = ()
    pending_pods: tuple[Pod, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    pvcs: tuple[PersistentVolumeClaim, ...] = ()
    pvs: tuple[PersistentVolume, ...] = ()
    storage_classes: tuple[StorageClass, ...] = ()
    nodeclaims: tuple[NodeClaim, ...] = ()
    nodeoverlays: tuple[NodeOverlay, ...] = ()
    # CapacityBuffers resolved against the PodTemplates and workloads loaded with them; the ready ones' virtual
    # pods are at the end of `pending_pods` (`model.capacitybuffer`).
    buffers: tuple[BufferResolution, ...] = ()
    objects: tuple[LoadedObject, ...] = ()
    # Pods (`ns/name`) bound to a Node the documents do not hold, left out of the load (`load_sources(omit_orphans)`).
    orphaned_pods: tuple[str, ...] = ()

    def nodepool(self, name: str) -> NodePool | None:
        """The NodePool called `name`, if loaded."""
        return next((p for p in self.nodepools if p.name == name), None)

    def nodeclass(self, name: str) -> EC2NodeClass | None:
        """The EC2NodeClass called `name`, if loaded."""
        return next((c for c in self.nodeclasses if c.name == name), None)
