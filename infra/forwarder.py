"""The in-cluster forwarder's AWS identity: an IAM role for EKS Pod Identity that may invoke the
provisioner and nothing else, associated with the forwarder's service account, and the provisioner's
resource-based policy, which names that role as the one principal allowed to invoke it.

A resource-based policy grants; it cannot take away what an identity policy of the same account grants (an
administrator with `lambda:*` can still invoke the function). So the real guard is that the payload is a
hint: whoever invokes the function can only make it look at pods that are pending in the API server, and it
sizes capacity from those pods, never from the payload.
"""

from __future__ import annotations

from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

NAMESPACE = "nodewright"
SERVICE_ACCOUNT = "nodewright-forwarder"


class ForwarderAccess(Construct):
    """`role` and the Pod Identity `association` for `nodewright/nodewright-forwarder`."""

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster_name: str, provisioner: lambda_.IFunction
    ) -> None:
        super().__init__(scope, construct_id)
        # Pod Identity assumes the role with session tags naming the cluster, namespace and service account;
        # requiring them means no other association in the account can hand this role to its pods.
        principal = (
            iam.ServicePrincipal("pods.eks.amazonaws.com")
            .with_session_tags()
            .with_conditions(
                {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-name": cluster_name,
                        "aws:RequestTag/kubernetes-namespace": NAMESPACE,
                        "aws:RequestTag/kubernetes-service-account": SERVICE_ACCOUNT,
                    }
                }
            )
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=principal,
            description=f"nodewright forwarder in {NAMESPACE}/{SERVICE_ACCOUNT} on EKS cluster {cluster_name}",
            inline_policies={
                "InvokeProvisioner": iam.PolicyDocument(
                    statements=[
                        # The unqualified function ARN only: no versions or aliases, no other function.
                        iam.PolicyStatement(
                            sid="InvokeTheProvisioner",
                            actions=["lambda:InvokeFunction"],
                            resources=[provisioner.function_arn],
                        )
                    ]
                )
            },
        )
        # Only this role, through the function's own policy: no other account or service can be granted it by
        # an identity policy alone.
        self.permission = lambda_.CfnPermission(
            self,
            "InvokedOnlyByTheForwarder",
            action="lambda:InvokeFunction",
            function_name=provisioner.function_arn,
            principal=self.role.role_arn,
        )
        self.association = eks.CfnPodIdentityAssociation(
            self,
            "PodIdentity",
            cluster_name=cluster_name,
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            role_arn=self.role.role_arn,
        )
