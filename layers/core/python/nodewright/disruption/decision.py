"""What a disruption method decides: which candidates go, why, and what (if anything) replaces them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodewright.disruption.candidates import Candidate
from nodewright.disruption.commands import Replacement

# Methods, as `nodewright disrupt --json` names them.
EXPIRATION = "expiration"
EMPTINESS = "emptiness"
DRIFT = "drift"
MULTI_NODE = "multi-node"
SINGLE_NODE = "single-node"

# Karpenter v1's disruption reasons (the ones budgets name).
EMPTY = "Empty"
DRIFTED = "Drifted"
UNDERUTILIZED = "Underutilized"


@dataclass(frozen=True, slots=True)
class Decision:
    """Disrupt `candidates` together, for `reason`, as `method` found.

    `forceful`: budgets and do-not-disrupt do not hold it back (expiration). `replacement`: what a consolidation
    launches instead, and binds the workflow to (None: nothing, or for drift and expiration whatever the moving pods
    need at the time, priced in `replacement_price`). `planned`: what the workflow would launch if it ran now, for
    the dry run only (a consolidation's is its `replacement`; for drift and expiration the simulation's NodeClaims
    for the moving pods, never passed to the workflow, which sizes them again when it runs). `savings_per_hour`:
    the candidates' price minus what replaces them.
    """

    method: str
    reason: str
    candidates: tuple[Candidate, ...]
    detail: str
    forceful: bool = False
    replacement: Replacement | None = None
    replacement_price: float = 0.0
    moving: tuple[str, ...] = ()
    planned: tuple[Replacement, ...] = ()

    @property
    def launches(self) -> tuple[Replacement, ...]:
        """What the workflow would launch now: the consolidation's replacement, or the planned NodeClaims."""
        return (self.replacement,) if self.replacement is not None else self.planned

    @property
    def price(self) -> float:
        return sum(c.price for c in self.candidates)

    @property
    def savings_per_hour(self) -> float:
        if self.method == EXPIRATION:
            return 0.0  # the replacement is sized when the workflow runs
        return round(self.price - self.replacement_price, 6)


def sentence(errors: Mapping[str, str], limit: int = 3) -> str:
    """A short sentence of pod errors for an event or a skipped entry: the first few, then a count."""
    items: Sequence[tuple[str, str]] = sorted(errors.items())
    shown = "; ".join(f"{pod}: {why}" for pod, why in items[:limit])
    more = f" (and {len(items) - limit} more)" if len(items) > limit else ""
    return f"{shown}{more}"
