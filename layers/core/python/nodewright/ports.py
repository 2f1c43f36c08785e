"""The ports the services talk through: the cloud, the cluster, the shared state store and the clock.

Services (`nodewright.service`) take these as arguments; adapters (`nodewright.adapters`) implement them
with boto3 and the kubernetes client, tests with in-memory fakes. Values crossing a port are plain data:
API objects as camelCase dicts (what the API server serves and `model.loader` reads), launch documents
from `nodewright.launch`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodewright.catalog.catalog import CapacityReservation
from nodewright.disruption.lease import Lease
from nodewright.launch.template import LaunchTemplateSpec, ResolvedNodeClass
from nodewright.launch.userdata import ClusterInfo
from nodewright.model.conditions import Condition
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.objects import LabelSelector

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


class NodeClassError(Exception):
    """An EC2NodeClass cannot be used as written (no subnets, no AMI, a role nodewright may not pass).

    `failures` maps each status condition that failed (`SubnetsReady`, `SecurityGroupsReady`, `AMIsReady`,
    `InstanceProfileReady`) to Karpenter's reason and a message; `partial` holds what did resolve (empty
    tuples and maps where a part failed), so the EC2NodeClass's status can show it.
    """

    def __init__(
        self,
        message: str,
        failures: Mapping[str, tuple[str, str]] | None = None,
        partial: ResolvedNodeClass | None = None,
    ) -> None:
        super().__init__(message)
        self.failures: Mapping[str, tuple[str, str]] = failures or {"ValidationSucceeded": ("Invalid", message)}
        self.partial = partial


class LaunchError(Exception):
    """The cloud refused a launch request outright (not capacity, not throttling): a bad template or
    parameter, a missing permission. The claim cannot launch as asked."""


class Throttled(Exception):
    """The cloud kept answering with throttling after the client's own retries; try again later."""


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...


@dataclass(frozen=True, slots=True)
class Instance:
    """An EC2 instance as the provisioner needs it."""

    id: str
    instance_type: str
    zone: str
    state: str
    capacity_type: str  # spot | on-demand
    launch_time: float = 0.0
    tags: Mapping[str, str] = field(default_factory=dict)
    image_id: str = ""
    subnet_id: str = ""
    security_group_ids: tuple[str, ...] = ()


class Cloud(Protocol):
    def cluster_info(self) -> ClusterInfo:
        """Endpoint, CA, service CIDR and Kubernetes version of the cluster (eks:DescribeCluster)."""
        ...

    def resolve_node_class(self, node_class: EC2NodeClass, k8s_version: str) -> ResolvedNodeClass:
        """Subnets, security groups, AMIs per (architecture, variant), instance profile and capacity
        reservations for an EC2NodeClass. Raises NodeClassError with a message a user can act on."""
        ...

    def forget_node_class(self, node_class: EC2NodeClass) -> None:
        """Drop whatever was kept of this EC2NodeClass's resolution (a launch found a subnet, security group,
        image or instance profile of it gone); the next `resolve_node_class` asks EC2 again."""
        ...

    def capacity_reservations(self, resolved: ResolvedNodeClass) -> Sequence[CapacityReservation]:
        """Open ODCRs the EC2NodeClass selects, with their free instance counts now."""
        ...

    def ensure_launch_template(self, spec: LaunchTemplateSpec, tags: Mapping[str, str]) -> str:
        """The name of a launch template with exactly this content, created if missing (LaunchError if
        EC2 refuses to create it)."""
        ...

    def create_fleet(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """Call CreateFleet; returns the response (Instances, Errors). Raises Throttled when EC2 keeps
        throttling after retries, LaunchError when it refuses the request itself."""
        ...

    def instances_of_nodeclaim(self, nodeclaim: str) -> Sequence[Instance]:
        """Instances (not terminated) tagged with this NodeClaim name in this cluster."""
        ...

    def instances_of_nodeclaims(self, nodeclaims: Sequence[str]) -> Mapping[str, Sequence[Instance]]:
        """`instances_of_nodeclaim` for many names at once (one lookup, not one per name): name -> instances,
        names without any left out."""
        ...

    def terminate(self, instance_ids: Iterable[str]) -> None:
        """Terminate instances (already terminated ones are fine)."""
        ...

    def capacity_instances(self) -> Sequence[Instance]:
        """Every instance (not terminated or shutting down) tagged as this cluster's nodewright capacity, for
        garbage collection."""
        ...

    def describe_instances(self, instance_ids: Iterable[str]) -> Sequence[Instance]:
        """The instances among these ids that EC2 still knows (any state, terminated included); unknown
        ids are left out rather than raising."""
        ...


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The whole cluster as the planner's simulation needs it, as camelCase API objects.

    `documents`: nodewright.io/v1 NodePools, EC2NodeClasses and NodeClaims and nodewright.io/v1alpha1 NodeOverlays
    (never Karpenter's), Nodes, pods
    bound to nodes, DaemonSets, PodDisruptionBudgets, PVCs, PVs and StorageClasses. `unbound_pods`: the live
    pods that have no node yet, by key (`ns/name`).
    """

    documents: Sequence[Mapping[str, Any]]
    unbound_pods: Mapping[str, Mapping[str, Any]]
    # CapacityBuffers with the PodTemplates, Deployments, ReplicaSets and StatefulSets they name (for
    # `model.loader.load_documents(buffers=...)`: the workloads give a pod template, not pods).
    buffers: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True, slots=True)
class ProvisioningView:
    """What every provisioning decision reads from the API server, as camelCase API objects.

    NodePools and EC2NodeClasses (nodewright.io/v1 and Karpenter v1), NodeClaims, Nodes, DaemonSets,
    StorageClasses and NodeOverlays (nodewright.io/v1alpha1), and `pending`: the live pods that have no node yet,
    by key (`ns/name`). Pods bound to nodes are not here: a decision reads the few it needs
    (`Cluster.bound_pods`, `Cluster.pods_on_node`). Adapters serve this from the API server's watch cache
    (resourceVersion=0), so it may lag the newest writes by a moment; `Cluster.pending_pods` is the consistent
    read of the pending set.
    """

    nodepools: Sequence[Mapping[str, Any]] = ()
    nodeclasses: Sequence[Mapping[str, Any]] = ()
    nodeclaims: Sequence[Mapping[str, Any]] = ()
    nodes: Sequence[Mapping[str, Any]] = ()
    daemonsets: Sequence[Mapping[str, Any]] = ()
    storage_classes: Sequence[Mapping[str, Any]] = ()
    pending: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    nodeoverlays: Sequence[Mapping[str, Any]] = ()

    @property
    def documents(self) -> list[Mapping[str, Any]]:
        """Every object but the pending pods, for `model.loader.load_documents`."""
        return [
            *self.nodepools,
            *self.nodeclasses,
            *self.nodeclaims,
            *self.nodes,
            *self.daemonsets,
            *self.storage_classes,
            *self.nodeoverlays,
        ]


@dataclass(frozen=True, slots=True)
class PodEvent:
    """A Kubernetes event about a pod; `dedupe` names the event so a re-run does not record it twice."""

    pod: str  # namespace/name
    reason: str
    message: str
    type: str = "Normal"
    dedupe: str = ""


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """A Kubernetes event about a node (disruption started, blocked, drained, terminated), or about a NodeClaim when
    `kind` is "NodeClaim" (`node` then names the NodeClaim), as Karpenter records its disruption events on both."""

    node: str
    reason: str
    message: str
    type: str = "Normal"
    dedupe: str = ""
    kind: str = "Node"


# What an eviction request came back with: the pod is going, a PodDisruptionBudget said no (HTTP 429),
# or the pod is already gone (404).
EVICTED, BLOCKED, GONE = "evicted", "blocked", "gone"


@dataclass(frozen=True, slots=True)
class FleetView:
    """The objects disruption decisions read: nodewright.io/v1 NodePools and NodeClaims, and Nodes, as camelCase
    API objects; and the nodewright.io/v1 EC2NodeClasses (for their status)."""

    nodepools: Sequence[Mapping[str, Any]]
    nodeclaims: Sequence[Mapping[str, Any]]
    nodes: Sequence[Mapping[str, Any]]
    nodeclasses: Sequence[Mapping[str, Any]] = ()


class Cluster(Protocol):
    def read(self) -> ClusterView:
        """The whole cluster (see `ClusterView`), from the watch cache: for the planner, once a minute."""
        ...

    def read_for_provisioning(self) -> ProvisioningView:
        """NodePools, EC2NodeClasses, NodeClaims, Nodes, DaemonSets, StorageClasses and the pending pods, from
        the watch cache (see `ProvisioningView`)."""
        ...

    def nodeclaims(self) -> Sequence[Mapping[str, Any]]:
        """Every NodeClaim, read consistently (never from the watch cache): what a planner holding the planner lock
        counts in flight must include the NodeClaims the previous holder created moments ago."""
        ...

    def pending_pods(self, namespaces: Sequence[str] | None = None) -> Mapping[str, Mapping[str, Any]]:
        """The live pods without a node, by `ns/name`, read consistently (not from the watch cache): in
        `namespaces` (one list each), or in every namespace (None)."""
        ...

    def bound_pods(self, namespace: str | None, selector: LabelSelector | None) -> Sequence[Mapping[str, Any]]:
        """Live pods bound to a node, in `namespace` (None: every namespace) whose labels match `selector`
        (None: every pod), from the watch cache."""
        ...

    def volumes(
        self, claims: Sequence[tuple[str, str]]
    ) -> tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]:
        """The PersistentVolumeClaims among these (namespace, name) that exist, and the PersistentVolumes they
        are bound to."""
        ...

    def create_nodeclaim(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Create a NodeClaim; returns None when created, or the existing object when the name is taken."""
        ...

    def update_nodeclaim(
        self, name: str, labels: Mapping[str, str], annotations: Mapping[str, str], status: Mapping[str, Any]
    ) -> None:
        """Merge labels and annotations into the NodeClaim and replace the given status fields."""
        ...

    def set_nodeclaim_conditions(self, name: str, conditions: Sequence[Condition], clear: Sequence[str] = ()) -> None:
        """Merge `conditions` into the NodeClaim's status by type and remove the `clear` types; every other
        condition is kept (see `model.conditions.merge_conditions`). A missing NodeClaim is not an error."""
        ...

    def delete_nodeclaim(self, name: str) -> None:
        """Delete a NodeClaim nodewright has finished with (its instance is terminated, or was never launched):
        the termination finalizer is removed first, so it goes at once. Absent is fine."""
        ...

    def request_nodeclaim_deletion(self, name: str) -> None:
        """Delete the NodeClaim as `kubectl delete` does: its termination finalizer keeps it, marked with a
        deletionTimestamp, until nodewright has drained and terminated it. Absent or already deleting is fine."""
        ...

    def get_nodeclaim(self, name: str) -> Mapping[str, Any] | None:
        """One NodeClaim (None when it does not exist)."""
        ...

    def get_node(self, name: str) -> Mapping[str, Any] | None:
        """One Node (None when it does not exist)."""
        ...

    def set_status(self, kind: str, name: str, fields: Mapping[str, Any], conditions: Sequence[Condition] = ()) -> None:
        """Write a nodewright.io NodePool's or EC2NodeClass's status (`kind` "NodePool" or "EC2NodeClass"):
        replace the given `fields` and merge `conditions` by type, as `set_nodeclaim_conditions` does. A missing
        object is not an error."""
        ...

    def capacity_buffers(self) -> Sequence[Mapping[str, Any]]:
        """Every CapacityBuffer (autoscaling.x-k8s.io, v1beta1 or else v1alpha1; none when the CRD is not installed)
        and each PodTemplate, Deployment, ReplicaSet or StatefulSet one names that exists, each once."""
        ...

    def set_capacity_buffer_status(
        self, buffer: Mapping[str, Any], fields: Mapping[str, Any], conditions: Sequence[Condition] = ()
    ) -> None:
        """Write a CapacityBuffer's status (`buffer`: the object as read): replace the given `fields` and merge
        `conditions` by type. A missing object is not an error."""
        ...

    def record_events(self, events: Sequence[PodEvent]) -> None:
        """Record Kubernetes events on pods (in bulk: a batch can name a thousand pods)."""
        ...

    def remove_node_taint(self, node: str, taint_key: str, effect: str = "") -> None:
        """Remove every taint with this key (and this effect, when given) from the node; a missing node is fine."""
        ...

    def label_node(self, node: str, labels: Mapping[str, str | None]) -> None:
        """Merge labels into the node's (a None value removes that label); a missing node is not an error."""
        ...

    def read_fleet(self) -> FleetView:
        """NodePools, NodeClaims and Nodes only: cheaper than `read()` for who-owns-what questions."""
        ...

    def volume_attachments(self, node: str) -> Sequence[Mapping[str, Any]]:
        """The VolumeAttachments (storage.k8s.io/v1) whose spec.nodeName is `node`, read from the API server (the
        termination waits until those of its drained pods are gone)."""
        ...

    def pods_on_node(self, node: str) -> Sequence[Mapping[str, Any]]:
        """Pods bound to the node that have not finished (phase neither Succeeded nor Failed)."""
        ...

    def add_node_taint(self, node: str, key: str, value: str, effect: str) -> bool:
        """Add the taint unless one with this key and effect is there; True when it was added. A missing node
        is not an error (False)."""
        ...

    def set_unschedulable(self, node: str, unschedulable: bool) -> None:
        """Cordon (True) or uncordon (False) the node; a missing node is not an error. A cordon nodewright puts on
        a schedulable node carries the `tags.CORDONED` annotation, and only a cordon carrying it is lifted: a node
        someone else cordoned stays cordoned."""
        ...

    def evict_pod(self, namespace: str, name: str) -> str:
        """Ask for a policy/v1 Eviction; returns EVICTED, BLOCKED (429: a PodDisruptionBudget) or GONE."""
        ...

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        """Delete the pod outright (only as a deadline nears); absent is fine. `grace_seconds`: the deletion's grace
        period (None: the pod's own), so a pod deleted before a deadline is gone by it."""
        ...

    def delete_node(self, name: str) -> None:
        """Delete the Node object of a terminated instance, its termination finalizer removed first; absent is
        fine."""
        ...

    def add_node_finalizer(self, name: str) -> None:
        """Put the termination finalizer on a Node nodewright registered, so deleting it drains and terminates
        through nodewright; a missing or deleting node is not an error."""
        ...

    def record_node_events(self, events: Sequence[NodeEvent]) -> None:
        """Record Kubernetes events on nodes; a `dedupe` seen before is not recorded twice."""
        ...


@dataclass(frozen=True, slots=True)
class LaunchTemplateRecord:
    """A launch template nodewright created for this cluster: its name, creation time (epoch seconds) and
    the EC2NodeClass named in its tags."""

    name: str
    created_at: float
    node_class: str


class LaunchTemplateStore(Protocol):
    """The launch templates of this cluster (an adapter lists them by the cluster's ownership tag)."""

    def launch_templates(self) -> Sequence[LaunchTemplateRecord]: ...
    def delete_launch_template(self, name: str) -> None: ...


class StateStore(Protocol):
    def unavailable_offerings(self, now: float) -> frozenset[OfferingKey]:
        """Offerings marked unavailable whose mark has not expired at `now`."""
        ...

    def mark_unavailable(self, offerings: Mapping[OfferingKey, str], now: float, ttl_seconds: int) -> None:
        """Mark offerings unavailable until now + ttl, each with the error that caused it."""
        ...

    def acquire_lock(self, name: str, owner: str, now: float, ttl_seconds: int, interruption: bool = False) -> str:
        """Take the lock `name` for `owner` unless another owner holds it unexpired; returns the owner holding
        it afterwards (== owner when taken or already held by this owner: a renewal, which moves the expiry to
        now + ttl). One conditional write, so two callers racing for the same name cannot both win.
        `interruption` is recorded with the lease (see `disruption.lease`)."""
        ...

    def take_over_lock(
        self, name: str, owner: str, previous: str, now: float, ttl_seconds: int, interruption: bool = False
    ) -> bool:
        """Take the lock from `previous` (whose lease is void, or who must give way to an interruption): one
        conditional write that succeeds only while `previous` still holds it, or nobody does. True when taken."""
        ...

    def lease(self, name: str, now: float) -> Lease | None:
        """The lease on `name` at `now` (None when free or expired). A consistent read."""
        ...

    def release_lock(self, name: str, owner: str) -> None:
        """Release the lock if `owner` holds it; a lock held by someone else (or nobody) is left alone."""
        ...

    def leases(self, now: float) -> Mapping[str, Lease]:
        """Every lock held at `now` (expired ones left out), by name. One consistent read."""
        ...

    def recall_delivery(self, batch_id: str, now: float) -> Mapping[str, Any] | None:
        """What the delivery `batch_id` was answered with, while its record has not expired at `now`."""
        ...

    def remember_delivery(self, batch_id: str, answer: Mapping[str, Any], now: float, ttl_seconds: int) -> None:
        """Keep the answer to the delivery `batch_id` (JSON-safe) until now + ttl."""
        ...


class Workflows(Protocol):
    def start(self, name: str, document: Mapping[str, Any]) -> bool:
        """Start the disruption workflow as execution `name` with this input; False when an execution with
        that name exists already (a redelivered event), which is success for the caller."""
        ...

    def status(self, name: str) -> str:
        """The Step Functions status of execution `name` (RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, ...),
        "" when there is no such execution."""
        ...
