"""Karpenter's Emptiness publishes 'NodePool "X" has consolidation disabled' (Unconsolidatable) for every candidate
of a pool with consolidateAfter: Never, empty or not; nodewright's Emptiness does the same, not only skip them."""

from __future__ import annotations

from cluster_builder import Cluster

from nodewright.disruption.methods import Emptiness
from nodewright.disruption.plan import plan


def test_emptiness_reports_every_node_of_a_pool_with_consolidation_disabled() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"})
    cluster.node("node-empty", "m5.large")
    cluster.node("node-busy", "m5.large")
    cluster.pod("web-0", "node-busy", cpu="100m", memory="100Mi")
    decided = plan(cluster.state(), {}, [Emptiness()])
    assert decided.decisions == []
    assert decided.unconsolidatable == {
        "claim-node-empty": 'NodePool "general" has consolidation disabled',
        "claim-node-busy": 'NodePool "general" has consolidation disabled',
    }
