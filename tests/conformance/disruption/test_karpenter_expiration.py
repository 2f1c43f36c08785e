"""Karpenter v1.14.1 pkg/controllers/nodeclaim/expiration/suite_test.go, ported case by case.

Karpenter's expiration controller deletes a NodeClaim once `spec.expireAfter` has passed since its creation
(registered or not); nodewright's planner decides it in its `Expiration` method (a forceful `Expired` command,
one execution per node and 10-minute window), so "ExpectNotFound(nodeClaim)" is "the tick decides an Expired
command for it" and "ExpectExists" is "no command". The suite's NodeClaim (`test.NodeClaimAndNode`, expireAfter
30s) is the builder's m5.xlarge NodeClaim; the fake clock's steps are the cluster's age. Karpenter's
`karpenter_nodeclaims_disrupted_total{reason="expired"}` counter is, in nodewright, the planner's per-method figures
(`Plan.methods`: the expiration method's decisions, published as the planner's metrics) and the command's reason
and NodePool: those are asserted instead.
"""

from __future__ import annotations

import copy

from cluster_builder import T0, Cluster, instance_types
from methods_kit import EXPIRATION_ONLY, decide, disrupted, unregister

from nodewright.disruption.commands import EXPIRED
from nodewright.disruption.plan import plan
from nodewright.disruption.state import cluster_state

FILE = "pkg/controllers/nodeclaim/expiration/suite_test.go"


def expired_cluster(age: float = 60.0, expire_after: str = "30s", capacity_type: str = "on-demand") -> Cluster:
    """The Describe's NodeClaim and Node, `age` seconds after the NodeClaim's creation."""
    cluster = Cluster(now=T0)
    cluster.node("node-a", age=age, expireAfter=expire_after, capacity_type=capacity_type)
    return cluster


def assert_expired_metric(cluster: Cluster) -> None:
    decided = decide(cluster, methods=EXPIRATION_ONLY)
    [decision] = decided.decisions
    [candidate] = decision.candidates
    assert (candidate.name, decision.reason, candidate.member.nodepool, decision.forceful) == (
        "claim-node-a",
        EXPIRED,
        "general",
        True,
    )
    [figures] = [m for m in decided.methods if m.method != "repair"]  # node repair reports on every tick
    assert (figures.method, figures.reason, figures.decisions) == ("expiration", EXPIRED, 1)


def test_should_fire_a_karpenter_nodeclaims_disrupted_total_metric_when_expired() -> None:
    """suite_test.go Describe("Expiration") Context("Metrics"):
    It("should fire a karpenter_nodeclaims_disrupted_total metric when expired")."""
    assert_expired_metric(expired_cluster())


def test_should_fire_a_karpenter_nodeclaims_disrupted_total_metric_when_expired_spot() -> None:
    """suite_test.go Describe("Expiration") Context("Metrics"):
    It("should fire a karpenter_nodeclaims_disrupted_total metric when expired") (the second It of that name: a
    spot NodeClaim)."""
    assert_expired_metric(expired_cluster(capacity_type="spot"))


def test_should_remove_nodeclaims_that_are_expired() -> None:
    """suite_test.go Describe("Expiration") DescribeTable("Expiration"):
    Entry("should remove nodeclaims that are expired")."""
    assert disrupted(decide(expired_cluster(), methods=EXPIRATION_ONLY)) == ["claim-node-a"]


def test_should_ignore_expired_nodeclaims_that_are_not_managed_by_this_karpenter_instance() -> None:
    """suite_test.go Describe("Expiration") DescribeTable("Expiration"):
    Entry("should ignore expired NodeClaims that are not managed by this Karpenter instance")."""
    cluster = expired_cluster()
    cluster.find("NodeClaim", "claim-node-a")["spec"]["nodeClassRef"] = {
        "group": "karpenter.test.sh",
        "kind": "UnmanagedNodeClass",
        "name": "default",
    }
    state, errors = cluster_state(copy.deepcopy(cluster.docs), instance_types(), cluster.now)
    assert errors  # nodewright reports the foreign nodeClassRef
    assert plan(state, {}, EXPIRATION_ONLY).decisions == []


def test_should_not_remove_the_nodeclaims_when_expiration_is_disabled() -> None:
    """suite_test.go Describe("Expiration"): It("should not remove the NodeClaims when expiration is disabled")."""
    cluster = expired_cluster(age=30 * 24 * 3600, expire_after="Never")
    assert decide(cluster, methods=EXPIRATION_ONLY).decisions == []


def test_should_not_remove_non_expired_nodeclaims() -> None:
    """suite_test.go Describe("Expiration"): It("should not remove non-expired NodeClaims")."""
    cluster = expired_cluster(age=0, expire_after="200s")
    assert decide(cluster, methods=EXPIRATION_ONLY).decisions == []


def test_should_delete_nodeclaims_if_the_nodeclaim_is_expired_but_the_node_isnt() -> None:
    """suite_test.go Describe("Expiration"):
    It("should delete NodeClaims if the nodeClaim is expired but the node isn't")."""
    cluster = expired_cluster()
    cluster.find("Node", "node-a")["metadata"]["creationTimestamp"] = "2027-01-15T08:00:00Z"  # the Node is new
    assert disrupted(decide(cluster, methods=EXPIRATION_ONLY)) == ["claim-node-a"]
    # Expiration counts from the NodeClaim's creation whatever its registration (issue 22 item 12).
    never_registered = expired_cluster()
    unregister(never_registered, "node-a")
    decided = decide(never_registered, methods=EXPIRATION_ONLY)
    assert disrupted(decided) == ["claim-node-a"]
    assert decided.commands(never_registered.now)[0].node == ""


def test_should_return_the_requeue_interval_until_the_nodeclaim_expires() -> None:
    """suite_test.go Describe("Expiration"):
    It("should return the requeue interval for the time between now and when the nodeClaim expires").

    nodewright has no per-object requeue: the planner looks at every NodeClaim each tick. The equivalent: 100 s
    into a 200 s expireAfter nothing is decided, and the first tick at or after creation + 200 s decides it."""
    assert decide(expired_cluster(age=100, expire_after="200s"), methods=EXPIRATION_ONLY).decisions == []
    assert decide(expired_cluster(age=199, expire_after="200s"), methods=EXPIRATION_ONLY).decisions == []
    assert disrupted(decide(expired_cluster(age=200, expire_after="200s"), methods=EXPIRATION_ONLY)) == ["claim-node-a"]


def test_shouldnt_expire_the_same_nodeclaim_multiple_times() -> None:
    """suite_test.go Describe("Expiration"): It("shouldn't expire the same NodeClaim multiple times").

    Karpenter's finalizer keeps the deleted NodeClaim; the counter stays at 1. In nodewright a re-run tick in the
    same window names the same execution (Step Functions refuses a second one), and once the workflow holds the
    NodeClaim's lock (or the NodeClaim is being deleted) no tick decides it again."""
    cluster = expired_cluster()
    first = decide(cluster, methods=EXPIRATION_ONLY).commands(cluster.now)
    again = plan(cluster.state(now=cluster.now + 30), {}, EXPIRATION_ONLY).commands(cluster.now + 30)
    assert [c.execution_name() for c in first] == [c.execution_name() for c in again]
    assert len(first) == 1
    assert decide(cluster, methods=EXPIRATION_ONLY, locked=["claim-node-a"]).decisions == []
    cluster.find("NodeClaim", "claim-node-a")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    assert decide(cluster, methods=EXPIRATION_ONLY).decisions == []
