"""Equivalence classes: pods that the simulation can place as a count instead of one by one.

Two pending pods belong to one class when everything the scheduler looks at is equal: namespace, the
labels that some selector in the input refers to, effective requests, node selector and affinity,
tolerations, topology spread and pod (anti-)affinity terms, host ports and the zones their volumes
allow. Pods from one Deployment therefore form one class, however many replicas it has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from nodewright.model.objects import (
    EBS_CSI_DRIVER,
    EBS_IN_TREE_PLUGIN,
    HOSTNAME_LABEL,
    LabelSelector,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    TopologySpreadConstraint,
)
from nodewright.model.requirements import NORMALIZED_LABELS, Requirements
from nodewright.model.taints import Taint, Toleration, untolerated

# The per-node EBS attachment limit is handled as one more resource: each instance type offers as many as it can
# attach, and a node uses one per distinct EBS claim its pods mount (pods sharing a claim attach it once).
EBS_VOLUMES = "attachable-volumes-aws-ebs"


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """Which nodes a spread constraint counts (nodeAffinityPolicy / nodeTaintsPolicy, Honor).

    `requirements`: the pod's required node requirements (ORed); a node counts when it could satisfy one
    of them. `tolerations`: the pod's; a node counts when they tolerate its taints. None: not filtered.
    """

    requirements: tuple[Requirements, ...] | None = field(default=None, compare=False)
    tolerations: tuple[Toleration, ...] | None = None
    # The requirements as sorted tuples (Requirements holds a dict): what equality and hashing compare.
    requirements_key: tuple[object, ...] | None = None

    def __post_init__(self) -> None:
        if self.requirements is not None:
            key = tuple(tuple(sorted(r.by_key.items())) for r in self.requirements)
            object.__setattr__(self, "requirements_key", key)

    def admits(self, labels: Mapping[str, str] | None, requirements: Requirements, taints: tuple[Taint, ...]) -> bool:
        """Whether a node counts: `labels` for an existing node, else the requirements of a NodeClaim."""
        if self.tolerations is not None and untolerated(self.tolerations, taints) is not None:
            return False
        if self.requirements is None:
            return True
        if labels is not None:
            return any(option.matches_labels(labels) for option in self.requirements)
        return any(option.conflict(requirements) is None for option in self.requirements)


NO_FILTER = NodeFilter()


@dataclass(frozen=True, slots=True)
class TopologyTerm:
    """A spread constraint or a pod (anti-)affinity term, in the form the simulation counts.

    `namespaces` None means every namespace. `group` identifies what is counted (selector, namespaces,
    topology key); several terms of different pods share a group when they count the same pods.
    """

    kind: str  # "spread" | "affinity" | "anti"
    topology_key: str
    selector: LabelSelector
    namespaces: frozenset[str] | None
    max_skew: int = 1
    min_domains: int | None = None
    required: bool = True
    weight: int = 0
    node_filter: NodeFilter = NO_FILTER

    @property
    def group(self) -> tuple[object, ...]:
        # Anti-affinity counts a pod in every domain its node may still end up in, spread and affinity only
        # in a decided one (as Karpenter does), so they never share a counter; a filter counts fewer nodes.
        return (self.kind == "anti", self.topology_key, self.selector, self.namespaces, self.node_filter)

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return self.selector.matches(labels)

    def describe(self) -> str:
        selector = ",".join(f"{k}={v}" for k, v in self.selector.match_labels) or "selector"
        if self.kind == "spread":
            return f"topology spread on {self.topology_key} (maxSkew {self.max_skew}, {selector})"
        kind = "pod affinity" if self.kind == "affinity" else "pod anti-affinity"
        return f"{kind} on {self.topology_key} ({selector})"


@dataclass(slots=True)
class PodClass:
    """Pods placed together as a count; `pods` keep input order (sorted by namespace/name)."""

    key: tuple[object, ...]
    pods: list[Pod]
    namespace: str
    labels: Mapping[str, str]
    requests: Mapping[str, int]
    # Alternatives from ORed required node selector terms, each crossed with the combinations of the volumes'
    # ORed terms; each already includes nodeSelector and volumes.
    requirement_options: tuple[Requirements, ...]
    # The same alternatives without the volumes' requirements: what topology spread counts domains over (a
    # volume decides where the pod goes, not which domains its spread knows; Karpenter's StrictRequirements).
    topology_options: tuple[Requirements, ...]
    preferred_node_terms: tuple[tuple[int, Requirements], ...]
    tolerations: tuple[Toleration, ...]
    terms: tuple[TopologyTerm, ...]  # required spread (DoNotSchedule), affinity, anti-affinity
    preferred_terms: tuple[TopologyTerm, ...]  # ScheduleAnyway spread, preferred (anti-)affinity
    host_ports: frozenset[tuple[str, int]]
    volume_error: str = ""
    # The EBS claims each pod mounts (namespace/name): charged once per node however many of its pods share them.
    ebs_claims: frozenset[str] = frozenset()
    # How many of `requirement_options` each of the pod's own ORed terms has: one per combination of its
    # volumes' ORed terms (1 without volume topology). The last term's group is what preferences relax with.
    volume_alternatives: int = 1
    member_of: list[int] = field(default_factory=list)  # topology group indexes whose selectors match
    request_key: tuple[tuple[str, int], ...] = ()  # the requests as a sorted tuple, a dictionary key

    def __post_init__(self) -> None:
        self.request_key = tuple(sorted(self.requests.items()))

    @property
    def size(self) -> tuple[int, int]:
        return (self.requests.get("cpu", 0), self.requests.get("memory", 0))


def _term_requirements(term: NodeSelectorTerm) -> Requirements:
    return Requirements.of(term.requirements)


class VolumeIndex:
    """Looks up what a pod's PersistentVolumeClaims imply for its placement."""

    def __init__(
        self,
        pvcs: Iterable[PersistentVolumeClaim],
        pvs: Iterable[PersistentVolume],
        storage_classes: Iterable[StorageClass],
    ) -> None:
        self.pvcs = {(c.namespace, c.name): c for c in pvcs}
        self.pvs = {v.name: v for v in pvs}
        self.storage_classes = {s.name: s for s in storage_classes}

    def constraints(self, pod: Pod) -> tuple[list[tuple[Requirements, ...]], frozenset[str], str]:
        """For each claim of the pod: its ORed topology alternatives; the EBS claims it attaches (namespace/name);
        an error (then no alternatives). A claim or volume being deleted, or a Lost claim, keeps a pending pod
        from starting, but a running pod's volume is still attached: its EBS claim is still counted."""
        alternatives: list[tuple[Requirements, ...]] = []
        ebs: set[str] = set()
        error = ""
        for claim_name in pod.pvc_names:
            claim = self.pvcs.get((pod.namespace, claim_name))
            if claim is None:
                return [], frozenset(ebs), f"PersistentVolumeClaim {pod.namespace}/{claim_name} not found"
            if claim.unusable:
                error = error or f"PersistentVolumeClaim {pod.namespace}/{claim_name} {claim.unusable}"
            if claim.volume_name:
                volume = self.pvs.get(claim.volume_name)
                if volume is None:
                    missing = f"PersistentVolume {claim.volume_name} (bound to {claim_name}) not found"
                    return [], frozenset(ebs), missing
                if volume.deleting:
                    error = error or f"PersistentVolume {claim.volume_name} (bound to {claim_name}) is being deleted"
                if volume.node_terms:
                    terms = tuple(_term_requirements(t) for t in volume.node_terms)
                    if volume.local:
                        # The pod moves to a new node, so the volume's hostname no longer binds it (Karpenter's
                        # rule for local and hostPath volumes).
                        terms = tuple(t.without((HOSTNAME_LABEL,)) for t in terms)
                    alternatives.append(terms)
                if volume.csi_driver == EBS_CSI_DRIVER:
                    ebs.add(f"{pod.namespace}/{claim_name}")
                continue
            if not claim.storage_class_name:
                # Kubernetes gives a new claim the default StorageClass; one still without a class is never
                # provisioned, so the pod cannot start anywhere (Karpenter's rule).
                unbound = f"PersistentVolumeClaim {claim_name} is not bound and names no storageClassName"
                return [], frozenset(ebs), unbound
            storage_class = self.storage_classes.get(claim.storage_class_name)
            if storage_class is None:
                missing = f"StorageClass {claim.storage_class_name} (of claim {claim_name}) not found"
                return [], frozenset(ebs), missing
            if storage_class.provisioner in (EBS_CSI_DRIVER, EBS_IN_TREE_PLUGIN):
                ebs.add(f"{pod.namespace}/{claim_name}")
            if storage_class.volume_binding_mode == "WaitForFirstConsumer" and storage_class.allowed_topologies:
                alternatives.append(tuple(_term_requirements(t) for t in storage_class.allowed_topologies))
        return ([] if error else alternatives), frozenset(ebs), error


def volume_options(per_claim: Sequence[tuple[Requirements, ...]]) -> tuple[Requirements, ...]:
    """The combinations of each claim's ORed topology terms, one term per claim, in order (Karpenter's
    GetRequirements): a combination that cannot be met (two claims pinning different zones) is dropped,
    unless every one is disjoint, when all are kept and the pod's reason names the conflict."""
    combined: tuple[Requirements, ...] = (Requirements({}),)
    for alternatives in per_claim:
        pairs = [(c, a) for c in combined for a in alternatives]
        compatible = tuple(c.intersect(a) for c, a in pairs if c.conflict(a) is None)
        combined = compatible or tuple(c.intersect(a) for c, a in pairs)
    return combined


def selector_keys(pods: Iterable[Pod]) -> frozenset[str]:
    """Every label key that a spread or (anti-)affinity selector of these pods refers to."""
    keys: set[str] = set()
    for pod in pods:
        if not (
            pod.topology_spread
            or pod.pod_affinity
            or pod.pod_anti_affinity
            or pod.preferred_pod_affinity
            or pod.preferred_pod_anti_affinity
        ):
            continue  # most pods have no selector at all: skip building the lists
        selectors: list[LabelSelector] = [c.label_selector for c in pod.topology_spread]
        selectors += [t.label_selector for t in (*pod.pod_affinity, *pod.pod_anti_affinity)]
        selectors += [w.term.label_selector for w in (*pod.preferred_pod_affinity, *pod.preferred_pod_anti_affinity)]
        for selector in selectors:
            keys.update(k for k, _ in selector.match_labels)
            keys.update(r.key for r in selector.match_expressions)
    return frozenset(keys)


def _namespaces(pod: Pod, namespaces: tuple[str, ...], all_namespaces: bool) -> frozenset[str] | None:
    if all_namespaces:
        return None
    return frozenset(namespaces) if namespaces else frozenset((pod.namespace,))


def pod_terms(pod: Pod) -> tuple[tuple[TopologyTerm, ...], tuple[TopologyTerm, ...]]:
    """The pod's required and preferred topology terms."""
    required: list[TopologyTerm] = []
    preferred: list[TopologyTerm] = []
    own_ns = frozenset((pod.namespace,))
    for spread in pod.topology_spread:
        term = TopologyTerm(
            "spread",
            _topology_key(spread.topology_key),
            spread.label_selector,
            own_ns,
            spread.max_skew,
            spread.min_domains,
            spread.when_unsatisfiable == "DoNotSchedule",
            node_filter=_node_filter(pod, spread),
        )
        (required if term.required else preferred).append(term)
    for kind, terms in (("affinity", pod.pod_affinity), ("anti", pod.pod_anti_affinity)):
        for t in terms:
            ns = _namespaces(pod, t.namespaces, t.all_namespaces)
            required.append(TopologyTerm(kind, _topology_key(t.topology_key), t.label_selector, ns))
    for kind, weighted in (("affinity", pod.preferred_pod_affinity), ("anti", pod.preferred_pod_anti_affinity)):
        for w in sorted(weighted, key=lambda w: -w.weight):
            ns = _namespaces(pod, w.term.namespaces, w.term.all_namespaces)
            preferred.append(
                TopologyTerm(
                    kind, _topology_key(w.term.topology_key), w.term.label_selector, ns, required=False, weight=w.weight
                )
            )
    return tuple(required), tuple(preferred)


def _topology_key(key: str) -> str:
    """A topology key written with a deprecated beta name counts as its GA name: the kubelet labels every node
    with both, with the same value, and requirements already read the beta names as GA."""
    return NORMALIZED_LABELS.get(key, key)


def required_node_options(pod: Pod) -> tuple[Requirements, ...]:
    """The pod's nodeSelector with each ORed required node selector term: one node must satisfy one."""
    base = Requirements.from_labels(pod.node_selector)
    if not pod.required_node_terms:
        return (base,)
    return tuple(base.intersect(_term_requirements(t)) for t in pod.required_node_terms)


def _node_filter(pod: Pod, spread: TopologySpreadConstraint) -> NodeFilter:
    constrained = bool(pod.node_selector or pod.required_node_terms)
    requirements = required_node_options(pod) if spread.node_affinity_policy == "Honor" and constrained else None
    tolerations = pod.tolerations if spread.node_taints_policy == "Honor" else None
    if requirements is None and tolerations is None:
        return NO_FILTER  # the one unfiltered instance: counting code tests for it by identity
    return NodeFilter(requirements, tolerations)


def _signature(pod: Pod, relevant_labels: frozenset[str]) -> tuple[object, ...]:
    # Runs once per pod: the sorts are skipped for the (usually) empty collections.
    return (
        pod.namespace,
        tuple(sorted((k, v) for k, v in pod.labels.items() if k in relevant_labels)) if pod.labels else (),
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())) if pod.node_selector else (),
        pod.required_node_terms,
        pod.preferred_node_terms,
        tuple(sorted(pod.tolerations, key=repr)) if pod.tolerations else (),
        pod.topology_spread,
        pod.pod_affinity,
        pod.pod_anti_affinity,
        pod.preferred_pod_affinity,
        pod.preferred_pod_anti_affinity,
        tuple(sorted((p.protocol, p.port) for p in pod.host_ports)) if pod.host_ports else (),
        pod.pvc_names if pod.pvc_names else (),
    )


# The parts of a signature that `pod_terms` reads (namespace, node constraints, tolerations and terms):
# classes that differ only in labels or requests
# (most of them) share their topology terms, which are immutable.
_TERM_PARTS = (0, 3, 4, 6, 7, 8, 9, 10, 11)


def build_classes(pods: Sequence[Pod], volumes: VolumeIndex, relevant_labels: frozenset[str]) -> list[PodClass]:
    """Group pods into classes, in a deterministic order: larger requests first, then by key.

    Pods with PersistentVolumeClaims are keyed by their claims, so only pods sharing claims merge.
    """
    grouped: dict[tuple[object, ...], list[Pod]] = {}
    for pod in sorted(pods, key=attrgetter("namespace", "name")):
        grouped.setdefault(_signature(pod, relevant_labels), []).append(pod)
    terms: dict[tuple[object, ...], tuple[tuple[TopologyTerm, ...], tuple[TopologyTerm, ...]]] = {}
    classes = []
    for key, members in grouped.items():
        term_key = tuple(key[i] for i in _TERM_PARTS)
        pod_terms_ = terms.get(term_key)
        if pod_terms_ is None:
            pod_terms_ = terms[term_key] = pod_terms(members[0])
        classes.append(_make_class(key, members, volumes, pod_terms_))
    classes.sort(key=lambda c: (-c.size[0], -c.size[1], repr(c.key)))
    return classes


def _make_class(
    key: tuple[object, ...],
    pods: list[Pod],
    volumes: VolumeIndex,
    terms: tuple[tuple[TopologyTerm, ...], tuple[TopologyTerm, ...]],
) -> PodClass:
    pod = pods[0]
    volume_alternatives, ebs, volume_error = volumes.constraints(pod)
    own = required_node_options(pod)
    if volume_alternatives:
        # Each of the pod's ORed terms with each combination of its volumes' ORed terms, in order: the pod may
        # go wherever one combination allows (Karpenter's volume requirement alternatives).
        combined = volume_options(volume_alternatives)
        options = tuple(o.intersect(v) for o in own for v in combined)
        topology_options = tuple(o for o in own for _ in combined)
    else:
        options = topology_options = own
    requests = dict(pod.requests)
    required, preferred = terms
    preferred_node = tuple(
        (p.weight, _term_requirements(p.term)) for p in sorted(pod.preferred_node_terms, key=lambda p: -p.weight)
    )
    return PodClass(
        key=key,
        pods=pods,
        namespace=pod.namespace,
        labels=dict(pod.labels),
        requests=requests,
        requirement_options=options,
        topology_options=topology_options,
        volume_alternatives=len(options) // len(own),
        preferred_node_terms=preferred_node,
        tolerations=pod.tolerations,
        terms=required,
        preferred_terms=preferred,
        host_ports=frozenset((p.protocol, p.port) for p in pod.host_ports),
        volume_error=volume_error,
        ebs_claims=ebs,
    )
