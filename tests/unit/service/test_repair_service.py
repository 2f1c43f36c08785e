"""Node repair through the planner's tick and the workflow, as Karpenter's health controller and termination do it:
the NodeClaim's termination timestamp set to now, a forceful `Unhealthy` workflow, the NodeClaim deleted; the drain
deletes what a PodDisruptionBudget would have held; a NodePool with too many unhealthy nodes is held back with a
NodeRepairBlocked event."""

from __future__ import annotations

from service_fakes import FakeCloud, FixedClock, node_for, nodeclass, nodepool, pod
from test_provision_service import batch_of
from test_termination_service import CATALOG, NODE, run_workflow, running_node

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.disruption.commands import UNHEALTHY
from nodewright.disruption.repair import REPAIR_BLOCKED, TERMINATION_TIMESTAMP_ANNOTATION
from nodewright.model.conditions import rfc3339
from nodewright.service.plan import PlannerPorts, tick
from nodewright.service.provision import provision
from nodewright.service.workflow import Ports


def not_ready(cluster: InMemoryCluster, node: str, since: float) -> None:
    cluster.objects[("Node", "", node)]["status"]["conditions"] = [
        {"type": "Ready", "status": "Unknown", "lastTransitionTime": rfc3339(since)}
    ]


def blocking_pdb(cluster: InMemoryCluster) -> None:
    cluster.put(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "web"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {}}},
            "status": {"disruptionsAllowed": 0},
        }
    )


def test_a_node_unknown_for_31_minutes_is_repaired_forcefully_past_its_pdb() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    workflows = InMemoryWorkflows()
    ports = PlannerPorts(cluster, cloud, workflows, clock, state, CATALOG)
    tick(ports)  # registers the node
    blocking_pdb(cluster)
    not_ready(cluster, NODE, clock.now() - 31 * 60)

    result = tick(ports)
    [started] = [s for s in result.started if s["reason"] == UNHEALTHY]
    assert started["nodeclaim"] == claim and started["method"] == "repair"
    metadata = cluster.nodeclaim(claim)["metadata"]  # type: ignore[index]
    assert metadata["annotations"][TERMINATION_TIMESTAMP_ANNOTATION] == rfc3339(clock.now())
    assert metadata.get("deletionTimestamp")  # deleted as Karpenter's health controller deletes it
    document = workflows.started[started["execution"]]
    assert document["forceful"] and document["deadline"] == clock.now()
    # The deletion is this execution's: the termination starts no second workflow while it runs.
    assert tick(ports).started == []

    run_workflow(document, started["execution"], Ports(cluster, cloud, state, clock, CATALOG))
    assert instance in cloud.terminated and cluster.nodeclaim(claim) is None
    assert "delete pod/web/web-0" in " ".join(cluster.log)  # deleted, not evicted: the PDB allows nothing


def test_repair_takes_the_node_from_a_voluntary_disruption_that_holds_it() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    ports = PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, state, CATALOG)
    tick(ports)
    state.acquire_lock(f"nodeclaim/{claim}", "Drifted-execution", clock.now(), 600)
    not_ready(cluster, NODE, clock.now() - 45 * 60)
    [started] = [s for s in tick(ports).started if s["reason"] == UNHEALTHY]
    assert started["nodeclaim"] == claim


def test_within_its_toleration_a_node_is_left_alone() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    ports = PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, state, CATALOG)
    tick(ports)
    not_ready(cluster, NODE, clock.now() - 20 * 60)
    result = tick(ports)
    assert result.started == [] and not cluster.nodeclaim(claim)["metadata"].get("deletionTimestamp")  # type: ignore[index]


def test_a_nodepool_with_too_many_unhealthy_nodes_is_held_back_with_karpenters_event() -> None:
    clock = FixedClock()
    cluster = InMemoryCluster([], clock=clock.now)
    cloud, state = FakeCloud(cluster_log=cluster.log), InMemoryState()
    for doc in (nodepool(), nodeclass(), pod("web-0", cpu="12"), pod("web-1", cpu="12")):
        cluster.put(doc)
    launched = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG).launched
    assert len(launched) == 2
    nodes = []
    for i, claim in enumerate(launched):
        name = f"ip-10-0-0-{i + 1}.ec2.internal"
        cluster.put(node_for(cloud.instances[claim.instance_id], name))
        nodes.append(name)
    ports = PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, state, CATALOG)
    tick(ports)
    for name in nodes:
        not_ready(cluster, name, clock.now() - 60 * 60)
    result = tick(ports)
    assert result.started == []
    held = [e for e in cluster.events if e.reason == REPAIR_BLOCKED]
    assert held and all(e.type == "Warning" for e in held)
    assert "more than 20% nodes are unhealthy in the nodepool (2 of 2 in NodePool general)" in held[0].message
