"""The NodePools of one simulation run: each with its template, its limits left and its answers by number.

Per NodePool: its `templates.Template` (requirements, taints, instance types as candidates, priced answers per
requirement set; prepared once and kept across solves), the limits left after the nodes and NodeClaims that
already count against them, and the run's caches keyed by requirement-set numbers (`Pools.req_id`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.catalog.allocatable import capacity
from nodewright.catalog.types import InstanceType
from nodewright.model import resources as res
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import DaemonSet, Node
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint, untolerated
from nodewright.scheduling.candidates import Candidate, ContentKey, req_key
from nodewright.scheduling.classes import required_node_options
from nodewright.scheduling.nodepods import NodePods
from nodewright.scheduling.templates import PoolCompat, Template, TemplateCache

# A requirement set as a dictionary key. Within one Solver each distinct set is numbered once (see
# `Pools.req_id`): bins and NodePools look up their caches by requirement set at every step, and an
# int hashes and compares in C where a tuple of value sets calls Python code per value set.
ReqKey = int


@dataclass(slots=True)
class PoolContext:
    """A NodePool in one solve: its template (requirements, taints, candidates), its limits left and the run's
    answers by requirement-set number."""

    pool: NodePool
    node_class: EC2NodeClass | None
    requirements: Requirements
    taints: tuple[Taint, ...]
    candidates: list[Candidate]
    remaining: dict[str, int] | None  # limits left; None when the NodePool has no limits
    template: Template | None = None  # None when the EC2NodeClass is missing (`error`)
    error: str = ""
    compat: dict[ReqKey, PoolCompat | str] = field(default_factory=dict)


class Pools:
    """The NodePools of one run, heaviest first, with the catalog and DaemonSets they launch with.

    It also numbers requirement sets (`req_id`): every cache of the run is keyed by those numbers.
    """

    def __init__(
        self,
        nodepools: Sequence[NodePool],
        nodeclasses: Sequence[EC2NodeClass],
        instance_types: Sequence[InstanceType],
        daemonsets: Sequence[DaemonSet],
        nodes: Sequence[Node],
        on_nodes: Sequence[NodePods],
        nodeclaims: Sequence[NodeClaim],
        templates: TemplateCache,
        price_ceiling: float | None = None,
    ) -> None:
        self.templates = templates
        # New NodeClaims may only use types priced below it (a consolidation's replacement); existing nodes and
        # claims in flight keep their types whatever they cost.
        self.price_ceiling = price_ceiling
        self.req_ids: dict[ContentKey, ReqKey] = {}  # see `req_id`
        self.req_keys: list[ContentKey] = []  # the content of each number
        self.instance_types = sorted(instance_types, key=lambda it: it.name)
        self.type_ids = tuple(map(id, self.instance_types))
        self.types_by_name = {it.name: it for it in self.instance_types}
        self.daemonsets = _as_running(sorted(daemonsets, key=lambda d: (d.namespace, d.name)), on_nodes)
        # Each DaemonSet with its pods' ORed required node requirements (nodeSelector and node affinity).
        self.daemonset_options = [(ds, required_node_options(ds.pod)) for ds in self.daemonsets]
        # The labels their required node affinity reads: nodes alike in those (and in taints) run the same ones.
        self.daemonset_keys = sorted(
            {key for _, options in self.daemonset_options for o in options for key in o.by_key}
        )
        self.daemonset_requests_of: dict[tuple[object, ...], dict[str, int]] = {}  # see `daemonset_requests`
        limited = any(p.limits for p in nodepools)
        self.contexts = self._contexts(nodepools, nodeclasses, self.counted(nodes, nodeclaims) if limited else {})

    def _contexts(
        self,
        nodepools: Sequence[NodePool],
        nodeclasses: Sequence[EC2NodeClass],
        counted: Mapping[str, Mapping[str, int]],
    ) -> list[PoolContext]:
        classes_of = {nc.name: nc for nc in nodeclasses}
        # Karpenter's OrderByWeight: heaviest first and, among equal weights, the name later in the alphabet
        # first (pkg/utils/nodepool OrderByWeight), in provisioning and in every disruption simulation.
        return [
            self._pool_context(p, classes_of.get(p.node_class_ref.name), counted.get(p.name, {}))
            for p in sorted(nodepools, key=lambda p: (p.weight, p.name), reverse=True)
        ]

    def derive(
        self,
        nodepools: Sequence[NodePool],
        nodeclasses: Sequence[EC2NodeClass],
        counted: Mapping[str, Mapping[str, int]],
        price_ceiling: float | None,
    ) -> Pools:
        """The NodePools of another solve of the same cluster (the same catalog, DaemonSets and cache), whose nodes
        and claims in flight count `counted` against the limits (see `counted`): its own NodePools, limits and price
        ceiling. Requirement-set numbers and the DaemonSets' answers are shared, so bins registered under these
        Pools keep their numbers under the derived ones (`existing.Registration.fork`)."""
        other = copy.copy(self)
        other.price_ceiling = price_ceiling
        other.contexts = other._contexts(nodepools, nodeclasses, counted)
        return other

    def counted(self, nodes: Sequence[Node], claims: Sequence[NodeClaim]) -> dict[str, dict[str, int]]:
        """What the nodes and NodeClaims in flight count against their NodePools' limits, by NodePool name: per
        resource the sum of their capacities, and `nodes` their number. Karpenter counts what its NodeClaims'
        instances report as capacity (not allocatable), so a node counts as its instance type's capacity; a
        registered claim is counted through its node. Sums, so a fork adds and takes away nodes (`add_counted`)."""
        counted: dict[str, dict[str, int]] = {}
        for node in nodes:
            add_counted(counted, *self.node_counted(node), 1)
        node_names = {n.name for n in nodes}
        for claim in claims:
            if not (claim.node_name and claim.node_name in node_names):
                add_counted(counted, claim.nodepool, self.claim_capacity(claim), 1)
        return counted

    def node_counted(self, node: Node) -> tuple[str, Mapping[str, int]]:
        """The NodePool (by its label) a node counts against, and what it counts (`counted`)."""
        return node.labels.get("karpenter.sh/nodepool", ""), self._node_capacity(node)

    def fork(self) -> tuple[Pools, dict[int, PoolContext]]:
        """The NodePools for another run of the same solve, with the limits left as they are now, and each
        context's copy by the original's id. Requirement-set numbers and the NodePools' answers are shared:
        they depend on the inputs only."""
        other = copy.copy(self)
        other.contexts = [
            dataclasses.replace(c, remaining=dict(c.remaining) if c.remaining is not None else None)
            for c in self.contexts
        ]
        return other, {id(c): o for c, o in zip(self.contexts, other.contexts, strict=True)}

    def daemonset_requests(self, labels: Mapping[str, str], taints: tuple[Taint, ...]) -> dict[str, int]:
        """The summed requests of the DaemonSets whose pods run on a node with these labels and taints: they
        tolerate its taints and their required node affinity matches its labels. Kept per the values of the
        labels that affinity reads, so a thousand nodes of a few NodePools, types and zones ask a few times."""
        key = (tuple(labels.get(k) for k in self.daemonset_keys), taints)
        found = self.daemonset_requests_of.get(key)
        if found is None:
            found = {}
            for ds, options in self.daemonset_options:
                if untolerated(ds.pod.tolerations, taints) is None and any(o.matches_labels(labels) for o in options):
                    found = res.add(found, ds.pod.requests)
            self.daemonset_requests_of[key] = found
        return found

    def req_id(self, requirements: Requirements) -> ReqKey:
        """The number of this requirement set in this run: equal sets get equal numbers."""
        return self.req_id_of(req_key(requirements))

    def req_id_of(self, key: ContentKey) -> ReqKey:
        """`req_id` for a requirement set's content key (`templates.req_key`), when the caller has it."""
        number = self.req_ids.get(key)
        if number is None:
            number = self.req_ids[key] = len(self.req_keys)
            self.req_keys.append(key)
        return number

    def _pool_context(self, pool: NodePool, node_class: EC2NodeClass | None, counted: Mapping[str, int]) -> PoolContext:
        if node_class is None:
            error = f"EC2NodeClass {pool.node_class_ref.name} not found"
            return PoolContext(pool, None, pool.node_requirements(), pool.taints, [], None, error=error)
        prepared = self.templates.template(pool, node_class, self.instance_types, self.daemonset_options, self.type_ids)
        ctx = PoolContext(pool, node_class, prepared.requirements, pool.taints, prepared.candidates, None, prepared)
        if pool.limits:
            # The limits left after what counts against them (integer sums: the same as consuming one by one).
            ctx.remaining = {key: left - counted.get(key, 0) for key, left in pool.limits.items()}
        return ctx

    def _node_capacity(self, node: Node) -> Mapping[str, int]:
        """What a NodePool's limits count for an existing node: its type's capacity, else its allocatable."""
        it = self.types_by_name.get(node.labels.get("node.kubernetes.io/instance-type", ""))
        return capacity(it) if it is not None else node.allocatable

    def claim_capacity(self, claim: NodeClaim) -> Mapping[str, int]:
        """What a NodePool's limits count for an in-flight NodeClaim.

        A launched claim counts its type's capacity. One not launched yet may still become any of the
        types it lists, so it counts the largest of them per resource (as Karpenter reserves the most
        any remaining option could use); without a known type, its requests.
        """
        it = self.types_by_name.get(claim.instance_type)
        if it is not None:
            return capacity(it)
        listed = Requirements.of(claim.requirements).by_key.get("node.kubernetes.io/instance-type")
        options = [t for t in self.instance_types if listed.matches(t.name)] if listed is not None else []
        if options:
            largest: dict[str, int] = {}
            for option in options:
                largest = res.elementwise_max(largest, capacity(option))
            return largest
        return claim.requests

    def compat(self, ctx: PoolContext, requirements: Requirements, rkey: ReqKey) -> PoolCompat | str:
        """The NodePool's answer for these requirements (numbered `rkey` in this run): its template's, which
        outlives the run."""
        cached = ctx.compat.get(rkey)
        if cached is not None:
            return cached
        assert ctx.template is not None  # callers skip NodePools with an error
        result = ctx.template.compat(requirements, self.req_keys[rkey])
        if self.price_ceiling is not None and isinstance(result, PoolCompat):
            result = result.below(self.price_ceiling)
        ctx.compat[rkey] = result
        if isinstance(result, PoolCompat):
            # Claims carry the merged requirements, and asking with those gives the same answer (the NodePool's
            # requirements are already in them, and every candidate already matches those): keep it for them.
            ctx.compat.setdefault(self.req_id(result.requirements), result)
        return result


def _as_running(daemonsets: Sequence[DaemonSet], on_nodes: Sequence[NodePods]) -> list[DaemonSet]:
    """The DaemonSets with the requests of their running pods where some run (Karpenter simulates the
    DaemonSet's pod, not its template: a LimitRange or a vertical autoscaler may have changed the
    requests). Pods of one DaemonSet can differ during a rollout; the largest request of each resource
    counts, so no node is planned too small. The template keeps the node affinity: a running pod's is
    pinned to its own node's name."""
    running: dict[tuple[str, str], Mapping[str, int]] = {}
    for pods in on_nodes:
        for key, here in pods.daemon_requests.items():
            known = running.get(key)
            running[key] = here if known is None or known == here else res.elementwise_max(known, here)
    return [
        dataclasses.replace(ds, pod=dataclasses.replace(ds.pod, requests=requests))
        if (requests := running.get((ds.namespace, ds.name))) is not None
        else ds
        for ds in daemonsets
    ]


def add_counted(counted: dict[str, dict[str, int]], pool: str, capacity_: Mapping[str, int], sign: int) -> None:
    """Add (`sign` 1) or take away (-1) one node or claim of this capacity in `counted` (see `Pools.counted`)."""
    into = counted.setdefault(pool, {})
    for key, value in capacity_.items():
        if key != "nodes":
            into[key] = into.get(key, 0) + sign * value
    into["nodes"] = into.get("nodes", 0) + sign


def consume(remaining: Mapping[str, int], capacity_: Mapping[str, int]) -> dict[str, int]:
    """NodePool limits left after one more node of this capacity (only the limited resources count)."""
    return {key: left - (1 if key == "nodes" else capacity_.get(key, 0)) for key, left in remaining.items()}


def within(capacity_: Mapping[str, int], remaining: Mapping[str, int]) -> bool:
    for key, left in remaining.items():
        need = 1 if key == "nodes" else capacity_.get(key, 0)
        if need > left:
            return False
    return True
