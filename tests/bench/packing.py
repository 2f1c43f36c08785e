"""Packing quality: the price of our fleet against a linear-programming lower bound.

Each workload is a seeded set of Deployments of generic pods (only cpu and memory requests, no
constraints), in one of several shapes: balanced, cpu-heavy, memory-heavy, tiny pods (where the pods
per node limit binds), large pods, and a mix of those. `ours` is `Results.cost_per_hour` of `solve()`.

The bound, `lp`, is the optimum of this LP, solved with HiGHS (highspy):

    minimise    sum_t p_t * x_t
    subject to  sum_t a_t[r] * x_t >= R[r]     for r in cpu, memory, pods
                x_t >= 0 (continuous)

over the instance types t the NodePool offers to generic pods (the solver's own candidate set: types
whose requirements match, with an available offering, neither bare metal nor accelerated). p_t is the
type's cheapest available offering price, a_t its allocatable computed exactly as the solver computes
it (`allocatable_for` with the same EC2NodeClass; the workloads run no DaemonSets), and R the total
requests of the pods the fleet holds.

Why it is a lower bound: take the fleet `solve()` returns and let n_t be how many NodeClaims launch
as type t (their cheapest option). Every NodeClaim's pods fit its type's allocatable (the audit checks
this), so summing over NodeClaims, sum_t a_t[r] * n_t >= R[r] for each r: the n_t are a feasible point
of the LP. Each NodeClaim costs at least p_t, so our price >= sum_t p_t * n_t >= the LP optimum. The
argument needs every NodeClaim's type to be in the LP's set; the audit reports one that is not.

That bound is weak in practice (`ratio`): it may buy cpu from one type and memory from another, and
the cheapest cpu in the catalog is on nano burstables with 15 MiB allocatable memory that no real pod
fits. So a second, tighter bound, `lp_fit` (`ratio_fit`), also keeps track of which pods go where:

    minimise    sum_t p_t * x_t
    subject to  sum_t y_ts >= n_s                          for each pod size s (n_s pods of it)
                sum_s req_s[r] * y_ts <= a_t[r] * x_t      for each type t and r in cpu, memory, pods
                y_ts <= k_ts * x_t                         k_ts = how many size-s pods fit one t node
                x_t, y_ts >= 0 (continuous); y_ts exists only where one size-s pod fits type t

It is still a lower bound by the same argument: with x_t = n_t and y_ts = the pods of size s on our
type-t NodeClaims, every row holds node by node, hence in sum. It forgets only integrality (whole
nodes, whole pods per node beyond the k_ts cap) and every resource other than cpu, memory and pods, so
no fleet can beat it; types that another type dominates (no cheaper, no larger) are left out, which
does not change either optimum.

Both still let pods of different sizes share a node's room fractionally, which no node can do: on a
48-vCPU type with 47.8 allocatable, 24-, 16- and 8-vCPU pods can fill at most 40. The tightest bound,
`lp_cfg` (`ratio_cfg`), is the LP relaxation of the exact bin-packing model (Gilmore and Gomory's
configuration LP). A configuration c is a whole node: a type t and how many pods of each size, a_cs,
such that they fit t's allocatable cpu, memory and pods, with a_cs <= n_s. Then

    minimise    sum_c p_t(c) * z_c
    subject to  sum_c a_cs * z_c >= n_s                    for each pod size s
                z_c >= 0

Every fleet is an integer point of it (z_c = how many nodes are exactly configuration c), so its LP
optimum is a lower bound, and so is the objective of any feasible point of its dual
(max sum_s n_s * pi_s subject to sum_s a_cs * pi_s <= p_t(c) for every c, pi >= 0). There are far too
many configurations to list, so the LP is solved by column generation; the bound reported is not the
restricted master's value (which is an upper estimate until the end) but a dual-feasible objective
built from it (Farley's argument): take the master's duals pi >= 0 and, for every type t, an upper
bound v_t on the best configuration value max_c sum_s a_cs * pi_s (an integer knapsack, solved by
HiGHS; its MIP dual bound is an upper bound even if the search stopped early). With
theta = max(1, max_t v_t / p_t), pi / theta is dual feasible, so sum_s n_s * pi_s / theta is a lower
bound at every iteration, converged or not; the best one is kept. Types are screened with a cheaper
upper bound first (per resource, capacity times the best dual value per unit), and dominated types are
left out as above (a dominated type's best configuration fits the type that dominates it, at no lower
price, so it never raises theta). Pods per size are capped at n_s in a configuration, which every real
node satisfies. The gap to `lp_cfg` is packing loss plus the rounding to whole nodes the LP ignores.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import highspy
import numpy as np

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.catalog import is_accelerated, is_bare_metal, type_matches
from nodewright.model.objects import Pod
from nodewright.scheduling.results import Results
from nodewright.scheduling.solver import solve
from tests.bench.fixtures import NAMESPACE, Cluster, audit, default_cluster, requests

KINDS = ("balanced", "cpu-heavy", "memory-heavy", "tiny", "large", "mixed")
WORKLOADS = 24
QUICK_WORKLOADS = 5
BASE_SEED = 1000
# LP rows in units near 1, so HiGHS sees a well-scaled problem (bytes and millicores are ~1e10 apart).
_SCALE = {"cpu": 1000.0, "memory": float(2**30), "pods": 1.0}
LP_RESOURCES = ("cpu", "memory", "pods")


@dataclass(frozen=True, slots=True)
class Workload:
    number: int
    kind: str
    deployments: int
    pods: tuple[Pod, ...]


def _deployment_size(rng: random.Random, kind: str) -> tuple[int, float]:
    """(cpu millicores, GiB of memory per vCPU) for one Deployment of this kind."""
    if kind == "balanced":
        return rng.choice((250, 500, 1000, 2000)), rng.uniform(2.0, 4.0)
    if kind == "cpu-heavy":
        return rng.choice((1000, 2000, 4000, 8000)), rng.uniform(0.5, 1.0)
    if kind == "memory-heavy":
        return rng.choice((250, 500, 1000)), rng.uniform(6.0, 16.0)
    if kind == "tiny":
        return rng.choice((25, 50, 100)), rng.uniform(0.5, 1.5)
    if kind == "large":
        return rng.choice((8000, 16000, 24000)), rng.uniform(2.0, 8.0)
    raise ValueError(kind)


def make_workload(number: int) -> Workload:
    """Workload `number`: its kind cycles through KINDS; everything else comes from a seeded RNG."""
    kind = KINDS[number % len(KINDS)]
    rng = random.Random(BASE_SEED + number)
    deployments = rng.randint(1, 25)
    pods: list[Pod] = []
    for d in range(deployments):
        shape = rng.choice(KINDS[:-1]) if kind == "mixed" else kind
        cpu, gib_per_cpu = _deployment_size(rng, shape)
        # Tiny pods come in larger numbers so that the pods-per-node limit, not cpu, decides the fleet.
        replicas = rng.randint(20, 400) if shape == "tiny" else rng.randint(1, 120)
        memory_mib = max(32, round(cpu / 1000 * gib_per_cpu * 1024))
        size = requests(f"{cpu}m", f"{memory_mib}Mi")
        name = f"w{number:02d}-d{d:02d}"
        pods.extend(
            Pod(namespace=NAMESPACE, name=f"{name}-{i}", labels={"app": name}, requests=size) for i in range(replicas)
        )
    return Workload(number, kind, deployments, tuple(pods))


LPType = tuple[str, float, Mapping[str, int]]
# Keyed by identity because a Cluster holds dicts and is not hashable; the cluster is kept alive with it.
_lp_types_of: dict[int, tuple[Cluster, tuple[LPType, ...]]] = {}


def _lp_types(cluster: Cluster) -> tuple[LPType, ...]:
    """(name, cheapest price, allocatable) of every type the NodePool offers generic pods."""
    cached = _lp_types_of.get(id(cluster))
    if cached is not None:
        return cached[1]
    requirements = cluster.nodepool.node_requirements()
    out: list[LPType] = []
    for it in cluster.instance_types:
        if is_bare_metal(it) or is_accelerated(it) or not type_matches(it, requirements):
            continue
        prices = [o.price for o in it.offerings if o.available]
        if prices:
            out.append((it.name, min(prices), allocatable_for(it, cluster.nodeclass)))
    _lp_types_of[id(cluster)] = (cluster, tuple(out))
    return tuple(out)


_highs_started = False


def _undominated(cluster: Cluster) -> tuple[LPType, ...]:
    """The LP types without those another type beats: no dearer and at least as large in cpu, memory, pods.

    Dropping a dominated type leaves both LPs' optimum unchanged (any use of it can move to the type that
    dominates it, at no more cost and with at least as much room), and shrinks the per-type LP a lot.
    """
    cached = _undominated_of.get(id(cluster))
    if cached is not None:
        return cached[1]
    kept: list[LPType] = []
    for entry in sorted(_lp_types(cluster), key=lambda e: (e[1], -e[2]["cpu"], -e[2]["memory"], e[0])):
        _, _, alloc = entry
        if not any(all(a.get(r, 0) >= alloc.get(r, 0) for r in LP_RESOURCES) for _, _, a in kept):
            kept.append(entry)
    _undominated_of[id(cluster)] = (cluster, tuple(kept))
    return tuple(kept)


_undominated_of: dict[int, tuple[Cluster, tuple[LPType, ...]]] = {}


def _highs() -> highspy.Highs:
    """A silent HiGHS instance.

    The first instance in a process prints a banner from C++ straight to file descriptor 1, which the
    `output_flag` option cannot stop and which would break the one-line-per-figure output; so that
    one construction runs with descriptor 1 pointed at /dev/null.
    """
    global _highs_started
    if _highs_started:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        try:
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
        _highs_started = True
    h.setOptionValue("output_flag", False)
    return h


def _solve_lp(
    costs: Sequence[float],
    rows: Sequence[tuple[float, float, Sequence[tuple[int, float]]]],
) -> float:
    """min costs.x over x >= 0 subject to lower <= row.x <= upper for each (lower, upper, entries) row."""
    n = len(costs)
    h = _highs()
    h.addVars(n, np.zeros(n), np.full(n, highspy.kHighsInf))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(costs, dtype=np.float64))
    starts: list[int] = []
    indices: list[int] = []
    values: list[float] = []
    for _, _, entries in rows:
        starts.append(len(indices))
        for col, value in entries:
            indices.append(col)
            values.append(value)
    h.addRows(
        len(rows),
        np.array([lower for lower, _, _ in rows], dtype=np.float64),
        np.array([upper for _, upper, _ in rows], dtype=np.float64),
        len(indices),
        np.array(starts, dtype=np.int32),
        np.array(indices, dtype=np.int32),
        np.array(values, dtype=np.float64),
    )
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"LP bound not optimal: {h.modelStatusToString(status)}")
    return float(h.getInfo().objective_function_value)


def lp_bound(total: Mapping[str, int], cluster: Cluster) -> float:
    """The aggregate LP lower bound (see the module docstring) for pods whose requests sum to `total`."""
    types = _lp_types(cluster)
    rows = [
        (
            total[r] / _SCALE[r],
            highspy.kHighsInf,
            [(t, a[r] / _SCALE[r]) for t, (_, _, a) in enumerate(types) if a.get(r)],
        )
        for r in LP_RESOURCES
        if total.get(r, 0) > 0
    ]
    return _solve_lp([price for _, price, _ in types], rows) if rows else 0.0


def lp_fit_bound(sizes: Mapping[tuple[int, int], int], cluster: Cluster) -> float:
    """The per-type LP lower bound (see the module docstring) for `sizes`: (cpu, memory) -> pod count.

    Columns: x_t (nodes of type t), then y_ts (pods of size s on type t) for each pair where one pod
    fits the type. Rows: each size is fully placed; on each type, the pods use at most x_t nodes'
    allocatable of cpu, memory and pods.
    """
    types = _undominated(cluster)
    shapes = sorted(sizes)
    costs = [price for _, price, _ in types]
    pairs: list[tuple[int, int]] = []
    for t, (_, _, alloc) in enumerate(types):
        for s, (cpu, memory) in enumerate(shapes):
            if cpu <= alloc.get("cpu", 0) and memory <= alloc.get("memory", 0) and alloc.get("pods", 0) >= 1:
                pairs.append((t, s))
    costs += [0.0] * len(pairs)
    inf = highspy.kHighsInf
    placed: list[list[tuple[int, float]]] = [[] for _ in shapes]
    per_type: dict[int, list[tuple[int, int]]] = {}
    for column, (t, s) in enumerate(pairs, start=len(types)):
        placed[s].append((column, 1.0))
        per_type.setdefault(t, []).append((column, s))
    rows: list[tuple[float, float, Sequence[tuple[int, float]]]] = [
        (float(sizes[shape]), inf, placed[s]) for s, shape in enumerate(shapes)
    ]
    for t, columns in per_type.items():
        alloc = types[t][2]
        for col, s in columns:
            # A node holds at most `copies` pods of one size; the resource rows alone would let pods be split.
            copies = min(alloc["cpu"] // max(shapes[s][0], 1), alloc["memory"] // max(shapes[s][1], 1), alloc["pods"])
            rows.append((0.0, inf, [(t, float(copies)), (col, -1.0)]))
        for r, index in (("cpu", 0), ("memory", 1), ("pods", None)):
            use = [(col, -(shapes[s][index] if index is not None else 1) / _SCALE[r]) for col, s in columns]
            rows.append((0.0, inf, [(t, alloc.get(r, 0) / _SCALE[r]), *use]))
    return _solve_lp(costs, rows)


# Column generation stops when the bound is this close to the master's value, or after this many rounds
# (the bound is valid at every round; stopping early only loosens it).
CFG_GAP = 1e-3
CFG_ROUNDS = 60


def lp_cfg_bound(sizes: Mapping[tuple[int, int], int], cluster: Cluster) -> float:
    """The configuration LP lower bound (see the module docstring) for `sizes`: (cpu, memory) -> pod count."""
    types = _undominated(cluster)
    shapes = sorted(sizes)
    demand = [sizes[shape] for shape in shapes]
    count = len(shapes)
    inf = highspy.kHighsInf
    # Per type, how many pods of each size one node holds (also capped by how many exist).
    caps = [
        [
            min(a["cpu"] // max(cpu, 1), a["memory"] // max(memory, 1), a["pods"], demand[s])
            for s, (cpu, memory) in enumerate(shapes)
        ]
        for _, _, a in types
    ]
    master = _highs()
    empty_i, empty_f = np.array([], dtype=np.int32), np.array([], dtype=np.float64)
    master.addRows(count, np.array(demand, dtype=np.float64), np.full(count, inf), 0, empty_i, empty_i, empty_f)

    def add_column(t: int, config: Sequence[int]) -> None:
        rows = [s for s in range(count) if config[s] > 0]
        values = np.array([float(config[s]) for s in rows], dtype=np.float64)
        master.addCol(types[t][1], 0.0, inf, len(rows), np.array(rows, dtype=np.int32), values)

    # Start from the single-size configurations (the per-type LP's columns), so the master is feasible.
    for t in range(len(types)):
        for s in range(count):
            if caps[t][s] > 0:
                add_column(t, [caps[t][s] if i == s else 0 for i in range(count)])
    # One knapsack model per type, re-solved with new objective weights each round.
    knapsacks: dict[int, tuple[highspy.Highs, list[int]]] = {}
    for t, (_, _, alloc) in enumerate(types):
        fitting = [s for s in range(count) if caps[t][s] > 0]
        if not fitting:
            continue
        n = len(fitting)
        columns = np.arange(n, dtype=np.int32)
        h = _highs()
        h.addVars(n, np.zeros(n), np.array([float(caps[t][s]) for s in fitting], dtype=np.float64))
        h.changeColsIntegrality(n, columns, np.array([highspy.HighsVarType.kInteger] * n))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        for r, index in (("cpu", 0), ("memory", 1)):
            weights = np.array([float(shapes[s][index]) for s in fitting], dtype=np.float64)
            h.addRow(-inf, float(alloc[r]), n, columns, weights)
        h.addRow(-inf, float(alloc["pods"]), n, columns, np.ones(n))
        h.setOptionValue("mip_rel_gap", 1e-6)
        knapsacks[t] = (h, fitting)
    best = 0.0
    for _ in range(CFG_ROUNDS):
        master.run()
        if master.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("configuration LP master not optimal")
        value = float(master.getInfo().objective_function_value)
        duals = [max(0.0, float(d)) for d in master.getSolution().row_dual]
        # Screen: an upper bound of each type's knapsack value per dollar, highest first.
        screened: list[tuple[float, int]] = []
        for t, (_, fitting) in knapsacks.items():
            alloc = types[t][2]
            upper = min(
                sum(duals[s] * caps[t][s] for s in fitting),
                alloc["cpu"] * max(duals[s] / max(shapes[s][0], 1) for s in fitting),
                alloc["memory"] * max(duals[s] / max(shapes[s][1], 1) for s in fitting),
                alloc["pods"] * max(duals[s] for s in fitting),
            )
            screened.append((upper / types[t][1], t))
        screened.sort(reverse=True)
        theta = 1.0  # max over types of (an upper bound of) best value / price, at least 1
        added = 0
        for ratio, t in screened:
            if ratio <= theta:
                break  # this and every later type: value / price <= ratio <= theta
            h, fitting = knapsacks[t]
            weights = np.array([duals[s] for s in fitting], dtype=np.float64)
            h.changeColsCost(len(fitting), np.arange(len(fitting), dtype=np.int32), weights)
            h.run()
            info = h.getInfo()
            theta = max(theta, max(float(info.mip_dual_bound), float(info.objective_function_value)) / types[t][1])
            if info.objective_function_value > types[t][1] * (1 + 1e-9):
                solution = h.getSolution().col_value
                config = [0] * count
                for k, s in enumerate(fitting):
                    config[s] = round(solution[k])
                add_column(t, config)
                added += 1
        best = max(best, sum(n * d for n, d in zip(demand, duals, strict=True)) / theta)
        if not added or value - best <= CFG_GAP * value:
            break
    return best


@dataclass(frozen=True, slots=True)
class PackingFigure:
    workload: Workload
    nodeclaims: int
    unschedulable: int
    ours: float
    lp: float  # the aggregate bound
    lp_fit: float  # the per-type bound (tighter)
    lp_cfg: float  # the configuration LP bound (tightest)
    violations: int

    @property
    def ratio(self) -> float:
        return self.ours / self.lp if self.lp > 0 else float("inf")

    @property
    def ratio_fit(self) -> float:
        return self.ours / self.lp_fit if self.lp_fit > 0 else float("inf")

    @property
    def ratio_cfg(self) -> float:
        return self.ours / self.lp_cfg if self.lp_cfg > 0 else float("inf")

    def line(self) -> str:
        w = self.workload
        return (
            f"packing workload={w.number:02d} kind={w.kind} deployments={w.deployments} pods={len(w.pods)} "
            f"nodeclaims={self.nodeclaims} unschedulable={self.unschedulable} ours={self.ours:.4f} "
            f"lp={self.lp:.4f} ratio={self.ratio:.3f} lp_fit={self.lp_fit:.4f} ratio_fit={self.ratio_fit:.3f} "
            f"lp_cfg={self.lp_cfg:.4f} ratio_cfg={self.ratio_cfg:.3f} violations={self.violations}"
        )


def packing_violations(results: Results, cluster: Cluster) -> list[str]:
    """NodeClaims launching as a type outside the LP's set, which would void the bound's argument."""
    allowed = {name for name, _, _ in _lp_types(cluster)}
    return [
        f"{c.name}: cheapest type {c.cheapest.instance_type} is outside the LP's candidate set"
        for c in results.nodeclaims
        if c.cheapest.instance_type not in allowed
    ]


def measure(workload: Workload, cluster: Cluster | None = None) -> tuple[PackingFigure, list[str]]:
    """Schedule one workload and bound it; the figure and the invariant violations found."""
    cluster = cluster or default_cluster()
    results = solve(workload.pods, **cluster.solve_kwargs())  # type: ignore[arg-type]
    problems = audit(results, workload.pods, cluster) + packing_violations(results, cluster)
    refused = {u.pod for u in results.unschedulable}
    total: dict[str, int] = {}
    for pod in workload.pods:
        if pod.key not in refused:
            for name, value in pod.requests.items():
                total[name] = total.get(name, 0) + value
    sizes: Counter[tuple[int, int]] = Counter(
        (p.requests.get("cpu", 0), p.requests.get("memory", 0)) for p in workload.pods if p.key not in refused
    )
    ours = results.cost_per_hour
    lp = lp_bound(total, cluster)
    lp_fit = lp_fit_bound(sizes, cluster)
    # Both are lower bounds, so the larger is one too; it matters only when column generation stopped
    # within CFG_GAP of the optimum, where the per-type LP may still be a hair higher.
    lp_cfg = max(lp_cfg_bound(sizes, cluster), lp_fit) if sizes else 0.0
    # The bounds are theorems given a clean audit; the tolerance covers only the solvers' floating point.
    for name, bound in (("aggregate", lp), ("per-type", lp_fit), ("configuration", lp_cfg)):
        if bound > ours * (1 + 1e-6) + 1e-9:
            problems.append(f"{name} LP bound {bound:.6f} exceeds our price {ours:.6f}")
    figure = PackingFigure(
        workload, len(results.nodeclaims), len(results.unschedulable), ours, lp, lp_fit, lp_cfg, len(problems)
    )
    return figure, problems


def summary(figures: Sequence[PackingFigure]) -> str:
    """The closing line: median and worst ratio against each bound."""
    worst = max(figures, key=lambda f: f.ratio)
    worst_fit = max(figures, key=lambda f: f.ratio_fit)
    worst_cfg = max(figures, key=lambda f: f.ratio_cfg)
    return (
        f"packing median_ratio={statistics.median(f.ratio for f in figures):.3f} worst_ratio={worst.ratio:.3f} "
        f"worst_workload={worst.workload.number:02d} "
        f"median_ratio_fit={statistics.median(f.ratio_fit for f in figures):.3f} "
        f"worst_ratio_fit={worst_fit.ratio_fit:.3f} worst_workload_fit={worst_fit.workload.number:02d} "
        f"median_ratio_cfg={statistics.median(f.ratio_cfg for f in figures):.3f} "
        f"worst_ratio_cfg={worst_cfg.ratio_cfg:.3f} worst_workload_cfg={worst_cfg.workload.number:02d} "
        f"workloads={len(figures)}"
    )
