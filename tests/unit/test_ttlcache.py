"""The TTL cache warm containers keep answers in: expiry by the time given, bound, and dropping on demand."""

from __future__ import annotations

import pytest

from nodewright.ttlcache import TtlCache


def test_an_entry_is_served_until_its_ttl_has_passed_and_then_gone() -> None:
    cache: TtlCache[str, int] = TtlCache(60.0)
    cache.put("subnets", 1, now=100.0)
    assert cache.get("subnets", now=159.9) == 1
    assert cache.get("subnets", now=160.0) is None
    assert "subnets" not in cache  # an expired entry is removed when seen


def test_a_shorter_ttl_per_entry_caps_it_and_a_longer_one_does_not_extend_it() -> None:
    cache: TtlCache[str, int] = TtlCache(60.0)
    cache.put("capped", 1, now=0.0, ttl=10.0)
    cache.put("long", 2, now=0.0, ttl=600.0)
    assert cache.get("capped", now=10.0) is None and cache.get("long", now=59.0) == 2
    assert cache.get("long", now=60.0) is None
    cache.put("never", 3, now=0.0, ttl=0.0)  # a zero cap (resolve afresh every time) keeps nothing
    assert cache.get("never", now=0.0) is None and len(cache) == 0


def test_fetch_computes_once_within_the_ttl_and_again_after_it() -> None:
    cache: TtlCache[str, int] = TtlCache(60.0)
    calls: list[float] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert cache.fetch("k", 0.0, compute) == 1
    assert cache.fetch("k", 30.0, compute) == 1
    assert cache.fetch("k", 61.0, compute) == 2
    assert len(calls) == 2


def test_a_failed_computation_stores_nothing() -> None:
    cache: TtlCache[str, int] = TtlCache(60.0)

    def fail() -> int:
        raise ValueError("subnet gone")

    with pytest.raises(ValueError):
        cache.fetch("k", 0.0, fail)
    assert len(cache) == 0 and cache.fetch("k", 1.0, lambda: 7) == 7


def test_the_cache_is_bounded_and_the_entries_stored_longest_ago_go_first() -> None:
    cache: TtlCache[int, int] = TtlCache(60.0, limit=3)
    for key in range(5):
        cache.put(key, key, now=float(key))
    assert len(cache) == 3
    assert [cache.get(k, 5.0) for k in range(5)] == [None, None, 2, 3, 4]
    cache.put(2, 20, now=6.0)  # stored again: now the newest
    cache.put(5, 5, now=6.0)
    assert cache.get(3, 6.0) is None and cache.get(2, 6.0) == 20


def test_drop_and_drop_where_remove_entries_before_they_expire() -> None:
    cache: TtlCache[tuple[str, str], int] = TtlCache(60.0)
    for key in (("a", "1.30"), ("a", "1.31"), ("b", "1.31")):
        cache.put(key, 1, now=0.0)
    assert cache.drop_where(lambda key: key[0] == "a") == 2
    cache.drop(("b", "1.31"))
    assert len(cache) == 0
