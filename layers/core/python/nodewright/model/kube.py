"""Build the scheduler's view of Kubernetes objects (objects.py) from manifests or API objects: Pods, workloads
(Deployments, StatefulSets, Jobs, ...), DaemonSets, Nodes, PodDisruptionBudgets and PriorityClasses.

Only what scheduling reads is kept. A pod spec, wherever it appears, is read by `pod_spec.pod_from_template`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.model.errors import Collector
from nodewright.model.fields import (
    parse_label_selector,
    parse_labels,
    parse_taints,
)
from nodewright.model.objects import (
    DaemonSet,
    Node,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
)
from nodewright.model.pod_spec import ParsedPod, PodTemplate, pod_from_template
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
