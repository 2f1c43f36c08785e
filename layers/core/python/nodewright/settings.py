"""The settings every nodewright process reads from its environment, in one place.

The CDK app sets these on the Lambdas, the forwarder's Deployment sets its own, and the local world
exports them in `.localworld/env`. Reading happens only when a handler or program starts (never at import
time), and a missing or malformed value is an error that names the variable and what to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

CLUSTER = "NODEWRIGHT_CLUSTER"  # EKS cluster name (also the karpenter.sh/discovery tag value)
TABLE = "NODEWRIGHT_TABLE"  # DynamoDB table: idempotency, offering cache (ICE), locks
NODE_ROLE = "NODEWRIGHT_NODE_ROLE"  # IAM role name of the nodes
INSTANCE_PROFILE = "NODEWRIGHT_INSTANCE_PROFILE"  # instance profile holding NODE_ROLE
PROVISIONER_FUNCTION = "NODEWRIGHT_PROVISIONER_FUNCTION"  # name or ARN the forwarder invokes
STATE_MACHINE = "NODEWRIGHT_STATE_MACHINE"  # ARN of the disruption workflow
REGION = "AWS_REGION"
NODE_ROLES = "NODEWRIGHT_NODE_ROLES"  # comma-separated node roles an EC2NodeClass may name besides NODE_ROLE

# The CloudWatch namespace of every nodewright metric: the Lambdas' (Powertools reads it from
# POWERTOOLS_METRICS_NAMESPACE, which the stack sets to this) and the forwarder's two below.
METRICS_NAMESPACE = "nodewright"
FORWARDER_HEARTBEAT_METRIC = "ForwarderHeartbeat"
OLDEST_PENDING_POD_METRIC = "OldestPendingPodSeconds"

# The one DynamoDB table's key schema (partition `pk`, sort `sk`, TTL attribute `expires_at`). Kinds of
# item are told apart by `pk`: Powertools idempotency records (its own `pk`), unavailable offerings under
# pk "unavailable" with sk "<type>#<zone>#<capacity type>" (one consistent Query reads them all).
TABLE_PARTITION_KEY = "pk"
TABLE_SORT_KEY = "sk"
TABLE_TTL_ATTRIBUTE = "expires_at"


class SettingsError(RuntimeError):
    """A required environment variable is missing or malformed."""


def _required(env: Mapping[str, str], name: str, what: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise SettingsError(f"environment variable {name} is not set: set it to {what}")
    return value


SPOT_TO_SPOT = "NODEWRIGHT_SPOT_TO_SPOT"  # Karpenter's SpotToSpotConsolidation feature gate: true | false
NODE_REPAIR = "NODEWRIGHT_NODE_REPAIR"  # Karpenter's NodeRepair feature gate: true (default here) | false
CATALOG = "NODEWRIGHT_CATALOG"  # live (EC2 and Pricing APIs) | snapshot (the shipped price table)
# The planner and the provisioner follow their lists with watches: true (default) | false
INCREMENTAL_READS = "NODEWRIGHT_INCREMENTAL_READS"


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A true/false environment variable (`default` when unset); anything else names the variable."""
    value = env.get(name, "").strip().lower() or str(default).lower()
    if value not in ("true", "false"):
        raise SettingsError(f"environment variable {name} is {value!r}: set it to true or false")
    return value == "true"


def spot_to_spot(env: Mapping[str, str]) -> bool:
    """NODEWRIGHT_SPOT_TO_SPOT as a boolean (default false)."""
    return _switch(env, SPOT_TO_SPOT, default=False)


def node_repair(env: Mapping[str, str]) -> bool:
    """NODEWRIGHT_NODE_REPAIR as a boolean (default true)."""
    return _switch(env, NODE_REPAIR, default=True)


def incremental_reads(env: Mapping[str, str]) -> bool:
    """NODEWRIGHT_INCREMENTAL_READS as a boolean (default true): the planner lists the cluster once per warm
    container and then reads only what changed (`adapters.informer`), and so does the provisioner for its Nodes
    and (proven current with a consistent read) NodeClaims."""
    return _switch(env, INCREMENTAL_READS, default=True)


def state_machine(env: Mapping[str, str]) -> str:
    """NODEWRIGHT_STATE_MACHINE: the disruption state machine's ARN (the workflow's steps ask it who holds a node)."""
    return _required(env, STATE_MACHINE, "the ARN of the disruption state machine")


def catalog_mode(env: Mapping[str, str]) -> str:
    """NODEWRIGHT_CATALOG: live (default) or snapshot."""
    value = env.get(CATALOG, "").strip().lower() or "live"
    if value not in ("live", "snapshot"):
        raise SettingsError(f"environment variable {CATALOG} is {value!r}: set it to live or snapshot")
    return value


@dataclass(frozen=True, slots=True)
class PlannerSettings:
    """The planner: the cluster it plans for, the state machine it starts, the table holding the workflows' locks,
    the node role and profile its EC2NodeClasses name (to resolve them for drift), and the disruption switches."""

    cluster: str
    state_machine: str
    region: str
    table: str = ""
    node_role: str = ""
    instance_profile: str = ""
    spot_to_spot: bool = False
    catalog: str = "live"
    node_roles: tuple[str, ...] = ()  # further roles EC2NodeClasses may name (the stack's nodeRoles context)
    node_repair: bool = True
    incremental_reads: bool = True
    provisioner: str = ""  # the function the tick asks for CapacityBuffers' capacity ("": none)

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> PlannerSettings:
        env = os.environ if env is None else env
        return PlannerSettings(
            cluster=_required(env, CLUSTER, "the EKS cluster name"),
            state_machine=_required(env, STATE_MACHINE, "the ARN of the disruption state machine"),
            region=_required(env, REGION, "the AWS region, e.g. us-east-1"),
            table=_required(env, TABLE, "the DynamoDB table the stack created"),
            node_role=_required(env, NODE_ROLE, "the node IAM role name"),
            instance_profile=_required(env, INSTANCE_PROFILE, "the node instance profile name"),
            spot_to_spot=spot_to_spot(env),
            catalog=catalog_mode(env),
            node_roles=node_roles(env),
            node_repair=node_repair(env),
            incremental_reads=incremental_reads(env),
            provisioner=env.get(PROVISIONER_FUNCTION, ""),
        )


@dataclass(frozen=True, slots=True)
class ProvisionerSettings:
    """The provisioner function's settings, from its environment."""

    cluster: str
    table: str
    node_role: str
    instance_profile: str
    region: str
    node_roles: tuple[str, ...] = ()  # further roles EC2NodeClasses may name (the stack's nodeRoles context)
    incremental_reads: bool = True  # Nodes and NodeClaims followed with watches in a warm container

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> ProvisionerSettings:
        """Read the provisioner's settings (default: os.environ); raises SettingsError naming the variable."""
        env = os.environ if env is None else env
        return ProvisionerSettings(
            cluster=_required(env, CLUSTER, "the EKS cluster name"),
            table=_required(env, TABLE, "the DynamoDB table the stack created"),
            node_role=_required(env, NODE_ROLE, "the node IAM role name"),
            instance_profile=_required(env, INSTANCE_PROFILE, "the node instance profile name"),
            region=_required(env, REGION, "the AWS region, e.g. us-east-1"),
            node_roles=node_roles(env),
            incremental_reads=incremental_reads(env),
        )


def node_roles(env: Mapping[str, str]) -> tuple[str, ...]:
    """The comma-separated NODEWRIGHT_NODE_ROLES, as a tuple of names."""
    return tuple(r.strip() for r in env.get(NODE_ROLES, "").split(",") if r.strip())


@dataclass(frozen=True, slots=True)
class ForwarderSettings:
    """The forwarder's settings, from its environment."""

    cluster: str
    provisioner_function: str
    region: str

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> ForwarderSettings:
        env = os.environ if env is None else env
        return ForwarderSettings(
            cluster=_required(env, CLUSTER, "the EKS cluster name"),
            provisioner_function=_required(env, PROVISIONER_FUNCTION, "the provisioner Lambda's name or ARN"),
            region=_required(env, REGION, "the AWS region, e.g. us-east-1"),
        )


REBALANCE = "NODEWRIGHT_REBALANCE"  # what a rebalance recommendation does: replace | drain | ignore
ACCOUNT = "NODEWRIGHT_ACCOUNT"  # the stack's account: interruption events of any other are refused
REBALANCE_MODES = ("replace", "drain", "ignore")  # the same as nodewright.interruption.decide.REBALANCE_MODES


@dataclass(frozen=True, slots=True)
class InterruptionSettings:
    """The interruption Lambda's settings. `rebalance`: replace (default), drain or ignore; `account` and `region`:
    where the events it acts on must come from."""

    cluster: str
    table: str
    state_machine: str
    region: str
    account: str
    rebalance: str = "replace"

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> InterruptionSettings:
        """Read the interruption handler's settings (default: os.environ); raises SettingsError naming the
        variable."""
        env = os.environ if env is None else env
        rebalance = env.get(REBALANCE, "").strip().lower() or "replace"
        if rebalance not in REBALANCE_MODES:
            raise SettingsError(
                f"environment variable {REBALANCE} is {env.get(REBALANCE)!r}: set it to one of "
                f"{', '.join(REBALANCE_MODES)} (or leave it unset for replace)"
            )
        return InterruptionSettings(
            cluster=_required(env, CLUSTER, "the EKS cluster name"),
            table=_required(env, TABLE, "the DynamoDB table the stack created"),
            state_machine=_required(env, STATE_MACHINE, "the disruption state machine's ARN"),
            region=_required(env, REGION, "the AWS region, e.g. us-east-1"),
            account=_required(env, ACCOUNT, "the AWS account id of the stack (the CDK sets it)"),
            rebalance=rebalance,
        )
