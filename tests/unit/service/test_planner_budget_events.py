"""A budget that allows no disruption reports once, on its NodePool, as Karpenter's
`NodePoolBlockedForDisruptionReason` does: "No allowed disruptions for disruption reason <reason> due to blocking
budget", at most once a minute per NodePool and reason. The nodes it holds back get no DisruptionBlocked event of
their own (at 3,000 nodes that was about 6,000 events a tick, new whenever the message's count changed); the tick's
report still says why each was held."""

from __future__ import annotations

from test_planner_reservations import running_on_demand, ticks

from nodewright.adapters.memory import InMemoryCluster

BLOCKED = "No allowed disruptions for disruption reason {} due to blocking budget"


def _blocked(cluster: InMemoryCluster) -> list[tuple[str, str]]:
    return [(e.pod, e.message) for e in cluster.events if e.reason == "DisruptionBlocked"]


def _empty_node_under(budget: str) -> InMemoryCluster:
    cluster, cloud, state, clock, _, _ = running_on_demand()
    [pool] = [v for k, v in cluster.objects.items() if k[0] == "NodePool"]
    pool["spec"]["disruption"]["budgets"] = [{"nodes": budget}]
    del cluster.objects[("Pod", "web", "web-0")]
    result = ticks(cluster, cloud, state, clock)
    assert result.started == [] if budget == "0" else result.started, result
    return cluster


def test_a_zero_budget_reports_on_its_nodepool_and_not_on_the_node_it_holds() -> None:
    cluster = _empty_node_under("0")
    pool = next(k[2] for k in cluster.objects if k[0] == "NodePool")
    found = _blocked(cluster)
    assert (f"nodepool/{pool}", BLOCKED.format("Empty")) in found, found
    assert all(subject.startswith("nodepool/") for subject, _ in found), found
    # Three ticks ten minutes apart: the first registers and initializes the node, each of the other two holds it
    # back, and each of those reports once (a new minute each time).
    assert len([m for s, m in found if m == BLOCKED.format("Empty")]) == 2


def test_a_budget_that_allows_disruption_reports_nothing() -> None:
    cluster = _empty_node_under("100%")
    assert _blocked(cluster) == []
