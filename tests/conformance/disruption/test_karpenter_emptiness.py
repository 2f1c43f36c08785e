"""Karpenter v1.14.1 pkg/controllers/disruption/emptiness_test.go, ported case by case.

The Describe's NodePool (WhenEmpty, consolidateAfter 0s, budget 100%) is the builder's `general` pool with that
disruption block; its NodeClaims and Nodes (the fake provider's cheapest spot type with 32 CPU allocatable) are the
builder's m5.xlarge NodeClaims and Nodes, launched an hour ago. Karpenter's disruption controller (every method in
order, one command per reconcile) is nodewright's planner tick (`plan()` with every method); "the queue deletes the
NodeClaim" is "the tick decided it". Two README rows ("Disruption: where nodewright differs") shape the
assertions: one emptiness command for all the empty nodes is, in nodewright, one execution per empty node (so
where Karpenter's queue holds one command for N nodes, the tick holds N Empty decisions); and the 15 s validation
inside the controller is the workflow's ValidationDelay and IdentifyCandidate.

Karpenter's emptiness reads the NodeClaim's `Consolidatable` condition, which its NodeClaim disruption controller
sets once consolidateAfter has passed since the last pod event; nodewright's planner decides the same window
itself each tick (`candidates.consolidatable`, also written as the condition). So "a NodeClaim without (or with a
False) Consolidatable condition" is ported as "a NodeClaim whose consolidateAfter has not passed", the state in
which Karpenter's condition is absent or False.

The gauges `karpenter_nodepools_allowed_disruptions` and `karpenter_disruption_eligible_nodes` are, in nodewright,
the budgets' allowance (`PoolBudgets.allowance`) and the planner's per-method figures (`Plan.methods[].eligible`).
"""

from __future__ import annotations

from typing import Any

from cluster_builder import T0, Cluster, iso
from methods_kit import decide, disrupted, set_claim_condition

from nodewright.disruption.decision import EMPTY
from nodewright.disruption.plan import pool_budgets

FILE = "pkg/controllers/disruption/emptiness_test.go"
WHEN_EMPTY: dict[str, Any] = {
    "consolidationPolicy": "WhenEmpty",
    "consolidateAfter": "0s",
    "budgets": [{"nodes": "100%"}],
}


def emptiness_cluster(nodes: int = 2, budgets: str = "100%") -> Cluster:
    cluster = Cluster(now=T0)
    cluster.pool(disruption={**WHEN_EMPTY, "budgets": [{"nodes": budgets}]})
    for i in range(nodes):
        cluster.node(f"node-{i}")
    return cluster


def empties(cluster: Cluster) -> list[str]:
    """The NodeClaims the tick decided as Empty (each its own decision: one execution per empty node)."""
    decided = decide(cluster)
    assert all(len(d.candidates) == 1 for d in decided.decisions)
    return sorted(c.name for d in decided.decisions if d.reason == EMPTY for c in d.candidates)


def test_should_correctly_report_eligible_nodes() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Metrics"): It("should correctly report eligible nodes")."""
    cluster = emptiness_cluster(nodes=1)
    pod = cluster.pod("web-0", "node-0")
    figures = {m.method: m.eligible for m in decide(cluster).methods}
    assert figures["emptiness"] == 0
    cluster.docs.remove(pod)
    figures = {m.method: m.eligible for m in decide(cluster).methods}
    assert figures["emptiness"] == 1


def _budget_case(budget: str, allowed: int, deleted: int) -> None:
    cluster = emptiness_cluster(nodes=10, budgets=budget)
    state = cluster.state()
    assert pool_budgets(state).allowance("general", EMPTY).allowed == allowed
    assert len(empties(cluster)) == deleted


def test_should_allow_all_empty_nodes_to_be_disrupted() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Budgets"): It("should allow all empty nodes to be
    disrupted")."""
    _budget_case("100%", 10, 10)


def test_should_allow_no_empty_nodes_to_be_disrupted() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Budgets"): It("should allow no empty nodes to be
    disrupted")."""
    _budget_case("0%", 0, 0)


def test_should_only_allow_3_empty_nodes_to_be_disrupted() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Budgets"): It("should only allow 3 empty nodes to be
    disrupted")."""
    _budget_case("30%", 3, 3)


def _pools_case(budget: str, allowed: int, remaining: int) -> None:
    cluster = emptiness_cluster(nodes=0)
    for p in range(10):
        cluster.pool(
            f"pool-{p}",
            disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s", "budgets": [{"nodes": budget}]},
        )
        for i in range(3):
            cluster.node(f"node-{p}-{i}", pool=f"pool-{p}")
    budgets = pool_budgets(cluster.state())
    assert [budgets.allowance(f"pool-{p}", EMPTY).allowed for p in range(10)] == [allowed] * 10
    gone = empties(cluster)
    assert 30 - len(gone) == remaining
    for p in range(10):
        assert sum(1 for name in gone if name.startswith(f"claim-node-{p}-")) == allowed


def test_should_allow_2_nodes_from_each_nodepool_to_be_deleted() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Budgets"): It("should allow 2 nodes from each nodePool to
    be deleted") (50% of 3 nodes rounds up to 2)."""
    _pools_case("50%", 2, 10)


def test_should_allow_all_nodes_from_each_nodepool_to_be_deleted() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Budgets"): It("should allow all nodes from each nodePool
    to be deleted")."""
    _pools_case("100%", 3, 0)


def test_can_delete_empty_nodes() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Emptiness"): It("can delete empty nodes")."""
    assert empties(emptiness_cluster(nodes=1)) == ["claim-node-0"]


def test_can_delete_empty_and_drifted_nodes() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Emptiness"): It("can delete empty and drifted nodes").

    The node goes, as in Karpenter. Karpenter's eligible-nodes gauge counts it for drift too (every method's
    candidates are counted); nodewright's per-method figure counts only what a method still saw after the methods
    before it took their nodes, and emptiness runs first in both, so the node is Empty here."""
    cluster = emptiness_cluster(nodes=1)
    set_claim_condition(cluster, "node-0", "Drifted", "True", "NodePoolDrifted")
    decided = decide(cluster, drift={"claim-node-0": "NodePoolDrifted"})
    assert disrupted(decided) == ["claim-node-0"]
    assert [d.reason for d in decided.decisions] == [EMPTY]


def test_should_ignore_nodes_without_the_consolidatable_status_condition() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Emptiness"): It("should ignore nodes without the
    consolidatable status condition") (ported as: consolidateAfter has not passed since the last pod event, the
    state in which Karpenter's condition is absent; see the module docstring)."""
    cluster = emptiness_cluster(nodes=1)
    cluster.pool(disruption={**WHEN_EMPTY, "consolidateAfter": "30s"})
    cluster.find("NodeClaim", "claim-node-0")["status"]["lastPodEventTime"] = iso(T0 - 10)
    decided = decide(cluster)
    assert decided.decisions == []
    assert "consolidateAfter" in decided.skipped["claim-node-0"]


def test_should_ignore_nodes_with_the_karpenter_sh_do_not_disrupt_annotation() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Emptiness"): It("should ignore nodes with the
    karpenter.sh/do-not-disrupt annotation")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.find("Node", "node-0")["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "true"
    assert decide(cluster).decisions == []


def test_should_delete_nodes_with_the_karpenter_sh_do_not_disrupt_annotation_set_to_false() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Emptiness"): It("should delete nodes with the
    karpenter.sh/do-not-disrupt annotation set to false")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.find("Node", "node-0")["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "false"
    assert empties(cluster) == ["claim-node-0"]


def test_should_ignore_nodes_that_have_pods() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Emptiness"): It("should ignore nodes that have pods")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.pod("web-0", "node-0")
    assert decide(cluster).decisions == []


def test_should_ignore_nodes_with_the_consolidatable_status_condition_set_to_false() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Emptiness"): It("should ignore nodes with the
    consolidatable status condition set to false") (ported as: the node initialized 10 s ago under a 30 s
    consolidateAfter, the state in which Karpenter's condition is False; see the module docstring)."""
    cluster = emptiness_cluster(nodes=1)
    cluster.pool(disruption={**WHEN_EMPTY, "consolidateAfter": "30s"})
    set_claim_condition(cluster, "node-0", "Consolidatable", "False", "NotEmpty")
    set_claim_condition(cluster, "node-0", "Initialized", "True", at=T0 - 10)
    assert decide(cluster).decisions == []


def test_can_delete_multiple_empty_nodes() -> None:
    """emptiness_test.go Describe("Emptiness"): It("can delete multiple empty nodes") (Karpenter: one command for
    both; nodewright: one execution per empty node, README row "one emptiness command for all the empty nodes")."""
    assert empties(emptiness_cluster(nodes=2)) == ["claim-node-0", "claim-node-1"]


def test_considers_pending_pods_when_consolidating() -> None:
    """emptiness_test.go Describe("Emptiness"): It("considers pending pods when consolidating").

    The cheapest type with at least 64 CPU (Karpenter's largeCheapType) is, in the test catalog's amd64 types,
    c5.18xlarge; its 1-CPU pod is bound and a 62-CPU pod is pending (it needs this node). The pool consolidates
    WhenEmptyOrUnderutilized on on-demand capacity, so every method may look at the node: none removes or
    replaces it (without the pending pod, single-node consolidation would replace it by a small type)."""
    cluster = Cluster(now=T0)
    cluster.pool(
        disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"},
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        ],
    )
    cluster.node("node-large", "c5.18xlarge")
    cluster.pod("small-0", "node-large", cpu="1", memory="64Mi")
    cluster.pod("huge-0", cpu="62", memory="64Mi")
    decided = decide(cluster)
    assert decided.decisions == []


def test_will_consider_a_node_with_a_daemonset_pod_as_empty() -> None:
    """emptiness_test.go Describe("Emptiness"): It("will consider a node with a DaemonSet pod as empty")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.pod("agent-0", "node-0", owner="DaemonSet")
    assert empties(cluster) == ["claim-node-0"]


def test_will_consider_a_node_with_terminating_deployment_pods_as_empty() -> None:
    """emptiness_test.go Describe("Emptiness"): It("will consider a node with terminating Deployment pods as
    empty")."""
    cluster = emptiness_cluster(nodes=1)
    for i in range(3):
        cluster.pod(f"web-{i}", "node-0")["metadata"]["deletionTimestamp"] = iso(T0 - 5)
    assert empties(cluster) == ["claim-node-0"]


def test_will_not_consider_a_node_with_a_terminating_statefulset_pod_as_empty() -> None:
    """emptiness_test.go Describe("Emptiness"): It("will not consider a node with a terminating StatefulSet pod as
    empty")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.pod("db-0", "node-0", owner="StatefulSet")["metadata"]["deletionTimestamp"] = iso(T0 - 5)
    assert decide(cluster).decisions == []


def test_should_wait_for_the_node_ttl_for_empty_nodes_before_consolidating() -> None:
    """emptiness_test.go Describe("Emptiness"): It("should wait for the node TTL for empty nodes before
    consolidating").

    Karpenter's controller blocks on its validation timeout before the queue deletes the node. nodewright (README
    row "validation after the 15 s delay runs inside the controller"): the Empty command is marked for validation,
    so its workflow waits (ValidationDelay) and IdentifyCandidate checks the node again before anything is done."""
    cluster = emptiness_cluster(nodes=1)
    decided = decide(cluster)
    [command] = decided.commands(cluster.now)
    assert (command.nodeclaim, command.reason, command.validated) == ("claim-node-0", EMPTY, True)
    assert command.to_input()["validate"] is True


def test_should_not_consolidate_static_nodepool_nodes() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Static NodePool"): It("should not consolidate static
    NodePool nodes"): two empty nodes of a static pool of 2 replicas, each with a Consolidatable condition a user
    set, are candidates for no method."""
    cluster = Cluster(now=T0)
    doc = cluster.pool(disruption={"budgets": [{"nodes": "100%"}]})
    doc["spec"]["replicas"] = 2
    for i in range(2):
        cluster.node(f"node-{i}")
        set_claim_condition(cluster, f"node-{i}", "Consolidatable", "True")
    decided = decide(cluster)
    [static] = decided.static
    assert decided.decisions == [] and (static.launch, static.remove) == (0, ())
    assert all(m.eligible == 0 for m in decided.methods), decided.methods
    assert set(decided.skipped) == {"claim-node-0", "claim-node-1"}
    assert all("is static (spec.replicas)" in why for why in decided.skipped.values()), decided.skipped


# Karpenter sets the provisioner's per-node buffer pod counts by hand (cluster.UpdateBufferPodCounts); here a
# CapacityBuffer whose PodTemplate is pinned to a node (kubernetes.io/hostname) puts its virtual pods there, and the
# tick computes the same counts (`disruption.buffers`).


def _unconsolidatable(cluster: Cluster) -> dict[str, str]:
    return decide(cluster).unconsolidatable


def test_should_not_disrupt_a_node_that_hosts_virtual_buffer_pods() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Buffer pod protection"): It("should not disrupt a node that
    hosts virtual buffer pods")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.buffer("room", replicas=3, node="node-0")
    assert empties(cluster) == []
    assert cluster.state().buffer_placement().hosts == {"node-0": 3}


def test_should_disrupt_a_node_once_buffer_pods_are_cleared() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Buffer pod protection"): It("should disrupt a node once
    buffer pods are cleared")."""
    cluster = emptiness_cluster(nodes=1)
    docs = cluster.buffer("room", replicas=2, node="node-0")
    assert empties(cluster) == []
    for doc in docs:
        cluster.docs.remove(doc)
    assert empties(cluster) == ["claim-node-0"]


def test_should_only_protect_the_specific_node_with_buffer_pods_not_others() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Buffer pod protection"): It("should only protect the
    specific node with buffer pods, not others")."""
    cluster = emptiness_cluster(nodes=2)
    cluster.buffer("room", replicas=1, node="node-0")
    assert empties(cluster) == ["claim-node-1"]


def test_should_not_consider_a_node_with_real_pods_and_buffer_pods_as_empty() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Buffer pod protection"): It("should not consider a node with
    real pods AND buffer pods as empty")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.pod("web-0", "node-0")
    cluster.buffer("room", replicas=2, node="node-0")
    assert empties(cluster) == []


def test_should_protect_multiple_nodes_that_each_host_buffer_pods() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Buffer pod protection"): It("should protect multiple nodes
    that each host buffer pods")."""
    cluster = emptiness_cluster(nodes=2)
    cluster.buffer("room-a", replicas=2, node="node-0")
    cluster.buffer("room-b", replicas=3, node="node-1")
    assert empties(cluster) == []
    assert _unconsolidatable(cluster) == {
        "claim-node-0": 'Node "node-0" has buffer pods',
        "claim-node-1": 'Node "node-1" has buffer pods',
    }


def test_should_not_protect_a_node_with_zero_buffer_pod_count() -> None:
    """emptiness_test.go Describe("Emptiness") Context("Buffer pod protection"): It("should not protect a node with
    zero buffer pod count")."""
    cluster = emptiness_cluster(nodes=1)
    cluster.buffer("room", replicas=0, node="node-0")
    assert empties(cluster) == ["claim-node-0"]
