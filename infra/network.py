"""Optional VPC attachment of the provisioner, for clusters whose API endpoint is private.

The function's network interfaces go into the given private subnets with the given security group
(which the cluster's security group must accept on 443). Those subnets need a route to the AWS APIs the
function calls (EC2, SSM, Pricing, DynamoDB, STS, EKS): a NAT gateway or VPC endpoints.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from infra import nag
from infra.config import VpcAttachment


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
    )
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "Lambda names the network interfaces it creates for a VPC-attached function itself, so their ARNs "
        "cannot be known in advance; creation is limited to the given subnets and security group.",
        findings=["Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*"],
    )
