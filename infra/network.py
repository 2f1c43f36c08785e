"""Optional VPC attachment of every nodewright function, for clusters whose API endpoint is private.

Each function's network interfaces go into the given private subnets with the given security group (which
the cluster's security group must accept on 443). Lambda creates and manages those interfaces with the
function's own role, so every VPC-attached function needs the network-interface permissions of AWS's
AWSLambdaVPCAccessExecutionRole: create (here only in the given subnets with the given group), describe
interfaces and subnets (which take no resource ARN), delete, and assign or unassign private addresses.

The subnets need a route to the AWS APIs the functions call: a NAT gateway, or the VPC endpoints in
`ENDPOINTS` (interface endpoints, `com.amazonaws.<region>.<name>`, with private DNS; DynamoDB's is a gateway
endpoint). The Pricing API has endpoints in a few regions only; without one, deploy with `catalog=snapshot`.
IAM has no regional endpoint: with `nodeRoles`, creating the instance profiles for those roles needs a NAT.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from infra import nag
from infra.config import VpcAttachment

# Service endpoint names and who calls them.
ENDPOINTS = {
    "ec2": "instances, launch templates, subnets, security groups, images (provisioner, workflow, planner)",
    "ssm": "the public AMI parameters (provisioner, LaunchReplacement)",
    "sts": "EKS tokens: the presigned GetCallerIdentity every function sends to the cluster",
    "eks": "DescribeCluster: the endpoint and CA of the cluster (every function)",
    "states": "StartExecution of the disruption workflow (planner, interruption)",
    "dynamodb": "the state table (gateway endpoint; provisioner, workflow, interruption)",
    "pricing.api": "on-demand prices (provisioner with the live catalog; us-east-1, eu-central-1, ap-south-1 only)",
}
_STAR_ONLY = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]


def attach_to_vpc(function: lambda_.Function, policy: iam.Policy, vpc: VpcAttachment) -> None:
    """Put `function` into `vpc` and let its role manage exactly the interfaces Lambda creates for it."""
    stack = Stack.of(function)
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    cfn.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
        subnet_ids=list(vpc.subnet_ids), security_group_ids=[vpc.security_group_id]
    )

    def ec2(kind: str, name: str) -> str:
        return stack.format_arn(
            service="ec2", resource=kind, resource_name=name, arn_format=ArnFormat.SLASH_RESOURCE_NAME
        )

    interfaces = ec2("network-interface", "*")
    policy.add_statements(
        iam.PolicyStatement(
            sid="CreateInterfacesInTheGivenSubnets",
            actions=["ec2:CreateNetworkInterface"],
            resources=[
                interfaces,
                ec2("security-group", vpc.security_group_id),
                *(ec2("subnet", subnet) for subnet in vpc.subnet_ids),
            ],
        ),
        iam.PolicyStatement(
            sid="ManageFunctionInterfaces",
            actions=[
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
            resources=[interfaces],
        ),
        iam.PolicyStatement(sid="DescribeFunctionInterfaces", actions=_STAR_ONLY, resources=["*"]),
    )
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "Lambda names the network interfaces it creates for a VPC-attached function itself, so their ARNs "
        "cannot be known in advance (creation is limited to the given subnets and security group); "
        "ec2:DescribeNetworkInterfaces and ec2:DescribeSubnets take no resource ARN.",
        findings=[
            "Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*",
            "Resource::*",
        ],
    )
