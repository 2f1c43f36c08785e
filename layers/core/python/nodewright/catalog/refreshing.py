"""The instance catalog a warm container keeps, refreshed with Karpenter's TTL.

Karpenter's instance type provider keeps instance types, zones and offerings for 5 minutes
(`InstanceTypesZonesAndOfferingsTTL`) and its pricing controller refreshes prices every 12 hours; the live
source (`adapters.ec2_catalog.LiveSource`) keeps its prices for the latter, and this wrapper asks it for types
and offerings again after the former. The offline snapshot answers the same every time, so refreshing it
costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nodewright.catalog.types import InstanceType, InstanceTypeSource

INSTANCE_TYPES_TTL_SECONDS = 300.0


class RefreshingCatalog:
    """An InstanceTypeSource that asks `source` again once `ttl` seconds have passed on `clock` (monotonic
    seconds), calling the source's `invalidate()` first when it has one (the live source caches by itself)."""

    def __init__(
        self, source: InstanceTypeSource, clock: Callable[[], float], ttl: float = INSTANCE_TYPES_TTL_SECONDS
    ) -> None:
        self._source = source
        self._clock = clock
        self._ttl = ttl
        self._loaded_at = 0.0
        self._types: Sequence[InstanceType] | None = None

    def instance_types(self) -> Sequence[InstanceType]:
        """The source's answer, at most `ttl` seconds old."""
        now = self._clock()
        if self._types is None or now - self._loaded_at >= self._ttl:
            invalidate = getattr(self._source, "invalidate", None)
            if callable(invalidate):
                invalidate()
            self._types = self._source.instance_types()
            self._loaded_at = now
        return self._types
