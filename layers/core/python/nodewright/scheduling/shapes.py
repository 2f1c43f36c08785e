"""The new NodeClaims of one run by shape: their requirement set and their taints.

Whether a new claim may take a batch of pods is, but for the instance type it is sized for, a question of its
shape alone (`Claims.shape_compat`, and its NodePool's taints against the pods' tolerations). A run opens
thousands of claims of a few hundred shapes, and a class starts a list of the places worth visiting for each of
its domains and requirement sets (`Solver._room`): asking each shape once, instead of each claim, keeps a new
list's cost to the claims that may take the batch.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING

from nodewright.model.taints import Taint
from nodewright.scheduling.pools import ReqKey

if TYPE_CHECKING:
    from nodewright.scheduling.claims import Bin

Shape = tuple[ReqKey, tuple[Taint, ...]]


def _order(b: Bin) -> int:
    return b.order


class ClaimShapes:
    """The new claims that have not grown into a larger type, per shape, each list in placement order.

    A claim leaves its shape's list when its requirements narrow (`move`: it joins its new shape's) or when it
    grows (`drop`: a grown claim takes no more pods from the room walk). Every claim listed is in exactly one
    list, under its current `rkey` and `taints`.
    """

    def __init__(self) -> None:
        self.by_shape: dict[Shape, list[Bin]] = {}

    def add(self, b: Bin) -> None:
        """List a new claim under its shape."""
        bisect.insort(self.by_shape.setdefault((b.rkey, b.taints), []), b, key=_order)

    def move(self, b: Bin, old: ReqKey) -> None:
        """A listed claim whose requirement set was numbered `old` and is now `b.rkey`."""
        self._remove(b, (old, b.taints))
        self.add(b)

    def drop(self, b: Bin) -> None:
        """A listed claim that grew: no longer listed."""
        self._remove(b, (b.rkey, b.taints))

    def _remove(self, b: Bin, shape: Shape) -> None:
        bins = self.by_shape[shape]
        bins.remove(b)  # Bin compares by identity
        if not bins:
            del self.by_shape[shape]

    def items(self) -> Iterator[tuple[Shape, list[Bin]]]:
        """Each shape with its claims in placement order (callers do not modify the lists)."""
        return iter(self.by_shape.items())
