"""Deployment settings, read from CDK context (`-c key=value` or cdk.json) and checked before anything is built.

Every error names the context key and shows how to pass it, because the person reading it is running
`cdk deploy` and should not have to open this file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CLUSTER_NAME = "clusterName"
KUBERNETES_VERSION = "kubernetesVersion"
DISCOVERY_TAG = "discoveryTag"
VPC_ID = "vpcId"
PRIVATE_SUBNET_IDS = "privateSubnetIds"
SECURITY_GROUP_ID = "securityGroupId"
STACK_NAME = "stackName"
CATALOG = "catalog"
CATALOG_MODES = ("live", "snapshot")

DEFAULT_STACK_NAME = "Nodewright"

# EKS cluster names: 1-100 characters, alphanumerics, hyphens and underscores, starting alphanumeric.
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")
_KUBERNETES_VERSION = re.compile(r"^1\.\d{1,3}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
# Tag values allow letters, digits, spaces and + - = . _ : / @ (up to 256 characters).
_TAG_VALUE = re.compile(r"^[\w\s+\-=.:/@]{1,256}$")


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

    @property
    def cluster_tag_key(self) -> str:
        """The ownership tag every instance, volume, fleet and launch template nodewright creates carries."""
        return f"kubernetes.io/cluster/{self.cluster_name}"

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
        return Settings(
            cluster_name=cluster,
            discovery_tag=discovery,
            kubernetes_version=version,
            vpc=_vpc_attachment(text(VPC_ID), text(PRIVATE_SUBNET_IDS), text(SECURITY_GROUP_ID)),
            stack_name=stack_name,
            catalog=catalog,
        )


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
