"""The provisioner Lambda: its code, execution role and least-privilege policy, logs, and cluster access.

The forwarder invokes it synchronously with a batch of pending pods; it reads the cluster, runs the
scheduling simulation and launches capacity with CreateFleet.

Sizing, and why:
- 1769 MB: the scheduling simulation is single-threaded CPU-bound Python, and 1769 MB is where Lambda
  gives a function one full vCPU; more memory would buy cores it cannot use.
- 120 s timeout: a batch can open several NodeClaims, each a CreateFleet call that may be retried on
  insufficient capacity or throttling; the forwarder's read timeout must be longer than this.
- Reserved concurrency 1: provisioning is serialized per cluster, as Karpenter's single provisioning loop
  is. Two overlapping batches that both saw the same pending pods would otherwise both launch for them;
  a throttled invocation is retried by the forwarder with back-off.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra import build, nag
from infra.config import Settings
from infra.function import describe_cluster_statement, nodewright_function
from infra.layers import Layers, code_from_bundle
from nodewright import settings as env

SOURCE = build.REPO_ROOT / "functions" / "provisioner"
HANDLER = "handler.handler"
MEMORY_MB = 1769
TIMEOUT = Duration.seconds(120)
RESERVED_CONCURRENCY = 1
KUBERNETES_GROUP = "nodewright:provisioner"  # bound to a ClusterRole by cluster/ (RBAC)
POWERTOOLS_SERVICE_NAME = "nodewright-provisioner"
POWERTOOLS_METRICS_NAMESPACE = "Nodewright"
CATALOG_VARIABLE = "NODEWRIGHT_CATALOG"  # read by functions/provisioner/handler.py (live | snapshot)
OWNED = "owned"
DISCOVERY_TAG_KEY = "karpenter.sh/discovery"
TABLE_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:ConditionCheckItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DescribeTable",
)
# The create calls whose tag specifications ec2:CreateTags may apply (it may tag nothing else).
CREATE_ACTIONS = ("RunInstances", "CreateFleet", "CreateLaunchTemplate")


class Provisioner(Construct):
    """`function`, its `role`, `log_group`, the `policy` and the EKS `access_entry`."""

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
        parts = nodewright_function(
            self,
            settings=settings,
            layers=layers,
            code=code_from_bundle(build.function_bundle(source, "provisioner")),
            handler=HANDLER,
            description="nodewright provisioner: pending pods to EC2 capacity",
            memory_mb=MEMORY_MB,
            timeout=TIMEOUT,
            environment=launch_environment(settings, table, node_role, instance_profile, POWERTOOLS_SERVICE_NAME),
            statements=provisioner_statements(stack, settings, node_role.role_arn),
            kubernetes_group=KUBERNETES_GROUP,
            reserved_concurrency=RESERVED_CONCURRENCY,
        )
        self.role, self.log_group, self.policy = parts.role, parts.log_group, parts.policy
        self.function, self.access_entry = parts.function, parts.access_entry
        # Item reads and writes on the table itself; no streams, no indexes, no table administration.
        table.grant(self.role, *TABLE_ACTIONS)
        acknowledge_launch_policy(self.policy, settings)


def launch_environment(
    settings: Settings,
    table: dynamodb.ITable,
    node_role: iam.IRole,
    instance_profile: iam.IInstanceProfile,
    service_name: str,
) -> dict[str, str]:
    """The settings of a function that launches capacity (the provisioner, the workflow's steps)."""
    environment = {
        env.CLUSTER: settings.cluster_name,
        env.TABLE: table.table_name,
        env.NODE_ROLE: node_role.role_name,
        env.INSTANCE_PROFILE: instance_profile.instance_profile_name,
        "POWERTOOLS_SERVICE_NAME": service_name,
        "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
    }
    if settings.catalog is not None:
        environment[CATALOG_VARIABLE] = settings.catalog
    return environment


def acknowledge_read_policy(policy: iam.Policy, settings: Settings, terminates: bool = False) -> None:
    """The cdk-nag findings of a function that reads the catalog and resolves EC2NodeClasses (`catalog_statements`,
    `ami_parameter_statement`) and, with `terminates`, terminates this cluster's instances."""
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "EC2 Describe* calls and pricing:GetProducts do not support resource-level permissions, so "
        "they can only be granted on '*'; no other action is granted on '*'.",
        findings=["Action::ec2:Describe*", "Resource::*"],
    )
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "The public AMI parameters are a hierarchy per Kubernetes version, OS variant and "
        "architecture; access is limited to the EKS optimized AMI and Bottlerocket subtrees.",
        findings=[f"Resource::{arn}" for arn in _ami_parameter_patterns(settings)],
    )
    if terminates:
        nag.acknowledge(
            policy,
            "AwsSolutions-IAM5",
            "ec2:TerminateInstances is granted on instance/* only where the instance carries this cluster's "
            "ownership tag (the instance ids come from NodeClaims and events).",
            findings=[f"Resource::{_nag_ec2_arn('instance')}"],
        )


def acknowledge_launch_policy(policy: iam.Policy, settings: Settings) -> None:
    """The cdk-nag findings of `provisioner_statements`, each with its reason."""
    acknowledge_read_policy(policy, settings)
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "Instances, volumes, fleets and launch templates do not exist before they are created, so "
        "their ARNs end in '*'; each statement is bounded by the cluster ownership tag "
        f"({settings.cluster_tag_key}=owned) in the request or on the resource, or by the "
        f"discovery tag ({DISCOVERY_TAG_KEY}) on subnets and security groups, or by "
        "ec2:CreateAction for tagging.",
        findings=[f"Resource::{_nag_ec2_arn(kind)}" for kind in _EC2_ACCOUNT_RESOURCES + _TAGGED_ON_CREATE]
        + [f"Resource::{_nag_ec2_arn(kind, account=False)}" for kind in _EC2_ACCOUNTLESS_RESOURCES],
    )


# EC2 resource types a launch creates and tags (instance, volume, fleet) or that nodewright creates
# for itself (launch-template). Requests for them must carry the cluster tag.
_TAGGED_ON_CREATE = ("fleet", "instance", "volume", "launch-template", "network-interface", "spot-instances-request")
# Resource types a launch uses without creating them under the cluster tag (images and snapshots have
# no account in their ARN); subnets and security groups are further bound by the discovery tag.
_EC2_ACCOUNT_RESOURCES = ("subnet", "security-group", "capacity-reservation")
_EC2_ACCOUNTLESS_RESOURCES = ("image", "snapshot")


def _nag_ec2_arn(kind: str, account: bool = True) -> str:
    """How cdk-nag prints `arn:<partition>:ec2:<region>:<account>:<kind>/*` (pseudo parameters in <>)."""
    owner = "<AWS::AccountId>" if account else ""
    return f"arn:<AWS::Partition>:ec2:<AWS::Region>:{owner}:{kind}/*"


def _ami_parameter_patterns(settings: Settings) -> list[str]:
    version = settings.kubernetes_version
    if version is None:
        names = ["aws/service/eks/optimized-ami/*", "aws/service/bottlerocket/*"]
    else:
        names = [f"aws/service/eks/optimized-ami/{version}/*", f"aws/service/bottlerocket/aws-k8s-{version}*"]
    return [f"arn:<AWS::Partition>:ssm:<AWS::Region>::parameter/{name}" for name in names]


def provisioner_statements(stack: Stack, settings: Settings, node_role_arn: str) -> list[iam.PolicyStatement]:
    """Everything the provisioner may do in AWS, each statement as narrow as the API allows."""

    def ec2(kind: str, account: bool = True) -> str:
        return stack.format_arn(
            service="ec2",
            account=None if account else "",
            resource=kind,
            resource_name="*",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )

    request_tagged = {"StringEquals": {f"aws:RequestTag/{settings.cluster_tag_key}": OWNED}}
    resource_tagged = {"StringEquals": {f"aws:ResourceTag/{settings.cluster_tag_key}": OWNED}}
    launch = ["ec2:RunInstances", "ec2:CreateFleet"]
    return [
        iam.PolicyStatement(
            sid="LaunchOnlyClusterTaggedCapacity",
            actions=launch,
            resources=[ec2("fleet"), ec2("instance"), ec2("volume")],
            conditions=request_tagged,
        ),
        iam.PolicyStatement(
            sid="CreateOnlyClusterTaggedLaunchTemplates",
            actions=["ec2:CreateLaunchTemplate"],
            resources=[ec2("launch-template")],
            conditions=request_tagged,
        ),
        iam.PolicyStatement(
            sid="LaunchFromOwnLaunchTemplates",
            actions=launch,
            resources=[ec2("launch-template")],
            conditions=resource_tagged,
        ),
        iam.PolicyStatement(
            sid="LaunchIntoDiscoveredNetwork",
            actions=launch,
            resources=[ec2("subnet"), ec2("security-group")],
            conditions={"StringEquals": {f"aws:ResourceTag/{DISCOVERY_TAG_KEY}": settings.discovery_tag}},
        ),
        iam.PolicyStatement(
            # Created only alongside an instance the first statement already requires to be tagged.
            sid="LaunchWithImagesInterfacesAndReservations",
            actions=launch,
            resources=[
                ec2("image", account=False),
                ec2("snapshot", account=False),
                ec2("network-interface"),
                ec2("spot-instances-request"),
                ec2("capacity-reservation"),
            ],
        ),
        iam.PolicyStatement(
            sid="TagOnlyWhileCreating",
            actions=["ec2:CreateTags"],
            resources=[ec2(kind) for kind in _TAGGED_ON_CREATE],
            conditions={"StringEquals": {"ec2:CreateAction": list(CREATE_ACTIONS)}},
        ),
        iam.PolicyStatement(
            sid="TerminateOnlyClusterInstances",
            actions=["ec2:TerminateInstances"],
            resources=[ec2("instance")],
            conditions=resource_tagged,
        ),
        iam.PolicyStatement(
            sid="DeleteOnlyClusterLaunchTemplates",
            actions=["ec2:DeleteLaunchTemplate"],
            resources=[ec2("launch-template")],
            conditions=resource_tagged,
        ),
        iam.PolicyStatement(
            sid="PassOnlyTheNodeRoleToEC2",
            actions=["iam:PassRole"],
            resources=[node_role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
        *catalog_statements(),
        ami_parameter_statement(stack, settings),
        describe_cluster_statement(stack, settings),
    ]


def catalog_statements() -> list[iam.PolicyStatement]:
    """Reading instance types, offerings, spot prices, subnets, security groups, images and instances (EC2's
    Describe calls take no resource-level permissions) and on-demand prices (the Pricing API)."""
    return [
        iam.PolicyStatement(sid="Describe", actions=["ec2:Describe*"], resources=["*"]),
        iam.PolicyStatement(sid="ReadPrices", actions=["pricing:GetProducts"], resources=["*"]),
    ]


def ami_parameter_statement(stack: Stack, settings: Settings) -> iam.PolicyStatement:
    """The public SSM parameters of the EKS-optimized and Bottlerocket AMIs (one Kubernetes version when set)."""
    version = settings.kubernetes_version
    names = (
        ["aws/service/eks/optimized-ami/*", "aws/service/bottlerocket/*"]
        if version is None
        else [f"aws/service/eks/optimized-ami/{version}/*", f"aws/service/bottlerocket/aws-k8s-{version}*"]
    )
    return iam.PolicyStatement(
        # GetParameters too: the launcher resolves an alias's architectures and variants in one call.
        sid="ReadPublicAmiParameters",
        actions=["ssm:GetParameter", "ssm:GetParameters"],
        resources=[
            stack.format_arn(
                service="ssm",
                account="",
                resource="parameter",
                resource_name=name,
                arn_format=ArnFormat.SLASH_RESOURCE_NAME,
            )
            for name in names
        ],
    )
