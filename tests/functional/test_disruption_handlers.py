"""The workflow step and planner handlers against moto (EC2, DynamoDB, Step Functions) with an in-memory
Cluster port: the lock is a real conditional write, termination reaches moto's EC2, the planner starts
executions in moto's Step Functions. The account is the provisioner test's; the node to disrupt is launched
by the real provisioner handler first."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from handlers import REGION, Context, load_handler
from test_provisioner_handler import CLUSTER, _role, event, manifests, pod

from nodewright.adapters.ec2_launcher import instance_profile_name
from nodewright.adapters.memory import InMemoryCluster
from nodewright.disruption.commands import EXPIRED, SPOT_INTERRUPTION, CommandError, DisruptionCommand


def launched_node(account: dict[str, Any]) -> tuple[InMemoryCluster, dict[str, Any]]:
    """The provisioner handler launches one instance for two pods; the node joins and the pods are bound."""
    provisioner = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0"), pod("web-1")))
    provisioner._RUNTIME = provisioner.build_runtime(cluster=cluster)
    [claim] = provisioner.handler(event(cluster), Context())["nodeclaims"]
    provider = f"aws:///{claim['zone']}/{claim['instance_id']}"
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-a", "labels": {"karpenter.sh/nodepool": "general"}},
            "spec": {"providerID": provider},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "58"},
            },
        }
    )
    record = cluster.nodeclaim(claim["name"])
    assert record is not None
    record["status"]["conditions"] = [{"type": "Registered", "status": "True"}]
    for name in ("web-0", "web-1"):
        cluster.objects[("Pod", "web", name)]["spec"]["nodeName"] = "node-a"
    return cluster, claim


def lock_owner(account: dict[str, Any], nodeclaim: str) -> str | None:
    item = account["dynamodb"].get_item(
        TableName="nodewright", Key={"pk": {"S": "lock"}, "sk": {"S": f"nodeclaim/{nodeclaim}"}}
    )
    return item["Item"]["owner"]["S"] if "Item" in item else None


def planner_for(
    cluster: InMemoryCluster, definition: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, str, Any]:
    """The planner handler on `cluster`, starting executions of a state machine with `definition` in moto."""
    machine = state_machine(monkeypatch, definition)
    sfn = boto3.client("stepfunctions", region_name=REGION)
    planner = load_handler("planner")
    planner._PORTS = planner.build_ports(cluster=cluster)
    return sfn, machine, planner


def state_machine(monkeypatch: pytest.MonkeyPatch, definition: dict[str, Any] | None = None) -> str:
    """A state machine in moto, named in the handlers' environment as the stack names theirs."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = definition or {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}}
    machine = sfn.create_state_machine(
        name="disruption", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]
    monkeypatch.setenv("NODEWRIGHT_STATE_MACHINE", machine)
    return str(machine)


def test_identify_locks_in_dynamodb_drain_evicts_and_terminate_reaches_ec2(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_machine(monkeypatch)
    cluster, claim = launched_node(account)
    steps = load_handler("workflow")
    steps._PORTS = steps.build_ports(cluster=cluster)
    now = time.time()  # the handlers read the wall clock
    command = DisruptionCommand(
        claim["name"], "node-a", claim["instance_id"], SPOT_INTERRUPTION, True, "evt-1", now, now + 120
    ).to_input()

    found = steps.identify({"input": command, "execution": "run-1"}, Context())
    assert found["outcome"] == "proceed" and found["moving"] == ["web/web-0", "web/web-1"]
    assert lock_owner(account, claim["name"]) == "run-1"
    other = steps.identify({"input": command, "execution": "run-2"}, Context())
    assert other["outcome"] == "locked"
    assert lock_owner(account, claim["name"]) == "run-1"

    state = {**command, "identify": found}
    drained = steps.drain({"input": state, "execution": "run-1"}, Context())
    assert drained["evicted"] == ["web/web-0", "web/web-1"]
    state["drain"] = drained
    assert steps.drain({"input": state, "execution": "run-1"}, Context())["done"]

    done = steps.terminate({"input": state, "execution": "run-1"}, Context())
    assert done["terminated"] == claim["instance_id"]
    ec2 = account["ec2"]
    [instance] = ec2.describe_instances(InstanceIds=[claim["instance_id"]])["Reservations"][0]["Instances"]
    assert instance["State"]["Name"] in ("shutting-down", "terminated")
    assert lock_owner(account, claim["name"]) is None
    assert cluster.nodeclaim(claim["name"]) is None and ("Node", "", "node-a") not in cluster.objects


def test_a_payload_without_the_execution_is_refused_with_what_to_fix(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_machine(monkeypatch)
    steps = load_handler("workflow")
    steps._PORTS = steps.build_ports(cluster=InMemoryCluster())
    with pytest.raises(CommandError, match="execution"):
        steps.identify({"input": {}}, Context())


def test_the_planner_starts_expired_nodes_once(account: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, claim = launched_node(account)
    record = cluster.nodeclaim(claim["name"])
    assert record is not None
    record["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    record["spec"]["expireAfter"] = "24h"
    running = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}}
    sfn, machine, planner = planner_for(cluster, running, monkeypatch)

    first = planner.handler({}, Context())
    [started] = first["started"]
    assert started["nodeclaim"] == claim["name"] and started["reason"] == EXPIRED
    [execution] = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert execution["name"] == started["execution"]
    document = json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["input"])
    assert DisruptionCommand.from_input(document).nodeclaim == claim["name"]

    # The execution runs (Step Functions says so), so its lease holds the node: the next tick starts nothing.
    second = planner.handler({}, Context())
    assert second["started"] == [] and second["already_running"] == []
    assert len(sfn.list_executions(stateMachineArn=machine)["executions"]) == 1


def test_the_planner_takes_an_empty_node_away_once_holding_its_lock(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster, claim = launched_node(account)
    for name in ("web-0", "web-1"):  # the Deployment scaled in: the node holds nothing any more
        del cluster.objects[("Pod", "web", name)]
    waits = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}}
    sfn, machine, planner = planner_for(cluster, waits, monkeypatch)

    first = planner.handler({}, Context())
    [started] = first["started"]
    assert (started["nodeclaim"], started["method"], started["reason"]) == (claim["name"], "emptiness", "Empty")
    assert lock_owner(account, claim["name"]) == started["execution"]  # taken before the execution started
    [command] = first["decisions"]["commands"]
    assert command["replacement"] is None and command["savings_per_hour"] > 0
    record = cluster.nodeclaim(claim["name"])
    assert record is not None
    assert {c["type"] for c in record["status"]["conditions"]} >= {"Consolidatable"}

    second = planner.handler({}, Context())
    assert second["started"] == []
    assert len(sfn.list_executions(stateMachineArn=machine)["executions"]) == 1


def in_nodewrights_group(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixtures as `nodewright migrate` writes them: status is written only to nodewright.io objects."""
    for doc in documents:
        if doc.get("apiVersion") in ("karpenter.sh/v1", "karpenter.k8s.aws/v1"):
            doc["apiVersion"] = "nodewright.io/v1"
            ref = ((doc["spec"].get("template") or {}).get("spec") or {}).get("nodeClassRef")
            if ref is not None:
                ref["group"] = "nodewright.io"
    return documents


def test_the_planner_resolves_a_node_class_naming_a_node_role_from_the_stack_context(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Drift resolves every EC2NodeClass; one naming a role of the nodeRoles context is as valid to the planner
    # as to the provisioner, so it is no problem and its nodes are checked against the cloud's facts.
    _role("KarpenterNodeRole-func")
    monkeypatch.setenv("NODEWRIGHT_NODE_ROLES", "KarpenterNodeRole-func")
    good = InMemoryCluster(in_nodewrights_group(manifests(role="KarpenterNodeRole-func")))
    _, _, planner = planner_for(good, {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}, monkeypatch)
    first = planner.handler({}, Context())
    assert first["problems"] == [] and "ec2nodeclass/default" in first["status"]["written"]
    # The class's status says what it resolved to, as Karpenter's does; an unchanged status is not written again.
    status = good.objects[("EC2NodeClass", "", "default")]["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "AMIsReady": "True",
        "InstanceProfileReady": "True",
        "Ready": "True",
        "SecurityGroupsReady": "True",
        "SubnetsReady": "True",
        "ValidationSucceeded": "True",
    }
    assert status["instanceProfile"] == instance_profile_name(CLUSTER, "KarpenterNodeRole-func")
    assert status["subnets"] and all(s["id"].startswith("subnet-") for s in status["subnets"])
    assert status["securityGroups"] and all(g["id"].startswith("sg-") for g in status["securityGroups"])
    assert planner.handler({}, Context())["status"]["written"] == []

    bad = InMemoryCluster(in_nodewrights_group(manifests(role="admin")))
    planner._PORTS = planner.build_ports(cluster=bad)
    [problem] = planner.handler({}, Context())["problems"]
    assert problem.startswith("ec2nodeclass/") and "role admin is not a node role" in problem
    conditions = {c["type"]: c for c in bad.objects[("EC2NodeClass", "", "default")]["status"]["conditions"]}
    assert (
        conditions["Ready"]["status"] == "False" and "role admin is not a node role" in conditions["Ready"]["message"]
    )
    assert conditions["InstanceProfileReady"]["status"] == "False"
    assert conditions["InstanceProfileReady"]["reason"] == "InstanceProfileNotAllowed"
    assert [conditions[t]["status"] for t in ("SubnetsReady", "SecurityGroupsReady", "AMIsReady")] == ["True"] * 3


def test_terminate_waits_for_the_drained_pods_volume_attachments_then_marks_instance_terminating(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow handler's Drain function asked for its `volumes` step (CheckVolumes) after the drain: the
    VolumeAttachment of a drained pod's volume holds the termination (VolumesDetached Unknown) until the
    attach-detach controller deletes it; TerminateInstance then marks the NodeClaim InstanceTerminating before it
    deletes the Node and the NodeClaim."""
    state_machine(monkeypatch)
    cluster, claim = launched_node(account)
    cluster.put(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": "csi-web-0"},
            "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-a", "source": {"persistentVolumeName": "pv-0"}},
        }
    )
    steps = load_handler("workflow")
    steps._PORTS = steps.build_ports(cluster=cluster)
    now = time.time()
    command = DisruptionCommand(
        claim["name"], "node-a", claim["instance_id"], EXPIRED, True, "evt-2", now, None
    ).to_input()
    state = {**command, "identify": steps.identify({"input": command, "execution": "run-1"}, Context())}
    state["drain"] = steps.drain({"input": state, "execution": "run-1"}, Context())
    for name in ("web-0", "web-1"):  # the evicted pods are gone
        cluster.objects.pop(("Pod", "web", name), None)
    state["drain"] = steps.drain({"input": state, "execution": "run-1"}, Context())
    assert state["drain"]["done"]

    waiting = steps.drain({"input": state, "execution": "run-1", "step": "volumes"}, Context())
    assert not waiting["done"] and waiting["pending"] == ["csi-web-0"] and waiting["wait_seconds"] > 0
    conditions = {c["type"]: c for c in cluster.nodeclaim(claim["name"])["status"]["conditions"]}  # type: ignore[index]
    assert (conditions["VolumesDetached"]["status"], conditions["VolumesDetached"]["reason"]) == (
        "Unknown",
        "AwaitingVolumeDetachment",
    )
    cluster.objects.pop(("VolumeAttachment", "", "csi-web-0"))
    again = {"input": {**state, "volumes": waiting}, "execution": "run-1", "step": "volumes"}
    state["volumes"] = steps.drain(again, Context())
    assert state["volumes"]["done"]

    marked: list[str] = []
    original = cluster.set_nodeclaim_conditions

    def spy(name: str, conditions: Any, clear: Any = ()) -> None:
        marked.extend(f"{c.type}={c.status}" for c in conditions)
        assert ("Node", "", "node-a") in cluster.objects  # before the Node goes
        original(name, conditions, clear)

    cluster.set_nodeclaim_conditions = spy  # type: ignore[method-assign]
    assert steps.terminate({"input": state, "execution": "run-1"}, Context())["terminated"] == claim["instance_id"]
    assert "InstanceTerminating=True" in marked
    assert cluster.nodeclaim(claim["name"]) is None and ("Node", "", "node-a") not in cluster.objects
