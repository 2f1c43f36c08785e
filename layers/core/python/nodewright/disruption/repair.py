"""Node repair as Karpenter v1.14 does it (`pkg/controllers/node/health`, with the AWS provider's repair policies).

A node whose condition matches a repair policy (the kubelet's Ready False or Unknown, or one of the EKS Node
Monitoring Agent's conditions False) for longer than the policy's toleration is replaced forcefully: budgets and
do-not-disrupt do not hold it back, and its NodeClaim's termination timestamp (`karpenter.sh/nodeclaim-termination-
timestamp`) is set to now, so the drain deletes its pods at once instead of waiting on PodDisruptionBudgets. Karpenter's
guard holds: no node of a NodePool is repaired while more of the pool's nodes are unhealthy (any policy condition
matching, however long it has held) than 20 % of them, rounded up, so that a cluster-wide fault (a bad AMI, a network
outage) does not replace every node at once.

Pure: the fleet, the policies and the time in; what to repair, what waits and why, and the unhealthy pools out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.disruption.fleet import FleetNode, NodeCondition
from nodewright.model.conditions import parse_rfc3339

# Karpenter's allowedUnhealthyPercent, rounded up as a PodDisruptionBudget's maxUnavailable is.
ALLOWED_UNHEALTHY_PERCENT = 20
# The NodeClaim annotation holding when its termination grace period ends (Karpenter's
# NodeClaimTerminationTimestampAnnotationKey): repair sets it to now, so the drain deletes what it would evict.
TERMINATION_TIMESTAMP_ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"
# Karpenter's event reason when the guard holds a repair back.
REPAIR_BLOCKED = "NodeRepairBlocked"


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A node condition type and status that make a node unhealthy once they have held `toleration_seconds`."""

    condition: str
    status: str
    toleration_seconds: int


# The AWS provider's RepairPolicies (v1.14.1 `pkg/cloudprovider/cloudprovider.go`): the kubelet's Ready condition,
# and the conditions the EKS Node Monitoring Agent reports.
AWS_REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", 30 * 60),
    RepairPolicy("Ready", "Unknown", 30 * 60),
    RepairPolicy("AcceleratedHardwareReady", "False", 10 * 60),
    RepairPolicy("StorageReady", "False", 30 * 60),
    RepairPolicy("NetworkingReady", "False", 30 * 60),
    RepairPolicy("KernelReady", "False", 30 * 60),
    RepairPolicy("ContainerRuntimeReady", "False", 30 * 60),
)


@dataclass(frozen=True, slots=True)
class Unhealthy:
    """The condition that makes a node unhealthy: its type and status, since when, and when its toleration ends."""

    condition: str
    status: str
    since: float
    due: float

    def describe(self, now: float) -> str:
        """`Ready=Unknown for 31m0s (toleration 30m0s)`: what the dry run and the events say."""
        toleration = _span(self.due - self.since)
        return f"{self.condition}={self.status} for {_span(now - self.since)} (toleration {toleration})"


@dataclass(frozen=True, slots=True)
class Repair:
    """A node to replace now: its fleet member, the condition that made it unhealthy, and the termination timestamp
    its NodeClaim gets (now, or an earlier one it already carries)."""

    member: FleetNode
    unhealthy: Unhealthy
    terminate_at: float


@dataclass
class Repairs:
    """One tick's repairs. `waiting`: unhealthy nodes whose toleration has not ended (NodeClaim -> why); `held`:
    nodes the guard holds back (NodeClaim -> the sentence of Karpenter's NodeRepairBlocked event); `unhealthy_pools`:
    NodePool -> (unhealthy nodes, nodes) for each pool over the threshold."""

    due: list[Repair] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)
    unhealthy_pools: dict[str, tuple[int, int]] = field(default_factory=dict)


def unhealthy(conditions: Sequence[NodeCondition], policies: Sequence[RepairPolicy]) -> Unhealthy | None:
    """The node's matching condition whose toleration ends first (Karpenter's findUnhealthyConditions), or None.
    A condition with no transition time counts from 0, so it is due at once."""
    found: Unhealthy | None = None
    by_type = {c.type: c for c in conditions}
    for policy in policies:
        condition = by_type.get(policy.condition)
        if condition is None or condition.status != policy.status:
            continue
        due = condition.since + policy.toleration_seconds
        if found is None or due < found.due:
            found = Unhealthy(condition.type, condition.status, condition.since, due)
    return found


def threshold(nodes: int) -> int:
    """How many of a pool's `nodes` may be unhealthy while it still repairs: 20 %, rounded up."""
    return math.ceil(nodes * ALLOWED_UNHEALTHY_PERCENT / 100)


def repairs(fleet: Sequence[FleetNode], now: float, policies: Sequence[RepairPolicy] = AWS_REPAIR_POLICIES) -> Repairs:
    """Inputs: the fleet, the time, the repair policies. Output: see `Repairs`. Only registered nodes not already
    being deleted are repaired (a deleted NodeClaim is the termination's: `termination.deletions`). Invariant: no
    NodeClaim of a pool over its threshold is in `due`."""
    out = Repairs()
    members: dict[str, list[FleetNode]] = {}
    found: dict[str, Unhealthy] = {}
    for member in fleet:
        if not member.registered:
            continue
        members.setdefault(member.nodepool, []).append(member)
        condition = unhealthy(member.node_conditions, policies)
        if condition is not None:
            found[member.nodeclaim] = condition
    for pool, nodes in sorted(members.items()):
        count = sum(1 for m in nodes if m.nodeclaim in found)
        over = count > threshold(len(nodes))
        if over:
            out.unhealthy_pools[pool] = (count, len(nodes))
        for member in nodes:
            condition = found.get(member.nodeclaim)
            if condition is None or member.deleting:
                continue
            if now < condition.due:
                out.waiting[member.nodeclaim] = f"unhealthy: {condition.describe(now)}; repaired when it ends"
            elif over:
                out.held[member.nodeclaim] = (
                    f"more than {ALLOWED_UNHEALTHY_PERCENT}% nodes are unhealthy in the nodepool"
                    f" ({count} of {len(nodes)} in NodePool {pool})"
                )
            else:
                out.due.append(Repair(member, condition, _terminate_at(member.annotations, now)))
    return out


def _terminate_at(annotations: Mapping[str, str], now: float) -> float:
    """Now, unless the NodeClaim carries an earlier termination timestamp (Karpenter keeps one that has passed)."""
    earlier = parse_rfc3339(annotations.get(TERMINATION_TIMESTAMP_ANNOTATION))
    return earlier if earlier is not None and earlier < now else now


def _span(seconds: float) -> str:
    """A Go-style duration (`31m0s`, `1h2m3s`) of whole seconds, as Karpenter's messages print them."""
    total = max(int(seconds), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
