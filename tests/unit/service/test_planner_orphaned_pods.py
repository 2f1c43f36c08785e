"""Pods still bound to a Node that was deleted (the pod garbage collector removes them a little later) are no
problem of the cluster's: the planner's tick counts them, reports no invalid object for them and decides as it
would without them."""

from __future__ import annotations

import copy

from nodewright.adapters.informer import Informers
from nodewright.adapters.kubernetes_cluster import KubernetesCluster
from nodewright.adapters.memory import InMemoryState, InMemoryWorkflows
from nodewright.service.plan import PlannerPorts, TickResult, tick
from tests.bench import planner_scale as bench
from tests.bench.consolidation import on_demand_cluster


def _tick(drop_last_node: bool) -> TickResult:
    """One cold tick on 12 scaled-in nodes; with `drop_last_node`, the last Node and its NodeClaim deleted and its
    pods left bound to it, terminating, as a deleted node's pods are until the pod garbage collector comes."""
    nodes = bench.fleet(12)
    lists = bench.documents(nodes)
    if drop_last_node:
        gone = lists["/api/v1/nodes"].pop()["metadata"]["name"]
        lists["/apis/nodewright.io/v1/nodeclaims"] = [
            c for c in lists["/apis/nodewright.io/v1/nodeclaims"] if c["status"].get("nodeName") != gone
        ]
        for pod in lists["/api/v1/pods"]:
            if pod["spec"]["nodeName"] == gone:
                pod["metadata"]["deletionTimestamp"] = "2027-01-06T11:00:00Z"
        nodes = nodes[:-1]
    cluster = KubernetesCluster(bench.ListServer(copy.deepcopy(lists)), informers=Informers())  # type: ignore[arg-type]
    return tick(
        PlannerPorts(
            cluster,  # type: ignore[arg-type]
            bench.BenchCloud(nodes),
            InMemoryWorkflows(),
            bench.Clock(),
            InMemoryState(),
            bench.BenchCatalog(on_demand_cluster().instance_types),  # type: ignore[arg-type]
        )
    )


def test_pods_of_a_deleted_node_are_counted_not_reported_and_change_no_decision() -> None:
    without = _tick(drop_last_node=False)
    orphaned = _tick(drop_last_node=True)
    assert orphaned.orphaned_pods > 0 and without.orphaned_pods == 0
    assert orphaned.to_json()["orphaned_pods"] == orphaned.orphaned_pods
    assert not [p for p in orphaned.problems if "is not defined in the inputs" in p], orphaned.problems
    assert orphaned.problems == without.problems
    assert orphaned.decisions["commands"] and orphaned.decisions["commands"] == without.decisions["commands"]
