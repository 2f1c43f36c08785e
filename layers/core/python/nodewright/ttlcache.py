"""A cache whose entries expire: what a warm Lambda container keeps between invocations, as Karpenter's
controller keeps it between reconciles (`pkg/cache`, go-cache with a TTL per kind of answer).

Pure: time is a parameter of every call (seconds on any monotonic scale), so tests age entries without
sleeping. Bounded: past `limit` entries, the ones stored longest ago go first, so a container that sees many
keys (EC2NodeClasses edited over and over) does not grow without end.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_LIMIT = 256


class TtlCache(Generic[K, V]):
    """Values by key, each valid for `ttl` seconds after it was stored (a per-entry ttl may shorten it).

    Invariants: `get` never returns a value stored `ttl` or more seconds before `now`; at most `limit` entries
    are held; `drop` and `drop_where` remove entries at once (an answer found wrong before it expired).
    """

    def __init__(self, ttl: float, limit: int = DEFAULT_LIMIT) -> None:
        self.ttl = ttl
        self.limit = max(1, limit)
        self._entries: dict[K, tuple[float, V]] = {}  # key -> (expires at, value), in the order stored

    def get(self, key: K, now: float) -> V | None:
        """The value stored for `key` if it has not expired at `now`, else None (and the entry is gone)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if now >= entry[0]:
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: K, value: V, now: float, ttl: float | None = None) -> V:
        """Store `value` for `key` from `now` for `ttl` seconds (the cache's own when None, never longer);
        returns the value. A ttl of zero or less stores nothing."""
        lifetime = self.ttl if ttl is None else min(ttl, self.ttl)
        if lifetime <= 0:
            return value
        self._entries.pop(key, None)
        while len(self._entries) >= self.limit:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (now + lifetime, value)
        return value

    def fetch(self, key: K, now: float, compute: Callable[[], V], ttl: float | None = None) -> V:
        """The cached value for `key`, else `compute()` stored (an exception from it stores nothing)."""
        found = self.get(key, now)
        if found is not None:
            return found
        return self.put(key, compute(), now, ttl)

    def drop(self, key: K) -> None:
        self._entries.pop(key, None)

    def drop_where(self, predicate: Callable[[K], bool]) -> int:
        """Remove the entries whose key matches; returns how many went."""
        gone = [key for key in self._entries if predicate(key)]
        for key in gone:
            del self._entries[key]
        return len(gone)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
