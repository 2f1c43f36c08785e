"""Karpenter v1.14.1 pkg/controllers/node/termination/terminator/suite_test.go, ported case by case.

The suite drives Karpenter's eviction queue (`eviction.go`: one Eviction API call per pod, a 429 requeued with a
FailedDraining event) and `Terminator.DeleteExpiringPods` (`terminator.go`: a pod deleted once the node's
termination time is nearer than its terminationGracePeriodSeconds, with the time left as its grace period, at least
1 s). nodewright has no queue: each drain round of the workflow (`service.workflow.drain`) asks the Cluster port
for an Eviction of each pod `disruption.drain.drain_round` names, counts a 429 as `blocked` and asks again next
round; the deletions and their grace periods are the round's `delete` and `grace`. Fixtures: the BeforeEach's pod
(labelled test=label) and node are `termination_kit.World` (the in-memory cluster's `eviction_blocked` is the API
server refusing for a PDB with maxUnavailable 0) and `termination_kit.kpod` for the pure rounds. Karpenter's
metrics and queue mechanics (UID keys, data races) have no counterpart (skip reasons say why). The API server's 500
for a pod two PDBs select is driven through nodewright's Kubernetes adapter against a stub server.
"""

from __future__ import annotations

import pytest
from api_answers import Answers
from termination_kit import NODE, T0, Drainer, World, key, kpod

from nodewright.adapters.kubernetes_cluster import MULTIPLE_PDBS_MESSAGE, KubernetesCluster
from nodewright.disruption.drain import drain_round
from nodewright.ports import BLOCKED, EVICTED, GONE

FILE = "pkg/controllers/node/termination/terminator/suite_test.go"
METRIC = "Karpenter controller metric; nodewright records the workflow's steps as events and execution history instead"
LABELS = {"test": "label"}


def test_should_succeed_with_no_event_when_the_pod_is_not_found() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should succeed with no event
    when the pod is not found")."""
    world = World()
    assert world.cluster.evict_pod("default", "absent") == GONE
    assert world.cluster.events == []


@pytest.mark.skip(
    reason="Karpenter's eviction queue is keyed by pod UID; nodewright keeps no queue (each drain round re-reads "
    "the node's pods and evicts by name)"
)
def test_should_succeed_with_no_event_when_the_pod_uid_conflicts() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should succeed with no event
    when the pod UID conflicts")."""


def test_should_succeed_with_an_evicted_event_when_there_are_no_pdbs() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should succeed with an
    evicted event when there are no PDBs")."""
    world = World(kpod("pod", labels=LABELS))
    world.delete("Node")
    world.start()
    first = world.drain()
    assert first["evicted"] == [key("pod")] and first["blocked"] == []
    assert not world.exists("Pod", "pod")


def test_should_succeed_with_no_event_when_there_are_pdbs_that_allow_an_eviction() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should succeed with no event
    when there are PDBs that allow an eviction")."""
    world = World(kpod("pod", labels=LABELS))  # maxUnavailable 1: the API server lets the eviction through
    assert world.cluster.evict_pod("default", "pod") == EVICTED
    assert not world.exists("Pod", "pod")


def test_should_return_a_node_drain_error_event_when_a_pdb_is_blocking() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should return a
    NodeDrainError event when a PDB is blocking")."""
    world = World(kpod("pod", labels=LABELS))
    world.cluster.eviction_blocked.add(key("pod"))  # maxUnavailable 0: 429
    world.delete("Node")
    world.start()
    first = world.drain()
    assert first["blocked"] == [key("pod")] and first["evicted"] == [] and not first["done"]
    assert world.drain()["blocked"] == [key("pod")]  # requeued: asked again next round
    assert world.exists("Pod", "pod") and world.exists("Node", NODE)


def test_should_return_a_node_drain_error_event_when_two_pdbs_refer_to_the_same_pod() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should return a
    NodeDrainError event when two PDBs refer to the same pod")."""
    # The API server's answer, through nodewright's Kubernetes adapter: a refusal, asked again next round.
    assert KubernetesCluster(Answers(500, MULTIPLE_PDBS_MESSAGE)).evict_pod("default", "pod") == BLOCKED
    world = World(kpod("pod", labels=LABELS))
    world.cluster.eviction_blocked.add(key("pod"))
    world.delete("Node")
    world.start()
    assert world.drain()["blocked"] == [key("pod")]
    assert world.drain()["blocked"] == [key("pod")]


@pytest.mark.skip(reason="a Go data-race test of the eviction queue's Add and Reconcile; nodewright keeps no queue")
def test_should_ensure_that_calling_evict_is_valid_while_making_add_calls() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should ensure that calling
    Evict() is valid while making Add() calls")."""


@pytest.mark.skip(reason=METRIC)
def test_should_increment_pods_drained_total_metric_when_a_pod_is_evicted() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should increment
    PodsDrainedTotal metric when a pod is evicted")."""


@pytest.mark.skip(reason=METRIC)
def test_should_increment_pods_drained_total_metric_with_specific_reason_when_a_pod_is_evicted() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Eviction API"): It("should increment
    PodsDrainedTotal metric with specific reason when a pod is evicted")."""


def test_should_not_delete_a_pod_with_no_node_termination_time() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Pod Deletion API"): It("should not delete a pod
    with no nodeTerminationTime")."""
    work = drain_round([kpod("pod", annotations={"karpenter.sh/do-not-disrupt": "true"})], T0 + 10**6, None)
    assert work.delete == () and not work.done


def test_should_not_delete_a_pod_with_tgps_still_remaining_before_node_termination_time() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Pod Deletion API"): It("should not delete a pod
    with terminationGracePeriodSeconds still remaining before nodeTerminationTime")."""
    drainer = Drainer(kpod("pod", grace=60, annotations={"karpenter.sh/do-not-disrupt": "true"}), deadline=T0 + 300)
    assert drainer.reconcile().delete == ()
    assert not drainer.terminating("pod")


def test_should_delete_a_pod_with_less_than_tgps_remaining_before_node_termination_time() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Pod Deletion API"): It("should delete a pod with
    less than terminationGracePeriodSeconds remaining before nodeTerminationTime")."""
    drainer = Drainer(kpod("pod", grace=120, annotations={"karpenter.sh/do-not-disrupt": "true"}), deadline=T0 + 60)
    work = drainer.reconcile()
    assert work.delete == (key("pod"),) and work.grace == {key("pod"): 60}
    assert drainer.terminating("pod")


def test_should_clamp_grace_period_seconds_to_1_when_node_termination_time_is_in_the_past() -> None:
    """terminator/suite_test.go Describe("Eviction/Queue") Context("Pod Deletion API"): It("should clamp
    gracePeriodSeconds to >= 1 when nodeTerminationTime is in the past")."""
    drainer = Drainer(kpod("pod", grace=120), deadline=T0 - 3600)
    work = drainer.reconcile()
    assert work.delete == (key("pod"),) and work.grace == {key("pod"): 1}
    assert drainer.terminating("pod")  # a graceful deletion, not a forced one
