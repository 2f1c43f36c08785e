"""Karpenter v1.14.1 pkg/utils/pod/suite_test.go, ported case by case (18 It: 18 tests).

Karpenter's helpers map to nodewright's (see candidates_kit): IsDoNotDisruptActive is
`model.do_not_disrupt.is_active(value, started_at, now)`; its events map to what nodewright reports instead, since
it emits no Kubernetes events from the planner: InvalidDoNotDisruptAnnotation is `invalid_reason` (and the
candidate's `invalid` lines), DoNotDisruptUntil ("will elapse at") is `protected_until`, and the grace period
elapsed is `protected_until` being past. IsDisruptable is `candidates.disruptable(pod, facts, now)`. Karpenter's
fake clock is T0 (cluster_builder). A terminal pod (Succeeded/Failed) never reaches nodewright's decisions: the
loader leaves it out, so "disruptable" is proven on the node it was bound to (a candidate). HasDRARequirements maps
to nodewright's loader, which refuses a pod with resource claims (DRA is not supported yet): a pod it would count as
having DRA requirements is refused with an error naming the field, one without any loads.
"""

from __future__ import annotations

import math
from typing import Any

from candidates_kit import DO_NOT_DISRUPT, phase, started
from cluster_builder import T0, Cluster

from nodewright.disruption.candidates import Candidate, candidates, disruptable
from nodewright.disruption.state import PodFacts
from nodewright.model.do_not_disrupt import invalid_reason, is_active, protected_until
from nodewright.model.loader import load_documents
from nodewright.model.objects import Pod

FILE = "pkg/utils/pod/suite_test.go"
TEN_MINUTES_AGO = T0 - 600


def candidate_with(value: str) -> Candidate:
    """The one node of a cluster whose pod carries do-not-disrupt `value`, started ten minutes ago."""
    cluster = Cluster()
    cluster.node("a")
    started(cluster.pod("test-pod", "a", namespace="default", annotations={DO_NOT_DISRUPT: value}), ago=600)
    found, refused = candidates(cluster.state())
    assert refused == {}, refused
    [only] = found
    return only


def running(annotations: dict[str, str] | None = None) -> tuple[Pod, PodFacts]:
    return Pod("default", "test-pod", annotations=annotations or {}), PodFacts(started_at=TEN_MINUTES_AGO)


# ------------------------------------------------------------------------------------- IsDoNotDisruptActive


def test_should_return_false_when_no_annotation_exists() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should return false when no annotation exists")."""
    assert not is_active(None, TEN_MINUTES_AGO, T0)


def test_should_return_true_for_true_annotation() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should return true for 'true' annotation")."""
    assert is_active("true", TEN_MINUTES_AGO, T0)


def test_should_return_false_and_emit_event_for_invalid_duration_format() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should return false and emit event for invalid duration
    format"): Karpenter's event says it failed to parse "invalid-format" as a duration and ignores the annotation;
    nodewright's reason says the same, and the candidate carries it."""
    assert not is_active("invalid-format", TEN_MINUTES_AGO, T0)
    why = invalid_reason("invalid-format")
    assert '"invalid-format" is not a duration' in why and "ignored" in why
    assert candidate_with("invalid-format").invalid == (f"pod default/test-pod: {why}",)


def test_should_return_false_and_emit_event_for_zero_duration() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should return false and emit event for zero
    duration"): Karpenter's event: duration "0s" must be positive, ignoring annotation."""
    assert not is_active("0s", TEN_MINUTES_AGO, T0)
    assert 'duration "0s" must be positive' in invalid_reason("0s")
    assert candidate_with("0s").invalid == (f"pod default/test-pod: {invalid_reason('0s')}",)


def test_should_return_false_and_emit_event_for_negative_duration() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should return false and emit event for negative
    duration"): Karpenter's event: duration "-5m" must be positive, ignoring annotation."""
    assert not is_active("-5m", TEN_MINUTES_AGO, T0)
    assert 'duration "-5m" must be positive' in invalid_reason("-5m")
    assert candidate_with("-5m").invalid == (f"pod default/test-pod: {invalid_reason('-5m')}",)


def test_should_return_true_and_emit_disruptable_at_event_when_duration_has_not_expired() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should return true and emit disruptable-at event when
    duration has not expired"): the grace period elapses at start + 15m."""
    assert is_active("15m", TEN_MINUTES_AGO, T0)
    assert protected_until("15m", TEN_MINUTES_AGO) == TEN_MINUTES_AGO + 15 * 60
    assert invalid_reason("15m") == ""


def test_should_return_false_and_emit_grace_period_elapsed_event_when_duration_has_expired() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should return false and emit grace period elapsed event
    when duration has expired"): no "will elapse at" (the end is past), the grace period has elapsed."""
    assert not is_active("5m", TEN_MINUTES_AGO, T0)
    until = protected_until("5m", TEN_MINUTES_AGO)
    assert until is not None and until <= T0


def test_should_fail_safe_when_start_time_is_nil() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should fail safe when start time is nil")."""
    assert is_active("5m", None, T0)


def test_should_not_emit_disruptable_at_event_for_indefinite_protection() -> None:
    """suite_test.go Describe("IsDoNotDisruptActive"): It("should not emit disruptable-at event for indefinite
    protection"): "true" has no end."""
    assert is_active("true", TEN_MINUTES_AGO, T0)
    assert protected_until("true", TEN_MINUTES_AGO) == math.inf


# --------------------------------------------------------------------------------------------- IsDisruptable


def test_should_be_disruptable_for_active_pod_without_annotation() -> None:
    """suite_test.go Describe("IsDisruptable"): It("should be disruptable for active pod without annotation")."""
    pod, fact = running()
    assert disruptable(pod, fact, T0)


def test_should_not_be_disruptable_for_active_pod_with_true_annotation_and_no_invalid_event() -> None:
    """suite_test.go Describe("IsDisruptable"): It("should not be disruptable for active pod with 'true' annotation
    and not emit invalid annotation event")."""
    pod, fact = running({DO_NOT_DISRUPT: "true"})
    assert not disruptable(pod, fact, T0)
    assert invalid_reason("true") == ""


def test_should_be_disruptable_for_active_pod_with_expired_duration_and_no_invalid_event() -> None:
    """suite_test.go Describe("IsDisruptable"): It("should be disruptable for active pod with expired duration and
    not emit invalid annotation event")."""
    pod, fact = running({DO_NOT_DISRUPT: "5m"})
    assert disruptable(pod, fact, T0)
    assert candidate_with("5m").invalid == ()


def test_should_not_be_disruptable_for_active_pod_with_non_expired_duration() -> None:
    """suite_test.go Describe("IsDisruptable"): It("should not be disruptable for active pod with non-expired
    duration")."""
    pod, fact = running({DO_NOT_DISRUPT: "15m"})
    assert not disruptable(pod, fact, T0)


def test_should_be_disruptable_for_terminal_pod_even_with_annotation() -> None:
    """suite_test.go Describe("IsDisruptable"): It("should be disruptable for terminal pod even with annotation"):
    a Succeeded pod saying "true" does not hold its node (nodewright's loader leaves terminal pods out)."""
    cluster = Cluster()
    cluster.node("a")
    phase(cluster.pod("test-pod", "a", annotations={DO_NOT_DISRUPT: "true"}), "Succeeded")
    found, refused = candidates(cluster.state())
    assert refused == {} and [c.name for c in found] == ["claim-a"]


# ---------------------------------------------------------------------------------------- HasDRARequirements


def pod_errors(**spec: Any) -> list[str]:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app"}], **spec},
    }
    _, errors = load_documents([doc], "test")
    return [str(e) for e in errors]


def test_should_return_false_when_the_pod_references_no_resource_claims() -> None:
    """suite_test.go Describe("HasDRARequirements"): It("should return false when the pod references no
    ResourceClaims")."""
    assert pod_errors() == []


def test_should_return_true_when_a_pod_level_resource_claim_is_referenced() -> None:
    """suite_test.go Describe("HasDRARequirements"): It("should return true when a pod-level ResourceClaim is
    referenced")."""
    [error] = pod_errors(resourceClaims=[{"name": "gpu-claim"}])
    assert "spec.resourceClaims" in error and "dynamic resource claims" in error


def test_should_return_true_when_a_container_consumes_a_resource_claim() -> None:
    """suite_test.go Describe("HasDRARequirements"): It("should return true when a container consumes a
    ResourceClaim")."""
    [error] = pod_errors(containers=[{"name": "app", "image": "app", "resources": {"claims": [{"name": "gpu"}]}}])
    assert "spec.containers[0].resources.claims" in error


def test_should_return_true_when_an_init_container_consumes_a_resource_claim() -> None:
    """suite_test.go Describe("HasDRARequirements"): It("should return true when an init container consumes a
    ResourceClaim")."""
    init = [{"name": "init", "image": "app", "resources": {"claims": [{"name": "gpu-claim"}]}}]
    [error] = pod_errors(initContainers=init)
    assert "spec.initContainers[0].resources.claims" in error
