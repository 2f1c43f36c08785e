"""Taints and tolerations, with the Kubernetes matching rules."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint: key, optional value, and effect (NoSchedule, PreferNoSchedule, NoExecute)."""

    key: str
    effect: str
    value: str = ""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod's toleration of taints, with the Kubernetes matching rules (Equal or Exists)."""

    key: str = ""
    operator: str = "Equal"  # Equal or Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            # An empty key with Exists tolerates everything.
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


def untolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> Taint | None:
    """The first NoSchedule/NoExecute taint that no toleration tolerates, or None.

    PreferNoSchedule taints never block placement, as in the Kubernetes scheduler.
    """
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
