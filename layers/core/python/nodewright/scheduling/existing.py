"""Existing nodes and NodeClaims in flight as places pods can go (Karpenter's existingnode.go).

They come before any new NodeClaim: their room is what their allocatable has left after the pods
already on them, and their labels decide which pods they take.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import CAPACITY_TYPE, ZONE, for_ami_family
from nodewright.model import resources as res
from nodewright.model.nodeclaim import INITIALIZED_LABEL, NodeClaim
from nodewright.model.objects import HOSTNAME_LABEL, Node
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint
from nodewright.scheduling.candidates import type_matches
from nodewright.scheduling.claims import Bin
from nodewright.scheduling.classes import EBS_VOLUMES, VolumeIndex
from nodewright.scheduling.nodepods import NodePods
from nodewright.scheduling.pools import Pools

# Taints a starting node carries until it is initialized (Karpenter's KnownEphemeralTaints), by key and effect.
_EPHEMERAL_TAINTS = frozenset(
    {
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
        ("karpenter.sh/unregistered", "NoExecute"),
    }
)
DISRUPTED_TAINT = "karpenter.sh/disrupted"


def initialized(node: Node, claim: NodeClaim | None) -> bool:
    """Whether the node is initialized: one nodewright or Karpenter did not launch always is; a NodeClaim's
    node once the claim says so (its Initialized condition, or Karpenter's karpenter.sh/initialized label)."""
    return claim is None or claim.initialized or node.labels.get(INITIALIZED_LABEL) == "true"


def node_taints(node: Node, claim: NodeClaim | None) -> tuple[Taint, ...]:
    """The taints a pod must tolerate to be planned onto the node (Karpenter's StateNode.Taints).

    Until a NodeClaim's node is initialized, its startup taints and the taints every starting node carries
    (not-ready, unreachable, uninitialized, unregistered) are expected to go, so they do not count; once it
    is initialized they do, as a taint that comes back means something else (a cordon, a problem)."""
    if initialized(node, claim):
        return node.taints
    assert claim is not None
    startup = {(t.key, t.effect) for t in claim.startup_taints}
    return tuple(t for t in node.taints if (t.key, t.effect) not in _EPHEMERAL_TAINTS | startup)


def node_bin(node: Node, pods: NodePods, claim: NodeClaim | None, pools: Pools, volumes: VolumeIndex) -> Bin | None:
    """An existing node (`pods`: its bound pods' sums; `claim`: its NodeClaim, if it has one) as a place pods
    can go, its room what the pods bound to it and the DaemonSet pods still to come leave (None when it takes
    no pod: cordoned, or being disrupted)."""
    if node.unschedulable or any(t.key == DISRUPTED_TAINT for t in node.taints):
        return None
    taints = node_taints(node, claim)
    remaining = res.subtract(
        res.subtract(node.allocatable, pods.used), _daemonsets_to_come(node, taints, pods.daemon_used, pools)
    )
    # The node's own EBS attachment count when it reports one (its attachable-volumes-aws-ebs allocatable, as the
    # CSINode's count is for Karpenter), else its instance type's.
    it = pools.types_by_name.get(node.labels.get("node.kubernetes.io/instance-type", ""))
    attached = _attach(remaining, node.allocatable.get(EBS_VOLUMES, it.ebs_volume_limit if it else None), pods, volumes)
    known = pools.templates.node_labels(node)
    b = Bin(node.name, "node", known.labels, known.requirements, pools.req_id_of(known.key), taints, remaining)
    b.shape = pools.req_id_of(known.shape)
    b.volumes = attached
    return b


def _attach(remaining: dict[str, int], limit: int | None, pods: NodePods, volumes: VolumeIndex) -> set[str]:
    """The distinct EBS claims `pods` attach; `remaining` gets the attachments left of `limit` (none when the
    limit is unknown, so no pod with an EBS volume goes there). Pods are not charged for volumes as requests:
    pods sharing a claim attach it once."""
    attached: set[str] = set()
    for pod in pods.with_volumes:
        attached.update(volumes.constraints(pod)[1])
    if limit is not None:
        remaining[EBS_VOLUMES] = limit - len(attached)
    return attached


def _daemonsets_to_come(
    node: Node, taints: tuple[Taint, ...], daemon_used: Mapping[str, int], pools: Pools
) -> dict[str, int]:
    """What the node holds back for DaemonSet pods that will run there but are not bound yet (Karpenter's
    remaining daemon resources): the requests of the DaemonSets whose pods tolerate its taints and whose
    required node affinity its labels meet (`daemon_used`: those of the DaemonSet pods already on it), never
    below 0 (a label nobody expected may let more DaemonSet pods in)."""
    expected = pools.daemonset_requests(node.labels, taints)
    return {name: max(0, value - daemon_used.get(name, 0)) for name, value in expected.items()}


def inflight_bin(claim: NodeClaim, pods: NodePods, pools: Pools, volumes: VolumeIndex) -> Bin | None:
    """A NodeClaim in flight as a place pods can go (`pods`: its nominated pods' sums), its room what its instance
    type (its smallest option when not launched yet) allocates less its nominated pods, their EBS volumes and
    the DaemonSet pods to come (None when no instance type can satisfy it)."""
    requirements = Requirements.of(claim.requirements).intersect(Requirements.from_labels(claim.labels))
    pool = next((p for p in pools.contexts if p.pool.name == claim.nodepool), None)
    node_class = pool.node_class if pool else None
    family = node_class.ami_family if node_class is not None else ""
    it = pools.types_by_name.get(claim.instance_type)
    if it is not None:
        it = for_ami_family(it, family)  # a Windows claim's type carries Windows' OS labels
    if it is not None:
        alloc = dict(allocatable_for(it, node_class))
        limit = it.ebs_volume_limit
        labels = {**claim.labels, **it.labels}
        if claim.zone:
            labels[ZONE] = claim.zone
        if claim.capacity_type:
            labels[CAPACITY_TYPE] = claim.capacity_type
    else:
        # Not launched yet: it can only be counted on for what its smallest option offers.
        family_types = (for_ami_family(t, family) for t in pools.instance_types)
        options = [t for t in family_types if t is not None and type_matches(t, requirements)]
        if not options:
            return None
        smallest = min(options, key=lambda t: (t.vcpu, t.memory_mib, t.name))
        alloc = dict(allocatable_for(smallest, node_class))
        limit = smallest.ebs_volume_limit
        labels = dict(claim.labels)
    labels.setdefault(HOSTNAME_LABEL, claim.node_name or claim.name)
    taints = claim.taints
    # The claim's requests are its nominated pods' only: the DaemonSet pods that will run on its node are held
    # back too (Karpenter's remaining daemon resources of an in-flight node), else a pod planned onto the claim
    # finds its node full once they bind. None is bound yet, and its startup taints do not keep them off.
    remaining = res.subtract(res.subtract(alloc, claim.requests), pools.daemonset_requests(labels, taints))
    attached = _attach(remaining, limit, pods, volumes)
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
    b.volumes = attached
    return b
