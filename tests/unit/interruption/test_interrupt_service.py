"""handle_message() over in-memory ports: ownership from the fleet (and tags), offerings marked with the
provisioner's TTL, one workflow per command, a redelivery starting nothing, node events, and errors."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.disruption.commands import PREPARE, SPOT_INTERRUPTION, DisruptionCommand
from nodewright.interruption.messages import EventError
from nodewright.ports import Instance, NodeEvent
from nodewright.service.interrupt import handle_message
from nodewright.service.provision import UNAVAILABLE_TTL_SECONDS
from nodewright.tags import launch_tags

NOW = 1_772_366_405.0
MINE = "i-0123456789abcdef0"
LATE = "i-0aaaaaaaaaaaaaaa1"  # launched, NodeClaim status not written yet
FOREIGN = "i-0fedcba9876543210"


@dataclass
class Clock:
    t: float = NOW

    def now(self) -> float:
        return self.t


@dataclass
class RecordingWorkflows:
    """Step Functions in a dict: a name seen before is ExecutionAlreadyExists (False)."""

    executions: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    calls: int = 0

    def start(self, name: str, document: Mapping[str, Any]) -> bool:
        self.calls += 1
        if name in self.executions:
            return False
        self.executions[name] = document
        return True


@dataclass
class TagCloud:
    instances: list[Instance] = field(default_factory=list)
    asked: list[list[str]] = field(default_factory=list)

    def describe_instances(self, instance_ids: Iterable[str]) -> Sequence[Instance]:
        ids = list(instance_ids)
        self.asked.append(ids)
        return [i for i in self.instances if i.id in ids]


class EventsDown(InMemoryCluster):
    def record_node_events(self, events: Sequence[NodeEvent]) -> None:
        raise RuntimeError("API server said 503")


def fleet(cls: type[InMemoryCluster] = InMemoryCluster) -> InMemoryCluster:
    return cls(
        [
            {
                "apiVersion": "nodewright.io/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": "default-abc12",
                    "finalizers": ["nodewright.io/termination"],
                    "labels": {
                        "karpenter.sh/nodepool": "default",
                        "node.kubernetes.io/instance-type": "m5.large",
                        "topology.kubernetes.io/zone": "us-east-1a",
                        "karpenter.sh/capacity-type": "spot",
                    },
                },
                "status": {"providerID": f"aws:///us-east-1a/{MINE}", "nodeName": "ip-10-0-1-5"},
            },
            {
                "apiVersion": "nodewright.io/v1",
                "kind": "NodeClaim",
                "metadata": {"name": "default-late9", "finalizers": ["nodewright.io/termination"]},
            },
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "ip-10-0-1-5"},
                "spec": {"providerID": f"aws:///us-east-1a/{MINE}"},
            },
        ]
    )


def body(detail_type: str, detail: dict[str, Any], source: str = "aws.ec2", event_id: str = "evt-1") -> str:
    return json.dumps(
        {
            "version": "0",
            "id": event_id,
            "detail-type": detail_type,
            "source": source,
            "account": "123456789012",
            "time": "2026-03-01T12:00:00Z",
            "region": "us-east-1",
            "resources": [],
            "detail": detail,
        }
    )


def spot(instance: str = MINE, event_id: str = "evt-1") -> str:
    return body(
        "EC2 Spot Instance Interruption Warning",
        {"instance-id": instance, "instance-action": "terminate"},
        event_id=event_id,
    )


def test_spot_warning_starts_one_forceful_workflow_marks_the_offering_and_records_an_event() -> None:
    cluster, state, workflows = fleet(), InMemoryState(), RecordingWorkflows()
    result = handle_message(spot(), cluster, state, workflows, Clock(), "replace")

    assert result.plan.action == "interrupt"
    [(name, document)] = workflows.executions.items()
    command = DisruptionCommand.from_input(document)
    assert name == command.execution_name()
    assert (command.nodeclaim, command.node, command.instance_id) == ("default-abc12", "ip-10-0-1-5", MINE)
    assert (command.reason, command.forceful, command.trigger) == (SPOT_INTERRUPTION, True, "evt-1")
    # Two minutes from receipt (NOW, five seconds after the event was sent), not from the sender's clock.
    assert command.deadline == NOW + 120
    # Marked for deletion, as Karpenter deletes the NodeClaim: its finalizer keeps it for the workflow.
    assert cluster.objects[("NodeClaim", "", "default-abc12")]["metadata"]["deletionTimestamp"]
    assert state.marks[("m5.large", "us-east-1a", "spot")][0] == NOW + UNAVAILABLE_TTL_SECONDS
    assert [(e.pod, e.reason, e.type) for e in cluster.events] == [("node/ip-10-0-1-5", "SpotInterrupted", "Warning")]
    summary = result.to_json()
    assert summary["started"] == 1 and summary["already_started"] == 0
    assert summary["decisions"][0]["execution"] == name and summary["decisions"][0]["started"] is True
    json.dumps(summary)


def test_a_redelivered_message_starts_nothing_new_and_records_no_second_event() -> None:
    cluster, state, workflows = fleet(), InMemoryState(), RecordingWorkflows()
    handle_message(spot(), cluster, state, workflows, Clock(), "replace")
    again = handle_message(spot(), cluster, state, workflows, Clock(NOW + 30), "replace")
    assert len(workflows.executions) == 1 and workflows.calls == 2
    assert again.to_json()["already_started"] == 1 and again.to_json()["started"] == 0
    assert len(cluster.events) == 1


def test_a_second_event_for_the_same_node_names_another_execution() -> None:
    cluster, workflows = fleet(), RecordingWorkflows()
    handle_message(spot(event_id="evt-1"), cluster, InMemoryState(), workflows, Clock(), "replace")
    handle_message(spot(event_id="evt-2"), cluster, InMemoryState(), workflows, Clock(), "replace")
    assert len(workflows.executions) == 2  # the workflow's lock, not the name, keeps them from both running


def test_foreign_instance_is_acknowledged_with_nothing_started() -> None:
    cluster, state, workflows = fleet(), InMemoryState(), RecordingWorkflows()
    result = handle_message(spot(FOREIGN), cluster, state, workflows, Clock(), "replace")
    assert result.plan.action == "ignore"
    assert "not an instance of this cluster" in result.plan.reason
    assert workflows.executions == {} and state.marks == {} and cluster.events == []


def tagged(instance_id: str, claim: str, cluster: str = "demo") -> Instance:
    return Instance(
        instance_id,
        "c6g.xlarge",
        "us-east-1b",
        "running",
        "spot",
        tags=launch_tags(cluster, "default", "default", claim),
    )


def test_ownership_is_decided_by_tags_and_only_the_named_nodeclaim_and_node_are_read() -> None:
    cloud = TagCloud([tagged(MINE, "default-abc12"), tagged(LATE, "default-late9")])
    cluster, workflows = fleet(), RecordingWorkflows()
    owned = handle_message(spot(MINE), cluster, InMemoryState(), workflows, Clock(), "replace", cloud, "demo")
    assert owned.plan.action == "interrupt"
    [decision] = owned.plan.decisions
    assert (decision.nodeclaim, decision.node) == ("default-abc12", "ip-10-0-1-5")
    assert cluster.reads == ["get nodeclaim/default-abc12", "get node/ip-10-0-1-5"]
    # A launch whose NodeClaim status is not written yet: owned through the tag on the instance.
    late = handle_message(spot(LATE, "evt-2"), cluster, InMemoryState(), workflows, Clock(), "replace", cloud, "demo")
    assert late.plan.action == "interrupt"
    assert DisruptionCommand.from_input(
        workflows.executions[late.to_json()["decisions"][0]["execution"]]
    ).nodeclaim == ("default-late9")


def test_a_foreign_instance_is_decided_without_reading_the_cluster() -> None:
    cloud = TagCloud([tagged(FOREIGN, "default-abc12", cluster="other")])
    cluster, workflows = fleet(), RecordingWorkflows()
    result = handle_message(spot(FOREIGN), cluster, InMemoryState(), workflows, Clock(), "replace", cloud, "demo")
    assert result.plan.action == "ignore" and workflows.executions == {}
    assert cluster.reads == [] and cloud.asked == [[FOREIGN]]
    # Unknown to EC2 altogether (another account's id in a forged event): the same.
    unknown = handle_message(spot(LATE), cluster, InMemoryState(), workflows, Clock(), "replace", cloud, "demo")
    assert unknown.plan.action == "ignore" and cluster.reads == []


def test_an_instance_tagged_for_a_nodeclaim_that_is_gone_is_not_ours() -> None:
    cloud = TagCloud([tagged(FOREIGN, "deleted-claim")])
    cluster, workflows = fleet(), RecordingWorkflows()
    result = handle_message(spot(FOREIGN), cluster, InMemoryState(), workflows, Clock(), "replace", cloud, "demo")
    assert result.plan.action == "ignore" and workflows.executions == {}
    assert cluster.reads == ["get nodeclaim/deleted-claim"]


def test_rebalance_replace_starts_a_prepare_workflow_without_marking() -> None:
    cluster, state, workflows = fleet(), InMemoryState(), RecordingWorkflows()
    result = handle_message(
        body("EC2 Instance Rebalance Recommendation", {"instance-id": MINE}),
        cluster,
        state,
        workflows,
        Clock(),
        "replace",
    )
    assert result.plan.action == "rebalance"
    [document] = workflows.executions.values()
    assert DisruptionCommand.from_input(document).action == PREPARE
    assert state.marks == {}
    assert [(e.reason, e.type) for e in cluster.events] == [("SpotRebalanceRecommendation", "Normal")]


def test_rebalance_ignore_only_records_an_event() -> None:
    cluster, workflows = fleet(), RecordingWorkflows()
    result = handle_message(
        body("EC2 Instance Rebalance Recommendation", {"instance-id": MINE}),
        cluster,
        InMemoryState(),
        workflows,
        Clock(),
        "ignore",
    )
    assert result.plan.action == "ignore" and workflows.executions == {}
    assert [e.reason for e in cluster.events] == ["SpotRebalanceRecommendation"]


class NoFleet(InMemoryCluster):
    def read_fleet(self) -> Any:
        raise AssertionError("an event nodewright does not act on needs no cluster read")


def test_events_not_acted_on_do_not_read_the_cluster() -> None:
    result = handle_message(
        body("EC2 Instance State-change Notification", {"instance-id": MINE, "state": "running"}),
        NoFleet(),
        InMemoryState(),
        RecordingWorkflows(),
        Clock(),
        "replace",
    )
    assert result.plan.action == "ignore" and "'running'" in result.plan.reason


def test_event_recording_failure_is_reported_not_raised() -> None:
    workflows = RecordingWorkflows()
    result = handle_message(spot(), fleet(EventsDown), InMemoryState(), workflows, Clock(), "replace")
    assert len(workflows.executions) == 1
    assert "503" in result.to_json()["events_error"]


def test_a_workflow_start_failure_propagates_so_the_record_is_retried() -> None:
    class Down(RecordingWorkflows):
        def start(self, name: str, document: Mapping[str, Any]) -> bool:
            raise ConnectionError("states endpoint unreachable")

    with pytest.raises(ConnectionError):
        handle_message(spot(), fleet(), InMemoryState(), Down(), Clock(), "replace")


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("{not json", "body"),
        ("[]", "event"),
        (spot().replace('"instance-id"', '"instance_id"'), "detail.instance-id"),
    ],
)
def test_malformed_messages_raise_an_error_naming_the_field(raw: str, path: str) -> None:
    with pytest.raises(EventError) as raised:
        handle_message(raw, fleet(), InMemoryState(), RecordingWorkflows(), Clock(), "replace")
    assert raised.value.path == path


TRUSTED = ("123456789012", "us-east-1")


def raw(detail_type: str, detail: dict[str, Any], **envelope: Any) -> str:
    document = json.loads(body(detail_type, detail))
    document.update(envelope)
    return json.dumps(document)


def spot_instance(capacity_type: str = "spot", state: str = "running") -> Instance:
    tags = launch_tags("demo", "default", "default", "default-abc12")
    return Instance(MINE, "m5.large", "us-east-1a", state, capacity_type, 0.0, tags)


@pytest.mark.parametrize(
    ("message", "clock", "why"),
    [
        (
            raw(
                "EC2 Spot Instance Interruption Warning",
                {"instance-id": MINE, "instance-action": "terminate"},
                account="999999999999",
            ),
            NOW,
            "from account 999999999999",
        ),
        (
            raw(
                "EC2 Spot Instance Interruption Warning",
                {"instance-id": MINE, "instance-action": "terminate"},
                region="eu-west-1",
            ),
            NOW,
            "from region eu-west-1",
        ),
        # Sent at 12:00:00, received three minutes later: the instance is gone, or this was never a warning.
        (
            raw("EC2 Spot Instance Interruption Warning", {"instance-id": MINE, "instance-action": "terminate"}),
            1_772_366_400.0 + 180,
            "received 180s after it was sent",
        ),
    ],
)
def test_a_message_not_to_be_trusted_is_refused_before_anything_is_read(message: str, clock: float, why: str) -> None:
    cluster, state, workflows = fleet(), InMemoryState(), RecordingWorkflows()
    cloud = TagCloud([spot_instance()])
    result = handle_message(message, cluster, state, workflows, Clock(clock), "replace", cloud, "demo", TRUSTED)
    assert result.plan.action == "refuse" and why in result.plan.reason
    assert workflows.executions == {} and state.marks == {} and cloud.asked == [] and cluster.reads == []
    assert "deletionTimestamp" not in cluster.objects[("NodeClaim", "", "default-abc12")]["metadata"]


def test_a_spot_warning_for_an_instance_ec2_says_is_on_demand_deletes_nothing() -> None:
    cluster, state, workflows = fleet(), InMemoryState(), RecordingWorkflows()
    cloud = TagCloud([spot_instance("on-demand")])
    result = handle_message(spot(), cluster, state, workflows, Clock(), "replace", cloud, "demo", TRUSTED)
    assert result.plan.action == "refuse" and "is on-demand capacity, not spot" in result.plan.reason
    assert workflows.executions == {} and state.marks == {}


def test_a_state_change_ec2_contradicts_is_refused() -> None:
    cluster, state, workflows = fleet(), InMemoryState(), RecordingWorkflows()
    stopping = body("EC2 Instance State-change Notification", {"instance-id": MINE, "state": "stopping"})
    cloud = TagCloud([spot_instance(state="running")])
    result = handle_message(stopping, cluster, state, workflows, Clock(), "replace", cloud, "demo", TRUSTED)
    assert result.plan.action == "refuse" and "is running, not stopping" in result.plan.reason
    assert workflows.executions == {}


class MarksDown(InMemoryState):
    def mark_unavailable(self, offerings: Any, now: float, ttl_seconds: int) -> None:
        raise RuntimeError("AccessDeniedException: dynamodb:BatchWriteItem")


def test_the_workflow_starts_before_any_dynamodb_write_and_a_failed_mark_does_not_fail_the_message() -> None:
    cluster, workflows = fleet(), RecordingWorkflows()
    cloud = TagCloud([spot_instance()])
    result = handle_message(spot(), cluster, MarksDown(), workflows, Clock(), "replace", cloud, "demo", TRUSTED)
    assert result.plan.action == "interrupt" and len(workflows.executions) == 1
    assert result.to_json()["unavailable_error"].startswith("RuntimeError: AccessDenied")
    assert cluster.objects[("NodeClaim", "", "default-abc12")]["metadata"]["deletionTimestamp"]


def test_a_rebalance_recommendation_marks_nothing_for_deletion() -> None:
    cluster, workflows = fleet(), RecordingWorkflows()
    message = body("EC2 Instance Rebalance Recommendation", {"instance-id": MINE})
    cloud = TagCloud([spot_instance()])
    handle_message(message, cluster, InMemoryState(), workflows, Clock(), "replace", cloud, "demo", TRUSTED)
    assert len(workflows.executions) == 1
    assert "deletionTimestamp" not in cluster.objects[("NodeClaim", "", "default-abc12")]["metadata"]
