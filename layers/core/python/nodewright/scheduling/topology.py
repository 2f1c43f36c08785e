"""Topology: pods counted per topology domain, and what the counts allow (Karpenter's topology.go and
topologygroup.go).

One counter per topology group (key, selector, namespaces, node filter; see `TopologyTerm.group`). Spread
and affinity count a pod where its node's domain is decided; anti-affinity counts it in every domain its
node may still end up in. The domains of a key are those NodePools can create and those of existing
nodes (Karpenter's buildDomainGroups), so spread, affinity and anti-affinity work on any key: zone,
capacity type, architecture or a label the NodePools set. Hostname terms are checked per node.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence

from nodewright.catalog.labels import ZONE
from nodewright.model.objects import HOSTNAME_LABEL, Pod
from nodewright.model.requirements import Requirements, ValueSet
from nodewright.model.taints import Taint, untolerated
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.classes import NO_FILTER, NodeFilter, PodClass, TopologyTerm, pod_terms
from nodewright.scheduling.nodepods import NodePods, SelectionKey
from nodewright.scheduling.pools import Pools, ReqKey
from nodewright.scheduling.preferences import Variant
from nodewright.scheduling.templates import PoolCompat, pool_domains


class Topology:
    """The topology groups of one run and their counts per domain.

    Built with the classes to place and the running pods with required anti-affinity (their terms count too);
    `existing` is set to the existing nodes and claims in flight once they are registered.
    """

    def __init__(self, pools: Pools, classes: Sequence[PodClass], anti_affinity_pods: Iterable[Pod]) -> None:
        self.pools = pools
        self.index: dict[tuple[object, ...], int] = {}
        self.terms: list[TopologyTerm] = []
        self.counts: list[dict[str, int]] = []
        self.carried: list[dict[str, int]] = []  # anti-affinity: pods that carry the term, per domain
        # Hostname groups: the bins in the order they first held a selected pod (a count never drops to 0).
        self.hosts: list[list[Bin]] = []
        # Group index per term object: terms live as long as their classes, so id() is a stable key.
        self.term_groups: dict[int, int] = {}
        for cls in classes:
            for term in (*cls.terms, *cls.preferred_terms):
                self.term_groups[id(term)] = self.add(term)
        for pod in anti_affinity_pods:
            for term in _anti_terms(pod):
                self.add(term)
        # Classes differ mostly in requests and terms, and running pods are mostly replicas: match each
        # (namespace, label set) once. Every group exists by now, so an answer never goes stale.
        self.members: dict[tuple[str, tuple[tuple[str, str], ...]], list[int]] = {}
        for cls in classes:
            cls.member_of = list(self.selecting(cls.namespace, cls.labels))
        # Existing nodes and claims in flight: their domains are topology domains even without a NodePool.
        # Per topology key: the domains NodePools can create, existing domains, and per (key, requirement
        # set) the domains a node may have; per (group, requirements) a spread's domains.
        self.existing: list[Bin] = []
        self.universes: dict[str, dict[str, list[tuple[Taint, ...]]]] = {}
        self.existing_cache: dict[str, frozenset[str]] = {}
        self.domains_cache: dict[tuple[str, ReqKey], list[str]] = {}
        self.spread_cache: dict[tuple[int, ReqKey], list[str]] = {}
        self.counted_cache: dict[tuple[str, NodeFilter], frozenset[str]] = {}  # see `_counted_domains`
        # Per (node filter's id, requirement set, taints) of a claim: whether the filter counts its pods (`admits`).
        self.admitted: dict[tuple[int, ReqKey, tuple[Taint, ...]], bool] = {}

    def fork(self, pools: Pools, bin_of: Mapping[int, Bin]) -> Topology:
        """These groups and counts for another run of the solve, its bins as copied in `bin_of` (by the
        original's id). The groups, their members and the domain caches depend on the inputs only: shared."""
        other = copy.copy(self)
        other.pools = pools
        other.counts = [dict(c) for c in self.counts]
        other.carried = [dict(c) for c in self.carried]
        other.hosts = [[bin_of[id(b)] for b in hosts] for hosts in self.hosts]
        other.existing = [bin_of[id(b)] for b in self.existing]
        return other

    def add(self, term: TopologyTerm) -> int:
        """The index of the term's group, created empty the first time the group is seen."""
        g = self.index.get(term.group)
        if g is None:
            g = self.index[term.group] = len(self.terms)
            self.terms.append(term)
            self.counts.append({})
            self.carried.append({})
            self.hosts.append([])
        return g

    def total(self, g: int) -> int:
        """Pods counted in group g over all its domains."""
        return sum(self.counts[g].values())

    def selecting(self, namespace: str, labels: Mapping[str, str], key: SelectionKey | None = None) -> list[int]:
        """The groups whose selector matches pods of this namespace and labels (`key`: the two as
        `nodepods.selection_key` makes it, when the caller has it). Callers do not modify the list."""
        key = key or (namespace, tuple(sorted(labels.items())))
        found = self.members.get(key)
        if found is None:
            found = self.members[key] = [g for g, t in enumerate(self.terms) if t.selects(namespace, labels)]
        return found

    def record(self, b: Bin, pods: NodePods) -> None:
        """Count the pods already on b (an existing node or a claim in flight), with their anti-affinity: the
        pods of one namespace and labels together, as they count alike."""
        for key, labels, count in pods.selected:
            for g in self.selecting(key[0], labels, key):
                self.add_count(b, g, count)
        for pod in pods.carriers:
            for term in _anti_terms(pod):
                self.carry(b, self.index[term.group], term.topology_key, 1)

    def add_count(self, b: Bin, g: int, k: int) -> None:
        """Count k selected pods on bin b for group g (Karpenter's Topology.Record).

        Spread and affinity count a pod only where its domain is decided and the group's node filter
        admits the bin; anti-affinity counts it in every domain its node may still end up in, so no pod
        that avoids it can land beside it once the domain is decided.
        """
        term = self.terms[g]
        if term.node_filter is not NO_FILTER and not self.admits(term, b):
            return
        d = b.domain(term.topology_key)
        if d is None:
            if term.kind != "anti":
                return
            domains = self.possible_domains(b, term.topology_key)
        else:
            domains = [d]
        counts = self.counts[g]
        for domain in domains:
            before = counts.get(domain, 0)
            counts[domain] = before + k
            if before == 0 and term.topology_key == HOSTNAME_LABEL:
                self.hosts[g].append(b)

    def carry(self, b: Bin, g: int, topology_key: str, k: int) -> None:
        """Record k pods on b that carry anti-affinity group g: selected pods must avoid their domains,
        every domain b may still end up in while it is not decided."""
        d = b.domain(topology_key)
        carried = self.carried[g]
        for domain in [d] if d is not None else self.possible_domains(b, topology_key):
            carried[domain] = carried.get(domain, 0) + k

    # ----- compatibility ------------------------------------------------------------------------------

    def group_of(self, term: TopologyTerm) -> int:
        """The group index of a term of one of the run's classes."""
        return self.term_groups[id(term)]

    def bin_cap(self, b: Bin, cls: PodClass, terms: Sequence[TopologyTerm], n: int) -> int:
        """How many pods of the class its hostname terms, anti-affinity against it and host ports allow on b."""
        cap = n
        for term in terms:
            if term.topology_key != HOSTNAME_LABEL:
                continue  # decided before the bins are visited (`_place_in_domains`)
            g = self.group_of(term)
            d = b.domain(term.topology_key)
            count = self.counts[g].get(d, 0) if d is not None else 0
            member = g in cls.member_of
            if term.kind == "spread":
                # A new node is always a possible domain with no matching pods, so the minimum is 0.
                allowed = term.max_skew - count
                cap = min(cap, allowed if member else (n if count <= term.max_skew else 0))
            elif term.kind == "anti":
                cap = min(cap, 0 if count > 0 else (1 if member else n))
            elif count == 0 and not (member and self.total(g) == 0):
                # Required pod affinity: only where matching pods run, unless none runs anywhere and
                # the class matches its own term (then the first pods choose the domain).
                return 0
            if cap <= 0:
                return 0
        for g in cls.member_of:
            carried = self.carried[g]
            if carried:
                d = b.domain(self.terms[g].topology_key)
                if d is not None and carried.get(d, 0) > 0:
                    return 0
        if cls.host_ports:
            if b.ports & cls.host_ports:
                return 0
            cap = min(cap, 1)
        return cap

    def new_bin_cap(self, cls: PodClass, terms: Sequence[TopologyTerm], n: int) -> int:
        """The most pods of the class one brand-new node may take under its non-zone topology terms."""
        cap = n
        for term in terms:
            if term.topology_key != HOSTNAME_LABEL:
                continue
            g = self.group_of(term)
            member = g in cls.member_of
            if term.kind == "spread" and member:
                cap = min(cap, term.max_skew)
            elif term.kind == "anti" and member:
                cap = min(cap, 1)
            elif term.kind == "affinity" and not (member and self.total(g) == 0):
                return 0
        if cls.host_ports:
            cap = min(cap, 1)
        return cap

    def quotas(
        self, cls: PodClass, variant: Variant, key: str, domains: list[str], n: int, full: set[str]
    ) -> dict[str, int]:
        """Per domain of `key` the pods of the class may take now (Karpenter's topologygroup.go rules).

        Spread: the emptiest domain counts over every domain the term knows (NodePools', existing nodes',
        as its node filter admits them) that the class's required requirements allow, so a domain only a
        preference excludes still holds the others back. Anti-affinity: only domains without a selected
        pod, including pods on claims whose domain is not decided yet. Affinity: only domains that hold a
        selected pod, or one domain for a class that selects itself when no selected pod runs where the
        class may go.
        """
        quotas = {d: n for d in domains}
        for term in variant.terms:
            if term.topology_key != key:
                continue
            g = self.group_of(term)
            counted = self.counts[g]
            member = g in cls.member_of
            if term.kind == "spread":
                known = self.spread_domains(term, g, variant.base)
                floor = 0 if term.min_domains is not None and len(known) < term.min_domains else None
                lowest = floor if floor is not None else min((counted.get(d, 0) for d in known), default=0)
                if member:
                    counts = {d: counted.get(d, 0) for d in (*known, *domains)}
                    closed = full | (set(counts) - set(domains))
                    fill = water_fill(counts, n, term.max_skew, lowest, closed)
                    quotas = {d: min(q, fill.get(d, 0)) for d, q in quotas.items()}
                else:
                    quotas = {d: (q if counted.get(d, 0) - lowest <= term.max_skew else 0) for d, q in quotas.items()}
            elif term.kind == "anti":
                quotas = {d: (min(q, 1 if member else n) if not counted.get(d, 0) else 0) for d, q in quotas.items()}
            else:
                present = [d for d in domains if counted.get(d, 0) > 0]
                if not present and member and not self._any_allowed(counted, variant.base.get(key)):
                    present = domains[:1]
                quotas = {d: (q if d in present else 0) for d, q in quotas.items()}
        for g in cls.member_of:
            carried = self.carried[g]
            if carried and self.terms[g].topology_key == key:
                quotas = {d: (0 if carried.get(d, 0) else q) for d, q in quotas.items()}
        return {d: (0 if d in full else q) for d, q in quotas.items()}

    @staticmethod
    def _any_allowed(counted: Mapping[str, int], allowed: ValueSet) -> bool:
        """Whether a selected pod runs in a domain these requirements allow: when none does, a class that
        selects itself may start a domain of its own (Karpenter's bootstrap for pod affinity)."""
        return any(c > 0 and allowed.matches(d) for d, c in counted.items())

    def spread_domains(self, term: TopologyTerm, g: int, base: Requirements) -> list[str]:
        """The domains a spread term counts for a class whose required requirements are `base`: those the
        NodePools can create (under nodeTaintsPolicy Honor, only NodePools whose taints the pod tolerates),
        those of existing nodes its node filter admits, and any that already count a pod; then only those
        `base` allows for the key (Karpenter's domainMinCount)."""
        key = term.topology_key
        cache_key = (g, self.pools.req_id(base))
        known = self.spread_cache.get(cache_key)
        if known is None:
            allowed = base.get(key)
            known = self.spread_cache[cache_key] = sorted(d for d in self._counted_domains(term) if allowed.matches(d))
        counted = self.counts[g]
        allowed = base.get(key)
        extra = [d for d, c in counted.items() if c > 0 and d not in known and allowed.matches(d)]
        return known + extra if extra else known

    def _counted_domains(self, term: TopologyTerm) -> frozenset[str]:
        """The domains of the term's key its node filter counts, before a class's requirements narrow them:
        those of the NodePools (under nodeTaintsPolicy Honor, whose taints the pod tolerates) and of the
        existing nodes it admits. Kept per (key, filter): many groups share one, and the existing nodes are many."""
        cache_key = (term.topology_key, term.node_filter)
        found = self.counted_cache.get(cache_key)
        if found is None:
            key, tolerations = term.topology_key, term.node_filter.tolerations
            domains = {
                domain
                for domain, taint_sets in self.universe(key).items()
                if tolerations is None or any(untolerated(tolerations, t) is None for t in taint_sets)
            }
            for b in self.existing:
                # Only whether some admitted node has the domain counts: a domain found needs no more nodes asked.
                if (d := b.domain(key)) is not None and d not in domains and self.admits(term, b):
                    domains.add(d)
            found = self.counted_cache[cache_key] = frozenset(domains)
        return found

    def universe(self, key: str) -> dict[str, list[tuple[Taint, ...]]]:
        """Every value of `key` a NodePool can give a node, with the taints of the NodePools that give it
        (Karpenter's buildDomainGroups): from its instance types' labels and offerings, its requirements'
        In values and its template labels."""
        cached = self.universes.get(key)
        if cached is None:
            cached = {}
            for ctx in self.pools.contexts:
                if ctx.error:
                    continue
                for domain in pool_domains(key, ctx.requirements, ctx.candidates, None):
                    cached.setdefault(domain, []).append(ctx.taints)
            self.universes[key] = cached
        return cached

    def domains_of(self, key: str, requirements: Requirements, rkey: ReqKey) -> list[str]:
        """The values of `key` a node for these requirements can have: existing nodes' and claims' in
        flight, and what each NodePool can launch under them (a generalisation of the zones it offers)."""
        cached = self.domains_cache.get((key, rkey))
        if cached is not None:
            return cached
        allowed = requirements.get(key)
        found = {d for d in self.existing_domains(key) if allowed.matches(d)}
        for ctx in self.pools.contexts:
            if ctx.error:
                continue
            compat = self.pools.compat(ctx, requirements, rkey)
            if isinstance(compat, PoolCompat):
                found.update(compat.domains_of(key))
        result = self.domains_cache[(key, rkey)] = sorted(found)
        return result

    def existing_domains(self, key: str) -> frozenset[str]:
        """The values of `key` that existing nodes and claims in flight carry."""
        cached = self.existing_cache.get(key)
        if cached is None:
            cached = frozenset(d for b in self.existing if (d := b.domain(key)) is not None)
            self.existing_cache[key] = cached
        return cached

    def admits(self, term: TopologyTerm, b: Bin) -> bool:
        """Whether the term's node filter counts pods on this bin (always, without a filter)."""
        node_filter = term.node_filter
        if node_filter is NO_FILTER:
            return True
        if b.kind == "node":
            return node_filter.admits(b.labels, b.requirements, b.taints)
        # A claim is judged by its requirements (numbered `rkey`) and taints alone, and thousands of claims share a
        # few hundred of those: each is judged once per filter (the filters live as long as the classes do).
        key = (id(node_filter), b.rkey, b.taints)
        found = self.admitted.get(key)
        if found is None:
            found = self.admitted[key] = node_filter.admits(None, b.requirements, b.taints)
        return found

    def possible_domains(self, b: Bin, key: str) -> list[str]:
        """The values of `key` a claim whose value is not decided yet may still end up with."""
        allowed = b.requirements.get(key)
        if allowed.allowed is not None:
            return sorted(allowed.allowed)
        if b.pool is None or b.pool.error:
            return []
        compat = self.pools.compat(b.pool, b.requirements, b.rkey)
        return sorted(compat.domains_of(key)) if isinstance(compat, PoolCompat) else []

    def domain_keys(self, cls: PodClass, terms: tuple[TopologyTerm, ...]) -> tuple[str, ...]:
        """The topology keys other than hostname that the class's terms (or anti-affinity of pods already
        placed against it) constrain: the zone first, then by name. Each is decided before the pods land."""
        keys = {t.topology_key for t in terms if t.topology_key != HOSTNAME_LABEL}
        for g in cls.member_of:
            term = self.terms[g]
            if term.topology_key != HOSTNAME_LABEL and self.carried[g]:
                keys.add(term.topology_key)
        return tuple(sorted(keys, key=lambda k: (k != ZONE, k)))


def water_fill(counts: Mapping[str, int], n: int, max_skew: int, minimum: int, full: set[str]) -> dict[str, int]:
    """Share up to n pods over domains as one-at-a-time placement into the emptiest domain would.

    Returns pods per domain. Each pod goes to the open domain (not in `full`) with the fewest matching
    pods (ties by name) while that keeps it within `max_skew` of `minimum`, the emptiest count *now*
    over every domain the constraint knows, so whatever happens to the other domains' shares the skew
    holds; the caller repeats in rounds.
    """
    share = dict.fromkeys(counts, 0)
    open_domains = [d for d in counts if d not in full]
    if not open_domains:
        return share
    for _ in range(n):
        domain = min(open_domains, key=lambda d: (counts[d] + share[d], d))
        if counts[domain] + share[domain] + 1 - minimum > max_skew:
            break
        share[domain] += 1
    return share


def _anti_terms(pod: Pod) -> list[TopologyTerm]:
    """The pod's required anti-affinity terms (most running pods have none: their terms are not built)."""
    if not pod.pod_anti_affinity:
        return []
    return [term for term in pod_terms(pod)[0] if term.kind == "anti"]
