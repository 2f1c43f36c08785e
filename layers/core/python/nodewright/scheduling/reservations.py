"""What capacity reservations have left for one plan (Karpenter's ReservationManager).

A `reserved` offering stands for an On-Demand Capacity Reservation with `reservation_capacity` free
instances. Every new NodeClaim of one plan that launches into a reservation uses one of them, so a plan
may put no more NodeClaims on a reservation than it has free instances, across NodeClaims and NodePools
alike. The ledger starts from the catalog's counts (the fewest listed when offerings of one reservation
disagree, as Karpenter takes); instances already launched are out of the counts EC2 reports, so nodes and
NodeClaims in flight need no entry.

Claims take reservations in plan order: each takes the first reservation among its reserved launch options
that has an instance left, and keeps only that one's options before its spot and on-demand ones. A claim
whose reservations are all taken launches from its other options, or, when its requirements allow only
reserved capacity, is not launched this round (Karpenter defers such pods the same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodewright.catalog.types import RESERVED, InstanceType
from nodewright.scheduling.results import LaunchOption


class ReservationLedger:
    """The free instances of each reservation while one plan's NodeClaims are finished, in order."""

    def __init__(self, instance_types: Iterable[InstanceType]) -> None:
        self._types = instance_types
        self._left: dict[str, int] | None = None  # read from the catalog at the first reserved option

    def _counts(self) -> dict[str, int]:
        if self._left is None:
            left: dict[str, int] = {}
            for it in self._types:
                for o in it.offerings:
                    if o.capacity_type == RESERVED and o.reservation_id and o.available:
                        count = max(o.reservation_capacity, 0)
                        left[o.reservation_id] = min(left.get(o.reservation_id, count), count)
            self._left = left
        return self._left

    def left(self, reservation_id: str) -> int:
        """Free instances of the reservation not yet taken by a claim of this plan."""
        return self._counts().get(reservation_id, 0)

    def take(self, options: Sequence[LaunchOption]) -> tuple[LaunchOption, ...]:
        """A claim's launch options once it takes a reservation: the first reservation with an instance left
        (options are in launch order, reserved first) keeps its options and loses one instance; the other
        reserved options are dropped. Without reserved options the options are returned as they are."""
        if not options or options[0].capacity_type != RESERVED:
            return tuple(options)  # reserved options come first: none here
        left = self._counts()
        taken = next(
            (o.reservation_id for o in options if o.capacity_type == RESERVED and left.get(o.reservation_id, 0) > 0),
            None,
        )
        if taken is not None:
            left[taken] -= 1
        return tuple(o for o in options if o.capacity_type != RESERVED or o.reservation_id == taken)


__all__ = ["ReservationLedger"]
