"""NodePool limits that let the solver open one new node in one NodePool and none elsewhere.

Consolidation's replacement (`disruption.simulate`) and the provisioner's one-claim-per-batch plans both use it;
it lives on its own so that the provisioner does not import the disruption simulation to get it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Node

NODEPOOL_LABEL = "karpenter.sh/nodepool"


def one_new_node(
    pools: Sequence[NodePool], nodes: Sequence[Node], inflight: Sequence[NodeClaim], where: str
) -> list[NodePool]:
    """The pools with `nodes` limits that let the solver open one new node in `where` and none elsewhere (it then
    grows that claim into a larger type instead of opening a second). A pool's own lower limit stays."""
    counts: dict[str, int] = {}
    for node in nodes:
        owner = node.labels.get(NODEPOOL_LABEL, "")
        if owner:
            counts[owner] = counts.get(owner, 0) + 1
    for claim in inflight:
        counts[claim.nodepool] = counts.get(claim.nodepool, 0) + 1
    out = []
    for pool in pools:
        allowed = counts.get(pool.name, 0) + (1 if pool.name == where else 0)
        limit = pool.limits.get("nodes")
        out.append(replace(pool, limits={**pool.limits, "nodes": allowed if limit is None else min(limit, allowed)}))
    return out
