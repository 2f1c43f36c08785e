"""Termination as Karpenter does it: the finalizer on what nodewright launches, a deletion drained and terminated
through the workflow before the finalizer comes off, and instances no NodeClaim accounts for collected."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from service_fakes import FakeCloud, FixedClock, SmallCatalog, node_for, nodeclass, nodepool, pod
from test_provision_service import batch_of

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.disruption.commands import DELETED
from nodewright.disruption.termination import GC_GRACE_SECONDS
from nodewright.ports import Instance
from nodewright.service import workflow
from nodewright.service.plan import PlannerPorts, TickResult, tick
from nodewright.service.provision import provision
from nodewright.service.workflow import Ports
from nodewright.tags import FINALIZER as TERMINATION_FINALIZER
from nodewright.tags import launch_tags

CATALOG = SmallCatalog()
NODE = "ip-10-0-0-1.ec2.internal"


def running_node() -> tuple[InMemoryCluster, FakeCloud, InMemoryState, FixedClock, str, str]:
    """A NodeClaim launched for one pod, its node registered and the pod running there."""
    clock = FixedClock()
    owned = nodepool()
    owned["metadata"]["uid"] = "uid-general"
    cluster = InMemoryCluster([owned, nodeclass(), pod("web-0")], clock=clock.now)
    cloud, state = FakeCloud(cluster_log=cluster.log), InMemoryState()
    [launched] = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG).launched
    cluster.put(node_for(cloud.instances[launched.instance_id], NODE))
    cluster.objects[("Pod", "web", "web-0")]["spec"]["nodeName"] = NODE
    return cluster, cloud, state, clock, launched.name, launched.instance_id


def planner_tick(cluster: InMemoryCluster, cloud: FakeCloud, state: InMemoryState, clock: FixedClock) -> TickResult:
    return tick(PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, state, CATALOG))


def test_a_nodeclaim_is_created_with_the_finalizer_and_its_nodepool_as_owner_and_its_node_gets_it_at_registration():
    cluster, cloud, state, clock, claim, _ = running_node()
    metadata = cluster.objects[("NodeClaim", "", claim)]["metadata"]
    assert metadata["finalizers"] == [TERMINATION_FINALIZER]
    assert metadata["ownerReferences"] == [
        {"apiVersion": "nodewright.io/v1", "kind": "NodePool", "name": "general", "uid": "uid-general"}
    ]
    planner_tick(cluster, cloud, state, clock)  # registers the node
    assert cluster.objects[("Node", "", NODE)]["metadata"]["finalizers"] == [TERMINATION_FINALIZER]


def run_workflow(document: dict[str, Any], name: str, ports: Ports) -> dict[str, Any]:
    """The state machine's path for a forceful, urgent command: identify, replacement and drain, terminate."""
    state = dict(document)
    state["identify"] = workflow.STEPS["identify"](state, name, ports)
    assert state["identify"]["outcome"] == "proceed", state["identify"]
    state["replacement"] = workflow.STEPS["launch_replacement"](state, name, ports)
    for _ in range(3):
        state["drain"] = workflow.STEPS["drain"](state, name, ports)
    assert state["drain"]["done"], state["drain"]
    state["terminate"] = workflow.STEPS["terminate"](state, name, ports)
    return state


def test_deleting_a_nodeclaim_drains_and_terminates_it_through_the_workflow_then_lets_it_go() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    planner_tick(cluster, cloud, state, clock)
    cluster.request_delete("NodeClaim", claim, at="2026-01-01T00:00:00Z")
    assert cluster.nodeclaim(claim) is not None  # held by the finalizer

    workflows = InMemoryWorkflows()
    ports = PlannerPorts(cluster, cloud, workflows, clock, state, CATALOG)
    result = tick(ports)
    [started] = [s for s in result.started if s["reason"] == DELETED]
    assert started["nodeclaim"] == claim
    document = workflows.started[started["execution"]]
    assert document["forceful"] and document["requested"] == "2026-01-01T00:00:00Z"
    # While that execution runs, its lease keeps every later tick from starting another attempt.
    assert tick(ports).started == [] and list(workflows.started) == [started["execution"]]

    run_workflow(document, started["execution"], Ports(cluster, cloud, state, clock, CATALOG))
    assert instance in cloud.terminated
    assert cluster.nodeclaim(claim) is None and ("Node", "", NODE) not in cluster.objects
    assert "evict pod/web/web-0" in cluster.log  # drained, not left to die with the node


def test_deleting_the_node_takes_its_nodeclaim_the_same_way() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    planner_tick(cluster, cloud, state, clock)
    cluster.request_delete("Node", NODE)
    assert ("Node", "", NODE) in cluster.objects
    [started] = [s for s in planner_tick(cluster, cloud, state, clock).started if s["reason"] == DELETED]
    assert started["nodeclaim"] == claim


def test_a_deleted_nodeclaim_a_workflow_already_holds_is_left_to_that_workflow() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    planner_tick(cluster, cloud, state, clock)
    cluster.request_delete("NodeClaim", claim)
    state.acquire_lock(f"nodeclaim/{claim}", "SpotInterruption-execution", clock.now(), 600)
    assert not [s for s in planner_tick(cluster, cloud, state, clock).started if s["reason"] == DELETED]


def test_instances_no_nodeclaim_accounts_for_are_terminated_30_seconds_after_launch_with_their_node() -> None:
    cluster, cloud, state, clock, claim, recorded = running_node()
    now = clock.now()
    tags = launch_tags("demo", "default", "default", "gone")
    cloud.instances["i-leaked"] = Instance("i-leaked", "m5.large", "us-east-1a", "running", "on-demand", now - 31, tags)
    cloud.instances["i-young"] = Instance("i-young", "m5.large", "us-east-1a", "running", "on-demand", now - 10, tags)
    # Tagged for a NodeClaim that records another instance (a second launch for it): collected by providerID.
    named = launch_tags("demo", "default", "default", claim)
    cloud.instances["i-named"] = Instance("i-named", "m5.large", "us-east-1a", "running", "on-demand", now - 600, named)
    # Karpenter's own capacity in the same cluster carries its tags and the shared cluster tag, none of nodewright's.
    karpenters = {
        "kubernetes.io/cluster/demo": "owned",
        "eks:eks-cluster-name": "demo",
        "karpenter.sh/nodepool": "default",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "karpenter.sh/nodeclaim": "gone",
    }
    cloud.instances["i-karp"] = Instance(
        "i-karp", "m5.large", "us-east-1a", "running", "on-demand", now - 600, karpenters
    )
    cloud.instances[recorded] = replace(cloud.instances[recorded], launch_time=now - 600)
    orphan = node_for(cloud.instances["i-leaked"], "ip-10-0-0-9.ec2.internal")
    orphan["metadata"]["finalizers"] = [TERMINATION_FINALIZER]
    cluster.put(orphan)

    result = planner_tick(cluster, cloud, state, clock)
    assert result.collected == ["i-leaked", "i-named"] and sorted(cloud.terminated) == ["i-leaked", "i-named"]
    assert ("Node", "", "ip-10-0-0-9.ec2.internal") not in cluster.objects
    assert GC_GRACE_SECONDS == 30  # Karpenter AWS's garbage collection


def test_a_nodeclaim_being_deleted_is_not_capacity_on_its_way_and_its_pods_are_planned_again() -> None:
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(), nodeclass(), pod("web-0")], clock=clock.now)
    cloud, state = FakeCloud(cluster_log=cluster.log), InMemoryState()
    [first] = provision(batch_of(cluster, "b1"), cluster, cloud, state, clock, CATALOG).launched
    cluster.request_delete("NodeClaim", first.name)  # before its node registered
    again = provision(batch_of(cluster, "b2"), cluster, cloud, state, clock, CATALOG)
    assert [c.pods for c in again.launched if c.name != first.name] == [("web/web-0",)]
