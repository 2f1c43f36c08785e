"""A NodeClaim whose instance is terminating (InstanceTerminating=True) is neither a node of its pool nor a
disruption in progress for the budget (Karpenter's BuildDisruptionBudgetMapping)."""

from __future__ import annotations

from cluster_builder import Cluster

from nodewright.disruption.commands import DRIFTED, EMPTY, UNDERUTILIZED
from nodewright.disruption.plan import pool_budgets


def test_a_ready_node_whose_instance_is_terminating_does_not_raise_the_pools_node_count() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "10%"}]})
    for i in range(10):
        cluster.node(f"n{i}", "m5.large")
    cluster.node("going", "m5.large", conditions=[{"type": "InstanceTerminating", "status": "True"}])
    budgets = pool_budgets(cluster.state())
    # 10% of 10 nodes is 1; counting the terminating one, 10% of 11 rounds up to 2.
    assert {budgets.allowance("general", r).allowed for r in (DRIFTED, EMPTY, UNDERUTILIZED)} == {1}
