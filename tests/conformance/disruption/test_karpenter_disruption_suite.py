"""Karpenter v1.14.1 pkg/controllers/disruption/suite_test.go, ported case by case (58 It: 58 tests).
pkg/controllers/disruption/validation_test.go at v1.14.1 holds no It or Entry (only the validators and method
lists the other suites use), so it ports to nothing.

Karpenter's fixtures map to nodewright's as follows. The fake provider's assorted instance types become the shipped
catalog (cluster_builder: m5, c5, r5, m6g, t3 in three zones); Karpenter's `mostExpensiveInstance` (a node with 32
CPU allocatable) is m5.24xlarge (`candidates_kit.MOST_EXPENSIVE`) and `leastExpensiveInstance` m5.xlarge, with real
allocatable and prices. `test.NodeClaimAndNode` plus ExpectMakeNodesAndNodeClaimsInitializedAndStateUpdated is
`Cluster.node(...)` (a launched, registered, initialized NodeClaim `claim-<name>` and its Node); `test.Pod` is
`Cluster.pod` (500m / 512Mi requests unless the case needs others); a `test.PodDisruptionBudget` in an envtest has
status `disruptionsAllowed: 0` (no disruption controller runs there): `candidates_kit.pdb` writes that status.
`disruption.NewCandidate(node, class)` is `candidates.candidate(state, member, class)`; SimulateScheduling is
`simulate.simulate`; BuildDisruptionBudgetMapping is `plan.pool_budgets(state).allowance(pool, reason)`; one
`ExpectSingletonReconciled(disruptionController)` is one `plan.plan(state, drift)` tick (drift is found by the
planner beside the plan, so a case's Drifted condition is passed as `drift`). Karpenter's queue holding a command
is nodewright's lease (`ClusterState.locked`). Karpenter's error strings are asserted as nodewright words them
(the same decision; the text is nodewright's own, listed per case), and its Kubernetes events are the refusal
reasons nodewright keeps (the planner's DisruptionBlocked events carry them). The Metrics Describe asserts the
decision each metric counts (delete or replace, reason, consolidation type) on the plan's decisions.
"""

from __future__ import annotations

from typing import Any

import pytest
from candidates_kit import DO_NOT_DISRUPT, MOST_EXPENSIVE, new_candidate, pdb, phase, terminating
from cluster_builder import T0, Cluster, instance_types

from nodewright.disruption.candidates import EVENTUAL, GRACEFUL, Candidate, candidates, eviction_cost
from nodewright.disruption.decision import (
    DRIFT,
    DRIFTED,
    EMPTINESS,
    EMPTY,
    MULTI_NODE,
    SINGLE_NODE,
    UNDERUTILIZED,
    Decision,
)
from nodewright.disruption.plan import plan, pool_budgets
from nodewright.disruption.reconcile import RESTORE, restorations
from nodewright.disruption.simulate import simulate
from nodewright.disruption.state import cluster_state
from nodewright.model.objects import Pod

FILE = "pkg/controllers/disruption/suite_test.go"
DISRUPTED_TAINT = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
POD_LABELS = {"test": "value"}
ALL_REASONS = (EMPTY, UNDERUTILIZED, DRIFTED)
HOSTNAME = "kubernetes.io/hostname"


def kind(decision: Decision) -> str:
    """Karpenter's decision label: "replace" when new capacity is launched, "delete" otherwise."""
    return "replace" if decision.replacement is not None or decision.replacement_price > 0 else "delete"


def one_node(**node: Any) -> Cluster:
    """The Candidate Filtering BeforeEach's NodePool and one node of the most expensive type, `claim-a` / `a`."""
    cluster = Cluster()
    cluster.node("a", MOST_EXPENSIVE, **node)
    return cluster


def refused(cluster: Cluster, disruption_class: str = GRACEFUL, **state: Any) -> str:
    found = new_candidate(cluster.state(**state), "claim-a", disruption_class)
    assert isinstance(found, str), "expected no candidate"
    return found


def accepted(cluster: Cluster, disruption_class: str = GRACEFUL, **state: Any) -> Candidate:
    found = new_candidate(cluster.state(**state), "claim-a", disruption_class)
    assert not isinstance(found, str), found
    assert found.member.node == "a" and found.name == "claim-a"  # c.Node and c.NodeClaim are set
    return found


# ============================================================================== Describe("Simulate Scheduling")


def test_should_allow_pods_on_deleting_nodes_to_reschedule_to_uninitialized_nodes() -> None:
    """suite_test.go Describe("Simulate Scheduling"): It("should allow pods on deleting nodes to reschedule to
    uninitialized nodes"): ten nodes, nine being deleted; the pod (2 CPU, one a node) of the tenth, the candidate,
    finds room (on new capacity) in the simulation."""
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "Never"})
    for i in range(10):
        cluster.node(f"n{i}", "m5.xlarge")
    cluster.pod("web-0", "n0", cpu="2", memory="100Mi")
    state = cluster.state(locked=[f"claim-n{i}" for i in range(1, 10)])
    found = new_candidate(state, "claim-n0")
    assert not isinstance(found, str), found
    sim = simulate(state, [found])
    assert "web/web-0" in sim.moving and sim.errors == {}


def test_should_allow_multiple_replace_operations_to_happen_successively() -> None:
    """suite_test.go Describe("Simulate Scheduling"): It("should allow multiple replace operations to happen
    successively"): ten drifted nodes, each holding the one pod whose nodeSelector names its `test-partition`
    label, budget `nodes: 3`: three replacements are decided, one after the other, then the budget stops the
    fourth. Each tick sees the NodeClaims decided before it as being disrupted (their workflows hold the locks).
    Karpenter starts one command a reconcile; nodewright's drift decides up to the budget in one tick, so the three
    replacements may come in fewer ticks: the assertion is Karpenter's end state (three replaced, then none)."""
    cluster = Cluster()
    cluster.pool(
        disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "3"}]},
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "test-partition", "operator": "Exists"},
        ],
    )
    for i in range(10):
        _, node = cluster.node(f"n{i:02d}", MOST_EXPENSIVE, expireAfter="5m", age=60)
        node["metadata"]["labels"]["test-partition"] = str(i)
        cluster.pod(f"web-{i}", f"n{i:02d}", cpu="100m", memory="100Mi", nodeSelector={"test-partition": str(i)})
    drift = {f"claim-n{i:02d}": DRIFTED for i in range(10)}
    locked: list[str] = []
    for _ in range(3):
        decided = plan(cluster.state(locked=locked), drift).decisions
        assert decided, "a replacement was expected"
        assert all(d.method == DRIFT and kind(d) == "replace" for d in decided)
        locked += [c.name for d in decided for c in d.candidates]
        if len(locked) >= 3:
            break
    assert len(locked) == 3
    assert plan(cluster.state(locked=locked), drift).decisions == []  # the budget allows only 3 disruptions


def local_volume(cluster: Cluster, node: str) -> None:
    """A no-provisioner StorageClass, a local PV only valid on `node` and its bound claim."""
    cluster.docs += [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local-path"},
            "provisioner": "kubernetes.io/no-provisioner",
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-local"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local-path",
                "local": {"path": "/mnt/local"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                        ]
                    }
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "web"},
            "spec": {
                "storageClassName": "local-path",
                "volumeName": "pv-local",
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}},
            },
            "status": {"phase": "Bound"},
        },
    ]


def test_can_replace_node_with_a_local_pv_ignoring_hostname_affinity() -> None:
    """suite_test.go Describe("Simulate Scheduling"): It("can replace node with a local PV (ignoring hostname
    affinity)"): the StatefulSet pod's local volume pins it to the node being replaced; the pin is ignored (the
    node goes) and a cheaper replacement is launched."""
    cluster = one_node()
    local_volume(cluster, "a")
    cluster.pod(
        "db-0",
        "a",
        labels={"app": "test"},
        owner="StatefulSet",
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    )
    [decision] = plan(cluster.state(), {}).decisions
    assert decision.method == SINGLE_NODE and kind(decision) == "replace"
    assert [c.name for c in decision.candidates] == ["claim-a"]


@pytest.mark.skip(
    reason="a race between two controllers in one Karpenter process (a Create call hung while the queue starts a "
    "command, and the provisioner run meanwhile); nodewright's planner and provisioner are separate invocations "
    "sharing no in-memory cluster state or queue"
)
def test_should_ensure_that_we_do_not_duplicate_capacity_for_disrupted_nodes_with_provisioning() -> None:
    """suite_test.go Describe("Simulate Scheduling"): It("should ensure that we do not duplicate capacity for
    disrupted nodes with provisioning")."""


# ================================================================================ Describe("Disruption Taints")


def test_should_remove_taints_from_nodeclaims_left_tainted_from_a_previous_disruption_action() -> None:
    """suite_test.go Describe("Disruption Taints"): It("should remove taints from NodeClaims that were left tainted
    from a previous disruption action"): a node carrying karpenter.sh/disrupted:NoSchedule with nothing disrupting
    it (no lease) is given back by the planner's reconciliation (`reconcile.restorations`): taint removed."""
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "Never"})
    cluster.node("a", taints=[DISRUPTED_TAINT])
    cluster.pod("web-0", "a", cpu="100m", memory="100Mi")
    state = cluster.state()
    [repair] = restorations(state.fleet, leased=(), why_void={})
    assert (repair.kind, repair.nodeclaim, repair.node) == (RESTORE, "claim-a", "a")
    assert "tainted" in repair.reason


def test_should_add_and_remove_taints_from_nodeclaims_that_fail_to_disrupt() -> None:
    """suite_test.go Describe("Disruption Taints"): It("should add and remove taints from NodeClaims that fail to
    disrupt"): the on-demand node is replaced by a cheaper offering (the command taints it, in nodewright's
    workflow); when the replacement fails and the command ends, the taint is removed: here, the tainted node whose
    lease is gone is restored by the reconciliation."""
    cluster = Cluster()
    cluster.pool(disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized"})
    cluster.node("a", MOST_EXPENSIVE)
    cluster.pod("web-0", "a", cpu="100m", memory="100Mi")
    [decision] = plan(cluster.state(), {}).decisions
    assert kind(decision) == "replace" and [c.name for c in decision.candidates] == ["claim-a"]
    node = cluster.find("Node", "a")
    node["spec"]["taints"] = [DISRUPTED_TAINT]
    assert plan(cluster.state(locked=["claim-a"]), {}).decisions == []  # while the command runs
    [repair] = restorations(cluster.state().fleet, leased=(), why_void={"claim-a": "its replacement failed"})
    assert (repair.kind, repair.node) == (RESTORE, "a") and "its replacement failed" in repair.reason


# =================================================================== Describe("BuildDisruptionBudgetMapping")


def ten_nodes(budget: str = "100%") -> Cluster:
    """The Describe's BeforeEach: ten initialized nodes of one NodePool, with a budget `nodes: <budget>`."""
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": budget}]})
    for i in range(10):
        cluster.node(f"n{i}", MOST_EXPENSIVE)
    return cluster


def allowed(cluster: Cluster, locked: tuple[str, ...] = ()) -> set[int]:
    """The pool's allowed disruptions for every known reason (one value expected)."""
    budgets = pool_budgets(cluster.state(locked=locked))
    return {budgets.allowance("general", reason).allowed for reason in ALL_REASONS}


def test_should_not_consider_nodes_that_are_not_managed_as_part_of_disruption_count() -> None:
    """suite_test.go Describe("BuildDisruptionBudgetMapping"): It("should not consider nodes that are not managed
    as part of disruption count")."""
    cluster = ten_nodes()
    _, unmanaged = cluster.node("unmanaged", MOST_EXPENSIVE)
    cluster.docs.remove(cluster.find("NodeClaim", "claim-unmanaged"))
    del unmanaged["metadata"]["labels"]["karpenter.sh/nodepool"]
    assert allowed(cluster) == {10}


def test_should_not_consider_nodes_that_are_not_initialized_as_part_of_disruption_count() -> None:
    """suite_test.go Describe("BuildDisruptionBudgetMapping"): It("should not consider nodes that are not
    initialized as part of disruption count")."""
    cluster = ten_nodes()
    cluster.node("starting", MOST_EXPENSIVE, initialized=False)
    assert allowed(cluster) == {10}


def test_should_not_count_nodes_that_have_the_terminating_status_condition_in_disruption_count() -> None:
    """suite_test.go Describe("BuildDisruptionBudgetMapping"): It("should not consider nodes that have the
    terminating status condition as part of disruption count")."""
    cluster = ten_nodes()
    cluster.node("going", MOST_EXPENSIVE, conditions=[{"type": "InstanceTerminating", "status": "True"}])
    assert allowed(cluster) == {10}


def test_should_not_return_a_negative_disruption_value() -> None:
    """suite_test.go Describe("BuildDisruptionBudgetMapping"): It("should not return a negative disruption
    value"): every NodeClaim and Node deleted, budget 10%."""
    cluster = ten_nodes("10%")
    for doc in cluster.docs:
        if doc["kind"] in ("NodeClaim", "Node"):
            doc["metadata"]["deletionTimestamp"] = "2027-01-15T07:59:00Z"
    assert allowed(cluster) == {0}


def test_should_count_nodes_with_a_deletion_timestamp_and_marked_for_deletion() -> None:
    """suite_test.go Describe("BuildDisruptionBudgetMapping"): It("should consider nodes with a deletion timestamp
    set and MarkedForDeletion to the disruption count"): one deleted, one marked (its workflow holds the lock)."""
    cluster = ten_nodes()
    cluster.find("NodeClaim", "claim-n0")["metadata"]["deletionTimestamp"] = "2027-01-15T07:59:00Z"
    cluster.find("Node", "n0")["metadata"]["deletionTimestamp"] = "2027-01-15T07:59:00Z"
    assert allowed(cluster, locked=("claim-n1",)) == {8}


def test_should_consider_not_ready_nodes_to_the_disruption_count() -> None:
    """suite_test.go Describe("BuildDisruptionBudgetMapping"): It("should consider not ready nodes to the
    disruption count")."""
    cluster = ten_nodes()
    for name in ("n0", "n1"):
        cluster.find("Node", name)["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert allowed(cluster) == {8}


# ================================================================================ Describe("Pod Eviction Cost")

STANDARD_POD_COST = 1.0


def cost(annotations: dict[str, str] | None = None, priority: int = 0) -> float:
    return eviction_cost(Pod("default", "p", annotations=annotations or {}, priority=priority))


def test_should_have_a_standard_disruption_cost_for_a_pod_with_no_priority_or_disruption_cost() -> None:
    """suite_test.go Describe("Pod Eviction Cost"): It("should have a standard disruptionCost for a pod with no
    priority or disruptionCost specified")."""
    assert cost() == STANDARD_POD_COST


def test_should_have_a_higher_disruption_cost_for_a_pod_with_a_positive_deletion_cost() -> None:
    """suite_test.go Describe("Pod Eviction Cost"): It("should have a higher disruptionCost for a pod with a
    positive deletion disruptionCost")."""
    assert cost({"controller.kubernetes.io/pod-deletion-cost": "100"}) > STANDARD_POD_COST


def test_should_have_a_lower_disruption_cost_for_a_pod_with_a_positive_deletion_cost() -> None:
    """suite_test.go Describe("Pod Eviction Cost"): It("should have a lower disruptionCost for a pod with a positive
    deletion disruptionCost") (the case sets a negative deletion cost, -100)."""
    assert cost({"controller.kubernetes.io/pod-deletion-cost": "-100"}) < STANDARD_POD_COST


def test_should_have_higher_costs_for_higher_deletion_costs() -> None:
    """suite_test.go Describe("Pod Eviction Cost"): It("should have higher costs for higher deletion costs")."""
    key = "controller.kubernetes.io/pod-deletion-cost"
    assert cost({key: "101"}) > cost({key: "100"}) > cost({key: "99"})


def test_should_have_a_higher_disruption_cost_for_a_pod_with_a_higher_priority() -> None:
    """suite_test.go Describe("Pod Eviction Cost"): It("should have a higher disruptionCost for a pod with a higher
    priority")."""
    assert cost(priority=1) > STANDARD_POD_COST


def test_should_have_a_lower_disruption_cost_for_a_pod_with_a_lower_priority() -> None:
    """suite_test.go Describe("Pod Eviction Cost"): It("should have a lower disruptionCost for a pod with a lower
    priority")."""
    assert cost(priority=-1) < STANDARD_POD_COST


# ============================================================================== Describe("Candidate Filtering")

DND_TRUE = {DO_NOT_DISRUPT: "true"}


def dnd_refusal(pod: str) -> str:
    """nodewright's words for Karpenter's `pod has "karpenter.sh/do-not-disrupt" annotation (Pod=<key>)`."""
    return f'pod {pod} has "karpenter.sh/do-not-disrupt" annotation'


def pdb_refusal(budget: str, pod: str) -> str:
    """nodewright's words for Karpenter's `pdb prevents pod evictions (PodDisruptionBudget=[<key>])`."""
    return f"PodDisruptionBudget {budget} allows no disruption of pod {pod} now"


def test_should_not_consider_candidates_with_do_not_disrupt_pods_scheduled_and_no_tgp() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have do-not-disrupt
    pods scheduled and no terminationGracePeriod")."""
    cluster = one_node()
    cluster.pod("web-0", "a", annotations=DND_TRUE)
    assert refused(cluster) == dnd_refusal("web/web-0")


def test_should_not_consider_candidates_that_have_do_not_disrupt_mirror_pods_scheduled() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have do-not-disrupt
    mirror pods scheduled")."""
    cluster = one_node()
    cluster.pod("static-0", "a", annotations=DND_TRUE, owner="Node")
    assert refused(cluster) == dnd_refusal("web/static-0")


def test_should_not_consider_candidates_that_have_do_not_disrupt_daemonset_pods_scheduled() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have do-not-disrupt
    daemonset pods scheduled")."""
    cluster = one_node()
    cluster.pod("agent-0", "a", annotations=DND_TRUE, owner="DaemonSet")
    assert refused(cluster) == dnd_refusal("web/agent-0")


def test_should_consider_candidates_with_do_not_disrupt_pods_with_a_tgp_for_eventual() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have do-not-disrupt pods
    scheduled with a terminationGracePeriod set for eventual disruption")."""
    cluster = one_node(terminationGracePeriod="300s")
    cluster.pod("web-0", "a", annotations=DND_TRUE)
    accepted(cluster, EVENTUAL)


def test_should_consider_candidates_with_pdb_blocked_pods_with_a_tgp_for_eventual() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have PDB-blocked pods
    scheduled with a terminationGracePeriod set for eventual disruption")."""
    cluster = one_node(terminationGracePeriod="300s")
    cluster.pod("web-0", "a", labels=POD_LABELS)
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    accepted(cluster, EVENTUAL)


def test_should_not_consider_candidates_with_do_not_disrupt_pods_with_a_tgp_for_graceful() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have do-not-disrupt
    pods scheduled with a terminationGracePeriod set for graceful disruption")."""
    cluster = one_node(terminationGracePeriod="300s")
    cluster.pod("web-0", "a", annotations=DND_TRUE)
    assert refused(cluster, GRACEFUL) == dnd_refusal("web/web-0")


def test_should_not_consider_candidates_with_pdb_blocked_pods_with_a_tgp_for_graceful() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have PDB-blocked pods
    scheduled with a terminationGracePeriod set for graceful disruption")."""
    cluster = one_node(terminationGracePeriod="300s")
    cluster.pod("web-0", "a", labels=POD_LABELS)
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    assert refused(cluster, GRACEFUL) == pdb_refusal("web/pdb", "web/web-0")


def test_should_not_consider_candidates_with_do_not_disrupt_pods_without_a_tgp_for_eventual() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have do-not-disrupt
    pods scheduled without a terminationGracePeriod set for eventual disruption")."""
    cluster = one_node()
    cluster.pod("web-0", "a", annotations=DND_TRUE)
    assert refused(cluster, EVENTUAL) == dnd_refusal("web/web-0")


def test_should_not_consider_candidates_with_pdb_blocked_pods_without_a_tgp_for_eventual() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have PDB-blocked pods
    scheduled without a terminationGracePeriod set for eventual disruption")."""
    cluster = one_node()
    cluster.pod("web-0", "a", labels=POD_LABELS)
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    assert refused(cluster, EVENTUAL) == pdb_refusal("web/pdb", "web/web-0")


def test_should_consider_candidates_that_have_do_not_disrupt_terminating_pods() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have do-not-disrupt
    terminating pods")."""
    cluster = one_node()
    terminating(cluster.pod("web-0", "a", annotations=DND_TRUE))
    accepted(cluster)


def test_should_consider_candidates_that_have_do_not_disrupt_terminal_pods() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have do-not-disrupt
    terminal pods")."""
    cluster = one_node()
    phase(cluster.pod("done-0", "a", annotations=DND_TRUE), "Succeeded")
    phase(cluster.pod("failed-0", "a", annotations=DND_TRUE), "Failed")
    accepted(cluster)


def test_should_not_consider_candidates_that_have_do_not_disrupt_on_nodes() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have do-not-disrupt on
    nodes"): Karpenter's text exactly."""
    cluster = one_node(annotations=DND_TRUE)
    assert refused(cluster) == 'disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'


def test_should_not_consider_candidates_that_have_multiple_pdbs_on_the_same_pod() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have multiple PDBs on
    the same pod"): Karpenter's "eviction does not support multiple PDBs" naming both budgets."""
    cluster = one_node()
    cluster.pod("web-0", "a", labels=POD_LABELS)
    pdb(cluster, "pdb1", POD_LABELS, maxUnavailable=0)
    pdb(cluster, "pdb2", POD_LABELS, maxUnavailable=0)
    why = refused(cluster)
    assert "more than one PodDisruptionBudget" in why and "web/pdb1" in why and "web/pdb2" in why


def test_should_not_consider_candidates_that_have_fully_blocking_pdbs() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have fully blocking
    PDBs")."""
    cluster = one_node()
    cluster.pod("web-0", "a", labels=POD_LABELS)
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    assert refused(cluster) == pdb_refusal("web/pdb", "web/web-0")


def test_should_not_consider_candidates_that_have_fully_blocking_pdbs_on_daemonset_pods() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have fully blocking
    PDBs on daemonset pods")."""
    cluster = one_node()
    cluster.pod("agent-0", "a", labels=POD_LABELS, owner="DaemonSet")
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    assert refused(cluster) == pdb_refusal("web/pdb", "web/agent-0")


def test_should_consider_candidates_that_have_fully_blocking_pdbs_on_mirror_pods() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have fully blocking PDBs
    on mirror pods")."""
    cluster = one_node()
    cluster.pod("static-0", "a", labels=POD_LABELS, owner="Node")
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    accepted(cluster)


def test_should_not_consider_candidates_with_do_not_disrupt_pods_without_a_tgp_for_graceful() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have do-not-disrupt
    pods without a terminationGracePeriod set for graceful disruption")."""
    cluster = one_node()
    cluster.pod("web-0", "a", annotations=DND_TRUE)
    assert refused(cluster, GRACEFUL) == dnd_refusal("web/web-0")


def test_should_not_consider_candidates_with_fully_blocking_pdbs_without_a_tgp_for_graceful() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that have fully blocking
    PDBs without a terminationGracePeriod set for graceful disruption")."""
    cluster = one_node()
    cluster.pod("web-0", "a", labels=POD_LABELS)
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    assert refused(cluster, GRACEFUL) == pdb_refusal("web/pdb", "web/web-0")


def test_should_consider_candidates_that_have_fully_blocking_pdbs_on_terminal_pods() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have fully blocking PDBs
    on terminal pods")."""
    cluster = one_node()
    phase(cluster.pod("done-0", "a", labels=POD_LABELS), "Succeeded")
    phase(cluster.pod("failed-0", "a", labels=POD_LABELS), "Failed")
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    accepted(cluster)


def test_should_consider_candidates_that_have_fully_blocking_pdbs_on_terminating_pods() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have fully blocking PDBs
    on terminating pods")."""
    cluster = one_node()
    terminating(cluster.pod("web-0", "a", labels=POD_LABELS))
    pdb(cluster, "pdb", POD_LABELS, maxUnavailable=0)
    accepted(cluster)


def test_should_not_consider_candidates_that_has_just_a_node_representation() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that has just a Node
    representation"): Karpenter refuses it ("node isn't managed by karpenter"); nodewright's fleet is built from
    NodeClaims, so a Node without one is never considered at all."""
    cluster = one_node()
    cluster.docs.remove(cluster.find("NodeClaim", "claim-a"))
    state = cluster.state()
    assert state.fleet == ()
    assert candidates(state) == ([], {})


def test_should_not_consider_candidate_that_has_just_a_nodeclaim_representation() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidate that has just a NodeClaim
    representation"): Karpenter's text exactly."""
    cluster = one_node()
    cluster.docs.remove(cluster.find("Node", "a"))
    assert refused(cluster) == "nodeclaim does not have an associated node"


def test_should_not_consider_candidates_that_are_nominated() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that are nominated"):
    Karpenter's text exactly. A pending pod the provisioner nominated to the node (its NodeClaim's nominated pods)
    holds it while it is fresh."""
    cluster = Cluster()
    claim, _ = cluster.node("a", MOST_EXPENSIVE, age=30)
    claim["metadata"]["annotations"]["nodewright.io/pods"] = '["web/late-0"]'
    cluster.pod("late-0")  # still pending
    assert refused(cluster) == "node is nominated for a pending pod"


def test_should_not_consider_candidates_that_are_deleting() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that are deleting"):
    Karpenter's text exactly."""
    cluster = one_node()
    cluster.find("NodeClaim", "claim-a")["metadata"]["deletionTimestamp"] = "2027-01-15T07:59:00Z"
    assert refused(cluster) == "node is deleting or marked for deletion"


def test_should_not_consider_candidates_that_are_marked_for_deletion() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that are
    MarkedForDeletion"): Karpenter's text exactly; nodewright marks a node with karpenter.sh/disrupted:NoSchedule."""
    cluster = one_node(taints=[DISRUPTED_TAINT])
    assert refused(cluster) == "node is deleting or marked for deletion"


def test_should_not_consider_candidates_that_arent_yet_initialized() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that aren't yet
    initialized"): Karpenter's text exactly."""
    cluster = one_node(initialized=False)
    assert refused(cluster) == "node isn't initialized"


def test_should_not_consider_candidates_not_owned_by_a_nodepool_no_karpenter_sh_nodepool_label() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that are not owned by a
    NodePool (no karpenter.sh/nodepool label)"): not a candidate, as in Karpenter. nodewright's words differ:
    its fleet join refuses to pair a NodeClaim and a Node whose karpenter.sh/nodepool labels are missing or
    disagree (the NodeClaim is left without a node: "nodeclaim does not have an associated node"), and its
    loader reports the NodeClaim's missing label as an error naming it."""
    cluster = one_node()
    for doc in (cluster.find("NodeClaim", "claim-a"), cluster.find("Node", "a")):
        del doc["metadata"]["labels"]["karpenter.sh/nodepool"]
    state, errors = cluster_state(cluster.docs, instance_types(), T0)
    assert [(e.kind, e.name, e.path) for e in errors] == [
        ("NodeClaim", "claim-a", 'metadata.labels["karpenter.sh/nodepool"]')
    ]
    assert candidates(state) == ([], {"claim-a": "nodeclaim does not have an associated node"})


def test_should_not_consider_candidates_that_are_have_a_non_existent_nodepool() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that are have a
    non-existent NodePool"): Karpenter's "nodepool not found (NodePool=<name>)" in nodewright's words."""
    cluster = one_node()
    cluster.docs.remove(cluster.find("NodePool", "general"))
    assert refused(cluster) == 'NodePool "general" not found'


@pytest.mark.parametrize(
    "label", ["karpenter.sh/capacity-type", "topology.kubernetes.io/zone", "node.kubernetes.io/instance-type"]
)
def test_should_consider_candidates_that_do_not_have_the_label(label: str) -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that do not have the
    karpenter.sh/capacity-type label"), It("should consider candidates that do not have the
    topology.kubernetes.io/zone label") and It("should consider candidates that do not have the
    node.kubernetes.io/instance-type label"): one parametrized test, one id per It."""
    cluster = one_node()
    for doc in (cluster.find("NodeClaim", "claim-a"), cluster.find("Node", "a")):
        del doc["metadata"]["labels"][label]
    accepted(cluster)


def test_should_consider_candidates_that_have_an_instance_type_that_cannot_be_resolved() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should consider candidates that have an instance type that
    cannot be resolved"): the catalog does not know the node's type; it is a candidate with no instance type."""
    cluster = one_node()
    types = [t for t in instance_types() if t.name != MOST_EXPENSIVE]
    found = accepted(cluster, types=types)
    assert found.instance_type is None


def test_should_not_consider_candidates_that_are_actively_being_processed_in_the_queue() -> None:
    """suite_test.go Describe("Candidate Filtering"): It("should not consider candidates that are actively being
    processed in the queue"): Karpenter's text exactly; nodewright's queue is the disruption workflow's lease."""
    cluster = one_node()
    assert refused(cluster, locked=["claim-a"]) == "candidate is already being disrupted"


# ========================================================================================= Describe("Metrics")


def metrics_cluster(count: int = 3, instance_type: str = "m5.xlarge") -> Cluster:
    """The Metrics BeforeEach: a NodePool consolidating WhenEmptyOrUnderutilized after 0s, budget 100%, and nodes
    of the cheapest type (m5.xlarge here) that are Consolidatable."""
    cluster = Cluster()
    cluster.pool(
        disruption={
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "0s",
            "budgets": [{"nodes": "100%"}],
        },
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]},
        ],
    )
    for i in range(count):
        cluster.node(f"n{i}", instance_type)
    return cluster


def test_should_fire_metrics_for_single_node_empty_disruption() -> None:
    """suite_test.go Describe("Metrics"): It("should fire metrics for single node empty disruption"): one decision,
    delete, reason empty, consolidation type empty."""
    cluster = metrics_cluster(1)
    [decision] = plan(cluster.state(), {}).decisions
    assert (decision.method, decision.reason, kind(decision)) == (EMPTINESS, EMPTY, "delete")


def test_should_fire_metrics_for_single_node_delete_disruption() -> None:
    """suite_test.go Describe("Metrics"): It("should fire metrics for single node delete disruption"): the drifted
    node's two pods fit on the other node (not consolidatable: a pod event just now), so drift deletes it."""
    cluster = metrics_cluster(2)
    cluster.pool(
        disruption={"consolidateAfter": "5m", "budgets": [{"nodes": "100%"}]},
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]},
        ],
    )
    cluster.find("NodeClaim", "claim-n1")["status"]["lastPodEventTime"] = "2027-01-15T08:00:00Z"
    for i, node in enumerate(("n0", "n0", "n1", "n1")):
        cluster.pod(f"web-{i}", node, bound_ago=3600 if node == "n0" else 0)
    [decision] = plan(cluster.state(), {"claim-n0": DRIFTED}).decisions
    assert (decision.method, decision.reason, kind(decision)) == (DRIFT, DRIFTED, "delete")
    assert [c.name for c in decision.candidates] == ["claim-n0"]


def test_should_fire_metrics_for_single_node_replace_disruption() -> None:
    """suite_test.go Describe("Metrics"): It("should fire metrics for single node replace disruption"): the only
    node drifted with four pods: replaced."""
    cluster = metrics_cluster(1)
    for i in range(4):
        cluster.pod(f"web-{i}", "n0")
    [decision] = plan(cluster.state(), {"claim-n0": DRIFTED}).decisions
    assert (decision.method, decision.reason, kind(decision)) == (DRIFT, DRIFTED, "replace")


def test_should_fire_metrics_for_multi_node_empty_disruption() -> None:
    """suite_test.go Describe("Metrics"): It("should fire metrics for multi-node empty disruption"): Karpenter
    counts one decision deleting the three empty nodes; nodewright starts one execution per empty node (README,
    "Disruption: where nodewright differs": one execution per empty node), so three delete decisions, reason
    empty, one per node."""
    cluster = metrics_cluster(3)
    decided = plan(cluster.state(), {}).decisions
    assert [(d.method, d.reason, kind(d)) for d in decided] == [(EMPTINESS, EMPTY, "delete")] * 3
    assert sorted(c.name for d in decided for c in d.candidates) == ["claim-n0", "claim-n1", "claim-n2"]


def test_should_fire_metrics_for_multi_node_delete_disruption() -> None:
    """suite_test.go Describe("Metrics"): It("should fire metrics for multi-node delete disruption"): three
    ReplicaSet pods, one per node (a fourth pending): multi-node consolidation deletes nodes, no replacement."""
    cluster = metrics_cluster(3)
    for i in range(3):
        cluster.pod(f"web-{i}", f"n{i}", labels={"app": "test"})
    cluster.pod("web-3", labels={"app": "test"})
    [decision] = plan(cluster.state(), {}).decisions
    assert (decision.method, decision.reason, kind(decision)) == (MULTI_NODE, UNDERUTILIZED, "delete")
    assert len(decision.candidates) >= 2


def test_should_fire_metrics_for_multi_node_replace_disruption() -> None:
    """suite_test.go Describe("Metrics"): It("should fire metrics for multi-node replace disruption"): three of the
    most expensive nodes holding four small pods: multi-node consolidation replaces them with one cheaper node."""
    cluster = metrics_cluster(3, MOST_EXPENSIVE)
    for i, node in enumerate(("n0", "n1", "n2", "n2")):
        cluster.pod(f"web-{i}", node, labels={"app": "test"})
    [decision] = plan(cluster.state(), {}).decisions
    assert (decision.method, decision.reason, kind(decision)) == (MULTI_NODE, UNDERUTILIZED, "replace")
    assert len(decision.candidates) == 3


@pytest.mark.skip(
    reason="nodewright's multi-node consolidation has no wall-clock deadline: a tick is bounded by its candidate and "
    "pod caps (MAX_MULTI_NODE_CANDIDATES, MAX_MULTI_NODE_PODS), so its decision does not depend on the Lambda's speed"
)
def test_should_stop_multi_node_consolidation_after_context_deadline_is_reached() -> None:
    """suite_test.go Describe("Metrics"): It("should stop multi-node consolidation after context deadline is
    reached")."""
