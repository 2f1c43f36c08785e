"""The path the real CDK app will take: a synthesized cloud assembly is deployed into moto through
CloudFormation, and its state machine runs the asset's handler through the Lambda seam.

The assembly here is written in the shape `cdk synth` produces (bootstrap-bucket assets, the
BootstrapVersion parameter, Fn::Join'ed ASL, CDK metadata), because the CDK app does not define the
real functions yet; once it does, the same `deploy_synthesized` call takes its cdk.out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from worldkit import FUNCTIONS_DIR, World, wait_for

from nodewright.localworld.stack import deploy_synthesized

ASSET = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}],
}
STATES_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}}],
}


def _template() -> dict[str, Any]:
    definition = [
        '{"StartAt":"Square","States":{"Square":{"End":true,"Type":"Task","OutputPath":"$.Payload","Resource":"arn:',
        {"Ref": "AWS::Partition"},
        ':states:::lambda:invoke","Parameters":{"FunctionName":"',
        {"Fn::GetAtt": ["SquareFunction1A2B3C4D", "Arn"]},
        '","Payload.$":"$"}}}}',
    ]
    return {
        "Parameters": {
            "BootstrapVersion": {
                "Type": "AWS::SSM::Parameter::Value<String>",
                "Default": "/cdk-bootstrap/hnb659fds/version",
                "Description": "Version of the CDK Bootstrap resources in this environment",
            }
        },
        "Resources": {
            "SquareFunctionServiceRole5E6F7A8B": {
                "Type": "AWS::IAM::Role",
                "Properties": {"AssumeRolePolicyDocument": LAMBDA_TRUST},
            },
            "SquareFunction1A2B3C4D": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Code": {
                        "S3Bucket": {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"},
                        "S3Key": f"{ASSET}.zip",
                    },
                    "Role": {"Fn::GetAtt": ["SquareFunctionServiceRole5E6F7A8B", "Arn"]},
                    "Handler": "handler.handler",
                    "Runtime": "python3.11",
                    "Timeout": 30,
                },
                "DependsOn": ["SquareFunctionServiceRole5E6F7A8B"],
            },
            "InterruptionQueue9C8D7E6F": {
                "Type": "AWS::SQS::Queue",
                "Properties": {"MessageRetentionPeriod": 300},
                "UpdateReplacePolicy": "Delete",
                "DeletionPolicy": "Delete",
            },
            "SpotInterruptionRuleA1B2C3D4": {
                "Type": "AWS::Events::Rule",
                "Properties": {
                    "EventPattern": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
                    "State": "ENABLED",
                    "Targets": [{"Arn": {"Fn::GetAtt": ["InterruptionQueue9C8D7E6F", "Arn"]}, "Id": "Target0"}],
                },
            },
            "WorkflowRole0A9B8C7D": {
                "Type": "AWS::IAM::Role",
                "Properties": {"AssumeRolePolicyDocument": STATES_TRUST},
            },
            "Workflow1F2E3D4C": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "DefinitionString": {"Fn::Join": ["", definition]},
                    "RoleArn": {"Fn::GetAtt": ["WorkflowRole0A9B8C7D", "Arn"]},
                },
                "DependsOn": ["WorkflowRole0A9B8C7D"],
            },
            "CDKMetadata": {
                "Type": "AWS::CDK::Metadata",
                "Properties": {
                    "Analytics": "v2:deflate64:H4sIAAAAAAAA/zPSMzfWM1BMLC/WTU7J1s3JTNKrDi5JTM7WcU7LA9LVtTo6AJ/1g/MeAAAA"
                },
            },
        },
        "Outputs": {
            "WorkflowArn": {"Value": {"Ref": "Workflow1F2E3D4C"}},
            "QueueUrl": {"Value": {"Ref": "InterruptionQueue9C8D7E6F"}},
        },
    }


def _cloud_assembly(root: Path) -> Path:
    cdk_out = root / "cdk.out"
    shutil.copytree(FUNCTIONS_DIR / "square", cdk_out / f"asset.{ASSET}")
    (cdk_out / "LocalStack.template.json").write_text(json.dumps(_template(), indent=1))
    assets = {
        "version": "36.0.0",
        "files": {
            ASSET: {
                "source": {"path": f"asset.{ASSET}", "packaging": "zip"},
                "destinations": {
                    "current_account-current_region": {
                        "bucketName": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}",
                        "objectKey": f"{ASSET}.zip",
                    }
                },
            }
        },
        "dockerImages": {},
    }
    (cdk_out / "LocalStack.assets.json").write_text(json.dumps(assets))
    manifest = {
        "version": "36.0.0",
        "artifacts": {
            "LocalStack.assets": {"type": "cdk:asset-manifest", "properties": {"file": "LocalStack.assets.json"}},
            "LocalStack": {
                "type": "aws:cloudformation:stack",
                "environment": "aws://unknown-account/unknown-region",
                "properties": {"templateFile": "LocalStack.template.json"},
                "dependencies": ["LocalStack.assets"],
            },
        },
    }
    (cdk_out / "manifest.json").write_text(json.dumps(manifest))
    return cdk_out


def test_a_synthesized_stack_deploys_and_its_workflow_runs_the_asset_handler(
    local_world: World, tmp_path: Path
) -> None:
    world = local_world
    clients = {name: world.aws(name) for name in ("s3", "ssm", "cloudformation")}
    outputs = deploy_synthesized(_cloud_assembly(tmp_path), "LocalStack", clients, region=world.state.region)

    sfn = world.aws("stepfunctions")
    execution = sfn.start_execution(stateMachineArn=outputs["WorkflowArn"], name="seven", input='{"value": 7}')
    done = wait_for(
        lambda: (
            d if (d := sfn.describe_execution(executionArn=execution["executionArn"]))["status"] != "RUNNING" else None
        ),
        60,
        "the synthesized workflow to finish",
    )
    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])
    assert output["square"] == 49
    # The function name is CloudFormation's, proving the handler ran as the stack's function.
    assert output["function"].startswith("LocalStack-SquareFunction")

    # The rule routes matching EventBridge events to the stack's queue.
    world.aws("events").put_events(
        Entries=[
            {
                "Source": "aws.ec2",
                "DetailType": "EC2 Spot Instance Interruption Warning",
                "Detail": json.dumps({"instance-id": "i-0abc", "instance-action": "terminate"}),
            }
        ]
    )
    sqs = world.aws("sqs")
    messages = wait_for(
        lambda: sqs.receive_message(QueueUrl=outputs["QueueUrl"], WaitTimeSeconds=1).get("Messages"),
        30,
        "the interruption event in the queue",
    )
    assert json.loads(messages[0]["Body"])["detail"]["instance-id"] == "i-0abc"
