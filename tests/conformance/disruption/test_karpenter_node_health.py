"""Karpenter v1.14.1 pkg/controllers/node/health/suite_test.go, ported case by case.

Karpenter's health controller reconciles one Node: past its repair policy's toleration it annotates the NodeClaim's
termination timestamp and deletes it, unless more than 20 % of the NodePool's nodes are unhealthy. nodewright's
planner decides the same each tick (`disruption.repair`, then `plan()` before every other method), and its tick
writes the annotation and deletes the NodeClaim (tests/unit/service/test_repair_service.py). So "the NodeClaim has
a deletionTimestamp" is "the tick repairs it" (in `Repairs.due` and a forceful `Unhealthy` command), the annotation
is the repair's `terminate_at`, and "RequeueAfter" (nodewright re-reads the cluster every tick instead) is when the
toleration ends (`Unhealthy.due`). The suite's fake cloud provider has one policy, `BadNode=False` for 30 minutes;
the cases that go through `plan()` use the AWS provider's policies (Ready=False for 30 minutes), which `plan()` uses.
"""

from __future__ import annotations

from typing import Any

import pytest
from cluster_builder import Cluster, iso

from nodewright.disruption.commands import UNHEALTHY
from nodewright.disruption.plan import REPAIR, plan
from nodewright.disruption.repair import TERMINATION_TIMESTAMP_ANNOTATION, RepairPolicy, Repairs, repairs, unhealthy

FILE = "pkg/controllers/node/health/suite_test.go"
MINUTE = 60.0
FAKE_POLICIES = (RepairPolicy("BadNode", "False", 30 * 60),)
STANDALONE = (
    "a NodeClaim of no NodePool (Karpenter counts every node of the cluster for it): nodewright requires the "
    "karpenter.sh/nodepool label on a NodeClaim and reports one without it as invalid, so every repair is counted "
    "against its NodePool"
)


def condition(cluster: Cluster, node: str, kind: str, status: str, since: float) -> None:
    conditions: list[dict[str, Any]] = cluster.find("Node", node)["status"]["conditions"]
    conditions.append({"type": kind, "status": status, "lastTransitionTime": iso(since)})


def one_node(kind: str = "BadNode", status: str = "False", ago: float = 60 * MINUTE, **node: Any) -> Cluster:
    """The suite's BeforeEach: a NodePool and one NodeClaim with its Node; the condition set `ago` before now."""
    cluster = Cluster()
    cluster.pool()
    cluster.node("node-a", **node)
    condition(cluster, "node-a", kind, status, cluster.now - ago)
    return cluster


def health(cluster: Cluster) -> Repairs:
    return repairs(cluster.state().fleet, cluster.now, FAKE_POLICIES)


def repaired(found: Repairs) -> list[str]:
    return [r.member.nodeclaim for r in found.due]


# ------------------------------------------------------------------------------------------------ Reconciliation


def test_should_delete_nodes_that_are_unhealthy_by_the_cloud_provider() -> None:
    """Describe("Node Health") Context("Reconciliation"): It("should delete nodes that are unhealthy by the cloud
    provider")."""
    assert repaired(health(one_node())) == ["claim-node-a"]


def test_should_not_delete_node_when_unhealthy_type_does_not_match_cloud_provider_passed_in_value() -> None:
    """Context("Reconciliation"): It("should not delete node when unhealthy type does not match cloud provider passed
    in value")."""
    assert repaired(health(one_node(kind="FakeHealthyNode"))) == []


def test_should_not_delete_node_when_health_status_does_not_match_cloud_provider_passed_in_value() -> None:
    """Context("Reconciliation"): It("should not delete node when health status does not match cloud provider passed
    in value")."""
    assert repaired(health(one_node(status="True"))) == []


def test_should_not_delete_node_when_health_duration_is_not_reached() -> None:
    """Context("Reconciliation"): It("should not delete node when health duration is not reached")."""
    found = health(one_node(ago=20 * MINUTE))
    assert repaired(found) == [] and "claim-node-a" in found.waiting


def test_should_set_annotation_termination_grace_period_when_force_termination_is_started() -> None:
    """Context("Reconciliation"): It("should set annotation termination grace period when force termination is
    started")."""
    cluster = one_node()
    [repair] = health(cluster).due
    assert repair.terminate_at == cluster.now


def test_should_not_respect_termination_grace_period_if_set_on_the_nodepool() -> None:
    """Context("Reconciliation"): It("should not respect termination grace period if set on the nodepool"): a
    termination timestamp two hours ahead is replaced by now."""
    later = iso(Cluster().now + 120 * MINUTE)
    cluster = one_node(claim_annotations={TERMINATION_TIMESTAMP_ANNOTATION: later})
    [repair] = health(cluster).due
    assert repair.terminate_at == cluster.now


def test_should_not_update_termination_grace_period_if_set_before_the_current_time() -> None:
    """Context("Reconciliation"): It("should not update termination grace period if set before the current time")."""
    earlier = Cluster().now - 3 * MINUTE
    cluster = one_node(claim_annotations={TERMINATION_TIMESTAMP_ANNOTATION: iso(earlier)})
    [repair] = health(cluster).due
    assert repair.terminate_at == earlier


def test_should_return_the_requeue_interval_for_the_condition_closest_to_its_termination_duration() -> None:
    """Context("Reconciliation"): It("should return the requeue interval for the condition closest to its
    terminationDuration"): of BadNode (60 minutes) and ValidUnhealthyCondition (30 minutes), both 27 minutes old,
    the second is due first, in 3 minutes."""
    cluster = one_node(ago=27 * MINUTE)
    condition(cluster, "node-a", "ValidUnhealthyCondition", "False", cluster.now - 27 * MINUTE)
    policies = (RepairPolicy("BadNode", "False", 60 * 60), RepairPolicy("ValidUnhealthyCondition", "False", 30 * 60))
    found = repairs(cluster.state().fleet, cluster.now, policies)
    assert repaired(found) == []
    [member] = cluster.state().fleet
    due = unhealthy(member.node_conditions, policies)
    assert due is not None and (due.condition, due.due - cluster.now) == ("ValidUnhealthyCondition", 3 * MINUTE)


def test_should_return_the_requeue_interval_for_the_time_between_now_and_when_the_nodeclaim_termination_time() -> None:
    """Context("Reconciliation"): It("should return the requeue interval for the time between now and when the
    nodeClaim termination time")."""
    cluster = one_node(ago=27 * MINUTE)
    found = health(cluster)
    assert repaired(found) == []
    assert "BadNode=False for 27m0s (toleration 30m0s)" in found.waiting["claim-node-a"]


# ------------------------------------------------------------------------------------------ Forceful termination


def test_should_ignore_node_disruption_budgets() -> None:
    """Context("Forceful termination"): It("should ignore node disruption budgets") (a budget of 0 nodes)."""
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "0"}]})
    cluster.node("node-a")
    condition(cluster, "node-a", "Ready", "False", cluster.now - 60 * MINUTE)
    [command] = plan(cluster.state(), {}).repair_commands(cluster.now)
    assert (command.nodeclaim, command.reason, command.forceful) == ("claim-node-a", UNHEALTHY, True)


def test_should_ignore_do_not_disrupt_on_a_node() -> None:
    """Context("Forceful termination"): It("should ignore do-not-disrupt on a node")."""
    cluster = Cluster()
    cluster.pool()
    cluster.node("node-a", annotations={"karpenter.sh/do-not-disrupt": "true"})
    condition(cluster, "node-a", "Ready", "False", cluster.now - 60 * MINUTE)
    [command] = plan(cluster.state(), {}).repair_commands(cluster.now)
    assert command.nodeclaim == "claim-node-a"


def ten_nodes() -> Cluster:
    """Ten NodeClaims and Nodes of one NodePool, the first three BadNode=False for an hour."""
    cluster = Cluster()
    cluster.pool()
    for i in range(10):
        cluster.node(f"node-{i}")
        if i < 3:
            condition(cluster, f"node-{i}", "BadNode", "False", cluster.now - 60 * MINUTE)
    return cluster


def test_should_ignore_unhealthy_nodes_if_more_then_20_percent_of_the_nodes_are_unhealthy_in_a_nodepool() -> None:
    """Context("Forceful termination"): It("should ignore unhealthy nodes if more then 20% of the nodes are unhealthy
    in a nodepool") (Karpenter requeues in 5 minutes; nodewright looks again at the next tick)."""
    found = health(ten_nodes())
    assert repaired(found) == [] and {"claim-node-0", "claim-node-1", "claim-node-2"} == set(found.held)
    assert found.unhealthy_pools == {"general": (3, 10)}


@pytest.mark.skip(reason=STANDALONE)
def test_should_ignore_unhealthy_nodes_if_more_then_20_percent_of_the_nodes_are_unhealthy_in_a_cluster() -> None:
    """Context("Forceful termination"): It("should ignore unhealthy nodes if more then 20% of the nodes are unhealthy
    in a cluster")."""


def test_should_consider_round_up_when_there_is_a_low_number_of_nodes_for_a_nodepool() -> None:
    """Context("Forceful termination"): It("should consider round up when there is a low number of nodes for a
    nodepool"): one of three (33 %) is repaired, since 20 % of 3 rounds up to 1."""
    cluster = Cluster()
    cluster.pool()
    for i in range(3):
        cluster.node(f"node-{i}")
    condition(cluster, "node-0", "BadNode", "False", cluster.now - 60 * MINUTE)
    assert repaired(health(cluster)) == ["claim-node-0"]


# ---------------------------------------------------------------------------------------------------- Metrics


def test_should_fire_a_karpenter_nodeclaims_disrupted_total_metric_when_unhealthy() -> None:
    """Context("Metrics"): It("should fire a karpenter_nodeclaims_disrupted_total metric when unhealthy"): the
    counter is, in nodewright, the tick's per-method figures (published as the planner's metrics) and the command's
    reason and NodePool."""
    cluster = Cluster()
    cluster.pool()
    cluster.node("node-a")
    condition(cluster, "node-a", "Ready", "False", cluster.now - 60 * MINUTE)
    decided = plan(cluster.state(), {})
    [figures] = [m for m in decided.methods if m.method == REPAIR]
    assert (figures.reason, figures.decisions) == (UNHEALTHY, 1)
    [entry] = [c for c in decided.to_json(cluster.state())["commands"] if c["method"] == REPAIR]
    assert (entry["nodepool"], entry["reason"]) == ("general", UNHEALTHY)
