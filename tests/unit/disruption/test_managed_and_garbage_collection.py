"""Which NodeClaims the fleet takes in (Karpenter's nodeclaimutils.IsManaged) and which ones reconciliation forgets
(Karpenter's NodeClaim garbage collection keeps a claim whose Node is still Ready)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.disruption.fleet import fleet_nodes, manages
from nodewright.disruption.reconcile import FORGET, GONE_GRACE_SECONDS, lost_instances
from nodewright.ports import Instance

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def claim(name: str, ref: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeClassRef": ref} if ref is not None else {}
    return {
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {"karpenter.sh/nodepool": "general"},
            "creationTimestamp": "2027-01-15T07:00:00Z",
        },
        "spec": spec,
        "status": {"providerID": f"aws:///us-east-1a/i-{name}"},
    }


def node(name: str, instance: str, ready: bool) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "general"}},
        "spec": {"providerID": f"aws:///us-east-1a/i-{instance}"},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


@pytest.mark.parametrize(
    ("ref", "managed"),
    [
        ({"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"}, True),
        ({"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}, True),
        (None, True),  # hand-written snapshots; the CRD requires a ref
        ({"group": "karpenter.test.sh", "kind": "UnmanagedNodeClass", "name": "default"}, False),
        ({"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"}, False),
        ({"group": "nodewright.io", "kind": "AKSNodeClass", "name": "default"}, False),
        ({"group": "other.io", "kind": "EC2NodeClass", "name": "default"}, False),
    ],
)
def test_a_nodeclaim_is_managed_only_when_its_node_class_is_an_ec2nodeclass_of_ours(
    ref: dict[str, str] | None, managed: bool
) -> None:
    assert manages(claim("a", ref)) is managed


def test_the_fleet_leaves_out_nodeclaims_of_another_providers_node_class() -> None:
    ours = claim("a", {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"})
    theirs = claim("b", {"group": "karpenter.test.sh", "kind": "UnmanagedNodeClass", "name": "default"})
    fleet = fleet_nodes([ours, theirs], [node("node-a", "a", True), node("node-b", "b", True)], {})
    assert [m.nodeclaim for m in fleet] == ["a"]


def test_an_unmanaged_nodeclaim_whose_instance_ec2_does_not_know_is_never_forgotten() -> None:
    theirs = claim("b", {"group": "karpenter.test.sh", "kind": "UnmanagedNodeClass", "name": "default"})
    forget, stopping = lost_instances(fleet_nodes([theirs], [node("node-b", "b", False)], {}), {}, T0)
    assert (forget, stopping) == ([], [])


@pytest.mark.parametrize("state", ["terminated", "shutting-down", None])
def test_a_nodeclaim_whose_node_is_ready_is_kept_whatever_ec2_says_of_its_instance(state: str | None) -> None:
    ours = claim("a", None)
    instances = {} if state is None else {"i-a": Instance("i-a", "m5.large", "us-east-1a", state, "on-demand", T0, {})}
    now = T0 + GONE_GRACE_SECONDS
    ready = fleet_nodes([ours], [node("node-a", "a", True)], {})
    assert lost_instances(ready, instances, now)[0] == []
    # Once the node lifecycle controller marks the Node not Ready (the kubelet stopped posting), it is forgotten.
    [forgotten] = lost_instances(fleet_nodes([ours], [node("node-a", "a", False)], {}), instances, now)[0]
    assert (forgotten.kind, forgotten.nodeclaim, forgotten.node) == (FORGET, "a", "node-a")
