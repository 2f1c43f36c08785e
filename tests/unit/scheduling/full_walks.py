"""The solver's room lists without their shortcuts, to check that the shortcuts change no plan.

Within `full_walks()`, a new room list keeps only the claims with room for the batch (as it did before claims
without room were left for `Solver._fill` to drop), and a list looks at its parked claims at every visit (not only
after some claim narrowed, `Claims.narrowed`). Within `unkept_answers()`, what the solver keeps per question (a new
claim's sizing, a class's hostname terms) is worked out afresh each time it is asked. Within `unkept_skips()`, no
claim's one-pod decline is remembered (`Solver._declined`) and no bin is known full when a list is made
(`Solver.full`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from nodewright.model import resources as res
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Toleration
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.candidates import Candidate
from nodewright.scheduling.claims import Claims
from nodewright.scheduling.classes import PodClass
from nodewright.scheduling.pools import PoolContext, ReqKey
from nodewright.scheduling.preferences import Variant
from nodewright.scheduling.solver import Solver
from nodewright.scheduling.templates import PoolCompat


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


@contextmanager
def unkept_answers() -> Iterator[list[int]]:
    """Patch the solver to work out afresh, at every batch and new claim, what it keeps per question: a new claim's
    sizing (`Claims._sized` calls `Claims._size_claim` each time), a class's hostname terms (`Solver._hostname_terms`)
    and the number of a new claim's requirements (`Claims.compat_keys`).
    Yields [sizings asked, those `_sized` keeps]."""
    sized, terms, new_claim = Claims._sized, Solver._hostname_terms, Claims._new_claim
    counts = [0, 0]

    def size_each_time(
        self: Claims,
        ctx: PoolContext,
        cls: PodClass,
        requirements: Requirements,
        rkey: ReqKey,
        cap: int,
        tolerations: tuple[Toleration, ...],
    ) -> tuple[PoolCompat, Candidate, int] | str:
        counts[0] += 1
        counts[1] += ctx.remaining is None and id(cls) not in self.look_ahead.free_key
        return self._size_claim(ctx, cls, requirements, rkey, cap, tolerations)

    def terms_each_time(self: Solver, cls: PodClass, variant: Variant) -> tuple[tuple[tuple[int, int], ...], bool]:
        self.hostname_terms.clear()
        return terms(self, cls, variant)

    def numbered_each_time(self: Claims, ctx: PoolContext, compat: PoolCompat, candidate: Candidate) -> Bin:
        self.compat_keys.clear()
        return new_claim(self, ctx, compat, candidate)

    Claims._sized = size_each_time  # type: ignore[method-assign]
    Solver._hostname_terms = terms_each_time  # type: ignore[method-assign]
    Claims._new_claim = numbered_each_time  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        Claims._sized = sized  # type: ignore[method-assign]
        Solver._hostname_terms = terms  # type: ignore[method-assign]
        Claims._new_claim = new_claim  # type: ignore[method-assign]


@contextmanager
def unkept_skips() -> Iterator[None]:
    """Patch the solver to remember no one-pod decline and no bin found full (see the module doc)."""
    declined, room = Solver._declined, Solver._room

    def nothing_declined(self: Solver, cls: PodClass, variant: Variant, rkey: ReqKey) -> dict[int, object]:
        return {}

    def nothing_full(self: Solver, *args: object) -> list[Bin]:
        self.full.clear()
        return room(self, *args)  # type: ignore[arg-type]

    Solver._declined = nothing_declined  # type: ignore[assignment, method-assign]
    Solver._room = nothing_full  # type: ignore[assignment, method-assign]
    try:
        yield
    finally:
        Solver._declined = declined  # type: ignore[method-assign]
        Solver._room = room  # type: ignore[method-assign]
