"""The Karpenter-style mixed workload: scheduling throughput, fleet size, price and peak memory.

The mix follows the description of Karpenter's scheduling benchmark (`makeDiversePods`): a sixth each
of generic pods, zone topology-spread pods, hostname topology-spread pods, hostname pod-affinity pods,
zone pod-affinity pods and hostname anti-affinity pods, with the remainder generic. Sizes and label
values are drawn from a seeded RNG (42), so every run schedules the same pods.

What is measured:
- `pods_per_s` and `seconds`: wall time (time.perf_counter) of `solve()` alone, the median of `runs`
  runs (up to 3, fewer when they get slow) after one untimed warm-up that fills process-wide caches
  such as allocatable per instance type, as a warm Lambda would have them. Building pods and loading
  the catalog are not timed. The machine is small and shared, so figures are noisy; compare medians.
- `cpu_pods_per_s`: the same runs timed by the process's CPU time (time.process_time), which moves less
  than wall time when other work shares the machine's two cores.
- `peak_mib`: tracemalloc's peak of Python allocations during the warm-up run (traced apart from the
  timed runs because tracing slows Python down about twice). It counts what the solver allocates, not
  the pods and catalog that already exist, and not memory outside the Python allocator.
- `violations`: invariants the result must keep (see `fixtures.audit` and `mix_violations`); any
  non-zero figure is a solver bug, not noise.
"""

from __future__ import annotations

import random
import statistics
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodewright.model.objects import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from nodewright.scheduling.results import Results
from nodewright.scheduling.solver import solve
from nodewright.scheduling.templates import TemplateCache
from tests.bench.fixtures import NAMESPACE, Cluster, audit, default_cluster, requests

SEED = 42
LABEL_VALUES = tuple("abcdefg")
CPU_SIZES = ("100m", "250m", "500m", "1000m", "1500m")
MEMORY_SIZES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
# The label key is spelled as in Karpenter's benchmark, so the two mixes select the same way.
AFFINITY_LABEL = "my-affininity"
SPREAD_LABEL = "my-label"
SIZES = (1_000, 5_000, 10_000, 20_000)


class _Maker:
    """Draws pods for the mix from one RNG, numbering them so every name is unique."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.made = 0

    def value(self) -> str:
        return self.rng.choice(LABEL_VALUES)

    def pod(self, kind: str, labels: dict[str, str], **constraints: object) -> Pod:
        size = requests(self.rng.choice(CPU_SIZES), self.rng.choice(MEMORY_SIZES))
        self.made += 1
        return Pod(
            namespace=NAMESPACE,
            name=f"{kind}-{self.made:05d}",
            labels=labels,
            requests=size,
            **constraints,  # type: ignore[arg-type]
        )

    def generic(self, n: int) -> list[Pod]:
        return [self.pod("generic", {SPREAD_LABEL: self.value()}) for _ in range(n)]

    def spread(self, n: int, topology_key: str) -> list[Pod]:
        out = []
        for _ in range(n):
            labels = {SPREAD_LABEL: self.value()}
            selector = LabelSelector(match_labels=((SPREAD_LABEL, self.value()),))
            spread = TopologySpreadConstraint(1, topology_key, "DoNotSchedule", selector)
            out.append(self.pod("spread", labels, topology_spread=(spread,)))
        return out

    def affinity(self, n: int, topology_key: str) -> list[Pod]:
        out = []
        for _ in range(n):
            labels = {AFFINITY_LABEL: self.value()}
            term = PodAffinityTerm(LabelSelector(match_labels=((AFFINITY_LABEL, self.value()),)), topology_key)
            out.append(self.pod("affinity", labels, pod_affinity=(term,)))
        return out

    def anti_affinity(self, n: int, topology_key: str) -> list[Pod]:
        term = PodAffinityTerm(LabelSelector(match_labels=(("app", "nginx"),)), topology_key)
        return [self.pod("anti", {"app": "nginx"}, pod_anti_affinity=(term,)) for _ in range(n)]


def diverse_pods(count: int, seed: int = SEED) -> list[Pod]:
    """`count` pods of the Karpenter-style mix (a sixth per kind, remainder generic)."""
    maker = _Maker(seed)
    share = count // 6
    pods = maker.generic(share)
    pods += maker.spread(share, ZONE_LABEL)
    pods += maker.spread(share, HOSTNAME_LABEL)
    pods += maker.affinity(share, HOSTNAME_LABEL)
    pods += maker.affinity(share, ZONE_LABEL)
    pods += maker.anti_affinity(share, HOSTNAME_LABEL)
    pods += maker.generic(count - len(pods))
    return pods


def mix_violations(results: Results, pods: Sequence[Pod]) -> list[str]:
    """Required (anti-)affinity checks on the final fleet, one message per violation.

    Spread is not checked here: Kubernetes judges skew when each pod is placed, so the final counts may
    legitimately differ from what any single placement saw.
    """
    by_key = {p.key: p for p in pods}
    problems: list[str] = []
    # Label value -> zones with a pinned NodeClaim holding a pod that carries it.
    zones_with: dict[str, set[str]] = defaultdict(set)
    for claim in results.nodeclaims:
        members = [by_key[k] for k in claim.pods if k in by_key]
        if len(claim.zones) == 1:
            for pod in members:
                if AFFINITY_LABEL in pod.labels:
                    zones_with[pod.labels[AFFINITY_LABEL]].add(claim.zones[0])
    for claim in results.nodeclaims:
        members = [by_key[k] for k in claim.pods if k in by_key]
        nginx = sum(1 for p in members if p.labels.get("app") == "nginx")
        if nginx > 1:
            problems.append(f"{claim.name}: {nginx} pods with hostname anti-affinity on app=nginx")
        here = {p.labels.get(AFFINITY_LABEL) for p in members}
        for pod in members:
            for term in pod.pod_affinity:
                wanted = dict(term.label_selector.match_labels)[AFFINITY_LABEL]
                if term.topology_key == HOSTNAME_LABEL and wanted not in here:
                    problems.append(f"{claim.name}: {pod.key} wants {AFFINITY_LABEL}={wanted} on its node")
                if term.topology_key == ZONE_LABEL and not (
                    len(claim.zones) == 1 and claim.zones[0] in zones_with[wanted]
                ):
                    problems.append(f"{claim.name} ({claim.zones}): {pod.key} wants {AFFINITY_LABEL}={wanted} in zone")
    return problems


@dataclass(frozen=True, slots=True)
class MixFigure:
    """One scheduling figure: `solve()` on `pods` pods, timed and audited (`measure_solve`).

    `cluster` names the cluster the pods were drawn for: "" for the Karpenter-style mix on the default cluster
    (printed as a `scheduling mix=` line), else a heterogeneous cluster of `tests.bench.hetero` (a `hetero` line,
    with the cost per placed pod, the packing figure that compares across solver versions on the same pods).
    """

    cluster: str
    pods: int
    seconds: float  # median of the timed runs
    cpu_seconds: float  # median CPU time of the same runs
    runs: int
    nodeclaims: int
    unschedulable: int
    cost_per_hour: float
    peak_mib: float
    violations: int
    warm_seconds: float  # median of the runs with the NodePools' templates kept from an earlier solve

    def line(self) -> str:
        rate = self.pods / self.seconds if self.seconds > 0 else float("inf")
        cpu_rate = self.pods / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")
        warm_rate = self.pods / self.warm_seconds if self.warm_seconds > 0 else float("inf")
        if self.cluster:
            placed = self.pods - self.unschedulable
            per_pod = 1000 * self.cost_per_hour / placed if placed else 0.0
            head, per_pod_field = f"hetero cluster={self.cluster} pods={self.pods}", f" cost_per_pod_m={per_pod:.3f}"
        else:
            head, per_pod_field = f"scheduling mix={self.pods}", ""
        return (
            f"{head} pods_per_s={rate:.0f} cpu_pods_per_s={cpu_rate:.0f} warm_pods_per_s={warm_rate:.0f} "
            f"seconds={self.seconds:.3f} runs={self.runs} "
            f"nodeclaims={self.nodeclaims} unschedulable={self.unschedulable} "
            f"cost_per_hour={self.cost_per_hour:.4f}{per_pod_field} peak_mib={self.peak_mib:.1f} "
            f"violations={self.violations}"
        )


def timed(call: Callable[[], object], max_runs: int, budget_seconds: float) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of up to `max_runs` calls, stopping once they took `budget_seconds` (at least one)."""
    times: list[float] = []
    cpu_times: list[float] = []
    while len(times) < max_runs and (not times or sum(times) < budget_seconds):
        start, cpu_start = time.perf_counter(), time.process_time()
        call()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    return times, cpu_times


def measure_solve(
    call: Callable[[TemplateCache | None], Results],
    pods: int,
    audit_of: Callable[[Results], list[str]],
    max_runs: int,
    budget_seconds: float,
    cluster: str = "",
) -> tuple[MixFigure, list[str]]:
    """Time `call` (one `solve()` of `pods` pods, with the TemplateCache it is given, None for none); the figure
    and the violations `audit_of` finds in its result.

    The first, untimed run is traced for peak memory (a cold solve: it also fills the process-wide
    caches) and gives the result that is audited. Then up to `max_runs` timed runs, stopping early once
    they have taken `budget_seconds`, so the large sizes stay affordable; at least one always runs. Each
    prepares the NodePools against the catalog again, as a new Lambda container's first batch does; the
    `warm` runs after them share one TemplateCache filled by an untimed run, as a warm container's batches do.
    """
    tracemalloc.start()
    try:
        results = call(None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    times, cpu_times = timed(lambda: call(None), max_runs, budget_seconds)
    templates = TemplateCache()
    call(templates)
    warm_times, _ = timed(lambda: call(templates), max_runs, budget_seconds)
    problems = audit_of(results)
    figure = MixFigure(
        cluster=cluster,
        pods=pods,
        seconds=statistics.median(times),
        cpu_seconds=statistics.median(cpu_times),
        runs=len(times),
        nodeclaims=len(results.nodeclaims),
        unschedulable=len(results.unschedulable),
        cost_per_hour=results.cost_per_hour,
        peak_mib=peak / 2**20,
        violations=len(problems),
        warm_seconds=statistics.median(warm_times),
    )
    return figure, problems


def _solve(pods: Sequence[Pod], cluster: Cluster, templates: TemplateCache | None) -> Results:
    return solve(pods, templates=templates, **cluster.solve_kwargs())  # type: ignore[arg-type]


def measure(
    count: int, max_runs: int = 3, budget_seconds: float = 30.0, cluster: Cluster | None = None
) -> tuple[MixFigure, list[str]]:
    """Schedule the mix of `count` pods (timed as `measure_solve` says); the figure and the invariant
    violations found."""
    cluster = cluster or default_cluster()
    pods = diverse_pods(count)
    return measure_solve(
        lambda templates: _solve(pods, cluster, templates),
        count,
        lambda results: audit(results, pods, cluster) + mix_violations(results, pods),
        max_runs,
        budget_seconds,
    )
