"""The planner's request for CapacityBuffers' capacity, as pods to plan.

The payload names each short buffer and the keys of its virtual pods to plan (`service.buffers`). As with pod
hints, the payload is not trusted for what a pod is: the buffers, and the PodTemplates and workloads they name, are
read from the API server and resolved here (`model.capacitybuffer`), and only the named pods that are still among
a ready buffer's pods are planned, built from the template as read. A buffer gone, not ready, or grown smaller is a
`skipped` decision. Planned like pending pods, the NodeClaims launched for them name them (`nodewright.io/pods`),
which is how the planner's next tick knows their room is on its way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.model.capacitybuffer import virtual_index, virtual_pod_document
from nodewright.model.loader import load_documents
from nodewright.ports import Cluster
from nodewright.service.batch import Batch
from nodewright.service.provision.result import ProvisionResult


def buffer_pods(batch: Batch, cluster: Cluster, result: ProvisionResult) -> list[Mapping[str, Any]]:
    """The virtual pods the batch asks for, as Pod documents to plan; each one not planned is `skipped`."""
    if not batch.buffers:
        return []
    inputs, _ = load_documents([], "cluster", summaries=False, buffers=cluster.capacity_buffers())
    resolved = {r.buffer.key: r for r in inputs.buffers}
    out: list[Mapping[str, Any]] = []
    for key, pods in sorted(batch.buffers.items()):
        found = resolved.get(key)
        if found is None or not found.ready:
            why = "not found" if found is None else f"not ready for provisioning: {found.message}"
            result.decide("skipped", f"capacitybuffer/{key}", why)
            continue
        for pod in pods:
            index = virtual_index(found, pod)
            if not index:
                result.decide("skipped", f"pod/{pod}", f"no longer one of capacitybuffer/{key}'s virtual pods")
                continue
            out.append(virtual_pod_document(found.buffer, found.template, index))
            result.virtual_pods.add(pod)
    return out
