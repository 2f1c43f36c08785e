"""Karpenter v1.14.1 pkg/controllers/static/deprovisioning/suite_test.go (Describe("Static Deprovisioning
Controller")), ported case by case.

Karpenter's controller deletes the running NodeClaims a static NodePool has beyond `replicas`: not launched ones
first, then empty nodes, then by disruption cost (a node with a do-not-disrupt pod last). nodewright's planner tick
decides the same (`disruption.static.scale_down`, in `removal_order`) and asks for each NodeClaim's deletion
(`service.static.remove_static`); the termination then drains the node. Cases about the controller's watch
predicates have nothing to port (the tick is level-triggered) and are skipped with that reason.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from static_kit import claims, static_pool

from nodewright.disruption.static import StaticMember, scale_down

FILE = "pkg/controllers/static/deprovisioning/suite_test.go"

LEVEL_TRIGGERED = (
    "Karpenter's controller reacts to watch events (a replica change); nodewright's planner tick compares every static "
    "pool with its replicas each minute, so there is no predicate to test"
)


def removed(replicas: int, members: list[StaticMember]) -> tuple[str, ...]:
    return scale_down(static_pool(replicas), members)[0]


@pytest.mark.skip(
    reason="nodewright loads only NodePools that reference an EC2NodeClass; another provider's pool is "
    "refused at validation (tests/conformance/validation), so no tick sees it"
)
def test_should_return_early_if_nodepool_is_not_managed_by_cloud_provider() -> None:
    """It("should return early if nodepool is not managed by cloud provider")."""


def test_should_return_early_if_nodepool_replicas_is_nil() -> None:
    """It("should return early if nodepool replicas is nil"): a dynamic pool is never scaled down by replicas."""
    dynamic = replace(static_pool(1), replicas=None)
    with pytest.raises(AssertionError):
        scale_down(dynamic, claims(3))


@pytest.mark.skip(
    reason="nodewright's NodePools carry no finalizer: a deleted NodePool is gone from the next read, "
    "and its NodeClaims are deleted by their owner reference"
)
def test_should_return_early_if_nodepool_is_being_deleted() -> None:
    """It("should return early if nodepool is being deleted")."""


def test_should_return_early_if_current_node_count_is_less_than_or_equal_to_desired_replicas() -> None:
    """It("should return early if current node count is less than or equal to desired replicas")."""
    assert removed(3, claims(2)) == () and removed(2, claims(2)) == ()


def test_should_only_consider_running_nodeclaims_and_not_deleting_nodeclaims() -> None:
    """It("should only consider running nodeclaims and not deleting nodeclaims"): 4 NodeClaims, 3 deleting,
    replicas 1: nothing more to delete."""
    members = [replace(m, deleting=i < 3) for i, m in enumerate(claims(4))]
    assert removed(1, members) == ()


def test_should_terminate_excess_nodeclaims_when_current_count_exceeds_desired_replicas() -> None:
    """It("should terminate excess nodeclaims when current count exceeds desired replicas"): 5 nodes, replicas 3."""
    assert len(removed(3, claims(5))) == 2


def test_should_handle_zero_replicas_by_terminating_all_nodeclaims() -> None:
    """It("should handle zero replicas by terminating all nodeclaims")."""
    assert set(removed(0, claims(3))) == {"nc-0", "nc-1", "nc-2"}


def test_should_handle_no_active_nodeclaims_gracefully() -> None:
    """It("should handle no active nodeclaims gracefully")."""
    assert removed(0, []) == ()


def test_should_return_error_when_nodeclaim_deletion_fails() -> None:
    """Context("Failing Scenarios"): It("should return error when nodeclaim deletion fails"): a refused deletion is
    reported and the NodeClaim is not counted as removed (`remove_static`), so the next tick asks again."""
    from nodewright.disruption.static import StaticDecision
    from nodewright.service.static import remove_static

    class Refusing:
        def request_nodeclaim_deletion(self, name: str) -> None:
            raise RuntimeError("the API server said no")

    problems: list[str] = []
    decision = StaticDecision("default", 1, 3, remove=removed(1, claims(3)))
    assert remove_static([decision], Refusing(), problems) == []  # type: ignore[arg-type]
    assert len(problems) == 2 and "the API server said no" in problems[0]
    assert len(removed(1, claims(3))) == 2  # still beyond its size: decided again


def test_should_prioritize_nodeclaims_that_have_unresolved_provider_id() -> None:
    """Context("Deprovision Candidate Selection"): It("should prioritize nodeclaims that have unresolved providerID"):
    2 launched and 2 not launched, replicas 2: the 2 not launched go."""
    members = [*claims(2), *[replace(m, launched=False) for m in claims(2, prefix="unresolved")]]
    assert set(removed(2, members)) == {"unresolved-0", "unresolved-1"}


def test_should_prioritize_empty_nodes_with_only_daemonset_pods_for_termination() -> None:
    """Context("Deprovision Candidate Selection"): It("should prioritize empty nodes (with only daemonset pods) for
    termination"): nodes 0 and 2 hold only DaemonSet pods, 1 and 3 an application pod; replicas 2."""
    members = [replace(m, empty=i % 2 == 0, cost=1.0 if i % 2 == 0 else 2.0) for i, m in enumerate(claims(4))]
    assert set(removed(2, members)) == {"nc-0", "nc-2"}


def test_should_terminate_non_empty_nodes_when_empty_nodes_are_insufficient() -> None:
    """Context("Deprovision Candidate Selection"): It("should terminate non-empty nodes when empty nodes are
    insufficient"): 4 nodes with pods, replicas 1: 3 go."""
    members = [replace(m, empty=False, cost=2.0) for m in claims(4)]
    assert len(removed(1, members)) == 3


# Describe("disruption cost ordering"): two nodes of each kind: "low" (one low-priority pod), "high" (two pods, one
# system-critical), "dnd" (a pod with karpenter.sh/do-not-disrupt), "ds" (a DaemonSet pod only); indices as the test's.
KINDS = {
    "low": {"empty": False, "cost": 2.0},
    "high": {"empty": False, "cost": 3.5},
    "dnd": {"empty": False, "cost": 2.0, "do_not_disrupt": True},
    "ds": {"empty": True, "cost": 1.0},
}
COST_ORDERED = [
    StaticMember(f"{kind}-{i}", created_at=float(i), **fields)  # type: ignore[arg-type]
    for i in range(2)
    for kind, fields in KINDS.items()
]


@pytest.mark.parametrize(
    ("replicas", "kept"),
    [
        pytest.param(6, [0, 1, 2, 4, 5, 6], id="to 6 (drops DS-only first)"),
        pytest.param(4, [1, 2, 5, 6], id="to 4 (drops low next)"),
        pytest.param(2, [2, 6], id="to 2 (drops high next)"),
        pytest.param(0, [], id="to 0 (drops do-not-disrupt last)"),
    ],
)
def test_scales_down_in_disruption_cost_order(replicas: int, kept: list[int]) -> None:
    """Describe("disruption cost ordering"): DescribeTable("scales down in disruption cost order"), from 8 nodes."""
    gone = set(removed(replicas, COST_ORDERED))
    assert sorted(m.nodeclaim for m in COST_ORDERED if m.nodeclaim not in gone) == sorted(
        COST_ORDERED[i].nodeclaim for i in kept
    )


@pytest.mark.skip(reason=LEVEL_TRIGGERED)
def test_should_detect_replica_changes() -> None:
    """Context("Helper Functions"): Describe("hasNodePoolReplicaOrStatusChanged"): It("should detect replica
    changes")."""


@pytest.mark.skip(reason=LEVEL_TRIGGERED)
def test_should_return_false_for_identical_replicas() -> None:
    """Context("Helper Functions"): Describe("hasNodePoolReplicaOrStatusChanged"): It("should return false for
    identical replicas")."""
