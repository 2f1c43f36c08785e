"""The real CDK app, synthesized as `cdk synth` does, deploys into the local world through moto's
CloudFormation, and its provisioner runs the handler from the stack's own code asset.

The stack is synthesized for the world's cluster with the snapshot catalog (moto's spot prices are
placeholders). An empty batch then travels the whole path the stack wires up: the function's
environment (table, node role, instance profile from the stack), its execution role's EKS token against
the local API server, and Powertools idempotency on the stack's DynamoDB table.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from test_crds import install_crds
from worldkit import World

from nodewright import settings
from nodewright.localworld import deploy
from nodewright.localworld import world as lw

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def deployed(local_world: World, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Synthesize the app for the world's cluster and deploy it; returns the stack outputs."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
    from aws_cdk import App

    from infra.app import build_app

    outdir = tmp_path_factory.mktemp("cdk") / "cdk.out"
    app = App(
        outdir=str(outdir),
        context={"clusterName": local_world.state.cluster, "catalog": "snapshot", "stackName": "NodewrightE2E"},
    )
    stack = build_app(app)
    app.synth()
    # As a user would: the stack (its functions' access entries mapped in the token webhook), then the chart,
    # whose RBAC is all the provisioner's group is granted.
    outputs = lw.deploy_stack(local_world.state, outdir, stack.stack_name)
    deploy.install_crds(local_world.api_client)
    deploy.install_chart(local_world.state, outputs)
    return outputs


def invoke(world: World, function: str, payload: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    response = world.aws("lambda").invoke(FunctionName=function, Payload=json.dumps(payload).encode())
    return json.loads(response["Payload"].read()), response.get("FunctionError")


def test_the_stack_deploys_with_the_resources_the_function_is_told_about(
    local_world: World, deployed: dict[str, str]
) -> None:
    config = local_world.aws("lambda").get_function_configuration(FunctionName=deployed["ProvisionerFunctionName"])
    variables = config["Environment"]["Variables"]
    assert variables[settings.CLUSTER] == local_world.state.cluster
    assert variables[settings.TABLE] == deployed["TableName"]
    assert variables[settings.NODE_ROLE] == deployed["NodeRoleName"]
    assert variables[settings.INSTANCE_PROFILE] == deployed["InstanceProfileName"]
    assert variables["NODEWRIGHT_CATALOG"] == "snapshot"
    assert (config["Handler"], config["Runtime"], config["MemorySize"], config["Timeout"]) == (
        "handler.handler",
        "python3.11",
        1769,
        120,
    )
    table = local_world.aws("dynamodb").describe_table(TableName=deployed["TableName"])["Table"]
    assert [k["AttributeName"] for k in table["KeySchema"]] == [settings.TABLE_PARTITION_KEY, settings.TABLE_SORT_KEY]
    profile = local_world.aws("iam").get_instance_profile(InstanceProfileName=deployed["InstanceProfileName"])
    assert [r["Arn"] for r in profile["InstanceProfile"]["Roles"]] == [deployed["NodeRoleArn"]]


def test_the_stack_function_runs_the_provisioner_handler_from_its_asset(
    local_world: World, deployed: dict[str, str]
) -> None:
    install_crds(local_world)
    function = deployed["ProvisionerFunctionName"]
    # A batch for another cluster is refused by the handler itself, naming both clusters.
    refused, error = invoke(local_world, function, {"batch_id": "b-other", "cluster": "elsewhere", "pods": []})
    assert error is not None
    assert refused["errorType"] == "WrongClusterError", refused
    assert local_world.state.cluster in refused["errorMessage"]

    # An empty batch for this cluster goes through the service. Having launched nothing it leaves no delivery
    # record: a retry of it is evaluated afresh, as Karpenter's loop looks at pending pods again.
    batch = {"batch_id": f"b-empty-{deployed['TableName'][-6:]}", "cluster": local_world.state.cluster, "pods": []}
    result, error = invoke(local_world, function, batch)
    assert error is None, result
    assert (result["cluster"], result["batch_id"], result["nodeclaims"]) == (
        local_world.state.cluster,
        batch["batch_id"],
        [],
    )
    items = local_world.aws("dynamodb").scan(TableName=deployed["TableName"])["Items"]
    assert not [i for i in items if batch["batch_id"] in json.dumps(i)], items
