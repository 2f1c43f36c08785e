"""The scheduling simulation: where do pending pods go, and which NodeClaims must be launched?

`solve()` follows Karpenter's order (existing nodes, then NodeClaims in flight, then new NodeClaims
from NodePools by weight) but places equivalence classes of pods as counts (see `classes`). For each
class it tries the strictest form first (preferences treated as required) and relaxes preferences
for the pods that do not fit, as Karpenter does.

Costs: per (NodePool, requirement set) the compatible instance types, their allocatable (minus the
DaemonSet pods that would land there) and their cheapest offering are computed once; topology domains
keep counts per selector, so spread and (anti-)affinity checks are dictionary look-ups.

A new NodeClaim is sized for the class that opens it: the instance type with the lowest price per pod
for the pods still to place (ties go to the type that holds more pods, so fewer, larger nodes). Later
classes fill the room it has left. Large pods without topology terms look further ahead: the type is
chosen for what one node holds of the class and of the free pods still to come (`_mixed_choice`); when
that skipped classes of many pods per node, `solve` also plans with them looked ahead and keeps the cheapest.
When the simulation ends, each NodeClaim keeps every compatible type that fits all its pods, cheapest
first, so the launch can fall back and a partly filled claim launches as the smallest type that holds it.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import (
    CAPACITY_TYPE,
    WELL_KNOWN_LABELS,
    ZONE,
)
from nodewright.catalog.types import CAPACITY_TYPES, InstanceType
from nodewright.gcpause import paused_cycle_collector
from nodewright.model import resources as res
from nodewright.model.inputs import ClusterInputs
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import (
    HOSTNAME_LABEL,
    DaemonSet,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from nodewright.model.requirements import Operator, Requirement, Requirements, ValueSet
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.model.taints import Taint, untolerated
from nodewright.scheduling.choice import (
    MAX_INSTANCE_TYPES,
    MIX_ALTERNATIVES,
    MIX_BELOW_PODS,
    MIX_DEPTH,
    LookAhead,
    choose,
    min_values_shortfall,
    no_fit_reason,
    pool_refusal,
    price_per_pod,
)
from nodewright.scheduling.classes import (
    EBS_VOLUMES,
    PodClass,
    TopologyTerm,
    VolumeIndex,
    build_classes,
    selector_keys,
)
from nodewright.scheduling.pools import (
    OFFERING_KEYS,
    Candidate,
    PoolCompat,
    PoolContext,
    Pools,
    ReqKey,
    admits_new_hostname,
    capacity_rank,
    consume,
    offering_key_of,
    type_matches,
    within,
)
from nodewright.scheduling.preferences import Variant, variants
from nodewright.scheduling.results import LaunchOption, PlannedNodeClaim, Results, Unschedulable
from nodewright.scheduling.topology import Topology

# Taints a node carries while it starts; the pods it was launched for tolerate them implicitly.
_EPHEMERAL_TAINTS = frozenset(
    {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.cloudprovider.kubernetes.io/uninitialized"}
)
DISRUPTED_TAINT = "karpenter.sh/disrupted"
# What claims with the same requirements and instance types share: types, launch options, capacity
# types, zones, requirements and labels.
_Finalized = tuple[
    tuple[str, ...], tuple[LaunchOption, ...], tuple[str, ...], tuple[str, ...], tuple[Requirement, ...], dict[str, str]
]


@dataclass(slots=True, eq=False)
class Bin:
    """Somewhere pods can go: an existing node, a NodeClaim in flight, or a new NodeClaim."""

    name: str
    kind: str  # node | inflight | new
    labels: dict[str, str]
    requirements: Requirements
    rkey: ReqKey
    taints: tuple[Taint, ...]
    remaining: dict[str, int]
    pods: list[Pod] = field(default_factory=list)
    ports: set[tuple[str, int]] = field(default_factory=set)
    pool: PoolContext | None = None
    chosen: Candidate | None = None
    used: dict[str, int] = field(default_factory=dict)
    limit_budget: dict[str, int] | None = None
    order: int = 0
    grown: bool = False

    def domain(self, key: str) -> str | None:
        if key == HOSTNAME_LABEL:
            return self.name
        value = self.labels.get(key)
        if value is None:
            value = self.requirements.get(key).single_value()
        return value


class Solver:
    """One simulation run. Build it with the inputs, call `run()`; it is not reusable."""

    def __init__(
        self,
        pods: Sequence[Pod],
        nodes: Sequence[Node],
        nodeclaims: Sequence[NodeClaim],
        nodepools: Sequence[NodePool],
        nodeclasses: Sequence[EC2NodeClass],
        instance_types: Sequence[InstanceType],
        daemonsets: Sequence[DaemonSet],
        volumes: VolumeIndex,
        mix_below: int = MIX_BELOW_PODS,
        mix_depth: int = MIX_DEPTH,
    ) -> None:
        self.volumes = volumes
        self.pools = Pools(nodepools, nodeclasses, instance_types, daemonsets, nodes, nodeclaims)
        self.bins: list[Bin] = []
        self.new_bins: list[Bin] = []
        self.new_by_name: dict[str, Bin] = {}
        # Per (group, request, closing): bins holding pods a hostname affinity term selects that may still
        # take the request, and how far the group's `hosts` list was read (see `_affinity_hosts`).
        self.affinity_room: dict[tuple[object, ...], tuple[list[Bin], int]] = {}
        self.compat_cache: dict[tuple[ReqKey, ReqKey], tuple[Requirements, ReqKey] | None] = {}
        existing_pods = [p for n in nodes for p in n.pods] + [p for c in nodeclaims for p in c.nominated_pods]
        relevant = selector_keys([*pods, *existing_pods])
        self.classes = build_classes(pods, volumes, relevant)
        self.topology = Topology(self.pools, self.classes, existing_pods)
        self.look_ahead = LookAhead(self.classes, mix_below, mix_depth)
        for node in sorted(nodes, key=lambda n: n.name):
            self._add_existing_node(node)
        node_names = {n.name for n in nodes}
        for claim in sorted(nodeclaims, key=lambda c: c.name):
            # A claim whose node has registered is that node: adding it again would count its room twice.
            if not (claim.node_name and claim.node_name in node_names):
                self._add_inflight_claim(claim)
        # Existing nodes and claims in flight come first in `bins`; their domains are topology domains.
        self.topology.existing = list(self.bins)
        # Per hostname group: the new claims holding its pods, in placement order, and how far the group's
        # `hosts` list was read (see `_new_hosts`). `name_clash` is set if a new claim is named like a node
        # or a claim in flight, which the incremental list does not handle.
        self.old_names = {b.name for b in self.bins}
        self.name_clash = False
        self.new_hosts: dict[int, tuple[list[Bin], int]] = {}
        # Per request vector, the bins that may still have room for it, and how far self.bins was scanned.
        # Room only shrinks, so a bin dropped from a list never needs to come back. A claim that grew into a
        # larger type keeps its new room for the pods that needed it (through `_grow_claims`), so other
        # classes do not fill it and force it to grow again.
        # Claims with the same requirements and usage get the same options: computed once.
        self.finalized: dict[tuple[object, ...], _Finalized] = {}
        self.room: dict[tuple[object, ...], tuple[list[Bin], int]] = {}
        self.unschedulable: list[Unschedulable] = []

    # ----- set-up -------------------------------------------------------------------------------------

    def _add_existing_node(self, node: Node) -> None:
        if node.unschedulable or any(t.key == DISRUPTED_TAINT for t in node.taints):
            return
        taints = tuple(t for t in node.taints if node.ready or t.key not in _EPHEMERAL_TAINTS)
        used = res.total(p.requests for p in node.pods)
        remaining = res.subtract(node.allocatable, used)
        it = self.pools.types_by_name.get(node.labels.get("node.kubernetes.io/instance-type", ""))
        if it is not None and EBS_VOLUMES not in remaining:
            attached = sum(self.volumes.constraints(p)[1] for p in node.pods)
            remaining[EBS_VOLUMES] = it.ebs_volume_limit - attached
        labels = {**node.labels, HOSTNAME_LABEL: node.labels.get(HOSTNAME_LABEL, node.name)}
        requirements = Requirements.from_labels(labels)
        b = Bin(node.name, "node", labels, requirements, self.pools.req_id(requirements), taints, remaining)
        self._register_bin(b, node.pods)

    def _add_inflight_claim(self, claim: NodeClaim) -> None:
        requirements = Requirements.of(claim.requirements).intersect(Requirements.from_labels(claim.labels))
        pool = next((p for p in self.pools.contexts if p.pool.name == claim.nodepool), None)
        node_class = pool.node_class if pool else None
        it = self.pools.types_by_name.get(claim.instance_type)
        if it is not None:
            alloc = dict(allocatable_for(it, node_class))
            labels = {**claim.labels, **it.labels}
            if claim.zone:
                labels[ZONE] = claim.zone
            if claim.capacity_type:
                labels[CAPACITY_TYPE] = claim.capacity_type
        else:
            # Not launched yet: it can only be counted on for what its smallest option offers.
            options = [t for t in self.pools.instance_types if type_matches(t, requirements)]
            if not options:
                return
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
        b.rkey = self.pools.req_id(b.requirements)
        self._register_bin(b, claim.nominated_pods)

    def _register_bin(self, b: Bin, pods: Iterable[Pod]) -> None:
        b.order = len(self.bins)
        self.bins.append(b)
        for pod in pods:
            b.pods.append(pod)
            b.ports.update((p.protocol, p.port) for p in pod.host_ports)
            self.topology.record(b, pod)

    def _bin_compat(self, b: Bin, requirements: Requirements, rkey: ReqKey) -> tuple[Requirements, ReqKey] | None:
        """The bin's requirements (and their key) after adding these, or None when it cannot take them."""
        key = (b.rkey, rkey)
        try:  # one hash of the key on a hit (the usual case), not two
            merged = self.compat_cache[key]
        except KeyError:
            merged = self.compat_cache[key] = self._compute_bin_compat(b, requirements)
        if merged is not None and b.kind == "new" and merged[1] != b.rkey:
            # Narrowing a new claim (a zone, a capacity type) must keep the type it is sized for.
            assert b.chosen is not None
            if not type_matches(b.chosen.it, merged[0]) or not b.chosen.offerings_for(merged[0]):
                return None
        return merged

    def _compute_bin_compat(self, b: Bin, requirements: Requirements) -> tuple[Requirements, ReqKey] | None:
        if b.kind != "new":
            return (b.requirements, b.rkey) if requirements.matches_labels(b.labels) else None
        if b.requirements.conflict(requirements) or not admits_new_hostname(requirements):
            return None
        for key, value_set in requirements.by_key.items():
            if key not in b.requirements.by_key and key not in WELL_KNOWN_LABELS and not value_set.absent_ok:
                return None
        merged = b.requirements.intersect(requirements)
        return merged, self.pools.req_id(merged)

    # ----- topology -----------------------------------------------------------------------------------

    # ----- placement ----------------------------------------------------------------------------------

    def run(self) -> Results:
        deferred: list[tuple[PodClass, list[Pod], str]] = []
        for index, cls in enumerate(self.classes):
            self.look_ahead.placing = index
            left, reason = self._place_class(cls, list(cls.pods))
            if left:
                deferred.append((cls, left, reason))
        # Pod affinity can depend on classes placed later in the order: give those pods one more pass.
        self.look_ahead.placing = len(self.classes)  # retries: no class is still waiting for its first pass
        progress = True
        while deferred and progress:
            progress = False
            retry, deferred = deferred, []
            for cls, pods, reason in retry:
                left, new_reason = self._place_class(cls, pods)
                progress = progress or len(left) < len(pods)
                if left:
                    deferred.append((cls, left, new_reason or reason))
        for _cls, pods, reason in deferred:
            self.unschedulable.extend(Unschedulable(p.key, reason) for p in pods)
        return self._results()

    def _place_class(self, cls: PodClass, pods: list[Pod]) -> tuple[list[Pod], str]:
        if cls.volume_error:
            return pods, cls.volume_error
        reason = ""
        for variant in variants(cls):
            if not pods:
                break
            keys = self.topology.domain_keys(cls, variant.terms)
            pods, why = self._place_in_domains(cls, pods, variant, variant.requirements, keys)
            reason = reason or why
        return pods, reason

    def _place_in_domains(
        self, cls: PodClass, pods: list[Pod], variant: Variant, requirements: Requirements, keys: tuple[str, ...]
    ) -> tuple[list[Pod], str]:
        """Place pods one topology key at a time: per domain of the first key, a quota of pods pinned to that
        domain, then the next key within it, then the bins (hostname terms are checked per bin).

        Domains are filled in rounds that never go more than maxSkew above the emptiest domain, so a
        domain that cannot take its share (no capacity, limits) stops the others instead of skewing them.
        """
        if not keys:
            return self._place_batch(cls, pods, requirements, self.pools.req_id(requirements), variant.terms)
        key, inner = keys[0], keys[1:]
        domains = self.topology.domains_of(key, requirements, self.pools.req_id(requirements))
        quotas = self.topology.quotas(cls, variant, key, domains, len(pods), set())
        reason = ""
        full: set[str] = set()
        while pods:
            progress = False
            for domain in sorted(quotas):
                quota = min(quotas[domain], len(pods))
                if quota <= 0 or domain in full:
                    continue
                batch, pods = pods[:quota], pods[quota:]
                pinned = requirements.intersect(Requirements({key: ValueSet(frozenset((domain,)), absent_ok=False)}))
                rest, why = self._place_in_domains(cls, batch, variant, pinned, inner)
                progress = progress or len(rest) < quota
                if rest:
                    full.add(domain)
                    pods = rest + pods
                    reason = reason or why
            if not progress:
                break
            quotas = self.topology.quotas(cls, variant, key, domains, len(pods), full)
        if pods:
            key_terms = "; ".join(t.describe() for t in variant.terms if t.topology_key == key)
            constraint = key_terms or f"pod anti-affinity on {key}"
            reason = (
                f"{constraint}: no domain can take this pod ({reason})"
                if reason
                else f"{constraint} leaves no domain for this pod"
            )
        return pods, reason

    def _place_batch(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        terms: tuple[TopologyTerm, ...],
    ) -> tuple[list[Pod], str]:
        request = cls.requests
        # Hostname anti-affinity and hostname spread of the class's own pods close a node for good once it
        # holds `limit` of them (counts only grow), so such nodes leave the list like full ones do.
        closing = tuple(
            sorted(
                (self.topology.group_of(t), 1 if t.kind == "anti" else t.max_skew)
                for t in terms
                if t.topology_key == HOSTNAME_LABEL
                and t.kind in ("anti", "spread")
                and self.topology.group_of(t) in cls.member_of
            )
        )
        request_key = cls.request_key
        affinity = self._affinity_group(cls, terms)
        if affinity is not None:
            # Required hostname pod affinity: only nodes that already run matching pods can take the class,
            # so those few are visited (in placement order, like the full walk) instead of every bin.
            room_key = (affinity, request_key, closing)
            held, read = self.affinity_room.get(room_key, ([], 0))
            hosts = self.topology.hosts[affinity]
            if read < len(hosts):
                held = sorted([*held, *hosts[read:]], key=lambda b: b.order)
            kept_hosts, pods = self._fill(held, cls, pods, request, closing, requirements, rkey, terms)
            self.affinity_room[room_key] = (kept_hosts, len(hosts))
            return self._open_claims(cls, pods, requirements, rkey, terms)
        key = (request_key, closing)
        if key not in self.room and closing:
            # Start from the request's own list rather than from every bin: it already lacks the full ones.
            base, base_scanned = self.room.get((request_key, ()), ([], 0))
            base = _with_room(request, base)
            base.extend(_with_room(request, self.bins[base_scanned:]))
            self.room[(request_key, ())] = (base, len(self.bins))
            self.room[key] = (list(base), len(self.bins))
        kept, scanned = self.room.get(key, ([], 0))
        kept.extend(self.bins[scanned:])
        scanned = len(self.bins)
        survivors, pods = self._fill(kept, cls, pods, request, closing, requirements, rkey, terms)
        self.room[key] = (survivors, scanned)
        return self._open_claims(cls, pods, requirements, rkey, terms)

    def _fill(
        self,
        bins: list[Bin],
        cls: PodClass,
        pods: list[Pod],
        request: Mapping[str, int],
        closing: tuple[tuple[int, int], ...],
        requirements: Requirements,
        rkey: ReqKey,
        terms: tuple[TopologyTerm, ...],
    ) -> tuple[list[Bin], list[Pod]]:
        """Place as many of `pods` as fit on `bins`, in order. Returns the bins still worth visiting for this
        request (those without room, or closed by the class's own hostname terms, are dropped for good: room
        only shrinks and counts only grow) and the pods left over."""
        counts = self.topology.counts
        survivors: list[Bin] = []
        for index, b in enumerate(bins):
            if not pods:
                survivors.extend(bins[index:])
                break
            k = res.max_copies(request, b.remaining)
            if k <= 0 or b.grown or (closing and any(counts[g].get(b.name, 0) >= limit for g, limit in closing)):
                continue
            survivors.append(b)
            if b.taints and untolerated(cls.tolerations, b.taints) is not None:
                continue
            merged = self._bin_compat(b, requirements, rkey)
            if merged is None:
                continue
            k = min(k, self.topology.bin_cap(b, cls, terms, len(pods)))
            if k > 0:
                pods = self._assign(b, cls, pods, k, *merged)
        return survivors, pods

    def _affinity_group(self, cls: PodClass, terms: tuple[TopologyTerm, ...]) -> int | None:
        """The group of a required hostname pod-affinity term that ties the class to nodes already chosen.

        None when no such term binds (no term, or no matching pod anywhere yet while the class matches its
        own term, so its first pods choose the node): then every bin is a candidate.
        """
        for term in terms:
            if term.kind != "affinity" or term.topology_key != HOSTNAME_LABEL:
                continue
            g = self.topology.group_of(term)
            if not self.topology.hosts[g] and g in cls.member_of:
                continue
            return g
        return None

    def _open_claims(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        terms: tuple[TopologyTerm, ...],
    ) -> tuple[list[Pod], str]:
        """New claims for the pods no existing bin took; growing claims of this run when none can open."""
        reasons: list[str] = []
        while pods:
            opened = self._open_claim(cls, pods, requirements, rkey, terms, reasons)
            if opened is None:
                # No new claim is possible (pod affinity ties the pods to nodes that already exist, or
                # limits allow no more nodes): a claim of this run may still grow into a larger type.
                pods = self._grow_claims(cls, pods, requirements, rkey, terms)
                break
            b, k = opened
            pods = self._assign(b, cls, pods, k, b.requirements, b.rkey)
        return pods, "; ".join(reasons)

    def _grow_claims(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        terms: tuple[TopologyTerm, ...],
    ) -> list[Pod]:
        """Move new claims of this run to larger instance types so they take more of the class.

        As in Karpenter, a NodeClaim that has not launched keeps every type that fits its pods, so it
        can become a larger one when a pod must join it. Each claim moves to the cheapest type that
        gives the lowest extra price per extra pod, within its NodePool's limits.

        A first pass only grows claims where an extra pod costs at most twice what it would on a node of
        its own, so pods tied to several claims spread over them instead of piling onto one huge type;
        a second pass takes whatever growth is left.
        """
        for ceiling in (price_per_pod(self.pools, cls, requirements, rkey) * 2, float("inf")):
            pods = self._grow_pass(cls, pods, requirements, rkey, terms, ceiling)
            if not pods:
                break
        return pods

    def _grow_pass(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        terms: tuple[TopologyTerm, ...],
        ceiling: float,
    ) -> list[Pod]:
        request = cls.requests
        for b in self._growable_bins(cls, terms):
            if not pods:
                break
            ctx, current = b.pool, b.chosen
            assert ctx is not None and current is not None
            if b.taints and untolerated(cls.tolerations, b.taints) is not None:
                continue
            merged = self._bin_compat(b, requirements, rkey)
            if merged is None:
                continue
            cap = self.topology.bin_cap(b, cls, terms, len(pods))
            if cap <= 0:
                continue
            compat = self.pools.compat(ctx, *merged)
            if isinstance(compat, str):
                continue
            # A claim that even the largest type cannot give one more pod needs no test of its own: the scan
            # below finds no candidate for it.
            # Growing replaces the claim's capacity, so the limits it used are available again.
            budget: dict[str, int] | None = None
            if ctx.remaining is not None:
                budget = {k: v + (0 if k == "nodes" else current.capacity.get(k, 0)) for k, v in ctx.remaining.items()}
            current_price = current.price_under.get(b.rkey)
            if current_price is None:
                current_price = current.price_under[b.rkey] = current.offerings_for(b.requirements)[0].price
            most = min(cap, len(pods))
            best: tuple[float, int, float, str] | None = None
            grown: tuple[Candidate, int] | None = None
            need_cpu = b.used.get(CPU, 0) + request.get(CPU, 0)
            need_memory = b.used.get(MEMORY, 0) + request.get(MEMORY, 0)
            need_pods = b.used.get(PODS, 0) + request.get(PODS, 0)
            # A type cheaper than the claim's that held more pods would have been chosen when the claim was
            # opened, so the scan starts at the claim's price.
            start = bisect.bisect_left(compat.prices, current_price)
            # Types with too little cpu would only be skipped below; the break test holds for them too (a
            # later type costs no less), so leaving them out changes nothing.
            fitting = compat.with_cpu(need_cpu)
            for position in range(bisect.bisect_left(fitting, start), len(fitting)):  # no copy of the tail
                index = fitting[position]
                price, candidate = compat.candidates[index]
                cpu, memory, pod_slots = compat.basics[index]
                # Candidates come cheapest first, so once even `most` extra pods cannot bring the extra
                # price per pod under the best (or the ceiling), no later candidate can either.
                floor = (price - current_price) / most
                if floor > ceiling or (best is not None and floor > best[0]):
                    break
                if cpu < need_cpu or memory < need_memory or pod_slots < need_pods:
                    continue
                if candidate.exotic and not current.exotic:
                    continue
                if budget is not None and not within(candidate.capacity, {**budget, "nodes": 1}):
                    continue
                j = min(most, _copies_beside(request, candidate.allocatable, b.used))
                if j <= 0:
                    continue
                # Lowest extra price per extra pod, then more pods: the same trade as opening a claim.
                score = ((price - current_price) / j, -j, price, candidate.it.name)
                if score[0] > ceiling:
                    continue
                if best is None or score < best:
                    best, grown = score, (candidate, j)
            if grown is None:
                continue
            candidate, j = grown
            if budget is not None:
                left = consume(budget, candidate.capacity)
                if "nodes" in budget:  # the claim was already counted as a node
                    left["nodes"] = budget["nodes"]
                    budget = {**budget, "nodes": 1}
                ctx.remaining = left
                b.limit_budget = budget
            b.chosen = candidate
            b.remaining = res.subtract(candidate.allocatable, b.used)
            b.grown = True
            pods = self._assign(b, cls, pods, j, *merged)
        return pods

    def _growable_bins(self, cls: PodClass, terms: tuple[TopologyTerm, ...]) -> list[Bin]:
        """New claims that may take more of this class, in placement order: with required hostname pod
        affinity only those already holding matching pods, otherwise all of them."""
        for term in terms:
            if term.kind == "affinity" and term.topology_key == HOSTNAME_LABEL:
                g = self.topology.group_of(term)
                if not self.name_clash:
                    return self._new_hosts(g)
                counts = self.topology.counts[g]
                held = [self.new_by_name[d] for d, c in counts.items() if c > 0 and d in self.new_by_name]
                return sorted(held, key=lambda b: b.order)
        return list(self.new_bins)

    def _new_hosts(self, g: int) -> list[Bin]:
        """The new claims holding pods of hostname group g, in placement order (callers do not modify it).

        What `_growable_bins` would collect from the group's counts, kept up to date instead of rebuilt:
        a hostname's count never drops and `hosts` lists each one once, when it first counts, so only the
        hosts added since the last call need a look. A host is a new claim when it is one of this run's
        (no node or claim in flight has its name unless `name_clash`).
        """
        held, read = self.new_hosts.get(g, ([], 0))
        hosts = self.topology.hosts[g]
        for host in hosts[read:]:
            if host.kind == "new":
                bisect.insort(held, host, key=_placement_order)
        self.new_hosts[g] = (held, len(hosts))
        return held

    def _assign(self, b: Bin, cls: PodClass, pods: list[Pod], k: int, merged: Requirements, mkey: ReqKey) -> list[Pod]:
        if mkey != b.rkey:
            b.requirements = merged
            b.rkey = mkey
            zone = merged.get(ZONE).single_value()
            if zone is not None:
                b.labels[ZONE] = zone
        placed, rest = pods[:k], pods[k:]
        total = res.scale(cls.requests, k)
        b.remaining = res.subtract(b.remaining, total)
        b.used = res.add(b.used, total)
        b.pods.extend(placed)
        b.ports.update(cls.host_ports)
        for g in cls.member_of:
            self.topology.add_count(b, g, k)
        for term in cls.terms:
            if term.kind == "anti":
                self.topology.carry(b, self.topology.group_of(term), term.topology_key, k)
        return rest

    def _open_claim(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        terms: tuple[TopologyTerm, ...],
        reasons: list[str],
    ) -> tuple[Bin, int] | None:
        cap = self.topology.new_bin_cap(cls, terms, len(pods))
        if cap <= 0:
            blocking = [t.describe() for t in terms if t.kind == "affinity"] or ["topology"]
            reasons.append(f"{blocking[0]}: no node with matching pods can take it")
            return None
        del reasons[:]
        if not self.pools.contexts:
            reasons.append("no NodePool exists (create one, or check that its EC2NodeClass loaded)")
        for ctx in self.pools.contexts:
            why = pool_refusal(ctx, cls)
            if why:
                reasons.append(f"NodePool {ctx.pool.name}: {why}")
                continue
            compat = self.pools.compat(ctx, requirements, rkey)
            if isinstance(compat, str):
                reasons.append(f"NodePool {ctx.pool.name}: {compat}")
                continue
            choice = choose(ctx, compat, cls, rkey, cap)
            if choice is None:
                reasons.append(f"NodePool {ctx.pool.name}: {no_fit_reason(ctx, compat, cls)}")
                continue
            if ctx.remaining is None and id(cls) in self.look_ahead.free_key:
                choice = self.look_ahead.mixed_choice(ctx, compat, cls, rkey, cap, choice)
            candidate, k = choice
            if cls.host_ports & candidate.ports:
                taken = ", ".join(f"{port}/{protocol}" for protocol, port in sorted(cls.host_ports & candidate.ports))
                reasons.append(f"NodePool {ctx.pool.name}: host port {taken} is taken by a DaemonSet pod")
                continue
            short = min_values_shortfall(compat, candidate, cls.requests, k)
            while short and k > 1:  # fewer pods per claim leave more types that fit
                k = max(1, k // 2)
                short = min_values_shortfall(compat, candidate, cls.requests, k)
            if short:
                reasons.append(f"NodePool {ctx.pool.name}: {short}")
                continue
            budget = dict(ctx.remaining) if ctx.remaining is not None else None
            if ctx.remaining is not None:
                ctx.remaining = consume(ctx.remaining, candidate.capacity)
            b = Bin(
                "",
                "new",
                {},
                compat.requirements,
                self.pools.req_id(compat.requirements),
                (*ctx.pool.taints,),
                dict(candidate.allocatable),
                pool=ctx,
                chosen=candidate,
                limit_budget=budget,
            )
            zone = compat.requirements.get(ZONE).single_value()
            if zone is not None:
                b.labels[ZONE] = zone
            b.ports.update(candidate.ports)
            b.name = f"{ctx.pool.name}-pending-{len(self.new_bins)}"
            b.labels[HOSTNAME_LABEL] = b.name
            b.order = len(self.bins)
            self.bins.append(b)
            self.new_bins.append(b)
            self.new_by_name[b.name] = b
            self.name_clash = self.name_clash or b.name in self.old_names
            return b, k
        return None

    # ----- results ------------------------------------------------------------------------------------

    def _results(self) -> Results:
        claims: list[PlannedNodeClaim] = []
        existing: dict[str, tuple[str, ...]] = {}
        # Only existing nodes and claims in flight hold pods that were not pending; new claims come after them.
        old_bins = self.bins[: len(self.bins) - len(self.new_bins)]
        pending_keys = {p.key for c in self.classes for p in c.pods} if old_bins else set()
        for b in old_bins:
            if b.kind == "new":
                continue
            placed = tuple(sorted(p.key for p in b.pods if p.key in pending_keys))
            if placed:
                existing[b.name] = placed
        for b in self.new_bins:
            claims.append(self._finalize(b))
        return Results(
            nodeclaims=tuple(claims),
            existing=existing,
            unschedulable=tuple(sorted(self.unschedulable, key=lambda u: u.pod)),
        )

    def _finalize(self, b: Bin) -> PlannedNodeClaim:
        ctx = b.pool
        assert ctx is not None and b.chosen is not None
        compat = self.pools.compat(ctx, b.requirements, b.rkey)
        assert isinstance(compat, PoolCompat)  # the claim was opened from this NodePool's answer
        budget_key = tuple(sorted(b.limit_budget.items())) if b.limit_budget is not None else None
        usage_key = (ctx.pool.name, b.rkey, tuple(sorted(b.used.items())), b.chosen.exotic, budget_key)
        memo = self.finalized.get(usage_key)
        if memo is None:
            memo = self._launch_options(b, ctx, compat)
            self.finalized[usage_key] = memo
        type_names, launch, capacity_types, zones, requirement_list, labels = memo
        pods = tuple(sorted(p.key for p in b.pods))
        digest = hashlib.sha256("\n".join((ctx.pool.name, *pods)).encode()).hexdigest()[:8]
        return PlannedNodeClaim(
            name=f"{ctx.pool.name}-{digest}",
            nodepool=ctx.pool.name,
            instance_types=type_names,
            capacity_types=capacity_types,
            zones=zones,
            launch_options=launch,
            pods=pods,
            requirements=requirement_list,
            labels=dict(labels),
            taints=ctx.pool.taints,
            startup_taints=ctx.pool.startup_taints,
            requests=dict(b.used),
            node_class=ctx.pool.node_class_ref.name,
        )

    def _launch_options(self, b: Bin, ctx: PoolContext, compat: PoolCompat) -> _Finalized:
        """A finished claim's instance types (every compatible one that holds its pods, cheapest first, at
        most 60), launch options, capacity types, zones, requirements and labels."""
        assert b.chosen is not None
        chosen: list[Candidate] = []
        used = b.used
        need = (used.get(CPU, 0), used.get(MEMORY, 0), used.get(PODS, 0))
        for index in compat.with_cpu(need[0]):
            candidate = compat.candidates[index][1]
            cpu, memory, pod_slots = compat.basics[index]
            if cpu < need[0] or memory < need[1] or pod_slots < need[2]:
                continue  # the quick test on the three resources every pod requests
            if candidate.exotic and not b.chosen.exotic:
                continue
            if b.limit_budget is not None and not within(candidate.capacity, b.limit_budget):
                continue
            if res.fits(used, candidate.allocatable):
                chosen.append(candidate)
                if len(chosen) == MAX_INSTANCE_TYPES:
                    break
        # Many claims keep the same types (all that fit a small claim): their options are computed once.
        memo_key = (ctx.pool.name, b.rkey, tuple(c.it.name for c in chosen))
        memo = self.finalized.get(memo_key)
        if memo is None:
            offering_key = offering_key_of(compat.requirements)
            offered = [
                (capacity_rank(o.capacity_type), o.price, c.it.name, o.zone, o.capacity_type, o.reservation_id)
                for c in chosen
                for o in c.offerings_with(offering_key)
            ]
            # CreateFleet takes at most 60 overrides, so the claim carries the 60 cheapest offerings; its
            # zones and capacity types still describe every offering of its instance types.
            launch_list = tuple(
                LaunchOption(name, capacity_type, zone, price, reservation)
                for _, price, name, zone, capacity_type, reservation in heapq.nsmallest(MAX_INSTANCE_TYPES, offered)
            )
            type_names = tuple(c.it.name for c in chosen)
            capacity_types = tuple(sorted({o[4] for o in offered}, key=CAPACITY_TYPES.index))
            zones = tuple(sorted({o[3] for o in offered}))
            kept = b.requirements.without(OFFERING_KEYS | {HOSTNAME_LABEL, "node.kubernetes.io/instance-type"})
            requirement_list = (
                *kept.to_list(),
                Requirement("node.kubernetes.io/instance-type", Operator.IN, type_names),
                Requirement(CAPACITY_TYPE, Operator.IN, capacity_types),
                Requirement(ZONE, Operator.IN, zones),
            )
            labels = {**ctx.pool.labels, **b.requirements.labels(), "karpenter.sh/nodepool": ctx.pool.name}
            labels.pop(HOSTNAME_LABEL, None)
            memo = (type_names, launch_list, capacity_types, zones, requirement_list, labels)
            self.finalized[memo_key] = memo
        return memo


def _placement_order(b: Bin) -> int:
    return b.order


def _with_room(request: Mapping[str, int], bins: list[Bin]) -> list[Bin]:
    """The bins with room for one more pod of `request` (res.fits), in order."""
    cpu, memory, pods = (request.get(name, 0) for name in (CPU, MEMORY, PODS))
    if len(request) == 3 and cpu > 0 and memory > 0 and pods > 0:
        # The usual request, checked inline: this runs over every bin for each new hostname-closing class.
        return [
            b
            for b in bins
            if (room := b.remaining).get(CPU, 0) >= cpu and room.get(MEMORY, 0) >= memory and room.get(PODS, 0) >= pods
        ]
    return [b for b in bins if res.fits(request, b.remaining)]


def _copies_beside(request: Mapping[str, int], allocatable: Mapping[str, int], used: Mapping[str, int]) -> int:
    """How many more pods of `request` fit in `allocatable` next to `used` (0 when `used` does not fit)."""
    best = 1 << 30
    for name, value in used.items():
        if value > allocatable.get(name, 0):
            return 0
    for name, value in request.items():
        if value > 0:
            room = allocatable.get(name, 0) - used.get(name, 0)
            if room < value:
                return 0
            best = min(best, room // value)
    return best


def solve(
    pods: Sequence[Pod],
    nodes: Sequence[Node] = (),
    nodeclaims: Sequence[NodeClaim] = (),
    nodepools: Sequence[NodePool] = (),
    nodeclasses: Sequence[EC2NodeClass] = (),
    instance_types: Sequence[InstanceType] = (),
    daemonsets: Sequence[DaemonSet] = (),
    pvcs: Sequence[PersistentVolumeClaim] = (),
    pvs: Sequence[PersistentVolume] = (),
    storage_classes: Sequence[StorageClass] = (),
) -> Results:
    """Decide where pending `pods` go.

    Inputs: the pending pods; existing nodes (with their bound pods); NodeClaims in flight; NodePools
    and their EC2NodeClasses; the instance types with offerings (unavailable offerings are skipped);
    DaemonSets (their pods count against every new node they would run on); volumes for topology.
    Output: `Results` in which every pending pod is placed exactly once or listed as unschedulable
    with a reason naming the constraint and the NodePools that failed it.
    Invariants: no node or NodeClaim is over its allocatable; every placement satisfies requirements,
    taints, topology and NodePool limits; the result does not depend on the order of the inputs.
    """
    # The solver creates no reference cycles (a unit test checks), so the collector's passes free nothing.
    with paused_cycle_collector():
        volumes = VolumeIndex(pvcs, pvs, storage_classes)
        solver = Solver(pods, nodes, nodeclaims, nodepools, nodeclasses, instance_types, daemonsets, volumes)
        results = solver.run()
        if solver.look_ahead.mix_skipped:
            # The look-ahead left out classes of many large pods per node; plans that include them are tried
            # too and the best kept: fewest unschedulable pods, then lowest price, then fewest NodeClaims (ties
            # keep the earlier plan, so the choice is as deterministic as each plan).
            for below, depth in MIX_ALTERNATIVES:
                other = Solver(
                    pods, nodes, nodeclaims, nodepools, nodeclasses, instance_types, daemonsets, volumes, below, depth
                ).run()
                if _plan_rank(other) < _plan_rank(results):
                    results = other
        return results


def _plan_rank(results: Results) -> tuple[int, float, int]:
    return (len(results.unschedulable), results.cost_per_hour, len(results.nodeclaims))


def solve_inputs(inputs: ClusterInputs, instance_types: Sequence[InstanceType]) -> Results:
    """`solve()` for a loaded cluster (files or API objects): its pending pods against everything else."""
    return solve(
        inputs.pending_pods,
        nodes=inputs.nodes,
        nodeclaims=inputs.nodeclaims,
        nodepools=inputs.nodepools,
        nodeclasses=inputs.nodeclasses,
        instance_types=instance_types,
        daemonsets=inputs.daemonsets,
        pvcs=inputs.pvcs,
        pvs=inputs.pvs,
        storage_classes=inputs.storage_classes,
    )
