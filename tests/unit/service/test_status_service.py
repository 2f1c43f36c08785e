"""Status as Karpenter writes it: NodeClaim lifecycle conditions, NodePool and EC2NodeClass status, by the
provisioner and by the planner's tick."""

from __future__ import annotations

from typing import Any

from service_fakes import FakeCloud, FixedClock, SmallCatalog, node_for, nodeclass, nodepool, pod
from test_provision_service import batch_of, world

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.model.loader import load_documents
from nodewright.service.plan import PlannerPorts, tick
from nodewright.service.provision import ProvisionResult, finish_registrations, provision
from nodewright.service.status import refresh_status

CATALOG = SmallCatalog()


def conditions(doc: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    assert doc is not None
    return {c["type"]: (c["status"], c["reason"]) for c in doc["status"]["conditions"]}


def obj(cluster: InMemoryCluster, kind: str, name: str) -> dict[str, Any]:
    return cluster.objects[(kind, "", name)]


def karpenters(doc: dict[str, Any]) -> dict[str, Any]:
    """The same object in Karpenter's API group, which nodewright reads but never writes."""
    if doc["kind"] == "NodePool":
        doc["spec"]["template"]["spec"]["nodeClassRef"]["group"] = "karpenter.k8s.aws"
        return {**doc, "apiVersion": "karpenter.sh/v1"}
    return {**doc, "apiVersion": "karpenter.k8s.aws/v1"}


def test_a_batch_writes_ec2nodeclass_and_nodepool_status_with_what_it_resolved_and_launched() -> None:
    cluster, cloud, state, clock = world(pod("web-0"), pod("web-1"))
    [launched] = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG).launched
    status = obj(cluster, "EC2NodeClass", "default")["status"]
    assert status["subnets"] == [
        {"id": "subnet-a", "zone": "us-east-1a", "zoneID": "use1-az1"},
        {"id": "subnet-b", "zone": "us-east-1b", "zoneID": "use1-az2"},
        {"id": "subnet-c", "zone": "us-east-1c", "zoneID": "use1-az3"},
    ]
    assert status["securityGroups"] == [{"id": "sg-1"}] and status["instanceProfile"] == "demo-node-profile"
    assert [(a["id"], a["requirements"][0]["values"]) for a in status["amis"]] == [
        ("ami-x86", ["amd64"]),
        ("ami-arm", ["arm64"]),
    ]
    assert conditions(obj(cluster, "EC2NodeClass", "default")) == {
        "SubnetsReady": ("True", "SubnetsReady"),
        "SecurityGroupsReady": ("True", "SecurityGroupsReady"),
        "AMIsReady": ("True", "AMIsReady"),
        "InstanceProfileReady": ("True", "InstanceProfileReady"),
        "ValidationSucceeded": ("True", "ValidationSucceeded"),
        "Ready": ("True", "Ready"),
    }
    pool = obj(cluster, "NodePool", "general")
    assert conditions(pool) == {
        "ValidationSucceeded": ("True", "ValidationSucceeded"),
        "NodeClassReady": ("True", "NodeClassReady"),
        "Ready": ("True", "Ready"),
    }
    # The launch of this very batch is counted: its capacity as recorded on the NodeClaim.
    assert pool["status"]["nodes"] == 1
    assert pool["status"]["resources"]["nodes"] == "1"
    recorded = (cluster.nodeclaim(launched.name) or {})["status"]["capacity"]
    assert pool["status"]["resources"]["cpu"] == recorded["cpu"]
    assert pool["status"]["resources"]["memory"] == recorded["memory"]


def test_a_foreign_role_makes_the_ec2nodeclass_not_ready_with_a_reason_and_its_nodepool_says_so() -> None:
    cluster, cloud, state, clock = world(nodeclass(role="someone-else"), pod("web-0"))
    provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    node_class = obj(cluster, "EC2NodeClass", "default")
    assert conditions(node_class)["InstanceProfileReady"] == ("False", "InstanceProfileNotAllowed")
    assert conditions(node_class)["Ready"] == ("False", "InstanceProfileNotAllowed")
    ready = next(c for c in node_class["status"]["conditions"] if c["type"] == "Ready")
    assert "someone-else" in ready["message"]
    # What did resolve is still shown.
    assert len(node_class["status"]["subnets"]) == 3 and node_class["status"]["instanceProfile"] == ""
    pool = obj(cluster, "NodePool", "general")
    assert conditions(pool)["NodeClassReady"] == ("False", "InstanceProfileNotAllowed")
    assert conditions(pool)["Ready"] == ("False", "InstanceProfileNotAllowed")


def test_the_planner_writes_status_without_pending_pods_and_only_when_it_changed() -> None:
    missing = nodepool()
    missing["metadata"]["name"] = "orphan"
    missing["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "nowhere"
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(), nodeclass(), missing], clock=clock.now)
    report = refresh_status(cluster, FakeCloud(), clock)
    assert sorted(report.written) == ["ec2nodeclass/default", "nodepool/general", "nodepool/orphan"]
    assert report.ready["nodepool/orphan"] == "False (NodeClassNotFound)"
    assert conditions(obj(cluster, "NodePool", "orphan"))["NodeClassReady"] == ("False", "NodeClassNotFound")
    assert obj(cluster, "NodePool", "general")["status"]["resources"] == {
        "cpu": "0",
        "memory": "0",
        "pods": "0",
        "ephemeral-storage": "0",
        "nodes": "0",
    }
    again = refresh_status(cluster, FakeCloud(), clock)
    assert again.written == []


def test_karpenters_own_objects_are_read_but_never_written() -> None:
    clock = FixedClock()
    cluster = InMemoryCluster([karpenters(nodepool()), karpenters(nodeclass()), pod("web-0")], clock=clock.now)
    launched = provision(batch_of(cluster), cluster, FakeCloud(), InMemoryState(), clock, CATALOG).launched
    assert launched
    assert "status" not in obj(cluster, "NodePool", "general")
    assert "status" not in obj(cluster, "EC2NodeClass", "default")


def test_the_planners_tick_refreshes_status() -> None:
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(), nodeclass()], clock=clock.now)

    class NoWorkflows:
        def start(self, name: str, document: Any) -> bool:
            raise AssertionError("nothing to disrupt")

        def status(self, name: str) -> str:
            raise AssertionError("no lease to judge")

    result = tick(PlannerPorts(cluster, FakeCloud(), NoWorkflows(), clock, InMemoryState(), CATALOG))
    assert result.status["ready"] == {"ec2nodeclass/default": "True", "nodepool/general": "True"}
    assert conditions(obj(cluster, "NodePool", "general"))["Ready"] == ("True", "Ready")


# ---------------------------------------------------------------------------------------------- lifecycle


def registered_claim(**pool: Any) -> tuple[InMemoryCluster, FakeCloud, FixedClock, str, dict[str, Any]]:
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(**pool), nodeclass(), pod("web-0")], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    [launched] = provision(batch_of(cluster), cluster, cloud, InMemoryState(), clock, CATALOG).launched
    node = node_for(cloud.instances[launched.instance_id], "ip-10-0-0-1.ec2.internal")
    return cluster, cloud, clock, launched.name, node


def advance(cluster: InMemoryCluster, clock: FixedClock) -> ProvisionResult:
    result = ProvisionResult("test")
    inputs, _ = load_documents([*cluster.of_kind("NodeClaim"), *cluster.of_kind("Node")], "cluster")
    finish_registrations(inputs.nodeclaims, inputs.nodes, cluster, clock.now(), result)
    return result


def test_a_startup_taint_holds_initialization_until_it_is_gone() -> None:
    startup = [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]
    cluster, _, clock, name, node = registered_claim(startupTaints=startup)
    node["spec"]["taints"].append(startup[0])
    cluster.put(node)
    advance(cluster, clock)
    assert conditions(cluster.nodeclaim(name)) == {
        "Launched": ("True", "Launched"),
        "Registered": ("True", "Registered"),
        "Initialized": ("Unknown", "StartupTaintsExist"),
        "Ready": ("Unknown", "ReconcilingDependents"),
    }
    assert "karpenter.sh/initialized" not in obj(cluster, "Node", node["metadata"]["name"])["metadata"]["labels"]
    # Nothing changed: nothing is written again.
    writes = len(cluster.log)
    advance(cluster, clock)
    assert len(cluster.log) == writes
    # The agent takes its taint off: initialized, Ready, and the node labelled.
    obj(cluster, "Node", node["metadata"]["name"])["spec"]["taints"] = []
    result = advance(cluster, clock)
    assert [d.action for d in result.decisions] == ["initialized"]
    assert conditions(cluster.nodeclaim(name))["Ready"] == ("True", "Ready")
    assert obj(cluster, "Node", node["metadata"]["name"])["metadata"]["labels"]["karpenter.sh/initialized"] == "true"


def test_a_node_not_ready_or_without_its_requested_gpus_is_not_initialized() -> None:
    cluster, _, clock, name, node = registered_claim()
    node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    cluster.put(node)
    advance(cluster, clock)
    assert conditions(cluster.nodeclaim(name))["Initialized"] == ("Unknown", "NodeNotReady")
    obj(cluster, "Node", node["metadata"]["name"])["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    claim = cluster.nodeclaim(name) or {}
    claim["spec"]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    advance(cluster, clock)
    message = next(c for c in (cluster.nodeclaim(name) or {})["status"]["conditions"] if c["type"] == "Initialized")
    assert (message["reason"], message["message"]) == (
        "ResourceNotRegistered",
        'Resource "nvidia.com/gpu" was requested but not registered',
    )
    # The device plugin registers the GPU.
    obj(cluster, "Node", node["metadata"]["name"])["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    advance(cluster, clock)
    assert conditions(cluster.nodeclaim(name))["Initialized"] == ("True", "Initialized")


def test_another_writers_conditions_are_kept() -> None:
    from nodewright.model.conditions import TRUE, Condition

    cluster, _, clock, name, node = registered_claim()
    cluster.set_nodeclaim_conditions(name, [Condition("Drifted", TRUE, "AMIDrift")])
    cluster.put(node)
    advance(cluster, clock)
    assert conditions(cluster.nodeclaim(name))["Drifted"] == ("True", "AMIDrift")
    assert conditions(cluster.nodeclaim(name))["Ready"] == ("True", "Ready")
