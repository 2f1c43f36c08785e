"""The provisioner's batch pauses the cycle collector from its read to the end of its launches (a cold container's
first read decodes thousands of Nodes and NodeClaims, and the collector's passes over them were 40 % of that batch's
CPU): the pause must cover the reads, which run in threads, give the caller its setting back, and be free, i.e. a
batch's garbage goes by reference counting alone."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from nodewright.adapters.informer import Informers
from nodewright.adapters.kubernetes_cluster import KubernetesCluster
from nodewright.adapters.memory import InMemoryState
from nodewright.ports import FleetView, ProvisioningView
from nodewright.scheduling import TemplateCache
from nodewright.service.batch import parse_batch
from nodewright.service.provision import ProvisionResult, WarmBatch, provision
from tests.bench import planner_scale as bench
from tests.bench.consolidation import on_demand_cluster


class _WatchedCluster(KubernetesCluster):
    """The real adapter over the bench's server, noting whether the cycle collector runs while each list is read
    (on the read's own threads)."""

    enabled: list[tuple[str, bool]]

    def read_for_provisioning(self) -> ProvisioningView:
        self.enabled.append(("read_for_provisioning", gc.isenabled()))
        return super().read_for_provisioning()

    def nodeclaims(self) -> Sequence[Mapping[str, Any]]:
        self.enabled.append(("nodeclaims", gc.isenabled()))
        return super().nodeclaims()


class _WatchedLaunches(bench.BatchCloud):
    """EC2 noting whether the cycle collector runs while a launch thread's CreateFleet is in flight: when it is
    sent, and when its answer comes (a moment later, as from EC2; by then the batch has created its NodeClaims)."""

    enabled: list[bool]

    def create_fleet(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        self.enabled.append(gc.isenabled())
        time.sleep(0.2)
        self.enabled.append(gc.isenabled())
        return super().create_fleet(request)


def _batches() -> tuple[_WatchedCluster, _WatchedLaunches, Callable[[str], ProvisionResult]]:
    """A 40-node cluster read through the real adapter with informers, its EC2, and a function running one batch of
    20 pending pods in the same container (its parses, NodePool preparations and warm state kept)."""
    nodes = bench.fleet(40)
    pending = bench.pending_pods(20)
    cluster = _WatchedCluster(bench.ListServer(bench.documents(nodes), pending), informers=Informers())  # type: ignore[arg-type]
    cluster.enabled = []
    cloud = _WatchedLaunches(nodes)
    cloud.enabled = []
    catalog = bench.BenchCatalog(on_demand_cluster().instance_types)
    hints = [{k: p["metadata"][k] for k in ("namespace", "name", "uid", "resourceVersion")} for p in pending]
    parsed: dict[Any, Any] = {}
    templates, warm = TemplateCache(), WarmBatch()

    def run(batch_id: str) -> ProvisionResult:
        batch = parse_batch({"batch_id": batch_id, "cluster": bench.CLUSTER, "pods": hints})
        return provision(
            batch,
            cluster,
            cloud,  # type: ignore[arg-type]
            InMemoryState(),
            bench.Clock(),
            catalog,
            templates=cloud,  # type: ignore[arg-type]
            parsed_pods=parsed,
            nodepool_templates=templates,
            warm=warm,
        )

    return cluster, cloud, run


def test_the_collector_is_paused_from_the_batch_read_to_its_launches() -> None:
    cluster, cloud, run = _batches()
    was = gc.isenabled()
    gc.enable()
    try:
        result = run("cold")
        assert result.launched, "the batch launched nothing: the plan did not run"
        assert {name for name, _ in cluster.enabled} == {"read_for_provisioning", "nodeclaims"}
        assert not any(enabled for _, enabled in cluster.enabled)
        # The launch threads' CreateFleet too: the collector's one pass over the read's objects comes after them.
        assert cloud.enabled and not any(cloud.enabled)
        assert gc.isenabled()
    finally:
        gc.enable() if was else gc.disable()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_batch_gives_the_caller_its_collector_setting_back(enabled: bool) -> None:
    _, _, run = _batches()
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        run("cold")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


class _WatchedFleet(KubernetesCluster):
    enabled: list[bool]

    def read_fleet(self) -> FleetView:
        self.enabled.append(gc.isenabled())
        return super().read_fleet()


def test_a_registration_payload_reads_the_fleet_with_the_collector_paused() -> None:
    # A batch without pods (nodes registered): every NodeClaim and Node read consistently and parsed.
    nodes = bench.fleet(40)
    cluster = _WatchedFleet(bench.ListServer(bench.documents(nodes)))  # type: ignore[arg-type]
    cluster.enabled = []
    cloud = bench.BatchCloud(nodes)
    catalog = bench.BenchCatalog(on_demand_cluster().instance_types)
    batch = parse_batch({"batch_id": "registered", "cluster": bench.CLUSTER, "pods": [], "nodes": [nodes[0].name]})
    was = gc.isenabled()
    gc.collect()
    gc.enable()
    try:
        provision(batch, cluster, cloud, InMemoryState(), bench.Clock(), catalog)  # type: ignore[arg-type]
        assert cluster.enabled == [False]
        assert gc.isenabled()
        gc.disable()
        assert gc.collect() == 0
    finally:
        gc.enable() if was else gc.disable()


def test_cold_and_warm_batches_leave_no_reference_cycles() -> None:
    _, _, run = _batches()
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for label in ("cold", "warm"):
            result = run(label)
            assert result.launched, f"the {label} batch launched nothing"
            del result
            assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
