"""Draining a node: which pods to evict, in which order, and when to stop asking and delete.

Pure: takes pod documents (camelCase, as the API server serves them) and the time, returns a round of work.
The workflow runs a round, waits, and runs another until the node is empty; each round re-reads the pods, so a
pod a PodDisruptionBudget refused (HTTP 429) is simply asked again next round. Nothing is ever deleted around a
budget before the deadline.

Order, as Karpenter drains: pods that are not critical first; `system-cluster-critical` and
`system-node-critical` pods only once no other pod is left, so the cluster's own services go last. DaemonSet
pods and mirror (static) pods are not evicted: their controllers would put them straight back. Pods that
tolerate `karpenter.sh/disrupted:NoSchedule` are left too, as Karpenter leaves them: they chose to stay.
`karpenter.sh/do-not-disrupt` pods are waited for, not evicted, until the deadline (the NodePool's
terminationGracePeriod, or the moment an interruption takes the instance); after the deadline every pod left
is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.model.objects import DO_NOT_DISRUPT

DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass(frozen=True, slots=True)
class DrainPod:
    """The facts about a pod that draining needs."""

    namespace: str
    name: str
    critical: bool
    do_not_disrupt: bool
    terminating: bool
    stays: str  # why the pod is not drained at all ("" when it is)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def tolerates_disrupted(tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect not in ("", "NoSchedule"):
            continue
        key = t.get("key") or ""
        operator = t.get("operator") or "Equal"
        if (key == "" and operator == "Exists") or (key == DISRUPTED_TAINT_KEY and operator == "Exists"):
            return True
    return False


def drain_pod(doc: Mapping[str, Any]) -> DrainPod:
    """Read one pod document."""
    metadata = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    owners = metadata.get("ownerReferences") or []
    stays = ""
    if any(o.get("kind") == "DaemonSet" for o in owners):
        stays = "owned by a DaemonSet"
    elif MIRROR_ANNOTATION in annotations or any(o.get("kind") == "Node" for o in owners):
        stays = "a static (mirror) pod"
    elif tolerates_disrupted(spec.get("tolerations") or []):
        stays = f"tolerates {DISRUPTED_TAINT_KEY}:NoSchedule"
    return DrainPod(
        namespace=str(metadata.get("namespace") or "default"),
        name=str(metadata.get("name") or ""),
        critical=str(spec.get("priorityClassName") or "") in CRITICAL_PRIORITY_CLASSES,
        do_not_disrupt=str(annotations.get(DO_NOT_DISRUPT, "")) == "true",
        terminating=bool(metadata.get("deletionTimestamp")),
        stays=stays,
    )


@dataclass(frozen=True, slots=True)
class DrainRound:
    """One round of a drain.

    `evict`: ask for an Eviction of these (pod keys) now. `delete`: the deadline has passed, delete these.
    `waiting`: pods still there that this round does not touch, with why (terminating, do-not-disrupt,
    critical pods waiting for the others). `done`: no pod that must leave is left on the node.
    """

    evict: tuple[str, ...]
    delete: tuple[str, ...]
    waiting: Mapping[str, str]
    done: bool
    reason: str


def drain_round(pods: Sequence[Mapping[str, Any]], now: float, deadline: float | None) -> DrainRound:
    """Inputs: the pods bound to the node (any order), the time, the deadline (None: no deadline).
    Output: this round's evictions or deletions. Invariants: a DaemonSet, mirror or disrupted-tolerating pod is
    never in `evict` or `delete`; before the deadline nothing is deleted and no do-not-disrupt pod is evicted;
    critical pods are evicted only when no other drainable pod remains."""
    drainable = sorted((p for p in map(drain_pod, pods) if not p.stays), key=lambda p: p.key)
    if not drainable:
        return DrainRound((), (), {}, True, "no pods left that must leave the node")
    if deadline is not None and now >= deadline:
        delete = tuple(p.key for p in drainable if not p.terminating)
        terminating = {p.key: "terminating" for p in drainable if p.terminating}
        return DrainRound((), delete, terminating, False, f"deadline passed: deleting {len(delete)} pod(s)")
    waiting: dict[str, str] = {}
    evict: list[str] = []
    others_left = any(not p.critical for p in drainable)
    for p in drainable:
        if p.terminating:
            waiting[p.key] = "terminating"
        elif p.do_not_disrupt:
            waiting[p.key] = f"{DO_NOT_DISRUPT}: waits for the deadline"
        elif p.critical and others_left:
            waiting[p.key] = "critical: evicted after the other pods"
        else:
            evict.append(p.key)
    return DrainRound(tuple(evict), (), waiting, False, f"evicting {len(evict)}, waiting for {len(waiting)}")
