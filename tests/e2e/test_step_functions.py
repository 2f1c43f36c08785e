"""Proof 3: Step Functions runs a real state machine whose Lambda tasks are our handlers, in-process.

Retry, Catch, Choice, Wait and Map are moto's ASL interpreter; the tasks run the handlers under
tests/e2e/functions through the Lambda seam (one from its uploaded zip, one through the
`nodewright:source` tag). The world runs with short waits (at most a second), so a 10-minute Wait and 30-second
retry intervals cost nothing, and the test proves that too.
"""

from __future__ import annotations

import json
import time
from typing import Any

from worldkit import World, wait_for


def _definition(prepare: str, square: str, reject: str) -> dict[str, Any]:
    return {
        "StartAt": "Prepare",
        "States": {
            "Prepare": {
                "Type": "Task",
                "Resource": prepare,
                "Retry": [
                    {"ErrorEquals": ["TransientError"], "IntervalSeconds": 30, "MaxAttempts": 3, "BackoffRate": 2}
                ],
                "ResultPath": "$.prepared",
                "Next": "Decide",
            },
            "Decide": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.prepared.count", "NumericGreaterThan": 2, "Next": "Fanout"}],
                "Default": "TooSmall",
            },
            "TooSmall": {"Type": "Fail", "Error": "TooSmall", "Cause": "fewer than three items"},
            "Fanout": {
                "Type": "Map",
                "ItemsPath": "$.prepared.items",
                "ItemSelector": {"value.$": "$$.Map.Item.Value"},
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Square",
                    "States": {
                        # The CDK's LambdaInvoke shape: the optimized integration with Payload.
                        "Square": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::lambda:invoke",
                            "Parameters": {"FunctionName": square, "Payload.$": "$"},
                            "OutputPath": "$.Payload",
                            "End": True,
                        }
                    },
                },
                "ResultPath": "$.squares",
                "Next": "Pause",
            },
            "Pause": {"Type": "Wait", "Seconds": 600, "Next": "Risky"},
            "Risky": {
                "Type": "Task",
                "Resource": reject,
                "Catch": [{"ErrorEquals": ["PermanentError"], "ResultPath": "$.caught", "Next": "Recovered"}],
                "Next": "Done",
            },
            "Recovered": {"Type": "Pass", "Next": "Done"},
            "Done": {"Type": "Succeed"},
        },
    }


def _finish(world: World, execution: str) -> dict[str, Any]:
    sfn = world.aws("stepfunctions")
    result: dict[str, Any] = wait_for(
        lambda: d if (d := sfn.describe_execution(executionArn=execution))["status"] != "RUNNING" else None,
        60,
        "the execution to finish",
    )
    return result


def _history(world: World, execution: str) -> list[dict[str, Any]]:
    sfn = world.aws("stepfunctions")
    events: list[dict[str, Any]] = []
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=execution):
        events.extend(page["events"])
    return events


def _entered(events: list[dict[str, Any]]) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]


def test_state_machine_runs_our_handlers_with_retry_choice_map_wait_and_catch(local_world: World) -> None:
    world = local_world
    prepare = world.create_function("prepare", "prepare")
    square = world.create_function("square", "square", tag_source=True)
    reject = world.create_function("reject", "reject")
    sfn = world.aws("stepfunctions")
    role = world.aws("iam").create_role(RoleName="sfn-proof", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    machine = sfn.create_state_machine(
        name="proof", definition=json.dumps(_definition(prepare, square, reject)), roleArn=role
    )["stateMachineArn"]

    started = time.monotonic()
    execution = sfn.start_execution(stateMachineArn=machine, name="big", input=json.dumps({"key": "big", "size": 3}))[
        "executionArn"
    ]
    description = _finish(world, execution)
    elapsed = time.monotonic() - started
    assert description["status"] == "SUCCEEDED", description
    # 600 s of Wait and a 30 s retry interval took no time: the short-waits switch works.
    assert elapsed < 30

    output = json.loads(description["output"])
    assert output["prepared"]["attempts"] == 2  # failed once, retried once
    assert output["prepared"]["caller"].endswith(":assumed-role/fn-prepare/prepare")
    assert [s["square"] for s in output["squares"]] == [1, 4, 9]
    assert {s["function"] for s in output["squares"]} == {"square"}
    assert output["caught"]["Error"] == "PermanentError"
    assert "cannot handle" in output["caught"]["Cause"]

    events = _history(world, execution)
    types = [e["type"] for e in events]
    assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded"
    # Retry: the first Prepare invocation failed, the retry succeeded, in that order.
    failed = types.index("LambdaFunctionFailed")
    assert "LambdaFunctionSucceeded" in types[failed:]
    entered = _entered(events)
    assert entered[:2] == ["Prepare", "Decide"]
    assert "TooSmall" not in entered
    assert entered.count("Square") == 3  # one per Map item
    assert entered.index("Fanout") < entered.index("Pause") < entered.index("Risky") < entered.index("Recovered")
    assert "MapIterationSucceeded" in types
    assert "WaitStateEntered" in types and "WaitStateExited" in types

    # The Choice's other branch: too few items ends in the Fail state, without Map, Wait or Catch.
    small = sfn.start_execution(stateMachineArn=machine, name="small", input=json.dumps({"key": "small", "size": 2}))[
        "executionArn"
    ]
    small_description = _finish(world, small)
    assert small_description["status"] == "FAILED"
    small_entered = _entered(_history(world, small))
    assert small_entered[-1] == "TooSmall"
    assert "Fanout" not in small_entered
    assert small_description.get("error") == "TooSmall"
