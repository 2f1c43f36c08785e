"""Draining a node as Karpenter v1.14's terminator does: which pods to evict, in which order, which to delete, and
when the node is empty enough to go.

Pure: takes pod documents (camelCase, as the API server serves them), the time and the deadline, returns a round of
work. The workflow runs a round, waits, and runs another until `done`; each round re-reads the pods, so a pod a
PodDisruptionBudget refused (the Eviction API's HTTP 429) is simply asked again next round, as Karpenter's eviction
queue requeues it.

Which pods the drain waits for (Karpenter's IsWaitingEviction, pkg/utils/pod/scheduling.go): every pod bound to the
node that has not finished (phase Succeeded or Failed), except mirror (static) pods, which the kubelet owns, pods
tolerating `karpenter.sh/disrupted:NoSchedule` (they chose to stay: Kubernetes toleration matching, so `Exists`
with that key or no key, or `Equal`/no operator with that key and an empty value, effect empty or NoSchedule), and
pods stuck terminating (deletionTimestamp more than a minute past: their kubelet is gone or wedged, and waiting for
them would hold the node for ever).

Order (Karpenter's groupPodsByPriority, terminator.go): four groups, each evicted only once every pod of the groups
before it is gone: non-critical pods not owned by a DaemonSet, then non-critical DaemonSet pods, then critical
(`system-cluster-critical`, `system-node-critical`) non-DaemonSet pods, then critical DaemonSet pods, so the
cluster's own services and the node's agents go last. DaemonSet pods are evicted too (their controller does not put
them back on a node carrying the disrupted taint), and through the Eviction API, so their PDBs hold them as any
other pod's do. In the group being drained, a pod is asked to leave unless it is terminating already or its
`karpenter.sh/do-not-disrupt` protection is active now ("true", or a Go duration counted from status.startTime:
`nodewright.model.do_not_disrupt.is_active`); a pod whose duration has ended is evicted as any other. Pods that are
not evicted still hold the groups after them.

Deadline (the NodeClaim's terminationGracePeriod counted from the disruption, or the moment an interruption takes
the instance; Karpenter's DeleteExpiringPods): each pod the drain waits for is deleted once the time is past
(deadline - its own spec.terminationGracePeriodSeconds), with a grace period of what is left until the deadline (at
least 1 s), so it is gone by the deadline; a pod already terminating is deleted again only when its
deletionTimestamp falls after the deadline. Deletion skips PDBs and do-not-disrupt, as it does in Karpenter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.model.conditions import parse_rfc3339
from nodewright.model.do_not_disrupt import DO_NOT_DISRUPT, protected_until

DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# Karpenter's IsStuckTerminating: a pod still there this long after its deletionTimestamp no longer holds the drain.
STUCK_TERMINATING_SECONDS = 60.0
# What the API server defaults spec.terminationGracePeriodSeconds to.
DEFAULT_POD_GRACE_SECONDS = 30.0
_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# Karpenter's eviction order (groupPodsByPriority): (critical, DaemonSet) pairs, first group first.
_GROUPS = ((False, False), (False, True), (True, False), (True, True))
_GROUP_NAMES = {
    (False, False): "pods",
    (False, True): "DaemonSet pods",
    (True, False): "critical pods",
    (True, True): "critical DaemonSet pods",
}


@dataclass(frozen=True, slots=True)
class DrainPod:
    """The facts about a pod that draining needs.

    `kept`: why the drain never touches the pod ("" when it does): a mirror pod, or one tolerating the disrupted
    taint. `stays`: why the pod needs no room elsewhere once its node goes ("" when it does): `kept`, or owned by a
    DaemonSet (evicted, but its controller runs it on every node anyway). `protected_until`: when its
    do-not-disrupt protection ends (None: it has none; math.inf: never). `deleted_at`: its deletionTimestamp (0.0
    when not terminating). `grace_seconds`: spec.terminationGracePeriodSeconds.
    """

    namespace: str
    name: str
    critical: bool
    daemonset: bool
    terminating: bool
    stays: str
    kept: str = ""
    terminal: bool = False
    protected_until: float | None = None
    deleted_at: float = 0.0
    grace_seconds: float = DEFAULT_POD_GRACE_SECONDS

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def do_not_disrupt(self) -> bool:
        """The pod carries a do-not-disrupt annotation that protects it at some time (whether or not now)."""
        return self.protected_until is not None

    def protected(self, now: float) -> bool:
        """Its do-not-disrupt protection is active at `now` (Karpenter's IsDoNotDisruptActive)."""
        return self.protected_until is not None and now < self.protected_until

    def stuck(self, now: float) -> bool:
        """Terminating, and still here more than a minute after its deletionTimestamp (IsStuckTerminating)."""
        return self.terminating and now - self.deleted_at > STUCK_TERMINATING_SECONDS


def tolerates_disrupted(tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the tolerations tolerate `karpenter.sh/disrupted:NoSchedule` (empty value), by Kubernetes' rules
    (Toleration.ToleratesTaint): effect empty or NoSchedule; `Exists` with that key or an empty key; `Equal` (or no
    operator, which means Equal) with that key and an empty value."""
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect not in ("", "NoSchedule"):
            continue
        key = t.get("key") or ""
        operator = t.get("operator") or "Equal"
        if operator == "Exists" and key in ("", DISRUPTED_TAINT_KEY):
            return True
        if operator == "Equal" and key == DISRUPTED_TAINT_KEY and (t.get("value") or "") == "":
            return True
    return False


def drain_pod(doc: Mapping[str, Any]) -> DrainPod:
    """Read one pod document."""
    metadata = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    status = doc.get("status") or {}
    annotations = metadata.get("annotations") or {}
    owners = metadata.get("ownerReferences") or []
    kept = ""
    if MIRROR_ANNOTATION in annotations or any(o.get("kind") == "Node" for o in owners):
        kept = "a static (mirror) pod"
    elif tolerates_disrupted(spec.get("tolerations") or []):
        kept = f"tolerates {DISRUPTED_TAINT_KEY}:NoSchedule"
    daemonset = any(o.get("kind") == "DaemonSet" for o in owners)
    value = None if DO_NOT_DISRUPT not in annotations else str(annotations[DO_NOT_DISRUPT])
    grace = spec.get("terminationGracePeriodSeconds")
    return DrainPod(
        namespace=str(metadata.get("namespace") or "default"),
        name=str(metadata.get("name") or ""),
        critical=str(spec.get("priorityClassName") or "") in CRITICAL_PRIORITY_CLASSES,
        daemonset=daemonset,
        terminating=bool(metadata.get("deletionTimestamp")),
        stays=kept or ("owned by a DaemonSet" if daemonset else ""),
        kept=kept,
        terminal=str(status.get("phase") or "") in _TERMINAL_PHASES,
        protected_until=protected_until(value, parse_rfc3339(status.get("startTime"))),
        deleted_at=parse_rfc3339(metadata.get("deletionTimestamp")) or 0.0,
        grace_seconds=float(grace) if isinstance(grace, int | float) else DEFAULT_POD_GRACE_SECONDS,
    )


@dataclass(frozen=True, slots=True)
class DrainRound:
    """One round of a drain.

    `evict`: ask for an Eviction of these (pod keys) now. `delete`: delete these now (the deadline is near enough
    that they must start terminating), each with the grace period in `grace` (seconds). `waiting`: pods the drain
    still waits for that this round does not touch, with why (terminating, do-not-disrupt, a later group).
    `done`: no pod the drain waits for is left on the node.
    """

    evict: tuple[str, ...]
    delete: tuple[str, ...]
    waiting: Mapping[str, str]
    done: bool
    reason: str
    grace: Mapping[str, int] = field(default_factory=dict)


def _delete_at(pod: DrainPod, deadline: float | None) -> float | None:
    """When the pod must be deleted to be gone by the deadline (Karpenter's podDeleteTimeWithGracePeriod); None
    without a deadline, or when the pod is terminating already and will be gone by it (IsPodEligibleForForcedEviction
    is false)."""
    if deadline is None:
        return None
    if pod.terminating and pod.deleted_at <= deadline:
        return None
    return deadline - pod.grace_seconds


def drain_round(pods: Sequence[Mapping[str, Any]], now: float, deadline: float | None) -> DrainRound:
    """Inputs: the pods bound to the node (any order), the time, the deadline (None: no deadline).
    Output: this round's evictions and deletions (module doc). Invariants: a mirror or disrupted-tolerating pod is
    never in `evict` or `delete`; nothing is deleted before (deadline - its grace period); no pod whose
    do-not-disrupt protection is active is evicted; a pod is evicted only when every pod of the groups before its
    own is gone; `done` exactly when no pod is left that the drain waits for."""
    facts = sorted(map(drain_pod, pods), key=lambda p: p.key)
    waiting_for = [p for p in facts if not p.terminal and not p.kept and not p.stuck(now)]
    if not waiting_for:
        return DrainRound((), (), {}, True, "no pods left that must leave the node")
    delete: list[str] = []
    grace: dict[str, int] = {}
    for p in waiting_for:
        at = _delete_at(p, deadline)
        if at is not None and deadline is not None and now > at:
            delete.append(p.key)
            grace[p.key] = max(int(deadline - now), 1)
    deleting = set(delete)
    group = next(g for g in _GROUPS if any((p.critical, p.daemonset) == g for p in waiting_for))
    waiting: dict[str, str] = {}
    evict: list[str] = []
    for p in waiting_for:
        if p.key in deleting:
            continue
        if (p.critical, p.daemonset) != group:
            waiting[p.key] = f"{_GROUP_NAMES[(p.critical, p.daemonset)]}: evicted after the {_GROUP_NAMES[group]}"
        elif p.terminating:
            waiting[p.key] = "terminating"
        elif p.protected(now):
            until = p.protected_until if p.protected_until is not None else math.inf
            end = "the deadline" if until == math.inf else f"{until:.0f} (epoch seconds) or the deadline"
            waiting[p.key] = f"{DO_NOT_DISRUPT}: waits for {end}"
        else:
            evict.append(p.key)
    reason = f"evicting {len(evict)} {_GROUP_NAMES[group]}, waiting for {len(waiting)}"
    if delete:
        reason = f"deadline near: deleting {len(delete)} pod(s); {reason}"
    return DrainRound(tuple(evict), tuple(delete), waiting, False, reason, grace)
