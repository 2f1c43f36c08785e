"""The consolidation simulation sees nodewright's starting nodes (registered, not initialized, maybe not Ready) as
Karpenter's scheduler sees every state node: pods that would land there make the move unsafe, with Karpenter's
"would schedule against uninitialized nodeclaim/..., node/..." reason, and initialized nodes are tried first."""

from __future__ import annotations

from cluster_builder import Cluster

from nodewright.disruption.plan import plan

POOL = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def cluster_with_pool() -> Cluster:
    """On-demand m5.large and t3.medium only (no cheaper replacement to tempt the planner)."""
    cluster = Cluster()
    types = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "t3.medium"]}
    cluster.pool(disruption=POOL, requirements=[*ON_DEMAND, types])
    return cluster


def test_pods_that_would_land_on_a_starting_node_not_ready_yet_block_the_move_with_karpenters_reason() -> None:
    cluster = cluster_with_pool()
    cluster.node("node-0", "m5.large", ready=False, initialized=False)
    cluster.node("node-1", "m5.large")
    cluster.pod("web-0", "node-1", cpu="100m", memory="100Mi")
    decided = plan(cluster.state(), {})
    assert decided.decisions == []
    why = decided.unconsolidatable["claim-node-1"]
    assert "web/web-0: would schedule against uninitialized nodeclaim/claim-node-0, node/node-0" in why


def test_initialized_nodes_are_tried_before_starting_ones_whatever_their_names() -> None:
    cluster = cluster_with_pool()
    cluster.node("node-a-starting", "m5.large", initialized=False)  # Ready, its NodeClaim not Initialized
    cluster.node("node-b-initialized", "m5.large")
    cluster.node("node-small", "t3.medium")
    cluster.pod("small-0", "node-small", cpu="100m", memory="100Mi")
    for node in ("node-a-starting", "node-b-initialized"):
        cluster.pod(f"{node}-pod", node, cpu="100m", memory="5Gi")  # more than a t3.medium holds
    [decision] = plan(cluster.state(), {}).decisions
    assert [c.name for c in decision.candidates] == ["claim-node-small"] and decision.replacement is None
