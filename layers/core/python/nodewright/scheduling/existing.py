"""Existing nodes and NodeClaims in flight as places pods can go (Karpenter's existingnode.go).

They come before any new NodeClaim: their room is what their allocatable has left after the pods
already on them, and their labels decide which pods they take.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import CAPACITY_TYPE, ZONE, for_ami_family
from nodewright.catalog.types import InstanceType
from nodewright.model import resources as res
from nodewright.model.nodeclaim import INITIALIZED_LABEL, NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import HOSTNAME_LABEL, DaemonSet, Node
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.candidates import type_matches
from nodewright.scheduling.classes import EBS_VOLUMES, VolumeIndex
from nodewright.scheduling.nodepods import NodePods
from nodewright.scheduling.pools import Pools, add_counted
from nodewright.scheduling.templates import TemplateCache

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


@dataclass(frozen=True, slots=True)
class SolveInputs:
    """The cluster a solve places pods into: existing nodes (with their bound pods), NodeClaims in flight, NodePools
    and their EC2NodeClasses, the instance types with offerings, DaemonSets, volumes for topology, the scheduling
    cache (`templates.TemplateCache`) and the price ceiling of new NodeClaims (None: no bound)."""

    nodes: Sequence[Node]
    nodeclaims: Sequence[NodeClaim]
    nodepools: Sequence[NodePool]
    nodeclasses: Sequence[EC2NodeClass]
    instance_types: Sequence[InstanceType]
    daemonsets: Sequence[DaemonSet]
    volumes: VolumeIndex
    templates: TemplateCache
    price_ceiling: float | None = None


@dataclass(slots=True)
class Entry:
    """An existing node as registered: the node, its pods' sums, its NodeClaim (if any), its place in registration
    order (initialized nodes first, then by name) and its bin (None when it takes no pod)."""

    node: Node
    pods: NodePods
    claim: NodeClaim | None
    order: tuple[bool, str]
    bin: Bin | None


class Registration:
    """The existing nodes of a solve as places pods can go, with the NodePools they count against (`pools`).

    A solve registers its nodes once (`Registration(...)`). A caller that solves many times against one cluster,
    each time with some nodes taken away (the planner's simulations of one snapshot), registers all of them once
    and forks that for each solve (`fork`): the fork keeps the entries of the nodes still there and registers only
    the nodes that are new or differ, so a solve no longer works out every node's room, labels and DaemonSets
    again. A fork's bins are the base's: the solver copies them before it fills them (`shared`), which costs a
    fraction of registering them."""

    def __init__(self, inputs: SolveInputs) -> None:
        nodes, templates = inputs.nodes, inputs.templates
        on_nodes = templates.node_pods_of(nodes)
        self.pools = Pools(
            inputs.nodepools,
            inputs.nodeclasses,
            inputs.instance_types,
            inputs.daemonsets,
            nodes,
            on_nodes,
            inputs.nodeclaims,
            templates,
            inputs.price_ceiling,
        )
        self.sources = (inputs.instance_types, inputs.daemonsets, templates)  # what a fork must share (see `fork`)
        claim_of = claims_of(nodes, inputs.nodeclaims)
        entries = [
            self._entry(n, p, claim_of.get(n.name), inputs.volumes) for n, p in zip(nodes, on_nodes, strict=True)
        ]
        self.entries = sorted(entries, key=_entry_order)
        self.carrying = [p for p in on_nodes if p.pods]  # the sums of the nodes with pods, in the order of `nodes`
        self.shared = False
        self._index: _Index | None = None  # what a fork reads, worked out by the first (a solve alone never forks)

    def _entry(self, node: Node, pods: NodePods, claim: NodeClaim | None, volumes: VolumeIndex) -> Entry:
        # Initialized nodes first, as Karpenter orders existing nodes: a node still starting may not come up.
        order = (not initialized(node, claim), node.name)
        return Entry(node, pods, claim, order, node_bin(node, pods, claim, self.pools, volumes))

    def fork(self, inputs: SolveInputs) -> Registration:
        """What `Registration(nodes, ...)` with these inputs would give, from this one: its entries of the nodes
        given as the same objects with the same NodeClaim are kept (their bins shared: `shared`), the other nodes
        registered, and the limits' counts and DaemonSets adjusted by the nodes taken away and added.

        Invariant: the fork's entries, bins, NodePools and limits equal a from-scratch registration's. When the
        catalog, DaemonSets or cache differ, or the nodes taken away change what the DaemonSets' running pods
        request, it is a from-scratch registration."""
        nodes, nodeclaims, templates = inputs.nodes, inputs.nodeclaims, inputs.templates
        assert not self.shared, "forks are made of a registration made from scratch"
        shared = (inputs.instance_types, inputs.daemonsets, templates)
        if any(a is not b for a, b in zip(self.sources, shared, strict=True)):
            return Registration(inputs)
        index = self._index
        if index is None:
            index = self._index = _Index(self)
        by_name = index.by_name
        claim_of = claims_of(nodes, nodeclaims)
        # Nodes with a NodeClaim (a few: those still starting) keep their entry only with an equal claim.
        differ = {
            name
            for name in claim_of.keys() | index.claimed
            if (e := by_name.get(name)) is not None and e.claim != claim_of.get(name)
        }
        kept_names: set[str] = set()
        added: list[Node] = []
        for node in nodes:
            found = by_name.get(node.name)
            if found is not None and found.node is node and node.name not in differ:
                kept_names.add(node.name)
            else:
                added.append(node)
        kept: list[Entry] = []
        gone: list[Entry] = []
        for e in self.entries:
            (kept if e.node.name in kept_names else gone).append(e)
        # Not `node_pods_of`: it would drop the kept sums of every node but these few.
        added_pods = [templates.node_pods(n) for n in added]
        if not _same_daemonsets(index.daemons, [e.pods for e in gone], added_pods):
            return Registration(inputs)
        counted = {pool: dict(values) for pool, values in index.counted.items()}
        for e in gone:
            add_counted(counted, *self.pools.node_counted(e.node), -1)
        for node in added:
            add_counted(counted, *self.pools.node_counted(node), 1)
        added_names = {n.name for n in added}
        for claim in nodeclaims:  # a registered claim counts through its node (`Pools.counted`)
            if not (claim.node_name and (claim.node_name in kept_names or claim.node_name in added_names)):
                add_counted(counted, claim.nodepool, self.pools.claim_capacity(claim), 1)
        other = object.__new__(Registration)
        other.pools = self.pools.derive(inputs.nodepools, inputs.nodeclasses, counted, inputs.price_ceiling)
        other.sources = self.sources
        fresh = [
            other._entry(n, p, claim_of.get(n.name), inputs.volumes) for n, p in zip(added, added_pods, strict=True)
        ]
        other.entries = sorted([*kept, *fresh], key=_entry_order) if fresh else kept
        carrying = {e.node.name: e.pods for e in (*kept, *fresh) if e.pods.pods}
        other.carrying = [carrying[n.name] for n in nodes if n.name in carrying] if carrying else []
        other.shared = True
        other._index = None
        return other


class _Index:
    """What `Registration.fork` reads of the registration it forks: its entries by node name, the nodes with a
    NodeClaim, the nodes' part of the limits' counts (`Pools.counted`) and the DaemonSets' running requests."""

    def __init__(self, registration: Registration) -> None:
        entries = registration.entries
        self.by_name = {e.node.name: e for e in entries}
        self.claimed = frozenset(e.node.name for e in entries if e.claim is not None)
        self.counted = registration.pools.counted([e.node for e in entries], ())
        self.daemons = _daemon_values(e.pods for e in entries)  # see `_same_daemonsets`


def claims_of(nodes: Sequence[Node], nodeclaims: Sequence[NodeClaim]) -> dict[str, NodeClaim]:
    """Each node's NodeClaim, by node name: the claim naming the node, or the one the node names."""
    claims_by_name = {c.name: c for c in nodeclaims}
    claim_of = {c.node_name: c for c in nodeclaims if c.node_name}
    if claims_by_name:
        claim_of.update((n.name, c) for n in nodes if (c := claims_by_name.get(n.nodeclaim_name)) is not None)
    return claim_of


_entry_order = attrgetter("order")


def _daemon_values(sums: Iterable[NodePods]) -> Counter[tuple[tuple[str, str], tuple[tuple[str, int], ...]]]:
    """How many nodes run each DaemonSet's pods with each request (what `pools._as_running` reads)."""
    return Counter((key, tuple(here.items())) for s in sums for key, here in s.daemon_requests.items())


def _same_daemonsets(
    base: Counter[tuple[tuple[str, str], tuple[tuple[str, int], ...]]],
    gone: Sequence[NodePods],
    added: Sequence[NodePods],
) -> bool:
    """Whether the DaemonSets' running requests, after taking away the pods of `gone` and adding those of `added`,
    are still made of the same requests as `base` (then `pools._as_running` answers the same)."""
    change = _daemon_values(added)
    change.subtract(_daemon_values(gone))
    return all((base[k] > 0) == (base[k] + n > 0) for k, n in change.items() if n)
