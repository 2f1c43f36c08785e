"""Which pods wait for capacity: the forwarder sends them and the provisioner plans them. Pure: no I/O, no clock.

Input everywhere is a pod as the API serves it in JSON (camelCase keys, as `ApiClient().
sanitize_for_serialization(pod)` or a raw watch event gives it). The forwarder uses this to choose what to
send, and the provisioner applies the very same test to the pods it reads from the API server, since the
payload is only a hint.

Pending (DESIGN.md, Karpenter's "provisionable"): the pod's `PodScheduled` condition is `False` with reason
`Unschedulable`, it has no `spec.nodeName` and no `status.nominatedNodeName`, it is not owned by a DaemonSet
(the DaemonSet controller places those on every node; new nodes bring their own), it is not a static or mirror
pod (annotation `kubernetes.io/config.mirror`, or owned by a Node), and its `schedulerName` is
`default-scheduler` (a pod handed to another scheduler is that scheduler's business; the provisioner only
simulates the default one). Two further exclusions, also Karpenter's: a pod being deleted
(`deletionTimestamp` set) and a pod in a terminal phase (`Succeeded`/`Failed`) will never need a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_SCHEDULER = "default-scheduler"


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
