"""The provisioner Lambda: its code, execution role and least-privilege policy, logs, and cluster access.

The forwarder invokes it synchronously with a batch of pending pods; it reads the cluster, runs the
scheduling simulation and launches capacity with CreateFleet.

Sizing, and why:
- 1769 MB: the scheduling simulation is single-threaded CPU-bound Python, and 1769 MB is where Lambda
  gives a function one full vCPU; more memory would buy cores it cannot use. Clusters of more than 2,500
  nodes get more, for the Nodes it reads (`clusterNodes`, `infra.sizing`).
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
from infra.ownership import ec2_arn, nag_ec2_arn, request_tagged, resource_tagged, terminate_statement
from infra.sizing import provisioner_memory_mb
from nodewright import settings as env
from nodewright import tags

SOURCE = build.REPO_ROOT / "functions" / "provisioner"
HANDLER = "handler.handler"
TIMEOUT = Duration.seconds(120)
RESERVED_CONCURRENCY = 1
KUBERNETES_GROUP = "nodewright:provisioner"  # bound to a ClusterRole by the chart (rbac-functions.yaml)
POWERTOOLS_SERVICE_NAME = "nodewright-provisioner"
POWERTOOLS_METRICS_NAMESPACE = env.METRICS_NAMESPACE  # the metric namespace of every function and the dashboard
CATALOG_VARIABLE = "NODEWRIGHT_CATALOG"  # read by functions/provisioner/handler.py (live | snapshot)
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
            memory_mb=provisioner_memory_mb(settings.cluster_nodes),
            timeout=TIMEOUT,
            environment={
                **launch_environment(settings, table, node_role, instance_profile, POWERTOOLS_SERVICE_NAME),
                # Its Nodes and NodeClaims followed with watches in a warm container, as the planner's lists are.
                env.INCREMENTAL_READS: str(settings.incremental_reads).lower(),
            },
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
    """The settings of a function that launches capacity (the provisioner, the workflow's steps; IdentifyCandidate
    and LaunchReplacement read the spot-to-spot setting, as the planner does)."""
    environment = {
        env.CLUSTER: settings.cluster_name,
        env.TABLE: table.table_name,
        env.NODE_ROLE: node_role.role_name,
        env.INSTANCE_PROFILE: instance_profile.instance_profile_name,
        env.SPOT_TO_SPOT: str(settings.spot_to_spot).lower(),
        "POWERTOOLS_SERVICE_NAME": service_name,
        "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
    }
    if settings.node_roles:
        environment[env.NODE_ROLES] = ",".join(settings.node_role_names)
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
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "An EC2NodeClass may name any instance profile; reading it (iam:GetInstanceProfile) is how a function "
        "that resolves EC2NodeClasses checks that its role is one nodewright may pass. Instance profiles "
        f"nodewright creates for the node roles live under the path {INSTANCE_PROFILE_PATH} and are bounded by "
        "its cluster tag.",
        findings=[
            f"Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:instance-profile{path}*"
            for path in ("/", *([INSTANCE_PROFILE_PATH] if settings.node_roles else []))
        ],
    )
    if terminates:
        nag.acknowledge(
            policy,
            "AwsSolutions-IAM5",
            "ec2:TerminateInstances is granted on instance/* only where the instance carries nodewright's cluster "
            "and NodePool tags (the instance ids come from NodeClaims and events).",
            findings=[f"Resource::{nag_ec2_arn('instance')}"],
        )


def acknowledge_launch_policy(policy: iam.Policy, settings: Settings) -> None:
    """The cdk-nag findings of `provisioner_statements`, each with its reason."""
    acknowledge_read_policy(policy, settings)
    acknowledge_launch_statements(policy, settings)


def acknowledge_launch_statements(policy: iam.Policy, settings: Settings, terminates: bool = False) -> None:
    """The cdk-nag findings of `launch_statements`; with `terminates`, instance/* is acknowledged already (by
    `acknowledge_read_policy`'s termination)."""
    findings = [f"Resource::{nag_ec2_arn(kind)}" for kind in _EC2_ACCOUNT_RESOURCES + _TAGGED_ON_CREATE]
    if terminates:
        findings.remove(f"Resource::{nag_ec2_arn('instance')}")
    nag.acknowledge(
        policy,
        "AwsSolutions-IAM5",
        "Instances, volumes, network interfaces, fleets, spot requests and launch templates do not exist before "
        "they are created, so their ARNs end in '*'; each statement is bounded by nodewright's own tags "
        f"({tags.CLUSTER}={settings.cluster_name} and {tags.NODEPOOL}) in the request or on the resource, or by "
        f"the discovery tag ({DISCOVERY_TAG_KEY}) on subnets and security groups, or by ec2:CreateAction for "
        "tagging; images, snapshots and capacity reservations are only read by a launch.",
        findings=findings + [f"Resource::{nag_ec2_arn(kind, account=False)}" for kind in _EC2_ACCOUNTLESS_RESOURCES],
    )


# EC2 resource types a launch creates (instance, volume, network interface, fleet, spot request) or that
# nodewright creates for itself (launch-template). Requests for them must carry nodewright's tags.
_TAGGED_ON_CREATE = ("fleet", "instance", "volume", "network-interface", "spot-instances-request", "launch-template")
_LAUNCHED = _TAGGED_ON_CREATE[:-1]
# Resource types a launch uses without creating them (images and snapshots have no account in their ARN);
# subnets and security groups are further bound by the discovery tag.
_EC2_ACCOUNT_RESOURCES = ("subnet", "security-group", "capacity-reservation")
_EC2_ACCOUNTLESS_RESOURCES = ("image", "snapshot")
# Where the instance profiles nodewright creates for the extra node roles live (adapters/ec2_launcher).
INSTANCE_PROFILE_PATH = tags.INSTANCE_PROFILE_PATH


def _ami_parameter_patterns(settings: Settings) -> list[str]:
    version = settings.kubernetes_version
    if version is None:
        names = ["aws/service/eks/optimized-ami/*", "aws/service/bottlerocket/*"]
    else:
        names = [f"aws/service/eks/optimized-ami/{version}/*", f"aws/service/bottlerocket/aws-k8s-{version}*"]
    return [f"arn:<AWS::Partition>:ssm:<AWS::Region>::parameter/{name}" for name in names]


def node_role_arns(stack: Stack, settings: Settings, node_role_arn: str) -> list[str]:
    """The stack's own node role and the ones the `nodeRoles` context names (ARNs, or names under path /)."""
    extra = [
        role
        if role.startswith("arn:")
        else stack.format_arn(service="iam", region="", resource="role", resource_name=role)
        for role in settings.node_roles
    ]
    return [node_role_arn, *extra]


def instance_profile_statements(stack: Stack, settings: Settings) -> list[iam.PolicyStatement]:
    def profiles(path: str) -> str:
        return stack.format_arn(service="iam", region="", resource="instance-profile", resource_name=f"{path[1:]}*")

    statements = [
        iam.PolicyStatement(sid="ReadInstanceProfiles", actions=["iam:GetInstanceProfile"], resources=[profiles("/")])
    ]
    if not settings.node_roles:
        return statements
    ours = profiles(INSTANCE_PROFILE_PATH)
    cluster_request = {f"aws:RequestTag/{tags.CLUSTER}": settings.cluster_name}
    cluster_resource = {f"aws:ResourceTag/{tags.CLUSTER}": settings.cluster_name}
    return [
        *statements,
        iam.PolicyStatement(
            sid="CreateOnlyTaggedInstanceProfiles",
            actions=["iam:CreateInstanceProfile"],
            resources=[ours],
            conditions={"StringEquals": cluster_request},
        ),
        iam.PolicyStatement(
            sid="TagOnlyOwnInstanceProfiles",
            actions=["iam:TagInstanceProfile"],
            resources=[ours],
            conditions={"StringEquals": {**cluster_request, **cluster_resource}},
        ),
        iam.PolicyStatement(
            sid="AddRolesToOwnInstanceProfiles",
            actions=["iam:AddRoleToInstanceProfile"],
            resources=[ours],
            conditions={"StringEquals": cluster_resource},
        ),
    ]


def launch_statements(stack: Stack, settings: Settings, node_role_arn: str) -> list[iam.PolicyStatement]:
    """Launching nodes: CreateFleet / RunInstances on nodewright-tagged resources in the discovered network, its
    launch templates, tags while creating, and passing the node roles to EC2. The provisioner's, and the planner's
    for static NodePools (it launches their missing NodeClaims on its tick)."""
    launch = ["ec2:RunInstances", "ec2:CreateFleet"]
    return [
        iam.PolicyStatement(
            sid="LaunchOnlyNodewrightTaggedResources",
            actions=launch,
            resources=[ec2_arn(stack, kind) for kind in _LAUNCHED],
            conditions=request_tagged(settings),
        ),
        iam.PolicyStatement(
            sid="CreateOnlyNodewrightTaggedLaunchTemplates",
            actions=["ec2:CreateLaunchTemplate"],
            resources=[ec2_arn(stack, "launch-template")],
            conditions=request_tagged(settings),
        ),
        iam.PolicyStatement(
            sid="LaunchFromOwnLaunchTemplates",
            actions=launch,
            resources=[ec2_arn(stack, "launch-template")],
            conditions=resource_tagged(settings),
        ),
        iam.PolicyStatement(
            sid="LaunchIntoDiscoveredNetwork",
            actions=launch,
            resources=[ec2_arn(stack, "subnet"), ec2_arn(stack, "security-group")],
            conditions={"StringEquals": {f"aws:ResourceTag/{DISCOVERY_TAG_KEY}": settings.discovery_tag}},
        ),
        iam.PolicyStatement(
            # Read by a launch, never created by it.
            sid="LaunchWithImagesAndReservations",
            actions=launch,
            resources=[
                ec2_arn(stack, "image", account=False),
                ec2_arn(stack, "snapshot", account=False),
                ec2_arn(stack, "capacity-reservation"),
            ],
        ),
        iam.PolicyStatement(
            sid="TagOnlyWhileCreating",
            actions=["ec2:CreateTags"],
            resources=[ec2_arn(stack, kind) for kind in _TAGGED_ON_CREATE],
            conditions=request_tagged(settings, extra={"ec2:CreateAction": list(CREATE_ACTIONS)}),
        ),
        iam.PolicyStatement(
            sid="PassOnlyTheNodeRolesToEC2",
            actions=["iam:PassRole"],
            resources=node_role_arns(stack, settings, node_role_arn),
            conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
    ]


def provisioner_statements(stack: Stack, settings: Settings, node_role_arn: str) -> list[iam.PolicyStatement]:
    """Everything the provisioner may do in AWS, each statement as narrow as the API allows."""
    return [
        *launch_statements(stack, settings, node_role_arn),
        terminate_statement(stack, settings),
        iam.PolicyStatement(
            sid="DeleteOnlyNodewrightLaunchTemplates",
            actions=["ec2:DeleteLaunchTemplate"],
            resources=[ec2_arn(stack, "launch-template")],
            conditions=resource_tagged(settings),
        ),
        *catalog_statements(),
        ami_parameter_statement(stack, settings),
        describe_cluster_statement(stack, settings),
        *instance_profile_statements(stack, settings),
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
