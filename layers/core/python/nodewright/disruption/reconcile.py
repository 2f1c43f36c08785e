"""Level-triggered reconciliation: what is, against what should be, repaired on every planner tick.

Nothing in a serverless design lives long enough to remember what it was doing, so every tick compares the cluster
and EC2 with what the live leases say is going on, and names each difference with its repair:

- `restorations`: a node carrying nodewright's `karpenter.sh/disrupted` taint or cordon with no live lease behind it
  (its execution died, timed out or was stopped without its rollback) is given back: taint and cordon off. A node
  whose NodeClaim is being deleted is left tainted: it must go, and its `Deleted` workflow is (re)started instead
  (`termination.deletions`).
- `lost_instances`: a launched NodeClaim whose instance EC2 reports terminated or shutting-down, or no longer knows
  `GONE_GRACE_SECONDS` after the claim was created, is deleted with its Node (Karpenter's NodeClaim garbage
  collection: nothing is left to drain), unless its Node is still Ready (a kubelet still posts status, so the
  instance is not gone whatever EC2 says: Karpenter's garbage collection keeps it too, and it is forgotten once the
  node lifecycle controller marks the Node not Ready); one whose instance is stopping or stopped gets the forceful
  `InstanceStopping` workflow its (lost) state-change event would have started.

Pure: the fleet, the NodeClaims under a live lease, the instances EC2 reported and the time in; repairs and commands
with their reasons out.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from nodewright.disruption.commands import INSTANCE_STOPPING, DisruptionCommand
from nodewright.disruption.fleet import FleetNode
from nodewright.ports import Instance

# EC2's DescribeInstances is eventually consistent: a claim's instance may be unknown to it for a moment after
# launch. Karpenter's garbage collection waits for the claim to be launched; here a claim this old whose instance EC2
# does not know has lost it.
GONE_GRACE_SECONDS = 300
RESTORE = "restore"
FORGET = "forget"
_GONE_STATES = frozenset({"terminated", "shutting-down"})
_STOPPING_STATES = frozenset({"stopping", "stopped"})


@dataclass(frozen=True, slots=True)
class Repair:
    """One difference and its repair: `restore` (untaint and uncordon the node) or `forget` (delete the Node and the
    NodeClaim of an instance that is gone)."""

    kind: str
    nodeclaim: str
    node: str
    reason: str


def restorations(fleet: Sequence[FleetNode], leased: Collection[str], why_void: Mapping[str, str]) -> list[Repair]:
    """The nodes to give back: tainted or cordoned by nodewright, no live lease on their NodeClaim, not being
    deleted. `why_void`: NodeClaim -> why its lease no longer holds (for the reason; absent: it had none)."""
    out = []
    for member in fleet:
        if not member.node or member.deleting or member.nodeclaim in leased:
            continue
        if not (member.tainted or member.cordoned):
            continue
        what = " and ".join(w for w, on in (("tainted", member.tainted), ("cordoned", member.cordoned)) if on)
        because = why_void.get(member.nodeclaim) or "no execution holds it"
        out.append(Repair(RESTORE, member.nodeclaim, member.node, f"{what} for a disruption, but {because}"))
    return out


def lost_instances(
    fleet: Sequence[FleetNode], instances: Mapping[str, Instance], now: float
) -> tuple[list[Repair], list[DisruptionCommand]]:
    """(the NodeClaims to forget, whose instance is gone; the InstanceStopping commands for instances stopping or
    stopped). `instances`: what EC2 reported for the fleet's instance ids, by id (unknown ids left out). A claim whose
    Node is Ready is never forgotten (pkg/controllers/nodeclaim/garbagecollection: "we know that the kubelet process
    is still running if the Node Ready condition is true")."""
    forget: list[Repair] = []
    stopping: list[DisruptionCommand] = []
    for member in fleet:
        if not member.instance_id:
            continue
        instance = instances.get(member.instance_id)
        if member.ready and (instance is None or instance.state in _GONE_STATES):
            continue  # a live kubelet: EC2's word is not enough to delete the Node under it
        if instance is None:
            if now - member.created_at >= GONE_GRACE_SECONDS:
                why = f"EC2 no longer knows instance {member.instance_id}"
                forget.append(Repair(FORGET, member.nodeclaim, member.node, why))
        elif instance.state in _GONE_STATES:
            why = f"instance {member.instance_id} is {instance.state}"
            forget.append(Repair(FORGET, member.nodeclaim, member.node, why))
        elif instance.state in _STOPPING_STATES and not member.deleting:
            stopping.append(_stopping(member, instance, now))
    return forget, stopping


def _stopping(member: FleetNode, instance: Instance, now: float) -> DisruptionCommand:
    """What the lost state-change event would have asked for; named per tick minute, so a failed attempt is tried
    again at the next tick under a new name (the lease keeps two attempts from running at once)."""
    return DisruptionCommand(
        nodeclaim=member.nodeclaim,
        node=member.node,
        instance_id=member.instance_id,
        reason=INSTANCE_STOPPING,
        forceful=True,
        trigger=f"reconcile:{instance.state}:{math.floor(now / 60)}",
        requested_at=now,
        deadline=now,
        method="reconcile",
    )
