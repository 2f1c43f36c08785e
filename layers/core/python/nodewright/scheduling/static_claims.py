"""NodeClaims of a static NodePool: its template as it is, for no pods.

Karpenter's static provisioning creates NodeClaims straight from the NodePool's template (NewNodeClaimTemplate)
and lets the cloud provider pick the cheapest offering its requirements allow. Here each claim is finished by the
same `Finalizer` that finishes a simulation's claims, so it carries what every planned NodeClaim does (every
compatible instance type, cheapest first; the launch options, reserved first; the
pool's labels, taints and requirements) and launches through the provisioning path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from nodewright.catalog.types import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import DaemonSet
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.finalize import Finalizer
from nodewright.scheduling.pools import Pools
from nodewright.scheduling.results import PlannedNodeClaim
from nodewright.scheduling.templates import TemplateCache


def static_claims(
    pool: NodePool,
    count: int,
    nodeclasses: Sequence[EC2NodeClass],
    instance_types: Sequence[InstanceType],
    daemonsets: Sequence[DaemonSet] = (),
) -> tuple[list[PlannedNodeClaim], str]:
    """`count` NodeClaims for the static `pool` (already bounded to its class's zones), and why fewer could be
    planned ("" when all were): no instance type its requirements allow, a missing EC2NodeClass, or reservations
    it must launch into that are all taken. Each claim's name is left to the caller (claims alike in content
    are told apart by it)."""
    pools = Pools([replace(pool, replicas=None)], nodeclasses, instance_types, daemonsets, (), (), (), TemplateCache())
    ctx = pools.contexts[0]
    if ctx.error:
        return [], ctx.error
    rkey = pools.req_id(ctx.requirements)
    compat = pools.compat(ctx, ctx.requirements, rkey)
    if isinstance(compat, str):
        return [], compat
    # Candidates' allocatable is already what the DaemonSets' pods leave; a claim for no pods fits every one.
    fitting = [c for _, c in compat.candidates]
    if not fitting:
        return [], "no instance type its requirements allow has an available offering"
    # The cheapest ordinary type decides what kinds of types the claim may use (no GPU or other accelerator unless
    # the pool allows nothing else), as a pod without such requests would.
    chosen = next((c for c in fitting if not c.exotic), fitting[0])
    finalizer = Finalizer(pools)
    out: list[PlannedNodeClaim] = []
    for i in range(count):
        b = Bin(
            f"{pool.name}-static-{i}",
            "new",
            {},
            compat.requirements,
            rkey,
            ctx.taints,
            dict(chosen.allocatable),
            pool=ctx,
            chosen=chosen,
        )
        claim = finalizer.finalize(b)
        if isinstance(claim, str):  # the reservations it must launch into are taken
            return out, claim
        out.append(claim)
    return out, ""
