"""The solver's room lists without their shortcuts, to check that the shortcuts change no plan.

Within `full_walks()`, a new room list keeps only the claims with room for the batch (as it did before claims
without room were left for `Solver._fill` to drop), and a list looks at its parked claims at every visit (not only
after some claim narrowed, `Claims.narrowed`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from nodewright.model import resources as res
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Toleration
from nodewright.scheduling.claims import Bin
from nodewright.scheduling.pools import ReqKey
from nodewright.scheduling.solver import Solver


@contextmanager
def full_walks() -> Iterator[list[int]]:
    """Patch the solver to take the full walks; yields [lists made, claims without room they left out]."""
    room, new_room = Solver._room, Solver._new_room
    requests: list[Mapping[str, int]] = []
    counts = [0, 0]

    def every_parked(
        self: Solver,
        request: Mapping[str, int],
        key: tuple[object, ...],
        requirements: Requirements,
        rkey: ReqKey,
        tolerations: tuple[Toleration, ...],
    ) -> list[Bin]:
        self.parked_seen.clear()  # as if some claim had narrowed since every list last looked
        requests.append(request)
        try:
            return room(self, request, key, requirements, rkey, tolerations)
        finally:
            requests.pop()

    def with_room(
        self: Solver, requirements: Requirements, rkey: ReqKey, tolerations: tuple[Toleration, ...]
    ) -> tuple[list[Bin], list[Bin]]:
        found, waiting = new_room(self, requirements, rkey, tolerations)
        request = requests[-1]
        kept = [b for b in found if res.fits(request, b.remaining)]
        counts[0] += 1
        counts[1] += len(found) - len(kept)
        return kept, [b for b in waiting if res.fits(request, b.remaining)]

    Solver._room = every_parked  # type: ignore[method-assign]
    Solver._new_room = with_room  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        Solver._room = room  # type: ignore[method-assign]
        Solver._new_room = new_room  # type: ignore[method-assign]
