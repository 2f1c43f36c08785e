"""IAM conditions that bound nodewright to what it created itself: its own tag keys (`nodewright.tags`).

Every EC2 resource a launch creates must carry `nodewright.io/cluster=<cluster>` and a `nodewright.io/nodepool`
tag in the request; terminating an instance, tagging one after its launch, and deleting a launch template need
the same two tags on the resource. `kubernetes.io/cluster/<cluster>=owned` alone is not enough, because
managed node groups and Karpenter put it on their instances too.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam

from infra.config import Settings
from nodewright import tags


def request_tagged(settings: Settings, *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Conditions: the request tags the resource as this cluster's and one of its NodePools'."""
    return {
        "StringEquals": {f"aws:RequestTag/{tags.CLUSTER}": settings.cluster_name, **(extra or {})},
        "StringLike": {f"aws:RequestTag/{tags.NODEPOOL}": "*"},
    }


def resource_tagged(settings: Settings) -> dict[str, Any]:
    """Conditions: the resource carries this cluster's tag and a NodePool tag, as everything nodewright
    launches does."""
    return {
        "StringEquals": {f"aws:ResourceTag/{tags.CLUSTER}": settings.cluster_name},
        "StringLike": {f"aws:ResourceTag/{tags.NODEPOOL}": "*"},
    }


def ec2_arn(stack: Stack, kind: str, account: bool = True) -> str:
    """`arn:<partition>:ec2:<region>:<account>:<kind>/*` (images and snapshots have no account)."""
    return stack.format_arn(
        service="ec2",
        account=None if account else "",
        resource=kind,
        resource_name="*",
        arn_format=ArnFormat.SLASH_RESOURCE_NAME,
    )


def nag_ec2_arn(kind: str, account: bool = True) -> str:
    """How cdk-nag prints `ec2_arn(kind)` (pseudo parameters in <>)."""
    owner = "<AWS::AccountId>" if account else ""
    return f"arn:<AWS::Partition>:ec2:<AWS::Region>:{owner}:{kind}/*"


def terminate_statement(stack: Stack, settings: Settings) -> iam.PolicyStatement:
    """ec2:TerminateInstances on nodewright's own instances of this cluster only."""
    return iam.PolicyStatement(
        sid="TerminateOnlyNodewrightInstances",
        actions=["ec2:TerminateInstances"],
        resources=[ec2_arn(stack, "instance")],
        conditions=resource_tagged(settings),
    )
