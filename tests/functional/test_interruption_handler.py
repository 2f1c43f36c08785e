"""The interruption handler against moto: EventBridge rules (the construct's patterns) route events to an SQS
queue, the received messages become a Lambda SQS event, and the real handler starts executions of a state
machine in moto and marks offerings in a DynamoDB table shaped like the stack's.

The Cluster port is in memory (the end-to-end tests use the real API server); everything else is the
handler's own boto3 clients and adapters, EC2 included: ownership is decided by the instances' tags before the
cluster is read, so the NodeClaims' instances are real moto instances with nodewright's tags.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from handlers import Context, load_handler
from moto import mock_aws

from nodewright import settings
from nodewright.adapters.dynamodb_state import DynamoDBState
from nodewright.adapters.memory import InMemoryCluster
from nodewright.disruption.commands import SPOT_INTERRUPTION, DisruptionCommand
from nodewright.interruption.rules import EVENT_PATTERNS
from nodewright.tags import launch_tags

REGION = "us-east-1"
CLUSTER = "func"
TABLE = "nodewright"
FOREIGN = "i-0fedcba9876543210"


@dataclass
class World:
    queue_url: str
    queue_arn: str
    state_machine: str
    sqs: Any
    events: Any
    sfn: Any
    dynamodb: Any
    ec2: Any
    mine: str  # an instance launched for the NodeClaim default-abc12, tagged as nodewright tags it


def launch(
    ec2: Any, nodeclaim: str, zone: str = "us-east-1a", instance_type: str = "m5.large", spot: bool = True
) -> str:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    pool = nodeclaim.rsplit("-", 1)[0]
    tags = [{"Key": k, "Value": v} for k, v in launch_tags(CLUSTER, pool, "default", nodeclaim).items()]
    instance: str = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType=instance_type,
        Placement={"AvailabilityZone": zone},
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        **({"InstanceMarketOptions": {"MarketType": "spot"}} if spot else {}),
    )["Instances"][0]["InstanceId"]
    return instance


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with mock_aws():
        sfn = boto3.client("stepfunctions", region_name=REGION)
        state_machine = sfn.create_state_machine(
            name="disruption",
            definition=json.dumps({"StartAt": "Identify", "States": {"Identify": {"Type": "Pass", "End": True}}}),
            roleArn="arn:aws:iam::123456789012:role/disruption",
        )["stateMachineArn"]
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            settings.REGION: REGION,
            settings.CLUSTER: CLUSTER,
            settings.TABLE: TABLE,
            settings.STATE_MACHINE: state_machine,
            settings.ACCOUNT: "123456789012",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_NAMESPACE": "nodewright",
        }.items():
            monkeypatch.setenv(key, value)
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        # As infra/table.py declares it.
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[
                {"AttributeName": settings.TABLE_PARTITION_KEY, "KeyType": "HASH"},
                {"AttributeName": settings.TABLE_SORT_KEY, "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": settings.TABLE_PARTITION_KEY, "AttributeType": "S"},
                {"AttributeName": settings.TABLE_SORT_KEY, "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        dynamodb.update_time_to_live(
            TableName=TABLE,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": settings.TABLE_TTL_ATTRIBUTE},
        )
        sqs = boto3.client("sqs", region_name=REGION)
        queue_url = sqs.create_queue(QueueName="interruptions")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events = boto3.client("events", region_name=REGION)
        for name, pattern in EVENT_PATTERNS.items():
            events.put_rule(Name=name, EventPattern=json.dumps(pattern))
            events.put_targets(Rule=name, Targets=[{"Id": "queue", "Arn": queue_arn}])
        ec2 = boto3.client("ec2", region_name=REGION)
        yield World(queue_url, queue_arn, state_machine, sqs, events, sfn, dynamodb, ec2, launch(ec2, "default-abc12"))


def cluster(world: World, *extra: dict[str, Any]) -> InMemoryCluster:
    mine = world.mine
    return InMemoryCluster(
        [
            {
                "apiVersion": "nodewright.io/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": "default-abc12",
                    "labels": {
                        "karpenter.sh/nodepool": "default",
                        "node.kubernetes.io/instance-type": "m5.large",
                        "topology.kubernetes.io/zone": "us-east-1a",
                        "karpenter.sh/capacity-type": "spot",
                    },
                },
                "status": {"providerID": f"aws:///us-east-1a/{mine}", "nodeName": "ip-10-0-1-5"},
            },
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "ip-10-0-1-5"},
                "spec": {"providerID": f"aws:///us-east-1a/{mine}"},
            },
            *extra,
        ]
    )


def put(world: World, detail_type: str, detail: dict[str, Any], source: str = "aws.ec2") -> None:
    response = world.events.put_events(
        Entries=[{"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail), "Resources": []}]
    )
    assert response["FailedEntryCount"] == 0


def received(world: World) -> list[dict[str, Any]]:
    """Everything on the queue, as the records of a Lambda SQS event."""
    records = []
    while True:
        messages = world.sqs.receive_message(
            QueueUrl=world.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return records
        records.extend(sqs_record(world, m["Body"], m["MessageId"], m["ReceiptHandle"]) for m in messages)


def sqs_record(world: World, body: str, message_id: str = "", receipt: str = "rh") -> dict[str, Any]:
    message_id = message_id or hashlib.sha256(body.encode()).hexdigest()[:32]
    return {
        "messageId": message_id,
        "receiptHandle": receipt,
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1772366400000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1772366400001",
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": world.queue_arn,
        "awsRegion": REGION,
    }


def executions(world: World) -> list[dict[str, Any]]:
    listed = world.sfn.list_executions(stateMachineArn=world.state_machine)["executions"]
    return [world.sfn.describe_execution(executionArn=e["executionArn"]) for e in listed]


def run(handler: Any, records: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = handler.handler({"Records": records}, Context())
    return result


def handler_with(memory: InMemoryCluster) -> Any:
    module = load_handler("interruption")
    module._RUNTIME = module.build_runtime(cluster=memory)
    return module


def test_spot_warning_from_eventbridge_starts_the_workflow_and_marks_the_offering(world: World) -> None:
    memory = cluster(world)
    handler = handler_with(memory)
    put(world, "EC2 Spot Instance Interruption Warning", {"instance-id": world.mine, "instance-action": "terminate"})
    records = received(world)
    assert len(records) == 1

    assert run(handler, records) == {"batchItemFailures": []}

    [execution] = executions(world)
    command = DisruptionCommand.from_input(json.loads(execution["input"]))
    event = json.loads(records[0]["body"])
    assert execution["name"] == command.execution_name()
    assert (command.nodeclaim, command.node, command.instance_id) == ("default-abc12", "ip-10-0-1-5", world.mine)
    assert (command.reason, command.forceful, command.trigger) == (SPOT_INTERRUPTION, True, event["id"])
    assert command.deadline is not None and command.deadline - command.requested_at <= 120
    marked = DynamoDBState(TABLE, world.dynamodb).unavailable_offerings(command.requested_at)
    assert marked == frozenset({("m5.large", "us-east-1a", "spot")})
    assert [(e.pod, e.reason) for e in memory.events] == [("node/ip-10-0-1-5", "SpotInterrupted")]


def test_a_redelivered_record_starts_no_second_execution(world: World) -> None:
    handler = handler_with(cluster(world))
    world.ec2.terminate_instances(InstanceIds=[world.mine])  # what the event reports, as EC2 says it too
    put(world, "EC2 Instance State-change Notification", {"instance-id": world.mine, "state": "shutting-down"})
    records = received(world)
    assert run(handler, records) == {"batchItemFailures": []}
    assert run(handler, records) == {"batchItemFailures": []}  # SQS delivers at least once
    assert len(executions(world)) == 1


def test_a_malformed_message_fails_only_its_record_and_a_foreign_instance_is_acknowledged(world: World) -> None:
    handler = handler_with(cluster(world))
    put(world, "EC2 Spot Instance Interruption Warning", {"instance-id": FOREIGN, "instance-action": "terminate"})
    put(world, "EC2 Capacity Reservation Instance Interruption Warning", {"instance-id": world.mine})
    good = received(world)
    malformed = sqs_record(
        world,
        json.dumps(
            {
                "id": "x",
                "source": "aws.ec2",
                "detail-type": "EC2 Spot Instance Interruption Warning",
                "time": "2026-03-01T12:00:00Z",
                "detail": {},
            }
        ),
    )
    not_json = sqs_record(world, "{oops")

    result = run(handler, [good[0], malformed, good[1], not_json])

    assert sorted(f["itemIdentifier"] for f in result["batchItemFailures"]) == sorted(
        [malformed["messageId"], not_json["messageId"]]
    )
    [execution] = executions(world)  # the reservation warning for ours; nothing for the foreign instance
    assert json.loads(execution["input"])["reason"] == "CapacityReservationInterruption"


def test_rules_keep_events_nodewright_ignores_off_the_queue(world: World) -> None:
    put(world, "EC2 Instance State-change Notification", {"instance-id": world.mine, "state": "running"})
    put(world, "EC2 Instance State-change Notification", {"instance-id": world.mine, "state": "pending"})
    put(
        world,
        "AWS Health Event",
        {"service": "RDS", "eventTypeCategory": "scheduledChange", "affectedEntities": []},
        source="aws.health",
    )
    put(
        world,
        "AWS Health Event",
        {"service": "EC2", "eventTypeCategory": "issue", "affectedEntities": [{"entityValue": world.mine}]},
        source="aws.health",
    )
    put(world, "EC2 Instance Launch Successful", {"instance-id": world.mine})
    assert received(world) == []
    put(
        world,
        "AWS Health Event",
        {
            "service": "EC2",
            "eventTypeCategory": "scheduledChange",
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "affectedEntities": [{"entityValue": world.mine}],
        },
        source="aws.health",
    )
    put(world, "EC2 Instance Rebalance Recommendation", {"instance-id": world.mine})
    assert len(received(world)) == 2


def test_an_instance_whose_nodeclaim_status_is_not_written_yet_is_owned_by_its_ec2_tags(world: World) -> None:
    instance = launch(world.ec2, "default-late9", instance_type="c6g.xlarge")
    late_claim = {"apiVersion": "nodewright.io/v1", "kind": "NodeClaim", "metadata": {"name": "default-late9"}}
    handler = handler_with(cluster(world, late_claim))
    put(world, "EC2 Spot Instance Interruption Warning", {"instance-id": instance, "instance-action": "stop"})

    assert run(handler, received(world)) == {"batchItemFailures": []}

    [execution] = executions(world)
    assert json.loads(execution["input"])["nodeclaim"] == "default-late9"


def test_state_changes_of_the_regions_other_instances_are_decided_without_reading_the_cluster(world: World) -> None:
    memory = cluster(world)
    handler = handler_with(memory)
    untagged = world.ec2.run_instances(
        ImageId=world.ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"], MinCount=3, MaxCount=3
    )["Instances"]
    for instance in untagged:
        put(
            world,
            "EC2 Instance State-change Notification",
            {"instance-id": instance["InstanceId"], "state": "stopping"},
        )
    assert run(handler, received(world)) == {"batchItemFailures": []}
    assert executions(world) == [] and memory.reads == []


def test_missing_settings_fail_the_invocation_naming_the_variable(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(settings.STATE_MACHINE)
    handler = load_handler("interruption")
    put(world, "EC2 Instance Rebalance Recommendation", {"instance-id": world.mine})
    with pytest.raises(settings.SettingsError, match=settings.STATE_MACHINE):
        run(handler, received(world))


def test_a_bad_rebalance_mode_is_named(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.REBALANCE, "sometimes")
    with pytest.raises(settings.SettingsError, match=f"{settings.REBALANCE} is 'sometimes'"):
        load_handler("interruption").build_runtime(cluster=cluster(world))


def test_a_state_change_ec2_contradicts_and_a_spot_warning_for_on_demand_capacity_start_nothing(world: World) -> None:
    on_demand = launch(world.ec2, "default-od111", spot=False)
    claim = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-od111", "labels": {"karpenter.sh/nodepool": "default"}},
        "status": {"providerID": f"aws:///us-east-1a/{on_demand}"},
    }
    handler = handler_with(cluster(world, claim))
    put(world, "EC2 Instance State-change Notification", {"instance-id": world.mine, "state": "stopping"})
    put(world, "EC2 Spot Instance Interruption Warning", {"instance-id": on_demand, "instance-action": "terminate"})
    assert run(handler, received(world)) == {"batchItemFailures": []}
    assert executions(world) == []
