"""NodeClaims being built: where pods land, new claims opened for them, claims grown into larger types.

A `Bin` (`bins.py`) is somewhere pods can go (an existing node, a NodeClaim in flight or a new NodeClaim, as
Karpenter's ExistingNode and NodeClaim are). A new claim is sized for the class that opens it
(`choice.choose`); when no claim may be opened, claims of this run grow into a larger instance type,
as a Karpenter NodeClaim that has not launched narrows its instance types (nodeclaim.go).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from nodewright.catalog.labels import WELL_KNOWN_LABELS, ZONE
from nodewright.model import resources as res
from nodewright.model.objects import HOSTNAME_LABEL, Pod
from nodewright.model.requirements import Requirements
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.model.taints import Toleration
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.candidates import Candidate, admits_new_hostname, offering_key_of, type_matches
from nodewright.scheduling.choice import (
    LookAhead,
    choose,
    min_values_shortfall,
    no_fit_reason,
    pool_refusal,
    price_per_pod,
)
from nodewright.scheduling.classes import EBS_VOLUMES, PodClass, TopologyTerm
from nodewright.scheduling.nodepods import NodePods
from nodewright.scheduling.pools import PoolContext, Pools, ReqKey, consume, within
from nodewright.scheduling.preferences import Variant, untolerated
from nodewright.scheduling.shapes import ClaimShapes
from nodewright.scheduling.templates import PoolCompat
from nodewright.scheduling.topology import Topology


class Claims:
    """The places pods go in one run: existing nodes and claims in flight first (`register`), then the
    NodeClaims this run opens, in placement order (`bins`)."""

    def __init__(self, pools: Pools, topology: Topology, look_ahead: LookAhead) -> None:
        self.pools = pools
        self.topology = topology
        self.look_ahead = look_ahead
        self.bins: list[Bin] = []
        self.new_bins: list[Bin] = []
        self.new_by_name: dict[str, Bin] = {}
        self.compat_cache: dict[tuple[ReqKey, ReqKey], tuple[Requirements, ReqKey] | None] = {}
        self.later_cache: dict[tuple[ReqKey, ReqKey], bool] = {}  # see `may_take_later`
        self.shape_cache: dict[tuple[ReqKey, ReqKey], bool] = {}  # see `labels_meet`
        self.type_cache: dict[tuple[ReqKey, ReqKey, int], bool] = {}  # see `keeps_type`
        self.narrowing_price: dict[tuple[ReqKey, ReqKey, int], float] = {}  # see `narrowing_dearer`
        self.fresh: dict[tuple[int, ReqKey, tuple[Toleration, ...], int], tuple[int, float, int]] = {}  # `_fresh_price`
        self.limits_changed = 0  # how many times a NodePool's limits left have changed in this run (`_fresh_price`)
        # Per hostname group: the new claims holding its pods, in placement order, and how far the group's
        # `hosts` list was read (see `_new_hosts`). `name_clash` is set if a new claim is named like a node
        # or a claim in flight, which the incremental list does not handle.
        self.old_names: set[str] = set()
        self.name_clash = False
        self.new_hosts: dict[int, tuple[list[Bin], int]] = {}
        self.shapes = ClaimShapes()  # the new claims that have not grown, by shape (see `taking`)
        self.grown: list[Bin] = []  # the new claims that have grown, in the order they first grew (see `_grow_pass`)
        # Per (requirement set, tolerations), per shape of new claim (requirement set, NodePool id): whether it refuses
        # such pods for good; and per NodePool id, whether every new claim of it does (see `taking`, `Solver._fill`).
        # Keyed by the ids of this run's NodePool contexts: each run has its own.
        self.refused: dict[tuple[ReqKey, tuple[Toleration, ...]], dict[tuple[ReqKey, int], bool]] = {}
        self.pool_refused: dict[tuple[ReqKey, tuple[Toleration, ...]], dict[int, bool]] = {}
        # Per (requirement set, tolerations, request), per NodePool name: why the NodePool can never open a claim
        # for such pods, as `_open_claim` words it (see `_refuses_for_good`). The runs of a solve share it.
        self.never_opens: dict[tuple[ReqKey, tuple[Toleration, ...], tuple[tuple[str, int], ...]], dict[str, str]] = {}
        # How many times a bin's requirements have narrowed in this run (`assign`): a bin's requirement-set number
        # changes nowhere else, so a reader that saw this count unchanged knows no bin's number changed since.
        self.narrowed = 0
        # Per (NodePool context, requirement set, class, cap, tolerations): `_size_claim`'s answer where it depends on
        # nothing a run changes (see `_sized`). A zone spread opens thousands of one-pod claims with the same question.
        self.sized: dict[
            tuple[int, ReqKey, int, int, tuple[Toleration, ...]], tuple[PoolCompat, Candidate, int] | str
        ] = {}
        # Per answer (by id, kept alive beside its number): the number of its merged requirements (`_new_claim`).
        self.compat_keys: dict[int, tuple[PoolCompat, ReqKey]] = {}

    def fork(self, pools: Pools, topology: Topology, look_ahead: LookAhead, bin_of: Mapping[int, Bin]) -> Claims:
        """These places for another run of the solve, before any new claim is opened: the bins as copied in
        `bin_of` (by the original's id), the run's own pools, topology and look-ahead."""
        assert not self.new_bins, "a run is forked before it opens claims"
        other = Claims(pools, topology, look_ahead)
        other.bins = [bin_of[id(b)] for b in self.bins]
        other.compat_cache = self.compat_cache  # keyed by requirement-set numbers the runs share
        other.later_cache = self.later_cache
        other.shape_cache = self.shape_cache
        other.type_cache = self.type_cache  # keyed by requirement-set numbers and candidates the runs share
        other.narrowing_price = self.narrowing_price
        other.old_names = self.old_names
        other.never_opens = self.never_opens  # what no run's state changes (see `_refuses_for_good`)
        return other

    def register(self, b: Bin, pods: NodePods) -> None:
        """Add an existing node or a claim in flight with the pods already on it (summed in `pods`)."""
        b.order = len(self.bins)
        self.bins.append(b)
        self.old_names.add(b.name)
        if pods.pods:  # the planner hands its simulations nodes as their room alone, without pods
            b.pods.extend(pods.pods)
            b.ports.update(pods.ports)
            self.topology.record(b, pods)
            b.bound = len(b.pods)

    def bin_compat(self, b: Bin, requirements: Requirements, rkey: ReqKey) -> tuple[Requirements, ReqKey] | None:
        """The bin's requirements (and their key) after adding these, or None when it cannot take them."""
        merged = self.shape_compat(b, requirements, rkey)
        if (
            merged is not None
            and b.kind == "new"
            and merged[1] != b.rkey
            and not self.keeps_type(b, requirements, rkey)
        ):
            return None
        return merged

    def fits_now(self, b: Bin, requirements: Requirements, rkey: ReqKey) -> bool | None:
        """For new claim b, which `refuses_for_good` does not refuse these requirements (numbered `rkey`): whether it
        may take them now (True), waits for a label (None: `may_take_later`), or would lose its type (False). What
        every claim of b's requirement set and type answers."""
        if self.shape_compat(b, requirements, rkey) is None:
            return None
        return self.keeps_type(b, requirements, rkey)

    def keeps_type(self, b: Bin, requirements: Requirements, rkey: ReqKey) -> bool:
        """Whether new claim b keeps the type it is sized for once narrowed by these requirements (numbered `rkey`):
        the type's labels and one of its offerings (a zone, a capacity type) must still meet them. What every claim
        of b's requirement set and type answers, kept: a claim's type only changes when it grows, and its
        requirements only narrow, so a claim that loses its type under a batch never takes that batch."""
        assert b.chosen is not None
        key = (b.rkey, rkey, id(b.chosen))
        kept = self.type_cache.get(key)
        if kept is None:
            merged = self.shape_compat(b, requirements, rkey)
            kept = (
                merged is None
                or merged[1] == b.rkey
                or (type_matches(b.chosen.it, merged[0]) and bool(b.chosen.offerings_for(merged[0])))
            )
            self.type_cache[key] = kept
        return kept

    def narrowing_dearer(
        self,
        b: Bin,
        cls: PodClass,
        merged: tuple[Requirements, ReqKey],
        k: int,
        requirements: Requirements,
        rkey: ReqKey,
        variant: Variant,
    ) -> bool:
        """Whether placing k pods of the class on new claim b, which narrows its requirements to `merged`
        (`bin_compat`'s answer), raises b's price by more than new claims for those k pods alone would cost
        (`_fresh_price`).

        Karpenter adds a pod to the first NodeClaim it fits, narrowing the claim: one pod that requires on-demand
        (or one zone) turns a claim that flexible pods opened, priced at spot, into an on-demand one, and every pod
        on it then pays on-demand (31 pods of 1 CPU on an m5a.8xlarge, 0.6 -> 1.4 $/h, for one 500m pod). Declining
        such a claim keeps every constraint (the pods still go to a bin that meets their requirements, or to a
        claim opened for them as Karpenter would open one), and at this step the plan is cheaper: b keeps its price
        and the pods cost at most the new claims' price, which is below what narrowing b would add. A narrowing
        that does not change b's price (the usual zone pin) is never declined."""
        assert b.chosen is not None
        key = (b.rkey, merged[1], id(b.chosen))
        delta = self.narrowing_price.get(key)
        if delta is None:
            now = b.chosen.offerings_for(b.requirements)
            after = b.chosen.offerings_for(merged[0])
            delta = after[0].price - now[0].price if now and after else 0.0
            self.narrowing_price[key] = delta
        if delta <= 0.0 or cls.host_ports or cls.ebs_claims:
            return False
        return delta > self._fresh_price(cls, requirements, rkey, variant, k)

    def _fresh_price(self, cls: PodClass, requirements: Requirements, rkey: ReqKey, variant: Variant, k: int) -> float:
        """What new claims for k pods of the class would cost: the first NodePool (heaviest first, as `_open_claim`
        goes) that may open one, its type for them (`choose`, without the look-ahead, which would promise pods) times
        the claims needed; inf when none may open (pod affinity, limits, minValues: then the pods stay put)."""
        cap = self.topology.new_bin_cap(cls, variant.terms, k)
        if cap <= 0:
            return float("inf")
        # The answer reads the NodePools' limits left and what no run changes (`_sized`'s argument): kept per
        # question until the limits change.
        key = (id(cls), rkey, variant.tolerations, cap)
        found = self.fresh.get(key)
        if found is None or found[0] != self.limits_changed:
            found = self.fresh[key] = (
                self.limits_changed,
                *self._fresh_claim(cls, requirements, rkey, variant.tolerations, cap),
            )
        _, price, n = found
        return price * -(-k // n) if n else price

    def _fresh_claim(
        self, cls: PodClass, requirements: Requirements, rkey: ReqKey, tolerations: tuple[Toleration, ...], cap: int
    ) -> tuple[float, int]:
        """The price and pod count of the claim `_fresh_price` would open for up to `cap` pods ((inf, 0): none)."""
        for ctx in self.pools.contexts:
            if pool_refusal(ctx, tolerations):
                continue
            compat = self.pools.compat(ctx, requirements, rkey)
            if isinstance(compat, str):
                continue
            choice = choose(ctx, compat, cls, rkey, cap)
            if choice is None:
                continue
            if any(vs.min_values for vs in compat.requirements.by_key.values()):
                break
            candidate, n = choice
            offerings = candidate.offerings_for(compat.requirements)
            return (offerings[0].price, n) if offerings else (float("inf"), 0)
        return float("inf"), 0

    def shape_compat(self, b: Bin, requirements: Requirements, rkey: ReqKey) -> tuple[Requirements, ReqKey] | None:
        """`bin_compat` but for a new claim's instance type: what every bin of b's kind and requirement set answers
        (None: none can take these requirements now; requirements only narrow, so a refusal stays unless
        `may_take_later`)."""
        key = (b.rkey, rkey)
        try:  # one hash of the key on a hit (the usual case), not two
            return self.compat_cache[key]
        except KeyError:
            merged = self.compat_cache[key] = self._compute_bin_compat(b, requirements, rkey)
            return merged

    def refuses_for_good(
        self, b: Bin, requirements: Requirements, rkey: ReqKey, tolerations: tuple[Toleration, ...]
    ) -> bool:
        """Whether new claim b, and every new claim of its shape (requirement set and NodePool, whose taints it
        has), can never take pods of these requirements (numbered `rkey`) and tolerations: a taint they do not
        tolerate, or requirements that conflict and will not come to fit later (`may_take_later`)."""
        if b.taints and untolerated(tolerations, b.taints) is not None:
            return True
        return self.shape_compat(b, requirements, rkey) is None and not self.may_take_later(b, requirements, rkey)

    def pool_refuses_for_good(
        self, ctx: PoolContext, requirements: Requirements, tolerations: tuple[Toleration, ...]
    ) -> bool:
        """Whether every new claim of NodePool ctx answers `refuses_for_good` for pods of these requirements and
        tolerations: they have its taints; and a claim's requirements are the NodePool's narrowed, so they conflict
        where the NodePool's do, and define every label the NodePool's define (a label the NodePool leaves undefined
        is what `may_take_later` waits for: then each claim is asked). False says nothing of any one claim."""
        if ctx.taints and untolerated(tolerations, ctx.taints) is not None:
            return True
        return ctx.requirements.conflict(requirements) is not None and not _undefined_label(
            ctx.requirements, requirements
        )

    def _compute_bin_compat(
        self, b: Bin, requirements: Requirements, rkey: ReqKey
    ) -> tuple[Requirements, ReqKey] | None:
        if b.kind != "new":
            return (b.requirements, b.rkey) if self.labels_meet(b, requirements, rkey) else None
        if b.requirements.conflict(requirements) or not admits_new_hostname(requirements):
            return None
        if _undefined_label(b.requirements, requirements):
            return None
        merged = b.requirements.intersect(requirements)
        return merged, self.pools.req_id(merged)

    def labels_meet(self, b: Bin, requirements: Requirements, rkey: ReqKey) -> bool:
        """Whether the labels of b (an existing node or a claim in flight) meet these requirements (numbered
        `rkey`). Nodes alike but for their name answer alike unless the requirements name a host, so the answer
        is kept per node shape: a thousand nodes are a few dozen shapes."""
        if b.shape < 0 or HOSTNAME_LABEL in requirements.by_key:
            return requirements.matches_labels(b.labels)
        key = (b.shape, rkey)
        found = self.shape_cache.get(key)
        if found is None:
            found = self.shape_cache[key] = requirements.matches_labels(b.labels)
        return found

    def may_take_later(self, b: Bin, requirements: Requirements, rkey: ReqKey) -> bool:
        """Whether a bin `bin_compat` refuses these requirements (numbered `rkey`) may take them later. A bin's
        labels are fixed and a new claim's requirements only narrow, which keeps a conflict, its type and its
        offerings out; only a label the claim does not define yet can come (a later pod requiring it NotIn adds
        it). The answer for a claim's requirement set is kept: the same refusals come back at every visit."""
        if b.kind != "new" or b.grown:
            return False
        key = (b.rkey, rkey)
        later = self.later_cache.get(key)
        if later is None:
            later = self.later_cache[key] = _undefined_label(b.requirements, requirements)
        return later

    def taking(
        self, requirements: Requirements, rkey: ReqKey, tolerations: tuple[Toleration, ...]
    ) -> tuple[list[Bin], list[Bin]]:
        """The new claims that have not grown and may take pods of these requirements (numbered `rkey`) and tolerations
        now (their taints tolerated, `bin_compat` not None), and those that wait for a label (`may_take_later`), each in
        placement order, with or without room; every other claim that has not grown refuses such pods now. Found by
        asking each NodePool, shape and type once (`ClaimShapes.taking`) instead of every claim."""
        return self.shapes.taking(
            self.pool_refused.setdefault((rkey, tolerations), {}),
            lambda ctx: self.pool_refuses_for_good(ctx, requirements, tolerations),
            self.refused.setdefault((rkey, tolerations), {}),
            lambda b: self.refuses_for_good(b, requirements, rkey, tolerations),
            lambda b: self.fits_now(b, requirements, rkey),
        )

    def open_claims(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        variant: Variant,
    ) -> tuple[list[Pod], str]:
        """New claims for the pods no existing bin took; growing claims of this run when none can open."""
        reasons: list[str] = []
        while pods:
            opened = self._open_claim(cls, pods, requirements, rkey, variant, reasons)
            if opened is None:
                # No new claim is possible (pod affinity ties the pods to nodes that already exist, or
                # limits allow no more nodes): a claim of this run may still grow into a larger type.
                pods = self._grow_claims(cls, pods, requirements, rkey, variant)
                break
            b, k = opened
            pods = self.assign(b, cls, pods, k, b.requirements, b.rkey)
        return pods, "; ".join(reasons)

    def _grow_claims(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        variant: Variant,
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
            pods = self._grow_pass(cls, pods, requirements, rkey, variant, ceiling)
            if not pods:
                break
        return pods

    def _grow_pass(
        self,
        cls: PodClass,
        pods: list[Pod],
        requirements: Requirements,
        rkey: ReqKey,
        variant: Variant,
        ceiling: float,
    ) -> list[Pod]:
        request, terms = cls.requests, variant.terms
        for b in self._growable_bins(cls, terms, requirements, rkey, variant.tolerations):
            if not pods:
                break
            ctx, current = b.pool, b.chosen
            assert ctx is not None and current is not None
            if b.taints and untolerated(variant.tolerations, b.taints) is not None:
                continue
            merged = self.bin_compat(b, requirements, rkey)
            if merged is None:
                continue
            cap = self.topology.bin_cap(b, cls, terms, len(pods))
            if cap <= 0:
                continue
            compat = self.pools.compat(ctx, *merged)
            if isinstance(compat, str):
                continue
            # A claim that even the largest type cannot give one more pod needs no test of its own: `_growth`
            # finds no candidate for it.
            # Growing replaces the claim's capacity, so the limits it used are available again.
            budget: dict[str, int] | None = None
            if ctx.remaining is not None:
                budget = {k: v + (0 if k == "nodes" else current.capacity.get(k, 0)) for k, v in ctx.remaining.items()}
            attach = len(cls.ebs_claims - b.volumes)
            grown = _growth(b, compat, request, attach, min(cap, len(pods)), budget, ceiling)
            if grown is None:
                continue
            candidate, j = grown
            if not b.grown:
                self.shapes.grew(b)
                self.grown.append(b)
            _grow_into(b, ctx, candidate, budget)
            self.limits_changed += 1
            pods = self.assign(b, cls, pods, j, *merged)
        return pods

    def _growable_bins(
        self,
        cls: PodClass,
        terms: tuple[TopologyTerm, ...],
        requirements: Requirements,
        rkey: ReqKey,
        tolerations: tuple[Toleration, ...],
    ) -> list[Bin]:
        """New claims that may take more of this class, in placement order: with required hostname pod
        affinity only those already holding matching pods, otherwise those whose taints and requirements may take
        pods of these requirements (numbered `rkey`) and tolerations, and the claims that have grown.

        `_grow_pass` skips a claim whose taints or requirements refuse the batch; a claim that has not grown answers
        that as every claim of its shape and type does, so the claims of the shapes that refuse are left out by shape
        (`taking`) instead of visited one by one: a class that no NodePool can open a claim for (limits spent, a
        requirement no NodePool meets) asks for growth at each of its batches, and a run holds thousands of claims.
        A claim that has grown is kept whatever its shape: `_grow_pass` checks it."""
        for term in terms:
            if term.kind == "affinity" and term.topology_key == HOSTNAME_LABEL:
                g = self.topology.group_of(term)
                if not self.name_clash:
                    return self._new_hosts(g)
                counts = self.topology.counts[g]
                held = [self.new_by_name[d] for d, c in counts.items() if c > 0 and d in self.new_by_name]
                return sorted(held, key=lambda b: b.order)
        found = self.taking(requirements, rkey, tolerations)[0]
        return sorted([*found, *self.grown], key=placement_order) if self.grown else found

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
                bisect.insort(held, host, key=placement_order)
        self.new_hosts[g] = (held, len(hosts))
        return held

    def assign(self, b: Bin, cls: PodClass, pods: list[Pod], k: int, merged: Requirements, mkey: ReqKey) -> list[Pod]:
        """Place the first k of `pods` on b, whose requirements become `merged` (`bin_compat`'s answer), and
        count them in every topology group; returns the pods left."""
        if mkey != b.rkey:
            old = b.rkey
            b.requirements = merged
            b.rkey = mkey
            self.narrowed += 1
            zone = merged.get(ZONE).single_value()
            if zone is not None:
                b.labels[ZONE] = zone
            if b.kind == "new" and not b.grown:
                self.shapes.reshaped(b, old)
        placed, rest = pods[:k], pods[k:]
        total = res.scale(cls.requests, k)
        b.remaining = res.subtract(b.remaining, total)
        b.used = res.add(b.used, total)
        b.pods.extend(placed)
        b.ports.update(cls.host_ports)
        if cls.ebs_claims:
            attached = {EBS_VOLUMES: len(cls.ebs_claims - b.volumes)}
            b.remaining = res.subtract(b.remaining, attached)
            b.used = res.add(b.used, attached)
            b.volumes.update(cls.ebs_claims)
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
        variant: Variant,
        reasons: list[str],
    ) -> tuple[Bin, int] | None:
        """A new claim for the class from the first NodePool (heaviest first) that can launch one, and how
        many of its pods it takes; None, with `reasons` saying why for each NodePool, when none can."""
        terms = variant.terms
        cap = self.topology.new_bin_cap(cls, terms, len(pods))
        if cap <= 0:
            blocking = [t.describe() for t in terms if t.kind == "affinity"] or ["topology"]
            reasons.append(f"{blocking[0]}: no node with matching pods can take it")
            return None
        del reasons[:]
        if not self.pools.contexts:
            reasons.append("no NodePool exists (create one, or check that its EC2NodeClass loaded)")
        # A run opens thousands of claims, each trying the NodePools in weight order: those known to refuse such
        # pods for good are passed over on one look-up, with the reason they gave.
        never = self.never_opens.setdefault((rkey, variant.tolerations, cls.request_key), {})
        for ctx in self.pools.contexts:
            known = never.get(ctx.pool.name)
            if known is not None:
                reasons.append(known)
                continue
            sized = self._sized(ctx, cls, requirements, rkey, cap, variant.tolerations)
            if isinstance(sized, str):
                reason = f"NodePool {ctx.pool.name}: {sized}"
                reasons.append(reason)
                if self._refuses_for_good(ctx, cls, requirements, rkey, cap, variant.tolerations):
                    never[ctx.pool.name] = reason
                continue
            compat, candidate, k = sized
            return self._new_claim(ctx, compat, candidate), k
        return None

    def _refuses_for_good(
        self,
        ctx: PoolContext,
        cls: PodClass,
        requirements: Requirements,
        rkey: ReqKey,
        cap: int,
        tolerations: tuple[Toleration, ...],
    ) -> bool:
        """Whether the NodePool, which `_size_claim` just refused for `cap` (> 0) pods of the class, refuses every
        claim of any run of the solve for pods of this requirement set (numbered `rkey`), tolerations and request,
        with the same reason: its error or a taint not tolerated (checked first, read from the NodePool alone),
        or, for a NodePool without limits, requirements it cannot meet (`compat`) or no type that holds one pod
        (`choose` answers None for every cap > 0 alike). A limited NodePool's other reasons may name limits that
        run out later, and a refusal after a type is chosen (volumes, host ports, minValues) reads the type the
        look-ahead chose: those are asked again each time."""
        if ctx.error or untolerated(tolerations, ctx.taints) is not None:
            return True
        if ctx.remaining is not None:
            return False
        compat = self.pools.compat(ctx, requirements, rkey)
        return isinstance(compat, str) or choose(ctx, compat, cls, rkey, cap) is None

    def _sized(
        self,
        ctx: PoolContext,
        cls: PodClass,
        requirements: Requirements,
        rkey: ReqKey,
        cap: int,
        tolerations: tuple[Toleration, ...],
    ) -> tuple[PoolCompat, Candidate, int] | str:
        """`_size_claim`, kept for a NodePool without limits and a class the look-ahead does not size: then every
        step of it reads only what no run changes (the NodePool's error and taints, its answer for the requirement
        set, `choose` without limits, the chosen type's ports, volumes and minValues), so the same question gets the
        same answer. A limited NodePool's limits and the look-ahead's pending pods change as claims open: asked
        each time."""
        if ctx.remaining is not None or id(cls) in self.look_ahead.free_key:
            return self._size_claim(ctx, cls, requirements, rkey, cap, tolerations)
        key = (id(ctx), rkey, id(cls), cap, tolerations)
        found = self.sized.get(key)
        if found is None:
            found = self.sized[key] = self._size_claim(ctx, cls, requirements, rkey, cap, tolerations)
        return found

    def _size_claim(
        self,
        ctx: PoolContext,
        cls: PodClass,
        requirements: Requirements,
        rkey: ReqKey,
        cap: int,
        tolerations: tuple[Toleration, ...],
    ) -> tuple[PoolCompat, Candidate, int] | str:
        """The type a new claim of this NodePool gets for up to `cap` pods of the class and how many it takes,
        or why the NodePool cannot open one (taints, limits, requirements, size, host ports, minValues)."""
        why = pool_refusal(ctx, tolerations)
        if why:
            return why
        compat = self.pools.compat(ctx, requirements, rkey)
        if isinstance(compat, str):
            return compat
        choice = choose(ctx, compat, cls, rkey, cap)
        if choice is None:
            return no_fit_reason(ctx, compat, cls)
        if ctx.remaining is None and id(cls) in self.look_ahead.free_key:
            choice = self.look_ahead.mixed_choice(ctx, compat, cls, rkey, cap, choice)
        candidate, k = choice
        if len(cls.ebs_claims) > candidate.allocatable.get(EBS_VOLUMES, 0):
            return f"{len(cls.ebs_claims)} EBS volumes, more than {candidate.it.name} can attach"
        if cls.host_ports & candidate.ports:
            taken = ", ".join(f"{port}/{protocol}" for protocol, port in sorted(cls.host_ports & candidate.ports))
            return f"host port {taken} is taken by a DaemonSet pod"
        short = min_values_shortfall(compat, candidate, cls.requests, k)
        while short and k > 1:  # fewer pods per claim leave more types that fit
            k = max(1, k // 2)
            short = min_values_shortfall(compat, candidate, cls.requests, k)
        return short or (compat, candidate, k)

    def _new_claim(self, ctx: PoolContext, compat: PoolCompat, candidate: Candidate) -> Bin:
        """Open a NodeClaim of this NodePool sized as `candidate`, counted against the NodePool's limits."""
        budget = dict(ctx.remaining) if ctx.remaining is not None else None
        if ctx.remaining is not None:
            ctx.remaining = consume(ctx.remaining, candidate.capacity)
            self.limits_changed += 1
        known = self.compat_keys.get(id(compat))
        if known is None:
            known = self.compat_keys[id(compat)] = (compat, self.pools.req_id(compat.requirements))
        b = Bin(
            "",
            "new",
            {},
            compat.requirements,
            known[1],
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
        self.shapes.opened(b)
        self.name_clash = self.name_clash or b.name in self.old_names
        return b


def _growth(
    b: Bin,
    compat: PoolCompat,
    request: Mapping[str, int],
    attach: int,
    most: int,
    budget: dict[str, int] | None,
    ceiling: float,
) -> tuple[Candidate, int] | None:
    """The type new claim b should grow into to take up to `most` more pods of `request` (which attach `attach`
    EBS volumes b does not have yet), and how many it then takes: the lowest extra price per extra pod, at most
    `ceiling`, within the NodePool's `budget` (its limits left with b's type given back). None when no type gives
    b another pod."""
    current = b.chosen
    assert current is not None
    current_price = current.offerings_with(offering_key_of(b.requirements))[0].price
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
        if attach and candidate.allocatable.get(EBS_VOLUMES, 0) < b.used.get(EBS_VOLUMES, 0) + attach:
            continue
        j = min(most, copies_beside(request, candidate.allocatable, b.used))
        if j <= 0:
            continue
        # Lowest extra price per extra pod, then more pods: the same trade as opening a claim.
        score = ((price - current_price) / j, -j, price, candidate.it.name)
        if score[0] > ceiling:
            continue
        if best is None or score < best:
            best, grown = score, (candidate, j)
    return grown


def _grow_into(b: Bin, ctx: PoolContext, candidate: Candidate, budget: dict[str, int] | None) -> None:
    """Move claim b to a larger type; `budget` is its NodePool's limits left with b's old type given back."""
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


def placement_order(b: Bin) -> int:
    return b.order


def copies_beside(request: Mapping[str, int], allocatable: Mapping[str, int], used: Mapping[str, int]) -> int:
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


def _undefined_label(claim: Requirements, requirements: Requirements) -> bool:
    """Whether `requirements` need a label that is not well known, that the claim's requirements do not define,
    and that a node must carry (Karpenter refuses those: nothing would set the label)."""
    return any(
        key not in claim.by_key and key not in WELL_KNOWN_LABELS and not value_set.absent_ok
        for key, value_set in requirements.by_key.items()
    )
