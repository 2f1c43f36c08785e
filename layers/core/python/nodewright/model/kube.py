"""Build the scheduler's view of Kubernetes objects (objects.py) from manifests or API objects.

Only what scheduling reads is kept. Structures that change where a pod may run (resources, affinity,
tolerations, topology spread) are checked strictly, so a misspelt field cannot silently drop a constraint;
the many other fields of a pod spec are passed over, since they do not change placement.

Effective requests follow Kubernetes (`resourcehelper.PodRequests`): per resource, the larger of
  - the sum of app containers plus the sum of restartable (sidecar) init containers, and
  - for every init container in order: a regular one's request plus the sidecars started before it, or for
    a sidecar, the sum of the sidecars up to and including it,
plus pod overhead, plus `pods: 1`. A container that sets a limit but no request for a resource requests
its limit, as the API server's defaulting does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nodewright.model.errors import Collector
from nodewright.model.fields import (
    parse_label_selector,
    parse_labels,
    parse_node_selector_term,
    parse_string_list,
    parse_taints,
    parse_toleration,
)
from nodewright.model.objects import (
    DaemonSet,
    HostPort,
    LabelSelector,
    Node,
    NodeSelectorTerm,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    PodDisruptionBudget,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.resources import PODS, Resources, add, elementwise_max
from nodewright.model.schema import (
    check_fields,
    get_bool,
    get_enum,
    get_int,
    get_list,
    get_map,
    get_resources,
    get_str,
    get_str_map,
    join,
    label_key_problem,
)
from nodewright.model.taints import Toleration

# kind -> the apiVersions Kubernetes serves it under.
API_VERSIONS: dict[str, tuple[str, ...]] = {
    "Pod": ("v1",),
    "Node": ("v1",),
    "PersistentVolumeClaim": ("v1",),
    "PersistentVolume": ("v1",),
    "Deployment": ("apps/v1",),
    "ReplicaSet": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
    "DaemonSet": ("apps/v1",),
    "Job": ("batch/v1",),
    "CronJob": ("batch/v1",),
    "PodDisruptionBudget": ("policy/v1",),
    "StorageClass": ("storage.k8s.io/v1",),
    "PriorityClass": ("scheduling.k8s.io/v1",),
    "PodTemplate": ("v1",),
}
NAMESPACED = frozenset(
    {"Pod", "PersistentVolumeClaim", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
    | {"PodDisruptionBudget", "PodTemplate", "CapacityBuffer"}
)
HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class ContainerRequests:
    """One container's requests (after limit defaulting) and whether it is a restartable sidecar."""

    requests: Resources
    sidecar: bool = False


def effective_requests(
    containers: Sequence[Resources], init_containers: Sequence[ContainerRequests], overhead: Resources
) -> dict[str, int]:
    """A pod's effective request per resource, as the Kubernetes scheduler computes it (see module doc).

    Always includes `pods: 1`.
    """
    total: dict[str, int] = {}
    for requests in containers:
        total = add(total, requests)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for init in init_containers:
        if init.sidecar:
            # A sidecar keeps running next to the app containers, so it adds to their sum as well.
            total = add(total, init.requests)
            sidecars = add(sidecars, init.requests)
            running = sidecars
        else:
            running = add(init.requests, sidecars)
        init_peak = elementwise_max(init_peak, running)
    out = add(elementwise_max(total, init_peak), overhead)
    out[PODS] = out.get(PODS, 0) + 1
    return {name: value for name, value in out.items() if value or name == PODS}


def namespaced_name(doc: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) from metadata; namespace defaults to "default", missing names are ""."""
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        return "default", ""
    namespace = metadata.get("namespace")
    name = metadata.get("name")
    return (
        namespace if isinstance(namespace, str) and namespace else "default",
        name if isinstance(name, str) else "",
    )


def check_kube_header(ctx: Collector, doc: Mapping[str, Any], kind: str) -> None:
    """apiVersion must be the one Kubernetes serves `kind` under, and metadata.name must be set."""
    versions = API_VERSIONS[kind]
    api_version = get_str(ctx, doc.get("apiVersion"), "apiVersion", required=True)
    if api_version is not None and api_version not in versions:
        ctx.error("apiVersion", f'"{api_version}" is not served for {kind}; use {" or ".join(versions)}')
    metadata = get_map(ctx, doc.get("metadata"), "metadata", required=True)
    if metadata is not None:
        get_str(ctx, metadata.get("name"), "metadata.name", required=True)


# -------------------------------------------------------------------------------------------- pods


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """A parsed pod spec before it is given a name: what every pod of a workload shares."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, Any]
    path: str  # field path of the pod spec, e.g. spec.template.spec


def _container_requests(ctx: Collector, container: Any, path: str) -> dict[str, int]:
    item = get_map(ctx, container, path, required=True)
    if item is None:
        return {}
    resources = get_map(ctx, item.get("resources"), join(path, "resources"))
    if resources is None:
        return {}
    check_fields(ctx, resources, join(path, "resources"), ("requests", "limits", "claims"))
    if resources.get("claims"):
        ctx.error(join(path, "resources.claims"), "dynamic resource claims are not supported yet by nodewright")
    requests = get_resources(ctx, resources.get("requests"), join(path, "resources.requests"))
    limits = get_resources(ctx, resources.get("limits"), join(path, "resources.limits"))
    for name, limit in limits.items():
        # API-server defaulting: a limit without a request makes the request equal the limit.
        requests.setdefault(name, limit)
        if requests[name] > limit:
            ctx.error(join(path, f'resources.requests["{name}"]'), "must not be greater than its limit")
    return requests


def _host_ports(ctx: Collector, container: Any, path: str, host_network: bool) -> list[HostPort]:
    if not isinstance(container, dict):
        return []
    out = []
    for i, raw in enumerate(get_list(ctx, container.get("ports"), join(path, "ports")) or []):
        where = join(join(path, "ports"), i)
        port = get_map(ctx, raw, where, required=True)
        if port is None:
            continue
        container_port = get_int(ctx, port.get("containerPort"), join(where, "containerPort"), 1, 65535)
        host_port = get_int(ctx, port.get("hostPort"), join(where, "hostPort"), 0, 65535) or 0
        if host_network and not host_port:
            # With hostNetwork every container port is a port on the node.
            host_port = container_port or 0
        if not host_port:
            continue
        protocol = get_enum(ctx, port.get("protocol"), join(where, "protocol"), ("TCP", "UDP", "SCTP")) or "TCP"
        host_ip = get_str(ctx, port.get("hostIP"), join(where, "hostIP")) or "0.0.0.0"
        out.append(HostPort(port=host_port, protocol=protocol, host_ip=host_ip))
    return out


def _affinity_term(
    ctx: Collector, raw: Any, path: str, labels: Mapping[str, str], selector_required: bool
) -> PodAffinityTerm | None:
    term = get_map(ctx, raw, path, required=True)
    if term is None:
        return None
    check_fields(
        ctx,
        term,
        path,
        ("labelSelector", "topologyKey", "namespaces", "namespaceSelector", "matchLabelKeys", "mismatchLabelKeys"),
    )
    topology_key = get_str(ctx, term.get("topologyKey"), join(path, "topologyKey"), required=True)
    selector = parse_label_selector(ctx, term.get("labelSelector"), join(path, "labelSelector"))
    namespaces = parse_string_list(ctx, term.get("namespaces"), join(path, "namespaces"))
    all_namespaces = False
    ns_selector = get_map(ctx, term.get("namespaceSelector"), join(path, "namespaceSelector"))
    if ns_selector is not None:
        if ns_selector:
            ctx.error(
                join(path, "namespaceSelector"),
                "selecting namespaces by label is not supported yet; list them in namespaces or use {} for all",
            )
        else:
            all_namespaces = True
    extra = []
    for field, operator in (("matchLabelKeys", Operator.IN), ("mismatchLabelKeys", Operator.NOT_IN)):
        for key in parse_string_list(ctx, term.get(field), join(path, field)):
            if key in labels:
                # The pod's own value for the key joins the selector, as the scheduler merges it.
                extra.append(Requirement(key, operator, (labels[key],)))
    if selector is None:
        # Only a required affinity term without a selector is an error: it could never be met. An
        # anti-affinity or preferred term without one matches no pod and so constrains nothing.
        if selector_required:
            ctx.error(
                join(path, "labelSelector"),
                "is required: without it the term matches no pod, so the pod could never be scheduled",
            )
        return None
    if topology_key is None:
        return None
    if extra:
        selector = LabelSelector(selector.match_labels, selector.match_expressions + tuple(extra))
    return PodAffinityTerm(selector, topology_key, namespaces, all_namespaces)


def _pod_affinities(
    ctx: Collector, raw: Any, path: str, labels: Mapping[str, str], anti: bool
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    affinity = get_map(ctx, raw, path)
    if affinity is None:
        return (), ()
    required_field = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred_field = "preferredDuringSchedulingIgnoredDuringExecution"
    check_fields(ctx, affinity, path, (required_field, preferred_field))
    required = []
    for i, raw_term in enumerate(get_list(ctx, affinity.get(required_field), join(path, required_field)) or []):
        term = _affinity_term(ctx, raw_term, join(join(path, required_field), i), labels, selector_required=not anti)
        if term is not None:
            required.append(term)
    preferred = []
    for i, raw_pref in enumerate(get_list(ctx, affinity.get(preferred_field), join(path, preferred_field)) or []):
        where = join(join(path, preferred_field), i)
        pref = get_map(ctx, raw_pref, where, required=True)
        if pref is None:
            continue
        check_fields(ctx, pref, where, ("weight", "podAffinityTerm"))
        weight = get_int(ctx, pref.get("weight"), join(where, "weight"), 1, 100, required=True)
        term = _affinity_term(
            ctx, pref.get("podAffinityTerm"), join(where, "podAffinityTerm"), labels, selector_required=False
        )
        if weight is not None and term is not None:
            preferred.append(WeightedPodAffinityTerm(weight, term))
    return tuple(required), tuple(preferred)


def _node_affinity(
    ctx: Collector, raw: Any, path: str
) -> tuple[tuple[NodeSelectorTerm, ...], tuple[PreferredSchedulingTerm, ...]]:
    affinity = get_map(ctx, raw, path)
    if affinity is None:
        return (), ()
    required_field = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred_field = "preferredDuringSchedulingIgnoredDuringExecution"
    check_fields(ctx, affinity, path, (required_field, preferred_field))
    required: list[NodeSelectorTerm] = []
    selector = get_map(ctx, affinity.get(required_field), join(path, required_field))
    if selector is not None:
        where = join(path, required_field)
        check_fields(ctx, selector, where, ("nodeSelectorTerms",))
        terms = get_list(ctx, selector.get("nodeSelectorTerms"), join(where, "nodeSelectorTerms"), required=True)
        if terms is not None and not terms:
            ctx.error(join(where, "nodeSelectorTerms"), "must have at least one term")
        for i, raw_term in enumerate(terms or []):
            term = parse_node_selector_term(ctx, raw_term, join(join(where, "nodeSelectorTerms"), i))
            if term is not None:
                required.append(term)
    preferred: list[PreferredSchedulingTerm] = []
    for i, raw_pref in enumerate(get_list(ctx, affinity.get(preferred_field), join(path, preferred_field)) or []):
        where = join(join(path, preferred_field), i)
        pref = get_map(ctx, raw_pref, where, required=True)
        if pref is None:
            continue
        check_fields(ctx, pref, where, ("weight", "preference"))
        weight = get_int(ctx, pref.get("weight"), join(where, "weight"), 1, 100, required=True)
        term = parse_node_selector_term(ctx, pref.get("preference"), join(where, "preference"))
        if weight is not None and term is not None:
            preferred.append(PreferredSchedulingTerm(weight, term))
    return tuple(required), tuple(preferred)


def _spread(ctx: Collector, raw: Any, path: str, labels: Mapping[str, str]) -> tuple[TopologySpreadConstraint, ...]:
    out = []
    for i, raw_item in enumerate(get_list(ctx, raw, path) or []):
        where = join(path, i)
        item = get_map(ctx, raw_item, where, required=True)
        if item is None:
            continue
        check_fields(
            ctx,
            item,
            where,
            (
                "maxSkew",
                "topologyKey",
                "whenUnsatisfiable",
                "labelSelector",
                "minDomains",
                "nodeAffinityPolicy",
                "nodeTaintsPolicy",
                "matchLabelKeys",
            ),
        )
        max_skew = get_int(ctx, item.get("maxSkew"), join(where, "maxSkew"), minimum=1, required=True)
        key = get_str(ctx, item.get("topologyKey"), join(where, "topologyKey"), required=True)
        when = get_enum(
            ctx,
            item.get("whenUnsatisfiable"),
            join(where, "whenUnsatisfiable"),
            ("DoNotSchedule", "ScheduleAnyway"),
            required=True,
        )
        selector = parse_label_selector(ctx, item.get("labelSelector"), join(where, "labelSelector"))
        min_domains = get_int(ctx, item.get("minDomains"), join(where, "minDomains"), minimum=1)
        if min_domains is not None and when != "DoNotSchedule":
            ctx.error(join(where, "minDomains"), "is only allowed with whenUnsatisfiable: DoNotSchedule")
        policies = ("Honor", "Ignore")
        affinity_policy = get_enum(ctx, item.get("nodeAffinityPolicy"), join(where, "nodeAffinityPolicy"), policies)
        taints_policy = get_enum(ctx, item.get("nodeTaintsPolicy"), join(where, "nodeTaintsPolicy"), policies)
        extra = []
        for key_name in parse_string_list(ctx, item.get("matchLabelKeys"), join(where, "matchLabelKeys")):
            if selector is not None and any(k == key_name for k, _ in selector.match_labels):
                ctx.error(join(where, "matchLabelKeys"), f'"{key_name}" is already in labelSelector; list it once')
            elif key_name in labels:
                extra.append(Requirement(key_name, Operator.IN, (labels[key_name],)))
        if max_skew is None or key is None or when is None:
            continue
        if selector is None:
            # Without a selector the constraint counts no pods, so every domain's skew is 0: nothing to enforce.
            continue
        if extra:
            selector = LabelSelector(selector.match_labels, selector.match_expressions + tuple(extra))
        out.append(
            TopologySpreadConstraint(
                max_skew=max_skew,
                topology_key=key,
                when_unsatisfiable=when,
                label_selector=selector,
                min_domains=min_domains,
                node_affinity_policy=affinity_policy or "Honor",
                node_taints_policy=taints_policy or "Ignore",
            )
        )
    return tuple(out)


def _volumes(ctx: Collector, raw: Any, path: str) -> tuple[list[str], list[tuple[str, str | None]]]:
    """Claim names the pod's volumes reference, and (volume name, storage class, None when omitted) of its
    ephemeral volumes."""
    claims: list[str] = []
    ephemeral: list[tuple[str, str | None]] = []
    for i, raw_volume in enumerate(get_list(ctx, raw, path) or []):
        where = join(path, i)
        volume = get_map(ctx, raw_volume, where, required=True)
        if volume is None:
            continue
        name = get_str(ctx, volume.get("name"), join(where, "name"), required=True) or ""
        pvc = get_map(ctx, volume.get("persistentVolumeClaim"), join(where, "persistentVolumeClaim"))
        if pvc is not None:
            claim = get_str(ctx, pvc.get("claimName"), join(where, "persistentVolumeClaim.claimName"), required=True)
            if claim:
                claims.append(claim)
        eph = get_map(ctx, volume.get("ephemeral"), join(where, "ephemeral"))
        if eph is not None and name:
            template = eph.get("volumeClaimTemplate")
            spec = template.get("spec") if isinstance(template, dict) else None
            storage_class = spec.get("storageClassName") if isinstance(spec, dict) else None
            ephemeral.append((name, storage_class if isinstance(storage_class, str) else None))
    return claims, ephemeral


@dataclass(frozen=True, slots=True)
class ParsedPod:
    """A pod plus what its volumes need: the claims its ephemeral volumes create (named `<pod>-<volume>`)."""

    pod: Pod
    static_claims: tuple[str, ...] = ()
    ephemeral_volumes: tuple[tuple[str, str | None], ...] = ()  # (volume name, storage class; None: omitted)

    @property
    def ephemeral_claims(self) -> tuple[PersistentVolumeClaim, ...]:
        return tuple(
            PersistentVolumeClaim(
                self.pod.namespace,
                f"{self.pod.name}-{volume}",
                storage_class or "",
                default_class=storage_class is None,
            )
            for volume, storage_class in self.ephemeral_volumes
        )

    def renamed(self, name: str, extra_claims: Sequence[str] = ()) -> ParsedPod:
        """The same pod under another name (another replica), with its claim names following the name."""
        claims = self.static_claims + tuple(f"{name}-{v}" for v, _ in self.ephemeral_volumes) + tuple(extra_claims)
        pod = replace(self.pod, name=name, uid=f"{self.pod.namespace}/{name}", pvc_names=claims)
        return ParsedPod(pod, self.static_claims, self.ephemeral_volumes)


def pod_from_template(
    ctx: Collector,
    template: PodTemplate,
    namespace: str,
    name: str,
    owner_kind: str = "",
    owner_name: str = "",
    extra_claims: Sequence[str] = (),
) -> ParsedPod | None:
    """Build one pod named `name` from a pod template; errors are reported under `template.path`."""
    spec = template.spec
    path = template.path
    host_network = bool(spec.get("hostNetwork") is True)
    unsupported = {"resources": "pod-level resources are not supported yet by nodewright; set container resources"}
    for field, message in unsupported.items():
        if field in spec:
            ctx.error(join(path, field), message)
    if spec.get("resourceClaims"):
        # Claims listed at pod level are allocated even when no container names them (Karpenter's
        # HasDRARequirements counts them), so they are refused like container claims.
        ctx.error(join(path, "resourceClaims"), "dynamic resource claims are not supported yet by nodewright")
    containers = get_list(ctx, spec.get("containers"), join(path, "containers"), required=True) or []
    if not containers and "containers" in spec:
        ctx.error(join(path, "containers"), "must have at least one container")
    app_requests = []
    ports: list[HostPort] = []
    for i, container in enumerate(containers):
        where = join(join(path, "containers"), i)
        app_requests.append(_container_requests(ctx, container, where))
        ports.extend(_host_ports(ctx, container, where, host_network))
    init_requests = []
    for i, container in enumerate(get_list(ctx, spec.get("initContainers"), join(path, "initContainers")) or []):
        where = join(join(path, "initContainers"), i)
        requests = _container_requests(ctx, container, where)
        policy = container.get("restartPolicy") if isinstance(container, dict) else None
        if policy not in (None, "Always"):
            ctx.error(
                join(where, "restartPolicy"), f'"{policy}" is not valid for an init container; use Always or omit'
            )
        sidecar = policy == "Always"
        init_requests.append(ContainerRequests(requests, sidecar))
        if sidecar:
            ports.extend(_host_ports(ctx, container, where, host_network))
    overhead = get_resources(ctx, spec.get("overhead"), join(path, "overhead"))
    node_selector = get_str_map(ctx, spec.get("nodeSelector"), join(path, "nodeSelector"))
    affinity = get_map(ctx, spec.get("affinity"), join(path, "affinity")) or {}
    check_fields(ctx, affinity, join(path, "affinity"), ("nodeAffinity", "podAffinity", "podAntiAffinity"))
    required_terms, preferred_terms = _node_affinity(
        ctx, affinity.get("nodeAffinity"), join(path, "affinity.nodeAffinity")
    )
    labels = template.labels
    pod_affinity, preferred_affinity = _pod_affinities(
        ctx, affinity.get("podAffinity"), join(path, "affinity.podAffinity"), labels, anti=False
    )
    pod_anti, preferred_anti = _pod_affinities(
        ctx, affinity.get("podAntiAffinity"), join(path, "affinity.podAntiAffinity"), labels, anti=True
    )
    tolerations: list[Toleration] = []
    for i, raw in enumerate(get_list(ctx, spec.get("tolerations"), join(path, "tolerations")) or []):
        toleration = parse_toleration(ctx, raw, join(join(path, "tolerations"), i))
        if toleration is not None:
            tolerations.append(toleration)
    spread = _spread(ctx, spec.get("topologySpreadConstraints"), join(path, "topologySpreadConstraints"), labels)
    claims, ephemeral = _volumes(ctx, spec.get("volumes"), join(path, "volumes"))
    priority = get_int(ctx, spec.get("priority"), join(path, "priority")) or 0
    priority_class = get_str(ctx, spec.get("priorityClassName"), join(path, "priorityClassName")) or ""
    node_name = get_str(ctx, spec.get("nodeName"), join(path, "nodeName")) or ""
    pod = Pod(
        namespace=namespace,
        name=name,
        uid=f"{namespace}/{name}",
        labels=dict(labels),
        annotations=dict(template.annotations),
        requests=effective_requests(app_requests, init_requests, overhead),
        node_selector=node_selector,
        required_node_terms=required_terms,
        preferred_node_terms=preferred_terms,
        tolerations=tuple(tolerations),
        topology_spread=spread,
        pod_affinity=pod_affinity,
        pod_anti_affinity=pod_anti,
        preferred_pod_affinity=preferred_affinity,
        preferred_pod_anti_affinity=preferred_anti,
        host_ports=tuple(ports),
        pvc_names=tuple(claims) + tuple(f"{name}-{v}" for v, _ in ephemeral) + tuple(extra_claims),
        owner_kind=owner_kind,
        owner_name=owner_name,
        node_name=node_name,
        priority=priority,
        priority_class_name=priority_class,
    )
    return ParsedPod(pod, tuple(claims), tuple(ephemeral))


def _template_metadata(ctx: Collector, raw: Any, path: str) -> tuple[dict[str, str], dict[str, str]]:
    metadata = get_map(ctx, raw, path) or {}
    labels = parse_labels(ctx, metadata.get("labels"), join(path, "labels"))
    annotations = get_str_map(ctx, metadata.get("annotations"), join(path, "annotations"))
    return labels, annotations


def parse_pod_template_object(ctx: Collector, doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """A v1 PodTemplate (what a CapacityBuffer's podTemplateRef names), checked as a pod template: returned as it
    is (the buffer builds its pods from it, `model.capacitybuffer`), or None when it cannot be used."""
    check_kube_header(ctx, doc, "PodTemplate")
    template = get_map(ctx, doc.get("template"), "template", required=True)
    if template is None:
        return None
    labels, annotations = _template_metadata(ctx, template.get("metadata"), "template.metadata")
    spec = get_map(ctx, template.get("spec"), "template.spec", required=True)
    if spec is None:
        return None
    namespace, name = namespaced_name(doc)
    pod_from_template(ctx, PodTemplate(labels, annotations, spec, "template.spec"), namespace, name)
    return dict(doc) if ctx.ok else None


def parse_pod(ctx: Collector, doc: Mapping[str, Any]) -> ParsedPod | None:
    """A bare Pod manifest (or API object). Its controller owner reference, if any, sets owner kind/name."""
    check_kube_header(ctx, doc, "Pod")
    namespace, name = namespaced_name(doc)
    labels, annotations = _template_metadata(ctx, doc.get("metadata"), "metadata")
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    owner_kind, owner_name = "", ""
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    for ref in (metadata or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            owner_kind, owner_name = str(ref.get("kind", "")), str(ref.get("name", ""))
    return pod_from_template(
        ctx, PodTemplate(labels, annotations, spec, "spec"), namespace, name, owner_kind, owner_name
    )


# --------------------------------------------------------------------------------------- workloads


@dataclass(frozen=True, slots=True)
class Workload:
    """What a workload manifest expands to: its pods and the claims they create."""

    pods: tuple[Pod, ...]
    claims: tuple[PersistentVolumeClaim, ...]
    replicas: int


def _pod_template(ctx: Collector, spec: Mapping[str, Any], path: str) -> PodTemplate | None:
    template = get_map(ctx, spec.get("template"), join(path, "template"), required=True)
    if template is None:
        return None
    labels, annotations = _template_metadata(ctx, template.get("metadata"), join(path, "template.metadata"))
    pod_spec = get_map(ctx, template.get("spec"), join(path, "template.spec"), required=True)
    if pod_spec is None:
        return None
    return PodTemplate(labels, annotations, pod_spec, join(path, "template.spec"))


def _check_selector(ctx: Collector, spec: Mapping[str, Any], template: PodTemplate, path: str) -> None:
    selector = parse_label_selector(ctx, spec.get("selector"), join(path, "selector"))
    if selector is None:
        ctx.error(join(path, "selector"), "is required (usually matchLabels equal to the template's labels)")
    elif selector.is_empty() or not selector.matches(template.labels):
        ctx.error(
            join(path, "selector"),
            "does not match spec.template.metadata.labels; the controller would not own its pods",
        )


def parse_workload(ctx: Collector, doc: Mapping[str, Any], kind: str) -> Workload | None:
    """Expand a Deployment, ReplicaSet, StatefulSet, Job or CronJob into pods named `<name>-<i>`.

    Deployment pods are owned by a ReplicaSet (as in a live cluster); Jobs run `parallelism` pods (default
    1, at most `completions`); a CronJob is validated but expands to no pods, since none run until it fires.
    StatefulSet volumeClaimTemplates become claims `<template>-<name>-<i>`.
    """
    check_kube_header(ctx, doc, kind)
    namespace, name = namespaced_name(doc)
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    path = "spec"
    if kind == "CronJob":
        get_str(ctx, spec.get("schedule"), "spec.schedule", required=True)
        job_template = get_map(ctx, spec.get("jobTemplate"), "spec.jobTemplate", required=True) or {}
        job_spec = get_map(ctx, job_template.get("spec"), "spec.jobTemplate.spec", required=True) or {}
        template = _pod_template(ctx, job_spec, "spec.jobTemplate.spec")
        if template is not None:
            pod_from_template(ctx, template, namespace, f"{name}-0", "Job", name)
        return Workload((), (), 0)
    template = _pod_template(ctx, spec, path)
    if kind == "Job":
        parallelism = get_int(ctx, spec.get("parallelism"), "spec.parallelism", minimum=0)
        completions = get_int(ctx, spec.get("completions"), "spec.completions", minimum=0)
        count = 1 if parallelism is None else parallelism
        if completions is not None:
            # A Job never runs more pods at once than it still needs completions.
            count = min(count, completions)
        owner_kind = "Job"
    else:
        replicas = get_int(ctx, spec.get("replicas"), "spec.replicas", minimum=0)
        count = 1 if replicas is None else replicas
        owner_kind = "ReplicaSet" if kind in ("Deployment", "ReplicaSet") else kind
    if template is None:
        return None
    if kind != "Job" or "selector" in spec:
        _check_selector(ctx, spec, template, path)
    claim_templates: list[tuple[str, str | None]] = []
    if kind == "StatefulSet":
        for i, raw in enumerate(get_list(ctx, spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates") or []):
            where = join("spec.volumeClaimTemplates", i)
            item = get_map(ctx, raw, where, required=True) or {}
            meta = get_map(ctx, item.get("metadata"), join(where, "metadata"), required=True) or {}
            claim = get_str(ctx, meta.get("name"), join(where, "metadata.name"), required=True)
            claim_spec = get_map(ctx, item.get("spec"), join(where, "spec")) or {}
            storage_class = get_str(ctx, claim_spec.get("storageClassName"), join(where, "spec.storageClassName"))
            if claim:
                claim_templates.append((claim, storage_class))
    pods: list[Pod] = []
    claims: list[PersistentVolumeClaim] = []
    # Every replica has the same template: parse it once (errors reported once), then name the copies.
    first = pod_from_template(ctx, template, namespace, f"{name}-0", owner_kind, name)
    if first is None:
        return None
    for i in range(count):
        own_claims = [f"{claim}-{name}-{i}" for claim, _ in claim_templates]
        parsed = first.renamed(f"{name}-{i}", own_claims)
        pods.append(parsed.pod)
        claims.extend(parsed.ephemeral_claims)
        claims.extend(
            PersistentVolumeClaim(
                namespace, f"{claim}-{name}-{i}", storage_class or "", default_class=storage_class is None
            )
            for claim, storage_class in claim_templates
        )
    return Workload(tuple(pods), tuple(claims), count)


def parse_daemonset(ctx: Collector, doc: Mapping[str, Any]) -> DaemonSet | None:
    """A DaemonSet as its template pod (owner kind DaemonSet), which the scheduler adds to each fitting node."""
    check_kube_header(ctx, doc, "DaemonSet")
    namespace, name = namespaced_name(doc)
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    template = _pod_template(ctx, spec, "spec")
    if template is None:
        return None
    _check_selector(ctx, spec, template, "spec")
    parsed = pod_from_template(ctx, template, namespace, name, "DaemonSet", name)
    if parsed is None:
        return None
    return DaemonSet(namespace=namespace, name=name, pod=parsed.pod)


# ------------------------------------------------------------------------------------- cluster state


def parse_node(ctx: Collector, doc: Mapping[str, Any]) -> Node | None:
    """An existing Node: labels, taints, allocatable (capacity when allocatable is absent), Ready."""
    check_kube_header(ctx, doc, "Node")
    _, name = namespaced_name(doc)
    metadata = get_map(ctx, doc.get("metadata"), "metadata") or {}
    labels = get_str_map(ctx, metadata.get("labels"), "metadata.labels")
    for key in labels:
        if problem := label_key_problem(key):
            ctx.error(f'metadata.labels["{key}"]', problem)
    annotations = get_str_map(ctx, metadata.get("annotations"), "metadata.annotations")
    spec = get_map(ctx, doc.get("spec"), "spec") or {}
    status = get_map(ctx, doc.get("status"), "status") or {}
    taints = parse_taints(ctx, spec.get("taints"), "spec.taints")
    provider_id = get_str(ctx, spec.get("providerID"), "spec.providerID") or ""
    unschedulable = get_bool(ctx, spec.get("unschedulable"), "spec.unschedulable") or False
    field = "allocatable" if "allocatable" in status else "capacity"
    allocatable = get_resources(ctx, status.get(field), f"status.{field}")
    if not allocatable:
        ctx.error("status.allocatable", "is required: the simulation needs the node's allocatable cpu, memory and pods")
    ready = True
    for i, raw in enumerate(get_list(ctx, status.get("conditions"), "status.conditions") or []):
        if isinstance(raw, dict) and raw.get("type") == "Ready":
            value = get_enum(ctx, raw.get("status"), f"status.conditions[{i}].status", ("True", "False", "Unknown"))
            ready = value == "True"
    labels.setdefault(HOSTNAME, name)
    return Node(
        name=name,
        labels=labels,
        annotations=annotations,
        taints=taints,
        allocatable=allocatable,
        provider_id=provider_id,
        unschedulable=unschedulable,
        ready=ready,
    )


def _int_or_percent(ctx: Collector, value: Any, path: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return value
    ctx.error(path, f"{value!r} must be a non-negative integer or a percentage such as 50%")
    return None


def parse_pdb(ctx: Collector, doc: Mapping[str, Any]) -> PodDisruptionBudget | None:
    """A policy/v1 PodDisruptionBudget: selector plus minAvailable or maxUnavailable (not both)."""
    check_kube_header(ctx, doc, "PodDisruptionBudget")
    namespace, name = namespaced_name(doc)
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    check_fields(ctx, spec, "spec", ("selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy"))
    # No selector selects no pod (policy/v1); `{}` parses to an empty selector, which selects the whole namespace.
    selector = parse_label_selector(ctx, spec.get("selector"), "spec.selector")
    min_available = _int_or_percent(ctx, spec.get("minAvailable"), "spec.minAvailable")
    max_unavailable = _int_or_percent(ctx, spec.get("maxUnavailable"), "spec.maxUnavailable")
    if "minAvailable" in spec and "maxUnavailable" in spec:
        ctx.error("spec.maxUnavailable", "set minAvailable or maxUnavailable, not both")
    policies = ("IfHealthyBudget", "AlwaysAllow")
    policy = get_enum(ctx, spec.get("unhealthyPodEvictionPolicy"), "spec.unhealthyPodEvictionPolicy", policies)
    status = doc.get("status")
    allowed = status.get("disruptionsAllowed") if isinstance(status, Mapping) else None
    return PodDisruptionBudget(
        namespace,
        name,
        selector,
        min_available,
        max_unavailable,
        disruptions_allowed=allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else None,
        unhealthy_pod_eviction_policy=policy or "",
    )


def parse_priority_class(ctx: Collector, doc: Mapping[str, Any]) -> tuple[str, int, bool] | None:
    """(name, value, globalDefault) of a PriorityClass, used to resolve pods' priorityClassName."""
    check_kube_header(ctx, doc, "PriorityClass")
    _, name = namespaced_name(doc)
    value = get_int(ctx, doc.get("value"), "value", required=True)
    default = get_bool(ctx, doc.get("globalDefault"), "globalDefault") or False
    if value is None:
        return None
    return name, value, default
