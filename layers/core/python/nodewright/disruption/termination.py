"""Termination as Karpenter does it: what a deletion asks for, and which instances no NodeClaim accounts for.

- A NodeClaim or Node being deleted (`kubectl delete`, or the API server's garbage collector once the claim's
  NodePool is gone: claims name their NodePool as owner) is held by nodewright's termination finalizer until
  its node is drained and its instance terminated. Karpenter's termination controllers do that in place; here
  the planner starts the disruption workflow for it, forceful as a deletion is (budgets and do-not-disrupt do
  not hold it back; the drain respects PodDisruptionBudgets until the NodeClaim's own terminationGracePeriod,
  counted from the deletion, is about to pass: each pod is then deleted its own terminationGracePeriodSeconds
  before that deadline, `drain.drain_round`), and the workflow's last step deletes every Node with the claim's
  providerID and then the NodeClaim, taking the finalizers off.
- Instance garbage collection by providerID (Karpenter AWS `pkg/controllers/nodeclaim/garbagecollection`): an
  instance tagged as this cluster's nodewright capacity (`nodewright.tags.is_owned`: `nodewright.io/cluster=<cluster>`
  and a `nodewright.io/nodepool` key, never Karpenter's tags, so neither side collects the other's), launched more
  than `GC_GRACE_SECONDS` ago, that no NodeClaim records (status.providerID) is terminated, and a Node for it
  deleted, unless its `nodewright.io/nodeclaim` tag names a NodeClaim that records no instance at all: the
  provisioner that launched it died after CreateFleet, before recording it, and the NodeClaim adopts it (a second
  launch for the same pods is what adopting avoids). An instance whose NodeClaim records another instance is
  terminated: a NodeClaim has one instance, and the one it records is the one it keeps.

Pure: the fleet, the instances and the time in; commands and instances out.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright import tags
from nodewright.disruption.commands import DELETED, DisruptionCommand
from nodewright.disruption.fleet import FleetNode
from nodewright.disruption.repair import TERMINATION_TIMESTAMP_ANNOTATION
from nodewright.interruption.ownership import parse_provider_id
from nodewright.model.conditions import parse_rfc3339
from nodewright.ports import Instance

# Karpenter AWS leaves an instance this long after launch before it may be collected: the NodeClaim that
# launched it records the instance moments after CreateFleet answers.
GC_GRACE_SECONDS = 30
_ADOPTABLE = frozenset({"pending", "running"})


def deletions(fleet: Sequence[FleetNode], leased: Collection[str], now: float) -> list[DisruptionCommand]:
    """A forceful `Deleted` command for each NodeClaim being deleted (or whose Node is), unless a live lease holds it
    already: that workflow takes the node away, or gives it back (rollback) and a later tick starts this one. Each
    attempt has its own execution (the trigger is the deletion's time and the tick's minute): an attempt that failed
    is followed by a fresh one at the next tick, and the planner takes the lease before starting it, so two attempts
    never run at once. The deadline is the NodeClaim's termination timestamp when it carries one (node repair sets
    it to the time of the repair, as Karpenter's health controller does); otherwise its terminationGracePeriod from
    the deletion bounds the drain (`identify`)."""
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
                deadline=parse_rfc3339(member.annotations.get(TERMINATION_TIMESTAMP_ANNOTATION)),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class InstanceGC:
    """What instance garbage collection does: the instances to terminate (by id), and NodeClaim -> the instance it
    adopts (tagged with its name, while it records none)."""

    terminate: list[Instance] = field(default_factory=list)
    adopt: dict[str, Instance] = field(default_factory=dict)


def instance_gc(instances: Sequence[Instance], nodeclaims: Sequence[Mapping[str, Any]], now: float) -> InstanceGC:
    """Garbage collection by providerID (module doc), over instances launched more than `GC_GRACE_SECONDS` ago."""
    records: dict[str, str] = {}  # NodeClaim -> the instance it records ("" for none)
    for claim in nodeclaims:
        name = str((claim.get("metadata") or {}).get("name") or "")
        parsed = parse_provider_id(str((claim.get("status") or {}).get("providerID") or ""))
        if name:
            records[name] = parsed[1] if parsed is not None else ""
    recorded = set(records.values())
    out = InstanceGC()
    # The oldest first: of two unrecorded launches for one NodeClaim, the first is adopted and the second goes.
    for i in sorted(instances, key=lambda i: (i.launch_time, i.id)):
        if i.id in recorded or now - i.launch_time <= GC_GRACE_SECONDS:
            continue
        owner = i.tags.get(tags.NODECLAIM, "")
        if owner in records and not records[owner] and owner not in out.adopt and i.state in _ADOPTABLE:
            out.adopt[owner] = i
            continue
        out.terminate.append(i)
    out.terminate.sort(key=lambda i: i.id)
    return out


def leaked(instances: Sequence[Instance], nodeclaims: Sequence[Mapping[str, Any]], now: float) -> list[Instance]:
    """The instances no NodeClaim accounts for (see `instance_gc`), by instance id."""
    return instance_gc(instances, nodeclaims, now).terminate
