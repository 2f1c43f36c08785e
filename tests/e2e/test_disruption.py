"""Disruption end to end on the local world: the stack's state machine runs the real step handlers in moto.

The stack is the one the CDK app synthesizes (deployed through moto's CloudFormation); its state machine's
ASL (Parallel, Wait loops, Retry, Catch) is executed by moto, each task invoking the step's function, whose
handler runs in the moto server and reaches the API server with an EKS token. Evictions meet the real
PodDisruptionBudget admission of the real API server; the kube-scheduler and the ReplicaSet controller put
evicted pods back on the replacement, which the registrar brings up from the instance the workflow launched.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from test_provisioning import Pool, Provisioner, converge, deployment, running
from worldkit import World, wait_for

from nodewright.disruption.commands import EXPIRED, SPOT_INTERRUPTION, DisruptionCommand

EVENTS = Path(__file__).resolve().parents[2] / "examples" / "events"


def fresh_warning(instance_id: str, region: str) -> dict[str, Any]:
    """The example Spot warning for `instance_id`, sent now (a warning past its two-minute notice is refused)."""
    event: dict[str, Any] = json.loads((EVENTS / "spot-interruption-warning.json").read_text())
    event["id"] = str(uuid.uuid4())
    event["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    event["region"] = region
    event["resources"] = [f"arn:aws:ec2:{region}:123456789012:instance/{instance_id}"]
    event["detail"]["instance-id"] = instance_id
    return event


def spot(instance_type: str) -> list[dict[str, Any]]:
    """Spot capacity of one type, so a test's pods share one node (cheapest-per-pod would otherwise pick several
    small ones). Each test has its own type: a Spot warning marks its offering unavailable for three minutes,
    which must not reach the next test's pool."""
    return [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [instance_type]},
    ]


class Stack:
    """The deployed stack's outputs and the clients the tests drive it with."""

    def __init__(self, world: World, outputs: dict[str, str]) -> None:
        self.world = world
        self.outputs = outputs
        self.provisioner = Provisioner(world, outputs)
        self.sfn = world.aws("stepfunctions")
        self.machine = outputs["StateMachineArn"]

    def executions(self) -> list[dict[str, Any]]:
        return list(self.sfn.list_executions(stateMachineArn=self.machine)["executions"])

    def start(self, command: DisruptionCommand) -> str:
        arn: str = self.sfn.start_execution(
            stateMachineArn=self.machine, name=command.execution_name(), input=json.dumps(command.to_input())
        )["executionArn"]
        return arn

    def finish(self, execution: str, timeout: float = 240) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            described: dict[str, Any] = self.sfn.describe_execution(executionArn=execution)
            return described if described["status"] != "RUNNING" else None

        return wait_for(done, timeout, f"execution {execution} to finish", interval=0.5)

    def executions_for(self, nodeclaim: str, reason: str = SPOT_INTERRUPTION) -> list[dict[str, Any]]:
        return [e for e in self.executions() if e["name"].startswith(f"{reason}-{nodeclaim}-")]

    def put_spot_warnings(self, instance_id: str, count: int = 1) -> list[str]:
        """Spot interruption warnings through EventBridge's default bus, as EC2 sends them; returns event ids."""
        region, account = self.world.state.region, "123456789012"
        entry = {
            "Source": "aws.ec2",
            "DetailType": "EC2 Spot Instance Interruption Warning",
            "Resources": [f"arn:aws:ec2:{region}:{account}:instance/{instance_id}"],
            "Detail": json.dumps({"instance-id": instance_id, "instance-action": "terminate"}),
        }
        response = self.world.aws("events").put_events(Entries=[entry] * count)
        assert response["FailedEntryCount"] == 0, response
        return [e["EventId"] for e in response["Entries"]]

    def send_raw(self, *bodies: str) -> None:
        """Messages straight onto the interruption queue: a duplicate delivery or a rule target's retry."""
        self.world.aws("sqs").send_message_batch(
            QueueUrl=self.outputs["InterruptionQueueUrl"],
            Entries=[{"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies)],
        )

    def history(self, execution: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
        return events


@pytest.fixture
def pool_factory(local_world: World, namespace: str, stack: Stack) -> Iterator[Any]:
    made: list[Pool] = []

    def make(requirements: list[dict[str, Any]], **template: Any) -> Pool:
        pool = Pool(local_world, stack.provisioner.node_role, namespace, requirements, None)
        if template:
            custom = client.CustomObjectsApi(local_world.api_client)
            custom.patch_cluster_custom_object(
                "nodewright.io", "v1", "nodepools", pool.name, {"spec": {"template": {"spec": template}}}
            )
        made.append(pool)
        return pool

    yield make
    local_world.set_faults({})
    for pool in made:
        pool.teardown()


def nodeclaims(world: World, pool: Pool) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(world.api_client)
    found = custom.list_cluster_custom_object("nodewright.io", "v1", "nodeclaims")["items"]
    return [c for c in found if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool.name]


def claim_summary(claim: dict[str, Any]) -> dict[str, Any]:
    """What tells two NodeClaims' stories apart in a failure message."""
    meta, status = claim["metadata"], claim.get("status") or {}
    conditions = {c["type"]: c.get("status") for c in status.get("conditions") or []}
    return {
        "name": meta["name"],
        "created": meta.get("creationTimestamp"),
        "deleting": meta.get("deletionTimestamp"),
        "providerID": status.get("providerID"),
        "conditions": conditions,
    }


def registered(world: World, stack: Stack, namespace: str, pool: Pool, replicas: int) -> tuple[dict[str, Any], Any]:
    """Converge the pods onto one node; returns its NodeClaim and Node."""
    responses = converge(stack.provisioner, namespace, replicas)
    claims = nodeclaims(world, pool)
    assert len(claims) == 1, (
        f"expected one NodeClaim, found {[claim_summary(c) for c in claims]}; provisioner said "
        f"{[d for r in responses for d in r.get('decisions', [])]}"
    )
    [claim] = claims
    [node] = world.core.list_node(label_selector=f"karpenter.sh/nodepool={pool.name}").items
    return claim, node


def command_for(claim: dict[str, Any], node: Any, reason: str, trigger: str, **kw: Any) -> DisruptionCommand:
    now = time.time()
    deadline = now + 120 if reason == SPOT_INTERRUPTION else None
    return DisruptionCommand(
        nodeclaim=claim["metadata"]["name"],
        node=node.metadata.name,
        instance_id=node.spec.provider_id.rsplit("/", 1)[-1],
        reason=reason,
        forceful=True,
        trigger=trigger,
        requested_at=now,
        deadline=deadline,
        **kw,
    )


def pdb(world: World, namespace: str, app: str, max_unavailable: int = 1) -> None:
    """A PodDisruptionBudget over the app's pods (`maxUnavailable: 0` allows no eviction at all)."""
    world.policy.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": app},
            "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
        },
    )


class ReadyWatch:
    """Samples the Ready pods of an app every 100 ms in a thread: `samples` are (epoch seconds, ready)."""

    def __init__(self, world: World, namespace: str, app: str) -> None:
        self.world, self.namespace, self.app = world, namespace, app
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _ready(self) -> int:
        found = self.world.core.list_namespaced_pod(self.namespace, label_selector=f"app={self.app}").items
        return sum(
            1
            for p in found
            if p.metadata.deletion_timestamp is None
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.time(), self._ready()))
            time.sleep(0.1)

    def lowest(self, until: float) -> int:
        return min(ready for at, ready in self.samples if at < until)

    def __enter__(self) -> ReadyWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def timeline(history: list[dict[str, Any]], since: float) -> str:
    """Seconds from `since` to each state's first entry, for a failure message or a figure."""
    first: dict[str, float] = {}
    for e in history:
        if e["type"].endswith("StateEntered"):
            first.setdefault(e["stateEnteredEventDetails"]["name"], e["timestamp"].timestamp() - since)
    return ", ".join(f"{name} {at:.1f}s" for name, at in sorted(first.items(), key=lambda kv: kv[1]))


def output(described: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(described.get("output") or "{}")
    return result


def test_spot_interruption_replaces_drains_under_the_pdb_and_terminates(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("m5.xlarge"))
    deployment(world, namespace, pool, "web", 6, "250m", "256Mi")
    pdb(world, namespace, "web")
    claim, node = registered(world, stack, namespace, pool, 6)
    instance_id = node.spec.provider_id.rsplit("/", 1)[-1]

    with ReadyWatch(world, namespace, "web") as watch:
        started, warned = time.monotonic(), time.time()
        stack.put_spot_warnings(instance_id)
        [listed] = wait_for(lambda: stack.executions_for(claim["metadata"]["name"]), 30, "the workflow to start")
        execution = listed["executionArn"]
        described = stack.finish(execution)
        assert described["status"] == "SUCCEEDED", described
        wait_for(lambda: len(running(world, namespace)) == 6, 90, "all 6 pods running again")
        elapsed = time.monotonic() - started
    result = output(described)
    history = stack.history(execution)
    print(f"spot interruption timeline: {timeline(history, warned)}")
    assert result["identify"]["urgent"] and len(result["identify"]["moving"]) == 6
    replaced, drained = result["replace_and_drain"]
    [replacement] = replaced["replacement"]["nodeclaims"]
    drain = drained["drain"]
    deadline = result["identify"]["deadline"]
    assert deadline == pytest.approx(warned + 120, abs=5)  # two minutes after the warning
    # Every pod left while the instance lived, by eviction with the PodDisruptionBudget holding (never more than
    # one of the six unavailable). On an idle machine all six are evicted in about 40 s; on a loaded one the
    # two minutes can run out first, and then what is left is deleted, as the instance would take it anyway.
    deleted = [
        (e["timestamp"].timestamp(), p)
        for e in history
        if e["type"] == "TaskStateExited"
        for p in json.loads(e["stateExitedEventDetails"]["output"]).get("drain", {}).get("deleted", [])
    ]
    assert all(at >= deadline for at, _ in deleted)  # nothing is deleted before the deadline
    # A round retried after a transient failure (the machine is shared) starts from the state before its failed
    # attempt, so evicted_total is a lower bound; left_total is read from the cluster. What did not leave by
    # deletion left by eviction.
    retried = [e["type"] for e in history if e["type"] in ("TaskFailed", "TaskTimedOut", "LambdaFunctionFailed")]
    print(f"spot interruption: retried task attempts: {retried or 'none'}; drain: {drain}")
    assert drain["done"] and drain["left_total"] == 6, drain
    deleted_pods = {p for _, p in deleted}
    assert drain["left_total"] - len(deleted_pods) >= 1, (drain, deleted)
    assert watch.lowest(until=deadline) >= 5, watch.samples
    # The instance is terminated, its Node and NodeClaim are gone, and the pods run on the replacement.
    state = world.aws("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    assert state["State"]["Name"] in ("shutting-down", "terminated")
    assert node.metadata.name not in {n.metadata.name for n in world.core.list_node().items}
    assert [c["metadata"]["name"] for c in nodeclaims(world, pool)] == [replacement]
    new_node = {p.spec.node_name for p in running(world, namespace)}
    assert node.metadata.name not in new_node and len(new_node) == 1
    assert "ParallelStateEntered" in [e["type"] for e in history]
    # A Spot warning also marks its offering unavailable for the next launches.
    marks = world.aws("dynamodb").query(
        TableName=stack.outputs["TableName"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "unavailable"}},
    )["Items"]
    zone = node.metadata.labels["topology.kubernetes.io/zone"]
    assert f"m5.xlarge#{zone}#spot" in {m["sk"]["S"] for m in marks}
    split = f"{drain['left_total'] - len(deleted_pods)} evicted, {len(deleted_pods)} deleted after the deadline"
    print(f"spot interruption: {split}; execution and 6 pods running again in {elapsed:.1f}s")


def test_expiration_waits_for_do_not_disrupt_until_the_grace_period_then_proceeds(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("m5.2xlarge"), expireAfter="20s", terminationGracePeriod="15s")
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    deployment(world, namespace, pool, "batch", 1, "250m", "256Mi")
    world.apps.patch_namespaced_deployment(
        "batch",
        namespace,
        {"spec": {"template": {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}}}},
    )
    claim, _ = registered(world, stack, namespace, pool, 2)
    assert claim["spec"]["expireAfter"] == "20s" and claim["spec"]["terminationGracePeriod"] == "15s"

    # The planner, as the schedule calls it, starts the workflow once the NodeClaim is older than 20 s.
    lambda_ = world.aws("lambda")
    name = claim["metadata"]["name"]

    def planned() -> dict[str, Any] | None:
        response = lambda_.invoke(FunctionName=stack.outputs["PlannerFunctionName"], Payload=b"{}")
        body: dict[str, Any] = json.loads(response["Payload"].read())
        assert "FunctionError" not in response, body
        return next((s for s in body["started"] if s["nodeclaim"] == name), None)

    started = wait_for(planned, 60, "the planner to start an Expired workflow", interval=2)
    assert started["reason"] == EXPIRED
    execution = next(e["executionArn"] for e in stack.executions() if e["name"] == started["execution"])
    described = stack.finish(execution)
    assert described["status"] == "SUCCEEDED", described
    result = output(described)
    deadline = result["identify"]["deadline"]
    assert deadline == pytest.approx(result["requested_at"] + 15)
    # Round by round: the do-not-disrupt pod waits while the web pod is evicted; once the grace period has
    # passed it is deleted; then the node is empty and terminated.
    rounds = [
        (e["timestamp"].timestamp(), json.loads(e["stateExitedEventDetails"]["output"])["drain"])
        for e in stack.history(execution)
        if e["type"] == "TaskStateExited" and e["stateExitedEventDetails"]["name"] in ("CordonAndDrain", "CheckDrain")
    ]
    waited = [r for _, r in rounds if any("do-not-disrupt" in why for why in r["waiting"].values())]
    [(deleted_at, deleting)] = [(t, r) for t, r in rounds if r["deleted"]]
    assert waited and len(rounds) >= 3
    assert [p.split("/")[1].rsplit("-", 2)[0] for p in deleting["deleted"]] == ["batch"]
    assert deleted_at >= deadline
    assert any(f"{namespace}/web-" in p for _, r in rounds for p in r["evicted"])
    assert rounds[-1][1]["done"]
    assert name not in {c["metadata"]["name"] for c in nodeclaims(world, pool)}


def test_a_replacement_that_cannot_launch_rolls_back_and_leaves_the_node_schedulable(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("m5.large"))  # the capacity errors below mark m5.large unavailable
    deployment(world, namespace, pool, "web", 2, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 2)
    world.set_faults({"unavailable": [{"instance_type": "m5.large", "zone": "*", "capacity_type": "*"}]})
    execution = stack.start(command_for(claim, node, EXPIRED, f"test-{uuid.uuid4()}"))
    described = stack.finish(execution)
    assert described["status"] == "FAILED"
    assert described.get("error") == "DisruptionRolledBack"
    states = [
        e["stateEnteredEventDetails"]["name"] for e in stack.history(execution) if e["type"].endswith("StateEntered")
    ]
    assert "LaunchReplacement" in states and "Rollback" in states and "CordonAndDrain" not in states
    current = world.core.read_node(node.metadata.name)
    assert not current.spec.unschedulable
    assert not any(t.key == "karpenter.sh/disrupted" for t in current.spec.taints or [])
    lock = world.aws("dynamodb").get_item(
        TableName=stack.outputs["TableName"],
        Key={"pk": {"S": "lock"}, "sk": {"S": f"nodeclaim/{claim['metadata']['name']}"}},
    )
    assert "Item" not in lock
    assert len(running(world, namespace)) == 2


def test_two_events_for_one_node_at_once_run_one_workflow_and_the_other_stops_at_the_lock(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("c5.xlarge"))
    deployment(world, namespace, pool, "web", 2, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 2)
    stack.put_spot_warnings(node.spec.provider_id.rsplit("/", 1)[-1], count=2)  # two events, two ids
    name = claim["metadata"]["name"]
    executions = wait_for(lambda: (found := stack.executions_for(name)) and len(found) == 2 and found, 30, "2 runs")
    results = [output(stack.finish(e["executionArn"])) for e in executions]
    assert sorted(r["identify"]["outcome"] for r in results) == ["locked", "proceed"]
    assert len([r for r in results if "terminate" in r]) == 1
    locked = next(r for r in results if r["identify"]["outcome"] == "locked")
    assert "already disrupting" in locked["identify"]["reason"]


def test_a_duplicated_event_and_a_target_retry_start_one_execution(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("c5.2xlarge"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 1)
    instance_id = node.spec.provider_id.rsplit("/", 1)[-1]
    body = json.dumps(fresh_warning(instance_id, world.state.region))
    stack.send_raw(body, body)  # delivered twice in one batch
    stack.send_raw(body)  # and once more later, as a rule target's retry would
    name = claim["metadata"]["name"]
    [execution] = wait_for(lambda: stack.executions_for(name), 30, "the workflow to start")
    stack.finish(execution["executionArn"])
    queue = world.aws("sqs").get_queue_attributes(
        QueueUrl=stack.outputs["InterruptionQueueUrl"], AttributeNames=["All"]
    )["Attributes"]
    assert queue["ApproximateNumberOfMessages"] == "0" and queue["ApproximateNumberOfMessagesNotVisible"] == "0"
    assert len(stack.executions_for(name)) == 1


def test_a_foreign_instance_is_acknowledged_and_a_malformed_message_reaches_the_dlq_alone(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(spot("r5.xlarge"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    claim, node = registered(world, stack, namespace, pool, 1)
    instance_id = node.spec.provider_id.rsplit("/", 1)[-1]
    before = {e["name"] for e in stack.executions()}
    owned = fresh_warning(instance_id, world.state.region)
    foreign = fresh_warning("i-0fffffffffffffff0", world.state.region)
    malformed = (EVENTS / "malformed-spot-warning.json").read_text()
    stack.send_raw(json.dumps(foreign), malformed, json.dumps(owned))  # one batch

    sqs = world.aws("sqs")
    dlq = stack.outputs["InterruptionDeadLetterQueueUrl"]

    def dead_letters() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", [])
        return found

    [dead] = wait_for(dead_letters, 60, "the malformed message in the dead-letter queue")
    assert json.loads(dead["Body"])["id"] == json.loads(malformed)["id"]
    # The rest of the batch was served: the owned instance's workflow started, the foreign one started nothing.
    [started] = [e for e in stack.executions() if e["name"] not in before]
    assert started["name"].startswith(f"{SPOT_INTERRUPTION}-{claim['metadata']['name']}-")
    stack.finish(started["executionArn"])
    queue = sqs.get_queue_attributes(QueueUrl=stack.outputs["InterruptionQueueUrl"], AttributeNames=["All"])
    assert queue["Attributes"]["ApproximateNumberOfMessages"] == "0"
