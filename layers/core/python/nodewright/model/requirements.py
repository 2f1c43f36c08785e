"""Node requirements: label keys constrained by In / NotIn / Exists / DoesNotExist / Gt / Lt.

A NodePool's `spec.template.spec.requirements`, a pod's nodeSelector and required node affinity, and an
instance type's well-known labels all become `Requirements`: one `ValueSet` per label key. Intersecting
them answers "can one node satisfy all of these?" and, for a new NodeClaim, "which instance types,
zones and capacity types are still allowed?".

Semantics follow Kubernetes node selectors: In, Exists, Gt and Lt need the label to be present; NotIn
and DoesNotExist also match a node without the label. Gt/Lt compare integers; a non-integer value never
satisfies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

# Deprecated label keys read as their GA names, as the kube-scheduler and Karpenter do (a pod selecting
# beta.kubernetes.io/arch selects kubernetes.io/arch).
NORMALIZED_LABELS = {
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
}


class Operator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement as written by a user (`key`, `operator`, `values`, optional `minValues`)."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()
    min_values: int | None = None

    def to_value_set(self) -> ValueSet:
        op = self.operator
        if op is Operator.IN:
            return ValueSet(allowed=frozenset(self.values), absent_ok=False, min_values=self.min_values)
        if op is Operator.NOT_IN:
            return ValueSet(excluded=frozenset(self.values), min_values=self.min_values)
        if op is Operator.EXISTS:
            return ValueSet(absent_ok=False, min_values=self.min_values)
        if op is Operator.DOES_NOT_EXIST:
            return ValueSet(present_ok=False)
        bound = int(self.values[0])
        if op is Operator.GT:
            return ValueSet(gt=bound, absent_ok=False, min_values=self.min_values)
        return ValueSet(lt=bound, absent_ok=False, min_values=self.min_values)

    def __str__(self) -> str:
        if self.operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
            return f"{self.key} {self.operator.value}"
        return f"{self.key} {self.operator.value} [{', '.join(self.values)}]"


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ValueSet:
    """The values one label key may take.

    `allowed` None means "any value" (subject to `excluded` and the integer bounds). `absent_ok` says a
    node without the label satisfies it; `present_ok` False is DoesNotExist. Invariant after
    `normalized()`: when `allowed` is a set, it already excludes `excluded` and out-of-bounds values.
    """

    allowed: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()
    gt: int | None = None
    lt: int | None = None
    absent_ok: bool = True
    present_ok: bool = True
    min_values: int | None = None
    # The hash, computed once: value sets are dictionary keys on the scheduler's hot path.
    _hash: int = field(default=0, compare=False, repr=False)

    def __hash__(self) -> int:
        if not self._hash:
            fields = (self.allowed, self.excluded, self.gt, self.lt, self.absent_ok, self.present_ok, self.min_values)
            object.__setattr__(self, "_hash", hash(fields) or 1)
        return self._hash

    def within_bounds(self, value: str) -> bool:
        if self.gt is None and self.lt is None:
            return True
        number = _int_or_none(value)
        if number is None:
            return False
        return (self.gt is None or number > self.gt) and (self.lt is None or number < self.lt)

    def matches(self, value: str | None) -> bool:
        """Does a node whose label is `value` (None: no such label) satisfy this set?"""
        if value is None:
            return self.absent_ok
        if not self.present_ok or value in self.excluded:
            return False
        if self.allowed is not None and value not in self.allowed:
            return False
        return self.within_bounds(value)

    def intersect(self, other: ValueSet) -> ValueSet:
        if self.allowed is None:
            allowed = other.allowed
        elif other.allowed is None:
            allowed = self.allowed
        else:
            allowed = self.allowed & other.allowed
        gt = other.gt if self.gt is None else (self.gt if other.gt is None else max(self.gt, other.gt))
        lt = other.lt if self.lt is None else (self.lt if other.lt is None else min(self.lt, other.lt))
        mins = [m for m in (self.min_values, other.min_values) if m is not None]
        return ValueSet(
            allowed=allowed,
            excluded=self.excluded | other.excluded,
            gt=gt,
            lt=lt,
            absent_ok=self.absent_ok and other.absent_ok,
            present_ok=self.present_ok and other.present_ok,
            min_values=max(mins) if mins else None,
        ).normalized()

    def normalized(self) -> ValueSet:
        if self.allowed is None or (not self.excluded and self.gt is None and self.lt is None):
            return self
        allowed = frozenset(v for v in self.allowed if v not in self.excluded and self.within_bounds(v))
        return ValueSet(allowed, frozenset(), self.gt, self.lt, self.absent_ok, self.present_ok, self.min_values)

    def is_empty(self) -> bool:
        """True when no node, with or without the label, can satisfy this set."""
        if self.absent_ok:
            return False
        if not self.present_ok:
            return True
        if self.allowed is not None:
            return not self.allowed
        return self.gt is not None and self.lt is not None and self.lt - self.gt <= 1

    def single_value(self) -> str | None:
        """The only value allowed, when there is exactly one and the label must be present."""
        if self.allowed is not None and len(self.allowed) == 1 and not self.absent_ok:
            return next(iter(self.allowed))
        return None

    def to_requirements(self, key: str) -> list[Requirement]:
        """This set written back as node selector requirements (what a NodeClaim records)."""
        if not self.present_ok:
            return [Requirement(key, Operator.DOES_NOT_EXIST)]
        out = []
        if self.allowed is not None:
            out.append(Requirement(key, Operator.IN, tuple(sorted(self.allowed)), self.min_values))
        if self.excluded:
            out.append(Requirement(key, Operator.NOT_IN, tuple(sorted(self.excluded))))
        if self.gt is not None:
            out.append(Requirement(key, Operator.GT, (str(self.gt),)))
        if self.lt is not None:
            out.append(Requirement(key, Operator.LT, (str(self.lt),)))
        if not out and not self.absent_ok:
            out.append(Requirement(key, Operator.EXISTS, (), self.min_values))
        return out

    def describe(self, key: str) -> str:
        if not self.present_ok:
            return f"{key} DoesNotExist"
        parts = []
        if self.allowed is not None:
            parts.append(f"{key} In [{', '.join(sorted(self.allowed))}]")
        if self.excluded:
            parts.append(f"{key} NotIn [{', '.join(sorted(self.excluded))}]")
        if self.gt is not None:
            parts.append(f"{key} Gt {self.gt}")
        if self.lt is not None:
            parts.append(f"{key} Lt {self.lt}")
        if not parts:
            parts.append(f"{key} Exists" if not self.absent_ok else f"{key} (any)")
        return ", ".join(parts)


UNCONSTRAINED = ValueSet()


@dataclass(frozen=True, slots=True)
class Requirements:
    """Requirements on many label keys; a key that is absent is unconstrained."""

    by_key: Mapping[str, ValueSet] = field(default_factory=dict)

    @staticmethod
    def of(requirements: Iterable[Requirement]) -> Requirements:
        out: dict[str, ValueSet] = {}
        for requirement in requirements:
            value_set = requirement.to_value_set()
            key = NORMALIZED_LABELS.get(requirement.key, requirement.key)
            previous = out.get(key)
            out[key] = value_set if previous is None else previous.intersect(value_set)
        return Requirements(out)

    @staticmethod
    def from_labels(labels: Mapping[str, str]) -> Requirements:
        """Exactly these labels, each required with its value."""
        out: dict[str, ValueSet] = {}
        for key, value in labels.items():
            key = NORMALIZED_LABELS.get(key, key)
            value_set = _exactly(value)
            previous = out.get(key)
            # A node carries a deprecated label and its GA name with the same value: one value set, nothing to meet.
            out[key] = value_set if previous is None or previous is value_set else previous.intersect(value_set)
        return Requirements(out)

    def get(self, key: str) -> ValueSet:
        return self.by_key.get(key, UNCONSTRAINED)

    def keys(self) -> Iterable[str]:
        return self.by_key.keys()

    def intersect(self, other: Requirements) -> Requirements:
        if not other.by_key:
            return self
        if not self.by_key:
            return other
        out = dict(self.by_key)
        for key, value_set in other.by_key.items():
            mine = out.get(key)
            out[key] = value_set if mine is None else mine.intersect(value_set)
        return Requirements(out)

    def conflict(self, other: Requirements) -> str | None:
        """None when one node could satisfy both; otherwise the first key (sorted) that cannot."""
        for key in sorted(set(self.by_key) & set(other.by_key)):
            if self.by_key[key].intersect(other.by_key[key]).is_empty():
                return f"{other.by_key[key].describe(key)} conflicts with {self.by_key[key].describe(key)}"
        return None

    def matches_labels(self, labels: Mapping[str, str]) -> bool:
        """Does a node with exactly these labels satisfy every requirement?"""
        return all(value_set.matches(labels.get(key)) for key, value_set in self.by_key.items())

    def without(self, keys: Iterable[str]) -> Requirements:
        drop = set(keys)
        return Requirements({k: v for k, v in self.by_key.items() if k not in drop})

    def to_list(self) -> list[Requirement]:
        """Every constraint as node selector requirements, sorted by key."""
        return [r for key in sorted(self.by_key) for r in self.by_key[key].to_requirements(key)]

    def labels(self) -> dict[str, str]:
        """The labels a node built from these requirements is sure to carry (single-valued keys)."""
        out = {}
        for key, value_set in self.by_key.items():
            single = value_set.single_value()
            if single is not None:
                out[key] = single
        return out


@lru_cache(maxsize=8192)
def _exactly(value: str) -> ValueSet:
    """The value set of a label that must be present with `value`, one object per value (value sets are frozen):
    thousands of nodes share their zones, instance types and pool labels, and a cold provisioner made one per node
    and label (90,000 at 3,000 nodes)."""
    return ValueSet(allowed=frozenset((value,)), absent_ok=False)
