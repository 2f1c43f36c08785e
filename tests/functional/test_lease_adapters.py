"""The lease adapters against moto: DynamoDB's conditional writes decide every race and keep the interruption flag;
Step Functions answers an execution's status, and "" for one it does not know."""

from __future__ import annotations

import json
from typing import Any

import boto3

from nodewright.adapters import aws_sdk
from nodewright.adapters.dynamodb_state import DynamoDBState
from nodewright.adapters.stepfunctions_workflows import StepFunctionsWorkflows, execution_arn
from nodewright.disruption.lease import lock_name

NOW = 1_800_000_000.0
REGION = "us-east-1"


def test_dynamodb_leases_take_over_only_from_the_named_holder_and_keep_the_interruption_flag(
    account: dict[str, Any],
) -> None:
    state = DynamoDBState("nodewright", aws_sdk.session(REGION).client("dynamodb"))
    name = lock_name("claim-a")

    assert state.acquire_lock(name, "drift-1", NOW, 3600) == "drift-1"
    assert state.acquire_lock(name, "other", NOW + 1, 3600) == "drift-1"
    held = state.lease(name, NOW + 1)
    assert held is not None and (held.owner, held.interruption, held.acquired_at) == ("drift-1", False, NOW)

    assert not state.take_over_lock(name, "spot-1", "someone-else", NOW + 2, 3600, interruption=True)
    assert state.take_over_lock(name, "spot-1", "drift-1", NOW + 2, 3600, interruption=True)
    assert not state.take_over_lock(name, "spot-2", "drift-1", NOW + 2, 3600, interruption=True)

    leases = state.leases(NOW + 3)
    assert {n: (lease.owner, lease.interruption) for n, lease in leases.items()} == {name: ("spot-1", True)}
    # The old holder's release touches nothing; the holder's own does.
    state.release_lock(name, "drift-1")
    assert state.lease(name, NOW + 3) is not None
    state.release_lock(name, "spot-1")
    assert state.lease(name, NOW + 3) is None and state.leases(NOW + 3) == {}


def test_dynamodb_an_expired_lease_is_free_and_reads_as_none(account: dict[str, Any]) -> None:
    state = DynamoDBState("nodewright", aws_sdk.session(REGION).client("dynamodb"))
    name = lock_name("claim-b")
    state.acquire_lock(name, "old", NOW, 60)
    assert state.lease(name, NOW + 61) is None
    assert state.acquire_lock(name, "new", NOW + 61, 60) == "new"


def test_step_functions_status_of_an_execution_and_of_none(account: dict[str, Any]) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
    machine = sfn.create_state_machine(name="disruption", definition=json.dumps(definition), roleArn=role)
    arn = machine["stateMachineArn"]
    workflows = StepFunctionsWorkflows(arn, aws_sdk.session(REGION).client("stepfunctions"))

    assert workflows.start("exec-1", {"nodeclaim": "a"})
    assert workflows.status("exec-1") in ("RUNNING", "SUCCEEDED")
    assert workflows.status("never-started") == ""
    assert execution_arn(arn, "exec-1") == arn.replace(":stateMachine:", ":execution:") + ":exec-1"
