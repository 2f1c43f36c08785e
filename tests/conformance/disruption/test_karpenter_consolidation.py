"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, ported case by case: the Contexts "Events",
"Metrics", "Budgets", "Replace", "Multi-NodeClaim", "Node Lifetime Consideration", "Topology Consideration",
"Parallelization", "Preferences", "MinValuesPolicy", "Buffer Pods" and "Static NodePool". ("Delete" and "TTL" are
ported in test_karpenter_consolidation_delete.py, "Reserved Capacity" in test_karpenter_reserved_consolidation.py.)

Each case drives nodewright's planner (`disruption.plan.plan`, the tick the planner Lambda and `nodewright disrupt`
run) on a cluster built by `cluster_builder.Cluster`; `consol_kit` maps Karpenter's fixtures:
- fake.InstanceTypesAssorted() -> the shipped catalog's m5, c5, r5, m6g and t3 types in us-east-1a/b/c (real
  prices); mostExpensiveInstance / mostExpensiveSpotInstance (32 CPU) -> m5.8xlarge on-demand / spot;
  leastExpensiveInstance (nothing cheaper holds its pods) -> m5.large in a pool restricted to on-demand m5.
  Tests that set `cloudProvider.InstanceTypes` or offering prices pass a repriced or reduced catalog
  (`consol_kit.priced`), keeping Karpenter's price order.
- `Consolidatable` (set by Karpenter's BeforeEach): nodes an hour old, pods bound an hour ago, consolidateAfter 0s.
- Karpenter's queue executes a command; here the tick's decisions are the commands (`Plan.decisions`), and "the
  nodes left" are the nodes no decision takes. Where Karpenter reconciles again after executing, the next tick is
  planned with the decided NodeClaims locked (being disrupted).
- Karpenter's Unconsolidatable events: `Plan.unconsolidatable` (the planner publishes one event per entry, on the
  NodeClaim and its Node). `karpenter_nodepools_allowed_disruptions`: `PoolBudgets.allowance`. EligibleNodes:
  `Plan.methods[*].eligible`. Karpenter's command validation (15 s later): `disruption.validation.validate`.
- README "Disruption: where nodewright differs" rows followed here: one execution per empty node (emptiness decides
  each empty node on its own), one consolidation per tick.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cluster_builder import M5_ON_DEMAND, Cluster, instance_types
from consol_kit import ALL, LABELS, MOST_EXPENSIVE, cluster, decide, priced, removed, rs_pod

from nodewright.disruption.consolidation import MultiNodeConsolidation, SingleNodeConsolidation
from nodewright.disruption.decision import EMPTINESS, MULTI_NODE, SINGLE_NODE, UNDERUTILIZED
from nodewright.disruption.methods import Emptiness, Method
from nodewright.disruption.plan import plan, pool_budgets
from nodewright.disruption.validation import validate

FILE = "pkg/controllers/disruption/consolidation_test.go"
BUDGET_NODES = 10


def _node(c: Cluster, name: str, spot: bool = False, instance_type: str = MOST_EXPENSIVE, **kwargs: Any) -> None:
    c.node(name, instance_type, capacity_type="spot" if spot else "on-demand", **kwargs)


# ------------------------------------------------------------------------------------------------------- Events


def test_should_not_fire_an_event_for_consolidationdisabled_when_the_nodepool_has_consolidation_set_to_wheneo() -> None:
    """consolidation_test.go Context("Events"): It("should not fire an event for ConsolidationDisabled when the
    NodePool has consolidation set to WhenEmptyOrUnderutilized")."""
    c = cluster()
    _node(c, "node")
    decided, _, _ = decide(c)
    assert decided.unconsolidatable == {}


def test_should_fire_an_event_for_consolidationdisabled_when_the_nodepool_has_consolidation_set_to_whenempty() -> None:
    """consolidation_test.go Context("Events"): It("should fire an event for ConsolidationDisabled when the NodePool
    has consolidation set to WhenEmpty")."""
    c = cluster(consolidationPolicy="WhenEmpty", consolidateAfter="1m")
    _node(c, "node")
    rs_pod(c, "pod-0", "node")
    decided, _, _ = decide(c)
    assert decided.decisions == []
    assert decided.unconsolidatable == {
        "claim-node": 'NodePool "general" has consolidation policy WhenEmpty, but node is not empty'
    }


def test_should_fire_an_event_for_consolidationdisabled_when_the_nodepool_has_consolidateafter_set_to_never() -> None:
    """consolidation_test.go Context("Events"): It("should fire an event for ConsolidationDisabled when the NodePool
    has consolidateAfter set to 'Never'")."""
    c = cluster(consolidateAfter="Never")
    _node(c, "node")
    rs_pod(c, "pod-0", "node")
    decided, _, _ = decide(c)
    assert decided.decisions == []
    assert decided.unconsolidatable == {"claim-node": 'NodePool "general" has consolidation disabled'}


def _unlabelled(label: str) -> tuple[Any, Cluster]:
    c = cluster()
    _node(c, "node")
    for doc in (c.find("Node", "node"), c.find("NodeClaim", "claim-node")):
        del doc["metadata"]["labels"][label]
    rs_pod(c, "pod-0", "node")
    decided, _, _ = decide(c)
    return decided, c


def test_should_fire_an_event_when_a_candidate_does_not_have_a_resolvable_instance_type() -> None:
    """consolidation_test.go Context("Events"): It("should fire an event when a candidate does not have a resolvable
    instance type")."""
    decided, _ = _unlabelled("node.kubernetes.io/instance-type")
    assert decided.decisions == []
    assert decided.unconsolidatable == {"claim-node": 'Instance Type "" not found'}


def test_should_fire_an_event_when_a_candidate_does_not_have_the_capacity_type_label() -> None:
    """consolidation_test.go Context("Events"): It("should fire an event when a candidate does not have the capacity
    type label")."""
    decided, _ = _unlabelled("karpenter.sh/capacity-type")
    assert decided.decisions == []
    assert decided.unconsolidatable == {"claim-node": 'Node does not have label "karpenter.sh/capacity-type"'}


def test_should_fire_an_event_when_a_candidate_does_not_have_the_zone_label() -> None:
    """consolidation_test.go Context("Events"): It("should fire an event when a candidate does not have the zone
    label")."""
    decided, _ = _unlabelled("topology.kubernetes.io/zone")
    assert decided.decisions == []
    assert decided.unconsolidatable == {"claim-node": 'Node does not have label "topology.kubernetes.io/zone"'}


# ------------------------------------------------------------------------------------------------------ Metrics


def test_should_correctly_report_eligible_nodes() -> None:
    """consolidation_test.go Context("Metrics"): It("should correctly report eligible nodes"). EligibleNodes
    {reason=underutilized} is the consolidation methods' `eligible` figure of the tick."""
    c = cluster()
    _node(c, "node")
    pod = rs_pod(c, "pod-0", "node", annotations={"karpenter.sh/do-not-disrupt": "true"})

    def eligible() -> int:
        decided, _, _ = decide(c)
        return max(m.eligible for m in decided.methods if m.reason == UNDERUTILIZED)

    assert eligible() == 0
    pod["metadata"]["annotations"] = {}
    assert eligible() == 1


def _invalidated(c: Cluster, method: str, change: str) -> str:
    """Decide, apply one of Karpenter's validator options to the cluster, and validate the command again."""
    decided, _, snapshot = decide(c)
    [decision] = [d for d in decided.decisions if d.method == method]
    command = plan(snapshot, {}).commands(snapshot.now)[decided.decisions.index(decision)]
    names = [x.member.node for x in decision.candidates]
    if change == "budget":
        c.find("NodePool", "general")["spec"]["disruption"]["budgets"] = [{"nodes": "0"}]
    else:
        if change == "churn":  # Karpenter's churn(): a 100m pod bound to the first node, which is also nominated
            rs_pod(c, "churn-0", names[0], bound_ago=1)
        # nominated(): the provisioner just nominated the nodes for pending pods
        for i, name in enumerate(names if change == "nomination" else names[:1]):
            c.pod(f"nominated-{i}", cpu="100m")
            claim = c.find("NodeClaim", f"claim-{name}")
            claim["metadata"]["annotations"]["nodewright.io/pods"] = json.dumps([f"web/nominated-{i}"])
    return validate(command, c.state())


VALIDATIONS = ("budget", "churn", "nomination")
VALIDATION_IDS = ("blocked_by_budgets", "pod_churn", "candidate_nominated")


def _young(c: Cluster, name: str, **kwargs: Any) -> None:
    # A node initialized a minute ago: a nomination to it holds for two minutes (NOMINATION_GRACE_SECONDS), as
    # Karpenter's nomination window does.
    _node(c, name, age=60, **kwargs)


@pytest.mark.parametrize("change", VALIDATIONS, ids=VALIDATION_IDS)
def test_should_correctly_report_invalidated_commands_for_emptiness_disruption(change: str) -> None:
    """consolidation_test.go Context("Metrics"): DescribeTable("should correctly report invalidated commands for
    emptiness disruption"), its three Entry: "when a candidate is blocked by budgets", "when candidates are filtered
    out due to pod churn", "when candidates are filtered out due to candidate being nominated". nodewright's
    FailedValidations is the execution ending `invalidated`, with validate()'s reason."""
    c = cluster()
    _young(c, "node")
    why = _invalidated(c, EMPTINESS, change)
    assert why, "the command should no longer hold"
    expected = {"budget": "budget", "churn": "nominated", "nomination": "nominated"}[change]
    assert expected in why


@pytest.mark.parametrize("change", VALIDATIONS, ids=VALIDATION_IDS)
def test_should_correctly_report_invalidated_commands_for_multi_node_disruption(change: str) -> None:
    """consolidation_test.go Context("Metrics"): DescribeTable("should correctly report invalidated commands for multi
    node disruption"), its three Entry (budgets, pod churn, nomination)."""
    c = cluster()
    _young(c, "node")
    _young(c, "node2")
    rs_pod(c, "pod-0", "node")
    rs_pod(c, "pod-1", "node2")
    why = _invalidated(c, MULTI_NODE, change)
    expected = {"budget": "budget", "churn": "nominated", "nomination": "nominated"}[change]
    assert expected in why


@pytest.mark.parametrize("change", VALIDATIONS, ids=VALIDATION_IDS)
def test_should_correctly_report_invalidated_commands_for_single_node_disruption(change: str) -> None:
    """consolidation_test.go Context("Metrics"): DescribeTable("should correctly report invalidated commands for
    single node disruption"), its three Entry (budgets, pod churn, nomination)."""
    c = cluster()
    _young(c, "node")
    rs_pod(c, "pod-0", "node")
    why = _invalidated(c, SINGLE_NODE, change)
    expected = {"budget": "budget", "churn": "nominated", "nomination": "nominated"}[change]
    assert expected in why


# ------------------------------------------------------------------------------------------------------ Budgets


def _budget_cluster(nodes: str, pools: int = 0, pod_cpu: str = "", per_pool: int = 3) -> Cluster:
    """The Context's BeforeEach: 10 NodeClaims of the most expensive type (or 3 in each of 10 NodePools), each with
    one pod of `pod_cpu` when given (empty otherwise)."""
    c = cluster(budgets=[{"nodes": nodes}])
    names: list[tuple[str, str]] = []
    if pools:
        for p in range(pools):
            c.pool(f"pool-{p}", disruption={**ALL, "budgets": [{"nodes": nodes}]})
            names += [(f"p{p}-node-{i}", f"pool-{p}") for i in range(per_pool)]
    else:
        names = [(f"node-{i}", "general") for i in range(BUDGET_NODES)]
    for name, pool in names:
        _node(c, name, pool=pool)
        if pod_cpu:
            rs_pod(c, f"{name}-pod", name, cpu=pod_cpu)
    return c


def _allowed(c: Cluster, pool: str, reason: str = "Empty") -> int:
    return pool_budgets(c.state()).allowance(pool, reason).allowed


def test_should_only_allow_3_empty_nodes_to_be_disrupted() -> None:
    """consolidation_test.go Context("Budgets"): It("should only allow 3 empty nodes to be disrupted"). README row "one
    execution per empty node": Karpenter's one command of 3 nodes is 3 emptiness decisions here."""
    c = _budget_cluster("30%")
    assert _allowed(c, "general") == 3
    decided, _, _ = decide(c)
    assert [d.method for d in decided.decisions] == [EMPTINESS] * 3
    assert BUDGET_NODES - len(decided.decisions) == 7


def test_should_allow_all_empty_nodes_to_be_disrupted() -> None:
    """consolidation_test.go Context("Budgets"): It("should allow all empty nodes to be disrupted")."""
    c = _budget_cluster("100%")
    assert _allowed(c, "general") == 10
    decided, _, _ = decide(c)
    assert [d.method for d in decided.decisions] == [EMPTINESS] * 10


def test_should_allow_no_empty_nodes_to_be_disrupted() -> None:
    """consolidation_test.go Context("Budgets"): It("should allow no empty nodes to be disrupted")."""
    c = _budget_cluster("0%")
    assert _allowed(c, "general") == 0
    decided, _, _ = decide(c)
    assert decided.decisions == []


def test_should_only_allow_3_nodes_to_be_deleted_in_multi_node_consolidation_delete() -> None:
    """consolidation_test.go Context("Budgets"): It("should only allow 3 nodes to be deleted in multi node
    consolidation delete")."""
    c = _budget_cluster("30%", pod_cpu="100m")
    decided, _, _ = decide(c)
    [decision] = decided.decisions
    assert decision.method == MULTI_NODE and decision.replacement is None and len(decision.candidates) == 3


def test_should_only_allow_3_nodes_to_be_deleted_in_single_node_consolidation_delete() -> None:
    """consolidation_test.go Context("Budgets"): It("should only allow 3 nodes to be deleted in single node
    consolidation delete"). Karpenter reconciles five times; here ticks run until one decides nothing, each with the
    NodeClaims decided before locked (being disrupted, so counted against the budget)."""
    c = _budget_cluster("30%", pod_cpu="15")
    taken: list[str] = []
    for _ in range(5):
        decided = plan(c.state(locked=taken), {})
        taken += [x.name for d in decided.decisions for x in d.candidates]
    assert len(taken) == 3 and len(set(taken)) == 3


def _each_pool(nodes: str, allowed: int, deleted: int) -> None:
    c = _budget_cluster(nodes, pools=10)
    assert all(_allowed(c, f"pool-{p}") == allowed for p in range(10))
    decided, _, _ = decide(c)
    assert all(d.method == EMPTINESS for d in decided.decisions)
    assert len(decided.decisions) == deleted
    per_pool = {d.candidates[0].member.nodepool for d in decided.decisions}
    assert len(per_pool) == (10 if deleted else 0)


def test_should_allow_2_nodes_from_each_nodepool_to_be_deleted() -> None:
    """consolidation_test.go Context("Budgets"): It("should allow 2 nodes from each nodePool to be deleted")."""
    _each_pool("50%", 2, 20)


def test_should_allow_all_nodes_from_each_nodepool_to_be_deleted() -> None:
    """consolidation_test.go Context("Budgets"): It("should allow all nodes from each nodePool to be deleted")."""
    _each_pool("100%", 3, 30)


def test_should_allow_no_nodes_from_each_nodepool_to_be_deleted() -> None:
    """consolidation_test.go Context("Budgets"): It("should allow no nodes from each nodePool to be deleted")."""
    _each_pool("0%", 0, 0)


def _held_by_budget(c: Cluster, names: int, method: Method) -> None:
    """Karpenter's `IsConsolidated()` is false: the method alone decides nothing, and every candidate is held by its
    budget (nodewright keeps no "consolidated" memo: each tick decides again, so the assertion is that the budget,
    not the consolidation, held them)."""
    decided = plan(c.state(), {}, methods=(method,))
    assert decided.decisions == []
    assert len(decided.blocked) == names and all("budget" in why for why in decided.blocked.values())
    assert decided.unconsolidatable == {}


def test_should_not_mark_empty_node_consolidated_if_the_candidates_cant_be_disrupted_due_to_budgets_with_one_pool() -> None:
    """consolidation_test.go Context("Budgets"): It("should not mark empty node consolidated if the candidates can't be
    disrupted due to budgets with one nodepool")."""
    _held_by_budget(_budget_cluster("0%"), BUDGET_NODES, Emptiness())


def test_should_not_mark_empty_node_consolidated_if_all_candidates_cant_be_disrupted_due_to_budgets_with_many() -> None:
    """consolidation_test.go Context("Budgets"): It("should not mark empty node consolidated if all candidates can't
    be disrupted due to budgets with many nodepools")."""
    _held_by_budget(_budget_cluster("0%", pools=10), 30, Emptiness())


def test_should_not_mark_multi_node_consolidated_if_the_candidates_cant_be_disrupted_due_to_budgets_with_one_pool() -> None:
    """consolidation_test.go Context("Budgets"): It("should not mark multi node consolidated if the candidates can't
    be disrupted due to budgets with one nodepool")."""
    _held_by_budget(_budget_cluster("0%", pod_cpu="1"), BUDGET_NODES, MultiNodeConsolidation())


def test_should_not_mark_multi_node_consolidated_if_all_candidates_cant_be_disrupted_due_to_budgets_with_many() -> None:
    """consolidation_test.go Context("Budgets"): It("should not mark multi node consolidated if all candidates can't
    be disrupted due to budgets with many nodepools")."""
    _held_by_budget(_budget_cluster("0%", pools=10, pod_cpu="1"), 30, MultiNodeConsolidation())


def test_should_not_mark_single_node_consolidated_if_the_candidates_cant_be_disrupted_due_to_budgets_with_one() -> None:
    """consolidation_test.go Context("Budgets"): It("should not mark single node consolidated if the candidates can't
    be disrupted due to budgets with one nodepool")."""
    _held_by_budget(_budget_cluster("0%", pod_cpu="1"), BUDGET_NODES, SingleNodeConsolidation())


def test_should_not_mark_single_node_consolidated_if_all_candidates_cant_be_disrupted_due_to_budgets_with_many() -> None:
    """consolidation_test.go Context("Budgets"): It("should not mark single node consolidated if all candidates can't
    be disrupted due to budgets with many nodepools")."""
    _held_by_budget(_budget_cluster("0%", pools=10, pod_cpu="1"), 30, SingleNodeConsolidation())
