"""The forwarder's payload as the provisioner receives it, and its validation.

Kept apart from `service.provision` so that the provisioner's handler can check a payload without
importing the whole core first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Batch:
    """The forwarder's payload: pending pods (camelCase projections) with an id for idempotency.

    A registration payload has no pods and names `nodes` that joined with `karpenter.sh/unregistered`.
    """

    batch_id: str
    cluster: str
    pods: Sequence[Mapping[str, Any]]
    sent_at: str = ""
    nodes: Sequence[str] = ()


class PayloadError(ValueError):
    """The forwarder's payload is malformed; the message names the field and what it must be."""


MAX_BATCH_ID = 256


def parse_batch(payload: Any) -> Batch:
    """Validate the forwarder's payload into a Batch.

    `payload` is the decoded JSON: `batch_id` (1-256 characters), `cluster` (non-empty), `pods` (a list of
    pod projections, objects), optional `sent_at` (string) and `nodes` (a list of node names). Unknown keys
    are ignored, so a newer forwarder can add some. Raises PayloadError naming every wrong field; the pods'
    own contents are validated later, pod by pod, where a bad one becomes a decision instead of failing the
    batch.
    """
    if not isinstance(payload, Mapping):
        raise PayloadError(f"payload: expected a JSON object from the forwarder, got {type(payload).__name__}")
    problems: list[str] = []

    def text(key: str, required: bool, limit: int = 0) -> str:
        value = payload.get(key, None if required else "")
        if not isinstance(value, str) or (required and not value):
            problems.append(f"{key}: {'missing or empty' if value in (None, '') else 'must be a string'}")
            return ""
        if limit and len(value) > limit:
            problems.append(f"{key}: {len(value)} characters, at most {limit} allowed")
        return value

    batch_id = text("batch_id", True, MAX_BATCH_ID)
    cluster = text("cluster", True)
    sent_at = text("sent_at", False)
    pods = payload.get("pods")
    if not isinstance(pods, list) or not all(isinstance(p, Mapping) for p in pods):
        problems.append("pods: must be a list of pod objects (an empty list for a registration payload)")
        pods = []
    nodes = payload.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        problems.append("nodes: must be a list of node names")
        nodes = []
    if problems:
        raise PayloadError("payload: " + "; ".join(problems))
    return Batch(batch_id, cluster, pods, sent_at, tuple(nodes))
