"""Provisioning end to end on the local world: pending pods become Running pods on nodes nodewright launched.

The provisioner Lambda is the one the CDK stack defines: the app is synthesized with `cdk synth` and deployed
through moto's CloudFormation (`nodewright.localworld.deploy`), with its role, table, node role and instance
profile. It is invoked with payloads the forwarder's own code builds
(`model.pending` and `forwarder.batching`: hints naming the pods the real kube-scheduler marked
Unschedulable). Its handler runs in the moto server's process, reaches the API server with an EKS token as
its role, launches with CreateFleet in moto, and the registrar turns the instances into KWOK nodes from the
user data it wrote. Most tests send the forwarder's batches themselves, so a later batch finishes the
registration there (the NodeClaim is marked Registered and `karpenter.sh/unregistered` comes off the node);
one test runs the real forwarder, whose node watch reports a joined node at once, so no pod batch is needed.

Each test gets its own NodePool with a taint only its pods tolerate, so no other test's pods land on its
nodes; its instances are terminated and its nodes deleted at the end.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from test_forwarder import ForwarderProcess
from worldkit import World, wait_for

from nodewright.forwarder.batching import build_payloads, hint_of
from nodewright.localworld import deploy
from nodewright.model.pending import is_pending
from nodewright.service.provision import NOMINATION_GRACE_SECONDS


class Provisioner:
    """The stack's provisioner function in the world, and the forwarder's part of talking to it."""

    def __init__(self, world: World, outputs: dict[str, str]) -> None:
        self.world = world
        self.function = outputs["ProvisionerFunctionName"]
        self.table = outputs["TableName"]
        self.node_role = outputs["NodeRoleName"]
        self.lambda_ = world.aws("lambda")
        self.deliveries = 0

    def pending_payloads(self, namespace: str) -> list[bytes]:
        """What the forwarder would send for the namespace's pending pods, each send a new delivery."""
        self.deliveries += 1
        pods = self.world.api_client.sanitize_for_serialization(self.world.core.list_namespaced_pod(namespace).items)
        hints = [hint_of(p, self.deliveries) for p in pods if is_pending(p)]
        payloads = build_payloads(hints, self.world.state.cluster, time.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return [p.body for p in payloads]

    def invoke(self, body: bytes) -> dict[str, Any]:
        response = self.lambda_.invoke(FunctionName=self.function, InvocationType="RequestResponse", Payload=body)
        payload = json.loads(response["Payload"].read())
        assert "FunctionError" not in response, payload
        result: dict[str, Any] = payload
        return result

    def provision(self, namespace: str) -> list[dict[str, Any]]:
        """Send what is pending now, as the forwarder would; returns the responses."""
        return [self.invoke(body) for body in self.pending_payloads(namespace)]


@pytest.fixture(scope="module")
def provisioner(local_world: World) -> Provisioner:
    """The stack deployed into the world (real `cdk synth`, moto's CloudFormation) and the CRDs, once per
    module. The forwarder is not started: the tests send its batches themselves, to control repeats."""
    world = local_world
    # The stack, the CRDs and the chart (whose RBAC is all the functions' access entries grant them).
    return Provisioner(world, deploy.install(world.state))


class Pool:
    """A NodePool + EC2NodeClass for one test, its taint, and teardown of what it launched. With
    `nodepool=False` only the EC2NodeClass exists until `create_nodepool()`."""

    def __init__(
        self,
        world: World,
        node_role: str,
        namespace: str,
        requirements: list[dict[str, Any]],
        limits: dict[str, str] | None,
        disruption: dict[str, Any] | None = None,
        nodepool: bool = True,
    ):
        self.world = world
        self.name = f"{namespace}-pool"
        self.taint = {"key": "nodewright.io/e2e", "value": namespace, "effect": "NoSchedule"}
        self.custom = client.CustomObjectsApi(world.api_client)
        self.custom.create_cluster_custom_object(
            "nodewright.io",
            "v1",
            "ec2nodeclasses",
            {
                "apiVersion": "nodewright.io/v1",
                "kind": "EC2NodeClass",
                "metadata": {"name": self.name},
                "spec": {
                    "amiSelectorTerms": [{"alias": "al2023@latest"}],
                    "role": node_role,
                    "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.state.cluster}}],
                    "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.state.cluster}}],
                },
            },
        )
        self.spec: dict[str, Any] = {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": self.name},
                    "requirements": requirements,
                    "taints": [self.taint],
                }
            }
        }
        if limits:
            self.spec["limits"] = limits
        # Every test's pool shares the world (and the planner's ticks): only a test about consolidation opts in,
        # so a tick another test triggers never consolidates this one's nodes.
        self.spec["disruption"] = disruption or {"consolidateAfter": "Never"}
        if nodepool:
            self.create_nodepool()

    def create_nodepool(self) -> None:
        self.custom.create_cluster_custom_object(
            "nodewright.io",
            "v1",
            "nodepools",
            {"apiVersion": "nodewright.io/v1", "kind": "NodePool", "metadata": {"name": self.name}, "spec": self.spec},
        )

    def instances(self) -> list[dict[str, Any]]:
        found = []
        pages = (
            self.world.aws("ec2")
            .get_paginator("describe_instances")
            .paginate(
                Filters=[
                    {"Name": "tag:nodewright.io/nodepool", "Values": [self.name]},
                    {"Name": "instance-state-name", "Values": ["pending", "running"]},
                ]
            )
        )
        for page in pages:
            for reservation in page["Reservations"]:
                found.extend(reservation["Instances"])
        return found

    def teardown(self) -> None:
        """Everything the test launched goes at once: instances terminated, and NodeClaims and Nodes deleted with
        nodewright's termination finalizer taken off (no later planner tick drains what a finished test left)."""
        ids = [i["InstanceId"] for i in self.instances()]
        if ids:
            self.world.aws("ec2").terminate_instances(InstanceIds=ids)
        released = {"metadata": {"finalizers": None}}
        selector = f"karpenter.sh/nodepool={self.name}"
        claims = self.custom.list_cluster_custom_object("nodewright.io", "v1", "nodeclaims", label_selector=selector)
        for claim in claims["items"]:
            name = claim["metadata"]["name"]
            try:
                self.custom.patch_cluster_custom_object("nodewright.io", "v1", "nodeclaims", name, released)
                self.custom.delete_cluster_custom_object("nodewright.io", "v1", "nodeclaims", name)
            except client.ApiException as error:
                if error.status != 404:
                    raise
        for node in self.world.core.list_node(label_selector=selector).items:
            self.world.core.patch_node(node.metadata.name, released)
            self.world.core.delete_node(node.metadata.name)
        for plural in ("nodepools", "ec2nodeclasses"):
            try:
                self.custom.delete_cluster_custom_object("nodewright.io", "v1", plural, self.name)
            except client.ApiException as error:
                if error.status != 404:
                    raise


@pytest.fixture
def make_pool(local_world: World, namespace: str, provisioner: Provisioner) -> Iterator[Any]:
    made: list[Pool] = []

    def make(requirements: list[dict[str, Any]], limits: dict[str, str] | None = None, nodepool: bool = True) -> Pool:
        pool = Pool(local_world, provisioner.node_role, namespace, requirements, limits, nodepool=nodepool)
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.teardown()


def deployment(
    world: World, namespace: str, pool: Pool, name: str, replicas: int, cpu: str, memory: str, **spec: Any
) -> None:
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        "nodeSelector": {"karpenter.sh/nodepool": pool.name, **spec.pop("nodeSelector", {})},
        "tolerations": [{**pool.taint, "operator": "Equal"}],
        "terminationGracePeriodSeconds": 0,
    }
    pod_spec.update(spec)
    world.apps.create_namespaced_deployment(
        namespace,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
            },
        },
    )


def pods(world: World, namespace: str) -> list[Any]:
    return list(world.core.list_namespaced_pod(namespace).items)


def all_pending(world: World, namespace: str, count: int) -> bool:
    """True once `count` pods exist and the scheduler has marked every one Unschedulable."""
    found = world.api_client.sanitize_for_serialization(world.core.list_namespaced_pod(namespace).items)
    return len(found) == count and all(is_pending(p) for p in found)


def running(world: World, namespace: str) -> list[Any]:
    return [p for p in pods(world, namespace) if p.status.phase == "Running" and p.spec.node_name]


def converge(
    provisioner: Provisioner, namespace: str, want_running: int, timeout: float = 150, note: str = ""
) -> list[dict[str, Any]]:
    """Re-send what is still pending (the forwarder's back-off, compressed) until `want_running` pods run."""
    responses: list[dict[str, Any]] = []

    def step() -> bool:
        if len(running(provisioner.world, namespace)) >= want_running:
            return True
        responses.extend(provisioner.provision(namespace))
        return False

    try:
        wait_for(step, timeout, f"{want_running} running pods in {namespace}", interval=2)
    except AssertionError as error:
        raise AssertionError(f"{error} {note}\n{diagnose(provisioner.world, namespace, responses)}") from None
    return responses


def diagnose(world: World, namespace: str, responses: list[dict[str, Any]]) -> str:
    """What is still pending and why, the nodes and the provisioner's last decisions (for a failure message)."""
    lines = []
    for p in pods(world, namespace):
        if not p.spec.node_name:
            conditions = {c.type: c.message for c in p.status.conditions or []}
            lines.append(f"pending {p.metadata.name}: {conditions.get('PodScheduled')}")
    for n in world.core.list_node().items:
        taints = [f"{t.key}:{t.effect}" for t in n.spec.taints or []]
        lines.append(
            f"node {n.metadata.name} {n.spec.provider_id} {n.metadata.labels.get('karpenter.sh/nodepool')} {taints}"
        )
    for r in responses[-2:]:
        lines.append(f"response summary {r.get('summary')}")
        lines.extend(
            f"  {d['action']} {d['subject']}: {d['reason']}" for d in r["decisions"] if d["action"] != "nominated"
        )
    return "\n".join(lines)


def node_of(world: World, pod: Any) -> Any:
    return world.core.read_node(pod.spec.node_name)


def test_pending_deployments_become_running_on_right_sized_nodes_and_a_repeat_launches_nothing(
    local_world: World, namespace: str, provisioner: Provisioner, make_pool: Any
) -> None:
    world = local_world
    pool = make_pool([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}])
    # 30 generic pods of three sizes, 10 arm64-only pods, 9 pods spread over three zones with maxSkew 1.
    deployment(world, namespace, pool, "small", 10, "250m", "256Mi")
    deployment(world, namespace, pool, "medium", 10, "500m", "1Gi")
    deployment(world, namespace, pool, "large", 10, "1", "2Gi")
    deployment(world, namespace, pool, "arm", 10, "500m", "512Mi", nodeSelector={"kubernetes.io/arch": "arm64"})
    # minDomains 3: the kube-scheduler only knows the zones of nodes that have registered, so without it
    # the first node's zone is the only domain and takes every pod (as on a real cluster); with it the
    # minimum counts as 0 until all three zones have nodes, so skew 1 holds whichever registers first.
    spread = {
        "maxSkew": 1,
        "minDomains": 3,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }
    deployment(world, namespace, pool, "spread", 9, "500m", "512Mi", topologySpreadConstraints=[spread])
    wait_for(lambda: all_pending(world, namespace, 49), 60, "49 pods marked Unschedulable")

    [body] = provisioner.pending_payloads(namespace)
    first = provisioner.invoke(body)
    launched = first["nodeclaims"]
    assert launched, first
    assert sorted(p for c in launched for p in c["pods"]) == sorted(
        f"{namespace}/{p.metadata.name}" for p in pods(world, namespace)
    )

    # Proof 2: the same delivery again (a retried Invoke) returns the recorded answer and launches nothing; so
    # does a new batch id for the same pods (the next window): they are nominated to NodeClaims in flight.
    instances = {i["InstanceId"]: i for i in pool.instances()}
    assert set(instances) == {c["instance_id"] for c in launched}
    replayed = provisioner.invoke(body)
    assert replayed["replayed"] is True and replayed["nodeclaims"] == first["nodeclaims"]
    restarted = json.loads(body)
    restarted["batch_id"] = uuid.uuid4().hex
    again = provisioner.invoke(json.dumps(restarted).encode())
    # Each pod waits for its claim, or fits on its node if that registered meanwhile (the boot delay is 1 s).
    assert again["nodeclaims"] == [], json.dumps(
        [d for d in again["decisions"] if d["action"] not in ("registered", "initialized", "skipped")], indent=1
    )[:8000]
    assert again["summary"].get("waiting", 0) + again["summary"].get("existing", 0) == 49
    assert {i["InstanceId"] for i in pool.instances()} == set(instances)

    # The instances are what the simulation chose: its cheapest option per claim (nothing was refused).
    for claim in launched:
        instance = instances[claim["instance_id"]]
        assert (instance["InstanceType"], instance["Placement"]["AvailabilityZone"]) == (
            claim["planned"]["instance_type"],
            claim["planned"]["zone"],
        )
        assert (claim["instance_type"], claim["zone"]) == (claim["planned"]["instance_type"], claim["planned"]["zone"])
        assert {t["Key"]: t["Value"] for t in instance["Tags"]}[
            f"kubernetes.io/cluster/{world.state.cluster}"
        ] == "owned"

    # The kube-scheduler binds pods in its own order, so a zone-spread pod can find the room planned for it taken
    # by its siblings; it waits NOMINATION_GRACE_SECONDS for its nominated node, then is planned again. The
    # timeout leaves room for that recovery on a loaded machine.
    timeout = NOMINATION_GRACE_SECONDS + 120
    converge(provisioner, namespace, 49, timeout, note=f"first launch: {len(launched)} claims {first['summary']}")
    placed = running(world, namespace)
    assert len(placed) == 49
    nodes = {p.spec.node_name: node_of(world, p) for p in placed}
    # Every pod runs on a node nodewright launched for this pool (providerID of one of its instances). The
    # kube-scheduler binds pods wherever they fit, not where they were nominated, so with tightly packed
    # claims a few pods can be left without room and a later batch launches for them: the first launch is
    # most of the capacity, not necessarily all of it.
    by_instance = {n.spec.provider_id.rsplit("/", 1)[-1]: n for n in nodes.values()}
    all_instances = {i["InstanceId"] for i in pool.instances()}
    assert set(by_instance) <= all_instances
    assert len(all_instances) < 2 * len(instances)
    for node in nodes.values():
        assert node.metadata.labels["karpenter.sh/nodepool"] == pool.name
        assert not [t for t in node.spec.taints or [] if t.key == "karpenter.sh/unregistered"]
    # ... arm64-only pods on arm64 nodes ...
    for p in placed:
        if p.metadata.labels["app"] == "arm":
            assert nodes[p.spec.node_name].metadata.labels["kubernetes.io/arch"] == "arm64"
    # ... the spread pods over three zones within maxSkew 1 ...
    zones = Counter(
        nodes[p.spec.node_name].metadata.labels["topology.kubernetes.io/zone"]
        for p in placed
        if p.metadata.labels["app"] == "spread"
    )
    assert len(zones) == 3 and max(zones.values()) - min(zones.values()) <= 1
    # ... and the NodeClaims are Registered with their node.
    custom = client.CustomObjectsApi(world.api_client)
    for claim in launched:
        record = custom.get_cluster_custom_object("nodewright.io", "v1", "nodeclaims", claim["name"])
        assert {c["type"] for c in record["status"]["conditions"]} >= {"Launched", "Registered"}
        assert record["status"]["nodeName"] in {n.metadata.name for n in by_instance.values()} | {
            n.metadata.name for n in world.core.list_node().items
        }
    nominated = [e for e in world.core.list_namespaced_event(namespace).items if e.reason == "Nominated"]
    assert len({e.involved_object.name for e in nominated}) == 49


def test_the_cheapest_offering_out_of_capacity_launches_on_the_next(
    local_world: World, namespace: str, provisioner: Provisioner, make_pool: Any
) -> None:
    world = local_world
    pool = make_pool(
        [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "m5.xlarge"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ]
    )
    world.set_faults(
        {"unavailable": [{"instance_type": "m5.large", "zone": "us-east-1a", "capacity_type": "on-demand"}]}
    )
    deployment(world, namespace, pool, "web", 1, "1", "1Gi")
    wait_for(lambda: all_pending(world, namespace, 1), 60, "the pod marked Unschedulable")
    [response] = provisioner.provision(namespace)
    [claim] = response["nodeclaims"]
    assert claim["planned"]["instance_type"] == "m5.large"  # the simulation's choice ...
    assert claim["instance_type"] == "m5.xlarge"  # ... refused with InsufficientInstanceCapacity, so the next
    unavailable = [d for d in response["decisions"] if d["action"] == "unavailable"]
    assert [d["subject"] for d in unavailable] == ["offering/m5.large/us-east-1a/on-demand"]
    assert "InsufficientInstanceCapacity" in unavailable[0]["reason"]
    mark = world.aws("dynamodb").get_item(
        TableName=provisioner.table,
        Key={"pk": {"S": "unavailable"}, "sk": {"S": "m5.large#us-east-1a#on-demand"}},
        ConsistentRead=True,
    )["Item"]
    assert 0 < int(mark["expires_at"]["N"]) - time.time() <= 180
    [instance] = pool.instances()
    assert instance["InstanceType"] == "m5.xlarge"
    converge(provisioner, namespace, 1)
    [placed] = running(world, namespace)
    assert node_of(world, placed).metadata.labels["node.kubernetes.io/instance-type"] == "m5.xlarge"


def test_nodepool_cpu_limit_caps_the_launch_and_the_rest_stay_pending_with_a_reason(
    local_world: World, namespace: str, provisioner: Provisioner, make_pool: Any
) -> None:
    world = local_world
    pool = make_pool(
        [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c5", "m5"]},
        ],
        limits={"cpu": "4"},
    )
    deployment(world, namespace, pool, "web", 8, "1", "1Gi")
    wait_for(lambda: all_pending(world, namespace, 8), 60, "8 pods marked Unschedulable")
    [response] = provisioner.provision(namespace)
    fitted = sum(len(c["pods"]) for c in response["nodeclaims"])
    refused = [d for d in response["decisions"] if d["action"] == "unschedulable"]
    assert 0 < fitted < 8 and len(refused) == 8 - fitted
    assert all("limit" in d["reason"] for d in refused)
    types = world.aws("ec2").describe_instance_types(
        InstanceTypes=sorted({i["InstanceType"] for i in pool.instances()})
    )
    vcpus = {t["InstanceType"]: t["VCpuInfo"]["DefaultVCpus"] for t in types["InstanceTypes"]}
    assert sum(vcpus[i["InstanceType"]] for i in pool.instances()) <= 4
    converge(provisioner, namespace, fitted)
    # Another round changes nothing: the limit is used up by what runs; the rest stay Pending with the reason.
    provisioner.provision(namespace)
    assert sum(vcpus.get(i["InstanceType"], 99) for i in pool.instances()) <= 4
    assert len(running(world, namespace)) == fitted
    pending = [p for p in pods(world, namespace) if not p.spec.node_name]
    assert len(pending) == 8 - fitted
    warnings = [
        e
        for e in world.core.list_namespaced_event(namespace).items
        if e.reason == "FailedScheduling" and e.source and e.source.component == "nodewright"
    ]
    assert {e.involved_object.name for e in warnings} >= {p.metadata.name for p in pending}
    assert all("limit" in e.message for e in warnings)


def test_the_forwarder_reports_a_joined_node_so_its_taint_comes_off_without_another_pod_batch(
    local_world: World, namespace: str, provisioner: Provisioner, make_pool: Any, tmp_path: Path
) -> None:
    world = local_world
    pool = make_pool([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])
    # The real forwarder, sending to the stack's provisioner; a pod is re-sent only after an hour, so within
    # this test every pod goes out once and only the node watch can finish the registrations.
    overrides = {
        "POD_NAMESPACE": namespace,
        "NODEWRIGHT_FORWARDER_LEASE_NAME": f"forwarder-{uuid.uuid4().hex[:6]}",
        "NODEWRIGHT_FORWARDER_RESEND_INITIAL_SECONDS": "3600",
        "NODEWRIGHT_FORWARDER_RESEND_MAX_SECONDS": "3600",
    }
    forwarder = ForwarderProcess(world, provisioner.function, "registrations", tmp_path, overrides)
    try:
        wait_for(forwarder.ready, 30, f"the forwarder ready ({forwarder.log_path})")
        wait_for(forwarder.leading, 15, "the forwarder to lead")
        deployment(world, namespace, pool, "joined", 4, "500m", "512Mi")
        try:
            wait_for(lambda: len(running(world, namespace)) == 4, 120, "4 running pods", interval=1)
        except AssertionError as error:
            log = forwarder.log_path.read_text()[-6000:]
            raise AssertionError(f"{error}\n{diagnose(world, namespace, [])}\n{log}") from None
        lines = forwarder.log_lines()
    finally:
        forwarder.stop()

    mine = {f"{namespace}/{p.metadata.name}" for p in pods(world, namespace)}
    custom = client.CustomObjectsApi(world.api_client)
    claims = [
        c
        for c in custom.list_cluster_custom_object("nodewright.io", "v1", "nodeclaims")["items"]
        if c["metadata"]["labels"].get("karpenter.sh/nodepool") == pool.name
    ]
    assert claims
    # Each pod was sent once (no re-send within the hour), in the batches that created the claims.
    nominated = [p for c in claims for p in json.loads(c["metadata"]["annotations"]["nodewright.io/pods"])]
    assert sorted(nominated) == sorted(mine)
    batch_ids = {c["metadata"]["annotations"]["nodewright.io/batch-id"] for c in claims}
    sent = {line["batch_id"] for line in lines if line.get("message") == "batch sent"}
    assert batch_ids <= sent
    # The nodes lost karpenter.sh/unregistered, and registration payloads (no pods) did it: each pod batch went
    # out once, before its claims' nodes existed, so only a registration could register the last of them.
    # (A pod batch that happens to run after an earlier claim's node joined registers that one itself, and one
    # registration may register several claims: the provisioner matches every node that has joined by then.)
    nodes = {c["status"]["nodeName"] for c in claims}
    for name in nodes:
        node = world.core.read_node(name)
        assert not [t for t in node.spec.taints or [] if t.key == "karpenter.sh/unregistered"]
    registrations = [line for line in lines if line.get("message") == "registration sent"]
    pod_batches = [line for line in lines if line.get("message") == "batch sent"]
    by_registrations = sum(line["response"]["summary"].get("registered", 0) for line in registrations)
    by_pod_batches = sum(line["response"]["summary"].get("registered", 0) for line in pod_batches)
    assert by_registrations >= 1, lines
    assert by_registrations + by_pod_batches >= len(claims)
    assert {n for line in registrations for n in line["nodes"]} & nodes
    assert not batch_ids & {line["batch_id"] for line in registrations}
    for claim in claims:
        assert {c["type"] for c in claim["status"]["conditions"]} >= {"Launched", "Registered"}
        # Recorded at launch from the catalog, through the real CRD's schema (which would prune unknown fields).
        assert set(claim["status"]["capacity"]) >= {"cpu", "memory", "pods"}
        assert set(claim["status"]["allocatable"]) >= {"cpu", "memory", "pods"}
        assert claim["status"]["imageID"].startswith("ami-")
