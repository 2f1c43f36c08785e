"""A warm planner keeps its `TemplateCache` (NodePools prepared against the catalog, nodes' labels as requirements)
from tick to tick: a tick after the cluster changed must decide exactly as a cold container's tick of that cluster."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from nodewright.adapters.informer import Informers
from nodewright.adapters.kubernetes_cluster import KubernetesCluster
from nodewright.adapters.memory import InMemoryState, InMemoryWorkflows
from nodewright.service.plan import PlannerPorts, tick
from tests.bench import planner_scale as bench
from tests.bench.consolidation import on_demand_cluster

NODES = bench.fleet(40)


def _server(change: Callable[[dict[str, list[dict[str, Any]]]], None] = lambda lists: None) -> bench.ListServer:
    lists = bench.documents(NODES)
    change(lists)
    return bench.ListServer(lists)


def _ports(server: bench.ListServer) -> PlannerPorts:
    cluster = KubernetesCluster(server, informers=Informers())  # type: ignore[arg-type]
    catalog = bench.BenchCatalog(on_demand_cluster().instance_types)
    return PlannerPorts(cluster, bench.BenchCloud(NODES), InMemoryWorkflows(), bench.Clock(), InMemoryState(), catalog)  # type: ignore[arg-type]


def _commands(ports: PlannerPorts) -> list[Any]:
    return list(tick(ports).decisions["commands"])


def _then(kept: PlannerPorts, server: bench.ListServer) -> PlannerPorts:
    """The warm container's ports (its caches) reading `server`, with a fresh lease table and workflows."""
    cluster = KubernetesCluster(server, informers=Informers())  # type: ignore[arg-type]
    return dataclasses.replace(kept, cluster=cluster, workflows=InMemoryWorkflows(), state=InMemoryState())


def _pool(*extra: str) -> Callable[[dict[str, list[dict[str, Any]]]], None]:
    """The NodePool may take every node at once (so consolidation gets to replace a node, not only delete some) and
    launch the fleet's types and `extra`: the replacements are of `extra`."""

    def change(lists: dict[str, list[dict[str, Any]]]) -> None:
        pool = lists["/apis/nodewright.io/v1/nodepools"][0]
        pool["spec"]["disruption"]["budgets"] = [{"nodes": "100%"}]
        for requirement in pool["spec"]["template"]["spec"]["requirements"]:
            if requirement["key"] == "node.kubernetes.io/instance-type":
                requirement["values"] = [*bench.TYPES, *extra]

    return change


def _heavier_daemonsets(lists: dict[str, list[dict[str, Any]]]) -> None:
    """A small NodePool as `_pool`, and every DaemonSet asks for 2 CPUs (a new node has less room for pods)."""
    _pool("m5.2xlarge", "m5.xlarge")(lists)
    for daemonset in lists["/apis/apps/v1/daemonsets"]:
        for container in daemonset["spec"]["template"]["spec"]["containers"]:
            container["resources"]["requests"]["cpu"] = "2"


def test_the_templates_are_kept_from_tick_to_tick() -> None:
    kept = _ports(_server(_pool("m5.2xlarge")))
    tick(kept)
    cached = kept.templates
    assert cached._prepared, "the tick's simulations prepared no NodePool in the kept cache"
    tick(_then(kept, _server(_pool("m5.2xlarge"))))
    assert kept.templates is cached


def test_a_warm_tick_after_a_nodepool_changed_decides_as_a_cold_one() -> None:
    kept = _ports(_server(_pool("m5.2xlarge")))
    before = _commands(kept)
    warm = _commands(_then(kept, _server(_pool("r5.2xlarge"))))
    cold = _commands(_ports(_server(_pool("r5.2xlarge"))))
    assert cold != before, "the change does not change the decisions: the test would not see a stale template"
    assert warm == cold


def test_a_warm_tick_after_the_daemonsets_changed_decides_as_a_cold_one() -> None:
    kept = _ports(_server(_pool("m5.2xlarge", "m5.xlarge")))
    before = _commands(kept)
    warm = _commands(_then(kept, _server(_heavier_daemonsets)))
    cold = _commands(_ports(_server(_heavier_daemonsets)))
    assert cold != before, "the change does not change the decisions: the test would not see a stale template"
    assert warm == cold


def test_a_warm_planner_keeps_the_parses_and_pod_facts_of_the_cluster_it_read_last() -> None:
    """The parse and pod-fact caches hold the last tick's versions, no more (a deleted pod's go) and no fewer (the
    planner reads the whole cluster each tick; a fixed bound made a 10,000-node cluster parse again every tick)."""

    def without_a_pod(lists: dict[str, list[dict[str, Any]]]) -> None:
        _pool("m5.2xlarge")(lists)
        lists["/api/v1/pods"].pop()

    kept = _ports(_server(_pool("m5.2xlarge")))
    tick(kept)
    parsed, facts = dict(kept.parsed_pods), dict(kept.pod_facts)
    tick(_then(kept, _server(without_a_pod)))
    assert len(kept.parsed_pods) == len(parsed) - 1 and len(kept.pod_facts) == len(facts) - 1
    assert all(kept.parsed_pods[key] is parsed[key] for key in kept.parsed_pods)  # the rest not parsed again
