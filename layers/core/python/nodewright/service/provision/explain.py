"""Decisions explained where users look: events on pods, NodePools and NodeClaims, and the log's lines.

Events use Karpenter's reasons (v1.9.1 `pkg/events/reason.go`) where Karpenter records them, and on the pods
too, since `kubectl describe pod` is where a user looks first:

- `Nominated` (Normal) on each pod a NodeClaim was launched for: "Pod should schedule on: nodeclaim/<name>".
- `FailedScheduling` (Warning) on each pod the simulation could not place: "Failed to schedule pod, <reason>",
  recorded once per reason per five minutes (Karpenter's dedupe timeout), not on every window.
- `InsufficientCapacityError` (Warning) on a NodeClaim EC2 had no capacity for, and on its pods.
- `NoCompatibleInstanceTypes` (Warning) on a NodePool whose requirements leave no instance type with an
  available offering, while pods could not be placed (once a minute, as Karpenter).

The provisioner's log gets one structured line per launch and per pod that could not be placed
(`log_lines`), with the pod, the NodeClaim and the reason as fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodewright.catalog.catalog import Catalog
from nodewright.model.nodepool import NodePool
from nodewright.model.requirements import Requirements
from nodewright.ports import Cluster, NodeEvent, PodEvent
from nodewright.service.provision.result import CAPACITY, ProvisionResult

FAILED_SCHEDULING_DEDUPE_SECONDS = 300
NO_COMPATIBLE_DEDUPE_SECONDS = 60
ZONE_KEY = "topology.kubernetes.io/zone"
CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"


def nominate(result: ProvisionResult) -> None:
    """A `nominated` decision for every pod of every NodeClaim launched (or found launched)."""
    for launched in result.launched:
        for key in launched.pods:
            result.decide("nominated", f"pod/{key}", f"should schedule on nodeclaim/{launched.name}")


def pod_events(result: ProvisionResult, now: float) -> list[PodEvent]:
    """The events about pods this result calls for (see the module doc)."""
    events: list[PodEvent] = []
    for launched in result.launched:
        for key in (k for k in launched.pods if k not in result.virtual_pods):
            events.append(
                PodEvent(key, "Nominated", f"Pod should schedule on: nodeclaim/{launched.name}", dedupe=launched.name)
            )
    window = int(now // FAILED_SCHEDULING_DEDUPE_SECONDS)
    for d in result.decisions:
        if d.action != "unschedulable" or not d.subject.startswith("pod/"):
            continue
        pod = d.subject.removeprefix("pod/")
        if pod in result.virtual_pods:
            continue
        if d.details.get("cause") == CAPACITY:
            events.append(PodEvent(pod, "InsufficientCapacityError", d.reason, "Warning", f"{d.reason}|{window}"))
        else:
            message = f"Failed to schedule pod, {d.reason}"
            events.append(PodEvent(pod, "FailedScheduling", message, "Warning", f"{message}|{window}"))
    return events


def _offers(pool: NodePool, catalog: Catalog) -> bool:
    """True when some instance type meets the pool's requirements with an offering EC2 may have now."""
    requirements: Requirements = pool.node_requirements()
    zones, capacity_types = requirements.get(ZONE_KEY), requirements.get(CAPACITY_TYPE_KEY)
    keys = list(requirements.keys())
    for it in catalog.instance_types:
        if any(key in it.labels and not requirements.get(key).matches(it.labels[key]) for key in keys):
            continue
        if any(o.available and zones.matches(o.zone) and capacity_types.matches(o.capacity_type) for o in it.offerings):
            return True
    return False


def object_events(
    result: ProvisionResult, pools: Iterable[NodePool], catalog: Catalog | None, now: float
) -> list[NodeEvent]:
    """Events about NodeClaims and NodePools (see the module doc)."""
    events: list[NodeEvent] = []
    for d in result.decisions:
        if d.action == "launch-failed" and d.details.get("cause") == CAPACITY:
            name = d.subject.removeprefix("nodeclaim/")
            message = f"NodeClaim {name} event: {d.reason}"
            events.append(NodeEvent(name, "InsufficientCapacityError", message, "Warning", kind="NodeClaim"))
    if catalog is not None and any(d.action == "unschedulable" for d in result.decisions):
        window = str(int(now // NO_COMPATIBLE_DEDUPE_SECONDS))
        message = "NodePool requirements filtered out all compatible available instance types"
        for pool in pools:
            if not _offers(pool, catalog):
                events.append(NodeEvent(pool.name, "NoCompatibleInstanceTypes", message, "Warning", window, "NodePool"))
    return events


def record(
    cluster: Cluster, result: ProvisionResult, pools: Sequence[NodePool], catalog: Catalog | None, now: float
) -> None:
    """Record the events. One the API server refuses (a namespace being deleted) must not fail the batch:
    it becomes a `skipped` decision."""
    nominate(result)
    try:
        events = pod_events(result, now)
        if events:
            cluster.record_events(events)
        objects = object_events(result, pools, catalog, now)
        if objects:
            cluster.record_node_events(objects)
    except Exception as error:
        result.decide("skipped", "events", f"could not record the events: {error}")


def log_lines(result: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(level, message, fields) for the provisioner's structured log: each launch, each launch that failed,
    and each pod that could not be placed, with its reason. `result` is `ProvisionResult.to_json()`."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for d in result.get("decisions", ()):
        details = d.get("details") or {}
        if d["action"] == "launched":
            fields = {"nodeclaim": d["subject"].removeprefix("nodeclaim/"), "reason": d["reason"], **details}
            out.append(("info", "launched nodeclaim", fields))
        elif d["action"] == "launch-failed":
            fields = {"nodeclaim": d["subject"].removeprefix("nodeclaim/"), "reason": d["reason"], **details}
            out.append(("warning", "nodeclaim could not launch", fields))
        elif d["action"] == "unschedulable":
            out.append(
                (
                    "warning",
                    "could not schedule pod",
                    {"pod": d["subject"].removeprefix("pod/"), "reason": d["reason"], **details},
                )
            )
    return out
