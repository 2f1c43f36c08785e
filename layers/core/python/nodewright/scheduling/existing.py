"""Existing nodes and NodeClaims in flight as places pods can go (Karpenter's existingnode.go).

They come before any new NodeClaim: their room is what their allocatable has left after the pods
already on them, and their labels decide which pods they take.
"""

from __future__ import annotations

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import CAPACITY_TYPE, ZONE
from nodewright.model import resources as res
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.objects import HOSTNAME_LABEL, Node
from nodewright.model.requirements import Requirements
from nodewright.scheduling.claims import Bin
from nodewright.scheduling.classes import EBS_VOLUMES, VolumeIndex
from nodewright.scheduling.pools import Pools, type_matches

# Taints a node carries while it starts; the pods it was launched for tolerate them implicitly.
_EPHEMERAL_TAINTS = frozenset(
    {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.cloudprovider.kubernetes.io/uninitialized"}
)
DISRUPTED_TAINT = "karpenter.sh/disrupted"


def node_bin(node: Node, pools: Pools, volumes: VolumeIndex) -> Bin | None:
    """An existing node as a place pods can go, its room what the pods bound to it leave (None when it
    takes no pod: cordoned, or being disrupted)."""
    if node.unschedulable or any(t.key == DISRUPTED_TAINT for t in node.taints):
        return None
    taints = tuple(t for t in node.taints if node.ready or t.key not in _EPHEMERAL_TAINTS)
    used = res.total(p.requests for p in node.pods)
    remaining = res.subtract(node.allocatable, used)
    it = pools.types_by_name.get(node.labels.get("node.kubernetes.io/instance-type", ""))
    if it is not None and EBS_VOLUMES not in remaining:
        attached = sum(volumes.constraints(p)[1] for p in node.pods)
        remaining[EBS_VOLUMES] = it.ebs_volume_limit - attached
    labels = {**node.labels, HOSTNAME_LABEL: node.labels.get(HOSTNAME_LABEL, node.name)}
    requirements = Requirements.from_labels(labels)
    b = Bin(node.name, "node", labels, requirements, pools.req_id(requirements), taints, remaining)
    return b


def inflight_bin(claim: NodeClaim, pools: Pools) -> Bin | None:
    """A NodeClaim in flight as a place pods can go (None when no instance type can satisfy it)."""
    requirements = Requirements.of(claim.requirements).intersect(Requirements.from_labels(claim.labels))
    pool = next((p for p in pools.contexts if p.pool.name == claim.nodepool), None)
    node_class = pool.node_class if pool else None
    it = pools.types_by_name.get(claim.instance_type)
    if it is not None:
        alloc = dict(allocatable_for(it, node_class))
        labels = {**claim.labels, **it.labels}
        if claim.zone:
            labels[ZONE] = claim.zone
        if claim.capacity_type:
            labels[CAPACITY_TYPE] = claim.capacity_type
    else:
        # Not launched yet: it can only be counted on for what its smallest option offers.
        options = [t for t in pools.instance_types if type_matches(t, requirements)]
        if not options:
            return None
        smallest = min(options, key=lambda t: (t.vcpu, t.memory_mib, t.name))
        alloc = dict(allocatable_for(smallest, node_class))
        labels = dict(claim.labels)
    labels.setdefault(HOSTNAME_LABEL, claim.node_name or claim.name)
    remaining = res.subtract(alloc, claim.requests)
    taints = claim.taints
    b = Bin(
        claim.name,
        "inflight",
        labels,
        requirements.intersect(Requirements.from_labels(labels)),
        -1,
        taints,
        remaining,
        pool=pool,
    )
    b.rkey = pools.req_id(b.requirements)
    return b
