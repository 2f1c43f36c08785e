"""The disruption workflow: a Step Functions standard state machine and one Lambda per step.

Identify -> replace -> drain -> terminate, with waits, retries, a timeout and a rollback path (see
`nodewright.service.workflow` for what each step does). Each step is its own function with its own role, so a
step holds only the permissions it uses: only LaunchReplacement may launch, only TerminateInstance and Rollback
may terminate (and only instances tagged for this cluster).

The definition, as a person reads it in the console:

    Validate? --yes (emptiness, consolidation)--> ValidationDelay (15 s) -> IdentifyCandidate
    IdentifyCandidate -> Proceed? --invalidated--> Invalidated (the cluster changed since the planner decided)
                                  --gone, locked, blocked--> NothingToDisrupt
      Urgent? (an interruption: the instance goes in two minutes)
        yes: ReplaceAndDrain = Parallel(LaunchReplacementNow -> WaitForReplacementNow <-> CheckReplacementNow
                                          (a failure here -> ReplacementFailedNow: the drain does not wait for it)
                                        | CordonAndDrainNow <-> WaitForDrainNow
                                          -> CheckVolumesNow <-> WaitForVolumesNow)
             -> TerminateInstanceNow -> Disrupted
        no:  LaunchReplacement -> PrepareOnly? --yes--> ProtectReplacement (the protection window)
                                                        -> ReleaseLock -> ReplacementPrepared (a rebalance)
             -> WaitForReplacement <-> CheckReplacement
             -> DrainAndTerminate = Map(each node: CordonAndDrain <-> WaitForDrain
                                               -> CheckVolumes <-> WaitForVolumes -> TerminateInstance) -> Disrupted
    LeaseLost from any task (another execution holds a node: an interruption took it over) -> Superseded
    Any other failure -> Rollback -> RolledBack (Fail)

In the urgent branch the replacement is still waited for (CheckReplacement finishes its registration, so the
evicted pods can land on it); TerminateInstanceNow runs when both branches are done. The Map runs one iteration
per node of the command: one for most, all the candidates of a multi-node consolidation at once. A drain waits
10 s between rounds, then a minute once it has gone on for ten (`drain.wait_seconds`), and the time-out is 30 days:
a PodDisruptionBudget that holds a node for days holds one execution, which keeps renewing its lease. After the
drain, CheckVolumes waits (as often) until the VolumeAttachments of the drained pods' volumes are gone, or the
deadline passed, as Karpenter's termination does before it terminates the instance.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra import build, nag
from infra.config import Settings
from infra.function import describe_cluster_statement, log_retention, nodewright_function
from infra.layers import Layers, code_from_bundle
from infra.ownership import nag_ec2_arn, terminate_statement
from infra.provisioner import (
    TABLE_ACTIONS,
    acknowledge_launch_policy,
    catalog_statements,
    launch_environment,
    provisioner_statements,
)
from nodewright import settings as env

SOURCE = build.REPO_ROOT / "functions" / "workflow"
KUBERNETES_GROUP = "nodewright:disruption"  # bound to a ClusterRole by the chart (rbac-functions.yaml)
POWERTOOLS_SERVICE_NAME = "nodewright-disruption"
REPLACEMENT_POLL = Duration.seconds(15)
VALIDATION_DELAY = Duration.seconds(15)  # Karpenter's consolidation validation delay
# A drain held by a PodDisruptionBudget goes on as long as the budget holds it (bounded only by the NodeClaim's
# terminationGracePeriod where one is set); the time-out is a backstop, and an execution that reaches it loses its
# lease, so the planner's reconciliation restores the node or restarts its Deleted workflow.
WORKFLOW_TIMEOUT = Duration.days(30)
# Every step renews its lease (GetItem answers who took it over); IdentifyCandidate also reads every lease (budgets
# count the nodes other workflows hold) and the offerings refused for capacity (its validation simulates with them).
LOCK_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem")
IDENTIFY_TABLE_ACTIONS = (*LOCK_ACTIONS, "dynamodb:Query")
# Errors that retrying cannot fix: roll back at once (or, for LeaseLost, stand down).
LEASE_LOST = "LeaseLost"
FINAL_ERRORS = ["DisruptionFailed", "CommandError", LEASE_LOST]
PLANNER_BUSY = "PlannerBusy"  # the planner lock is held: LaunchReplacement tries again for about four minutes


@dataclass(frozen=True)
class Step:
    """One task Lambda: its handler entry, sizing, and what it may do beyond reading the cluster."""

    name: str
    entry: str
    timeout: int
    memory: int = 512
    table_actions: tuple[str, ...] = ()
    launches: bool = False
    terminates: bool = False
    describes_instances: bool = False
    reads_catalog: bool = False
    # Asks Step Functions whether a lease's execution still runs (IdentifyCandidate, before taking a node over).
    describes_executions: bool = False


STEPS = (
    # Validating a consolidation runs the simulation on the whole cluster: sized like the provisioner.
    Step(
        "IdentifyCandidate",
        "identify",
        60,
        1769,
        table_actions=IDENTIFY_TABLE_ACTIONS,
        reads_catalog=True,
        describes_executions=True,
    ),
    # Sized like the provisioner: it runs the same simulation and CreateFleet calls.
    Step("LaunchReplacement", "launch_replacement", 120, 1769, TABLE_ACTIONS, launches=True),
    Step("CheckReplacement", "check_replacement", 60, table_actions=LOCK_ACTIONS),
    # Also CheckVolumes (the task names the `volumes` step): after the drain, are the VolumeAttachments of the
    # drained pods' volumes gone? Same reads and Kubernetes group, and a twelfth function would take the Throttles
    # alarm past CloudWatch's ten metrics.
    Step("Drain", "drain", 120, table_actions=LOCK_ACTIONS),
    Step("TerminateInstance", "terminate", 60, table_actions=LOCK_ACTIONS, terminates=True),
    Step("ReleaseLock", "release", 30, table_actions=LOCK_ACTIONS),
    Step("Rollback", "rollback", 120, table_actions=LOCK_ACTIONS, terminates=True, describes_instances=True),
)


class DisruptionWorkflow(Construct):
    """`state_machine`, its `log_group`, and `functions` / `roles` by step name."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        layers: Layers,
        table: dynamodb.ITable,
        node_role: iam.IRole,
        instance_profile: iam.IInstanceProfile,
        source: Path = SOURCE,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        # Named, so its steps can know their own state machine's ARN without a reference to it (the state machine
        # refers to the steps: a reference back would be a cycle).
        self.name = state_machine_name(settings.cluster_name)
        self.arn = stack.format_arn(
            service="states", resource="stateMachine", resource_name=self.name, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
        self.executions_arn = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        code = code_from_bundle(build.function_bundle(source, "workflow"))
        environment = launch_environment(settings, table, node_role, instance_profile, POWERTOOLS_SERVICE_NAME)
        environment[env.STATE_MACHINE] = self.arn
        self.functions: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        self._function_scope = Construct(self, "Steps")
        for step in STEPS:
            self._step_function(stack, step, settings, layers, table, node_role, code, environment)

        self.log_group = logs.LogGroup(
            self, "ExecutionLogs", retention=log_retention(settings), removal_policy=RemovalPolicy.DESTROY
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=self.name,
            comment=f"nodewright disruption of one node of EKS cluster {settings.cluster_name}",
            definition_body=sfn.DefinitionBody.from_chainable(self._definition()),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=WORKFLOW_TIMEOUT,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=True),
        )
        nag.acknowledge(
            self.state_machine,
            "AwsSolutions-IAM5",
            "The CDK grants the state machine lambda:InvokeFunction on each step function and its versions "
            "(`<arn>:*`), X-Ray and CloudWatch Logs delivery actions that take no resource ARN ('*').",
            findings=["Resource::*"]
            + [f"Resource::<{stack.get_logical_id(f.node.default_child)}.Arn>:*" for f in self.functions.values()],  # type: ignore[arg-type]
        )

    # ------------------------------------------------------------------------------------- functions

    def _step_function(
        self,
        stack: Stack,
        step: Step,
        settings: Settings,
        layers: Layers,
        table: dynamodb.ITable,
        node_role: iam.IRole,
        code: lambda_.Code,
        environment: dict[str, str],
    ) -> None:
        scope = Construct(self._function_scope, step.name)
        parts = nodewright_function(
            scope,
            settings=settings,
            layers=layers,
            code=code,
            handler=f"handler.{step.entry}",
            description=f"nodewright disruption step {step.name}",
            memory_mb=step.memory,
            timeout=Duration.seconds(step.timeout),
            environment=environment,
            statements=self._statements(stack, step, settings, node_role),
            kubernetes_group=KUBERNETES_GROUP,
        )
        if step.table_actions:
            table.grant(parts.role, *step.table_actions)
        self.functions[step.name] = parts.function
        self.roles[step.name] = parts.role
        self._acknowledge(step, settings, parts.policy)

    def _statements(
        self, stack: Stack, step: Step, settings: Settings, node_role: iam.IRole
    ) -> list[iam.PolicyStatement]:
        if step.launches:
            return provisioner_statements(stack, settings, node_role.role_arn)
        statements = [describe_cluster_statement(stack, settings)]
        if step.describes_executions:
            statements.append(describe_executions_statement(self.executions_arn))
        if step.terminates:
            statements.append(terminate_statement(stack, settings))
            # Finding a replacement's instance by its NodeClaim tag, and whether the node's instance still runs.
            statements.append(
                iam.PolicyStatement(sid="DescribeInstances", actions=["ec2:DescribeInstances"], resources=["*"])
            )
        if step.reads_catalog:
            statements.extend(catalog_statements())
        return statements

    def _acknowledge(self, step: Step, settings: Settings, policy: iam.Policy) -> None:
        if step.describes_executions:
            acknowledge_executions(policy, self.name)
        if step.launches:
            acknowledge_launch_policy(policy, settings)
        elif step.reads_catalog:
            nag.acknowledge(
                policy,
                "AwsSolutions-IAM5",
                "EC2 Describe* calls and pricing:GetProducts (the instance catalog its validation simulates with) "
                "do not support resource-level permissions.",
                findings=["Action::ec2:Describe*", "Resource::*"],
            )
        elif step.terminates:
            nag.acknowledge(
                policy,
                "AwsSolutions-IAM5",
                "ec2:TerminateInstances is granted on instance/* only where the instance carries nodewright's "
                "cluster and NodePool tags (the instance ids come from events and NodeClaims); "
                "ec2:DescribeInstances supports no resource-level permissions.",
                findings=[f"Resource::{nag_ec2_arn('instance')}", "Resource::*"],
            )

    # ------------------------------------------------------------------------------------ definition

    def _task(self, state_name: str, step: str, result_path: str, entry: str = "") -> tasks.LambdaInvoke:
        """A task invoking the function of `step`; `entry` names another step of the same function (the payload's
        `step`, which the handler checks against the steps that function serves)."""
        payload: dict[str, str] = {
            "input": sfn.JsonPath.entire_payload,
            "execution": sfn.JsonPath.string_at("$$.Execution.Name"),
        }
        if entry:
            payload["step"] = entry
        task = tasks.LambdaInvoke(
            self,
            state_name,
            lambda_function=self.functions[step],
            payload=sfn.TaskInput.from_object(payload),
            payload_response_only=True,
            result_path=result_path,
        )
        task.add_retry(errors=FINAL_ERRORS, max_attempts=0)
        task.add_retry(errors=[PLANNER_BUSY], interval=Duration.seconds(10), max_attempts=8, backoff_rate=1.5)
        task.add_retry(errors=[sfn.Errors.ALL], interval=Duration.seconds(2), max_attempts=3, backoff_rate=2.0)
        return task

    def _drain_loop(
        self, suffix: str, done: sfn.IChainable, rollback: sfn.IChainable | None = None
    ) -> tasks.LambdaInvoke:
        """CordonAndDrain -> Drained? -> (the volume loop, then done | WaitForDrain -> CheckDrain -> Drained?).
        Inside a Parallel branch (`rollback` None) the Parallel state's own catch covers the tasks."""
        start = self._task(f"CordonAndDrain{suffix}", "Drain", "$.drain")
        wait = sfn.Wait(self, f"WaitForDrain{suffix}", time=sfn.WaitTime.seconds_path("$.drain.wait_seconds"))
        check = self._task(f"CheckDrain{suffix}", "Drain", "$.drain")
        if rollback is not None:
            for task in (start, check):
                self._catch(task, rollback)
        drained = (
            sfn.Choice(self, f"Drained{suffix}?")
            .when(sfn.Condition.boolean_equals("$.drain.done", True), self._volume_loop(suffix, done, rollback))
            .otherwise(wait)
        )
        start.next(drained)
        wait.next(check)
        check.next(drained)
        return start

    def _volume_loop(
        self, suffix: str, done: sfn.IChainable, rollback: sfn.IChainable | None = None
    ) -> tasks.LambdaInvoke:
        """CheckVolumes -> VolumesDetached? -> (done | WaitForVolumes -> CheckVolumes): Karpenter's termination
        waits, after the drain, until the node's VolumeAttachments of the drained pods' volumes are gone, or the
        deadline (the NodeClaim's terminationGracePeriod) passed, before it terminates the instance."""
        check = self._task(f"CheckVolumes{suffix}", "Drain", "$.volumes", entry="volumes")
        wait = sfn.Wait(self, f"WaitForVolumes{suffix}", time=sfn.WaitTime.seconds_path("$.volumes.wait_seconds"))
        if rollback is not None:
            self._catch(check, rollback)
        detached = (
            sfn.Choice(self, f"VolumesDetached{suffix}?")
            .when(sfn.Condition.boolean_equals("$.volumes.done", True), done)
            .otherwise(wait)
        )
        check.next(detached)
        wait.next(check)
        return check

    def _replacement_loop(
        self,
        suffix: str,
        done: sfn.IChainable,
        rollback: sfn.IChainable | None = None,
        failed: sfn.IChainable | None = None,
    ) -> sfn.Wait:
        """WaitForReplacement -> CheckReplacement -> ReplacementReady? -> (done | WaitForReplacement). A failed check
        rolls back (`rollback`), or ends the branch (`failed`, the urgent branch)."""
        wait = sfn.Wait(self, f"WaitForReplacement{suffix}", time=sfn.WaitTime.duration(REPLACEMENT_POLL))
        check = self._task(f"CheckReplacement{suffix}", "CheckReplacement", "$.replacement_check")
        if rollback is not None:
            self._catch(check, rollback)
        if failed is not None:
            check.add_catch(failed, errors=[sfn.Errors.ALL], result_path="$.replacement_error")
        ready = (
            sfn.Choice(self, f"ReplacementReady{suffix}?")
            .when(sfn.Condition.boolean_equals("$.replacement_check.ready", True), done)
            .otherwise(wait)
        )
        wait.next(check)
        check.next(ready)
        return wait

    def _catch(self, task: tasks.LambdaInvoke | sfn.Parallel | sfn.Map, rollback: sfn.IChainable) -> None:
        """LeaseLost ends the execution as Superseded (the node is another execution's now: nothing to roll back);
        any other error rolls back."""
        task.add_catch(self._superseded, errors=[LEASE_LOST], result_path="$.error")
        task.add_catch(rollback, errors=[sfn.Errors.ALL], result_path="$.error")

    def _definition(self) -> sfn.IChainable:
        self._superseded = sfn.Succeed(
            self,
            "Superseded",
            comment="another execution holds a node of this one (an interruption took it over): it stands down",
        )
        rolled_back = sfn.Fail(
            self,
            "RolledBack",
            error="DisruptionRolledBack",
            cause="A step failed; Rollback restored the node and released the lock (see its output for the cause).",
        )
        rollback = self._task("Rollback", "Rollback", "$.rollback")
        rollback.next(rolled_back)

        def catching(task: tasks.LambdaInvoke | sfn.Parallel | sfn.Map) -> tasks.LambdaInvoke | sfn.Parallel | sfn.Map:
            self._catch(task, rollback)
            return task

        disrupted = sfn.Succeed(self, "Disrupted")
        terminate_now = catching(self._task("TerminateInstanceNow", "TerminateInstance", "$.terminate"))
        terminate_now.next(disrupted)

        # Urgent: the instance is going away; launch (and bring up) the replacement while draining.
        urgent_launch = self._task("LaunchReplacementNow", "LaunchReplacement", "$.replacement")
        # Each branch hands back only its own result: the Parallel's result is
        # [{"replacement": ...}, {"drain": ...}], kept under $.replace_and_drain.
        replaced = sfn.Pass(
            self, "ReplacementReadyNow", parameters={"replacement": sfn.JsonPath.object_at("$.replacement")}
        )
        # The instance goes whatever happens to its replacement: a replacement that cannot launch or come up ends
        # this branch alone, and the drain goes on (the pods it could not place are pending, for the provisioner).
        failed = sfn.Pass(
            self,
            "ReplacementFailedNow",
            parameters={"replacement_error": sfn.JsonPath.object_at("$.replacement_error")},
        )
        urgent_launch.add_catch(failed, errors=[sfn.Errors.ALL], result_path="$.replacement_error")
        urgent_launch.next(self._replacement_loop("Now", replaced, failed=failed))
        drained = sfn.Pass(
            self,
            "DrainComplete",
            parameters={"drain": sfn.JsonPath.object_at("$.drain"), "volumes": sfn.JsonPath.object_at("$.volumes")},
        )
        urgent_drain = self._drain_loop("Now", drained)
        parallel = sfn.Parallel(self, "ReplaceAndDrain", result_path="$.replace_and_drain")
        parallel.branch(urgent_launch)
        parallel.branch(urgent_drain)
        catching(parallel).next(terminate_now)

        # Planned: the replacement is Ready before the first eviction; then every node of the command (one, or the
        # candidates of a multi-node consolidation) is drained and terminated side by side, each in its own
        # iteration with its own state (IdentifyCandidate's `targets`). The Map's catch covers every iteration.
        terminate = self._task("TerminateInstance", "TerminateInstance", "$.terminate")
        terminate.next(sfn.Succeed(self, "NodeDisrupted"))
        each_node = sfn.Map(
            self,
            "DrainAndTerminate",
            items_path="$.identify.targets",
            result_path=sfn.JsonPath.DISCARD,
            comment="each node of the command: cordon, drain (PDB-aware), terminate",
        )
        each_node.item_processor(self._drain_loop("", terminate))
        catching(each_node).next(disrupted)
        launch = catching(self._task("LaunchReplacement", "LaunchReplacement", "$.replacement"))
        release = catching(self._task("ReleaseLock", "ReleaseLock", "$.release"))
        release.next(sfn.Succeed(self, "ReplacementPrepared"))
        # A rebalance holds the node (and its soft taint) through the protection window, then lets both go.
        protect = sfn.Wait(
            self, "ProtectReplacement", time=sfn.WaitTime.seconds_path("$.identify.protect_seconds")
        ).next(release)
        launch.next(
            sfn.Choice(self, "PrepareOnly?")
            .when(sfn.Condition.boolean_equals("$.identify.prepare_only", True), protect)
            .otherwise(self._replacement_loop("", each_node, rollback))
        )

        identify = catching(self._task("IdentifyCandidate", "IdentifyCandidate", "$.identify"))
        urgent = (
            sfn.Choice(self, "Urgent?")
            .when(sfn.Condition.boolean_equals("$.identify.urgent", True), parallel)
            .otherwise(launch)
        )
        proceed = (
            sfn.Choice(self, "Proceed?")
            .when(sfn.Condition.string_equals("$.identify.outcome", "proceed"), urgent)
            .when(
                sfn.Condition.string_equals("$.identify.outcome", "invalidated"),
                sfn.Succeed(
                    self,
                    "Invalidated",
                    comment="the cluster changed since the planner decided: nothing was tainted, launched or evicted",
                ),
            )
            .otherwise(sfn.Succeed(self, "NothingToDisrupt", comment="gone, locked by another execution, or blocked"))
        )
        identify.next(proceed)
        # Karpenter waits 15 seconds before validating an emptiness or consolidation decision, so pods that were
        # about to land on the nodes have landed; IdentifyCandidate then checks the decision again.
        delay = sfn.Wait(self, "ValidationDelay", time=sfn.WaitTime.duration(VALIDATION_DELAY))
        delay.next(identify)
        return (
            sfn.Choice(self, "Validate?")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.is_present("$.validate"), sfn.Condition.boolean_equals("$.validate", True)
                ),
                delay,
            )
            .otherwise(identify)
        )


def state_machine_name(cluster: str) -> str:
    """`nodewright-<cluster>-disruption`, at most 80 characters (Step Functions' limit): a long cluster name is cut
    and a hash of it keeps two such names apart."""
    name = f"nodewright-{cluster}-disruption"
    if len(name) <= 80:
        return name
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
    return f"nodewright-{cluster[:48]}-{digest}-disruption"


def describe_executions_statement(executions_arn: str) -> iam.PolicyStatement:
    """states:DescribeExecution on the disruption workflow's executions: is a lease's holder still running?"""
    return iam.PolicyStatement(
        sid="DescribeExecutions", actions=["states:DescribeExecution"], resources=[executions_arn]
    )


def acknowledge_executions(policy: iam.Policy, name: str) -> None:
    """The one wildcard of `describe_executions_statement`: the execution names, which are per command."""
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "states:DescribeExecution is granted on the disruption state machine's executions only; their names are "
        "derived per command (execution:<state machine>:*).",
        findings=[f"Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{name}:*"],
    )
