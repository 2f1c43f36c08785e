"""Termination as Karpenter does it: what a deletion asks for, and which instances no NodeClaim accounts for.

- A NodeClaim or Node being deleted (`kubectl delete`, or the API server's garbage collector once the claim's
  NodePool is gone: claims name their NodePool as owner) is held by nodewright's termination finalizer until
  its node is drained and its instance terminated. Karpenter's termination controllers do that in place; here
  the planner starts the disruption workflow for it, forceful as a deletion is (budgets and do-not-disrupt do
  not hold it back; the drain respects PodDisruptionBudgets until the NodeClaim's terminationGracePeriod,
  counted from the deletion, has passed), and the workflow's last step takes the finalizer off.
- Instance garbage collection (Karpenter AWS `pkg/controllers/nodeclaim/garbagecollection`): an instance tagged
  as this cluster's nodewright capacity (`nodewright.tags.is_owned`: `nodewright.io/cluster=<cluster>` and a
  `nodewright.io/nodepool` key, never Karpenter's tags, so neither side collects the other's), launched more
  than `GC_GRACE_SECONDS` ago, that no NodeClaim records (status.providerID) or names (the instance's
  `nodewright.io/nodeclaim` tag) is terminated, and a Node for it deleted.

Pure: the fleet, the instances and the time in; commands and instances out.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from nodewright import tags
from nodewright.disruption.commands import DELETED, DisruptionCommand
from nodewright.disruption.fleet import FleetNode
from nodewright.interruption.ownership import parse_provider_id
from nodewright.ports import Instance

# Karpenter AWS leaves an instance this long after launch before it may be collected: the NodeClaim that
# launched it records the instance moments after CreateFleet answers.
GC_GRACE_SECONDS = 30


def deletions(fleet: Sequence[FleetNode], leased: Collection[str], now: float) -> list[DisruptionCommand]:
    """A forceful `Deleted` command for each NodeClaim being deleted (or whose Node is), unless a live lease holds it
    already: that workflow takes the node away, or gives it back (rollback) and a later tick starts this one. Each
    attempt has its own execution (the trigger is the deletion's time and the tick's minute): an attempt that failed
    is followed by a fresh one at the next tick, and the planner takes the lease before starting it, so two attempts
    never run at once."""
    out = []
    for member in fleet:
        if not member.deleting or member.nodeclaim in leased:
            continue
        deleted_at = member.deleted_at or now
        out.append(
            DisruptionCommand(
                nodeclaim=member.nodeclaim,
                node=member.node,
                instance_id=member.instance_id,
                reason=DELETED,
                forceful=True,
                trigger=f"deleted:{deleted_at:.0f}:{math.floor(now / 60)}",
                requested_at=deleted_at,
            )
        )
    return out


def leaked(instances: Sequence[Instance], nodeclaims: Sequence[Mapping[str, Any]], now: float) -> list[Instance]:
    """The instances no NodeClaim accounts for, launched more than `GC_GRACE_SECONDS` ago, by instance id."""
    names: set[str] = set()
    recorded: set[str] = set()
    for claim in nodeclaims:
        names.add(str((claim.get("metadata") or {}).get("name") or ""))
        parsed = parse_provider_id(str((claim.get("status") or {}).get("providerID") or ""))
        if parsed is not None:
            recorded.add(parsed[1])
    names.discard("")
    return sorted(
        (
            i
            for i in instances
            if i.id not in recorded
            and i.tags.get(tags.NODECLAIM) not in names
            and now - i.launch_time > GC_GRACE_SECONDS
        ),
        key=lambda i: i.id,
    )
