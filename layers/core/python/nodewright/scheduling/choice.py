"""Choosing instance types: which type a new NodeClaim is sized for, and why none fits.

A new NodeClaim gets the type with the lowest price per pod for the class that opens it (`choose`);
large pods without topology terms look ahead at the free pods still to come (`LookAhead`). Karpenter
keeps every type that fits and launches the cheapest; nodewright does that too when a claim is finished,
and uses the choice here to decide how many pods one claim should take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodewright.model import resources as res
from nodewright.model.requirements import Requirements
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.model.taints import Toleration
from nodewright.scheduling.candidates import Candidate, req_key
from nodewright.scheduling.classes import PodClass
from nodewright.scheduling.pools import PoolContext, Pools, ReqKey, within
from nodewright.scheduling.preferences import untolerated
from nodewright.scheduling.templates import PoolCompat

# A NodeClaim keeps at most this many instance types, cheapest first (Karpenter's limit, and CreateFleet's).
MAX_INSTANCE_TYPES = 60
# A free class of large pods (at least this cpu or memory) whose own best node holds fewer pods than this is
# sized together with the free pods to come. Smaller pods are placed on small types, where a few pods fill
# a node well, and the look-ahead would cost more time than it saves money.
MIX_BELOW_PODS = 10
_MIX_FROM_CPU = 2000
_MIX_FROM_MEMORY = 8 << 30
# How many counts of the opening class a look-ahead tries per type, from the most that fit down: fewer of
# its own pods can leave room that a mix of the others fills better.
MIX_DEPTH = 8
# The look-ahead is greedy, and which classes it should cover depends on the mix: when it skipped a class
# for holding MIX_BELOW_PODS or more per node, the plan is made again with these (limit, depth) settings
# as well, and the cheapest plan kept (see `solve`).
MIX_ALTERNATIVES = ((1 << 30, 1 << 30), (1 << 30, 1))

Score = tuple[float, int, float, str]
# Free pods still to come, of one size: cpu, memory, count, price per pod on nodes of their own, classes.
_Pending = tuple[int, int, int, float, list[PodClass]]
_Size = tuple[int, int]  # cpu, memory


@dataclass(frozen=True, slots=True)
class Mix:
    """A look-ahead's answer and what it depended on, so the next claim of the class can reuse it.

    `chosen`: the type and count of the opening class; `fill`: how many pods of each size of the pending
    pods fill the rest of the node; `needed`: per size, the most pods any configuration the scan scored took
    (counts at or above it give every score the same value); `pending`: the sizes (cpu, memory, price per
    pod) that were pending, in order; `cap` and `most`: the cap on the class's pods and the most of them
    any scored type holds; `reach`: the depth the chosen count needs (1 when it is the most the chosen type
    holds under the cap, 0 when no type was scored): a scan of a smaller depth, at least `reach`, answers
    the same (`LookAhead.same_run`).
    """

    chosen: tuple[Candidate, int]
    fill: list[tuple[_Size, int]]
    needed: dict[_Size, int]
    pending: list[tuple[int, int, float]]
    cap: int
    most: int
    reach: int

    def holds_for(self, cap: int, others: list[_Pending]) -> bool:
        """Whether the scan would answer the same for this cap and these pending pods.

        Claims of one class open one after another while the cap and the pending counts only fall. Each
        score the scan made takes min(cap, copies) pods of the class: unchanged while the cap stays at or
        above the most copies of any scored type (or is the same cap); and min(count, room) pods of a pending
        size: unchanged while every count stays at or above what any score took (`needed`), sizes keep
        their order and price, and no size appears (a size that ran out was taken by no score). The scan's
        pruning bound only tightens as sizes leave, and it never skips a type that could beat the best, so
        the best is the same type and count.
        """
        if cap != self.cap and (cap < self.most or self.cap < self.most):
            return False
        order = [(cpu, memory, rate) for cpu, memory, _, rate, _ in others]
        if order != [p for p in self.pending if p in order]:
            return False
        counts = {(o[0], o[1]): o[2] for o in others}
        return all(counts.get(size, 0) >= n for size, n in self.needed.items())


def choose(ctx: PoolContext, compat: PoolCompat, cls: PodClass, rkey: ReqKey, cap: int) -> tuple[Candidate, int] | None:
    """The instance type with the lowest price per pod for up to `cap` pods of the class.

    Ties go to the type that holds more pods (fewer, larger nodes), then the cheaper, then the name.
    Types that would break the NodePool's limits are skipped; bare metal and accelerated types are
    considered only when no other type fits (Karpenter's exotic rule). `rkey` numbers `compat`'s
    requirements (kept for the callers' symmetry; the answer is the compat's).
    """
    # No type holds more of the class than the per-resource largest allocatable does, so every `cap` above
    # that gives the same answer: one cache entry serves them all.
    most = min(cap, res.max_copies(cls.requests, compat.largest))
    key = (cls.request_key, most)
    if key in compat.choices:
        chosen = compat.choices[key]
    else:
        chosen = compat.choices[key] = _cheapest_per_pod(compat, cls, most, None)
    remaining = ctx.remaining
    if remaining is None or chosen is None or within(chosen[0].capacity, remaining):
        # The best type of all, when the limits allow it, is the best of those they allow.
        return chosen
    if all(key == "nodes" for key in remaining):
        return None  # a limit on the node count alone leaves every type out alike
    return _cheapest_per_pod(compat, cls, most, remaining)


def _cheapest_per_pod(
    compat: PoolCompat, cls: PodClass, most: int, remaining: Mapping[str, int] | None
) -> tuple[Candidate, int] | None:
    """`choose` for at most `most` pods (at most what the largest type holds), within `remaining` limits."""
    request_key = cls.request_key
    chosen: tuple[Candidate, int] | None = None
    # Pods usually request exactly cpu, memory and pods: then a type's copies are three divisions of its
    # `basics` (the same count as res.max_copies, since the pods term keeps it far below its cap), and a
    # type another one no dearer beats on all three holds no more pods at no lower price: only the
    # frontier can win (ties too, as the frontier keeps the earlier of equals). Limits can leave a larger
    # type out and a dominated one in, so with limits every type is looked at.
    cpu_each, memory_each, pods_each = (cls.requests.get(name, 0) for name in (CPU, MEMORY, PODS))
    basic = cpu_each > 0 and memory_each > 0 and pods_each > 0 and len(cls.requests) == 3
    candidates = compat.candidates
    for exotic in (False, True) if most > 0 else ():
        order = compat.frontier if basic and remaining is None and not exotic else range(len(candidates))
        best: Score | None = None
        for index in order:
            price, candidate = candidates[index]
            # Cheapest first: no later type can beat price / most, so the scan usually stops early.
            if best is not None and price / most > best[0]:
                break
            if candidate.exotic != exotic:
                continue
            if remaining is not None and not within(candidate.capacity, remaining):
                continue
            if basic:
                cpu, memory, slots = candidate.basics
                copies = min(cpu // cpu_each, memory // memory_each, slots // pods_each)
            else:
                copies = candidate.copies_of(request_key, cls.requests)
            k = min(most, copies)
            if k <= 0:
                continue
            # The price per pod decides unless it ties: most types lose on it without building a score.
            if best is not None and price / k > best[0]:
                continue
            score = (price / k, -k, price, candidate.it.name)
            if best is None or score < best:
                best, chosen = score, (candidate, k)
        if chosen is not None:
            break
    return chosen


def own_rate(ctx: PoolContext, compat: PoolCompat, cls: PodClass, rkey: ReqKey) -> tuple[float, int]:
    """The class's lowest price per pod on nodes of its own in this NodePool, and pods per such node."""
    choice = choose(ctx, compat, cls, rkey, 1 << 20)
    if choice is None:
        return float("inf"), 0
    candidate, k = choice
    return candidate.offerings_for(compat.requirements)[0].price / k, k


def price_per_pod(pools: Pools, cls: PodClass, requirements: Requirements, rkey: ReqKey) -> float:
    """The lowest price per pod of this class on a fresh node of any NodePool (inf when none fits)."""
    best = float("inf")
    for ctx in pools.contexts:
        if ctx.error:
            continue
        compat = pools.compat(ctx, requirements, rkey)
        if isinstance(compat, str):
            continue
        choice = choose(ctx, compat, cls, rkey, 1 << 20)
        if choice is not None:
            candidate, k = choice
            best = min(best, candidate.offerings_for(compat.requirements)[0].price / k)
    return best


class LookAhead:
    """What the look-ahead of one run knows: the free classes to come and the pods claims were sized for.

    Free classes (no topology terms, host ports or volumes) that share node constraints can share
    nodes in any mix. `placing` is the position of the class being placed (the solver moves it on).
    """

    def __init__(
        self, classes: Sequence[PodClass], mix_below: int = MIX_BELOW_PODS, mix_depth: int = MIX_DEPTH
    ) -> None:
        self.mix_below = mix_below
        self.mix_depth = mix_depth
        # Whether a look-ahead was skipped because the class holds `mix_below` or more pods per node, and
        # whether a mix was weighed or skipped with free pods to come (where other settings may choose otherwise).
        self.skipped = False
        self.varies = False
        # The deepest count below the most that a chosen mix of this run took (see `Mix.reach`): a run with the
        # same `mix_below` and a depth from `reach` up to this one's makes every choice alike (`same_run`).
        self.reach = 0
        # Per group of node constraints, the free classes in placement order with their positions.
        self.placing = 0
        self.free_groups: dict[tuple[object, ...], list[tuple[int, PodClass]]] = {}
        self.free_key: dict[int, tuple[object, ...]] = {}
        self.promised: dict[int, int] = {}  # per free class, pods new claims were sized to take
        self.mixes: dict[tuple[int, int, float, int, int], Mix] = {}  # the last look-ahead per claim shape
        for index, cls in enumerate(classes):
            if cls.terms or cls.preferred_terms or cls.host_ports or cls.volume_error or cls.ebs_claims:
                continue
            free = (
                tuple(req_key(r) for r in cls.requirement_options),
                tuple((w, req_key(r)) for w, r in cls.preferred_node_terms),
                cls.tolerations,
            )
            self.free_key[id(cls)] = free
            self.free_groups.setdefault(free, []).append((index, cls))

    @property
    def may_skip(self) -> bool:
        """Whether a run with these classes can skip a look-ahead at all: only a free class of large pods is
        looked ahead for (`mixed_choice`), so without one `mix_skipped` stays False whatever happens."""
        return any(_large(cls) for group in self.free_groups.values() for _, cls in group)

    @property
    def mix_skipped(self) -> bool:
        """Whether `solve` should also plan with its other look-ahead settings: a look-ahead was skipped, and
        the run made a choice they may make differently (otherwise, class by class, they choose alike)."""
        return self.skipped and self.varies

    def same_run(self, mix_below: int, mix_depth: int) -> bool:
        """After a run, whether a run of the same classes from the same start with these settings would make every
        choice this one made, and so the same plan.

        With the same `mix_below` the same classes are looked ahead for. A scan of a smaller depth scores a subset
        of the configurations (the first counts below the most of each type), in the same order; its pruning bound
        is never tighter, since its best so far is never better, so it reaches every type this scan reached, and
        scores are totally ordered (count and name break ties): when this scan's winner is in the subset
        (`reach` <= the depth), it wins there too, and beyond the types this scan reached every score is above
        the bound it stopped at. So every look-ahead answers alike, and, step by step, the runs are the same."""
        return mix_below == self.mix_below and self.reach <= mix_depth <= self.mix_depth

    def mixed_choice(
        self,
        ctx: PoolContext,
        compat: PoolCompat,
        cls: PodClass,
        rkey: ReqKey,
        cap: int,
        choice: tuple[Candidate, int],
    ) -> tuple[Candidate, int]:
        """The type for a new claim of a free class of large pods, judged with the free pods still to come.

        The class-by-class choice sizes a node for one class; with large pods that leaves room no later
        pod fits (24-vCPU pods on 32-vCPU nodes), while a type that holds a mix of classes wastes less.
        Each candidate type is scored by the value of what one node would hold (this class's pods, then
        the pending free pods of the same node constraints, largest first) over its price, a pod's value
        being its class's price per pod on nodes of its own; up to `mix_depth` counts of this class are
        tried per type. Small pods pack well alone and skip this (see _MIX_FROM_CPU), and so do classes
        whose own best node holds `mix_below` or more of them (noted in `mix_skipped`).
        """
        if not _large(cls):
            return choice
        rate, per_node = own_rate(ctx, compat, cls, rkey)
        if rate == float("inf"):
            return choice
        others = self._pending(ctx, compat, cls, rkey)
        if per_node >= self.mix_below:
            self.skipped = True
            # Without free pods to come the mix would be this choice too, whatever the settings.
            self.varies = self.varies or bool(others)
            return choice
        if not others:
            return choice
        self.varies = True
        key = (id(compat), id(cls), rate, id(choice[0]), choice[1])
        mix = self.mixes.get(key)
        if mix is None or not mix.holds_for(cap, others):
            mix = self.mixes[key] = self._best_mix(compat, cls, cap, rate, others, choice)
        self.reach = max(self.reach, mix.reach)
        groups = {(o[0], o[1]): o[4] for o in others}
        self._promise([(groups[size], n) for size, n in mix.fill])
        return mix.chosen

    def _pending(self, ctx: PoolContext, compat: PoolCompat, cls: PodClass, rkey: ReqKey) -> list[_Pending]:
        """The free pods still to come with the class's node constraints, not yet counted on by an earlier
        claim (each pod can fill only one node), per size (classes of one size differ only in labels, so
        they fill a node alike): cpu, memory, count, price per pod on nodes of their own, classes."""
        sized: dict[tuple[int, int], tuple[int, float, list[PodClass]]] = {}
        for index, other in self.free_groups[self.free_key[id(cls)]]:
            if index <= self.placing:
                continue
            count = len(other.pods) - self.promised.get(id(other), 0)
            if count <= 0:
                continue
            size = (max(other.requests.get(CPU, 0), 1), max(other.requests.get(MEMORY, 0), 1))
            seen = sized.get(size)
            if seen is None:
                other_rate, _ = own_rate(ctx, compat, other, rkey)
                if other_rate < float("inf"):
                    sized[size] = (count, other_rate, [other])
            else:
                sized[size] = (seen[0] + count, seen[1], [*seen[2], other])
        return [(cpu, memory, count, r, group) for (cpu, memory), (count, r, group) in sized.items()]

    def _best_mix(
        self,
        compat: PoolCompat,
        cls: PodClass,
        cap: int,
        rate: float,
        others: list[_Pending],
        choice: tuple[Candidate, int],
    ) -> Mix:
        """The type and count of the class with the most value per price once `others` fill the rest of the
        node, largest first, and the sizes of `others` that fill it (`choice` when no type beats it)."""
        best: Score | None = None
        chosen: tuple[Candidate, int] = choice
        fill: list[tuple[_Size, int]] = []
        needed: dict[_Size, int] = {}
        largest = reach = 0
        need_cpu, need_memory = cls.requests.get(CPU, 0), cls.requests.get(MEMORY, 0)
        # No node holds more value than its cpu (or memory, or pod slots) times the best value per unit of
        # it among these pods: candidates are visited by that optimistic score and the scan stops once it
        # cannot beat the best score found.
        per_cpu = max([rate / max(need_cpu, 1)] + [o[3] / o[0] for o in others])
        per_memory = max([rate / max(need_memory, 1)] + [o[3] / o[1] for o in others])
        per_slot = max([rate] + [o[3] for o in others])
        optimistic = sorted(
            (-min(b[0] * per_cpu, b[1] * per_memory, b[2] * per_slot) / compat.prices[i], i)
            for i in compat.frontier
            for b in (compat.basics[i],)
        )
        for bound, index in optimistic:
            if best is not None and bound > best[0]:
                break
            price, candidate = compat.candidates[index]
            copies = candidate.copies_of(cls.request_key, cls.requests)
            largest = max(largest, copies)
            most = min(cap, copies)
            # Fewer pods of this class can leave room that a mix of the others fills better.
            for k in range(most, max(most - self.mix_depth, 0), -1):
                cpu, memory, slots = candidate.basics
                cpu, memory, slots = cpu - k * need_cpu, memory - k * need_memory, slots - k
                value = k * rate
                taken: list[tuple[_Size, int]] = []
                for other_cpu, other_memory, count, other_rate, _ in others:
                    if slots <= 0:
                        break
                    n = min(count, cpu // other_cpu, memory // other_memory, slots)
                    if n > 0:
                        size = (other_cpu, other_memory)
                        needed[size] = max(needed.get(size, 0), n)
                        value += n * other_rate
                        taken.append((size, n))
                        cpu, memory, slots = cpu - n * other_cpu, memory - n * other_memory, slots - n
                score = (-value / price, -k, price, candidate.it.name)
                if best is None or score < best:
                    best, chosen, fill, reach = score, (candidate, k), taken, most - k + 1
        return Mix(chosen, fill, needed, [(o[0], o[1], o[3]) for o in others], cap, largest, reach)

    def _promise(self, fill: list[tuple[list[PodClass], int]]) -> None:
        """Count the pods a new claim was sized to take as spoken for, so no later claim counts on them."""
        for group, n in fill:
            for other in group:  # in placement order, as the room walk will fill them
                took = min(n, len(other.pods) - self.promised.get(id(other), 0))
                if took > 0:
                    self.promised[id(other)] = self.promised.get(id(other), 0) + took
                    n -= took


def min_values_shortfall(compat: PoolCompat, chosen: Candidate, request: Mapping[str, int], k: int) -> str:
    """Why a claim for k pods would break a requirement's minValues ("" when it would not).

    minValues asks for at least N distinct values of a label among the claim's instance types, so
    the launch can fall back across them; the types that fit the pods must provide that many.
    """
    keyed = [(key, vs.min_values) for key, vs in compat.requirements.by_key.items() if vs.min_values]
    if not keyed:
        return ""
    total = res.scale(request, k)
    fitting = [
        c
        for _, c in compat.candidates
        if (c.exotic == chosen.exotic or not c.exotic) and res.fits(total, c.allocatable)
    ][:MAX_INSTANCE_TYPES]
    for key, wanted in sorted(keyed, key=lambda kv: kv[0]):
        values = {c.it.labels.get(key) for c in fitting} - {None}
        if len(values) < (wanted or 0):
            return f"minValues {wanted} for {key} cannot be met: the types that fit offer {len(values)}"
    return ""


def pool_refusal(ctx: PoolContext, tolerations: tuple[Toleration, ...]) -> str:
    """Why the NodePool can open no claim for pods with these tolerations ("" when it may)."""
    if ctx.error:
        return ctx.error
    taint = untolerated(tolerations, ctx.taints)
    if taint is not None:
        return f"taint {taint} is not tolerated"
    if ctx.remaining is not None:
        exhausted = sorted(k for k, v in ctx.remaining.items() if v <= 0)
        if exhausted:
            return f"limits reached for {', '.join(exhausted)}"
    return ""


def no_fit_reason(ctx: PoolContext, compat: PoolCompat, cls: PodClass) -> str:
    if ctx.remaining is not None:
        if not any(within(c.capacity, ctx.remaining) for _, c in compat.candidates):
            return "limits leave no room for another node"
        fitting = [c for _, c in compat.candidates if res.fits(cls.requests, c.allocatable)]
        if fitting and not any(within(c.capacity, ctx.remaining) for c in fitting):
            return "limits leave no room for an instance type large enough for the pod"
    short = res.first_shortfall(cls.requests, compat.roomiest.allocatable)
    need = cls.requests.get(short or "cpu", 0)
    return f"no instance type has enough {short} (the pod needs {need}, after DaemonSet overhead)"


def _large(cls: PodClass) -> bool:
    """Whether the class's pods are large enough for the look-ahead (small pods pack well alone)."""
    return cls.requests.get(CPU, 0) >= _MIX_FROM_CPU or cls.requests.get(MEMORY, 0) >= _MIX_FROM_MEMORY
