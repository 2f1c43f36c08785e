"""The planner: a Lambda on an EventBridge Scheduler schedule that starts the disruption workflow.

Every tick (one minute by default) it finishes node registrations, cleans up NodeClaims that never registered,
finds drift (it resolves each EC2NodeClass as the provisioner does: subnets, security groups, AMI parameters and
images), and starts the workflow for what expiration, emptiness, drift and consolidation decide (see
`nodewright.service.plan`); consolidation simulates with the instance catalog and prices. It takes the nodes'
locks in the table before starting a voluntary disruption. It launches the NodeClaims static NodePools
(`spec.replicas`) are short of, as the provisioner launches (so it may launch what the provisioner may).
Reserved concurrency 1: two overlapping ticks would only race to start the same executions.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra import build, nag
from infra.config import Settings
from infra.function import describe_cluster_statement, nodewright_function
from infra.layers import Layers, code_from_bundle
from infra.ownership import terminate_statement
from infra.provisioner import (
    acknowledge_launch_statements,
    acknowledge_read_policy,
    ami_parameter_statement,
    catalog_statements,
    instance_profile_statements,
    launch_environment,
    launch_statements,
)
from infra.sizing import planner_memory_mb
from infra.workflow import acknowledge_executions, describe_executions_statement, state_machine_name
from nodewright import settings as env

# The planner reads the table (offerings refused for capacity, the workflows' locks) and takes locks.
TABLE_ACTIONS = ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem")

SOURCE = build.REPO_ROOT / "functions" / "planner"
KUBERNETES_GROUP = "nodewright:planner"  # bound to a ClusterRole by the chart (rbac-functions.yaml)
SCHEDULE = "rate(1 minute)"


class Planner(Construct):
    """`function`, its `role`, the `schedule` and the schedule's dead-letter `queue`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        layers: Layers,
        state_machine: sfn.IStateMachine,
        executions_arn: str,
        table: dynamodb.ITable,
        node_role: iam.IRole,
        instance_profile: iam.IInstanceProfile,
        provisioner: lambda_.IFunction | None = None,
        schedule: str = SCHEDULE,
        source: Path = SOURCE,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        statements = [
            describe_cluster_statement(stack, settings),
            iam.PolicyStatement(
                sid="StartTheDisruptionWorkflow",
                actions=["states:StartExecution"],
                resources=[state_machine.state_machine_arn],
            ),
            # A lease is valid while its execution runs: the tick asks before it takes a node or restores one.
            describe_executions_statement(executions_arn),
            # NodeClaims that never registered: their instances are found by tag and terminated.
            terminate_statement(stack, settings),
            *catalog_statements(),
            # Drift resolves every EC2NodeClass as a launch would: AMI parameters, and the instance profile of the
            # role or profile it names.
            ami_parameter_statement(stack, settings),
            *instance_profile_statements(stack, settings),
            # Static NodePools: the tick launches their missing NodeClaims through the provisioning path.
            *launch_statements(stack, settings, node_role.role_arn),
        ]
        if provisioner is not None:
            # A CapacityBuffer short of room: the tick asks the provisioner for it, as the forwarder asks for pending
            # pods (`nodewright.service.buffers`). The unqualified function ARN only.
            statements.append(
                iam.PolicyStatement(
                    sid="AskTheProvisionerForBufferCapacity",
                    actions=["lambda:InvokeFunction"],
                    resources=[provisioner.function_arn],
                )
            )
        environment = launch_environment(settings, table, node_role, instance_profile, "nodewright-planner")
        parts = nodewright_function(
            self,
            settings=settings,
            layers=layers,
            code=code_from_bundle(build.function_bundle(source, "planner")),
            handler="handler.handler",
            description="nodewright planner: expiration, drift, consolidation, static NodePools, registrations",
            # It holds the whole cluster while it decides: sized from the cluster's nodes (`infra.sizing`).
            memory_mb=planner_memory_mb(settings.cluster_nodes),
            timeout=Duration.seconds(55),  # shorter than the tick, so ticks never overlap
            environment={
                **environment,
                env.STATE_MACHINE: state_machine.state_machine_arn,
                env.NODE_REPAIR: str(settings.node_repair).lower(),
                env.INCREMENTAL_READS: str(settings.incremental_reads).lower(),
                **({env.PROVISIONER_FUNCTION: provisioner.function_name} if provisioner is not None else {}),
            },
            statements=statements,
            kubernetes_group=KUBERNETES_GROUP,
            reserved_concurrency=1,
        )
        self.role, self.function, policy = parts.role, parts.function, parts.policy
        table.grant(self.role, *TABLE_ACTIONS)

        # Ticks the scheduler could not deliver land here instead of vanishing.
        self.queue = sqs.Queue(
            self,
            "MissedTicks",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        scheduler_role = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            ),
            description="EventBridge Scheduler invoking the nodewright planner",
        )
        self.function.grant_invoke(scheduler_role)
        self.queue.grant_send_messages(scheduler_role)
        self.schedule = scheduler.CfnSchedule(
            self,
            "Schedule",
            description=f"nodewright planner tick for {settings.cluster_name}",
            schedule_expression=schedule,
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=self.function.function_arn,
                role_arn=scheduler_role.role_arn,
                # A missed tick is not worth much a minute later: the next one does the same work.
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_event_age_in_seconds=60, maximum_retry_attempts=0
                ),
                dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(arn=self.queue.queue_arn),
            ),
        )
        acknowledge_read_policy(policy, settings, terminates=True)
        acknowledge_launch_statements(policy, settings, terminates=True)
        acknowledge_executions(policy, state_machine_name(settings.cluster_name))
        nag.acknowledge(
            scheduler_role,
            "AwsSolutions-IAM5",
            "The CDK grants lambda:InvokeFunction on the planner and its versions (`<arn>:*`).",
            findings=[f"Resource::<{stack.get_logical_id(self.function.node.default_child)}.Arn>:*"],  # type: ignore[arg-type]
        )
        nag.acknowledge(
            self.queue,
            "AwsSolutions-SQS3",
            "This queue is itself the dead-letter queue of the planner's schedule.",
        )
