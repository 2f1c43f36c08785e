"""The Kubernetes objects the simulation reads, reduced to what scheduling needs.

These are plain, frozen values built by `nodewright.model.kube` from manifests or API objects. Resource
figures are canonical integers (see `quantity`); label selectors and node affinity use `Requirements`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model.do_not_disrupt import DO_NOT_DISRUPT as DO_NOT_DISRUPT  # re-exported for older callers
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.taints import Taint, Toleration

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector: matchLabels AND matchExpressions (In, NotIn, Exists, DoesNotExist)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def requirements(self) -> Requirements:
        return Requirements.from_labels(dict(self.match_labels)).intersect(Requirements.of(self.match_expressions))

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(r.to_value_set().matches(labels.get(r.key)) for r in self.match_expressions)

    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """One topologySpreadConstraints entry of a pod (zone or hostname)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    label_selector: LabelSelector
    min_domains: int | None = None
    # Honor (default) counts only nodes that match the pod's node affinity; Ignore counts all.
    node_affinity_policy: str = "Honor"
    # Ignore (default) counts tainted nodes too; Honor skips nodes whose taints the pod does not tolerate.
    node_taints_policy: str = "Ignore"


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One pod (anti-)affinity term: pods matching the selector, counted per topology domain."""

    label_selector: LabelSelector
    topology_key: str
    # Namespaces the selector applies to; empty means the pod's own namespace.
    namespaces: tuple[str, ...] = ()
    # An explicitly empty namespaceSelector ({}) selects all namespaces.
    all_namespaces: bool = False


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred pod (anti-)affinity term and its weight (1-100)."""

    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One term of required node affinity; the terms of one pod are ORed."""

    requirements: tuple[Requirement, ...]


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """A preferred node affinity term and its weight (1-100)."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port bound on the node (hostPort), which two pods on one node cannot share."""

    port: int
    protocol: str = "TCP"
    host_ip: str = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod as the scheduler sees it.

    `requests` is the effective request (Kubernetes rules for init and sidecar containers, plus pod
    overhead), always including `pods: 1`. `node_name` is set for pods already bound to a node.
    """

    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, int] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_node_terms: tuple[NodeSelectorTerm, ...] = ()
    preferred_node_terms: tuple[PreferredSchedulingTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    pvc_names: tuple[str, ...] = ()
    owner_kind: str = ""
    owner_name: str = ""
    node_name: str = ""
    priority: int = 0
    priority_class_name: str = ""
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_daemonset_pod(self) -> bool:
        return self.owner_kind == "DaemonSet"


@dataclass(frozen=True, slots=True)
class Node:
    """An existing node: its labels, taints and allocatable; `pods` are the pods bound to it."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, int] = field(default_factory=dict)
    provider_id: str = ""
    unschedulable: bool = False
    ready: bool = True
    pods: tuple[Pod, ...] = ()
    nodeclaim_name: str = ""


@dataclass(frozen=True, slots=True)
class DaemonSet:
    """A DaemonSet, kept as its pod template: the overhead it adds to every node it would run on."""

    namespace: str
    name: str
    pod: Pod  # the pod template, as a pod (requests, node selector/affinity, tolerations)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """A PodDisruptionBudget: minAvailable or maxUnavailable of the pods its selector matches.

    `selector` is None when the budget has none: policy/v1 (and Karpenter's LabelSelectorAsSelector) read a missing
    selector as selecting no pod, while an empty one (`{}`) selects every pod of the namespace."""

    namespace: str
    name: str
    selector: LabelSelector | None
    min_available: str | None = None  # an integer or a percentage, as written
    max_unavailable: str | None = None
    # status.disruptionsAllowed as the disruption controller last wrote it; None when the object has no status
    # (a hand-written file), in which case it is computed from the pods the inputs hold.
    disruptions_allowed: int | None = None
    unhealthy_pod_eviction_policy: str = ""  # IfHealthyBudget (default) | AlwaysAllow

    def selects(self, pod: Pod) -> bool:
        """True when the budget governs `pod`: same namespace, and a selector that matches its labels."""
        return self.selector is not None and pod.namespace == self.namespace and self.selector.matches(pod.labels)

    @property
    def always_allows_unhealthy(self) -> bool:
        """`unhealthyPodEvictionPolicy: AlwaysAllow`: a pod that is not Ready may be evicted whatever the budget."""
        return self.unhealthy_pod_eviction_policy == "AlwaysAllow"


# The EBS CSI driver, and the in-tree plugin whose volumes and StorageClasses it serves since CSI migration
# (Kubernetes 1.23, the only way on EKS): both attach EBS volumes, counted against the node's EBS limit.
EBS_CSI_DRIVER = "ebs.csi.aws.com"
EBS_IN_TREE_PLUGIN = "kubernetes.io/aws-ebs"


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """A PersistentVolumeClaim: its StorageClass and, once bound, its volume."""

    namespace: str
    name: str
    storage_class_name: str = ""
    volume_name: str = ""  # set when bound
    # Why no pod using it can start, as the kube-scheduler refuses it: "being deleted" (a deletionTimestamp) or
    # "lost" (status.phase Lost: its volume is gone); "" when usable.
    unusable: str = ""
    # storageClassName omitted (not ""): the cluster's default StorageClass applies, as Kubernetes assigns it. An
    # explicit "" asks for no class (a volume bound by hand), so no default is filled in.
    default_class: bool = False


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    """A PersistentVolume: its node affinity (zonal volumes pin a zone) and CSI driver."""

    name: str
    # Required node affinity of the volume (zonal EBS volumes pin topology.kubernetes.io/zone).
    node_terms: tuple[NodeSelectorTerm, ...] = ()
    csi_driver: str = ""
    # A local or hostPath volume: its data lives on one node, named by its hostname affinity.
    local: bool = False
    # Being deleted (a deletionTimestamp): no pod can start with it.
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class StorageClass:
    """A StorageClass: its binding mode and allowed topologies (where unbound claims may be provisioned)."""

    name: str
    provisioner: str = ""
    volume_binding_mode: str = "Immediate"  # or WaitForFirstConsumer
    # allowedTopologies as node selector terms (ORed).
    allowed_topologies: tuple[NodeSelectorTerm, ...] = ()
    # metadata.creationTimestamp (RFC 3339, UTC): of several default classes the newest is a new claim's.
    created: str = ""
