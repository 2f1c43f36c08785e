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
                                        | CordonAndDrainNow <-> WaitForDrainNow)
             -> TerminateInstanceNow -> Disrupted
        no:  LaunchReplacement -> PrepareOnly? --yes--> ReleaseLock -> ReplacementPrepared (a rebalance)
             -> WaitForReplacement <-> CheckReplacement
             -> DrainAndTerminate = Map(each node: CordonAndDrain <-> WaitForDrain -> TerminateInstance) -> Disrupted
    Any task's failure -> Rollback -> RolledBack (Fail)

In the urgent branch the replacement is still waited for (CheckReplacement finishes its registration, so the
evicted pods can land on it); TerminateInstanceNow runs when both branches are done. The Map runs one iteration
per node of the command: one for most, all the candidates of a multi-node consolidation at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
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

SOURCE = build.REPO_ROOT / "functions" / "workflow"
KUBERNETES_GROUP = "nodewright:disruption"  # bound to a ClusterRole by the chart (rbac-functions.yaml)
POWERTOOLS_SERVICE_NAME = "nodewright-disruption"
REPLACEMENT_POLL = Duration.seconds(15)
DRAIN_POLL = Duration.seconds(10)
VALIDATION_DELAY = Duration.seconds(15)  # Karpenter's consolidation validation delay
# The longest a disruption may take: a NodePool's terminationGracePeriod bounds the drain, and a day covers
# any sensible one; the lock's TTL is at least as long as the deadline the step computes.
WORKFLOW_TIMEOUT = Duration.hours(24)
LOCK_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem")
# IdentifyCandidate also reads every lock (budgets count the nodes other workflows hold) and the offerings refused
# for capacity (its validation simulates with the catalog).
IDENTIFY_TABLE_ACTIONS = (*LOCK_ACTIONS, "dynamodb:Query")
# Errors that retrying cannot fix: roll back at once.
FINAL_ERRORS = ["DisruptionFailed", "CommandError"]


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


STEPS = (
    # Validating a consolidation runs the simulation on the whole cluster: sized like the provisioner.
    Step("IdentifyCandidate", "identify", 60, 1769, table_actions=IDENTIFY_TABLE_ACTIONS, reads_catalog=True),
    # Sized like the provisioner: it runs the same simulation and CreateFleet calls.
    Step("LaunchReplacement", "launch_replacement", 120, 1769, TABLE_ACTIONS, launches=True),
    Step("CheckReplacement", "check_replacement", 60),
    Step("Drain", "drain", 120),
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
        code = code_from_bundle(build.function_bundle(source, "workflow"))
        environment = launch_environment(settings, table, node_role, instance_profile, POWERTOOLS_SERVICE_NAME)
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

    @staticmethod
    def _statements(stack: Stack, step: Step, settings: Settings, node_role: iam.IRole) -> list[iam.PolicyStatement]:
        if step.launches:
            return provisioner_statements(stack, settings, node_role.role_arn)
        statements = [describe_cluster_statement(stack, settings)]
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

    def _task(self, state_name: str, step: str, result_path: str) -> tasks.LambdaInvoke:
        task = tasks.LambdaInvoke(
            self,
            state_name,
            lambda_function=self.functions[step],
            payload=sfn.TaskInput.from_object(
                {"input": sfn.JsonPath.entire_payload, "execution": sfn.JsonPath.string_at("$$.Execution.Name")}
            ),
            payload_response_only=True,
            result_path=result_path,
        )
        task.add_retry(errors=FINAL_ERRORS, max_attempts=0)
        task.add_retry(errors=[sfn.Errors.ALL], interval=Duration.seconds(2), max_attempts=3, backoff_rate=2.0)
        return task

    def _drain_loop(
        self, suffix: str, done: sfn.IChainable, rollback: sfn.IChainable | None = None
    ) -> tasks.LambdaInvoke:
        """CordonAndDrain -> Drained? -> (done | WaitForDrain -> CheckDrain -> Drained?). Inside a Parallel
        branch (`rollback` None) the Parallel state's own catch covers the tasks."""
        start = self._task(f"CordonAndDrain{suffix}", "Drain", "$.drain")
        wait = sfn.Wait(self, f"WaitForDrain{suffix}", time=sfn.WaitTime.duration(DRAIN_POLL))
        check = self._task(f"CheckDrain{suffix}", "Drain", "$.drain")
        if rollback is not None:
            for task in (start, check):
                task.add_catch(rollback, errors=[sfn.Errors.ALL], result_path="$.error")
        drained = (
            sfn.Choice(self, f"Drained{suffix}?")
            .when(sfn.Condition.boolean_equals("$.drain.done", True), done)
            .otherwise(wait)
        )
        start.next(drained)
        wait.next(check)
        check.next(drained)
        return start

    def _replacement_loop(self, suffix: str, done: sfn.IChainable, rollback: sfn.IChainable | None = None) -> sfn.Wait:
        """WaitForReplacement -> CheckReplacement -> ReplacementReady? -> (done | WaitForReplacement)."""
        wait = sfn.Wait(self, f"WaitForReplacement{suffix}", time=sfn.WaitTime.duration(REPLACEMENT_POLL))
        check = self._task(f"CheckReplacement{suffix}", "CheckReplacement", "$.replacement_check")
        if rollback is not None:
            check.add_catch(rollback, errors=[sfn.Errors.ALL], result_path="$.error")
        ready = (
            sfn.Choice(self, f"ReplacementReady{suffix}?")
            .when(sfn.Condition.boolean_equals("$.replacement_check.ready", True), done)
            .otherwise(wait)
        )
        wait.next(check)
        check.next(ready)
        return wait

    def _definition(self) -> sfn.IChainable:
        rolled_back = sfn.Fail(
            self,
            "RolledBack",
            error="DisruptionRolledBack",
            cause="A step failed; Rollback restored the node and released the lock (see its output for the cause).",
        )
        rollback = self._task("Rollback", "Rollback", "$.rollback")
        rollback.next(rolled_back)

        def catching(task: tasks.LambdaInvoke | sfn.Parallel | sfn.Map) -> tasks.LambdaInvoke | sfn.Parallel | sfn.Map:
            task.add_catch(rollback, errors=[sfn.Errors.ALL], result_path="$.error")
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
        urgent_launch.next(self._replacement_loop("Now", replaced))
        drained = sfn.Pass(self, "DrainComplete", parameters={"drain": sfn.JsonPath.object_at("$.drain")})
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
        launch.next(
            sfn.Choice(self, "PrepareOnly?")
            .when(sfn.Condition.boolean_equals("$.identify.prepare_only", True), release)
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
