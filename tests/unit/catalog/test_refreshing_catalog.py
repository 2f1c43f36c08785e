"""The catalog a warm container keeps: asked again after Karpenter's 5 minutes, the source's own cache dropped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodewright.catalog.refreshing import INSTANCE_TYPES_TTL_SECONDS, RefreshingCatalog


class Source:
    def __init__(self) -> None:
        self.reads = 0
        self.invalidations = 0

    def invalidate(self) -> None:
        self.invalidations += 1

    def instance_types(self) -> Sequence[Any]:
        self.reads += 1
        return (f"answer {self.reads}",)


def test_the_catalog_is_kept_for_five_minutes_and_then_read_afresh() -> None:
    source, now = Source(), [0.0]
    catalog = RefreshingCatalog(source, lambda: now[0])
    assert catalog.instance_types() == ("answer 1",)
    now[0] = INSTANCE_TYPES_TTL_SECONDS - 1
    assert catalog.instance_types() == ("answer 1",) and source.reads == 1
    now[0] = INSTANCE_TYPES_TTL_SECONDS
    assert catalog.instance_types() == ("answer 2",)
    assert INSTANCE_TYPES_TTL_SECONDS == 300.0  # Karpenter's InstanceTypesZonesAndOfferingsTTL
    assert source.invalidations == 2  # the live source's own cache is dropped before each read


def test_a_source_without_a_cache_of_its_own_is_simply_asked_again() -> None:
    class Plain:
        reads = 0

        def instance_types(self) -> Sequence[Any]:
            Plain.reads += 1
            return ()

    now = [0.0]
    catalog = RefreshingCatalog(Plain(), lambda: now[0], ttl=10.0)
    catalog.instance_types()
    now[0] = 10.0
    catalog.instance_types()
    assert Plain.reads == 2
