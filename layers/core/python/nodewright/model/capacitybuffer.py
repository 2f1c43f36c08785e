"""CapacityBuffer (`autoscaling.x-k8s.io`, the SIG Autoscaling API Cluster Autoscaler and Karpenter v1.14 read).

A buffer asks for room for N copies of a pod: the pod is a PodTemplate in the buffer's namespace (`podTemplateRef`)
or the pod template of a Deployment, ReplicaSet or StatefulSet there (`scalableRef`). N comes from `replicas`, from
`percentage` of the workload's replicas, and from `limits` (a resource budget), as Karpenter's capacitybuffer
controller computes it:

- `percentage` (scalableRef only, workload with replicas > 0): ceil(workload replicas x percentage / 100), at least 1;
- `replicas` and the percentage figure together: the larger of the two (Cluster Autoscaler's rule; Karpenter's
  design document says "minimum" but its controller and tests take the maximum, and nodewright follows the code);
- `limits`: per resource both the limits and the pod request, floor(limit / request), the smallest over those
  resources; a cap on the figure above, or the figure itself when neither `replicas` nor `percentage` is set.

The buffer becomes N virtual pods (`virtual_pods`): never written to the API server, named
`capacity-buffer-<buffer>-<i>`, annotated as Karpenter annotates them, with the lowest priority, without the
template's PersistentVolumeClaim and ephemeral volumes (a claim that will never exist cannot be placed) and without
`nodeName`. They are planned with the pending pods, so new nodes keep room for them, and disruption counts them as
pods that need room. Pure: documents in, decisions out.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.model import kube
from nodewright.model.errors import Collector
from nodewright.model.objects import Pod
from nodewright.model.resources import PODS
from nodewright.model.schema import check_fields, get_int, get_map, get_resources, get_str, join

GROUP = "autoscaling.x-k8s.io"
# Karpenter v1.14 ships the CRD as v1beta1; Cluster Autoscaler's first version is v1alpha1. Both are read.
API_VERSIONS = (f"{GROUP}/v1beta1", f"{GROUP}/v1alpha1")
KIND = "CapacityBuffer"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"
SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")

# Conditions and reasons, as Karpenter's controller and provisioner write them.
READY_FOR_PROVISIONING = "ReadyForProvisioning"
PROVISIONING = "Provisioning"
RESOLVED = "Resolved"
SCALABLE_REF_NOT_FOUND = "ScalableRefNotFound"
POD_TEMPLATE_NOT_FOUND = "PodTemplateNotFound"
RESOLUTION_FAILED = "ResolutionFailed"
FITS_EXISTING_CAPACITY = "FitsExistingCapacity"
REQUIRES_NEW_CAPACITY = "RequiresNewCapacity"
NOT_READY_FOR_PROVISIONING = "NotReadyForProvisioning"
BUFFER_EMPTY = "BufferEmpty"

# Karpenter's annotations on a virtual pod (so logs and tools tell them from real pods).
VIRTUAL_POD_ANNOTATION = "karpenter.sh/capacity-buffer-fake-pod"
BUFFER_NAME_ANNOTATION = "karpenter.sh/capacity-buffer-name"
BUFFER_NAMESPACE_ANNOTATION = "karpenter.sh/capacity-buffer-namespace"
VIRTUAL_POD_PRIORITY = -(2**31)  # Karpenter's VirtualPodPriority: the least valuable pod there is

_SPEC_FIELDS = ("provisioningStrategy", "podTemplateRef", "scalableRef", "replicas", "percentage", "limits")


@dataclass(frozen=True, slots=True)
class ScalableRef:
    """The workload whose pod template (and replica count) a buffer follows."""

    api_group: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class CapacityBuffer:
    """One CapacityBuffer as its spec says. `replicas`, `percentage`: None when unset; `limits`: canonical units."""

    namespace: str
    name: str
    uid: str = ""
    generation: int = 0
    strategy: str = ACTIVE_CAPACITY
    pod_template_ref: str = ""
    scalable_ref: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: Mapping[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_capacity_buffer(ctx: Collector, doc: Mapping[str, Any]) -> CapacityBuffer | None:
    """A CapacityBuffer document checked as its CRD checks it (exactly one of `podTemplateRef` and `scalableRef`, a
    `podTemplateRef` with `replicas` or `limits`, non-negative counts), plus what nodewright cannot act on (a kind
    other than Deployment, ReplicaSet or StatefulSet, a group other than `apps`, another provisioning strategy,
    `percentage` without `scalableRef`). Errors name the field and the fix; None when the spec is unusable."""
    api_version = get_str(ctx, doc.get("apiVersion"), "apiVersion", required=True)
    if api_version is not None and api_version not in API_VERSIONS:
        ctx.error("apiVersion", f'"{api_version}" is not served for {KIND}; use {" or ".join(API_VERSIONS)}')
    namespace, name = kube.namespaced_name(doc)
    if not name:
        ctx.error("metadata.name", "is required")
    metadata = get_map(ctx, doc.get("metadata"), "metadata") or {}
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    check_fields(ctx, spec, "spec", _SPEC_FIELDS)
    strategy = get_str(ctx, spec.get("provisioningStrategy"), "spec.provisioningStrategy") or ACTIVE_CAPACITY
    if strategy != ACTIVE_CAPACITY:
        ctx.error(
            "spec.provisioningStrategy",
            f'"{strategy}" is not supported (Karpenter v1.14 implements only {ACTIVE_CAPACITY}); remove the field '
            "or set it to that value",
        )
    template_ref = _pod_template_ref(ctx, spec.get("podTemplateRef"))
    scalable = _scalable_ref(ctx, spec.get("scalableRef"))
    replicas = get_int(ctx, spec.get("replicas"), "spec.replicas", minimum=0)
    percentage = get_int(ctx, spec.get("percentage"), "spec.percentage", minimum=0)
    limits = get_resources(ctx, spec.get("limits"), "spec.limits") if "limits" in spec else {}
    if "podTemplateRef" in spec and "scalableRef" in spec:
        ctx.error("spec", "set either podTemplateRef or scalableRef, not both (remove one of them)")
    elif "podTemplateRef" not in spec and "scalableRef" not in spec:
        ctx.error("spec", "set podTemplateRef (a PodTemplate) or scalableRef (a Deployment, ReplicaSet or StatefulSet)")
    if "podTemplateRef" in spec and "replicas" not in spec and "limits" not in spec:
        ctx.error("spec", "a podTemplateRef buffer needs replicas or limits to say how many pods; set spec.replicas")
    if "percentage" in spec and "scalableRef" not in spec:
        ctx.error("spec.percentage", "applies to a scalableRef only; use spec.replicas with a podTemplateRef")
    if not ctx.ok:
        return None
    return CapacityBuffer(
        namespace=namespace,
        name=name,
        uid=str(metadata.get("uid") or ""),
        generation=int(metadata.get("generation") or 0),
        strategy=strategy,
        pod_template_ref=template_ref,
        scalable_ref=scalable,
        replicas=replicas,
        percentage=percentage,
        limits=limits,
    )


def _pod_template_ref(ctx: Collector, raw: Any) -> str:
    ref = get_map(ctx, raw, "spec.podTemplateRef")
    if ref is None:
        return ""
    check_fields(ctx, ref, "spec.podTemplateRef", ("name",))
    return get_str(ctx, ref.get("name"), "spec.podTemplateRef.name", required=True) or ""


def _scalable_ref(ctx: Collector, raw: Any) -> ScalableRef | None:
    ref = get_map(ctx, raw, "spec.scalableRef")
    if ref is None:
        return None
    path = "spec.scalableRef"
    check_fields(ctx, ref, path, ("apiGroup", "kind", "name"))
    group = get_str(ctx, ref.get("apiGroup"), join(path, "apiGroup")) or "apps"
    kind = get_str(ctx, ref.get("kind"), join(path, "kind"), required=True) or ""
    name = get_str(ctx, ref.get("name"), join(path, "name"), required=True) or ""
    if group != "apps":
        ctx.error(join(path, "apiGroup"), f'"{group}" is not supported; use apps (or leave it out)')
    if kind and kind not in SCALABLE_KINDS:
        ctx.error(join(path, "kind"), f'"{kind}" is not supported; use one of {", ".join(SCALABLE_KINDS)}')
    return ScalableRef(group, kind, name)


# ------------------------------------------------------------------------------------------- replica arithmetic


def percentage_replicas(scalable_replicas: int, percentage: int) -> int:
    """ceil(scalable_replicas x percentage / 100), at least 1 when both are positive (Karpenter's rounding)."""
    count = math.ceil(scalable_replicas * percentage / 100)
    if count < 1 and percentage > 0 and scalable_replicas > 0:
        return 1
    return count


def limit_replicas(limits: Mapping[str, int], requests: Mapping[str, int]) -> int | None:
    """How many pods of `requests` fit in `limits`: floor(limit / request) for each resource both name with a
    positive request, the smallest of them; None when no resource is in both (the limits cap nothing). The pod's
    implicit `pods: 1` is not a request here, as in Karpenter (which counts the containers' requests)."""
    counts = [limit // requests[r] for r, limit in limits.items() if r != PODS and requests.get(r, 0) > 0]
    return max(min(counts), 0) if counts else None


def desired_replicas(
    replicas: int | None, percentage_count: int | None, limits: Mapping[str, int], requests: Mapping[str, int]
) -> int:
    """The buffer's pod count: the larger of `replicas` and the percentage figure, capped by what `limits` hold; the
    limits alone when neither is set; 0 when nothing is set (Karpenter's computeReplicas)."""
    candidates = [c for c in (percentage_count, replicas) if c is not None]
    desired = max(candidates, default=0)
    capped = limit_replicas(limits, requests) if limits else None
    if capped is None:
        return desired
    return min(desired, capped) if candidates else capped


# ------------------------------------------------------------------------------------------- resolution


@dataclass(frozen=True, slots=True)
class BufferResolution:
    """A buffer resolved against the cluster: whether it is ReadyForProvisioning (reason and message as Karpenter
    writes them), its pod count, the PodTemplate it used (podTemplateRef buffers) and its virtual pods."""

    buffer: CapacityBuffer
    ready: bool
    reason: str
    message: str
    replicas: int = 0
    pod_template_ref: str = ""
    pod_template_generation: int | None = None
    pods: tuple[Pod, ...] = ()
    template: Mapping[str, Any] = field(default_factory=dict, repr=False)  # `{metadata, spec}` the pods come from


def resolve(
    buffer: CapacityBuffer,
    pod_templates: Mapping[str, Mapping[str, Any]],
    scalables: Mapping[tuple[str, str], Mapping[str, Any]],
) -> BufferResolution:
    """Resolve `buffer` against the PodTemplates (`namespace/name` -> document) and workloads (`(kind,
    namespace/name)` -> document) there are. A missing reference is `PodTemplateNotFound` / `ScalableRefNotFound`
    with the API server's not-found wording; a template nodewright cannot read is `ResolutionFailed` naming the
    field. Invariant: a ready resolution has exactly `replicas` virtual pods."""
    if buffer.pod_template_ref:
        key = f"{buffer.namespace}/{buffer.pod_template_ref}"
        doc = pod_templates.get(key)
        if doc is None:
            message = f'podtemplates "{buffer.pod_template_ref}" not found'
            return BufferResolution(buffer, False, POD_TEMPLATE_NOT_FOUND, message)
        template = doc.get("template")
        metadata = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        generation = int((metadata or {}).get("generation") or 0)
        return _ready(buffer, template, None, buffer.pod_template_ref, generation)
    ref = buffer.scalable_ref
    if ref is None:
        return BufferResolution(buffer, False, RESOLUTION_FAILED, "Neither podTemplateRef nor scalableRef is set")
    doc = scalables.get((ref.kind, f"{buffer.namespace}/{ref.name}"))
    if doc is None:
        plural = f"{ref.kind.lower()}s.apps"
        return BufferResolution(buffer, False, SCALABLE_REF_NOT_FOUND, f'{plural} "{ref.name}" not found')
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    raw = (spec or {}).get("replicas")
    scalable_replicas = raw if isinstance(raw, int) and not isinstance(raw, bool) else 1
    count = None
    if buffer.percentage is not None and scalable_replicas > 0:
        count = percentage_replicas(scalable_replicas, buffer.percentage)
    return _ready(buffer, (spec or {}).get("template"), count, "", None)


def _ready(
    buffer: CapacityBuffer, template: Any, percentage_count: int | None, template_ref: str, generation: int | None
) -> BufferResolution:
    ctx = Collector("cluster", KIND, buffer.key)
    first = _virtual_pod(ctx, buffer, template, 1)
    if first is None or not ctx.ok:
        problems = "; ".join(f"{e.path}: {e.message}" for e in ctx.errors) or "the pod template cannot be read"
        return BufferResolution(buffer, False, RESOLUTION_FAILED, f"pod template: {problems}")
    count = desired_replicas(buffer.replicas, percentage_count, buffer.limits, first.requests)
    pods = tuple(replace(first, name=_pod_name(buffer, i), uid=f"{buffer.uid}-{i}") for i in range(1, count + 1))
    message = "Pod template resolved successfully"
    return BufferResolution(buffer, True, RESOLVED, message, count, template_ref, generation, pods, template)


def _pod_name(buffer: CapacityBuffer, index: int) -> str:
    return f"capacity-buffer-{buffer.name}-{index}"


def _virtual_pod(ctx: Collector, buffer: CapacityBuffer, template: Any, index: int) -> Pod | None:
    """One virtual pod from the template (`{metadata, spec}`), sanitized (see the module doc)."""
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        ctx.error("template.spec", "the referenced pod template has no spec; give it spec.containers")
        return None
    parsed = kube.parse_pod(ctx, virtual_pod_document(buffer, template, index))
    return None if parsed is None else replace(parsed.pod, priority=VIRTUAL_POD_PRIORITY)


def virtual_pod_document(buffer: CapacityBuffer, template: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The buffer's virtual pod number `index` (from 1) as a Pod document (never written anywhere): what the
    provisioner plans it from, exactly as the planner's simulation saw it."""
    meta = template.get("metadata") if isinstance(template.get("metadata"), Mapping) else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": _pod_name(buffer, index),
            "namespace": buffer.namespace,
            "labels": dict((meta or {}).get("labels") or {}),
            "annotations": {
                VIRTUAL_POD_ANNOTATION: "true",
                BUFFER_NAME_ANNOTATION: buffer.name,
                BUFFER_NAMESPACE_ANNOTATION: buffer.namespace,
            },
        },
        "spec": {**sanitized_spec(template["spec"]), "priority": VIRTUAL_POD_PRIORITY},
    }


def virtual_index(resolution: BufferResolution, key: str) -> int:
    """The index of the buffer's virtual pod `key` (`namespace/capacity-buffer-<buffer>-<i>`), 0 when `key` is not
    one of its current pods."""
    prefix = f"{resolution.buffer.namespace}/capacity-buffer-{resolution.buffer.name}-"
    if not key.startswith(prefix) or not key[len(prefix) :].isdigit():
        return 0
    index = int(key[len(prefix) :])
    return index if 1 <= index <= len(resolution.pods) else 0


def sanitized_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The pod spec without `nodeName`, PersistentVolumeClaim and ephemeral volumes and their mounts, and without a
    priority class (a virtual pod has Karpenter's lowest priority): what a pod that is never created can be planned
    with. The input is not changed."""
    out = copy.deepcopy(dict(spec))
    for key in ("nodeName", "priorityClassName", "priority"):
        out.pop(key, None)
    raw = out.get("volumes")
    volumes: list[Any] = raw if isinstance(raw, list) else []
    dropped = {
        v.get("name") for v in volumes if isinstance(v, Mapping) and ("persistentVolumeClaim" in v or "ephemeral" in v)
    }
    if isinstance(raw, list):
        out["volumes"] = [v for v in volumes if not (isinstance(v, Mapping) and v.get("name") in dropped)]
    if dropped:
        for group in ("containers", "initContainers"):
            for container in out.get(group) or []:
                if isinstance(container, dict) and isinstance(container.get("volumeMounts"), list):
                    mounts = container["volumeMounts"]
                    container["volumeMounts"] = [m for m in mounts if m.get("name") not in dropped]
    return out


def is_virtual(pod: Pod) -> bool:
    """True for a buffer's virtual pod (never a pod of the API server)."""
    return pod.annotations.get(VIRTUAL_POD_ANNOTATION) == "true"


def buffer_of(pod: Pod) -> str:
    """`namespace/name` of the buffer a virtual pod belongs to; "" for any other pod."""
    if not is_virtual(pod):
        return ""
    return f"{pod.annotations.get(BUFFER_NAMESPACE_ANNOTATION, '')}/{pod.annotations.get(BUFFER_NAME_ANNOTATION, '')}"


def virtual_pods(resolutions: Sequence[BufferResolution]) -> tuple[Pod, ...]:
    """Every ready buffer's virtual pods, in buffer order."""
    return tuple(p for r in resolutions if r.ready for p in r.pods)
