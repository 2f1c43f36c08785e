"""The command line path: `cdk synth` (the CLI pinned in package.json) runs infra/app.py through cdk.json,
offline, and the template it writes passes cfn-lint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CLUSTER, REPO_ROOT, synth

CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"


@pytest.fixture(scope="module")
def cli_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert CDK.is_file(), f"{CDK} is missing: run `npm ci` (make setup does)"
    out = tmp_path_factory.mktemp("cli") / "cdk.out"
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true"}
    result = subprocess.run(
        [str(CDK), "synth", "--quiet", "-c", f"clusterName={CLUSTER}", "-o", str(out)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def test_cdk_synth_writes_the_stack_and_its_assets(cli_out: Path) -> None:
    manifest = json.loads((cli_out / "manifest.json").read_text())
    assert manifest["artifacts"]["Nodewright"]["type"] == "aws:cloudformation:stack"
    assets = json.loads((cli_out / "Nodewright.assets.json").read_text())["files"]
    # The code of the provisioner, the workflow steps, the planner and the interruption handler, and the two
    # layers, each staged as a directory the CLI zips on publish.
    staged = [cli_out / a["source"]["path"] for a in assets.values() if a["source"].get("packaging") == "zip"]
    assert len(staged) == 6 and all(p.is_dir() for p in staged)
    assert any((p / "handler.py").is_file() for p in staged)
    report = json.loads((cli_out / "validation-report.json").read_text())
    assert [p["conclusion"] for p in report["pluginReports"]] == ["success"]


def cfn_lint(template: Path) -> None:
    # W3005 (a DependsOn also implied by a GetAtt) is how the CDK always ties a function to its role.
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--ignore-checks", "W3005", "--", str(template)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_synthesized_template_passes_cfn_lint(cli_out: Path) -> None:
    cfn_lint(cli_out / "Nodewright.template.json")


def test_the_private_vpc_variant_with_every_setting_passes_cfn_lint(synth_root: Path) -> None:
    every = synth(
        synth_root,
        clusterName=CLUSTER,
        vpcId="vpc-0123456789abcdef0",
        privateSubnetIds="subnet-0123456789abcdef0,subnet-0fedcba9876543210",
        securityGroupId="sg-0123456789abcdef0",
        nodeRoles="KarpenterNodeRole-demo",
        rebalance="drain",
        spotToSpotConsolidation="true",
        alarmTopicArn="arn:aws:sns:us-east-1:123456789012:on-call",
        logRetentionDays="90",
        retainTable="false",
        oidcIssuer="https://oidc.eks.us-east-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF",
    )
    (plugin,) = every.report()["pluginReports"]
    assert plugin["violations"] == []
    template = every.outdir / "every.template.json"
    template.write_text(json.dumps(every.template))
    cfn_lint(template)


def test_the_app_refuses_to_synth_without_a_cluster_name() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDK_")}
    result = subprocess.run(
        [sys.executable, "-m", "infra.app"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "clusterName" in result.stderr and "-c clusterName=" in result.stderr
