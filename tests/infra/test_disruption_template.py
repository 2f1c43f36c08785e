"""The disruption workflow and the planner in the synthesized template: states, wiring, least privilege."""

from __future__ import annotations

import json
from typing import Any

from conftest import CLUSTER, Synth
from test_template import granting, listed, logical_id, render, role_statements

from infra.workflow import STEPS


def definition(s: Synth) -> dict[str, Any]:
    (machine,) = s.resources("AWS::StepFunctions::StateMachine").values()
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    return dict(json.loads("".join(p if isinstance(p, str) else "ARN" for p in parts)))


def step_role(s: Synth, step: str) -> str:
    return logical_id(s, "AWS::IAM::Role", f"DisruptionSteps{step}Role")


def test_the_states_read_as_the_workflow_and_every_task_rolls_back(default_synth: Synth) -> None:
    machine = definition(default_synth)
    states = machine["States"]
    for name in ("IdentifyCandidate", "LaunchReplacement", "WaitForReplacement", "DrainAndTerminate"):
        assert name in states
    assert {"TerminateInstanceNow", "Rollback", "ReplaceAndDrain", "Invalidated", "ValidationDelay"} <= set(states)
    assert states["WaitForReplacement"]["Type"] == states["ValidationDelay"]["Type"] == "Wait"
    assert states["ValidationDelay"]["Seconds"] == 15 and states["ValidationDelay"]["Next"] == "IdentifyCandidate"
    # Emptiness and consolidation wait 15 seconds and are validated again; other commands go straight in.
    assert machine["StartAt"] == "Validate?" and states["Validate?"]["Default"] == "IdentifyCandidate"
    assert states["ReplaceAndDrain"]["Type"] == "Parallel"
    branch_starts = [b["StartAt"] for b in states["ReplaceAndDrain"]["Branches"]]
    assert branch_starts == ["LaunchReplacementNow", "CordonAndDrainNow"]
    # Planned disruptions drain and terminate every node of the command in a Map, one iteration per node.
    each = states["DrainAndTerminate"]
    assert each["Type"] == "Map" and each["ItemsPath"] == "$.identify.targets"
    inner = each["ItemProcessor"]["States"]
    assert each["ItemProcessor"]["StartAt"] == "CordonAndDrain"
    assert inner["WaitForDrain"]["Type"] == "Wait" and inner["TerminateInstance"]["Next"] == "NodeDisrupted"
    # A lost lease stands the execution down (the node is another execution's); anything else rolls back.
    catch = [
        {"ErrorEquals": ["LeaseLost"], "ResultPath": "$.error", "Next": "Superseded"},
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Rollback"},
    ]
    for name, state in states.items():
        if state["Type"] in ("Task", "Parallel", "Map") and name not in ("Rollback", "LaunchReplacementNow"):
            assert state["Catch"] == catch, name
        if state["Type"] == "Task":
            assert state["Parameters"] == {"input.$": "$", "execution.$": "$$.Execution.Name"}, name
            # A failure retrying cannot fix goes straight to the catch; a busy planner is waited for.
            retries = {tuple(r["ErrorEquals"]): r for r in state["Retry"]}
            assert retries[("DisruptionFailed", "CommandError", "LeaseLost")]["MaxAttempts"] == 0
            assert retries[("PlannerBusy",)]["MaxAttempts"] == 8
    assert states["Rollback"]["Next"] == "RolledBack" and states["RolledBack"]["Type"] == "Fail"
    assert states["Superseded"]["Type"] == "Succeed"
    assert states["Urgent?"]["Choices"][0]["Next"] == "ReplaceAndDrain"
    outcomes = {c["StringEquals"]: c["Next"] for c in states["Proceed?"]["Choices"]}
    assert outcomes == {"proceed": "Urgent?", "invalidated": "Invalidated"}


def test_the_state_machine_logs_traces_and_times_out(default_synth: Synth) -> None:
    (machine,) = default_synth.resources("AWS::StepFunctions::StateMachine").values()
    props = machine["Properties"]
    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert definition(default_synth)["TimeoutSeconds"] == 30 * 24 * 3600
    assert props["StateMachineName"] == f"nodewright-{CLUSTER}-disruption"


def test_the_urgent_drain_does_not_wait_for_a_replacement_that_fails(default_synth: Synth) -> None:
    branch, drain = definition(default_synth)["States"]["ReplaceAndDrain"]["Branches"]
    launch = branch["States"]["LaunchReplacementNow"]
    check = branch["States"]["CheckReplacementNow"]
    for task in (launch, check):
        assert task["Catch"] == [
            {"ErrorEquals": ["States.ALL"], "ResultPath": "$.replacement_error", "Next": "ReplacementFailedNow"}
        ]
    assert branch["States"]["ReplacementFailedNow"]["End"] is True
    assert drain["StartAt"] == "CordonAndDrainNow" and "Catch" not in drain["States"]["CordonAndDrainNow"]


def test_drains_back_off_and_a_rebalance_holds_its_node_through_the_protection_window(default_synth: Synth) -> None:
    states = definition(default_synth)["States"]
    inner = states["DrainAndTerminate"]["ItemProcessor"]["States"]
    assert inner["WaitForDrain"]["SecondsPath"] == "$.drain.wait_seconds"
    now_branch = states["ReplaceAndDrain"]["Branches"][1]["States"]
    assert now_branch["WaitForDrainNow"]["SecondsPath"] == "$.drain.wait_seconds"
    prepare = {c["Next"] for c in states["PrepareOnly?"]["Choices"]}
    assert prepare == {"ProtectReplacement"}
    assert states["ProtectReplacement"] == {
        "Type": "Wait",
        "SecondsPath": "$.identify.protect_seconds",
        "Next": "ReleaseLock",
    }


def test_who_may_ask_step_functions_whether_a_lease_holder_runs(default_synth: Synth) -> None:
    executions = f":states:${{AWS::Region}}:${{AWS::AccountId}}:execution:nodewright-{CLUSTER}-disruption:*"
    for step in STEPS:
        statements = role_statements(default_synth, step_role(default_synth, step.name))
        found = granting(statements, "states:DescribeExecution")
        assert bool(found) == (step.name == "IdentifyCandidate"), step.name
        for st in found:
            assert render(st["Resource"]).endswith(executions)
    planner = role_statements(default_synth, logical_id(default_synth, "AWS::IAM::Role", "PlannerRole"))
    (describe,) = granting(planner, "states:DescribeExecution")
    assert render(describe["Resource"]).endswith(executions)
    functions = default_synth.resources("AWS::Lambda::Function")
    for step in STEPS:
        fid = logical_id(default_synth, "AWS::Lambda::Function", f"DisruptionSteps{step.name}Function")
        variables = functions[fid]["Properties"]["Environment"]["Variables"]
        assert render(variables["NODEWRIGHT_STATE_MACHINE"]).endswith(f":stateMachine:nodewright-{CLUSTER}-disruption")


def test_only_the_launch_step_may_launch_and_only_terminating_steps_terminate_tagged_instances(
    default_synth: Synth,
) -> None:
    for step in STEPS:
        statements = role_statements(default_synth, step_role(default_synth, step.name))
        assert bool(granting(statements, "ec2:CreateFleet")) == step.launches, step.name
        terminate = granting(statements, "ec2:TerminateInstances")
        assert bool(terminate) == (step.terminates or step.launches), step.name
        for st in terminate:
            assert st["Condition"] == {
                "StringEquals": {"aws:ResourceTag/nodewright.io/cluster": CLUSTER},
                "StringLike": {"aws:ResourceTag/nodewright.io/nodepool": "*"},
            }
        assert not granting(statements, "states:StartExecution")
        (describe,) = granting(statements, "eks:DescribeCluster")
        assert render(describe["Resource"]).endswith(f":cluster/{CLUSTER}")


def test_each_step_runs_its_own_entry_point_with_its_own_role(default_synth: Synth) -> None:
    functions = default_synth.resources("AWS::Lambda::Function")
    for step in STEPS:
        fid = logical_id(default_synth, "AWS::Lambda::Function", f"DisruptionSteps{step.name}Function")
        props = functions[fid]["Properties"]
        assert props["Handler"] == f"handler.{step.entry}"
        assert props["Role"] == {"Fn::GetAtt": [step_role(default_synth, step.name), "Arn"]}
    entries = [e["Properties"] for e in default_synth.resources("AWS::EKS::AccessEntry").values()]
    assert sum(e.get("KubernetesGroups") == ["nodewright:disruption"] for e in entries) == len(STEPS)


def test_the_planner_ticks_every_minute_and_may_only_start_this_workflow(default_synth: Synth) -> None:
    (schedule,) = default_synth.resources("AWS::Scheduler::Schedule").values()
    props = schedule["Properties"]
    planner = logical_id(default_synth, "AWS::Lambda::Function", "PlannerFunction")
    assert props["ScheduleExpression"] == "rate(1 minute)"
    assert props["Target"]["Arn"] == {"Fn::GetAtt": [planner, "Arn"]}
    assert "DeadLetterConfig" in props["Target"]
    machine = logical_id(default_synth, "AWS::StepFunctions::StateMachine", "Disruption")
    statements = role_statements(default_synth, logical_id(default_synth, "AWS::IAM::Role", "PlannerRole"))
    (start,) = granting(statements, "states:StartExecution")
    assert listed(start["Resource"]) == [{"Ref": machine}]
    # Static NodePools: it launches their missing NodeClaims, with the provisioner's tag-bound launch statements.
    (fleet,) = [
        st for st in granting(statements, "ec2:CreateFleet") if st["Sid"] == "LaunchOnlyNodewrightTaggedResources"
    ]
    assert "aws:RequestTag/nodewright.io/cluster" in fleet["Condition"]["StringEquals"]
    env = default_synth.template["Resources"][planner]["Properties"]["Environment"]["Variables"]
    assert env["NODEWRIGHT_STATE_MACHINE"] == {"Ref": machine}
    # Consolidation and drift: it reads the catalog and resolves EC2NodeClasses; it passes the node roles to EC2
    # only (static NodePools' launches) and may only read the table and take and release locks in it.
    assert {"NODEWRIGHT_TABLE", "NODEWRIGHT_NODE_ROLE", "NODEWRIGHT_INSTANCE_PROFILE"} <= set(env)
    (passing,) = granting(statements, "iam:PassRole")
    assert passing["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    assert granting(statements, "pricing:GetProducts") and granting(statements, "ssm:GetParameters")
    table = [st for st in statements if any(str(a).startswith("dynamodb:") for a in listed(st["Action"]))]
    assert {a for st in table for a in listed(st["Action"])} == {
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:DeleteItem",
    }


def test_the_dashboard_shows_scale_down_by_method(default_synth: Synth) -> None:
    (dashboard,) = default_synth.resources("AWS::CloudWatch::Dashboard").values()
    body = json.loads(render(dashboard["Properties"]["DashboardBody"]))
    metrics = [m for w in body["widgets"] for m in (w.get("properties") or {}).get("metrics", [])]
    decided = {tuple(m[m.index("method") + 1 : m.index("method") + 2]) for m in metrics if "DisruptionDecisions" in m}
    assert decided == {("expiration",), ("emptiness",), ("drift",), ("multi-node",), ("single-node",)}
    assert any("EvaluationDuration" in m for m in metrics) and any("EligibleNodes" in m for m in metrics)


def test_alarms_watch_failed_executions_throttles_dead_letters_and_missed_ticks(default_synth: Synth) -> None:
    alarms = [a["Properties"] for a in default_synth.resources("AWS::CloudWatch::Alarm").values()]
    machine = logical_id(default_synth, "AWS::StepFunctions::StateMachine", "Disruption")
    [failed] = [a for a in alarms if a.get("MetricName") == "ExecutionsFailed"]
    assert failed["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": machine}}]
    assert failed["Threshold"] == 1
    [throttles] = [a for a in alarms if "Metrics" in a]
    functions = default_synth.resources("AWS::Lambda::Function")
    watched = {
        d["Value"]["Ref"]
        for m in throttles["Metrics"]
        if "MetricStat" in m
        for d in m["MetricStat"]["Metric"]["Dimensions"]
    }
    assert watched == set(functions)  # every nodewright function, none forgotten
    queues = {a["Dimensions"][0]["Value"]["Fn::GetAtt"][0] for a in alarms if a.get("Namespace") == "AWS/SQS"}
    assert queues == {
        logical_id(default_synth, "AWS::SQS::Queue", "DeadLetter"),
        logical_id(default_synth, "AWS::SQS::Queue", "MissedTicks"),
    }
    (dashboard,) = default_synth.resources("AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == f"nodewright-{CLUSTER}"


def test_the_instance_goes_only_once_the_drained_pods_volumes_are_detached(default_synth: Synth) -> None:
    """After the drain, CheckVolumes (the Drain function, asked for its `volumes` step) waits as WaitForDrain does
    until the drained pods' VolumeAttachments are gone or the deadline passed; only then TerminateInstance
    (Karpenter's termination controller: awaitDrain, awaitVolumeDetachment, awaitInstanceTermination)."""
    states = definition(default_synth)["States"]
    inner = states["DrainAndTerminate"]["ItemProcessor"]["States"]
    now = states["ReplaceAndDrain"]["Branches"][1]["States"]
    for loop, suffix, done in ((inner, "", "TerminateInstance"), (now, "Now", "DrainComplete")):
        drained = loop[f"Drained{suffix}?"]["Choices"]
        assert drained == [{"Variable": "$.drain.done", "BooleanEquals": True, "Next": f"CheckVolumes{suffix}"}]
        check = loop[f"CheckVolumes{suffix}"]
        assert check["Type"] == "Task" and check["ResultPath"] == "$.volumes"
        assert check["Parameters"] == {
            "input.$": "$",
            "execution.$": "$$.Execution.Name",
            "step": "volumes",
        }
        assert check["Resource"] == loop[f"CheckDrain{suffix}"]["Resource"]  # the Drain function
        assert check["Next"] == f"VolumesDetached{suffix}?"
        detached = loop[f"VolumesDetached{suffix}?"]
        assert detached["Choices"] == [{"Variable": "$.volumes.done", "BooleanEquals": True, "Next": done}]
        assert detached["Default"] == f"WaitForVolumes{suffix}"
        assert loop[f"WaitForVolumes{suffix}"] == {
            "Type": "Wait",
            "SecondsPath": "$.volumes.wait_seconds",
            "Next": f"CheckVolumes{suffix}",
        }
    assert now["DrainComplete"]["Parameters"] == {"drain.$": "$.drain", "volumes.$": "$.volumes"}
