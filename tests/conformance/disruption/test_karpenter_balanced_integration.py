"""Karpenter v1.14.1 pkg/controllers/disruption/balanced_integration_test.go (Describe("Balanced Consolidation")),
ported case by case.

Karpenter reconciles its disruption controller once and reads the queue's commands; here `plan()` decides one
tick on a built cluster, and its decisions are the commands. Every NodePool is `consolidationPolicy: Balanced`,
budget 100 %, consolidateAfter 0s, as Karpenter's BeforeEach makes it.

Karpenter's fake instance types map to real ones: `mostExpensiveInstance` (32 vCPU allocatable) is m5.4xlarge,
whose one small pod fits on far cheaper types; `leastExpensiveInstance` filled by eight 3500m pods is m5.8xlarge in
an on-demand m5 pool (no cheaper type holds 28 vCPU); Karpenter's `onDemandInstances` cheapest / middle / dearest
are m5.xlarge / m5.4xlarge / m5.8xlarge. What happens after the command (the replacement made Ready, the candidate
deleted) is the workflow's, ported in test_karpenter_queue.py: here the decision is asserted, which node goes and
what replaces it.

Karpenter also asserts its ConsolidationApproved events ("k: 2", ">= threshold 0.50"): nodewright publishes no
approval event (an approved move is a command of the tick's decisions; a rejected one an Unconsolidatable event
with the fractions), so those assertions are left out and the decision that the event reports is asserted.
"""

from __future__ import annotations

from typing import Any

from balanced_kit import ALL
from cluster_builder import M5_ON_DEMAND, Cluster

from nodewright.disruption.decision import EMPTINESS, MULTI_NODE, Decision
from nodewright.disruption.plan import plan

FILE = "pkg/controllers/disruption/balanced_integration_test.go"
MOST_EXPENSIVE = "m5.4xlarge"


def balanced(
    cluster: Cluster | None = None, name: str = "general", budgets: list[dict[str, str]] | None = None, **spec: Any
) -> Cluster:
    """A Balanced NodePool (the template's `spec` as given) in `cluster`."""
    cluster = cluster or Cluster()
    disruption: dict[str, Any] = {"consolidationPolicy": "Balanced", **ALL}
    if budgets is not None:
        disruption["budgets"] = budgets
    cluster.pool(name, disruption=disruption, **spec)
    return cluster


def decisions(cluster: Cluster) -> list[Decision]:
    return plan(cluster.state(), {}).decisions


def nodes(decision: Decision) -> list[str]:
    return [c.member.node for c in decision.candidates]


# ------------------------------------------------------------------------------------------------------ Single-Node


def test_should_approve_replacing_an_oversized_node() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Single-Node"):
    It("should approve replacing an oversized node").

    Karpenter's replacement leaves the candidate's instance type out. nodewright keeps every offering strictly
    cheaper than the candidate (README, "Disruption: where nodewright differs": offerings strictly cheaper), so
    m5.4xlarge bought as spot may stay; the offering the node runs on (m5.4xlarge on demand) may not."""
    cluster = balanced()
    cluster.node("big", MOST_EXPENSIVE)
    cluster.pod("web-0", "big", cpu="500m")
    [decision] = decisions(cluster)
    assert nodes(decision) == ["big"] and decision.replacement is not None
    offered = {(o.instance_type, o.capacity_type) for o in decision.replacement.options}
    assert (MOST_EXPENSIVE, "on-demand") not in offered
    assert all(o.price < decision.price for o in decision.replacement.options)
    assert 0 < decision.replacement_price < decision.price


def test_should_reject_replacing_a_well_packed_node() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Single-Node"):
    It("should reject replacing a well-packed node")."""
    cluster = balanced(requirements=M5_ON_DEMAND)
    cluster.node("packed", "m5.8xlarge")
    for i in range(8):
        cluster.pod(f"web-{i}", "packed", cpu="3500m")
    decided = plan(cluster.state(), {})
    assert decided.decisions == []
    assert decided.unconsolidatable["claim-packed"] == "Can't replace with a cheaper node"


# ------------------------------------------------------------------------------------------------------- Multi-Node


def test_should_approve_consolidating_multiple_underutilized_nodes() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Multi-Node"):
    It("should approve consolidating multiple underutilized nodes")."""
    cluster = balanced()
    for name in ("a", "b", "c"):
        cluster.node(name, MOST_EXPENSIVE)
        cluster.pod(f"{name}-web-0", name, cpu="1")
    [decision] = decisions(cluster)
    assert decision.method == MULTI_NODE and len(decision.candidates) >= 2
    new = 1 if decision.replacement is not None else 0
    assert 3 - len(decision.candidates) + new < 3  # fewer nodes once it is done


# ---------------------------------------------------------------------------------------------------------- Budgets


def test_should_block_disruption_when_budget_is_0() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Budgets"):
    It("should block disruption when budget is 0%")."""
    cluster = balanced(budgets=[{"nodes": "0%"}])
    cluster.node("big", MOST_EXPENSIVE)
    cluster.pod("web-0", "big", cpu="500m")
    decided = plan(cluster.state(), {})
    assert decided.decisions == []
    assert "NodePool general" in decided.blocked["claim-big"]


# -------------------------------------------------------------------------------------------------- Priority Ordering


def test_should_consolidate_empty_nodes_before_non_empty_nodes_when_budget_is_limited() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Priority Ordering"):
    It("should consolidate empty nodes before non-empty nodes when budget is limited")."""
    cluster = balanced(budgets=[{"nodes": "1"}])
    cluster.node("empty", MOST_EXPENSIVE)
    cluster.node("underutilized", MOST_EXPENSIVE)
    cluster.pod("web-0", "underutilized", cpu="500m")
    [decision] = decisions(cluster)
    assert nodes(decision) == ["empty"] and decision.method == EMPTINESS


# -------------------------------------------------------------------------------------------- Decision and Savings


def test_should_choose_delete_when_pods_fit_on_existing_nodes() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Decision and Savings"):
    It("should choose delete when pods fit on existing nodes").

    Node A (m5.8xlarge) holds one 1-CPU pod; node B, the same type, thirty, with room for A's pod. An on-demand m5
    pool, so that no cheaper type stands in for B's share (multi-node would only replace both by B's own type)."""
    cluster = balanced(requirements=M5_ON_DEMAND)
    cluster.node("a", "m5.8xlarge")
    cluster.pod("a-web-0", "a", cpu="1")
    cluster.node("b", "m5.8xlarge")
    for i in range(30):
        cluster.pod(f"b-web-{i}", "b", cpu="1")
    deletes = [d for d in decisions(cluster) if d.replacement is None]
    assert deletes, "expected at least one delete command"
    assert nodes(deletes[0]) == ["a"]
    assert deletes[0].savings_per_hour == deletes[0].price == 1.536  # the whole source node


def test_should_choose_replace_when_pods_need_a_new_cheaper_node() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Decision and Savings"):
    It("should choose replace when pods need a new cheaper node")."""
    cluster = balanced()
    cluster.node("a", MOST_EXPENSIVE)
    cluster.pod("a-web-0", "a", cpu="2")
    [decision] = decisions(cluster)
    assert decision.replacement is not None
    assert 0 < decision.savings_per_hour < decision.price


# ------------------------------------------------------------------------------------------ Ratio Sort in Multi-Node


def test_should_select_highest_ratio_candidates_first_with_heterogeneous_prices_and_pod_counts() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Ratio Sort in Multi-Node"):
    It("should select highest-ratio candidates first when nodes have heterogeneous prices and pod counts").

    A: m5.8xlarge with ten 100m pods (1.536 / 11); B: m5.4xlarge with one (0.768 / 2, the highest ratio);
    C: m5.xlarge with eight (0.192 / 9, the lowest)."""
    cluster = balanced(requirements=M5_ON_DEMAND)
    for name, instance_type, pods in (("a", "m5.8xlarge", 10), ("b", "m5.4xlarge", 1), ("c", "m5.xlarge", 8)):
        cluster.node(name, instance_type)
        for i in range(pods):
            cluster.pod(f"{name}-web-{i}", name, cpu="100m")
    found = decisions(cluster)
    assert found, "expected at least one consolidation command"
    names = nodes(found[0])
    assert "b" in names
    if "c" in names:
        assert names.index("b") < names.index("c")


# ------------------------------------------------------------------------------------------- Mixed-Policy NodePools


def test_should_apply_scoring_to_balanced_pools_while_non_balanced_pools_consolidate_normally() -> None:
    """balanced_integration_test.go Describe("Balanced Consolidation") Context("Mixed-Policy NodePools"):
    It("should apply scoring to Balanced pools while non-Balanced pools consolidate normally").

    One oversized node in a Balanced pool and one in a WhenEmptyOrUnderutilized pool: both go (here in one
    multi-node move across the pools, the Balanced pool credited its share of the savings)."""
    cluster = balanced(name="balanced")
    cluster.pool("default", disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", **ALL})
    cluster.node("balanced-node", MOST_EXPENSIVE, pool="balanced")
    cluster.pod("balanced-web-0", "balanced-node", cpu="500m")
    cluster.node("default-node", MOST_EXPENSIVE, pool="default")
    cluster.pod("default-web-0", "default-node", cpu="500m")
    found = decisions(cluster)
    assert found, "expected at least one consolidation command"
    gone = {n for d in found for n in nodes(d)}
    assert gone == {"balanced-node", "default-node"}
