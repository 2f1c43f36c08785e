"""Which pods the forwarder sends, and the compact form it sends them in. Pure: no I/O, no clock.

Input everywhere is a pod as the API serves it in JSON (camelCase keys, as `ApiClient().
sanitize_for_serialization(pod)` or a raw watch event gives it).

Pending (DESIGN.md, Karpenter's "provisionable"): the pod's `PodScheduled` condition is `False` with reason
`Unschedulable`, it has no `spec.nodeName` and no `status.nominatedNodeName`, it is not owned by a DaemonSet
(the DaemonSet controller places those on every node; new nodes bring their own), it is not a static or mirror
pod (annotation `kubernetes.io/config.mirror`, or owned by a Node), and its `schedulerName` is
`default-scheduler` (a pod handed to another scheduler is that scheduler's business; the provisioner only
simulates the default one). Two further exclusions, also Karpenter's: a pod being deleted
(`deletionTimestamp` set) and a pod in a terminal phase (`Succeeded`/`Failed`) will never need a node.

The projection keeps exactly what `nodewright.model.kube.parse_pod` reads to place a pod, so
`load_documents([project_pod(p)])` yields the same `Pod` as `load_documents([p])` except that annotations
are reduced to `karpenter.sh/do-not-disrupt` (the only one the core reads). Everything else of a pod spec
(images, env, probes, volume sources other than claims, ...) is dropped; that is most of a pod's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_SCHEDULER = "default-scheduler"

# Pod spec fields the scheduler (and so the simulation) reads, copied as they are.
_SPEC_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "overhead",
    "priority",
    "priorityClassName",
    "schedulerName",
    "nodeName",
    # Pod-level resources change the effective request. The loader refuses them with a named error ("not
    # supported yet"); keeping the field means the provisioner reports that instead of silently sizing
    # the pod from its containers alone.
    "resources",
)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def pod_scheduled_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's `PodScheduled` condition, or None when it has none (yet)."""
    for condition in _list(_map(pod.get("status")).get("conditions")):
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            return condition
    return None


def controller_kind(pod: Mapping[str, Any]) -> str:
    """Kind of the pod's controlling owner reference ("" when it has none)."""
    for ref in _list(_map(pod.get("metadata")).get("ownerReferences")):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            kind = ref.get("kind")
            return kind if isinstance(kind, str) else ""
    return ""


def not_pending_reason(pod: Mapping[str, Any]) -> str:
    """Why the pod is not pending in Karpenter's sense, or "" when it is (see the module doc).

    The reason is short and stable (it labels log lines and tests), e.g. "bound", "daemonset".
    """
    metadata = _map(pod.get("metadata"))
    spec = _map(pod.get("spec"))
    status = _map(pod.get("status"))
    if metadata.get("deletionTimestamp"):
        return "terminating"
    if status.get("phase") in ("Succeeded", "Failed"):
        return "terminal"
    if spec.get("nodeName"):
        return "bound"
    if status.get("nominatedNodeName"):
        return "nominated"
    if MIRROR_ANNOTATION in _map(metadata.get("annotations")):
        return "mirror"
    for ref in _list(metadata.get("ownerReferences")):
        # Static pods' mirrors are owned by their Node; DaemonSet pods by their DaemonSet (controller or not).
        if isinstance(ref, Mapping) and ref.get("kind") in ("DaemonSet", "Node"):
            return "daemonset" if ref.get("kind") == "DaemonSet" else "mirror"
    scheduler = spec.get("schedulerName") or DEFAULT_SCHEDULER
    if scheduler != DEFAULT_SCHEDULER:
        return "other-scheduler"
    condition = pod_scheduled_condition(pod)
    if condition is None:
        return "not-yet-scheduled"
    if condition.get("status") != "False" or condition.get("reason") != "Unschedulable":
        return "schedulable"
    return ""


def is_pending(pod: Mapping[str, Any]) -> bool:
    """True when the pod waits for capacity: the scheduler found no node for it (see the module doc)."""
    return not_pending_reason(pod) == ""


def _ports(ports: Any, host_network: bool) -> list[dict[str, Any]]:
    """Only ports that occupy a port on the node matter for placement (hostPort, protocol, hostIP).

    With hostNetwork every container port is a node port; the API server defaults hostPort to containerPort
    then, and the projection does the same for objects that skipped defaulting (e.g. hand-written ones).
    """
    out: list[dict[str, Any]] = []
    for port in _list(ports):
        if not isinstance(port, Mapping):
            continue
        host_port = port.get("hostPort") or (port.get("containerPort") if host_network else None)
        if not host_port:
            continue
        kept: dict[str, Any] = {"hostPort": host_port}
        for key in ("protocol", "hostIP"):
            if key in port:
                kept[key] = port[key]
        out.append(kept)
    return out


def _container(container: Any, host_network: bool) -> dict[str, Any]:
    source = _map(container)
    out: dict[str, Any] = {}
    for key in ("name", "resources", "restartPolicy"):
        if key in source:
            out[key] = source[key]
    ports = _ports(source.get("ports"), host_network)
    if ports:
        out["ports"] = ports
    return out


def _volume(volume: Any) -> dict[str, Any] | None:
    """Claims (static and ephemeral) decide zones and attach limits; other volume sources do not."""
    source = _map(volume)
    if "persistentVolumeClaim" in source:
        claim = _map(source["persistentVolumeClaim"])
        return {"name": source.get("name"), "persistentVolumeClaim": {"claimName": claim.get("claimName")}}
    if "ephemeral" in source:
        return {"name": source.get("name"), "ephemeral": source["ephemeral"]}
    return None


def _metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("name", "namespace", "uid", "resourceVersion", "labels"):
        if key in metadata:
            out[key] = metadata[key]
    annotations = _map(metadata.get("annotations"))
    if DO_NOT_DISRUPT in annotations:
        out["annotations"] = {DO_NOT_DISRUPT: annotations[DO_NOT_DISRUPT]}
    owners = [
        {key: ref[key] for key in ("kind", "name", "controller") if key in ref}
        for ref in _list(metadata.get("ownerReferences"))
        if isinstance(ref, Mapping)
    ]
    if owners:
        out["ownerReferences"] = owners
    return out


def project_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The compact pod the forwarder sends: a valid `v1` Pod manifest holding only what scheduling reads.

    Input: a pod in API JSON form. Output: a new dict (the input is not modified) with `apiVersion`,
    `kind`, pruned `metadata`, `spec` and `status` (see the module doc). Nested values that are kept whole
    (affinity, tolerations, resources, ...) are shared with the input, not copied; serialize or deep-copy
    the result before mutating it.
    """
    spec = _map(pod.get("spec"))
    host_network = spec.get("hostNetwork") is True
    out_spec: dict[str, Any] = {key: spec[key] for key in _SPEC_FIELDS if key in spec}
    out_spec["containers"] = [_container(c, host_network) for c in _list(spec.get("containers"))]
    if "initContainers" in spec:
        out_spec["initContainers"] = [_container(c, host_network) for c in _list(spec.get("initContainers"))]
    volumes = [v for v in (_volume(raw) for raw in _list(spec.get("volumes"))) if v is not None]
    if volumes:
        out_spec["volumes"] = volumes
    projected: dict[str, Any] = {
        "apiVersion": pod.get("apiVersion") or "v1",
        "kind": "Pod",
        "metadata": _metadata(_map(pod.get("metadata"))),
        "spec": out_spec,
    }
    condition = pod_scheduled_condition(pod)
    if condition is not None:
        # The scheduler's message (one reason per node group) is often the largest part of a pending pod and
        # tells the provisioner nothing its own simulation does not; it is left out.
        kept = {k: condition[k] for k in ("type", "status", "reason", "lastTransitionTime") if k in condition}
        projected["status"] = {"conditions": [kept]}
    return projected
