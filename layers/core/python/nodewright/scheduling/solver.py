"""The scheduling simulation: where do pending pods go, and which NodeClaims must be launched?

`solve()` follows Karpenter's order (existing nodes, then NodeClaims in flight, then new NodeClaims
from NodePools by weight) but places equivalence classes of pods as counts (see `classes`). For each
class it tries the strictest form first (preferences treated as required) and relaxes preferences
for the pods that do not fit, as Karpenter does (`preferences`).

This module is the run loop (Karpenter's scheduler.go): per class and per form of its constraints,
the domains of its topology keys are decided one key at a time (`topology`), then the class fills the
places that have room in placement order, and the rest opens new NodeClaims (`claims`, sized by
`choice`). The other modules: `templates` (NodePools and their instance types, per requirement set, kept
across solves in a `TemplateCache`), `pools` (the NodePools of one run and their limits left),
`existing` (existing nodes and NodeClaims in flight), `finalize` (a finished NodeClaim's instance
types and launch options).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from operator import attrgetter

from nodewright.catalog.types import RESERVED, InstanceType
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
from nodewright.model.requirements import Requirements, ValueSet
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.model.taints import Toleration
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.choice import MIX_ALTERNATIVES, MIX_BELOW_PODS, MIX_DEPTH, LookAhead
from nodewright.scheduling.claims import Claims, placement_order
from nodewright.scheduling.classes import (
    EBS_VOLUMES,
    PodClass,
    TopologyTerm,
    VolumeIndex,
    build_classes,
    selector_keys,
)
from nodewright.scheduling.existing import Registration, SolveInputs, inflight_bin
from nodewright.scheduling.finalize import Finalizer
from nodewright.scheduling.kept import KeptRegistration
from nodewright.scheduling.nodepods import NodePods, node_pods
from nodewright.scheduling.pools import PoolContext, ReqKey
from nodewright.scheduling.preferences import PREFER_NO_SCHEDULE, Variant, untolerated, variants
from nodewright.scheduling.results import PlannedNodeClaim, Results, Unschedulable
from nodewright.scheduling.templates import TemplateCache
from nodewright.scheduling.topology import Topology


class Solver:
    """One simulation run. Build it with the inputs, call `run()`; it is not reusable."""

    def __init__(
        self,
        inputs: SolveInputs,
        classes: list[PodClass],
        mix_below: int = MIX_BELOW_PODS,
        mix_depth: int = MIX_DEPTH,
        base: Registration | None = None,
    ) -> None:
        # The existing nodes as places pods can go, with the NodePools and their limits left: registered here, or
        # forked from `base`, the same cluster's nodes registered once for many solves (see `Registration.fork`).
        existing = base.fork(inputs) if base is not None else Registration(inputs)
        nodes, nodeclaims = inputs.nodes, inputs.nodeclaims
        self.pools = existing.pools
        # What each claim's nominated pods add up to, read instead of the pods.
        nominated = [node_pods(c.nominated_pods) for c in nodeclaims]
        # The pending pods' classes (`pod_classes`): the runs of one solve share them, and set alike what they set.
        self.classes = classes
        carriers = (p for s in (*existing.carrying, *nominated) for p in s.carriers)
        self.topology = Topology(self.pools, self.classes, carriers)
        self.look_ahead = LookAhead(self.classes, mix_below, mix_depth)
        self.claims = Claims(self.pools, self.topology, self.look_ahead)
        self.bins = self.claims.bins  # every place pods can go, in placement order (shared, not copied)
        registered = self._register_existing(existing, nodes, nodeclaims, nominated, inputs.volumes)
        # Existing nodes and claims in flight come first in `bins`; their domains are topology domains.
        self.topology.existing = list(self.bins)
        # Pending pods some already hold (a claim in flight lists the pods it was launched for), by bin name.
        pending_keys = {p.key for c in classes for p in c.pods}
        self.pending_held = {
            b.name: [p.key for p in pods.pods if p.key in pending_keys]
            for b, pods in registered
            if not pending_keys.isdisjoint(pods.keys)
        }
        # Their CPU left as the run starts, ascending, with their positions in `bins` (see `_eligible`), and
        # per (CPU position, requirement set, tolerations) the positions of those that may take such pods.
        by_cpu = sorted((b.remaining.get(CPU, 0), b.order) for b in self.bins)
        self.cpu_index = ([cpu for cpu, _ in by_cpu], [order for _, order in by_cpu])
        self.eligible: dict[tuple[int, ReqKey, tuple[Toleration, ...]], list[int]] = {}
        # Per (group, request, closing): bins holding pods a hostname affinity term selects that may still
        # take the request, and how far the group's `hosts` list was read (see `_affinity_hosts`).
        self.affinity_room: dict[tuple[object, ...], tuple[list[Bin], int]] = {}
        # Per (request vector, closing terms, requirement set, tolerations), the bins that may still take such
        # a batch, and how far self.bins was scanned (see `_room`).
        # Room only shrinks, so a bin dropped from a list never needs to come back. A claim that grew into a
        # larger type keeps its new room for the pods that needed it (through `_grow_claims`), so other
        # classes do not fill it and force it to grow again.
        self.room: dict[tuple[object, ...], tuple[list[Bin], int]] = {}
        # Per such key, the new claims that may take the batch only once their requirements change (see `_fill`).
        # Kept as two lists, the bins and their numbers as parked, so that asking whether any changed compares
        # them at C speed (`_room`): a run parks hundreds of thousands of bins across its lists.
        self.parked: dict[tuple[object, ...], tuple[list[Bin], list[ReqKey]]] = {}
        # Per such key, `claims.narrowed` when its parked bins were last looked at (see `_room`).
        self.parked_seen: dict[tuple[object, ...], int] = {}
        # Per request (a class's `request_key`), the positions of the bins found without room for one more such pod:
        # room only shrinks (a claim that grows leaves the lists), so a new list for the request leaves them out.
        self.full: dict[object, set[int]] = {}
        self.finalizer = Finalizer(self.pools)
        # Karpenter relaxes PreferNoSchedule taints last, and only when a NodePool has one.
        self.prefer_no_schedule = any(t.effect == PREFER_NO_SCHEDULE for c in self.pools.contexts for t in c.taints)
        self.forms: dict[int, list[Variant]] = {}  # a class's variants (by id: classes live as long as the run)
        self.pinned: dict[tuple[ReqKey, str, str], tuple[Requirements, ReqKey]] = {}  # see `_pinned`
        # Per (class, form) by id (both live as long as the run's forms): see `_hostname_terms`.
        self.hostname_terms: dict[tuple[int, int], tuple[tuple[tuple[int, int], ...], bool]] = {}
        # Per (class, form, requirement set), the new claims that declined one pod of it (`_fill`), by position,
        # with what that answer read: the claim's requirement set and type and the run's count of limit changes.
        self.declined: dict[tuple[int, int, ReqKey], dict[int, tuple[ReqKey, int, int]]] = {}
        self.unschedulable: list[Unschedulable] = []

    def _register_existing(
        self,
        existing: Registration,
        nodes: Sequence[Node],
        nodeclaims: Sequence[NodeClaim],
        nominated: Sequence[NodePods],
        volumes: VolumeIndex,
    ) -> list[tuple[Bin, NodePods]]:
        """Register the existing nodes (`existing`, in registration order; their bins copied when they are a
        fork's, which other solves share), then the claims in flight (`nominated`: their pods' sums).
        Returns each bin registered with its pods' sums."""
        registered: list[tuple[Bin, NodePods]] = []
        no_pools: dict[int, PoolContext] = {}  # a node's bin has no NodePool context
        for entry in existing.entries:
            b = entry.bin
            if b is not None:
                if existing.shared:
                    b = b.run_copy(no_pools)
                self.claims.register(b, entry.pods)
                registered.append((b, entry.pods))
        node_names = {n.name for n in nodes}
        for claim, pods in sorted(zip(nodeclaims, nominated, strict=True), key=lambda pair: pair[0].name):
            # A claim whose node has registered is that node: adding it again would count its room twice.
            if not (claim.node_name and claim.node_name in node_names):
                b = inflight_bin(claim, pods, self.pools, volumes)
                if b is not None:
                    self.claims.register(b, pods)
                    registered.append((b, pods))
        return registered

    def fork(self, mix_below: int, mix_depth: int) -> Solver:
        """A run that starts where this one stands before `run()`: the same registered nodes, claims in flight
        and topology counts, copied so the two runs change their own, with other look-ahead settings.

        Registering a thousand nodes with their pods costs far more than copying what it built, and a solve
        tries up to three settings. What depends only on the inputs (requirement-set numbers, the NodePools'
        answers, domains, a class's variants) is shared: it is the same for every run of the solve.
        """
        other = object.__new__(Solver)
        other.pools, pool_of = self.pools.fork()
        other.classes = self.classes
        # A node without the room for the least any class requests takes nothing in any run, and no run changes
        # it: the runs share it (most of a busy cluster's nodes, when the batch is small).
        names = {name for c in self.classes for name in c.requests}
        least = {name: min(c.requests.get(name, 0) for c in self.classes) for name in names}
        bin_of = {
            id(b): b if b.kind == "node" and not res.fits(least, b.remaining) else b.run_copy(pool_of)
            for b in self.bins
        }
        other.topology = self.topology.fork(other.pools, bin_of)
        other.look_ahead = LookAhead(self.classes, mix_below, mix_depth)
        other.claims = self.claims.fork(other.pools, other.topology, other.look_ahead, bin_of)
        other.bins = other.claims.bins
        other.affinity_room = {}
        other.room = {}
        other.parked = {}
        other.parked_seen = {}
        other.full = {}  # by position of this run's bins
        other.pending_held = self.pending_held
        other.cpu_index = self.cpu_index  # the same bins as the run starts: copies of them, in the same order
        other.eligible = self.eligible
        other.finalizer = Finalizer(other.pools)
        other.finalizer.finalized = self.finalizer.finalized  # keyed by content: NodePool, requirements, usage
        other.prefer_no_schedule = self.prefer_no_schedule
        other.forms = self.forms
        other.pinned = self.pinned
        other.hostname_terms = self.hostname_terms  # reads the classes, forms and groups the runs share
        other.declined = {}  # by position of this run's claims
        other.unschedulable = []
        return other

    # ----- placement ----------------------------------------------------------------------------------

    def run(self) -> Results:
        """Place every class (`place`) and finish the plan."""
        self.place()
        return self._results()

    def place(self) -> None:
        """Place every class in order, give pods that wait on a later class's pods one more pass each while
        that helps, and note the rest as unschedulable with the first reason found."""
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

    def rank(self) -> tuple[int, float, int] | None:
        """After `place`, the rank of the plan `_results` would give (`_plan_rank`: unschedulable pods, price,
        NodeClaims) without finishing its claims; None when a claim's cheapest launch option is reserved (which
        claims get the reservations' instances is decided as the claims are finished).

        Without reservations, finishing adds no unschedulable pod and keeps every new claim, and a claim's price
        is its cheapest launch option, summed in the same order as `Results.cost_per_hour` does: the same rank.
        A look-ahead alternative that does not beat the plan in hand is then dropped unfinished."""
        total = 0.0
        for b in self.claims.new_bins:
            launch = self.finalizer.options(b)[1]
            if not launch or launch[0].capacity_type == RESERVED:
                return None
            total += launch[0].price
        return (len(self.unschedulable), round(total, 6), len(self.claims.new_bins))

    def _place_class(self, cls: PodClass, pods: list[Pod]) -> tuple[list[Pod], str]:
        if cls.volume_error:
            return pods, cls.volume_error
        reason = ""
        forms = self.forms.get(id(cls))
        if forms is None:
            forms = self.forms[id(cls)] = variants(cls, self.prefer_no_schedule)
        for variant in forms:
            if not pods:
                break
            keys = self.topology.domain_keys(cls, variant.terms)
            requirements = variant.requirements
            pods, why = self._place_in_domains(cls, pods, variant, requirements, self.pools.req_id(requirements), keys)
            reason = reason or why
        return pods, reason

    def _place_in_domains(
        self,
        cls: PodClass,
        pods: list[Pod],
        variant: Variant,
        requirements: Requirements,
        rkey: ReqKey,
        keys: tuple[str, ...],
    ) -> tuple[list[Pod], str]:
        """Place pods one topology key at a time: per domain of the first key, a quota of pods pinned to that
        domain, then the next key within it, then the bins (hostname terms are checked per bin). `rkey` numbers
        `requirements`.

        Domains are filled in rounds that never go more than maxSkew above the emptiest domain, so a
        domain that cannot take its share (no capacity, limits) stops the others instead of skewing them.
        """
        if not keys:
            return self._place_batch(cls, pods, requirements, rkey, variant)
        key, inner = keys[0], keys[1:]
        domains = self.topology.domains_of(key, requirements, rkey)
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
                pinned, pinned_key = self._pinned(requirements, rkey, key, domain)
                rest, why = self._place_in_domains(cls, batch, variant, pinned, pinned_key, inner)
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

    def _pinned(self, requirements: Requirements, rkey: ReqKey, key: str, domain: str) -> tuple[Requirements, ReqKey]:
        """These requirements (numbered `rkey`) pinned to one domain of a topology key, and their number.

        A spread with maxSkew 1 places its pods in rounds of one pod per domain, so the same few pinned sets are
        asked for thousands of times a run: each is made and numbered once per solve (the runs share numbers)."""
        found = self.pinned.get((rkey, key, domain))
        if found is None:
            pinned = requirements.intersect(Requirements({key: ValueSet(frozenset((domain,)), absent_ok=False)}))
            found = self.pinned[(rkey, key, domain)] = (pinned, self.pools.req_id(pinned))
        return found

    def _place_batch(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        variant: Variant,
    ) -> tuple[list[Pod], str]:
        request = cls.requests
        closing, binds = self._hostname_terms(cls, variant)
        request_key = cls.request_key
        affinity = self._affinity_group(cls, variant.terms) if binds else None
        if affinity is not None:
            # Required hostname pod affinity: only nodes that already run matching pods can take the class,
            # so those few are visited (in placement order, like the full walk) instead of every bin.
            room_key = (affinity, request_key, closing)
            held, read = self.affinity_room.get(room_key, ([], 0))
            hosts = self.topology.hosts[affinity]
            if read < len(hosts):
                held = sorted([*held, *hosts[read:]], key=lambda b: b.order)
            parked: list[tuple[Bin, ReqKey]] = []
            kept_hosts, pods = self._fill(held, parked, cls, pods, request, closing, requirements, rkey, variant, None)
            if parked:
                kept_hosts = sorted([*kept_hosts, *(b for b, _ in parked)], key=placement_order)
            self.affinity_room[room_key] = (kept_hosts, len(hosts))
            return self.claims.open_claims(cls, pods, requirements, rkey, variant)
        key = (request_key, closing, rkey, variant.tolerations)
        kept = self._room(request, key, requirements, rkey, variant.tolerations)
        set_aside: list[tuple[Bin, ReqKey]] = []
        declined = None if binds or cls.host_ports or cls.ebs_claims else self._declined(cls, variant, rkey)
        survivors, pods = self._fill(
            kept, set_aside, cls, pods, request, closing, requirements, rkey, variant, declined
        )
        if set_aside:
            parked_bins, parked_keys = self.parked.setdefault(key, ([], []))
            parked_bins.extend(b for b, _ in set_aside)
            parked_keys.extend(number for _, number in set_aside)
        self.room[key] = (survivors, len(self.bins))
        return self.claims.open_claims(cls, pods, requirements, rkey, variant)

    def _hostname_terms(self, cls: PodClass, variant: Variant) -> tuple[tuple[tuple[int, int], ...], bool]:
        """The class's closing hostname terms in this form, as (group, limit) pairs, and whether it has a required
        hostname pod-affinity term (`_affinity_group` can bind only then). Both read the terms and the groups
        alone, so they are worked out once per class and form, not at each of a zone spread's one-pod batches.

        Hostname anti-affinity and hostname spread of the class's own pods close a node for good once it holds
        `limit` of them (counts only grow), so such nodes leave a batch's list like full ones do."""
        key = (id(cls), id(variant))
        found = self.hostname_terms.get(key)
        if found is None:
            group_of = self.topology.group_of
            closing = tuple(
                sorted(
                    (group_of(t), 1 if t.kind == "anti" else t.max_skew)
                    for t in variant.terms
                    if t.topology_key == HOSTNAME_LABEL
                    and t.kind in ("anti", "spread")
                    and group_of(t) in cls.member_of
                )
            )
            binds = any(t.kind == "affinity" and t.topology_key == HOSTNAME_LABEL for t in variant.terms)
            found = self.hostname_terms[key] = (closing, binds)
        return found

    def _room(
        self,
        request: Mapping[str, int],
        key: tuple[object, ...],
        requirements: Requirements,
        rkey: ReqKey,
        tolerations: tuple[Toleration, ...],
    ) -> list[Bin]:
        """The bins still worth visiting for a batch of this request, closing terms, requirement set and
        tolerations (`key`), in placement order (bins opened since the last visit appended, parked bins whose
        requirements changed put back).

        A zone spread places its pods in many small batches, one domain at a time; keeping one list per
        requirement set lets each batch skip, for good, the bins of other domains and NodePools it can never
        use, instead of stepping over all of them every time. A new list starts from the existing nodes and
        claims in flight that may take such pods at all (`_eligible`) that still have room, then the new claims
        that may take them now; those that wait for a label start parked (`_new_room`).
        """
        entry = self.room.get(key)
        if entry is None:
            kept = _with_room(request, self._eligible(request, requirements, rkey, tolerations))
            taking, waiting = self._new_room(requirements, rkey, tolerations)
            # Claims another list of the request found full would only be dropped again, one by one (the oldest,
            # first in placement order, are the full ones: a one-pod batch would step over all of them).
            full = self.full.get(key[0])
            kept.extend([b for b in taking if b.order not in full] if full else taking)
            # Parked as `_fill` would park them: they come back once their requirements change.
            if waiting:
                parked_bins, parked_keys = self.parked.setdefault(key, ([], []))
                parked_bins.extend(waiting)
                parked_keys.extend(map(_rkey_of, waiting))
            entry = (kept, len(self.bins))
        kept, scanned = entry
        kept.extend(self.bins[scanned:])
        parked = self.parked.get(key)
        # A parked bin comes back only once its requirement-set number differs from the one it was parked with,
        # and numbers change only when a bin narrows (`Claims.assign`): when no bin has narrowed since this list
        # last looked, none of its parked bins can have changed, and the walk over them is skipped.
        narrowed = self.claims.narrowed
        if parked and parked[0] and self.parked_seen.get(key) != narrowed:
            self.parked_seen[key] = narrowed
            parked_bins, parked_keys = parked
            now = list(map(_rkey_of, parked_bins))
            if now != parked_keys:
                back = [b for b, old, new in zip(parked_bins, parked_keys, now, strict=True) if old != new]
                kept = sorted([*kept, *back], key=placement_order)
                parked_bins[:] = [b for b, old, new in zip(parked_bins, parked_keys, now, strict=True) if old == new]
                parked_keys[:] = [old for old, new in zip(parked_keys, now, strict=True) if old == new]
        return kept

    def _new_room(
        self, requirements: Requirements, rkey: ReqKey, tolerations: tuple[Toleration, ...]
    ) -> tuple[list[Bin], list[Bin]]:
        """The new claims that may take these requirements (numbered `rkey`) and tolerations now, and those that wait
        for a label, in placement order, with or without room: what `_fill` would keep and park of all the new claims
        but those without room (it drops them and the others without any other effect), found by asking each
        NodePool, shape and type once (`ClaimShapes`) instead of stepping over the thousands of claims of other
        zones and NodePools that a large solve opens, once for each of a class's many lists."""
        return self.claims.taking(requirements, rkey, tolerations)

    def _eligible(
        self, request: Mapping[str, int], requirements: Requirements, rkey: ReqKey, tolerations: tuple[Toleration, ...]
    ) -> list[Bin]:
        """The existing nodes and claims in flight, in placement order, that had the CPU for this request when
        the run started (room only shrinks, so no other can have it now) and whose taints these tolerations
        tolerate and whose labels meet these requirements (numbered `rkey`).

        Taints, tolerations and such a bin's labels never change, and every run of a solve starts from the same
        bins, so the answer is kept by position for all of them (`eligible`): the look-ahead's alternative runs
        do not step again over the hundreds of nodes whose taints or labels refuse a class.
        """
        cpus, orders = self.cpu_index
        start = bisect.bisect_left(cpus, request.get(CPU, 0))
        found = self.eligible.get((start, rkey, tolerations))
        if found is None:
            bins, labels_meet = self.bins, self.claims.labels_meet  # what `bin_compat` asks of such a bin
            found = [
                order
                for order in sorted(orders[start:])
                if (not (b := bins[order]).taints or untolerated(tolerations, b.taints) is None)
                and labels_meet(b, requirements, rkey)
            ]
            self.eligible[(start, rkey, tolerations)] = found
        return [self.bins[order] for order in found]

    def _fill(
        self,
        bins: list[Bin],
        parked: list[tuple[Bin, ReqKey]],
        cls: PodClass,
        pods: list[Pod],
        request: Mapping[str, int],
        closing: tuple[tuple[int, int], ...],
        requirements: Requirements,
        rkey: ReqKey,
        variant: Variant,
        declined: dict[int, tuple[ReqKey, int, int]] | None,
    ) -> tuple[list[Bin], list[Pod]]:
        """Place as many of `pods` as fit on `bins`, in order. Returns the bins still worth visiting for this
        request, requirement set and tolerations (those without room, closed by the class's own hostname terms,
        with a taint not tolerated or whose requirements can never take these, are dropped for good: room only
        shrinks, counts only grow, a bin's requirements only narrow) and the pods left over. A new claim that
        refuses these requirements only for a label it does not define yet is added to `parked` with its
        requirement-set number: visiting it again is useless until its requirements change (`_room`). `declined`:
        the claims that declined one pod of the class, form and requirement set (`_declined`), None when not kept."""
        counts = self.topology.counts
        terms, tolerations = variant.terms, variant.tolerations
        bin_compat, bin_cap, assign = self.claims.bin_compat, self.topology.bin_cap, self.claims.assign
        may_take, refuses = self.claims.may_take_later, self.claims.refuses_for_good
        dearer = self.claims.narrowing_dearer
        max_copies = res.max_copies
        ebs_claims = cls.ebs_claims
        # Per shape of new claim (requirement set, NodePool): whether it refuses these pods for good. A run opens
        # thousands of claims of a few hundred shapes, and a new list visits every claim once: most of them, in
        # other zones or NodePools, are dropped on one look-up instead of the checks below.
        refused = self.claims.refused.setdefault((rkey, tolerations), {})
        # A zone spread's one-pod batches visit the same claims that declined its pod (`narrowing_dearer`) at every
        # batch: for one pod the answer reads only what `_declined` keeps, so such a claim is stepped over.
        claims = self.claims
        full = self.full.setdefault(cls.request_key, set())  # `request` is the class's (see `_room`)
        survivors: list[Bin] = []
        for index, b in enumerate(bins):
            if not pods:
                survivors.extend(bins[index:])
                break
            if b.kind == "new" and not b.grown:  # a grown claim is dropped below, whatever its shape
                shape = (b.rkey, id(b.pool))
                never = refused.get(shape)
                if never is None:
                    never = refused[shape] = refuses(b, requirements, rkey, tolerations)
                if never:
                    continue
                if (
                    declined is not None
                    and len(pods) == 1
                    and declined.get(b.order) == (b.rkey, id(b.chosen), claims.limits_changed)
                ):
                    survivors.append(b)  # as the answer below keeps it (one without room would be dropped later)
                    continue
            k = max_copies(request, b.remaining)
            if k <= 0:
                full.add(b.order)
                continue
            if b.grown or (closing and any(counts[g].get(b.name, 0) >= limit for g, limit in closing)):
                continue
            if ebs_claims and len(ebs_claims - b.volumes) > b.remaining.get(EBS_VOLUMES, 0):
                continue  # the class's EBS volumes: attached once per node, whatever number of its pods go there
            if b.taints and untolerated(tolerations, b.taints) is not None:
                continue  # taints and tolerations never change: the bin leaves this list for good
            merged = bin_compat(b, requirements, rkey)
            if merged is None:
                if may_take(b, requirements, rkey):
                    parked.append((b, b.rkey))
                continue
            survivors.append(b)
            k = min(k, bin_cap(b, cls, terms, len(pods)))
            if k > 0:
                if merged[1] != b.rkey and b.kind == "new" and dearer(b, cls, merged, k, requirements, rkey, variant):
                    if k == 1 and declined is not None:
                        declined[b.order] = (b.rkey, id(b.chosen), claims.limits_changed)
                    continue  # it stays in the list: for fewer pods, or once it has narrowed anyway, it may pay
                pods = assign(b, cls, pods, k, *merged)
        return survivors, pods

    def _declined(self, cls: PodClass, variant: Variant, rkey: ReqKey) -> dict[int, tuple[ReqKey, int, int]]:
        """The claims that declined one pod of this class, form and requirement set (numbered `rkey`), by position,
        with what the answer read. The caller keeps none (None) for a class with host ports, EBS volumes or a
        required hostname pod affinity in this form, where such an answer may not hold at the next visit.

        `Claims.narrowing_dearer` for one pod reads the claim's narrowing (its requirement set and `rkey`), the
        price of its type's offerings before and after, and what a fresh claim for one pod costs, which reads the
        NodePools' limits left (`Claims.limits_changed`) and the class's hostname terms for a brand-new node: only a
        required hostname pod affinity reads the run's state there (whether any matching pod runs yet), and host
        ports or EBS volumes are never declined. So while the claim keeps its requirement set and type and no
        limit changed, one pod is declined again: the claim is kept in the list and skipped (were its room or
        hostname terms to take that pod no more, it would take nothing either way)."""
        return self.declined.setdefault((id(cls), id(variant), rkey), {})

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

    # ----- results ------------------------------------------------------------------------------------

    def _results(self) -> Results:
        claims: list[PlannedNodeClaim] = []
        existing: dict[str, tuple[str, ...]] = {}
        # Only existing nodes and claims in flight hold pods that were not pending; new claims come after them.
        held = self.pending_held
        for b in self.bins[: len(self.bins) - len(self.claims.new_bins)]:
            if len(b.pods) > b.bound or b.name in held:  # most of a thousand nodes take nothing
                existing[b.name] = tuple(sorted([*held.get(b.name, ()), *(p.key for p in b.pods[b.bound :])]))
        unschedulable = list(self.unschedulable)
        for b in self.claims.new_bins:
            claim = self.finalizer.finalize(b)
            if isinstance(claim, str):  # its reservations are taken by earlier claims: its pods wait a round
                unschedulable.extend(Unschedulable(p.key, claim) for p in b.pods)
            else:
                claims.append(claim)
        return Results(
            nodeclaims=tuple(claims),
            existing=existing,
            unschedulable=tuple(sorted(unschedulable, key=lambda u: u.pod)),
        )


_rkey_of = attrgetter("rkey")


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
    templates: TemplateCache | None = None,
    price_ceiling: float | None = None,
    base: Registration | None = None,
    kept: KeptRegistration | None = None,
) -> Results:
    """Decide where pending `pods` go.

    Inputs: the pending pods; existing nodes (with their bound pods); NodeClaims in flight; NodePools
    and their EC2NodeClasses; the instance types with offerings (unavailable offerings are skipped);
    DaemonSets (their pods count against every new node they would run on); volumes for topology.
    `templates`: NodePools prepared by earlier calls (see `templates.TemplateCache`); a caller that solves
    many times for one cluster passes the same cache to each call, which only saves time.
    `price_ceiling`: new NodeClaims may only use instance types with an available offering priced below it
    (a consolidation's replacement must be cheaper than what it replaces; see `PoolCompat.below`); None: no bound.
    Output: `Results` in which every pending pod is placed exactly once or listed as unschedulable
    with a reason naming the constraint and the NodePools that failed it.
    Invariants: no node or NodeClaim is over its allocatable; every placement satisfies requirements,
    taints, topology and NodePool limits; the result does not depend on the order of the inputs.
    Static NodePools (`spec.replicas`) open no NodeClaim for pods, as Karpenter leaves them out of its scheduler:
    their size is kept by the planner (`disruption.static`); pods still land on their nodes and claims in flight.
    `base`: the same cluster's nodes registered once (`existing.Registration`) for a caller that solves many times
    with some nodes taken away; the solve forks it instead of registering every node again (the same plan).
    `kept`: instead of `base`, the registration a warm container keeps from solve to solve (`kept.KeptRegistration`):
    the solve forks the last one, registering only the nodes that changed (the same plan).
    """
    nodepools = [p for p in nodepools if not p.static]
    # The solver creates no reference cycles (a unit test checks), so the collector's passes free nothing.
    with paused_cycle_collector():
        volumes = VolumeIndex(pvcs, pvs, storage_classes)
        templates = templates if templates is not None else TemplateCache()
        classes = pod_classes(pods, nodes, nodeclaims, volumes, templates)
        inputs = SolveInputs(
            nodes, nodeclaims, nodepools, nodeclasses, instance_types, daemonsets, volumes, templates, price_ceiling
        )
        if kept is not None and base is None:
            inputs, base = kept.base_for(inputs)
        results = _best_plan(Solver(inputs, classes, base=base))
        # What the solve built (the NodePools' templates, when the caller keeps none, and the pod classes) is freed
        # here, while the collector is off: alive when it comes back on, it would all be young objects for the
        # collection that the solve's allocations have made due, walked for nothing.
        del inputs, classes, templates, volumes
        return results


def _best_plan(solver: Solver) -> Results:
    """The solver's plan, or one of its look-ahead alternatives' when better. The runs are gone when this
    returns, before the caller turns the cycle collector back on, so its first pass does not walk them."""
    # The start of the other runs, copied before this run fills its bins (only when they may be needed); the
    # last alternative runs on it, the others on copies of it made before it runs.
    *firsts, last = MIX_ALTERNATIVES
    start = solver.fork(*last) if solver.look_ahead.may_skip else None
    solver.place()
    if start is None or not solver.look_ahead.mix_skipped:
        return solver._results()
    # The look-ahead left out classes of many large pods per node; plans that include them are tried too and
    # the best kept: fewest unschedulable pods, then lowest price, then fewest NodeClaims (ties keep the earlier
    # plan, so the choice is as deterministic as each plan). A run is ranked before its claims are finished
    # (`Solver.rank`) and finished only once it is known to be kept, as the first run is too.
    best, (best_rank, plan) = solver, _ranked(solver)
    runs = [*(start.fork(below, depth) for below, depth in firsts), start]
    done: list[LookAhead] = []
    while runs:
        run = runs.pop(0)  # a run is dropped once done: only the best lives on
        if any(d.same_run(run.look_ahead.mix_below, run.look_ahead.mix_depth) for d in done):
            continue  # it would make an earlier alternative's plan again, which ranks no better than itself
        run.place()
        done.append(run.look_ahead)
        rank, run_plan = _ranked(run)
        if rank < best_rank:
            best, best_rank, plan = run, rank, run_plan
        del run, run_plan  # the next run does not keep this one's bins alive unless it is the best
    return plan if plan is not None else best._results()


def _ranked(run: Solver) -> tuple[tuple[int, float, int], Results | None]:
    """The rank of a placed run's plan and, when ranking needed the plan (reservations), the plan itself."""
    rank = run.rank()
    if rank is not None:
        return rank, None
    plan = run._results()
    return _plan_rank(plan), plan


def pod_classes(
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    nodeclaims: Sequence[NodeClaim],
    volumes: VolumeIndex,
    templates: TemplateCache,
) -> list[PodClass]:
    """The pending pods' classes, with the label keys any selector (theirs or running pods') refers to
    (`templates`: where the running pods' sums are kept)."""
    keys = set(selector_keys([*pods, *(p for c in nodeclaims for p in c.nominated_pods)]))
    for node in nodes:
        keys.update(templates.node_pods(node).selector_keys)
    return build_classes(pods, volumes, frozenset(keys))


def _plan_rank(results: Results) -> tuple[int, float, int]:
    return (len(results.unschedulable), results.cost_per_hour, len(results.nodeclaims))


def solve_inputs(inputs: ClusterInputs, instance_types: Sequence[InstanceType]) -> Results:
    """`solve()` for a loaded cluster (files or API objects): its pending pods against everything else. The caller
    applies the inputs' NodeOverlays to `instance_types` (`catalog.overlay`), as `nodewright simulate` does."""
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
