"""The identity of the nodes nodewright launches: an IAM role, its instance profile, and the EKS access
entry of type EC2_LINUX through which kubelets with that role join the cluster."""

from __future__ import annotations

from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra import nag

# What an EKS worker needs and nothing nodewright-specific: join and describe the cluster, pull images
# (pull only, not list/describe repositories), run the VPC CNI, and be reachable by SSM for debugging.
NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)


class NodeIdentity(Construct):
    """`role`, `instance_profile` and the access entry for `cluster_name`."""

    def __init__(self, scope: Construct, construct_id: str, *, cluster_name: str) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"Nodes launched by nodewright for EKS cluster {cluster_name}",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(name) for name in NODE_MANAGED_POLICIES],
        )
        nag.acknowledge(
            self.role,
            "AwsSolutions-IAM4",
            "The node role uses the AWS managed policies EKS documents for worker nodes; AWS keeps them in "
            "step with what kubelet, the VPC CNI and image pulls need, which a copy here would not be.",
            findings=[f"Policy::arn:<AWS::Partition>:iam::aws:policy/{name}" for name in NODE_MANAGED_POLICIES],
        )
        self.instance_profile = iam.InstanceProfile(self, "InstanceProfile", role=self.role)
        self.access_entry = eks.CfnAccessEntry(
            self,
            "AccessEntry",
            cluster_name=cluster_name,
            principal_arn=self.role.role_arn,
            type="EC2_LINUX",
        )
