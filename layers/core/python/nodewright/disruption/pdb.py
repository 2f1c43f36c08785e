"""PodDisruptionBudgets as voluntary disruption sees them: which pods may be evicted now.

Karpenter v1.14's rules (pkg/utils/pdb): a pod that would be evicted is blocked when the one PodDisruptionBudget
selecting it allows no disruption now, or when more than one selects it (the eviction API refuses those outright).
A budget with `unhealthyPodEvictionPolicy: AlwaysAllow` never blocks a pod whose Ready condition is False (the
eviction API lets those go). A budget that can never allow a disruption (`maxUnavailable: 0`, `maxUnavailable: 0%`,
`minAvailable: 100%`) blocks its pods *fully*: no capacity is planned for them, since they will not leave.
`disruptionsAllowed` is what the disruption controller last wrote in the budget's status; a budget without status (a
hand-written snapshot) gets it computed from the pods the inputs hold, as that controller would. A budget without a
selector selects no pod; `selector: {}` selects its whole namespace (policy/v1).

Which pods are asked about is the caller's business (Karpenter's IsEvictable: running, not tolerating
`karpenter.sh/disrupted`, not a mirror pod, not protected by do-not-disrupt; DaemonSet pods included).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.model.objects import Pod, PodDisruptionBudget


@dataclass(frozen=True, slots=True)
class PdbLimits:
    """The budgets of a cluster with the disruptions each allows now, by (namespace, name)."""

    budgets: tuple[PodDisruptionBudget, ...]
    allowed: Mapping[tuple[str, str], int]
    _by_namespace: Mapping[str, tuple[PodDisruptionBudget, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_namespace: dict[str, list[PodDisruptionBudget]] = {}
        for budget in self.budgets:
            by_namespace.setdefault(budget.namespace, []).append(budget)
        object.__setattr__(self, "_by_namespace", {k: tuple(v) for k, v in by_namespace.items()})

    def matching(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The budgets that select `pod` (same namespace, selector matches its labels)."""
        return [b for b in self._by_namespace.get(pod.namespace, ()) if b.selects(pod)]

    def violations(self, pod: Pod, ready: bool = True) -> list[PodDisruptionBudget]:
        """The budgets that refuse evicting `pod` now (Karpenter's isEvictable with zeroDisruptions): every budget
        selecting it when more than one does, else the one selecting it when it allows no disruption; [] when the
        eviction would go through. `ready`: False when the pod's Ready condition is False (an AlwaysAllow budget
        then lets it go)."""
        found = self.matching(pod)
        if len(found) > 1:
            return found
        for budget in found:
            if budget.always_allows_unhealthy and not ready:
                return []
            if self.allowed.get((budget.namespace, budget.name), 0) <= 0:
                return [budget]
        return []

    def blocking(self, pod: Pod, ready: bool = True) -> str:
        """Why evicting `pod` now would be refused ("" when it would not); see `violations`."""
        found = self.violations(pod, ready)
        if len(found) > 1:
            names = ", ".join(f"{b.namespace}/{b.name}" for b in found)
            return f"pod {pod.key} is selected by more than one PodDisruptionBudget ({names}); eviction refuses that"
        if found:
            return f"PodDisruptionBudget {found[0].namespace}/{found[0].name} allows no disruption of pod {pod.key} now"
        return ""

    def fully_blocked(self, pod: Pod, ready: bool = True) -> bool:
        """True when a budget selecting `pod` can never allow its eviction (Karpenter's isFullyBlocked: more than
        one budget counts as blocking, and an AlwaysAllow budget does not hold a pod that is not Ready)."""
        found = self.matching(pod)
        if len(found) > 1:
            return True
        return any(_never_allows(b) and not (b.always_allows_unhealthy and not ready) for b in found)


def _never_allows(budget: PodDisruptionBudget) -> bool:
    return budget.max_unavailable in ("0", "0%") or budget.min_available == "100%"


def _scaled(value: str, expected: int) -> int:
    """An intstr as Kubernetes scales it: a count, or a percentage of `expected` rounded up."""
    text = value.strip()
    if text.endswith("%"):
        return math.ceil(expected * int(text[:-1]) / 100)
    return int(text)


def computed_allowed(budget: PodDisruptionBudget, pods: Iterable[Pod], healthy: set[str]) -> int:
    """disruptionsAllowed as the disruption controller computes it: healthy pods above the desired count.

    `pods`: every pod the inputs hold; `healthy`: keys of the pods that run (bound to a node, not terminating)."""
    selected = [p for p in pods if budget.selects(p)]  # none without a selector: nothing to protect, 0 allowed
    expected = len(selected)
    current = sum(1 for p in selected if p.key in healthy)
    if budget.min_available is not None:
        desired = _scaled(budget.min_available, expected)
    elif budget.max_unavailable is not None:
        desired = expected - _scaled(budget.max_unavailable, expected)
    else:
        desired = expected
    return max(current - desired, 0)


def pdb_limits(budgets: Sequence[PodDisruptionBudget], pods: Sequence[Pod], healthy: set[str]) -> PdbLimits:
    """Inputs: the budgets, every pod the inputs hold, the keys of the healthy ones. Output: the limits, with
    each budget's status value where it has one and the computed value otherwise."""
    allowed = {
        (b.namespace, b.name): b.disruptions_allowed
        if b.disruptions_allowed is not None
        else computed_allowed(b, pods, healthy)
        for b in budgets
    }
    return PdbLimits(tuple(budgets), allowed)
