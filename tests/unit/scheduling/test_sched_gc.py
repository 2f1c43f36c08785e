"""solve() pauses the cycle collector: it must restore the caller's setting and leave no cycles behind."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from builders import affinity_term, by_name, node, pods, run, small_catalog, spread

from nodewright.model.objects import HOSTNAME_LABEL, ZONE_LABEL, Pod
from nodewright.scheduling import solver as solver_module
from nodewright.scheduling.templates import TemplateCache


def _workload() -> list[Pod]:
    web = pods("web", 6, labels={"app": "web"}, topology_spread=(spread(ZONE_LABEL, app="web"),))
    cache = pods("cache", 3, labels={"app": "cache"}, pod_affinity=(affinity_term(HOSTNAME_LABEL, app="web"),))
    solo = pods("solo", 3, labels={"app": "solo"}, pod_anti_affinity=(affinity_term(HOSTNAME_LABEL, app="solo"),))
    return web + cache + solo + pods("plain", 5, cpu="3")


@pytest.mark.parametrize("enabled", [True, False])
def test_solve_restores_the_callers_collector_setting(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        run(_workload())
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_solve_creates_no_reference_cycles() -> None:
    # The pause is free only because a solve's garbage is freed by reference counting alone.
    existing = node("node-1", by_name(small_catalog(), "m5.xlarge"), bound=pods("bound", 1, labels={"app": "web"}))
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        results = run(_workload(), nodes=[existing])
        assert results.nodeclaims
        del results
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_what_the_solve_built_is_freed_before_the_collector_comes_back() -> None:
    # Alive when the collector is turned back on, the NodePools' templates (when the caller keeps none) would all be
    # young objects for the collection that a solve's allocations make due: about a twentieth of a 10,000-pod solve.
    built: list[weakref.ref[object]] = []
    alive_at_exit: list[bool] = []
    cache_type, pause = solver_module.TemplateCache, solver_module.paused_cycle_collector

    def cache() -> TemplateCache:
        made = cache_type()
        built.append(weakref.ref(made))
        return made

    @contextmanager
    def paused() -> Iterator[None]:
        with pause():
            yield
            alive_at_exit.append(any(ref() is not None for ref in built))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(solver_module, "TemplateCache", cache)
        patch.setattr(solver_module, "paused_cycle_collector", paused)
        assert run(_workload()).nodeclaims
    assert len(built) == 1 and alive_at_exit == [False]
