"""Deployment settings, read from CDK context (`-c key=value` or cdk.json) and checked before anything is built.

Every error names the context key and shows how to pass it, because the person reading it is running
`cdk deploy` and should not have to open this file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nodewright import settings as env

CLUSTER_NAME = "clusterName"
KUBERNETES_VERSION = "kubernetesVersion"
DISCOVERY_TAG = "discoveryTag"
VPC_ID = "vpcId"
PRIVATE_SUBNET_IDS = "privateSubnetIds"
SECURITY_GROUP_ID = "securityGroupId"
STACK_NAME = "stackName"
CATALOG = "catalog"
CATALOG_MODES = ("live", "snapshot")
NODE_ROLES = "nodeRoles"
REBALANCE = "rebalance"
REBALANCE_MODES = env.REBALANCE_MODES
SPOT_TO_SPOT = "spotToSpotConsolidation"
NODE_REPAIR = "nodeRepair"
INCREMENTAL_READS = "incrementalReads"
ALARM_TOPIC = "alarmTopicArn"
LOG_RETENTION = "logRetentionDays"
# What CloudWatch Logs accepts as a retention period, in days, and the CDK's name for each.
LOG_RETENTION_DAYS = {
    1: "ONE_DAY", 3: "THREE_DAYS", 5: "FIVE_DAYS", 7: "ONE_WEEK", 14: "TWO_WEEKS", 30: "ONE_MONTH",
    60: "TWO_MONTHS", 90: "THREE_MONTHS", 120: "FOUR_MONTHS", 150: "FIVE_MONTHS", 180: "SIX_MONTHS",
    365: "ONE_YEAR", 400: "THIRTEEN_MONTHS", 545: "EIGHTEEN_MONTHS", 731: "TWO_YEARS", 1096: "THREE_YEARS",
    1827: "FIVE_YEARS", 2192: "SIX_YEARS", 2557: "SEVEN_YEARS", 2922: "EIGHT_YEARS", 3288: "NINE_YEARS",
    3653: "TEN_YEARS",
}  # fmt: skip
DEFAULT_LOG_RETENTION_DAYS = 30
RETAIN_TABLE = "retainTable"
CLUSTER_NODES = "clusterNodes"
OIDC_ISSUER = "oidcIssuer"
# Where the chart runs the forwarder: the Pod Identity association and the IRSA trust name this namespace and
# ServiceAccount, so they must be the chart's release namespace and serviceAccount name.
NAMESPACE = "namespace"
SERVICE_ACCOUNT = "serviceAccount"
DEFAULT_NAMESPACE = "nodewright"
DEFAULT_SERVICE_ACCOUNT = "nodewright-forwarder"

DEFAULT_STACK_NAME = "Nodewright"

# EKS cluster names: 1-100 characters, alphanumerics, hyphens and underscores, starting alphanumeric.
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")
_KUBERNETES_VERSION = re.compile(r"^1\.\d{1,3}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
# Tag values allow letters, digits, spaces and + - = . _ : / @ (up to 256 characters).
_TAG_VALUE = re.compile(r"^[\w\s+\-=.:/@]{1,256}$")
_ROLE_NAME = re.compile(r"^[\w+=,.@-]{1,64}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/([\w+=,.@/-]*/)?[\w+=,.@-]{1,64}$")
_OIDC_ISSUER = re.compile(r"^(https://)?(oidc\.eks\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/id/[0-9A-Fa-f]{8,64})$")
# A namespace is a DNS label; a ServiceAccount name a DNS subdomain.
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SERVICE_ACCOUNT = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[\w-]{1,256}$")


class ContextError(ValueError):
    """A context value is missing or malformed; the message says which key and how to pass it."""


def _how(key: str, example: str) -> str:
    return f'pass it with `npx cdk deploy -c {key}={example}` or set it under "context" in cdk.json'


@dataclass(frozen=True, slots=True)
class VpcAttachment:
    """Where the provisioner's network interfaces go when the cluster endpoint is private."""

    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_id: str


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the stack needs to know about the cluster it serves."""

    cluster_name: str
    discovery_tag: str
    kubernetes_version: str | None = None
    vpc: VpcAttachment | None = None
    stack_name: str = DEFAULT_STACK_NAME
    # Where the provisioner reads instance types and prices: None leaves the handler's default (live
    # EC2 and Pricing APIs); "snapshot" pins the shipped table (accounts without Pricing API access, and
    # the local world, whose spot prices are placeholders).
    catalog: str | None = None
    # IAM roles (names under path /, or ARNs) an EC2NodeClass may name besides the stack's own node role.
    node_roles: tuple[str, ...] = ()
    rebalance: str = "replace"
    spot_to_spot: bool = False
    # Karpenter's NodeRepair feature gate: replace nodes whose conditions stay unhealthy (on by default here).
    node_repair: bool = True
    # The planner keeps the cluster's lists in its warm container and reads only what changed (watches).
    incremental_reads: bool = True
    # An SNS topic the alarms notify instead of the stack's own.
    alarm_topic_arn: str | None = None
    log_retention_days: int = DEFAULT_LOG_RETENTION_DAYS
    retain_table: bool = True
    # The cluster's OIDC issuer (host/path, no scheme): the forwarder's role also trusts it (IRSA).
    oidc_issuer: str | None = None
    # The chart's release namespace and the forwarder's ServiceAccount (Pod Identity association, IRSA trust).
    namespace: str = DEFAULT_NAMESPACE
    service_account: str = DEFAULT_SERVICE_ACCOUNT
    # The number of nodes the cluster may reach: the planner's and provisioner's memory follow it (`infra.sizing`).
    cluster_nodes: int | None = None

    @property
    def node_role_names(self) -> tuple[str, ...]:
        """The names of `node_roles` (an ARN's last path segment)."""
        return tuple(role.rsplit("/", 1)[-1] for role in self.node_roles)

    @staticmethod
    def from_context(get: Callable[[str], Any]) -> Settings:
        """Read the settings through `get(key)` (e.g. `app.node.try_get_context`); raises ContextError."""

        def text(key: str) -> str | None:
            value = get(key)
            if value is None:
                return None
            if not isinstance(value, str | int | float):
                raise ContextError(f"context value {key} must be a string, got {type(value).__name__}")
            stripped = str(value).strip()
            return stripped or None

        cluster = text(CLUSTER_NAME)
        if cluster is None:
            raise ContextError(
                f"context value {CLUSTER_NAME} is missing: the name of the EKS cluster nodewright serves; "
                + _how(CLUSTER_NAME, "my-cluster")
            )
        if not _CLUSTER_NAME.match(cluster):
            raise ContextError(
                f"context value {CLUSTER_NAME}={cluster!r} is not an EKS cluster name "
                "(letters, digits, - and _, starting with a letter or digit, at most 100 characters)"
            )

        version = text(KUBERNETES_VERSION)
        if version is not None and not _KUBERNETES_VERSION.match(version):
            raise ContextError(
                f"context value {KUBERNETES_VERSION}={version!r} is not a Kubernetes minor version such as 1.33; "
                + _how(KUBERNETES_VERSION, "1.33")
                + ", or leave it out to allow the AMI parameters of every version"
            )

        discovery = text(DISCOVERY_TAG) or cluster
        if not _TAG_VALUE.match(discovery):
            raise ContextError(f"context value {DISCOVERY_TAG}={discovery!r} is not a valid EC2 tag value")

        stack_name = text(STACK_NAME) or DEFAULT_STACK_NAME
        catalog = text(CATALOG)
        if catalog is not None and catalog not in CATALOG_MODES:
            raise ContextError(
                f"context value {CATALOG}={catalog!r} must be one of {', '.join(CATALOG_MODES)}; "
                + _how(CATALOG, "snapshot")
            )
        rebalance = (text(REBALANCE) or "replace").lower()
        if rebalance not in REBALANCE_MODES:
            raise ContextError(
                f"context value {REBALANCE}={rebalance!r} must be one of {', '.join(REBALANCE_MODES)}; "
                + _how(REBALANCE, "drain")
            )
        return Settings(
            cluster_name=cluster,
            discovery_tag=discovery,
            kubernetes_version=version,
            vpc=_vpc_attachment(text(VPC_ID), text(PRIVATE_SUBNET_IDS), text(SECURITY_GROUP_ID)),
            stack_name=stack_name,
            catalog=catalog,
            node_roles=_node_roles(text(NODE_ROLES)),
            rebalance=rebalance,
            spot_to_spot=_flag(text(SPOT_TO_SPOT), SPOT_TO_SPOT, default=False),
            node_repair=_flag(text(NODE_REPAIR), NODE_REPAIR, default=True),
            incremental_reads=_flag(text(INCREMENTAL_READS), INCREMENTAL_READS, default=True),
            alarm_topic_arn=_topic(text(ALARM_TOPIC)),
            log_retention_days=_retention(text(LOG_RETENTION)),
            retain_table=_flag(text(RETAIN_TABLE), RETAIN_TABLE, default=True),
            oidc_issuer=_oidc_issuer(text(OIDC_ISSUER)),
            namespace=_kubernetes_name(text(NAMESPACE), NAMESPACE, DEFAULT_NAMESPACE, _NAMESPACE, "kube-system"),
            service_account=_kubernetes_name(
                text(SERVICE_ACCOUNT), SERVICE_ACCOUNT, DEFAULT_SERVICE_ACCOUNT, _SERVICE_ACCOUNT, "nodewright"
            ),
            cluster_nodes=_cluster_nodes(text(CLUSTER_NODES)),
        )


def _kubernetes_name(value: str | None, key: str, default: str, pattern: re.Pattern[str], example: str) -> str:
    if value is None:
        return default
    if not pattern.match(value):
        raise ContextError(
            f"context value {key}={value!r} is not a Kubernetes name (lower-case letters, digits and -); it must "
            "match the chart's release namespace / serviceAccount.name; " + _how(key, example)
        )
    return value


def _oidc_issuer(value: str | None) -> str | None:
    if value is None:
        return None
    match = _OIDC_ISSUER.match(value)
    if match is None:
        raise ContextError(
            f"context value {OIDC_ISSUER}={value!r} is not an EKS OIDC issuer; it is the cluster's "
            "identity.oidc.issuer (aws eks describe-cluster), "
            + _how(OIDC_ISSUER, "https://oidc.eks.us-east-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF")
        )
    return match.group(2)


def _cluster_nodes(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ContextError(
            f"context value {CLUSTER_NODES}={value!r} must be a positive whole number of nodes; "
            + _how(CLUSTER_NODES, "3000")
        )
    return int(value)


def _flag(value: str | None, key: str, *, default: bool) -> bool:
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ContextError(f"context value {key}={value!r} must be true or false; " + _how(key, str(not default).lower()))


def _node_roles(value: str | None) -> tuple[str, ...]:
    roles = tuple(r.strip() for r in (value or "").split(",") if r.strip())
    bad = [r for r in roles if not (_ROLE_NAME.match(r) or _ROLE_ARN.match(r))]
    if bad:
        raise ContextError(
            f"context value {NODE_ROLES}: {', '.join(bad)} is not an IAM role name or role ARN; give a "
            "comma-separated list of the node roles EC2NodeClasses may name in spec.role, e.g. "
            + _how(NODE_ROLES, "KarpenterNodeRole-my-cluster")
        )
    return roles


def _topic(value: str | None) -> str | None:
    if value is not None and not _TOPIC_ARN.match(value):
        raise ContextError(
            f"context value {ALARM_TOPIC}={value!r} is not an SNS topic ARN; "
            + _how(ALARM_TOPIC, "arn:aws:sns:us-east-1:123456789012:on-call")
        )
    return value


def _retention(value: str | None) -> int:
    if value is None:
        return DEFAULT_LOG_RETENTION_DAYS
    if not value.isdigit() or int(value) not in LOG_RETENTION_DAYS:
        raise ContextError(
            f"context value {LOG_RETENTION}={value!r} must be a retention CloudWatch Logs accepts: "
            f"{', '.join(map(str, LOG_RETENTION_DAYS))}; " + _how(LOG_RETENTION, "90")
        )
    return int(value)


def _vpc_attachment(vpc_id: str | None, subnets: str | None, security_group: str | None) -> VpcAttachment | None:
    given = {VPC_ID: vpc_id, PRIVATE_SUBNET_IDS: subnets, SECURITY_GROUP_ID: security_group}
    if not any(given.values()):
        return None
    missing = [key for key, value in given.items() if not value]
    if missing:
        examples = {
            VPC_ID: "vpc-0123456789abcdef0",
            PRIVATE_SUBNET_IDS: "subnet-0123456789abcdef0,subnet-0fedcba9876543210",
            SECURITY_GROUP_ID: "sg-0123456789abcdef0",
        }
        raise ContextError(
            "attaching the provisioner to a VPC needs all of vpcId, privateSubnetIds and securityGroupId; missing "
            + ", ".join(missing)
            + ": "
            + "; ".join(_how(key, examples[key]) for key in missing)
        )
    assert vpc_id is not None and subnets is not None and security_group is not None  # narrowed by `missing`
    if not _VPC_ID.match(vpc_id):
        raise ContextError(f"context value {VPC_ID}={vpc_id!r} is not a VPC id (vpc-...)")
    subnet_ids = tuple(s.strip() for s in subnets.split(",") if s.strip())
    bad = [s for s in subnet_ids if not _SUBNET_ID.match(s)]
    if bad or not subnet_ids:
        raise ContextError(
            f"context value {PRIVATE_SUBNET_IDS}={subnets!r} must be a comma-separated list of subnet ids "
            f"(subnet-...); not subnet ids: {', '.join(bad) or 'none given'}"
        )
    if not _SECURITY_GROUP_ID.match(security_group):
        raise ContextError(f"context value {SECURITY_GROUP_ID}={security_group!r} is not a security group id (sg-...)")
    return VpcAttachment(vpc_id=vpc_id, subnet_ids=subnet_ids, security_group_id=security_group)
