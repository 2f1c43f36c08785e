"""cdk-nag's AwsSolutions pack runs on every synth of the app, with every finding acknowledged for a reason.

The report is the one the CDK writes for validation plugins (`validation-report.json` in the output
directory). A finding nobody acknowledged stops the synth, which the last test proves by adding one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import App, Validations
from aws_cdk import aws_iam as iam
from conftest import CLUSTER, Synth


def test_the_report_has_no_unacknowledged_finding(default_synth: Synth) -> None:
    report = default_synth.report()
    (plugin,) = report["pluginReports"]
    assert plugin["pluginName"] == "AwsSolutions"
    assert plugin["conclusion"] == "success"
    assert plugin["violations"] == []


def test_every_acknowledgement_has_a_reason_and_covers_only_expected_rules(default_synth: Synth) -> None:
    (plugin,) = default_synth.report()["pluginReports"]
    suppressed = plugin["suppressedViolations"]
    assert suppressed, "the stack has findings that need acknowledging (IAM4/IAM5/L1); none were reported"
    for finding in suppressed:
        assert len(finding["reason"]) >= 40, finding
    rules = {f["ruleName"].split("[", 1)[0] for f in suppressed}
    # SQS3: the planner schedule's dead-letter queue has no dead-letter queue of its own.
    assert rules == {"AwsSolutions-IAM4", "AwsSolutions-IAM5", "AwsSolutions-L1", "AwsSolutions-SQS3"}
    # Wildcard findings are acknowledged one by one, never by a bare rule id that would hide new ones.
    for finding in suppressed:
        if finding["ruleName"].startswith(("AwsSolutions-IAM4", "AwsSolutions-IAM5")):
            assert finding["acknowledgedId"].endswith("]"), finding


def test_a_new_unacknowledged_wildcard_stops_the_synth(tmp_path: Path) -> None:
    from infra.app import build_app

    app = App(outdir=str(tmp_path / "out"), context={"clusterName": CLUSTER})
    stack = build_app(app)
    # A plausible mistake: letting the provisioner invoke any function in the account.
    stack.provisioner.role.add_to_principal_policy(
        iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=["arn:aws:lambda:*:*:function:*"])
    )
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    assert "AwsSolutions-IAM5" in (tmp_path / "out" / "validation-report.json").read_text()


def test_every_acknowledgement_in_the_code_matches_a_finding(default_synth: Synth) -> None:
    # A stale acknowledgement (the finding it covered is gone) would silently cover a future one.
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    declared = {
        (construct.node.path, ack_id)
        for construct in default_synth.app.node.find_all()
        for entry in construct.node.metadata
        if entry.type == key
        for ack_id in entry.data
    }
    (plugin,) = default_synth.report()["pluginReports"]
    used = {(f["acknowledgedAt"], f["acknowledgedId"]) for f in plugin["suppressedViolations"]}
    assert declared == used
