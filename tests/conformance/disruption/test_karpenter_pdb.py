"""Karpenter v1.14.1 pkg/utils/pdb/suite_test.go, ported case by case (7 It, 12 Entry: 19 tests).

Karpenter's fixtures: an envtest API server with no disruption controller, so every PodDisruptionBudget's status
says 0 disruptions allowed; pods with the labels {"pdb-test": "value"}; `pdb.NewLimits` over every budget. Here:
a `cluster_builder.Cluster` with one m5.xlarge node the pods are bound to, budgets written with status
`disruptionsAllowed: 0` (`candidates_kit.pdb`), and the limits `cluster_state` builds (`ClusterState.pdbs`).
`CanEvictPods` is `candidates_kit.can_evict_pods` (each pod Karpenter would evict asked of
`PdbLimits.violations`); `IsCurrentlyReschedulable` is `simulate.currently_reschedulable`. Karpenter's Skip for
API servers older than 1.27 (UnhealthyPodEvictionPolicy) does not apply: nodewright reads the field from the
budget, whatever the cluster's version. Each DescribeTable is one parametrized test, one id per Entry.
"""

from __future__ import annotations

from typing import Any

import pytest
from candidates_kit import POD_LABELS, can_evict_pods, not_ready, pdb, pods_of
from cluster_builder import Cluster

from nodewright.disruption.simulate import currently_reschedulable

FILE = "pkg/utils/pdb/suite_test.go"

# The four Entries each table shares: (id, [(budget name, spec)]).
BLOCKING: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
    ("100% min available", [("pdb", {"minAvailable": "100%"})]),
    ("0% max unavailable", [("pdb", {"maxUnavailable": "0%"})]),
    ("0 max unavailable", [("pdb", {"maxUnavailable": 0})]),
    ("multiple PDBs on the same pod", [("pdb-1", {"minAvailable": "100%"}), ("pdb-2", {"minAvailable": "100%"})]),
]


def cluster_with_node() -> Cluster:
    cluster = Cluster()
    cluster.node("a")
    return cluster


def test_can_evict_unhealthy_pods_when_unhealthy_pod_eviction_policy_is_set_to_always_allow() -> None:
    """suite_test.go Describe("CanEvictPods"): It("can evict unhealthy pods when UnhealthyPodEvictionPolicy is set
    to always allow")."""
    cluster = cluster_with_node()
    pdb(cluster, "pdb", minAvailable="100%", unhealthyPodEvictionPolicy="AlwaysAllow")
    not_ready(cluster.pod("web-0", "a", labels=POD_LABELS))
    state = cluster.state()
    assert can_evict_pods(state, pods_of(state, ["web/web-0"])) == ([], True)


def test_cant_evict_unhealthy_pods_when_unhealthy_pod_eviction_policy_is_not_set() -> None:
    """suite_test.go Describe("CanEvictPods"): It("can't evict unhealthy pods when UnhealthyPodEvictionPolicy is not
    set")."""
    cluster = cluster_with_node()
    pdb(cluster, "pdb", minAvailable="100%")
    not_ready(cluster.pod("web-0", "a", labels=POD_LABELS))
    state = cluster.state()
    assert can_evict_pods(state, pods_of(state, ["web/web-0"])) == (["web/pdb"], False)


def test_can_evict_pods_when_no_pdbs_match() -> None:
    """suite_test.go Describe("CanEvictPods"): It("can evict pods when no PDBs match")."""
    cluster = cluster_with_node()
    pdb(cluster, "pdb", labels={"other": "value"}, minAvailable="100%")
    cluster.pod("web-0", "a", labels=POD_LABELS)
    state = cluster.state()
    assert can_evict_pods(state, pods_of(state, ["web/web-0"])) == ([], True)


@pytest.mark.parametrize(("budgets"), [b for _, b in BLOCKING], ids=[i for i, _ in BLOCKING])
def test_cant_evict_pods_when_disruptions_are_not_allowed_for_every_pod_in_the_list(
    budgets: list[tuple[str, dict[str, Any]]],
) -> None:
    """suite_test.go Describe("CanEvictPods"): DescribeTable("can't evict pods when disruptions are not allowed for
    every pod in the list"), Entry("100% min available"), Entry("0% max unavailable"), Entry("0 max unavailable"),
    Entry("multiple PDBs on the same pod"): every budget is named, and the pods cannot be evicted."""
    cluster = cluster_with_node()
    for name, spec in budgets:
        pdb(cluster, name, **spec)
    cluster.pod("web-0", "a", labels=POD_LABELS)
    cluster.pod("web-1", "a", labels=POD_LABELS)
    state = cluster.state()
    refused, ok = can_evict_pods(state, pods_of(state, ["web/web-0", "web/web-1"]))
    assert sorted(refused) == sorted(f"web/{name}" for name, _ in budgets) and not ok


@pytest.mark.parametrize(("budgets"), [b for _, b in BLOCKING], ids=[i for i, _ in BLOCKING])
def test_cant_evict_pods_when_disruptions_are_not_allowed_for_one_pod_in_the_list(
    budgets: list[tuple[str, dict[str, Any]]],
) -> None:
    """suite_test.go Describe("CanEvictPods"): DescribeTable("can't evict pods when disruptions are not allowed for
    one pod in the list"), Entry("100% min available"), Entry("0% max unavailable"), Entry("0 max unavailable"),
    Entry("multiple PDBs on the same pod"): the second pod has no labels; the first one's budgets refuse."""
    cluster = cluster_with_node()
    for name, spec in budgets:
        pdb(cluster, name, **spec)
    cluster.pod("web-0", "a", labels=POD_LABELS)
    cluster.pod("other-0", "a", labels={})
    state = cluster.state()
    refused, ok = can_evict_pods(state, pods_of(state, ["web/web-0", "web/other-0"]))
    assert sorted(refused) == sorted(f"web/{name}" for name, _ in budgets) and not ok


def test_considers_unhealthy_pod_currently_reschedulable_when_policy_is_always_allow() -> None:
    """suite_test.go Describe("IsCurrentlyReschedulable"): It("considers unhealthy pod as currently reschedulable
    when UnhealthyPodEvictionPolicy is set to always allow")."""
    cluster = cluster_with_node()
    pdb(cluster, "pdb", minAvailable="100%", unhealthyPodEvictionPolicy="AlwaysAllow")
    not_ready(cluster.pod("web-0", "a", labels=POD_LABELS))
    state = cluster.state()
    [pod] = pods_of(state, ["web/web-0"])
    assert currently_reschedulable(state, pod)


def test_does_not_consider_unhealthy_pod_currently_reschedulable_when_policy_is_not_set() -> None:
    """suite_test.go Describe("IsCurrentlyReschedulable"): It("does not consider unhealthy pod as currently
    reschedulable when UnhealthyPodEvictionPolicy is not set")."""
    cluster = cluster_with_node()
    pdb(cluster, "pdb", minAvailable="100%")
    not_ready(cluster.pod("web-0", "a", labels=POD_LABELS))
    state = cluster.state()
    [pod] = pods_of(state, ["web/web-0"])
    assert not currently_reschedulable(state, pod)


def test_considers_pod_as_currently_reschedulable_when_no_pdbs_match() -> None:
    """suite_test.go Describe("IsCurrentlyReschedulable"): It("considers pod as currently reschedulable when no PDBs
    match")."""
    cluster = cluster_with_node()
    pdb(cluster, "pdb", labels={"other": "value"}, minAvailable="100%")
    cluster.pod("web-0", "a", labels=POD_LABELS)
    state = cluster.state()
    [pod] = pods_of(state, ["web/web-0"])
    assert currently_reschedulable(state, pod)


@pytest.mark.parametrize(("budgets"), [b for _, b in BLOCKING], ids=[i for i, _ in BLOCKING])
def test_pods_which_are_not_currently_reschedulable_due_to_pdbs(budgets: list[tuple[str, dict[str, Any]]]) -> None:
    """suite_test.go Describe("IsCurrentlyReschedulable"): DescribeTable("pods which are not currently reschedulable
    due to PDBs"), Entry("100% min available"), Entry("0% max unavailable"), Entry("0 max unavailable"),
    Entry("multiple PDBs on the same pod")."""
    cluster = cluster_with_node()
    for name, spec in budgets:
        pdb(cluster, name, **spec)
    cluster.pod("web-0", "a", labels=POD_LABELS)
    state = cluster.state()
    [pod] = pods_of(state, ["web/web-0"])
    assert not currently_reschedulable(state, pod)


def test_does_not_consider_pod_with_do_not_disrupt_annotation_as_currently_reschedulable() -> None:
    """suite_test.go Describe("IsCurrentlyReschedulable"): It("does not consider pod with do-not-disrupt annotation
    as currently reschedulable")."""
    cluster = cluster_with_node()
    cluster.pod("web-0", "a", labels=POD_LABELS, annotations={"karpenter.sh/do-not-disrupt": "true"})
    state = cluster.state()
    [pod] = pods_of(state, ["web/web-0"])
    assert not currently_reschedulable(state, pod)
