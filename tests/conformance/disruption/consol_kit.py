"""Builders shared by the port of Karpenter's consolidation_test.go (test_karpenter_consolidation.py).

Karpenter's suite runs against fake.InstanceTypesAssorted(); here the shipped catalog of `cluster_builder` (m5, c5,
r5, m6g, t3 in us-east-1a/b/c, real prices) stands in, with the same price order:
    mostExpensiveInstance (on-demand, 32 CPU)      -> m5.8xlarge on-demand (31.85 CPU allocatable)
    mostExpensiveSpotInstance (spot, 32 CPU)       -> m5.8xlarge spot
    leastExpensiveInstance (a type nothing beats)  -> m5.large in a pool restricted to on-demand m5 (`M5_ON_DEMAND`)
Karpenter's BeforeEach marks every NodeClaim Consolidatable; here nodes are an hour old with their pods bound an hour
ago and `consolidateAfter: 0s`, so they are Consolidatable by nodewright's own rule.
"""

from __future__ import annotations

from typing import Any

from cluster_builder import Cluster

from nodewright.disruption.plan import Plan, plan
from nodewright.disruption.state import ClusterState

ALL = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}
MOST_EXPENSIVE = "m5.8xlarge"
LABELS = {"app": "test"}


def cluster(**disruption: Any) -> Cluster:
    """Karpenter's BeforeEach: one NodePool, WhenEmptyOrUnderutilized, consolidateAfter 0s, budget 100%."""
    found = Cluster()
    found.pool(disruption={**ALL, **disruption})
    return found


def rs_pod(c: Cluster, name: str, node: str = "", cpu: str = "100m", **kwargs: Any) -> dict[str, Any]:
    """test.Pod owned by a ReplicaSet (Karpenter's `rs`), with the suite's `labels`."""
    kwargs.setdefault("labels", LABELS)
    return c.pod(name, node, cpu=cpu, memory="128Mi", **kwargs)


def decide(c: Cluster, **state: Any) -> tuple[Plan, dict[str, Any], ClusterState]:
    snapshot = c.state(**state)
    decided = plan(snapshot, {})
    return decided, decided.to_json(snapshot), snapshot
