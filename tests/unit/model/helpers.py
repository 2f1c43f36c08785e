"""Builders for minimal valid documents that tests then break one field at a time."""

from __future__ import annotations

import copy
from typing import Any

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [],
            }
        }
    },
}

NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    },
}


def with_field(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `base` with the dotted `path` set to `value` (intermediate maps are created)."""
    doc = copy.deepcopy(base)
    node = doc
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return doc


def without_field(base: dict[str, Any], path: str) -> dict[str, Any]:
    """A deep copy of `base` with the dotted `path` removed."""
    doc = copy.deepcopy(base)
    node = doc
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]
    return doc


def pod(spec: dict[str, Any], name: str = "p", labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Pod manifest with the given spec."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": spec,
    }


def container(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A container with the given requests/limits."""
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "image": "busybox", "resources": resources, **extra}
