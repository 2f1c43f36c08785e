"""The new NodeClaims of one run by shape (their requirement set and NodePool) and by the type they are sized for.

A class's batch looks for places in many lists (one per request, domain, requirement set and tolerations), and
each new list would otherwise visit every new claim of the run, most of them in another zone or NodePool, to learn
that their shape refuses the batch for good (`Claims.refuses_for_good`), that they would lose their type, or that
they wait for a label. A run opens thousands of claims of a few hundred shapes in a few NodePools: a new list asks
each NodePool, and each shape and type of the NodePools that may take the batch, once, and reads only the claims
of those that may take it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from operator import attrgetter

from nodewright.scheduling.bins import Bin
from nodewright.scheduling.pools import PoolContext, ReqKey

Shape = tuple[ReqKey, int]  # a new claim's requirement-set number and the id of its NodePool's context
placement_order = attrgetter("order")  # as `claims.placement_order`


class ClaimShapes:
    """The new claims of a run that have not grown, per NodePool, requirement set and instance type it is sized for
    (which only growing changes), each list in placement order.

    Kept up to date by `Claims`: a claim is added when opened (`opened`), moves when its requirements narrow
    (`reshaped`) and leaves when it grows into a larger type (`grew`), since a grown claim keeps its room for the
    pods that needed it. Grouped by NodePool first: a batch that no claim of a NodePool can take (a taint it does
    not tolerate, a conflict with the NodePool's requirements) skips all of that NodePool's shapes at once. Then by
    requirement set and type: claims a batch would narrow must keep their type (`Claims.fits_now`), which claims
    of one requirement set and type do or do not alike.
    """

    def __init__(self) -> None:
        self.by_pool: dict[int, tuple[PoolContext, dict[tuple[ReqKey, int], list[Bin]]]] = {}

    def opened(self, b: Bin) -> None:
        """A claim just opened: the last in placement order, so it goes at the end of its shape's list."""
        self._shapes(b).setdefault((b.rkey, id(b.chosen)), []).append(b)

    def reshaped(self, b: Bin, old: ReqKey) -> None:
        """Claim b, of requirement set `old` until now, has the shape its fields say (same NodePool)."""
        self._remove(b, old)
        bisect.insort(self._shapes(b).setdefault((b.rkey, id(b.chosen)), []), b, key=placement_order)

    def grew(self, b: Bin) -> None:
        """Claim b grew into a larger type: no batch's list takes it in any more (see `Solver._fill`)."""
        self._remove(b, b.rkey)

    def _shapes(self, b: Bin) -> dict[tuple[ReqKey, int], list[Bin]]:
        assert b.pool is not None, "a new claim has a NodePool"
        entry = self.by_pool.get(id(b.pool))
        if entry is None:
            entry = self.by_pool[id(b.pool)] = (b.pool, {})
        return entry[1]

    def _remove(self, b: Bin, rkey: ReqKey) -> None:
        shapes = self._shapes(b)
        key = (rkey, id(b.chosen))
        bins = shapes[key]
        del bins[bisect.bisect_left(bins, b.order, key=placement_order)]
        if not bins:
            del shapes[key]

    def taking(
        self,
        pool_refused: dict[int, bool],
        pool_refuses: Callable[[PoolContext], bool],
        refused: dict[Shape, bool],
        refuses: Callable[[Bin], bool],
        fits: Callable[[Bin], bool | None],
    ) -> tuple[list[Bin], list[Bin]]:
        """The claims that may take the batch now, and those that wait for a label (see `Claims.may_take_later`),
        each in placement order; the others refuse it for good.

        Neither list is filtered by room: the caller's walk (`Solver._fill`) drops a claim without room for good
        when it reaches it, as it drops any full place (room only shrinks), and a small batch is placed long before
        the walk reaches most of them; a waiting claim is parked, and comes back to the walk (to be dropped there if
        full) only once its requirements narrow. Filtering here visited every claim of every shape for each new
        list, most of which no walk ever reaches.

        The batch's answers are kept per NodePool id (`pool_refused`: whether every claim of the NodePool refuses
        it, asked of `pool_refuses`) and per shape (`refused`, asked of `refuses` with one claim of the shape), and
        filled here for those not answered yet. `fits`, asked of one claim of each requirement set and type the
        shapes do not refuse: True when such claims may take the batch now, None when they wait for a label, False
        when narrowing them to the batch's requirements would lose their type."""
        found: list[Bin] = []
        waiting: list[Bin] = []
        for pool_id, (ctx, shapes) in self.by_pool.items():
            all_refuse = pool_refused.get(pool_id)
            if all_refuse is None:
                all_refuse = pool_refused[pool_id] = pool_refuses(ctx)
            if all_refuse:
                continue
            for (rkey, _), bins in shapes.items():
                shape = (rkey, pool_id)
                never = refused.get(shape)
                if never is None:
                    never = refused[shape] = refuses(bins[0])
                if never:
                    continue
                fit = fits(bins[0])
                if fit:
                    found.extend(bins)
                elif fit is None:
                    waiting.extend(bins)
        found.sort(key=placement_order)
        waiting.sort(key=placement_order)
        return found, waiting
