"""A lower bound on the price of a random cluster's new NodeClaims: the configuration LP over every NodePool.

`tests.bench.packing.lp_cfg_bound` bounds one NodePool's fleet for pods that only have cpu and memory requests. A
random cluster (`random_generator`) has many NodePools, taints, node selectors, node affinity, GPUs, DaemonSets,
topology spreads, pod (anti-)affinity, limits and existing nodes. This module bounds it by relaxing every
constraint that is not about what one node may hold, and keeping those that are:

- What is priced: the pods the plan put on new NodeClaims (`lp_pods`), not all pending pods. Which pods go to
  existing nodes (free) and which are refused is the plan's choice and is not judged here; the bound says how well
  the plan packed the pods it launched nodes for. Comparing two solvers' ratios is fair only when they launched
  for the same pods (compare `on_existing` and `unschedulable` too).
- Columns: a node kind is (NodePool, instance type, capacity type): a type the pool's requirements allow, priced
  at the cheapest available offering of that capacity type in a zone the pool allows (zone choices of pods are
  relaxed: a pod pinned to a zone may be priced at another zone's offering, which only lowers the bound). Its room
  is `allocatable_for` with the pool's EC2NodeClass minus the DaemonSets that surely run there (they tolerate the
  pool's taints and their node selector and affinity match the labels the node surely has); those that may or may
  not run are not subtracted, which again only lowers the bound.
- Rows: pods grouped by requests (every resource: cpu, memory, pods, nvidia.com/gpu) and by node constraints
  (tolerations, node selector, required node affinity). A group may use a node kind when the pool's taints are
  tolerated and some required term does not conflict with the pool's requirements and the type's labels, nor needs
  a label that is not well known and that the pool neither labels nor requires (Karpenter refuses such a term: no
  node of the pool would carry the label); other keys one side leaves open are taken as met (a relaxation).
- Relaxed away entirely: topology spread, pod affinity and anti-affinity (required or preferred), preferred node
  affinity, NodePool weights and limits, and host ports. A plan must meet them; the bound does not, so a cluster
  whose plan is driven by them (one pod per node, say) has a ratio well above 1 that is no packing loss.

The LP is then the one of `packing` (Gilmore-Gomory): configurations are whole nodes of one kind with a count of
pods of each group it may hold, within its room; minimise the price of the configurations used subject to every
group's pods being covered. Every plan within the constraints kept is an integer point of it, the plan at hand
included (the audit checks each NodeClaim's pods fit its types), so the LP optimum is a lower bound of the price
of the NodeClaims bounded. (Any subset of the plan's NodeClaims may be bounded: they hold exactly their pods.)

It is solved by column generation, and the figure reported is Farley's dual bound, as in `packing.lp_cfg_bound`:
with the restricted master's duals pi >= 0 and, for every node kind k, an upper bound v_k of its best configuration's
value (max sum_s a_s pi_s over what fits one node), theta = max(1, max_k v_k / p_k) makes pi / theta dual feasible,
so sum_s n_s pi_s / theta is a lower bound at every round. A cluster has hundreds to thousands of node kinds, too
many for an exact knapsack each per round, so v_k comes from Lagrangian relaxation of the knapsack's resource rows,
for every kind at once (`_knapsack_upper`; any multipliers give a valid upper bound, subgradient steps tighten it),
replaced by the exact knapsack's bound (HiGHS MIP) for the kinds that look best; new columns come from a greedy
packing and from those exact knapsacks. Stopping early (the time budget, `--lp-seconds`) or the Lagrangian's
slack only loosen the bound; neither can make it exceed the optimum. `converged`: the last round found no new
column, or the bound came within `GAP` of the master's value (the bound is valid either way).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.catalog import offering_matches, type_matches
from nodewright.catalog.labels import WELL_KNOWN_LABELS
from nodewright.model.objects import Pod
from nodewright.model.requirements import Requirements
from nodewright.model.taints import untolerated
from nodewright.scheduling.results import PlannedNodeClaim
from tests.bench.packing import _highs
from tests.bench.random_generator import CAPACITY_TYPE, GPU, NODEPOOL_LABEL, RandomCluster, node_options

GAP = 1e-3
ROUNDS = 60
GREEDY = 40  # kinds packed greedily per round for new columns
EXACT = 8  # kinds priced by an exact knapsack (HiGHS MIP) per round once new columns were found
SUBGRADIENT_STEPS = 40
MAX_ROWS = 400  # above this many pod groups the bound is not attempted
# Knapsack rows in units near 1 (millicores and bytes are ~1e7 apart); a hair of slack keeps the scaled
# constraint no tighter than the true one (a looser knapsack only raises theta, which lowers the bound).
_SCALE = {"cpu": 1000.0, "memory": float(2**30)}
_SLACK = 1 + 1e-9


@dataclass(frozen=True, slots=True)
class Bound:
    value: float
    cost: float  # the price of the NodeClaims bounded (their cheapest launch options)
    pods: int  # pods priced: those on the NodeClaims bounded
    rows: int  # pod groups
    columns: int  # node kinds kept (after dominance)
    rounds: int
    converged: bool

    @property
    def ratio(self) -> float | None:
        return self.cost / self.value if self.value > 0 else None


@dataclass(frozen=True, slots=True)
class _Profile:
    """What decides which pods a node kind may hold: its pool's taints, and the requirements its node surely meets
    on the keys some Deployment's node constraints mention (kinds differing elsewhere share a profile)."""

    taints: tuple[Any, ...]
    requirements: Requirements


@dataclass(frozen=True, slots=True)
class _Kinds:
    """Every node kind of a cluster: names, prices, room per resource (`RESOURCES`), and profile."""

    names: tuple[str, ...]
    prices: np.ndarray
    rooms: np.ndarray  # kinds x RESOURCES
    profile_of: np.ndarray  # kind -> index into profiles
    profiles: tuple[_Profile, ...]


RESOURCES = ("cpu", "memory", "pods", GPU)
_kinds_of: dict[int, _Kinds] = {}


def _kinds(cluster: RandomCluster) -> _Kinds:
    """Every node kind of the cluster (limits aside, a seed's kinds do not depend on its size: cached per seed)."""
    cached = _kinds_of.get(cluster.seed)
    if cached is not None:
        return cached
    mentioned = {key for w in cluster.workloads for option in node_options(w.template) for key in option.by_key}
    classes = {c.name: c for c in cluster.nodeclasses}
    names: list[str] = []
    prices: list[float] = []
    rooms: list[list[int]] = []
    profile_of: list[int] = []
    profiles: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    profile_list: list[_Profile] = []
    for pool in cluster.nodepools:
        requirements = pool.node_requirements()
        nodeclass = classes[pool.node_class_ref.name]
        for it in cluster.instance_types:
            if not type_matches(it, requirements):
                continue
            by_type: dict[str, float] = {}
            for o in it.offerings:
                if o.available and offering_matches(o, requirements):
                    by_type[o.capacity_type] = min(by_type.get(o.capacity_type, o.price), o.price)
            if not by_type:
                continue
            alloc = allocatable_for(it, nodeclass)
            for capacity_type, price in sorted(by_type.items()):
                labels = {**it.labels, **pool.labels, NODEPOOL_LABEL: pool.name, CAPACITY_TYPE: capacity_type}
                room = dict(alloc)
                for ds in cluster.daemonsets:
                    if untolerated(ds.pod.tolerations, pool.taints) is None and any(
                        option.matches_labels(labels) for option in node_options(ds.pod)
                    ):
                        for key, value in ds.pod.requests.items():
                            room[key] = room.get(key, 0) - value
                known = tuple(sorted((k, v) for k, v in labels.items() if k in mentioned))
                index = profiles.get((pool.name, known))
                if index is None:
                    index = profiles[(pool.name, known)] = len(profile_list)
                    node = requirements.intersect(Requirements.from_labels(dict(known)))
                    profile_list.append(_Profile(pool.taints, node))
                names.append(f"{pool.name}/{it.name}/{capacity_type}")
                prices.append(price)
                rooms.append([max(room.get(r, 0), 0) for r in RESOURCES])
                profile_of.append(index)
    kinds = _Kinds(
        tuple(names),
        np.array(prices, dtype=np.float64),
        np.array(rooms, dtype=np.int64).reshape(len(names), len(RESOURCES)),
        np.array(profile_of, dtype=np.int64),
        tuple(profile_list),
    )
    _kinds_of[cluster.seed] = kinds
    return kinds


def _compatible(pod: Pod, profile: _Profile) -> bool:
    """Whether pods like `pod` may run on a node of the profile: its taints tolerated, and some required term of the
    pod that neither conflicts with the node's requirements nor needs a label the node cannot carry: a key that is
    not well known and that the NodePool neither labels nor requires (Karpenter refuses such a pod for the NodePool,
    as `scheduling.claims` does: nothing would set the label, so every plan keeps this)."""
    if untolerated(pod.tolerations, profile.taints) is not None:
        return False
    return any(
        option.conflict(profile.requirements) is None and not _needs_undefined_label(option, profile.requirements)
        for option in node_options(pod)
    )


def _needs_undefined_label(option: Requirements, node: Requirements) -> bool:
    return any(
        key not in node.by_key and key not in WELL_KNOWN_LABELS and not value_set.absent_ok
        for key, value_set in option.by_key.items()
    )


def _groups(claims: Sequence[PlannedNodeClaim], cluster: RandomCluster) -> list[tuple[Pod, Mapping[str, int], int]]:
    """(a pod of the group, its requests, how many) for the pods on these NodeClaims, grouped as the module says."""
    launched = {key for claim in claims for key in claim.pods}
    counts: Counter[tuple[Any, ...]] = Counter()
    example: dict[tuple[Any, ...], Pod] = {}
    for pod in cluster.pending:
        if pod.key not in launched:
            continue
        key = (
            tuple(sorted(pod.requests.items())),
            pod.tolerations,
            tuple(sorted(pod.node_selector.items())),
            pod.required_node_terms,
        )
        counts[key] += 1
        example.setdefault(key, pod)
    return [(example[k], example[k].requests, n) for k, n in sorted(counts.items(), key=lambda kv: repr(kv[0]))]


def _knapsack_upper(caps: np.ndarray, needs: np.ndarray, rooms: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per kind, an upper bound of the best configuration's value: max sum_s values_s x_s over integer
    0 <= x_s <= caps_s with sum_s needs_sr x_s <= rooms_r. For any multipliers lam >= 0 (one per resource),
    sum_r lam_r rooms_r + sum_s caps_s max(0, values_s - sum_r lam_r needs_sr) bounds it (Lagrangian weak duality);
    the multipliers start from the best single resource and move by projected subgradient steps, every kind at once,
    keeping the smallest bound seen. Any multipliers give a valid bound; the steps only make it tighter."""
    kinds, resources = rooms.shape

    def bound(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        reduced = values[None, :] - lam @ needs.T
        positive = reduced > 0
        return (lam * rooms).sum(axis=1) + (caps * np.where(positive, reduced, 0.0)).sum(axis=1), positive

    lam = np.zeros((kinds, resources))
    best, _ = bound(lam)
    for r in range(resources):
        # All value through resource r: lam_r = the best value per unit of r among the groups the kind may hold
        # (not finite when one of them needs none of r, then this start is skipped for that kind).
        per_unit = np.where(needs[:, r] > 0, values / np.where(needs[:, r] > 0, needs[:, r], 1.0), np.inf)
        per_unit = np.where(values > 0, per_unit, 0.0)
        top = np.where(caps > 0, per_unit[None, :], 0.0).max(axis=1)
        finite = np.isfinite(top)
        start = np.zeros((kinds, resources))
        start[finite, r] = top[finite]
        upper, _ = bound(start)
        better = finite & (upper < best)
        lam[better], best[better] = start[better], upper[better]
    for step in range(SUBGRADIENT_STEPS):
        upper, positive = bound(lam)
        best = np.minimum(best, upper)
        gradient = rooms - (caps * positive) @ needs
        norm = (gradient**2).sum(axis=1)
        target = best * (1 - 0.1 / (1 + step))
        size = np.where(norm > 0, (upper - target) / np.where(norm > 0, norm, 1.0), 0.0)
        lam = np.maximum(lam - size[:, None] * gradient, 0.0)
    upper, _ = bound(lam)
    return np.minimum(best, upper)


def _greedy(caps: np.ndarray, needs: np.ndarray, room: np.ndarray, values: np.ndarray) -> dict[int, int]:
    """A configuration for one kind: groups by value per share of its room, each as many as still fit."""
    usable = np.flatnonzero((caps > 0) & (values > 0))
    share = (needs[usable] / np.where(room > 0, room, np.inf)[None, :]).sum(axis=1)
    order = usable[np.argsort(-(values[usable] / np.maximum(share, 1e-12)), kind="stable")]
    left = room.astype(np.float64).copy()
    config: dict[int, int] = {}
    for s in order:
        need = needs[s]
        positive = need > 0
        fit = int(min(caps[s], np.floor((left[positive] / need[positive]).min()))) if positive.any() else int(caps[s])
        if fit > 0:
            config[int(s)] = fit
            left -= fit * need
    return config


def _holds(room: np.ndarray, config: Mapping[int, int], needs: np.ndarray) -> bool:
    """Whether one node with this room (per `RESOURCES`) holds the configuration: a true column, not a guess."""
    if any(v < 0 for v in config.values()):
        return False
    used = sum((v * needs[s] for s, v in config.items()), np.zeros(len(RESOURCES), dtype=np.int64))
    return bool(np.all(used <= room))


def cfg_bound(claims: Sequence[PlannedNodeClaim], cluster: RandomCluster, budget_seconds: float) -> Bound | None:
    """The configuration LP bound of the pods on these new NodeClaims (see the module), which is a lower bound of
    their price; None when it is not attempted (too many groups, or a free offering that would void the argument)."""
    deadline = time.perf_counter() + budget_seconds
    cost = round(sum(claim.cheapest.price for claim in claims), 6)
    groups = _groups(claims, cluster)
    placed = sum(n for _, _, n in groups)
    if not groups or len(groups) > MAX_ROWS:
        return None if len(groups) > MAX_ROWS else Bound(0.0, cost, 0, 0, 0, 0, True)
    if any(r not in RESOURCES for _, req, _ in groups for r, v in req.items() if v > 0):
        return None  # a resource the kinds do not track: no bound rather than a wrong one
    resources = [r for r in RESOURCES if any(req.get(r, 0) > 0 for _, req, _ in groups)]
    demand = [n for _, _, n in groups]
    count = len(groups)
    kinds = _kinds(cluster)
    if not len(kinds.prices) or float(kinds.prices.min()) <= 0:
        return None  # a free offering would void the argument
    # caps[k, s]: how many pods of group s one node of kind k holds (0: incompatible or too large), at most n_s.
    compatible = np.array([[_compatible(pod, p) for pod, _, _ in groups] for p in kinds.profiles], dtype=bool)
    needs = np.array([[req.get(r, 0) for r in RESOURCES] for _, req, _ in groups], dtype=np.int64)
    caps = np.full((len(kinds.prices), count), np.iinfo(np.int64).max, dtype=np.int64)
    for r in range(len(RESOURCES)):
        used = needs[:, r] > 0
        caps[:, used] = np.minimum(caps[:, used], kinds.rooms[:, r : r + 1] // needs[used, r][None, :])
    caps = np.minimum(caps, np.array(demand, dtype=np.int64)[None, :]) * compatible[kinds.profile_of]
    # A kind that another beats (no dearer, at least as much room, every group it may hold the other may hold too)
    # never changes the optimum: any configuration of it is one of the other, at no higher price.
    order = np.lexsort((-kinds.rooms[:, 0], kinds.prices))
    dims = [RESOURCES.index(r) for r in resources]
    kind_compat = compatible[kinds.profile_of]
    kept_rooms = np.empty((len(order), len(dims)), dtype=np.int64)
    kept_compat = np.empty((len(order), count), dtype=bool)
    kept: list[int] = []
    for k in order:
        if not bool((caps[k] > 0).any()):
            continue
        n = len(kept)
        room, compat = kinds.rooms[k, dims], kind_compat[k]
        if n and bool((np.all(kept_rooms[:n] >= room, axis=1) & np.all(kept_compat[:n] >= compat, axis=1)).any()):
            continue
        kept_rooms[n], kept_compat[n] = room, compat
        kept.append(int(k))
    chosen = sorted(kept)
    col_prices = kinds.prices[chosen]
    col_rooms = kinds.rooms[chosen]
    col_caps = caps[chosen]
    if not bool(np.all(col_caps.max(axis=0) > 0)):
        return None  # a group no node kind holds: the plan placed it, so the relaxation is wrong; do not guess
    inf = highspy.kHighsInf
    master = _highs()
    empty_i, empty_f = np.array([], dtype=np.int32), np.array([], dtype=np.float64)
    master.addRows(count, np.array(demand, dtype=np.float64), np.full(count, inf), 0, empty_i, empty_i, empty_f)

    def add_column(price: float, config: Mapping[int, int]) -> None:
        rows = sorted(s for s, v in config.items() if v > 0)
        values = np.array([float(config[s]) for s in rows], dtype=np.float64)
        master.addCol(price, 0.0, inf, len(rows), np.array(rows, dtype=np.int32), values)

    # Start feasible: per group, the three single-group configurations cheapest per pod.
    for s in range(count):
        fits = np.flatnonzero(col_caps[:, s] > 0)
        per_pod = col_prices[fits] / col_caps[fits, s]
        for j in fits[np.argsort(per_pod, kind="stable")[:3]]:
            add_column(float(col_prices[j]), {s: int(col_caps[j, s])})
    knapsacks: dict[int, tuple[highspy.Highs, list[int]]] = {}

    def knapsack(j: int) -> tuple[highspy.Highs, list[int]]:
        if j not in knapsacks:
            fitting = [int(s) for s in np.flatnonzero(col_caps[j] > 0)]
            n = len(fitting)
            cols = np.arange(n, dtype=np.int32)
            h = _highs()
            h.addVars(n, np.zeros(n), col_caps[j, fitting].astype(np.float64))
            h.changeColsIntegrality(n, cols, np.array([highspy.HighsVarType.kInteger] * n))
            h.changeObjectiveSense(highspy.ObjSense.kMaximize)
            for r in resources:
                i = RESOURCES.index(r)
                scale = _SCALE.get(r, 1.0)
                weights = needs[fitting, i].astype(np.float64) / scale
                h.addRow(-inf, float(col_rooms[j, i]) / scale * _SLACK, n, cols, weights)
            h.setOptionValue("mip_rel_gap", 1e-6)
            knapsacks[j] = (h, fitting)
        return knapsacks[j]

    scales = np.array([_SCALE.get(r, 1.0) for r in resources])
    unit_needs = needs[:, dims] / scales[None, :]
    unit_rooms = col_rooms[:, dims] / scales[None, :] * _SLACK
    best = 0.0
    rounds = 0
    converged = False
    for _ in range(ROUNDS):
        rounds += 1
        master.run()
        if master.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("configuration LP master not optimal")
        value = float(master.getInfo().objective_function_value)
        d = np.maximum(np.array(master.getSolution().row_dual, dtype=np.float64), 0.0)
        ratios = _knapsack_upper(col_caps, unit_needs, unit_rooms, d) / col_prices
        # New columns: a greedy packing of the kinds that look best, then exact knapsacks (which also tighten their
        # upper bound) on the best of them, as long as time allows.
        added = 0
        ranked = [int(j) for j in np.argsort(-ratios, kind="stable")[:GREEDY] if ratios[j] > 1.0]
        for j in ranked:
            config = _greedy(col_caps[j], unit_needs, unit_rooms[j], d)
            if sum(v * d[s] for s, v in config.items()) > col_prices[j] * (1 + 1e-9) and _holds(
                col_rooms[j], config, needs
            ):
                add_column(float(col_prices[j]), config)
                added += 1
        out_of_time = False
        exact = np.zeros(len(ratios), dtype=bool)
        while not (added and exact.sum() >= EXACT):  # until new columns are found, every kind may be priced
            j = int(np.argmax(np.where(exact, -np.inf, ratios)))
            if exact[j] or ratios[j] <= max(1.0, float(ratios[exact].max(initial=0.0))):
                break  # no knapsack left to solve could lower theta
            exact[j] = True
            if time.perf_counter() > deadline:
                out_of_time = True
                break
            h, fitting = knapsack(j)
            h.setOptionValue("time_limit", max(0.05, min(1.0, deadline - time.perf_counter())))
            h.changeColsCost(len(fitting), np.arange(len(fitting), dtype=np.int32), d[fitting])
            h.run()
            info = h.getInfo()
            price = float(col_prices[j])
            upper = max(float(info.mip_dual_bound), float(info.objective_function_value))
            ratios[j] = min(ratios[j], upper / price)
            if info.objective_function_value > price * (1 + 1e-9):
                solution = h.getSolution().col_value
                config = {s: round(solution[k]) for k, s in enumerate(fitting)}
                if _holds(col_rooms[j], config, needs):  # a MIP stopped by its time limit may have no solution
                    add_column(price, config)
                    added += 1
        theta = max(1.0, float(ratios.max()))  # every kind's knapsack value per dollar is at most theta
        best = max(best, float(np.dot(demand, d)) / theta)
        if not added or value - best <= GAP * value:
            converged = True
            break
        if out_of_time or time.perf_counter() > deadline:
            break
    return Bound(best, cost, placed, count, len(chosen), rounds, converged)
