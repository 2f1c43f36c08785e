"""Jittered, bounded exponential back-off for reconnecting to the API server and retrying Invoke. Pure.

The random source is injected (a seeded `random.Random` in tests), so delays are reproducible.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(slots=True)
class Backoff:
    """Delays for successive failures: attempt n (0-based) waits in [d/2, d] with d = min(cap, base * 2**n).

    "Equal jitter": half the delay is fixed so retries never come back immediately, half is random so
    replicas and pods that failed together do not retry in lock-step. `reset()` after a success.
    """

    base: float = 0.5
    cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.base <= self.cap:
            raise ValueError("back-off needs 0 < base <= cap")

    def next_delay(self) -> float:
        """The delay before the next try; each call counts one more failure."""
        ceiling = float(min(self.cap, self.base * 2 ** min(self.attempt, 32)))
        self.attempt += 1
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    def reset(self) -> None:
        self.attempt = 0
