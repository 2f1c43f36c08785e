"""A pod spec as the scheduler reads it (`pod_from_template`): requests, host ports, node and pod affinity,
tolerations, topology spread and volumes, from a bare Pod, a workload's template or a CapacityBuffer's.

Structures that change where a pod may run (resources, affinity, tolerations, topology spread) are checked
strictly, so a misspelt field cannot silently drop a constraint; the many other fields of a pod spec are passed
over, since they do not change placement.

Effective requests follow Kubernetes (`resourcehelper.PodRequests`): per resource, the larger of
  - the sum of app containers plus the sum of restartable (sidecar) init containers, and
  - for every init container in order: a regular one's request plus the sidecars started before it, or for
    a sidecar, the sum of the sidecars up to and including it,
plus pod overhead, plus `pods: 1`. A container that sets a limit but no request for a resource requests
its limit, as the API server's defaulting does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.model.errors import Collector
from nodewright.model.fields import (
    parse_label_selector,
    parse_node_selector_term,
    parse_string_list,
    parse_toleration,
)
from nodewright.model.objects import (
    HostPort,
    LabelSelector,
    NodeSelectorTerm,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.resources import PODS, Resources, add, elementwise_max
from nodewright.model.schema import (
    check_fields,
    get_enum,
    get_int,
    get_list,
    get_map,
    get_resources,
    get_str,
    get_str_map,
    join,
)
from nodewright.model.taints import Toleration


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

    def renamed(self, name: str, extra_claims: Sequence[str] = (), node_name: str | None = None) -> ParsedPod:
        """The same pod under another name (another replica), with its claim names following the name; on the
        node `node_name` when it is given."""
        claims = self.static_claims + tuple(f"{name}-{v}" for v, _ in self.ephemeral_volumes) + tuple(extra_claims)
        p = self.pod
        # Every field named (`dataclasses.replace` reads the class's field list and builds a dict of them on each
        # call: two fifths of a copy's cost, on every replica of a 10,000-pod load). A test fails when a field of
        # Pod is not carried over here.
        pod = Pod(
            namespace=p.namespace,
            name=name,
            uid=f"{p.namespace}/{name}",
            labels=p.labels,
            annotations=p.annotations,
            requests=p.requests,
            node_selector=p.node_selector,
            required_node_terms=p.required_node_terms,
            preferred_node_terms=p.preferred_node_terms,
            tolerations=p.tolerations,
            topology_spread=p.topology_spread,
            pod_affinity=p.pod_affinity,
            pod_anti_affinity=p.pod_anti_affinity,
            preferred_pod_affinity=p.preferred_pod_affinity,
            preferred_pod_anti_affinity=p.preferred_pod_anti_affinity,
            host_ports=p.host_ports,
            pvc_names=claims,
            owner_kind=p.owner_kind,
            owner_name=p.owner_name,
            node_name=p.node_name if node_name is None else node_name,
            priority=p.priority,
            priority_class_name=p.priority_class_name,
            resource_version=p.resource_version,
        )
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
