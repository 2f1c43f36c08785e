"""Builders shared by the ports of Karpenter's capacitybuffer controller tests: documents in the shape the API
server serves them, resolved the way every nodewright read resolves them (`model.loader` then
`model.capacitybuffer`)."""

from __future__ import annotations

from typing import Any

from nodewright.model.capacitybuffer import BufferResolution
from nodewright.model.errors import ValidationError
from nodewright.model.loader import load_documents

GROUP_VERSION = "autoscaling.x-k8s.io/v1beta1"


def container(cpu: str = "", memory: str = "", name: str = "app", **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    found: dict[str, Any] = {"name": name, "image": "pause:latest", **extra}
    if requests:
        found["resources"] = {"requests": requests}
    return found


def pod_template(name: str, cpu: str = "1", memory: str = "1Gi", generation: int = 1) -> dict[str, Any]:
    """A v1 PodTemplate in `default` with one container (Karpenter's test.PodTemplate with cpuPod())."""
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": "default", "generation": generation},
        "template": {"spec": {"containers": [container(cpu, memory)]}},
    }


def workload(kind: str, name: str, replicas: int | None, cpu: str = "1") -> dict[str, Any]:
    """A Deployment, StatefulSet or ReplicaSet in `default` (Karpenter's test.Deployment)."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container(cpu)]}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def buffer(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 1},
        "spec": spec,
    }


def resolved(*docs: dict[str, Any]) -> tuple[dict[str, BufferResolution], list[ValidationError], list[str]]:
    """(buffer `namespace/name` -> its resolution, the errors, the keys of the virtual pods planned)."""
    inputs, errors = load_documents(list(docs), "test")
    virtual = [p.key for p in inputs.pending_pods if p.name.startswith("capacity-buffer-")]
    return {r.buffer.key: r for r in inputs.buffers}, errors, virtual
