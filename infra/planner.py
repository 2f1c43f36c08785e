"""The planner: a Lambda on an EventBridge Scheduler schedule that starts the disruption workflow.

Every tick (one minute by default) it finishes node registrations, cleans up NodeClaims that never registered,
and starts the workflow for expired NodeClaims (see `nodewright.service.plan`). Reserved concurrency 1: two
overlapping ticks would only race to start the same executions.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra import build, nag
from infra.config import Settings
from infra.layers import ARCHITECTURE, RUNTIME, Layers, code_from_bundle
from infra.network import attach_to_vpc
from infra.provisioner import LOG_RETENTION, OWNED, POWERTOOLS_METRICS_NAMESPACE, _nag_ec2_arn
from nodewright import settings as env

SOURCE = build.REPO_ROOT / "functions" / "planner"
KUBERNETES_GROUP = "nodewright:planner"  # bound to a ClusterRole by cluster/rbac/planner.yaml
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
        schedule: str = SCHEDULE,
        source: Path = SOURCE,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"nodewright planner for EKS cluster {settings.cluster_name}",
        )
        log_group = logs.LogGroup(self, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
        log_group.grant_write(self.role)
        policy = iam.Policy(
            self,
            "Policy",
            statements=[
                iam.PolicyStatement(
                    sid="DescribeTheCluster",
                    actions=["eks:DescribeCluster"],
                    resources=[
                        stack.format_arn(service="eks", resource="cluster", resource_name=settings.cluster_name)
                    ],
                ),
                iam.PolicyStatement(
                    sid="StartTheDisruptionWorkflow",
                    actions=["states:StartExecution"],
                    resources=[state_machine.state_machine_arn],
                ),
                iam.PolicyStatement(
                    # NodeClaims that never registered: their instances are found by tag and terminated.
                    sid="TerminateOnlyClusterInstances",
                    actions=["ec2:TerminateInstances"],
                    resources=[stack.format_arn(service="ec2", resource="instance", resource_name="*")],
                    conditions={"StringEquals": {f"aws:ResourceTag/{settings.cluster_tag_key}": OWNED}},
                ),
                iam.PolicyStatement(sid="DescribeInstances", actions=["ec2:DescribeInstances"], resources=["*"]),
            ],
        )
        policy.attach_to_role(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            description=f"nodewright planner: expiration and registration cleanup for {settings.cluster_name}",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=code_from_bundle(build.function_bundle(source, "planner")),
            layers=[layers.core, layers.dependencies],
            role=self.role,
            memory_size=512,
            timeout=Duration.seconds(55),  # shorter than the tick, so ticks never overlap
            reserved_concurrent_executions=1,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment={
                env.CLUSTER: settings.cluster_name,
                env.STATE_MACHINE: state_machine.state_machine_arn,
                "POWERTOOLS_SERVICE_NAME": "nodewright-planner",
                "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
            },
        )
        self.function.node.add_dependency(policy)
        if settings.vpc is not None:
            attach_to_vpc(self.function, policy, settings.vpc)
        eks.CfnAccessEntry(
            self,
            "AccessEntry",
            cluster_name=settings.cluster_name,
            principal_arn=self.role.role_arn,
            type="STANDARD",
            kubernetes_groups=[KUBERNETES_GROUP],
        )

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
        nag.acknowledge(
            policy,
            "AwsSolutions-IAM5",
            "ec2:TerminateInstances is granted on instance/* only where the instance carries this cluster's "
            "ownership tag; ec2:DescribeInstances supports no resource-level permissions.",
            findings=[f"Resource::{_nag_ec2_arn('instance')}", "Resource::*"],
        )
        nag.acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "X-Ray's PutTraceSegments and PutTelemetryRecords do not support resource-level permissions; "
            "the CDK grants them on '*' for active tracing.",
            findings=["Resource::*"],
        )
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
        nag.acknowledge(
            self.function,
            "AwsSolutions-L1",
            "The functions run Python 3.11: the project requires it (requires-python <3.12) and the layers "
            "ship .pyc files compiled for 3.11, which no newer runtime would load.",
        )
