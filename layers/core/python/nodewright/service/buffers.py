"""CapacityBuffers in the planner's tick: their status written back, and capacity asked for when one is short.

Karpenter's capacitybuffer controller resolves each buffer and writes `status.replicas`, `status.podTemplateRef`
(podTemplateRef buffers), `status.podTemplateGeneration`, `status.provisioningStrategy` and the
`ReadyForProvisioning` condition; its provisioner writes `Provisioning` from where the buffer's virtual pods landed
(`disruption.buffers.provisioning_condition`). Here the tick does both from its snapshot, writing only what changed.

A buffer whose virtual pods need a new NodeClaim (no room on nodes or in NodeClaims in flight) is short: the tick
asks the provisioner for that capacity with a payload of its own (`buffers`: each short buffer with the keys of the
virtual pods to plan), as the forwarder asks for pending pods. The provisioner plans them like pending pods; the
NodeClaims it launches name them (`nodewright.io/pods`), so the next tick counts them as capacity on its way and
does not ask again. Pods no NodePool can hold are not asked for (they would be refused again every minute).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodewright.disruption.buffers import BufferPlacement, provisioning_condition, ready_condition
from nodewright.disruption.state import ClusterState
from nodewright.model.capacitybuffer import BufferResolution
from nodewright.model.conditions import Condition
from nodewright.ports import Cluster

RequestCapacity = Callable[[Mapping[str, Any]], None]


def buffer_status(resolution: BufferResolution) -> dict[str, Any]:
    """The status fields Karpenter's controller writes for the buffer (replicas only once it resolved)."""
    buffer = resolution.buffer
    fields: dict[str, Any] = {"provisioningStrategy": buffer.strategy}
    if resolution.ready:
        fields["replicas"] = resolution.replicas
        fields["podTemplateRef"] = {"name": resolution.pod_template_ref} if resolution.pod_template_ref else None
        fields["podTemplateGeneration"] = resolution.pod_template_generation
    return fields


def _unchanged(doc: Mapping[str, Any], fields: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    status = doc.get("status") or {}
    if any(status.get(k) != v for k, v in fields.items()):
        return False
    current = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}
    return all(
        (current.get(c.type) or {}).get("status") == c.status
        and (current.get(c.type) or {}).get("reason") == c.reason
        and (current.get(c.type) or {}).get("message") == c.message
        for c in conditions
    )


def write_buffer_status(
    cluster: Cluster, state: ClusterState, documents: Sequence[Mapping[str, Any]], problems: list[str]
) -> int:
    """Write each CapacityBuffer's status where it changed; returns how many were written. A failed write is a
    problem of the tick, not its end."""
    docs = {
        f"{(d.get('metadata') or {}).get('namespace') or 'default'}/{(d.get('metadata') or {}).get('name', '')}": d
        for d in documents
        if d.get("kind") == "CapacityBuffer"
    }
    placement = state.buffer_placement()
    written = 0
    for resolution in state.inputs.buffers:
        doc = docs.get(resolution.buffer.key)
        if doc is None:
            continue
        conditions = [ready_condition(resolution)]
        provisioning = provisioning_condition(resolution, placement.fits.get(resolution.buffer.key))
        if provisioning is not None:
            conditions.append(provisioning)
        fields = buffer_status(resolution)
        if _unchanged(doc, fields, conditions):
            continue
        try:
            cluster.set_capacity_buffer_status(doc, fields, conditions)
            written += 1
        except Exception as error:  # status is for people; the tick goes on
            problems.append(f"capacitybuffer/{resolution.buffer.key}: could not write status: {error}")
    return written


def capacity_request(placement: BufferPlacement, batch_id: str, cluster_name: str) -> dict[str, Any] | None:
    """The provisioner payload asking for the short buffers' capacity, or None when no buffer is short."""
    if not placement.wanting:
        return None
    buffers = [
        {"namespace": key.split("/", 1)[0], "name": key.split("/", 1)[1], "pods": list(pods)}
        for key, pods in sorted(placement.wanting.items())
    ]
    return {"batch_id": batch_id, "cluster": cluster_name, "pods": [], "buffers": buffers}
