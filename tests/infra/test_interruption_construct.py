"""Template tests for the interruption construct, on a small stack that holds it, a table, a state machine
and stand-in layers, with cdk-nag's AwsSolutions pack as the app runs it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from conftest import CLUSTER

from infra import nag
from infra.config import Settings
from infra.interruption import Interruption
from infra.table import StateTable
from nodewright import settings as env
from nodewright.interruption.messages import EVENT_TYPES

STATE_MACHINE_ACTIONS = {"states:StartExecution"}
EXPECTED_ACTIONS = {
    "states:StartExecution",
    "eks:DescribeCluster",
    "ec2:DescribeInstances",
    "dynamodb:BatchWriteItem",
    "dynamodb:PutItem",
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    # The SQS event source's poller runs as the function's role.
    "sqs:ReceiveMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueUrl",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
}
STAR_ONLY = {"ec2:DescribeInstances", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}


class Built:
    def __init__(self, tmp: Path, **kwargs: Any) -> None:
        # Path metadata (as `cdk synth` adds it) lets the tests find resources by construct path.
        self.app = App(outdir=str(tmp / "out"), context={"aws:cdk:enable-path-metadata": True})
        self.stack = Stack(self.app, "InterruptionTest")
        layer_dir = tmp / "layer"
        (layer_dir / "python").mkdir(parents=True, exist_ok=True)
        layers = SimpleNamespace(
            core=lambda_.LayerVersion(self.stack, "Core", code=lambda_.Code.from_asset(str(layer_dir))),
            dependencies=lambda_.LayerVersion(self.stack, "Deps", code=lambda_.Code.from_asset(str(layer_dir))),
        )
        self.table = StateTable(self.stack, "State").table
        self.state_machine = sfn.StateMachine(
            self.stack, "Workflow", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(self.stack, "Go"))
        )
        for rule in ("AwsSolutions-SF1", "AwsSolutions-SF2"):
            nag.acknowledge(self.state_machine, rule, "a stand-in for the disruption workflow, which has its own tests")
        self.construct = Interruption(
            self.stack,
            "Interruption",
            settings=Settings(cluster_name=CLUSTER, discovery_tag=CLUSTER),
            layers=layers,  # type: ignore[arg-type]
            table=self.table,
            state_machine=self.state_machine,
            **kwargs,
        )
        Validations.of(self.app).add_plugins(AwsSolutionsChecks(self.app))
        assembly = self.app.synth()
        self.template: dict[str, Any] = assembly.get_stack_by_name("InterruptionTest").template
        self.assertions = Template.from_json(self.template)
        self.outdir = tmp / "out"

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == kind}

    def one(self, kind: str, path_part: str) -> tuple[str, dict[str, Any]]:
        matches = [
            (k, v)
            for k, v in self.resources(kind).items()
            if path_part in v.get("Metadata", {}).get("aws:cdk:path", "")
        ]
        assert len(matches) == 1, (kind, path_part, [k for k, _ in matches])
        return matches[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return Built(tmp_path_factory.mktemp("interruption"))


def ref(logical_id: str) -> dict[str, Any]:
    return {"Ref": logical_id}


def arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def test_queue_is_encrypted_redrives_after_five_receives_and_outlives_a_function_outage(built: Built) -> None:
    _, queue = built.one("AWS::SQS::Queue", "Interruption/Queue/")
    dlq_id, dlq = built.one("AWS::SQS::Queue", "Interruption/DeadLetters/")
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert dlq["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["Properties"]["MessageRetentionPeriod"] == 4 * 24 * 3600
    assert dlq["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert queue["Properties"]["RedrivePolicy"] == {"deadLetterTargetArn": arn(dlq_id), "maxReceiveCount": 5}
    _, function = built.one("AWS::Lambda::Function", "Interruption/Function/")
    assert queue["Properties"]["VisibilityTimeout"] >= 6 * function["Properties"]["Timeout"]


def test_both_queues_refuse_requests_without_tls(built: Built) -> None:
    for path in ("Interruption/Queue/", "Interruption/DeadLetters/"):
        queue_id, _ = built.one("AWS::SQS::Queue", path)
        policies = [
            p for p in built.resources("AWS::SQS::QueuePolicy").values() if ref(queue_id) in p["Properties"]["Queues"]
        ]
        statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
        assert any(
            s["Effect"] == "Deny"
            and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            and s["Action"] == "sqs:*"
            for s in statements
        ), path


def test_five_rules_on_the_default_bus_match_the_events_nodewright_acts_on(built: Built) -> None:
    queue_id, _ = built.one("AWS::SQS::Queue", "Interruption/Queue/")
    dlq_id, _ = built.one("AWS::SQS::Queue", "Interruption/DeadLetters/")
    rules = built.resources("AWS::Events::Rule")
    assert len(rules) == 5
    patterns = []
    for rule in rules.values():
        properties = rule["Properties"]
        assert "EventBusName" not in properties  # the default bus, where AWS services send their events
        assert properties["State"] == "ENABLED"
        (target,) = properties["Targets"]
        assert target["Arn"] == arn(queue_id)
        assert target["DeadLetterConfig"] == {"Arn": arn(dlq_id)}
        patterns.append(properties["EventPattern"])
    assert {(p["source"][0], p["detail-type"][0]) for p in patterns} == set(EVENT_TYPES)
    by_type = {p["detail-type"][0]: p for p in patterns}
    assert by_type["EC2 Instance State-change Notification"]["detail"] == {
        "state": ["stopping", "stopped", "shutting-down", "terminated"]
    }
    assert by_type["AWS Health Event"]["detail"] == {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]}
    for detail_type in (
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Capacity Reservation Instance Interruption Warning",
    ):
        assert "detail" not in by_type[detail_type]


def test_eventbridge_may_send_to_the_queue_only_from_these_rules(built: Built) -> None:
    queue_id, _ = built.one("AWS::SQS::Queue", "Interruption/Queue/")
    rule_ids = set(built.resources("AWS::Events::Rule"))
    statements = [
        s
        for p in built.resources("AWS::SQS::QueuePolicy").values()
        if ref(queue_id) in p["Properties"]["Queues"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Principal") == {"Service": "events.amazonaws.com"}
    ]
    sources = {s["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::GetAtt"][0] for s in statements}
    assert sources == rule_ids
    for statement in statements:  # the CDK's grantSendMessages: send, and the two reads a sender may need
        assert "sqs:SendMessage" in listed(statement["Action"])
        assert set(listed(statement["Action"])) <= {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}


def test_function_runs_the_interruption_folder_with_its_settings(built: Built) -> None:
    _, function = built.one("AWS::Lambda::Function", "Interruption/Function/")
    properties = function["Properties"]
    assert properties["Handler"] == "handler.handler"
    assert properties["Runtime"] == "python3.11"
    assert properties["Architectures"] == ["arm64"]
    assert len(properties["Layers"]) == 2
    assert {"Key": "nodewright:source", "Value": "functions/interruption"} in properties["Tags"]
    variables = properties["Environment"]["Variables"]
    table_id, _ = built.one("AWS::DynamoDB::Table", "State/Table/")
    machine_id, _ = built.one("AWS::StepFunctions::StateMachine", "Workflow/")
    assert variables[env.CLUSTER] == CLUSTER
    assert variables[env.TABLE] == ref(table_id)
    assert variables[env.STATE_MACHINE] == ref(machine_id)
    assert variables[env.REBALANCE] == "replace"
    assert properties["TracingConfig"] == {"Mode": "Active"}


def test_sqs_event_source_reports_partial_batch_failures(built: Built) -> None:
    queue_id, _ = built.one("AWS::SQS::Queue", "Interruption/Queue/")
    function_id, _ = built.one("AWS::Lambda::Function", "Interruption/Function/")
    built.assertions.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": arn(queue_id),
            "FunctionName": ref(function_id),
            "BatchSize": 10,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    )


def role_statements(built: Built) -> list[dict[str, Any]]:
    role_id, _ = built.one("AWS::IAM::Role", "Interruption/Role/")
    out = []
    for policy in built.resources("AWS::IAM::Policy").values():
        if ref(role_id) in policy["Properties"].get("Roles", []):
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                assert statement["Effect"] == "Allow"
                out.append(statement)
    return out


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_role_grants_exactly_what_the_handler_calls_and_star_only_where_aws_allows_nothing_else(
    built: Built,
) -> None:
    statements = role_statements(built)
    actions = {a for s in statements for a in listed(s["Action"])}
    assert actions == EXPECTED_ACTIONS
    machine_id, _ = built.one("AWS::StepFunctions::StateMachine", "Workflow/")
    table_id, _ = built.one("AWS::DynamoDB::Table", "State/Table/")
    for statement in statements:
        resources = listed(statement["Resource"])
        statement_actions = set(listed(statement["Action"]))
        if "*" in resources:
            assert statement_actions <= STAR_ONLY, statement
        if statement_actions & STATE_MACHINE_ACTIONS:
            assert statement_actions == STATE_MACHINE_ACTIONS and resources == [ref(machine_id)], statement
        if any(a.startswith("dynamodb:") for a in statement_actions):
            assert all(r == arn(table_id) or r == {"Ref": "AWS::NoValue"} for r in resources), statement
        if "eks:DescribeCluster" in statement_actions:
            assert f":cluster/{CLUSTER}" in json.dumps(resources) and len(resources) == 1, resources


def test_the_role_maps_to_its_own_kubernetes_group(built: Built) -> None:
    role_id, _ = built.one("AWS::IAM::Role", "Interruption/Role/")
    built.assertions.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {
            "ClusterName": CLUSTER,
            "PrincipalArn": arn(role_id),
            "Type": "STANDARD",
            "KubernetesGroups": ["nodewright:interruption"],
        },
    )


def test_dead_letters_raise_an_alarm(built: Built) -> None:
    dlq_id, _ = built.one("AWS::SQS::Queue", "Interruption/DeadLetters/")
    built.assertions.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Namespace": "AWS/SQS",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}],
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
        },
    )


def test_cdk_nag_finds_nothing_unacknowledged(built: Built) -> None:
    report = json.loads((built.outdir / "validation-report.json").read_text())
    (plugin,) = report["pluginReports"]
    assert plugin["conclusion"] == "success", plugin["violations"]
    construct_findings = [
        f
        for f in plugin["suppressedViolations"]
        if any("/Interruption/" in v["constructPath"] for v in f.get("violatingConstructs", []))
    ]
    assert construct_findings  # IAM5 for DescribeInstances and X-Ray, L1
    for finding in construct_findings:
        assert len(finding["reason"]) >= 40, finding
    # No stale acknowledgement: each one the construct declares covers a finding (a stale one would silently
    # cover a future finding). The dead-letter queue needs none: cdk-nag sees the redrive policy that uses it.
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    declared = {
        (construct.node.path, ack_id)
        for construct in built.construct.node.find_all()
        for entry in construct.node.metadata
        if entry.type == key
        for ack_id in entry.data
    }
    used = {(f["acknowledgedAt"], f["acknowledgedId"]) for f in plugin["suppressedViolations"]}
    assert declared and declared <= used, declared - used


def test_rebalance_mode_is_passed_through_and_checked(tmp_path: Path) -> None:
    drained = Built(tmp_path / "drain", rebalance="drain")
    _, function = drained.one("AWS::Lambda::Function", "Interruption/Function/")
    assert function["Properties"]["Environment"]["Variables"][env.REBALANCE] == "drain"
    with pytest.raises(ValueError, match="rebalance must be one of"):
        Built(tmp_path / "bad", rebalance="sometimes")
