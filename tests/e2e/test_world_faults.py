"""The local world's own fault and schedule machinery, on the real world: the stack's EventBridge Scheduler schedule
(paused, resumed faster, ticked on request), a Lambda killed at a named step (before CreateFleet), and DynamoDB
refusing one function's writes. Later fault-injection suites (issue 21) build on these; here each is shown once.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from test_disruption import Stack, pool_factory, spot  # noqa: F401  (pool_factory is a fixture used here)
from test_provisioning import Pool, all_pending, deployment
from worldkit import World, wait_for

from nodewright.adapters.dynamodb_state import LOCK_PARTITION
from nodewright.service.provision.serial import PLANNER_LOCK


def _planner_schedule(world: World, stack: Stack) -> dict[str, Any]:
    [schedule] = [s for s in world.schedules()["schedules"] if s["target"].endswith(":" + _planner(stack))]
    return schedule


def _planner(stack: Stack) -> str:
    return stack.outputs["PlannerFunctionName"]


def _invoke(world: World, function: str, payload: bytes) -> tuple[bool, dict[str, Any]]:
    response = world.aws("lambda").invoke(FunctionName=function, InvocationType="RequestResponse", Payload=payload)
    return "FunctionError" in response, json.loads(response["Payload"].read())


@pytest.mark.tick_seconds(2)
def test_the_planner_schedule_ticks_when_resumed_not_when_paused_and_on_request(
    local_world: World, stack: Stack, planner_schedule: float
) -> None:
    world = local_world
    schedule = _planner_schedule(world, stack)
    # The schedule is the stack's, as CloudFormation created it: every minute, at the planner.
    assert schedule["expression"] == "rate(1 minute)" and schedule["state"] == "ENABLED"

    def fired_on_time() -> list[dict[str, Any]]:
        return [h for h in world.schedules()["history"] if h["source"] == "schedule"]

    # Resumed every 2 s by the fixture: the planner ticks on its own, and each tick is a whole planner run.
    before = len(fired_on_time())
    ticks = wait_for(lambda: len(fired_on_time()) >= before + 2 and fired_on_time(), 60, "two scheduled ticks")
    assert all(t["ok"] and "started" in t["result"] for t in ticks[before:]), ticks[before:]

    paused = world.pause_schedules()
    assert paused["paused"] is True
    count = len(fired_on_time())
    time.sleep(3 * planner_schedule)
    assert len(fired_on_time()) == count, "a paused schedule ticked"

    # A tick on request runs the planner now, paused or not, and returns what it answered.
    [tick] = world.tick_schedules(name=schedule["name"])
    assert tick["ok"] and tick["source"] == "tick" and tick["target"].endswith(_planner(stack))
    assert set(tick["result"]) >= {"started", "skipped"}, tick["result"]
    assert len(fired_on_time()) == count


def test_a_provisioner_killed_before_create_fleet_launches_nothing_and_the_next_invocation_runs(
    local_world: World,
    namespace: str,
    stack: Stack,
    pool_factory: Any,  # noqa: F811
) -> None:
    world = local_world
    pool = pool_factory(spot("m5.large"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
    wait_for(lambda: all_pending(world, namespace, 1), 60, "1 pod marked Unschedulable")
    function = stack.provisioner.function
    rules = world.set_faults({"kill": [{"function": function, "before": "ec2:CreateFleet"}]})
    assert rules["kill"] == [
        {"function": function, "before": "ec2:CreateFleet", "error": "", "remaining": 1, "fired": 0}
    ]

    [body] = stack.provisioner.pending_payloads(namespace)
    errored, payload = _invoke(world, function, body)
    # Killed as a crashed container is: Lambda's Runtime.ExitError, the rest of the handler never ran.
    assert errored and payload["errorType"] == "Runtime.ExitError", payload
    assert "ec2:CreateFleet" in payload["errorMessage"]
    assert world.faults()["kill"][0]["fired"] == 1
    assert pool.instances() == []

    # The rule is spent (count 1): the next invocation runs to the end. A planner lock the dead invocation may
    # have left would hold it for the lock's TTL, which is the provisioner's business (issue 21), not the seam's.
    table, lock = stack.outputs["TableName"], {"pk": {"S": LOCK_PARTITION}, "sk": {"S": PLANNER_LOCK}}
    world.aws("dynamodb").delete_item(TableName=table, Key=lock)
    [body] = stack.provisioner.pending_payloads(namespace)
    errored, answer = _invoke(world, function, body)
    assert not errored, answer
    assert "decisions" in answer and world.faults()["kill"][0]["remaining"] == 0


def test_a_refuse_rule_fails_dynamodb_put_item_for_the_named_function_only(
    local_world: World, namespace: str, stack: Stack
) -> None:
    world = local_world
    function = stack.provisioner.function
    world.set_faults(
        {
            "refuse": [
                {
                    "action": "dynamodb:PutItem",
                    "code": "AccessDeniedException",
                    "status": 400,
                    "count": -1,
                    "function": function,
                }
            ]
        }
    )
    # A batch for a pending pod: the provisioner's first write is its planner lock, refused, so the batch fails.
    pool = Pool(world, stack.provisioner.node_role, namespace, spot("m5.large"), None)
    try:
        deployment(world, namespace, pool, "web", 1, "250m", "256Mi")
        wait_for(lambda: all_pending(world, namespace, 1), 60, "1 pod marked Unschedulable")
        [body] = stack.provisioner.pending_payloads(namespace)
        errored, payload = _invoke(world, function, body)
        assert errored and "AccessDeniedException" in payload["errorMessage"], payload
        assert pool.instances() == []
    finally:
        pool.teardown()
    [rule] = world.faults()["refuse"]
    assert rule["fired"] >= 1 and rule["remaining"] == -1
    fired = rule["fired"]

    # Anyone else's PutItem on the same table goes through: the test's own, and the planner's in its tick.
    table = stack.outputs["TableName"]
    world.aws("dynamodb").put_item(TableName=table, Item={"pk": {"S": "e2e"}, "sk": {"S": namespace}})
    [tick] = world.tick_schedules(name=_planner_schedule(world, stack)["name"])
    assert tick["ok"], tick
    assert world.faults()["refuse"][0]["fired"] == fired
