"""The in-cluster forwarder's AWS identity: an IAM role that may invoke the provisioner and publish the
forwarder's two metrics, and nothing else, for the forwarder's service account (`namespace` / `serviceAccount`
context values, default `nodewright/nodewright-forwarder`: the chart's release namespace and ServiceAccount), and
the provisioner's resource-based policy, which names that role as the one principal allowed to invoke it.

Two ways to hand the role to the pod, both from the chart (charts/nodewright):
- EKS Pod Identity (default): the stack creates the association. The Pod Identity Agent runs on EC2 nodes only,
  so the forwarder must run on a managed node group (or other EC2 nodes nodewright does not manage).
- IRSA, for Fargate or clusters without the Pod Identity Agent: with `oidcIssuer` (the cluster's OIDC issuer)
  the role also trusts that OIDC provider for this one service account; the chart then annotates the service
  account with the role (`serviceAccount.roleArn`). The OIDC provider itself must exist in IAM (eksctl utils
  associate-iam-oidc-provider, or the console's "Associate" on the cluster page).

A resource-based policy grants; it cannot take away what an identity policy of the same account grants (an
administrator with `lambda:*` can still invoke the function). So the real guard is that the payload is a
hint: whoever invokes the function can only make it look at pods that are pending in the API server, and it
sizes capacity from those pods, never from the payload.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import nag
from infra.config import Settings
from nodewright.settings import METRICS_NAMESPACE


class ForwarderAccess(Construct):
    """`role` and the Pod Identity `association` for the chart's ServiceAccount (settings.namespace and
    settings.service_account)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, provisioner: lambda_.IFunction
    ) -> None:
        super().__init__(scope, construct_id)
        cluster_name = settings.cluster_name
        namespace, service_account = settings.namespace, settings.service_account
        # Pod Identity assumes the role with session tags naming the cluster, namespace and service account;
        # requiring them means no other association in the account can hand this role to its pods.
        principal: iam.IPrincipal = (
            iam.ServicePrincipal("pods.eks.amazonaws.com")
            .with_session_tags()
            .with_conditions(
                {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-name": cluster_name,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    }
                }
            )
        )
        if settings.oidc_issuer is not None:
            provider = Stack.of(self).format_arn(
                service="iam", region="", resource="oidc-provider", resource_name=settings.oidc_issuer
            )
            irsa = iam.FederatedPrincipal(
                provider,
                {
                    "StringEquals": {
                        f"{settings.oidc_issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{settings.oidc_issuer}:aud": "sts.amazonaws.com",
                    }
                },
                "sts:AssumeRoleWithWebIdentity",
            )
            principal = iam.CompositePrincipal(principal, irsa)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=principal,
            description=f"nodewright forwarder in {namespace}/{service_account} on EKS cluster {cluster_name}",
            inline_policies={
                "InvokeProvisioner": iam.PolicyDocument(
                    statements=[
                        # The unqualified function ARN only: no versions or aliases, no other function.
                        iam.PolicyStatement(
                            sid="InvokeTheProvisioner",
                            actions=["lambda:InvokeFunction"],
                            resources=[provisioner.function_arn],
                        ),
                        # PutMetricData takes no resource ARN; the namespace condition is its only bound.
                        iam.PolicyStatement(
                            sid="PublishHeartbeatAndPendingAge",
                            actions=["cloudwatch:PutMetricData"],
                            resources=["*"],
                            conditions={"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
                        ),
                    ]
                )
            },
        )
        nag.acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "cloudwatch:PutMetricData supports no resource-level permissions; the statement is bound to the "
            f"{METRICS_NAMESPACE} namespace by the cloudwatch:namespace condition.",
            findings=["Resource::*"],
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
            namespace=namespace,
            service_account=service_account,
            role_arn=self.role.role_arn,
        )
