"""The scheduling simulation behind drift and consolidation: where would these nodes' pods go if they left?

It is the provisioner's own `solve()`, given (as Karpenter's SimulateScheduling gives its scheduler):
- as pending pods: the candidates' pods that must move (not DaemonSet or mirror pods; not pods that
  `karpenter.sh/do-not-disrupt` still protects or that a PodDisruptionBudget can never let go, since those will not
  move), the same pods of nodes already being disrupted (they need the same room), and the cluster's pending pods
  (not the ones waiting for a NodeClaim in flight, which that claim already holds);
- as existing capacity: every Ready node except the candidates and the nodes being disrupted, the nodes of
  nodewright's NodeClaims still starting (registered, not initialized, maybe not Ready yet), and the NodeClaims in
  flight with the pods nominated to them.
A candidate's pod that lands on capacity that is not initialized yet (a NodeClaim in flight, a node still starting)
makes the move unsafe, as in Karpenter: the decision would rest on a node that may never come up.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.disruption.candidates import Candidate, disruptable
from nodewright.disruption.one_node import one_new_node
from nodewright.disruption.registered import Registered, Usable
from nodewright.disruption.state import ClusterState
from nodewright.model import resources as res
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Node, Pod
from nodewright.model.taints import Taint, Toleration
from nodewright.scheduling import PlannedNodeClaim, Results, solve
from nodewright.scheduling.classes import VolumeIndex
from nodewright.scheduling.existing import Registration, SolveInputs

ZONE = "topology.kubernetes.io/zone"
NODEPOOL_LABEL = "karpenter.sh/nodepool"


@dataclass(frozen=True, slots=True)
class Simulation:
    """The outcome of moving the candidates' pods.

    `moving`: keys of the candidates' pods that must find room. `errors`: such a pod -> why it cannot move (no room,
    or only on capacity that is not initialized). `results`: the full plan, the cluster's pending pods included.
    """

    results: Results
    moving: tuple[str, ...]
    errors: Mapping[str, str]

    @property
    def new_claims(self) -> tuple[PlannedNodeClaim, ...]:
        return self.results.nodeclaims

    @property
    def all_moved(self) -> bool:
        return not self.errors


def currently_reschedulable(state: ClusterState, pod: Pod) -> bool:
    """Karpenter's IsCurrentlyReschedulable: the pod needs room elsewhere, its do-not-disrupt protection (if any) is
    over at `state.now`, and no budget selecting it can never let it go."""
    fact = state.facts(pod)
    return fact.reschedulable and disruptable(pod, fact, state.now) and not state.pdbs.fully_blocked(pod, fact.ready)


def movable(state: ClusterState, candidate: Candidate) -> list[Pod]:
    """The candidate's pods that will move (Karpenter's IsCurrentlyReschedulable), unbound for the simulation."""
    return [replace(p, node_name="") for p in candidate.reschedulable if currently_reschedulable(state, p)]


def simulate(
    state: ClusterState,
    candidates: Sequence[Candidate],
    also_disrupting: Collection[str] = (),
    one_claim: bool = False,
    ceiling: float | None = None,
    settling: Collection[str] = (),
) -> Simulation:
    """Inputs: the cluster, the candidates to take away together, NodeClaims chosen earlier in the same tick
    (treated as being disrupted), and whether at most one new NodeClaim may be planned (consolidation). Output: the
    plan for every pod that would then need room, and which candidate pods cannot move. Invariant: no pod is placed
    on a candidate or on a node being disrupted.

    The solver prices pod groups separately, so pods that one larger node would hold may come back on several
    small NodeClaims. With `one_claim`, such a plan is solved again once per NodePool with the NodePools' `nodes`
    limits allowing exactly one new node in that pool and none elsewhere (the solver then grows its claim into a
    larger type, as a Karpenter NodeClaim in flight does), and the cheapest plan that moves every pod is kept.
    `ceiling`: new NodeClaims may only use instance types priced below this (a consolidation can use nothing dearer
    than the nodes it removes, so the solver need not weigh the rest of the catalog).
    `settling`: nodes still inside their NodePool's `consolidateAfter` window. The candidates' pods may not land on
    them (Karpenter's IsConsolidationSimulation: a consolidation must not pack pods onto a node that has just had a
    pod event); the pending pods and the pods of nodes being disrupted may, as in Karpenter."""
    base = state.registered()  # the registered cluster, shared by the tick's simulations: each forks it
    names = {c.name for c in candidates}
    gone = base.gone(names | set(also_disrupting))
    moving = [p for c in candidates for p in movable(state, c)]
    displaced = [
        replace(p, node_name="")
        for m in base.members(gone)
        if m.nodeclaim not in names
        for p in state.pods_on(m)
        if currently_reschedulable(state, p)
    ]
    inflight, waiting = _inflight(state, base, names | set(also_disrupting))
    pending = [p for p in state.inputs.pending_pods if p.key not in waiting]
    pods = [*moving, *displaced, *pending]
    # A node of ours still starting counts although not Ready yet (Karpenter's scheduler sees every state node and
    # ignores a starting node's ephemeral taints); a pod it would take makes the move unsafe (`_outcome`).
    usable = [u for u in base.usable if u.node.name not in gone]
    nodes, whole = _condensed(usable, pods)
    if settling:
        pods, nodes = _fenced(pods, len(moving), nodes, set(settling))
    pools = list(base.nodepools)
    keys = {p.key for p in moving}
    known = [*inflight, *_starting_claims(state, base, {n.name for n in nodes} & base.starting.keys())]
    registration = _registration(state, base, whole)
    best = _outcome(state, keys, pods, nodes, known, pools, ceiling, registration)
    if not one_claim or len(best.new_claims) <= 1:
        return best
    for pool in pools:
        limited = one_new_node(pools, nodes, inflight, pool.name)
        found = _outcome(state, keys, pods, nodes, known, limited, ceiling, registration)
        if found.all_moved and len(found.new_claims) <= 1 and _cheaper(found, best):
            best = found
    return best


# Keeps the candidates' pods off nodes under consolidateAfter: the other pods of a simulation tolerate it.
SETTLING_TAINT = Taint("nodewright.io/under-consolidate-after", "NoSchedule")
_TOLERATES_SETTLING = Toleration(SETTLING_TAINT.key, "Exists", effect=SETTLING_TAINT.effect)


def _fenced(pods: list[Pod], moving: int, nodes: list[Node], settling: set[str]) -> tuple[list[Pod], list[Node]]:
    """The settling nodes tainted, and every pod but the first `moving` (the candidates') tolerating that taint."""
    if not any(n.name in settling for n in nodes):
        return pods, nodes
    fenced = [replace(n, taints=(*n.taints, SETTLING_TAINT)) if n.name in settling else n for n in nodes]
    others = [replace(p, tolerations=(*p.tolerations, _TOLERATES_SETTLING)) for p in pods[moving:]]
    return [*pods[:moving], *others], fenced


def _topology(pod: Pod) -> bool:
    return bool(
        pod.topology_spread
        or pod.pod_affinity
        or pod.pod_anti_affinity
        or pod.preferred_pod_affinity
        or pod.preferred_pod_anti_affinity
    )


def _condensed(usable: Sequence[Usable], pods: Sequence[Pod]) -> tuple[list[Node], bool]:
    """The nodes as the solver needs them, and whether they go as they are (see `_registration`). When a pod to
    place has topology terms, host ports or volumes, every node and every pod on it counts (domains, ports,
    attachment limits), so they go as they are. Otherwise only a node's room matters: a full node is left out (it
    takes no pod and changes no placement), and the others go with their room as allocatable and without their
    pods, which spares the solver the bookkeeping of tens of thousands of bound pods. Nodes holding a pod with
    anti-affinity keep their pods (it may forbid a domain)."""
    if not pods or any(_topology(p) or p.host_ports or p.pvc_names for p in pods):
        return [u.node for u in usable], True
    cpu, memory, count = (min(p.requests.get(r, 0) for p in pods) for r in ("cpu", "memory", "pods"))
    return [
        u.node if u.anti_affinity else u.room
        for u in usable
        if u.anti_affinity or (u.free[0] >= cpu and u.free[1] >= memory and u.free[2] >= count)
    ], False


def _registration(state: ClusterState, base: Registered, whole: bool) -> Registration:
    """The solver's registration of every usable node of the snapshot, as they are (`whole`) or as `_condensed`
    hands them (its room alone, or as it is with a pod with anti-affinity), with the NodeClaims of those still
    starting: made once per snapshot and kind, and forked by each simulation (`solve`'s `base`), which takes away
    the nodes it leaves out and registers only those it hands over changed (a settling node's taint)."""
    found = base.solver.get(whole)
    if found is None:
        nodes = [u.node if whole or u.anti_affinity else u.room for u in base.usable]
        found = base.solver[whole] = Registration(
            SolveInputs(
                nodes,
                _starting_claims(state, base, base.starting.keys()),
                [p for p in base.nodepools if not p.static],
                state.inputs.nodeclasses,
                state.catalog.instance_types,
                state.inputs.daemonsets,
                VolumeIndex(state.inputs.pvcs, state.inputs.pvs, state.inputs.storage_classes),
                state.templates,
            )
        )
    return found


def _cheaper(found: Simulation, best: Simulation) -> bool:
    if len(best.new_claims) > 1 or not best.all_moved:
        return True
    return found.results.cost_per_hour < best.results.cost_per_hour


def _outcome(
    state: ClusterState,
    keys: set[str],
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    inflight: Sequence[NodeClaim],
    pools: Sequence[NodePool],
    ceiling: float | None,
    registration: Registration,
) -> Simulation:
    results = solve(
        pods,
        nodes=nodes,
        nodeclaims=inflight,
        nodepools=pools,
        nodeclasses=state.inputs.nodeclasses,
        instance_types=state.catalog.instance_types,
        daemonsets=state.inputs.daemonsets,
        pvcs=state.inputs.pvcs,
        pvs=state.inputs.pvs,
        storage_classes=state.inputs.storage_classes,
        templates=state.templates,
        price_ceiling=ceiling,
        base=registration,
    )
    errors = {u.pod: u.reason for u in results.unschedulable if u.pod in keys}
    # Karpenter's UninitializedNodeError, worded as its Error(): "nodeclaim/<claim>, node/<node>" for a starting
    # node, "nodeclaim/<claim>" for a claim in flight.
    starting = state.registered().starting
    claims = {c.name: f"nodeclaim/{c.name}" for c in inflight if not c.node_name}
    for target, placed in results.existing.items():
        what = starting.get(target) or claims.get(target)
        if what:
            errors.update({p: f"would schedule against uninitialized {what}" for p in placed if p in keys})
    return Simulation(results, tuple(sorted(keys)), errors)


def _starting_claims(state: ClusterState, base: Registered, nodes: Collection[str]) -> list[NodeClaim]:
    """The NodeClaims of these registered, not yet initialized nodes, tied to their node by name: the solver then
    knows the nodes are starting (it tries initialized nodes first, as Karpenter orders existing nodes, and ignores a
    starting node's ephemeral and startup taints) and counts their room once, through the node."""
    if not nodes:
        return []
    node_of = {m.nodeclaim: m.node for m in base.members(nodes)}
    return [replace(c, node_name=node_of[c.name]) for c in state.inputs.nodeclaims if c.name in node_of]


def _inflight(state: ClusterState, base: Registered, leaving: Collection[str]) -> tuple[list[NodeClaim], set[str]]:
    """NodeClaims not registered yet, with the pending pods nominated to them (which wait for them)."""
    pending = {p.key: p for p in state.inputs.pending_pods}
    out: list[NodeClaim] = []
    waiting: set[str] = set()
    for claim, member in base.unregistered:
        if claim.name in leaving:
            continue
        mine = tuple(pending[k] for k in member.nominated if k in pending)
        waiting.update(p.key for p in mine)
        out.append(replace(claim, nominated_pods=mine, requests=res.total(p.requests for p in mine)))
    return out, waiting
