"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_dra_test.go (Describe("Consolidation/DRA")), ported
case by case.

Karpenter simulates consolidation of nodes whose pods hold Dynamic Resource Allocation devices (ResourceClaims,
ResourceSlices, DeviceClasses). nodewright has no DRA: a pod with `resources.claims` is refused by name ("dynamic
resource claims are not supported yet by nodewright", model/kube.py), as the scheduling ports record. So the cases
that re-allocate a device onto a replacement are skipped. The two negative cases ask only that a node whose pod
holds a device that cannot be re-allocated is not consolidated; they apply as they are, to a cluster loaded as
the planner loads it (the refusal is one of the load's errors, not a failure): a GPU pod (one container claiming
`gpu`, the pod's `resourceClaims` naming the ResourceClaim) on an m5.2xlarge, Karpenter's `gpu-it` /
`no-gpu-it` being the catalog's types since nodewright reads no device.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cluster_builder import Cluster, instance_types

from nodewright.disruption.plan import plan
from nodewright.disruption.state import ClusterState, DisruptionSettings, cluster_state

FILE = "pkg/controllers/disruption/consolidation_dra_test.go"
NO_DRA = (
    "DRA: nodewright refuses pods with resources.claims (no ResourceClaims, ResourceSlices or DeviceClasses: not "
    "supported), so no device is re-allocated onto a replacement"
)


def gpu_pod(cluster: Cluster, name: str, node: str, claim: str) -> dict[str, Any]:
    """A ReplicaSet pod bound to `node` whose container claims the device of ResourceClaim `claim`."""
    pod = cluster.pod(name, node, resourceClaims=[{"name": "gpu", "resourceClaimName": claim}])
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def loaded(cluster: Cluster) -> ClusterState:
    """The cluster as the planner loads it: the refused pods are errors of the load, and the tick goes on."""
    state, errors = cluster_state(
        copy.deepcopy(cluster.docs), instance_types(), cluster.now, frozenset(), DisruptionSettings()
    )
    assert errors and all("dynamic resource claims are not supported" in e.message for e in errors), errors
    return state


def gone(state: ClusterState) -> set[str]:
    return {c.member.node for d in plan(state, {}).decisions for c in d.candidates}


@pytest.mark.skip(reason=NO_DRA)
def test_re_allocates_a_candidate_pod_s_device_onto_a_replacement_b_positive() -> None:
    """consolidation_dra_test.go Describe("Consolidation/DRA"):
    It("re-allocates a candidate pod's device onto a replacement (B, positive)")."""


@pytest.mark.skip(reason=NO_DRA)
def test_does_not_target_a_candidate_node_s_published_device_a_positive() -> None:
    """consolidation_dra_test.go Describe("Consolidation/DRA"):
    It("does not target a candidate node's published device (A, positive)")."""


def test_does_not_consolidate_when_the_candidate_s_claim_cannot_be_satisfied_elsewhere() -> None:
    """consolidation_dra_test.go Describe("Consolidation/DRA"):
    It("does not consolidate when the candidate's claim cannot be satisfied elsewhere (B, negative)")."""
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "100%"}]})
    cluster.node("gpu-node", "m5.2xlarge")
    gpu_pod(cluster, "gpu-0", "gpu-node", "gpu-claim")
    state = loaded(cluster)
    assert "gpu-node" not in gone(state)


def test_does_not_free_a_device_held_by_a_live_pod_on_a_non_candidate_node_a_negative() -> None:
    """consolidation_dra_test.go Describe("Consolidation/DRA"):
    It("does not free a device held by a live pod on a non-candidate node (A, negative)").

    The live pod on the other node holds the one cluster-wide device (its claim names it as consumer, so the pod
    itself is an ordinary one); the candidate's pod claims the same device."""
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "100%"}]})
    cluster.node("live-node", "m5.2xlarge")
    cluster.pod("live-0", "live-node")
    cluster.node("candidate-node", "m5.2xlarge")
    gpu_pod(cluster, "candidate-0", "candidate-node", "candidate-claim")
    state = loaded(cluster)
    assert "candidate-node" not in gone(state)


@pytest.mark.skip(reason=NO_DRA)
def test_re_allocates_devices_from_multiple_candidate_nodes_onto_one_replacement() -> None:
    """consolidation_dra_test.go Describe("Consolidation/DRA"):
    It("re-allocates devices from multiple candidate nodes onto one replacement (B, multi-candidate)")."""


@pytest.mark.skip(reason=NO_DRA)
def test_reclaims_only_the_candidate_s_share_of_a_shared_device_leaving_the_live_pod_s_share() -> None:
    """consolidation_dra_test.go Describe("Consolidation/DRA"):
    It("reclaims only the candidate's share of a shared device, leaving the live pod's share (B, partial)")."""
