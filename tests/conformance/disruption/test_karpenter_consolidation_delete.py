"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Context("Delete") and Context("TTL"), ported
case by case (the other Contexts are in test_karpenter_consolidation.py).

The Describe's NodePool (WhenEmptyOrUnderutilized, consolidateAfter 0s, budget 100%) is the builder's `general` pool
with that disruption block, on on-demand m5 capacity (`M5_ON_DEMAND`) so that prices order the nodes as the fake
provider's do: Karpenter's least expensive instance is m5.large (nothing the pool may launch is cheaper), its most
expensive one m5.4xlarge (32 CPU allocatable, as the fake's NodeClaims say). Pods are the builder's (500m, 512Mi,
owned by a ReplicaSet unless said otherwise). Karpenter's disruption controller is one planner tick (`plan()`);
"the queue deletes nodeClaims[1]" is the tick's decision naming it. A tick takes one consolidation (README row: a
controller loop that starts again at once after each command / a planner tick every minute).

TTL: Karpenter's controller waits its 15 s validation delay and checks the command again (the test binds pods
meanwhile). nodewright (README row: "validation after the 15 s delay runs inside the controller") marks the
command for validation; its workflow waits (ValidationDelay) and IdentifyCandidate calls
`disruption.validation.validate` on the cluster as it is then. These tests decide, change the cluster as the test
does during the wait, and call `validate()`: "" is Karpenter's command going ahead, anything else its command
being dropped.
"""

from __future__ import annotations

import copy
from typing import Any

from cluster_builder import M5_ON_DEMAND, T0, Cluster, instance_types, iso
from methods_kit import decide, disrupted

from nodewright.disruption.commands import DisruptionCommand
from nodewright.disruption.decision import EMPTY, UNDERUTILIZED
from nodewright.disruption.plan import Plan, plan
from nodewright.disruption.state import cluster_state
from nodewright.disruption.validation import validate

FILE = "pkg/controllers/disruption/consolidation_test.go"
LEAST = "m5.large"
MOST = "m5.4xlarge"
DND = {"karpenter.sh/do-not-disrupt": "true"}
LABELS = {"app": "test"}


def consolidation_cluster(**disruption: Any) -> Cluster:
    cluster = Cluster(now=T0)
    cluster.pool(
        disruption={
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "0s",
            "budgets": [{"nodes": "100%"}],
            **disruption,
        },
        requirements=M5_ON_DEMAND,
    )
    return cluster


def delete_context(**disruption: Any) -> Cluster:
    """Context("Delete")'s BeforeEach: two NodeClaims of the least expensive type."""
    cluster = consolidation_cluster(**disruption)
    cluster.node("node-0", LEAST)
    cluster.node("node-1", LEAST)
    return cluster


def three_pods(cluster: Cluster, **kw: Any) -> list[dict[str, Any]]:
    """pods[0] and pods[1] on node-0, pods[2] on node-1 (the Context's usual binding)."""
    kw.setdefault("labels", LABELS)
    return [cluster.pod(f"web-{i}", node, **kw) for i, node in enumerate(("node-0", "node-0", "node-1"))]


def only_decision(decided: Plan) -> list[str]:
    [decision] = decided.decisions
    assert decision.reason == UNDERUTILIZED and decision.replacement is None  # a delete, no new NodeClaim
    return [c.name for c in decision.candidates]


# ------------------------------------------------------------------------------------------------------- Delete


def test_can_delete_nodes() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes")."""
    cluster = delete_context()
    three_pods(cluster)
    assert only_decision(decide(cluster)) == ["claim-node-1"]


def test_does_not_delete_nodes_with_pod_churn_deletes_nodes_without_pod_churn() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("does not delete nodes with pod churn,
    deletes nodes without pod churn").

    Karpenter's test validator binds a pod to nodes[0] while emptiness validates, and the command keeps nodes[1]
    only. nodewright decides one Empty execution per node (README row "one emptiness command for all the empty
    nodes"); IdentifyCandidate's validation drops node-0's and keeps node-1's."""
    cluster = delete_context()
    decided = decide(cluster)
    commands = {c.nodeclaim: c for c in decided.commands(cluster.now)}
    assert sorted(commands) == ["claim-node-0", "claim-node-1"]
    assert {c.reason for c in commands.values()} == {EMPTY}
    cluster.pod("churn-0", "node-0", bound_ago=5)
    state = cluster.state()
    assert "no longer" in validate(commands["claim-node-0"], state)
    assert validate(commands["claim-node-1"], state) == ""


def test_can_delete_nodes_if_another_nodepool_has_no_node_template() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes if another nodePool
    has no node template") (nodewright reports such a NodePool as invalid and plans without it)."""
    cluster = delete_context()
    three_pods(cluster)
    broken = copy.deepcopy(cluster.find("NodePool", "general"))
    broken["metadata"]["name"] = "no-template"
    del broken["spec"]["template"]["spec"]["nodeClassRef"]
    state, errors = cluster_state(copy.deepcopy([*cluster.docs, broken]), instance_types(), cluster.now)
    assert errors
    assert only_decision(plan(state, {})) == ["claim-node-1"]


def test_can_delete_nodes_when_non_karpenter_capacity_can_fit_pods() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes, when non-Karpenter
    capacity can fit pods") (the unmanaged node: an m5.8xlarge Node no NodeClaim owns, without nodewright's
    labels)."""
    cluster = consolidation_cluster()
    cluster.node("node-0", LEAST)
    _, unmanaged = cluster.node("unmanaged", "m5.8xlarge")
    cluster.docs.remove(cluster.find("NodeClaim", "claim-unmanaged"))
    unmanaged["metadata"]["labels"] = {
        "kubernetes.io/hostname": "unmanaged",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
    }
    for i in range(3):
        cluster.pod(f"web-{i}", "node-0", labels=LABELS)
    assert only_decision(decide(cluster)) == ["claim-node-0"]


def test_can_delete_nodes_considers_pdb() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes, considers PDB")."""
    cluster = delete_context()
    pods = three_pods(cluster, labels={"app": "other"})
    pods[2]["metadata"]["labels"] = LABELS
    cluster.pdb("pdb", LABELS, maxUnavailable=0, allowed=0)
    assert only_decision(decide(cluster)) == ["claim-node-0"]


def test_can_delete_nodes_considers_karpenter_sh_do_not_disrupt_set_to_true_on_nodes() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes, considers
    karpenter.sh/do-not-disrupt set to true on nodes")."""
    cluster = delete_context()
    three_pods(cluster)
    cluster.find("Node", "node-1")["metadata"]["annotations"].update(DND)
    cluster.find("NodeClaim", "claim-node-1")["metadata"]["annotations"].update(DND)
    assert only_decision(decide(cluster)) == ["claim-node-0"]


def test_can_delete_nodes_considers_karpenter_sh_do_not_disrupt_set_to_true_on_pods() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes, considers
    karpenter.sh/do-not-disrupt set to true on pods")."""
    cluster = delete_context()
    three_pods(cluster)[2]["metadata"]["annotations"].update(DND)
    assert only_decision(decide(cluster)) == ["claim-node-0"]


def test_does_not_consolidate_nodes_with_do_not_disrupt_pods_when_the_tgp_is_not_nil() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("does not consolidate nodes with
    karpenter.sh/do-not-disrupt set to true on pods when the NodePool's TerminationGracePeriod is not nil")."""
    cluster = consolidation_cluster()
    cluster.node("node-0", LEAST, terminationGracePeriod="300s")
    cluster.node("node-1", LEAST, terminationGracePeriod="300s")
    three_pods(cluster, annotations=DND)
    assert decide(cluster).decisions == []


def test_does_not_consolidate_nodes_with_pods_with_blocking_pdbs_when_the_tgp_is_not_nil() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("does not consolidate nodes with pods
    with blocking PDBs when the NodePool's TerminationGracePeriod is not nil")."""
    cluster = consolidation_cluster()
    cluster.node("node-0", LEAST, terminationGracePeriod="300s")
    cluster.node("node-1", LEAST, terminationGracePeriod="300s")
    three_pods(cluster)
    cluster.pdb("pdb", LABELS, maxUnavailable=0, allowed=0)
    assert decide(cluster).decisions == []


def test_does_not_consolidate_nodes_with_pods_whose_duration_do_not_disrupt_is_active() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("does not consolidate nodes with pods
    that have a duration-based do-not-disrupt annotation that is still active")."""
    cluster = delete_context()
    protected = three_pods(cluster)[2]
    protected["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "2m"
    protected["status"]["startTime"] = iso(T0)
    assert only_decision(decide(cluster)) == ["claim-node-0"]


def test_can_consolidate_nodes_after_duration_based_do_not_disrupt_annotation_expires() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can consolidate nodes after
    duration-based do-not-disrupt annotation expires")."""
    cluster = delete_context()
    for p in three_pods(cluster, annotations={"karpenter.sh/do-not-disrupt": "2m"}):
        p["status"]["startTime"] = iso(T0)
    assert decide(cluster).decisions == []
    cluster.now = T0 + 180
    assert len(decide(cluster).decisions) == 1


def test_can_delete_nodes_considers_invalid_do_not_disrupt_annotation_format_as_not_blocking() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes, considers invalid
    do-not-disrupt annotation format as not blocking")."""
    cluster = delete_context()
    three_pods(cluster)[2]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "invalid-format"
    assert only_decision(decide(cluster)) == ["claim-node-1"]


def test_can_delete_nodes_evicts_pods_without_an_ownerref() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes, evicts pods without
    an ownerRef")."""
    cluster = delete_context()
    cluster.pod("web-0", "node-0")
    cluster.pod("web-1", "node-0")
    cluster.pod("standalone-0", "node-1", owner="")
    assert only_decision(decide(cluster)) == ["claim-node-1"]


def test_wont_delete_node_if_it_would_require_pods_to_schedule_on_an_uninitialized_node() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("won't delete node if it would require
    pods to schedule on an uninitialized node") (Karpenter's Unconsolidatable events: nodewright's
    `Plan.unconsolidatable`, published as the same events)."""
    cluster = consolidation_cluster()
    cluster.node("node-0", LEAST, ready=False, initialized=False)
    cluster.node("node-1", LEAST)
    three_pods(cluster)
    decided = decide(cluster)
    assert decided.decisions == []
    assert "uninitialized" in decided.unconsolidatable.get("claim-node-1", "")


def test_should_not_consolidate_pods_onto_a_destination_under_its_consolidateafter_window() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("should not consolidate pods onto a
    destination node that is under its consolidateAfter window").

    Karpenter marks both NodeClaims Consolidatable by hand while both are inside the 1m window; nodewright decides
    Consolidatable from the clock, so here the source (node-1, its pod bound long ago) is Consolidatable and only
    the destination (node-0, its pods bound 10 s ago) is inside its window: the source's pod may not move there."""
    cluster = delete_context(consolidateAfter="1m")
    cluster.pod("web-0", "node-0", labels=LABELS, bound_ago=10)
    cluster.pod("web-1", "node-0", labels=LABELS, bound_ago=10)
    cluster.pod("web-2", "node-1", labels=LABELS)
    decided = decide(cluster)
    assert decided.decisions == [], disrupted(decided)
    cluster.now = T0 + 120
    assert only_decision(decide(cluster)) == ["claim-node-1"]


def test_should_consolidate_pods_onto_a_destination_node_with_consolidateafter_set_to_never() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("should consolidate pods onto a
    destination node with consolidateAfter set to Never")."""
    cluster = delete_context()
    cluster.docs.remove(cluster.find("Node", "node-1"))
    cluster.docs.remove(cluster.find("NodeClaim", "claim-node-1"))
    cluster.pool(
        "destination",
        disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "Never"},
        requirements=M5_ON_DEMAND,
    )
    cluster.node("node-destination", LEAST, pool="destination", age=0)
    cluster.pod("web-0", "node-0", labels=LABELS, bound_ago=0)
    assert only_decision(decide(cluster)) == ["claim-node-0"]


def test_should_replace_a_node_with_a_cheaper_one_even_when_consolidateafter_has_not_expired() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("should replace a node with a cheaper
    one even when consolidateAfter has not expired")."""
    cluster = consolidation_cluster(consolidateAfter="1m")
    cluster.node("node-expensive", MOST, age=120)
    cluster.pod("web-0", "node-expensive", labels=LABELS, bound_ago=120)
    [decision] = decide(cluster).decisions
    assert [c.name for c in decision.candidates] == ["claim-node-expensive"]
    assert decision.reason == UNDERUTILIZED and decision.replacement is not None
    assert decision.replacement.price < decision.price


def test_should_consider_initialized_nodes_before_uninitialized_nodes() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("should consider initialized nodes
    before uninitialized nodes").

    Karpenter's default-instance-type (3 CPU) is c5.xlarge and its small-instance-type (1 CPU) t3.medium, the pool
    limited to those two on-demand types; 100 c5.xlarge nodes hold a 2-CPU pod each and only one of them is
    initialized; the small node's 1-CPU pod moves onto the initialized one."""
    cluster = consolidation_cluster()
    cluster.pool(
        disruption={
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "0s",
            "budgets": [{"nodes": "100%"}],
        },
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c5.xlarge", "t3.medium"]},
        ],
    )
    initialized = 37
    for i in range(100):
        cluster.node(f"node-{i:03d}", "c5.xlarge", ready=i == initialized, initialized=i == initialized)
        cluster.pod(f"web-{i:03d}", f"node-{i:03d}", cpu="2", memory="2Gi", labels=LABELS)
    cluster.node("node-small", "t3.medium")
    cluster.pod("small-0", "node-small", cpu="1", memory="1Gi", labels=LABELS)
    decided = decide(cluster)
    assert only_decision(decided) == ["claim-node-small"]
    assert not any("uninitialized" in why for why in decided.unconsolidatable.values())


def test_can_delete_nodes_with_a_permanently_pending_pod() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes with a permanently
    pending pod")."""
    cluster = delete_context()
    three_pods(cluster)
    pending = cluster.pod("pending-0", nodeSelector={"example.com/non-existent": "node-label"})
    decided = decide(cluster)
    assert only_decision(decided) == ["claim-node-1"]
    assert "nodeName" not in pending["spec"]


def test_wont_delete_nodes_if_it_would_make_a_non_pending_pod_go_pending() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("won't delete nodes if it would make a
    non-pending pod go pending") (label `example.com/foo`: nodewright refuses a selector key without a domain)."""
    cluster = delete_context()
    for node, value in (("node-0", "1"), ("node-1", "2")):
        cluster.find("Node", node)["metadata"]["labels"]["example.com/foo"] = value
    for i, (node, value) in enumerate((("node-0", "1"), ("node-0", "1"), ("node-1", "2"))):
        cluster.pod(f"web-{i}", node, labels=LABELS, nodeSelector={"example.com/foo": value})
    assert decide(cluster).decisions == []


def test_can_delete_nodes_while_an_invalid_node_pool_exists() -> None:
    """consolidation_test.go Describe("Consolidation") Context("Delete"): It("can delete nodes while an invalid node
    pool exists") (the bad NodePool's nodeClassRef names an EC2NodeClass that does not exist)."""
    cluster = delete_context()
    three_pods(cluster)
    bad = copy.deepcopy(cluster.find("NodePool", "general"))
    bad["metadata"]["name"] = "bad-nodepool"
    bad["spec"]["template"]["spec"]["requirements"] = []
    bad["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "non-existent"
    state, _ = cluster_state(copy.deepcopy([*cluster.docs, bad]), instance_types(), cluster.now)
    assert only_decision(plan(state, {})) == ["claim-node-1"]


# ---------------------------------------------------------------------------------------------------------- TTL


def ttl_context() -> Cluster:
    """Context("TTL")'s BeforeEach: two NodeClaims of the most expensive type."""
    cluster = consolidation_cluster()
    cluster.node("node-0", MOST)
    cluster.node("node-1", MOST)
    return cluster


def the_command(cluster: Cluster) -> DisruptionCommand:
    [command] = decide(cluster).commands(cluster.now)
    assert command.validated  # its workflow waits ValidationDelay, then IdentifyCandidate validates it
    return command


def test_should_wait_for_the_node_ttl_for_non_empty_nodes_before_consolidating() -> None:
    """consolidation_test.go Describe("Consolidation") Context("TTL"): It("should wait for the node TTL for non-empty
    nodes before consolidating") (both nodes moved to the least expensive type)."""
    cluster = delete_context()
    three_pods(cluster)
    command = the_command(cluster)
    assert command.nodeclaim == "claim-node-1" and command.replacement is None
    assert validate(command, cluster.state()) == ""


def test_should_not_consolidate_if_the_action_picks_different_types_after_the_ttl_wait() -> None:
    """consolidation_test.go Describe("Consolidation") Context("TTL"): It("should not consolidate if the action picks
    different instance types after the node TTL wait")."""
    cluster = ttl_context()
    cluster.docs.remove(cluster.find("Node", "node-1"))
    cluster.docs.remove(cluster.find("NodeClaim", "claim-node-1"))
    cluster.pod("web-0", "node-0", cpu="1", labels=LABELS)
    command = the_command(cluster)
    assert command.replacement is not None
    cluster.pod("web-1", "node-0", cpu="1", labels=LABELS, bound_ago=5)
    assert validate(command, cluster.state()) != ""


def test_should_not_consolidate_if_the_action_becomes_invalid_during_the_node_ttl_wait() -> None:
    """consolidation_test.go Describe("Consolidation") Context("TTL"): It("should not consolidate if the action
    becomes invalid during the node TTL wait")."""
    cluster = ttl_context()
    cluster.docs.remove(cluster.find("Node", "node-1"))
    cluster.docs.remove(cluster.find("NodeClaim", "claim-node-1"))
    command = the_command(cluster)
    cluster.pod("web-0", "node-0", annotations=DND, bound_ago=5)
    assert validate(command, cluster.state()) != ""


def _replace_then(cluster: Cluster, late: Any) -> None:
    """The Describe's most expensive node with one pod: a replacement; `late` binds pods during the wait."""
    cluster.docs.remove(cluster.find("Node", "node-1"))
    cluster.docs.remove(cluster.find("NodeClaim", "claim-node-1"))
    cluster.pod("web-0", "node-0")
    command = the_command(cluster)
    assert command.replacement is not None
    late(cluster)
    assert validate(command, cluster.state()) != ""


def test_should_not_replace_node_if_a_do_not_disrupt_pod_schedules_during_the_ttl_wait() -> None:
    """consolidation_test.go Describe("Consolidation") Context("TTL"): It("should not replace node if a pod schedules
    with karpenter.sh/do-not-disrupt set to true during the TTL wait")."""
    _replace_then(ttl_context(), lambda c: c.pod("dnd-0", "node-0", annotations=DND, bound_ago=5))


def test_should_not_replace_node_if_a_pod_schedules_with_a_blocking_pdb_during_the_ttl_wait() -> None:
    """consolidation_test.go Describe("Consolidation") Context("TTL"): It("should not replace node if a pod
    schedules with a blocking PDB during the TTL wait")."""

    def late(cluster: Cluster) -> None:
        cluster.pod("blocked-0", "node-0", labels=LABELS, bound_ago=5)
        cluster.pdb("pdb", LABELS, maxUnavailable=0, allowed=0)

    _replace_then(ttl_context(), late)


def _delete_then(late: Any) -> None:
    cluster = ttl_context()
    cluster.pod("web-0", "node-0")
    cluster.pod("web-1", "node-1")
    command = the_command(cluster)
    late(cluster)
    assert validate(command, cluster.state()) != ""


def test_should_not_delete_node_if_do_not_disrupt_pods_schedule_during_the_ttl_wait() -> None:
    """consolidation_test.go Describe("Consolidation") Context("TTL"): It("should not delete node if pods schedule
    with karpenter.sh/do-not-disrupt set to true during the TTL wait")."""

    def late(cluster: Cluster) -> None:
        cluster.pod("dnd-0", "node-0", annotations=DND, bound_ago=5)
        cluster.pod("dnd-1", "node-1", annotations=DND, bound_ago=5)

    _delete_then(late)


def test_should_not_delete_node_if_pods_schedule_with_a_blocking_pdb_during_the_ttl_wait() -> None:
    """consolidation_test.go Describe("Consolidation") Context("TTL"): It("should not delete node if pods schedule
    with a blocking PDB during the TTL wait")."""

    def late(cluster: Cluster) -> None:
        cluster.pod("blocked-0", "node-0", labels=LABELS, bound_ago=5)
        cluster.pod("blocked-1", "node-1", labels=LABELS, bound_ago=5)
        cluster.pdb("pdb", LABELS, maxUnavailable=0, allowed=0)

    _delete_then(late)
