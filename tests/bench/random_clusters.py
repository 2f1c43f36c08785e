"""`python -m tests.bench.random_clusters`: scheduling on seeded random clusters, not on mixes the solver was tuned on.

    python -m tests.bench.random_clusters                          # 30 seeds from today's date, 10k pods
    python -m tests.bench.random_clusters --seeds 100-129 --pods 1000 10000 50000
    python -m tests.bench.random_clusters --seeds 7 12 40 --no-lp  # a list of seeds; skip the LP bound
    python -m tests.bench.compare --ref main -- tests.bench.random_clusters --seeds 100-129 --no-lp

There is no fixed list of seeds to tune to: without `--seeds` the range is derived from today's date (printed
first, so a run can be repeated), and every seed is a different cluster.

A seed draws a cluster (`generate`, in `random_generator`): 1-15 NodePools with the requirements people write
(instance categories, families, generation Gt, arch, capacity types, zones, sizes, weights, taints, cpu limits,
two EC2NodeClasses), DaemonSets, 5-200 Deployments with the request shapes of real services (100m/128Mi to
4 CPU/16Gi), memory-heavy caches, batch jobs and GPU jobs (nvidia.com/gpu on g/p types behind a tainted pool),
zone and hostname topology spreads (DoNotSchedule and ScheduleAnyway), required and preferred pod (anti-)affinity,
node selectors, required and preferred node affinity, tolerations, and existing nodes already running pods. A size
of N pods shares N pending pods over the Deployments (log-normal weights; anti-affinity and GPU Deployments keep a
realistic replica count). Every Deployment targets a NodePool that can host it, which the generator checks against
the catalog, and NodePool limits leave room for what may land there: so every pod is schedulable by construction,
and an unschedulable pod is a finding, printed.

Per seed and size, one `random cluster=random-<seed> pods=<N>` line (stable keys for `tests.bench.compare`):
- `pods_per_s`, `cpu_pods_per_s`, `seconds`: solve() alone, in-process, the best of up to `--runs` timed runs
  (stopping once they took `--budget` seconds) after one untimed run that fills process-wide caches (a warm
  Lambda's); each run prepares the NodePools afresh, as a new container's first batch and `nodewright simulate` do.
  Wall time on a shared machine is noisy; compare cpu_*.
- `warm_pods_per_s`, `warm_cpu_pods_per_s`, `warm_seconds`: the same, with the NodePools prepared by an untimed run
  and kept in one `TemplateCache`, as a warm provisioner container's batches and the planner's simulations solve.
  The cache only saves time: a warm plan that differs from the cold one is reported as a violation.
- `nodeclaims`, `cost_per_hour`, `unschedulable`, `on_existing` (pods placed on existing nodes).
- `lp_cfg`, `ratio_cfg` (= cost_per_hour / lp_cfg), `cfg_pods`: the configuration-LP lower bound of `random_bound`
  for the pods the plan put on new NodeClaims, with every constraint that is not about one node relaxed (spreads,
  pod (anti-)affinity, preferences, limits): a ratio above 1 is packing loss plus the price of those constraints,
  which on a seed with many one-pod-per-node Deployments is most of it. So also:
- `lp_free`, `ratio_free` (= free_cost / lp_free), `free_pods`, `free_cost`: the same bound for the new NodeClaims
  that hold only pods without topology spread or pod (anti-)affinity, required or preferred (`unconstrained`),
  where what the bound relaxes barely matters: the figure to hold against the 1.05x packing target. (A bound of
  a part of the fleet is a bound of that part's price: those NodeClaims hold exactly those pods.)
  `-` when not bounded (`--no-lp`, no such NodeClaims, or more pod groups than the LP takes).
- `cfg_converged`, `free_converged`: whether column generation ended (`random_bound`) within `--lp-seconds`; a bound
  that did not is still a lower bound, only a weaker one, so its ratio overstates the packing loss.
- `violations`: invariants the plan must keep (`audit`); any is a solver bug.
Then per size a `random summary` line: the slowest seed and its pods/s, the median pods/s, the median and worst
`ratio_cfg`, the median `ratio_free`, the totals of unschedulable pods and violations. Lines starting with `#` are
notes: the seed range, each seed's features (per feature: Deployments/pending pods that have it), the unschedulable
pods and violations found.

The exit status is 1 when a plan violates an invariant or leaves a pod unschedulable, never because a figure is slow.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from nodewright.model.objects import ZONE_LABEL, Pod
from nodewright.model.requirements import Requirements
from nodewright.model.taints import untolerated
from nodewright.scheduling.results import PlannedNodeClaim, Results
from nodewright.scheduling.solver import solve
from nodewright.scheduling.templates import TemplateCache
from tests.bench.fixtures import audit_fleet
from tests.bench.mix import timed
from tests.bench.random_bound import Bound, cfg_bound
from tests.bench.random_generator import CAPACITY_TYPE, RandomCluster, generate, node_options

SIZES = (10_000,)
SEEDS_PER_RUN = 30
_SHOWN = 5  # unschedulable pods and violations named per figure


def default_seeds(today: datetime.date | None = None) -> list[int]:
    """A fresh range of `SEEDS_PER_RUN` seeds per day: nobody tunes to it, anyone can re-run it."""
    start = (today or datetime.date.today()).toordinal() % 10_000 * 100
    return list(range(start, start + SEEDS_PER_RUN))


def parse_seeds(words: Sequence[str]) -> list[int]:
    """`100-129` (inclusive) or `7 12 40`, or both."""
    out: list[int] = []
    for word in words:
        first, dash, last = word.partition("-")
        out.extend(range(int(first), int(last) + 1) if dash else [int(first)])
    return out


def describe_seeds(seeds: Sequence[int]) -> str:
    if len(seeds) > 1 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return " ".join(str(s) for s in seeds)


def audit(results: Results, cluster: RandomCluster) -> list[str]:
    """Every pod placed once or refused and NodeClaims within allocatable (`fixtures.audit_fleet`), then
    `placement_violations`."""
    problems = audit_fleet(results, cluster.pending, cluster.instance_types, cluster.nodeclass_of)
    return problems + placement_violations(results, cluster)


def placement_violations(results: Results, cluster: RandomCluster) -> list[str]:
    """Per new NodeClaim: its pods tolerate its taints, and every node it may launch as (each of its instance types,
    in each of its zones and capacity types, with its labels) meets each pod's node selector and some required node
    affinity term; a Deployment with hostname anti-affinity has at most one pod on it, and on each existing node."""
    by_key = {p.key: p for p in cluster.pending}
    types = {it.name: it for it in cluster.instance_types}
    problems: list[str] = []
    for claim in results.nodeclaims:
        checked: dict[tuple[object, ...], bool] = {}
        anti: Counter[str] = Counter()
        for key in claim.pods:
            pod = by_key[key]
            if pod.pod_anti_affinity:
                anti[pod.labels["app"]] += 1
            constraints = (pod.tolerations, tuple(sorted(pod.node_selector.items())), pod.required_node_terms)
            ok = checked.get(constraints)
            if ok is None:
                ok = checked[constraints] = untolerated(pod.tolerations, claim.taints) is None and all(
                    any(_meets(option, types[name].labels, claim) for option in node_options(pod))
                    for name in claim.instance_types
                )
            if not ok:
                problems.append(f"{claim.name}: {key}'s taints, node selector or affinity not met by the claim")
        problems.extend(f"{claim.name}: {n} pods of {app} (hostname anti-affinity)" for app, n in anti.items() if n > 1)
    for node, keys in results.existing.items():
        on_node = Counter(by_key[k].labels["app"] for k in keys if k in by_key and by_key[k].pod_anti_affinity)
        problems.extend(f"{node}: {n} pods of {app} (hostname anti-affinity)" for app, n in on_node.items() if n > 1)
    return problems


def _meets(option: Requirements, type_labels: Mapping[str, str], claim: PlannedNodeClaim) -> bool:
    """Whether a node of this type launched for the claim, in any of its zones and capacity types, meets `option`."""
    for key in option.by_key:
        wanted = option.get(key)
        if key == ZONE_LABEL:
            values: Sequence[str | None] = claim.zones
        elif key == CAPACITY_TYPE:
            values = claim.capacity_types
        else:
            values = [claim.labels.get(key, type_labels.get(key))]
        if not all(wanted.matches(v) for v in values):
            return False
    return True


def unconstrained(pod: Pod) -> bool:
    """No topology spread and no pod (anti-)affinity, required or preferred: what the LP bound does not relax."""
    return not (
        pod.topology_spread
        or pod.pod_affinity
        or pod.pod_anti_affinity
        or pod.preferred_pod_affinity
        or pod.preferred_pod_anti_affinity
    )


@dataclass(frozen=True, slots=True)
class Figure:
    cluster: RandomCluster
    seconds: float  # best of the timed runs
    cpu_seconds: float  # CPU time of the same run
    warm_seconds: float  # best of the timed runs with the NodePools prepared (a kept TemplateCache)
    warm_cpu_seconds: float
    runs: int
    results: Results
    bound: Bound | None  # every new NodeClaim
    free_bound: Bound | None  # the new NodeClaims whose pods are all `unconstrained`
    problems: tuple[str, ...]

    @property
    def pods(self) -> int:
        return len(self.cluster.pending)

    @property
    def pods_per_s(self) -> float:
        return self.pods / self.seconds if self.seconds > 0 else float("inf")

    @property
    def warm_pods_per_s(self) -> float:
        return self.pods / self.warm_seconds if self.warm_seconds > 0 else float("inf")

    @property
    def ratio(self) -> float | None:
        return self.bound.ratio if self.bound is not None else None

    @property
    def free_ratio(self) -> float | None:
        return self.free_bound.ratio if self.free_bound is not None else None

    def line(self) -> str:
        c, r = self.cluster, self.results
        cpu_rate = self.pods / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")
        warm_cpu_rate = self.pods / self.warm_cpu_seconds if self.warm_cpu_seconds > 0 else float("inf")
        return (
            f"random cluster={c.name} pods={self.pods} pools={len(c.nodepools)} workloads={len(c.workloads)} "
            f"existing_nodes={len(c.nodes)} pods_per_s={self.pods_per_s:.0f} cpu_pods_per_s={cpu_rate:.0f} "
            f"seconds={self.seconds:.3f} runs={self.runs} warm_pods_per_s={self.warm_pods_per_s:.0f} "
            f"warm_cpu_pods_per_s={warm_cpu_rate:.0f} warm_seconds={self.warm_seconds:.3f} "
            f"nodeclaims={len(r.nodeclaims)} "
            f"on_existing={sum(len(v) for v in r.existing.values())} unschedulable={len(r.unschedulable)} "
            f"cost_per_hour={r.cost_per_hour:.4f} {_bound_fields('cfg', self.bound)} "
            f"{_bound_fields('free', self.free_bound)} violations={len(self.problems)}"
        )


def _bound_fields(name: str, bound: Bound | None) -> str:
    """`lp_<name>`, `ratio_<name>`, `<name>_pods`, `<name>_converged` (and `<name>_cost` for a part of the fleet);
    `-`: not bounded."""
    lp = f"{bound.value:.4f}" if bound is not None and bound.ratio is not None else "-"
    ratio = f"{bound.ratio:.3f}" if bound is not None and bound.ratio is not None else "-"
    converged = ("yes" if bound.converged else "no") if bound is not None else "-"
    fields = (
        f"lp_{name}={lp} ratio_{name}={ratio} {name}_pods={bound.pods if bound is not None else '-'} "
        f"{name}_converged={converged}"
    )
    if name != "cfg":
        fields += f" {name}_cost={f'{bound.cost:.4f}' if bound is not None else '-'}"
    return fields


def measure(
    seed: int, count: int, *, max_runs: int = 3, budget_seconds: float = 3.0, lp_seconds: float | None = 3.0
) -> Figure:
    """Generate cluster `seed` with `count` pending pods, solve it (timed as the module says), audit the plan and,
    unless `lp_seconds` is None, bound it (`lp_seconds` for each bound)."""
    cluster = generate(seed, count)
    kwargs = cluster.solve_kwargs()

    def call() -> Results:
        return solve(cluster.pending, **kwargs)

    results = call()  # untimed: fills the process-wide caches; its plan is the one audited and bounded
    times, cpu_times = timed(call, max_runs, budget_seconds)
    best = min(range(len(times)), key=times.__getitem__)
    templates = TemplateCache()
    warm_results = solve(cluster.pending, templates=templates, **kwargs)  # untimed: prepares the NodePools
    warm_times, warm_cpu_times = timed(
        lambda: solve(cluster.pending, templates=templates, **kwargs), max_runs, budget_seconds
    )
    warm_best = min(range(len(warm_times)), key=warm_times.__getitem__)
    problems = audit(results, cluster)
    if warm_results.to_json() != results.to_json():
        problems.append("the plan with the NodePools prepared by an earlier solve differs from the cold plan")
    bound = free_bound = None
    if lp_seconds is not None:
        by_key = {p.key: p for p in cluster.pending}
        free = [c for c in results.nodeclaims if all(unconstrained(by_key[k]) for k in c.pods)]
        bound = cfg_bound(results.nodeclaims, cluster, lp_seconds)
        free_bound = cfg_bound(free, cluster, lp_seconds) if free else None
        for part in (bound, free_bound):
            if part is not None and part.value > part.cost * (1 + 1e-6) + 1e-9:
                problems.append(f"LP bound {part.value:.6f} exceeds the price {part.cost:.6f} of the claims it bounds")
    return Figure(
        cluster,
        times[best],
        cpu_times[best],
        warm_times[warm_best],
        warm_cpu_times[warm_best],
        len(times),
        results,
        bound,
        free_bound,
        tuple(problems),
    )


def _median(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):.3f}" if known else "-"


def _rate(figures: Sequence[Figure], seconds: Callable[[Figure], float]) -> str:
    """The median pods per second over the figures whose `seconds` were measured above zero."""
    return f"{statistics.median(f.pods / seconds(f) for f in figures if seconds(f) > 0):.0f}"


def summary(count: int, figures: Sequence[Figure]) -> str:
    """The closing line of one size: slowest seed, medians, worst ratio, totals."""
    slowest = min(figures, key=lambda f: f.pods_per_s)
    slowest_warm = min(figures, key=lambda f: f.warm_pods_per_s)
    bounded = [f for f in figures if f.ratio is not None]
    worst = max(bounded, key=lambda f: f.ratio or 0.0) if bounded else None
    worst_fields = (
        f"worst_ratio_cfg={worst.ratio:.3f} worst={worst.cluster.name}" if worst else "worst_ratio_cfg=- worst=-"
    )
    return (
        f"random summary pods={count} seeds={len(figures)} slowest={slowest.cluster.name} "
        f"slowest_pods_per_s={slowest.pods_per_s:.0f} "
        f"median_pods_per_s={statistics.median(f.pods_per_s for f in figures):.0f} "
        f"median_cpu_pods_per_s={_rate(figures, lambda f: f.cpu_seconds)} "
        f"slowest_warm={slowest_warm.cluster.name} slowest_warm_pods_per_s={slowest_warm.warm_pods_per_s:.0f} "
        f"median_warm_pods_per_s={statistics.median(f.warm_pods_per_s for f in figures):.0f} "
        f"median_warm_cpu_pods_per_s={_rate(figures, lambda f: f.warm_cpu_seconds)} "
        f"median_ratio_cfg={_median([f.ratio for f in figures])} {worst_fields} "
        f"median_ratio_free={_median([f.free_ratio for f in figures])} bounded={len(bounded)} "
        f"cost_per_hour={sum(f.results.cost_per_hour for f in figures):.4f} "
        f"unschedulable={sum(len(f.results.unschedulable) for f in figures)} "
        f"violations={sum(len(f.problems) for f in figures)}"
    )


def _short(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run(
    seeds: Sequence[int],
    sizes: Sequence[int],
    *,
    max_runs: int = 3,
    budget_seconds: float = 3.0,
    lp_seconds: float | None = 3.0,
    emit: Callable[[str], None] = print,
) -> int:
    """Measure every seed at every size, emitting lines as they are measured; returns the findings (unschedulable
    pods plus violations)."""
    findings = 0
    for count in sizes:
        figures = []
        for seed in seeds:
            figure = measure(seed, count, max_runs=max_runs, budget_seconds=budget_seconds, lp_seconds=lp_seconds)
            figures.append(figure)
            emit(f"# {figure.cluster.name} pods={count}: {figure.cluster.features()}")
            emit(figure.line())
            for u in figure.results.unschedulable[:_SHOWN]:
                emit(f"# unschedulable: {figure.cluster.name} pods={count} {u.pod}: {_short(u.reason)}")
            for problem in figure.problems[:_SHOWN]:
                emit(f"# violation: {figure.cluster.name} pods={count} {_short(problem)}")
            findings += len(figure.results.unschedulable) + len(figure.problems)
        emit(summary(count, figures))
    return findings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.random_clusters", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs="+", help="seeds: a range `100-129` and/or a list (default: from the date)")
    parser.add_argument("--pods", type=int, nargs="+", default=list(SIZES), help="pending pods per cluster")
    parser.add_argument("--runs", type=int, default=3, help="timed solves per figure (the best is printed)")
    parser.add_argument("--budget", type=float, default=3.0, help="stop timing a figure after this many seconds")
    parser.add_argument("--lp-seconds", type=float, default=3.0, help="time for each LP bound per figure")
    parser.add_argument("--no-lp", action="store_true", help="skip the LP bound")
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds) if args.seeds else default_seeds()
    source = "--seeds" if args.seeds else f"today's date, {datetime.date.today().isoformat()}"
    print(f"# seeds {describe_seeds(seeds)} ({source}); re-run with --seeds {describe_seeds(seeds)}", flush=True)
    started = time.perf_counter()
    findings = run(
        seeds,
        args.pods,
        max_runs=args.runs,
        budget_seconds=args.budget,
        lp_seconds=None if args.no_lp else args.lp_seconds,
        emit=lambda line: print(line, flush=True),
    )
    print(f"# {time.perf_counter() - started:.0f} s in all", flush=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
