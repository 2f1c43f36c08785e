"""One nodewright Lambda function, the way every component builds it.

Each function gets its own role (nothing shared, so each holds only what it uses), its own log group kept for
`logRetentionDays` (30 by default), one policy with exactly the statements its component grants (attached
before the first invocation can run), Python 3.11 on arm64 with the core and dependencies layers, active X-Ray
tracing, the VPC attachment when the settings ask for one, and an EKS access entry mapping its role to a
Kubernetes group (bound by the chart's RBAC, charts/nodewright). The parts are created directly in the caller's
scope as Role, Logs, Policy, Function and AccessEntry, so every component's resources are named alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import build, nag
from infra.config import LOG_RETENTION_DAYS, Settings
from infra.layers import ARCHITECTURE, RUNTIME, Layers
from infra.network import attach_to_vpc
from nodewright.adapters import aws_sdk


def log_retention(settings: Settings) -> logs.RetentionDays:
    """The `logRetentionDays` setting as CloudWatch Logs' retention."""
    return logs.RetentionDays[LOG_RETENTION_DAYS[settings.log_retention_days]]


def describe_cluster_statement(stack: Stack, settings: Settings) -> iam.PolicyStatement:
    """eks:DescribeCluster on this cluster only: the endpoint and CA an EKS token needs, nothing else."""
    return iam.PolicyStatement(
        sid="DescribeTheCluster",
        actions=["eks:DescribeCluster"],
        resources=[
            stack.format_arn(
                service="eks",
                resource="cluster",
                resource_name=settings.cluster_name,
                arn_format=ArnFormat.SLASH_RESOURCE_NAME,
            )
        ],
    )


@dataclass(frozen=True)
class FunctionParts:
    role: iam.Role
    log_group: logs.LogGroup
    policy: iam.Policy
    function: lambda_.Function
    access_entry: eks.CfnAccessEntry


def nodewright_function(
    scope: Construct,
    *,
    settings: Settings,
    layers: Layers,
    code: lambda_.Code,
    handler: str,
    description: str,
    memory_mb: int,
    timeout: Duration,
    environment: Mapping[str, str],
    statements: Sequence[iam.PolicyStatement],
    kubernetes_group: str,
    reserved_concurrency: int | None = None,
) -> FunctionParts:
    """Build the function's parts in `scope` (see the module docstring) and acknowledge the cdk-nag findings
    every such function has; findings of `statements` are the caller's to acknowledge on `policy`."""
    role = iam.Role(
        scope,
        "Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{description} (EKS cluster {settings.cluster_name})",
    )
    log_group = logs.LogGroup(scope, "Logs", retention=log_retention(settings), removal_policy=RemovalPolicy.DESTROY)
    # Writes only to its own log group (no logs:CreateLogGroup, no other groups).
    log_group.grant_write(role)
    policy = iam.Policy(scope, "Policy", statements=list(statements))
    policy.attach_to_role(role)
    function = lambda_.Function(
        scope,
        "Function",
        description=f"{description} for {settings.cluster_name}",
        runtime=RUNTIME,
        architecture=ARCHITECTURE,
        handler=handler,
        code=code,
        layers=[layers.core, layers.dependencies],
        role=role,
        memory_size=memory_mb,
        timeout=timeout,
        reserved_concurrent_executions=reserved_concurrency,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
        environment={**environment, aws_sdk.MODELS_ENV: build.LAYER_AWS_MODELS},
    )
    # The first invocation must find every permission in place, not only the role's default policy.
    function.node.add_dependency(policy)
    if settings.vpc is not None:
        attach_to_vpc(function, policy, settings.vpc)
    access_entry = eks.CfnAccessEntry(
        scope,
        "AccessEntry",
        cluster_name=settings.cluster_name,
        principal_arn=role.role_arn,
        type="STANDARD",
        kubernetes_groups=[kubernetes_group],
    )
    nag.acknowledge(
        role,
        "AwsSolutions-IAM5",
        "X-Ray's PutTraceSegments and PutTelemetryRecords do not support resource-level permissions; "
        "the CDK grants them on '*' for active tracing.",
        findings=["Resource::*"],
    )
    nag.acknowledge(
        function,
        "AwsSolutions-L1",
        "The functions run Python 3.11: the project requires it (requires-python <3.12) and the layers "
        "ship .pyc files compiled for 3.11, which no newer runtime would load.",
    )
    return FunctionParts(role, log_group, policy, function, access_entry)
