"""The planner's tick pauses the cycle collector (a warm container holds millions of parsed objects, which its full
passes walk to free nothing): the pause is free only while a tick's garbage goes by reference counting alone, and
the caller's setting must come back."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Sequence

import pytest

from nodewright.adapters.informer import Informers
from nodewright.adapters.kubernetes_cluster import KubernetesCluster
from nodewright.adapters.memory import InMemoryState, InMemoryWorkflows
from nodewright.ports import Instance
from nodewright.service.plan import PlannerPorts, tick
from tests.bench import planner_scale as bench
from tests.bench.consolidation import on_demand_cluster


def _ticks() -> Callable[[], PlannerPorts]:
    """A cluster of 40 scaled-in nodes read through the real adapter (consolidation has moves to simulate): ports
    for each tick of one warm container, with a fresh lease table and workflows so every tick decides anew."""
    nodes = bench.fleet(40)
    server = bench.ListServer(bench.documents(nodes))
    cluster = KubernetesCluster(server, informers=Informers())  # type: ignore[arg-type]
    cloud = bench.BenchCloud(nodes)
    catalog = bench.BenchCatalog(on_demand_cluster().instance_types)
    kept = PlannerPorts(cluster, cloud, InMemoryWorkflows(), bench.Clock(), InMemoryState(), catalog)  # type: ignore[arg-type]

    def ports() -> PlannerPorts:
        return dataclasses.replace(kept, workflows=InMemoryWorkflows(), state=InMemoryState())

    return ports


@pytest.mark.parametrize("enabled", [True, False])
def test_a_tick_gives_the_caller_its_collector_setting_back(enabled: bool) -> None:
    ports = _ticks()
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        tick(ports())
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_a_tick_cold_and_warm_leaves_no_reference_cycles() -> None:
    ports = _ticks()
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(2):  # the cold tick lists, the warm one follows the watches
            result = tick(ports())
            assert result.decisions["commands"], "no disruption decided: the simulations did not run"
            del result
            assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


class _WatchedCloud(bench.BenchCloud):
    """EC2 that notes whether the cycle collector runs when the tick asks for the instances (after the cluster is
    read and loaded: the drift, reconciliation and garbage-collection steps)."""

    enabled: list[bool]

    def describe_instances(self, instance_ids: Sequence[str]) -> Sequence[Instance]:
        self.enabled.append(gc.isenabled())
        return super().describe_instances(instance_ids)

    def capacity_instances(self) -> Sequence[Instance]:
        self.enabled.append(gc.isenabled())
        return super().capacity_instances()


def test_the_collector_is_paused_for_the_whole_tick() -> None:
    ports = _ticks()()
    cloud = _WatchedCloud(bench.fleet(40))
    cloud.enabled = []
    was = gc.isenabled()
    gc.enable()
    try:
        tick(dataclasses.replace(ports, cloud=cloud))  # type: ignore[arg-type]
        assert cloud.enabled and not any(cloud.enabled)
        assert gc.isenabled()
    finally:
        gc.enable() if was else gc.disable()
