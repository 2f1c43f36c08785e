"""API objects without the parts nodewright never reads, cut as each list page is parsed.

An object as an EKS API server serves it is mostly bookkeeping: `managedFields`, kubectl's last-applied copy of
the object, a Node's list of cached images, its addresses and system info, a pod's container statuses, IPs, and
each container's environment, mounts and probes. About two thirds of a pod's JSON and most of a Node's are such
parts, and a planner holds every object of the cluster while it decides, so they are dropped right after a page
is parsed, before the next is read.

Only what no reader of the listed documents looks at is cut (the model's parsers, disruption facts, the fleet
join, status and drain); everything else is kept as served, so a new reader of a kept field needs nothing here.
Objects read for a write (`_read_modify_write`, status merges) are never slimmed: a patch is built from the whole.
"""

from __future__ import annotations

from typing import Any

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# What the pod parser reads of a container (`model.pod_spec`: requests and limits, host ports, a sidecar's policy).
CONTAINER_FIELDS = frozenset({"name", "resources", "ports", "restartPolicy"})
POD_STATUS_DROPPED = (
    "containerStatuses",
    "initContainerStatuses",
    "ephemeralContainerStatuses",
    "podIP",
    "podIPs",
    "hostIP",
    "hostIPs",
    "qosClass",
)
# The pod conditions anything reads: PodScheduled (pending, bound-at time) and Ready (a PDB's healthy pods).
POD_CONDITIONS_READ = frozenset({"PodScheduled", "Ready"})
NODE_STATUS_DROPPED = ("images", "nodeInfo", "addresses", "daemonEndpoints", "volumesInUse", "volumesAttached")


def slim(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    """`doc` (changed in place and returned) without the parts nothing reads (module doc). `kind`: the list's
    kind ("" for custom resources: only metadata is cut)."""
    metadata = doc.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
    if kind == "Pod":
        _slim_pod(doc)
    elif kind == "Node":
        _drop(doc.get("status"), NODE_STATUS_DROPPED)
    return doc


def _slim_pod(doc: dict[str, Any]) -> None:
    status = doc.get("status")
    _drop(status, POD_STATUS_DROPPED)
    if isinstance(status, dict) and isinstance(status.get("conditions"), list):
        status["conditions"] = [
            c for c in status["conditions"] if not isinstance(c, dict) or c.get("type") in POD_CONDITIONS_READ
        ]
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if isinstance(containers, list):
            spec[key] = [_container(c) for c in containers]
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        spec["volumes"] = [_volume(v) for v in volumes]


def _container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container  # malformed: left for the parser to report
    return {k: v for k, v in container.items() if k in CONTAINER_FIELDS}


def _volume(volume: Any) -> Any:
    """A volume keeps its name and, when it is one, its claim or ephemeral claim template (what scheduling and
    the planner read); a config map, secret or projected volume is its name alone."""
    if not isinstance(volume, dict) or "persistentVolumeClaim" in volume or "ephemeral" in volume:
        return volume
    return {"name": volume["name"]} if "name" in volume else volume


def _drop(section: Any, keys: tuple[str, ...]) -> None:
    if isinstance(section, dict):
        for key in keys:
            section.pop(key, None)
