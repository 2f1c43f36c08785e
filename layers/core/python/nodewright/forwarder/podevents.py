"""Pod events on nodes, as Karpenter's pod-events controller keeps them: `status.lastPodEventTime` of a NodeClaim.

Emptiness and consolidation wait `consolidateAfter` after the last pod event on a node: a pod bound to it, one that
finished (Succeeded or Failed), one that started terminating, one deleted. DaemonSet pods do not count (they come
and go with the node itself). The planner sees additions in the pods it lists; removals it can only learn from
here. The forwarder watches the pods bound to nodes, and the leader writes the time on the node's NodeClaim, at most
once per node every 10 seconds (Karpenter's dedupe), since scheduling events come in bursts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEDUPE_SECONDS = 10.0  # Karpenter's dedupeTimeout for lastPodEventTime writes
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class _Seen:
    node: str
    terminal: bool
    terminating: bool


def _seen(pod: Mapping[str, Any]) -> _Seen | None:
    metadata = pod.get("metadata") or {}
    if any(o.get("kind") == "DaemonSet" for o in metadata.get("ownerReferences") or []):
        return None
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    if not node:
        return None
    phase = (pod.get("status") or {}).get("phase")
    return _Seen(node, phase in _TERMINAL, bool(metadata.get("deletionTimestamp")))


def _uid(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return str(metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}")


@dataclass
class PodEvents:
    """Watch events of bound pods in; the nodes whose NodeClaim should record a pod event out (pure)."""

    dedupe_seconds: float = DEDUPE_SECONDS
    _pods: dict[str, _Seen] = field(default_factory=dict)
    _written: dict[str, float] = field(default_factory=dict)

    def reset(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list: remember each pod's state; a list is not an event."""
        self._pods = {}
        for pod in pods:
            seen = _seen(pod)
            if seen is not None:
                self._pods[_uid(pod)] = seen

    def observe(self, kind: str, pod: Mapping[str, Any], now: float) -> str:
        """The node to record a pod event on for this watch event ("" for none): a pod newly bound (ADDED), newly
        terminal or terminating (MODIFIED), or gone (DELETED); at most once per node per `dedupe_seconds`."""
        uid = _uid(pod)
        seen = _seen(pod)
        before = self._pods.pop(uid, None)
        if kind == "DELETED":
            node = before.node if before is not None else (seen.node if seen is not None else "")
            return self._due(node, now)
        if seen is None:
            return ""
        self._pods[uid] = seen
        changed = (
            before is None
            or before.node != seen.node
            or (seen.terminal and not before.terminal)
            or (seen.terminating and not before.terminating)
        )
        return self._due(seen.node, now) if changed else ""

    def _due(self, node: str, now: float) -> str:
        if not node or now - self._written.get(node, -self.dedupe_seconds) < self.dedupe_seconds:
            return ""
        self._written[node] = now
        return node
