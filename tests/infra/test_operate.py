"""What an operator sets and sees: context settings reach the functions, alarms reach a topic, traces and
metrics are on everywhere, logs and the table live as long as the settings say."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from conftest import CLUSTER, Synth, synth
from test_template import logical_id, role_statements

from infra.config import ContextError, Settings
from nodewright import settings as env

FUNCTIONS = 10


def variables(s: Synth, function: str) -> dict[str, Any]:
    environment: dict[str, Any] = s.template["Resources"][function]["Properties"]["Environment"]["Variables"]
    return environment


def function_named(s: Synth, part: str) -> str:
    return logical_id(s, "AWS::Lambda::Function", part)


@pytest.fixture(scope="module")
def tuned(synth_root: Path) -> Synth:
    return synth(
        synth_root,
        clusterName=CLUSTER,
        rebalance="drain",
        spotToSpotConsolidation="true",
        nodeRepair="false",
        incrementalReads="false",
        alarmTopicArn="arn:aws:sns:us-east-1:123456789012:on-call",
        logRetentionDays="90",
        retainTable="false",
        oidcIssuer="https://oidc.eks.us-east-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF",
    )


def test_every_function_traces_and_publishes_metrics_in_one_namespace(default_synth: Synth) -> None:
    functions = default_synth.resources("AWS::Lambda::Function")
    assert len(functions) == FUNCTIONS
    for logical, function in functions.items():
        assert function["Properties"]["TracingConfig"] == {"Mode": "Active"}, logical
        assert variables(default_synth, logical)["POWERTOOLS_METRICS_NAMESPACE"] == env.METRICS_NAMESPACE, logical


def test_the_handlers_take_the_namespace_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # An explicit namespace= in Metrics() would win over POWERTOOLS_METRICS_NAMESPACE; the planner's per-method
    # metrics (single_metric) take the namespace of its Metrics.
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "from-the-environment")
    root = Path(__file__).resolve().parents[2] / "functions"
    handlers = sorted(root.glob("*/handler.py"))
    assert len(handlers) == 4
    for handler in handlers:
        spec = importlib.util.spec_from_file_location(f"namespace_check_{handler.parent.name}", handler)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.metrics.namespace == "from-the-environment", handler
        assert "tracing.subsegment(" in handler.read_text(), f"{handler} records no X-Ray subsegment"


def test_defaults_rebalance_replace_spot_to_spot_off_logs_a_month_table_kept(default_synth: Synth) -> None:
    interruption = function_named(default_synth, "Interruption")
    assert variables(default_synth, interruption)[env.REBALANCE] == "replace"
    for part in ("Planner", "IdentifyCandidate", "LaunchReplacement"):
        assert variables(default_synth, function_named(default_synth, part))[env.SPOT_TO_SPOT] == "false", part
    assert variables(default_synth, function_named(default_synth, "Planner"))[env.NODE_REPAIR] == "true"
    for part in ("Planner", "Provisioner"):
        assert variables(default_synth, function_named(default_synth, part))[env.INCREMENTAL_READS] == "true", part
    retention = {g["Properties"]["RetentionInDays"] for g in default_synth.resources("AWS::Logs::LogGroup").values()}
    assert retention == {30}
    (table,) = default_synth.resources("AWS::DynamoDB::Table").values()
    assert table["DeletionPolicy"] == "Retain"


def test_settings_from_context_reach_what_reads_them(tuned: Synth) -> None:
    assert variables(tuned, function_named(tuned, "Interruption"))[env.REBALANCE] == "drain"
    assert variables(tuned, function_named(tuned, "Planner"))[env.NODE_REPAIR] == "false"
    for part in ("Planner", "Provisioner"):
        assert variables(tuned, function_named(tuned, part))[env.INCREMENTAL_READS] == "false", part
    for part in ("Planner", "IdentifyCandidate", "LaunchReplacement"):
        assert variables(tuned, function_named(tuned, part))[env.SPOT_TO_SPOT] == "true", part
    retention = {g["Properties"]["RetentionInDays"] for g in tuned.resources("AWS::Logs::LogGroup").values()}
    assert retention == {90}
    (table,) = tuned.resources("AWS::DynamoDB::Table").values()
    assert table["DeletionPolicy"] == "Delete"


def test_alarms_notify_the_stacks_encrypted_topic_when_they_fire_and_when_they_recover(default_synth: Synth) -> None:
    (topic_id,) = default_synth.resources("AWS::SNS::Topic")
    topic = default_synth.template["Resources"][topic_id]["Properties"]
    (key_id,) = default_synth.resources("AWS::KMS::Key")
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    key = default_synth.template["Resources"][key_id]["Properties"]
    assert key["EnableKeyRotation"] is True
    # CloudWatch must be able to use the key, or alarms to an encrypted topic are silently dropped.
    assert any(
        st.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
        and {"kms:Decrypt", "kms:GenerateDataKey*"} <= set(st["Action"])
        for st in key["KeyPolicy"]["Statement"]
    )
    alarms = default_synth.resources("AWS::CloudWatch::Alarm")
    for logical, alarm in alarms.items():
        props = alarm["Properties"]
        assert props["AlarmActions"] == [{"Ref": topic_id}], logical
        assert props["OKActions"] == [{"Ref": topic_id}], logical


def test_a_topic_from_context_replaces_the_stacks_own(tuned: Synth) -> None:
    assert not tuned.resources("AWS::SNS::Topic") and not tuned.resources("AWS::KMS::Key")
    for alarm in tuned.resources("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == ["arn:aws:sns:us-east-1:123456789012:on-call"]
    assert tuned.template["Outputs"]["AlarmTopicArn"]["Value"] == "arn:aws:sns:us-east-1:123456789012:on-call"


def test_every_function_has_its_own_error_alarm(default_synth: Synth) -> None:
    watched = {}
    for alarm in default_synth.resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        if props.get("MetricName") == "Errors" and props.get("Namespace") == "AWS/Lambda":
            [dimension] = props["Dimensions"]
            watched[dimension["Value"]["Ref"]] = props
    assert set(watched) == set(default_synth.resources("AWS::Lambda::Function"))
    for props in watched.values():
        assert props["Threshold"] == 1 and props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert props["Period"] == 300 and props["TreatMissingData"] == "notBreaching"


def test_pending_pods_and_a_silent_forwarder_page(default_synth: Synth) -> None:
    alarms = [a["Properties"] for a in default_synth.resources("AWS::CloudWatch::Alarm").values()]
    dimensions = [{"Name": "cluster", "Value": CLUSTER}, {"Name": "service", "Value": "forwarder"}]
    [pending] = [a for a in alarms if a.get("MetricName") == env.OLDEST_PENDING_POD_METRIC]
    assert pending["Namespace"] == env.METRICS_NAMESPACE
    assert sorted(pending["Dimensions"], key=lambda d: d["Name"]) == dimensions
    assert (pending["Statistic"], pending["Threshold"], pending["ComparisonOperator"]) == (
        "Maximum",
        600,
        "GreaterThanThreshold",
    )
    [heartbeat] = [a for a in alarms if a.get("MetricName") == env.FORWARDER_HEARTBEAT_METRIC]
    assert sorted(heartbeat["Dimensions"], key=lambda d: d["Name"]) == dimensions
    # No data at all is the failure this alarm exists for.
    assert heartbeat["TreatMissingData"] == "breaching"
    assert heartbeat["ComparisonOperator"] == "LessThanThreshold" and heartbeat["Threshold"] == 1


def test_the_forwarder_role_trusts_the_clusters_oidc_provider_for_its_service_account_only(tuned: Synth) -> None:
    role = logical_id(tuned, "AWS::IAM::Role", "ForwarderRole")
    statements = tuned.template["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    issuer = "oidc.eks.us-east-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"
    [irsa] = [st for st in statements if "Federated" in st.get("Principal", {})]
    assert irsa["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert irsa["Condition"] == {
        "StringEquals": {
            f"{issuer}:sub": "system:serviceaccount:nodewright:nodewright-forwarder",
            f"{issuer}:aud": "sts.amazonaws.com",
        }
    }
    # Pod Identity still works beside it.
    assert any(st.get("Principal") == {"Service": "pods.eks.amazonaws.com"} for st in statements)
    assert len(role_statements(tuned, role)) == 2


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"rebalance": "sometimes"}, "rebalance"),
        ({"spotToSpotConsolidation": "yes"}, "spotToSpotConsolidation"),
        ({"alarmTopicArn": "on-call"}, "alarmTopicArn"),
        ({"logRetentionDays": "31"}, "logRetentionDays"),
        ({"retainTable": "maybe"}, "retainTable"),
        ({"nodeRoles": "nodes,not a role"}, "nodeRoles"),
        ({"oidcIssuer": "https://example.com"}, "oidcIssuer"),
    ],
)
def test_malformed_settings_are_refused_naming_the_key_and_how_to_pass_it(context: dict[str, str], named: str) -> None:
    with pytest.raises(ContextError) as caught:
        Settings.from_context({"clusterName": CLUSTER, **context}.get)
    assert named in str(caught.value) and f"-c {named}=" in str(caught.value)


def test_refused_interruption_events_and_nodes_given_back_by_reconciliation_raise_alarms(default_synth: Synth) -> None:
    alarms = {
        a["Properties"].get("MetricName"): a["Properties"]
        for a in default_synth.resources("AWS::CloudWatch::Alarm").values()
    }
    refused, restored = alarms["EventsRefused"], alarms["NodesRestored"]
    assert refused["Dimensions"] == [{"Name": "service", "Value": "interruption"}]
    assert restored["Dimensions"] == [{"Name": "service", "Value": "planner"}]
    for alarm in (refused, restored):
        assert alarm["Namespace"] == env.METRICS_NAMESPACE and alarm["Threshold"] == 1
        assert alarm["AlarmActions"] and alarm["OKActions"]
