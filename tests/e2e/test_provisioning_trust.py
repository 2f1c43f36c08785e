"""Provisioning a production cluster can trust, on the local world: evaluated again until the pods run, pods read
from the API server rather than from the payload, and status where `kubectl get` shows it.

The stack's provisioner and planner (real `cdk synth`, moto's CloudFormation), the real forwarder as a process
with its default cadence (a pending pod is sent again every 10 s, as Karpenter looks at it again every 10 s),
the real kube-scheduler, KWOK's kubelets and the registrar's boot. Times are printed, not asserted: this is a
shared two-core machine; what is asserted is the outcome.
"""

# The stack and pool fixtures are test_provisioning's, imported; their names are parameters here (F811).
# ruff: noqa: F811

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubectl import kubectl, table
from kubernetes import client
from test_forwarder import ForwarderProcess
from test_provisioning import (  # noqa: F401 (make_pool and provisioner are pytest fixtures)
    Provisioner,
    all_pending,
    deployment,
    diagnose,
    make_pool,
    pods,
    provisioner,
    running,
)
from worldkit import World, wait_for

from nodewright.localworld import deploy

ON_DEMAND = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}


@pytest.fixture
def forwarder(local_world: World, namespace: str, provisioner: Provisioner, tmp_path: Path) -> Iterator[Any]:
    """The forwarder sending to the stack's provisioner, with its default timings."""
    overrides = {
        "POD_NAMESPACE": namespace,
        "NODEWRIGHT_FORWARDER_LEASE_NAME": f"forwarder-{uuid.uuid4().hex[:6]}",
        "NODEWRIGHT_FORWARDER_IDLE_SECONDS": "1",
        "NODEWRIGHT_FORWARDER_RESEND_INITIAL_SECONDS": "10",
        "NODEWRIGHT_FORWARDER_RESEND_MAX_SECONDS": "10",
        "NODEWRIGHT_FORWARDER_REGISTRATION_RESEND_INITIAL_SECONDS": "2",
        "NODEWRIGHT_FORWARDER_REGISTRATION_RESEND_MAX_SECONDS": "5",
    }
    replica = ForwarderProcess(local_world, provisioner.function, "trust", tmp_path, overrides)
    try:
        wait_for(replica.ready, 30, f"the forwarder ready ({replica.log_path})")
        wait_for(replica.leading, 15, "the forwarder to lead")
        yield replica
    finally:
        replica.stop()


def events(world: World, namespace: str, reason: str) -> list[Any]:
    return [
        e
        for e in world.core.list_namespaced_event(namespace).items
        if e.reason == reason and e.source and e.source.component == "nodewright"
    ]


def wait_running(world: World, namespace: str, count: int, forwarder: Any, what: str) -> None:
    try:
        wait_for(lambda: len(running(world, namespace)) == count, 240, what, interval=0.5)
    except AssertionError as error:
        log = forwarder.log_path.read_text()[-6000:]
        raise AssertionError(f"{error}\n{diagnose(world, namespace, [])}\n{log}") from None


def test_pods_pending_before_their_nodepool_exists_run_once_it_is_created(
    local_world: World, namespace: str, make_pool: Any, forwarder: Any
) -> None:
    world = local_world
    pool = make_pool([ON_DEMAND], nodepool=False)
    deployment(world, namespace, pool, "early", 3, "250m", "256Mi")
    wait_for(lambda: all_pending(world, namespace, 3), 60, "3 pods marked Unschedulable")
    # The forwarder delivered them and the provisioner said why nothing launched, on the pods.
    refused = wait_for(lambda: events(world, namespace, "FailedScheduling"), 60, "FailedScheduling from nodewright")
    assert all("NodePool" in e.message for e in refused), [e.message for e in refused]

    created = time.monotonic()
    pool.create_nodepool()
    wait_running(world, namespace, 3, forwarder, "3 pods Running once the NodePool exists")
    seconds = time.monotonic() - created
    print(f"\nfigure: NodePool created -> 3 pending pods Running: {seconds:.1f} s (the proof's bound is 30 s)")
    # Each delivery was evaluated afresh: the one after the NodePool appeared launched.
    sent = [line for line in forwarder.log_lines() if line.get("message") == "batch sent"]
    assert len({line["batch_id"] for line in sent}) == len(sent) >= 2


def test_capacity_that_returns_is_used_in_the_next_window(
    local_world: World, namespace: str, make_pool: Any, forwarder: Any, provisioner: Provisioner
) -> None:
    world = local_world
    # One offering no other test of the session launches (so no earlier mark of it is still in the table).
    pool = make_pool(
        [
            ON_DEMAND,
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c5.large"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1b"]},
        ]
    )
    world.set_faults({"unavailable": [{"instance_type": "c5.large", "zone": "us-east-1b", "capacity_type": "*"}]})
    deployment(world, namespace, pool, "ice", 2, "250m", "256Mi")
    # EC2 had no capacity: the pods are told so, and once the one offering is marked, the NodePool too.
    wait_for(lambda: events(world, namespace, "InsufficientCapacityError"), 90, "InsufficientCapacityError on a pod")
    no_types = wait_for(
        lambda: [
            e
            for e in world.core.list_namespaced_event("default").items
            if e.reason == "NoCompatibleInstanceTypes" and e.involved_object.name == pool.name
        ],
        60,
        "NoCompatibleInstanceTypes on the NodePool",
    )
    assert no_types[0].involved_object.kind == "NodePool"
    assert not running(world, namespace)

    # Capacity returns: EC2 has it again, and the three-minute mark of the refused offering lapses (removed
    # here instead of waited for).
    world.set_faults({})
    dynamodb = world.aws("dynamodb")
    for item in dynamodb.query(
        TableName=provisioner.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "unavailable"}},
    )["Items"]:
        dynamodb.delete_item(TableName=provisioner.table, Key={"pk": item["pk"], "sk": item["sk"]})
    returned = time.monotonic()
    wait_running(world, namespace, 2, forwarder, "2 pods Running once capacity returned")
    print(f"\nfigure: capacity returned -> 2 pods Running: {time.monotonic() - returned:.1f} s (windows of 10 s)")


def test_a_forged_payload_launches_nothing_bigger_than_the_pods_in_the_api_server_need(
    local_world: World, namespace: str, make_pool: Any, provisioner: Provisioner
) -> None:
    world = local_world
    pool = make_pool([ON_DEMAND])
    deployment(world, namespace, pool, "tiny", 1, "100m", "128Mi")
    wait_for(lambda: all_pending(world, namespace, 1), 60, "the pod marked Unschedulable")
    [real] = pods(world, namespace)
    forged = {
        "batch_id": f"forged-{uuid.uuid4().hex}",
        "cluster": world.state.cluster,
        "pods": [
            # An old-style pod object claiming 60 CPUs and 200 GiB for the real pod: only its name is read.
            {
                "metadata": {"name": real.metadata.name, "namespace": namespace},
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "60", "memory": "200Gi"}}}],
                    "tolerations": [{"operator": "Exists"}],
                },
            },
            {"namespace": namespace, "name": "not-a-pod"},
            {"namespace": "kube-system", "name": "kube-apiserver"},
        ],
    }
    response = provisioner.invoke(json.dumps(forged).encode())
    [claim] = response["nodeclaims"]
    assert claim["pods"] == [f"{namespace}/{real.metadata.name}"]
    [instance] = pool.instances()
    described = world.aws("ec2").describe_instance_types(InstanceTypes=[instance["InstanceType"]])["InstanceTypes"]
    vcpus, mib = described[0]["VCpuInfo"]["DefaultVCpus"], described[0]["MemoryInfo"]["SizeInMiB"]
    assert vcpus <= 2 and mib <= 8192, instance["InstanceType"]
    skipped = {d["subject"] for d in response["decisions"] if d["action"] == "skipped"}
    assert {f"pod/{namespace}/not-a-pod", "pod/kube-system/kube-apiserver"} <= skipped
    print(f"\nfigure: forged 60 CPU / 200 GiB for a 100m pod -> {instance['InstanceType']} ({vcpus} vCPU, {mib} MiB)")


def test_nodepool_nodeclaim_and_ec2nodeclass_status_fill_the_printer_columns(
    local_world: World, namespace: str, make_pool: Any, forwarder: Any, provisioner: Provisioner
) -> None:
    world = local_world
    pool = make_pool([ON_DEMAND])
    deployment(world, namespace, pool, "shown", 2, "250m", "256Mi")
    wait_running(world, namespace, 2, forwarder, "2 pods Running")
    kinds = "nodepools.nodewright.io,nodeclaims.nodewright.io,ec2nodeclasses.nodewright.io"

    def rows() -> list[dict[str, str]]:
        return table(kubectl(world.state.kubeconfig, "get", kinds, "-o", "wide"))

    def claims_ready() -> list[dict[str, str]] | None:
        mine = [r for r in rows() if r["NAME"].startswith("nodeclaim") and r.get("NODEPOOL") == pool.name]
        return mine if mine and all(r["READY"] == "True" for r in mine) else None

    claims = wait_for(claims_ready, 90, "the NodeClaims Ready (Launched, Registered, Initialized)", interval=2)
    output = kubectl(world.state.kubeconfig, "get", kinds, "-o", "wide")
    print(f"\nkubectl get {kinds} -o wide\n{output}")
    for claim in claims:
        assert claim["TYPE"] and claim["CAPACITY"] == "on-demand" and claim["ZONE"].startswith("us-east-1")
        assert claim["NODE"] and claim["IMAGEID"].startswith("ami-") and claim["ID"].startswith("aws:///")
        assert claim["NODECLASS"] == pool.name
    shown = {r["NAME"]: r for r in table(output)}
    row = shown[f"nodepool.nodewright.io/{pool.name}"]
    assert row["NODECLASS"] == pool.name and row["READY"] == "True" and int(row["NODES"]) == len(claims)
    assert row["CPU"] not in ("", "<none>") and row["MEMORY"] not in ("", "<none>")
    node_class = shown[f"ec2nodeclass.nodewright.io/{pool.name}"]
    assert node_class["READY"] == "True" and node_class["ROLE"] == provisioner.node_role

    # An EC2NodeClass naming a role the stack may not pass, and its NodePool: no pod waits for them, so the
    # planner's tick (invoked as its schedule does) is what writes their status.
    custom = client.CustomObjectsApi(world.api_client)
    broken = f"{namespace}-wrong-role"
    node_class = {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": broken},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": "not-the-node-role",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.state.cluster}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.state.cluster}}],
        },
    }
    nodepool = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": broken},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": broken},
                    "requirements": [ON_DEMAND],
                }
            }
        },
    }
    custom.create_cluster_custom_object("nodewright.io", "v1", "ec2nodeclasses", node_class)
    custom.create_cluster_custom_object("nodewright.io", "v1", "nodepools", nodepool)
    try:
        planner = deploy.deployed_outputs(world.state)["PlannerFunctionName"]
        response = world.aws("lambda").invoke(FunctionName=planner, Payload=b"{}")
        tick = json.loads(response["Payload"].read())
        assert "FunctionError" not in response, tick
        assert tick["status"]["ready"][f"ec2nodeclass/{broken}"] == "False (InstanceProfileNotAllowed)"
        shown = {r["NAME"]: r for r in table(kubectl(world.state.kubeconfig, "get", kinds, "-o", "wide"))}
        assert shown[f"ec2nodeclass.nodewright.io/{broken}"]["READY"] == "False"
        assert shown[f"nodepool.nodewright.io/{broken}"]["READY"] == "False"
        reason = kubectl(
            world.state.kubeconfig,
            "get",
            f"ec2nodeclasses.nodewright.io/{broken}",
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].reason}: '
            '{.status.conditions[?(@.type=="Ready")].message}',
        )
        assert reason.startswith("InstanceProfileNotAllowed: role not-the-node-role"), reason
        pool_reason = kubectl(
            world.state.kubeconfig,
            "get",
            f"nodepools.nodewright.io/{broken}",
            "-o",
            'jsonpath={.status.conditions[?(@.type=="NodeClassReady")].reason}',
        )
        assert pool_reason == "InstanceProfileNotAllowed"
        print(f"figure: {broken}: Ready=False, {reason}")
    finally:
        custom.delete_cluster_custom_object("nodewright.io", "v1", "nodepools", broken)
        custom.delete_cluster_custom_object("nodewright.io", "v1", "ec2nodeclasses", broken)
