"""Scale-down: how fast the planner decides on a large cluster, and how close consolidation gets to the best fleet.

Two figures, each from the planner's own code (`disruption.state.cluster_state`, `disruption.plan.plan`) on API
documents shaped as the API server serves them (NodeClaims, Nodes with their allocatable, Pods bound to them):

- `tick`: a cluster of about 1,000 nodes and 20,000 pods, built by `solve()` from a seeded mix of Deployments and
  then scaled in (a random share of each Deployment's pods removed), so emptiness and consolidation have work.
  Printed: the time to load the snapshot, to decide (all methods, and each one), and what was decided; then the
  same as `tick_features` with NodeOverlays, CapacityBuffers and unhealthy Nodes for repair in play.
- `quality`: 20 fragmented clusters. Each is a packing workload (`tests.bench.packing`) provisioned by `solve()`,
  then scaled in at random; consolidation then runs tick after tick (each decision applied as the workflow would
  carry it out: its nodes gone, their pods where the simulation put them, the replacement launched as its cheapest
  offering) until a tick decides nothing. Printed per cluster: the hourly cost before and after, the configuration-LP
  lower bound for re-packing every remaining pod from scratch (`packing.lp_cfg_bound`), `ratio` = after / bound, and
  `reached` = (before - after) / (before - bound), the share of the possible saving consolidation reached.

The NodePool buys on-demand capacity only, so the figures measure the algorithm rather than the spot-to-spot policy
(with spot, Karpenter's rules allow a spot node to be replaced only behind a setting and with 15 cheaper types).
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.catalog.types import ON_DEMAND, InstanceType
from nodewright.disruption.commands import Replacement
from nodewright.disruption.consolidation import SINGLE_NODE_SIMULATIONS_PER_TICK
from nodewright.disruption.decision import Decision
from nodewright.disruption.plan import Plan, plan
from nodewright.disruption.simulate import simulate
from nodewright.disruption.state import ClusterState, PodFactsCache, cluster_state
from nodewright.model.loader import ParsedPods, load_documents
from nodewright.model.objects import Pod
from nodewright.model.quantity import format_canonical
from nodewright.model.requirements import Operator, Requirement
from nodewright.scheduling import PlannedNodeClaim, solve
from nodewright.service.provision import node_resources
from tests.bench import packing
from tests.bench.fixtures import Cluster, default_cluster, requests

NOW = 1_800_000_000.0
ALL_AT_ONCE = {"consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}
QUALITY_CLUSTERS = 20
QUICK_CLUSTERS = 3
MAX_TICKS = 400


@dataclass
class FleetNode:
    """A node of the simulated fleet: its offering and the pods bound to it."""

    name: str
    instance_type: str
    zone: str
    price: float
    pods: list[Pod] = field(default_factory=list)


def on_demand_cluster() -> Cluster:
    """The benchmarks' cluster with on-demand offerings only (see the module doc)."""
    base = default_cluster()
    types = tuple(
        replace(it, offerings=tuple(o for o in it.offerings if o.capacity_type == ON_DEMAND))
        for it in base.instance_types
    )
    return Cluster(base.nodepool, base.nodeclass, tuple(it for it in types if it.offerings))


def provision(pods: Sequence[Pod], cluster: Cluster) -> list[FleetNode]:
    """The fleet `solve()` launches for `pods`: each NodeClaim becomes a node of its cheapest offering."""
    results = solve(pods, **cluster.solve_kwargs())  # type: ignore[arg-type]
    by_key = {p.key: p for p in pods}
    return [_node(claim, i, [by_key[k] for k in claim.pods]) for i, claim in enumerate(results.nodeclaims)]


def _node(claim: PlannedNodeClaim, index: int, pods: list[Pod]) -> FleetNode:
    cheapest = claim.cheapest
    return FleetNode(f"node-{index:05d}", cheapest.instance_type, cheapest.zone, cheapest.price, pods)


def scale_in(nodes: list[FleetNode], rng: random.Random) -> None:
    """Remove a random share (10-90 %) of each Deployment's pods, wherever they run."""
    keep: dict[str, float] = {}
    for node in nodes:
        kept = []
        for pod in node.pods:
            app = pod.labels.get("app", "")
            share = keep.setdefault(app, rng.uniform(0.1, 0.9))
            if rng.random() < share:
                kept.append(pod)
        node.pods = kept


def documents(nodes: Sequence[FleetNode], cluster: Cluster) -> list[dict[str, Any]]:
    """The fleet as API documents: the NodePool and EC2NodeClass, and per node its NodeClaim, Node and pods."""
    pool = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ON_DEMAND]}],
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
                }
            },
            "disruption": ALL_AT_ONCE,
        },
    }
    node_class = {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "bench",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        },
    }
    types = {it.name: it for it in cluster.instance_types}
    docs: list[dict[str, Any]] = [pool, node_class]
    for node in nodes:
        docs.extend(_node_documents(node, types[node.instance_type], cluster))
    return docs


def _node_documents(node: FleetNode, it: InstanceType, cluster: Cluster) -> list[dict[str, Any]]:
    resources = node_resources(it, cluster.nodeclass)
    provider = f"aws:///{node.zone}/i-{node.name}"
    labels = {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": ON_DEMAND,
        "node.kubernetes.io/instance-type": node.instance_type,
        "topology.kubernetes.io/zone": node.zone,
        "kubernetes.io/arch": it.architecture,
        "kubernetes.io/hostname": node.name,
    }
    ready = [{"type": "Ready", "status": "True"}]
    initialized = [{"type": "Initialized", "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}]
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "nodewright.io/v1",
            "kind": "NodeClaim",
            "metadata": {"name": f"claim-{node.name}", "labels": labels, "creationTimestamp": "2027-01-01T00:00:00Z"},
            "spec": {"nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"providerID": provider, "nodeName": node.name, "conditions": initialized, **resources},
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node.name, "labels": labels},
            "spec": {"providerID": provider},
            "status": {"conditions": ready, **resources},
        },
    ]
    for pod in node.pods:
        container = {k: format_canonical(k, v) for k, v in pod.requests.items() if k != "pods"}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod.name,
                    "namespace": pod.namespace,
                    # As the API server serves a pod: a warm planner parses each (uid, resourceVersion) once.
                    "uid": f"uid-{pod.namespace}-{pod.name}",
                    "resourceVersion": "1",
                    "labels": dict(pod.labels),
                    "ownerReferences": [{"kind": "ReplicaSet", "name": pod.labels.get("app", "")}],
                },
                "spec": {
                    "nodeName": node.name,
                    "containers": [{"name": "app", "image": "app", "resources": {"requests": container}}],
                },
                "status": {"phase": "Running"},
            }
        )
    return docs


def load(nodes: Sequence[FleetNode], cluster: Cluster, now: float = NOW) -> ClusterState:
    state, errors = cluster_state(documents(nodes, cluster), cluster.instance_types, now)
    if errors:
        raise RuntimeError(f"the bench fleet does not load: {errors[:3]}")
    return state


def apply(
    state: ClusterState, decision: Decision, earlier: set[str], nodes: list[FleetNode], counter: list[int]
) -> list[FleetNode]:
    """The fleet after the workflow carries out `decision`: its nodes gone, their pods moved as the simulation
    placed them (the tick simulated with the NodeClaims of its `earlier` decisions gone), a consolidation's
    replacement launched as its cheapest allowed offering."""
    leaving = {c.member.node for c in decision.candidates}
    kept = [n for n in nodes if n.name not in leaving]
    if not any(c.reschedulable for c in decision.candidates):
        return kept
    sim = simulate(state, decision.candidates, earlier, one_claim=True)
    by_key = {p.key: p for c in decision.candidates for p in c.reschedulable}
    by_node = {n.name: n for n in kept}
    for target, placed in sim.results.existing.items():
        for key in placed:
            if key in by_key:
                by_node[target].pods.append(by_key[key])
    for claim in sim.new_claims:
        option = _cheapest_allowed(claim, decision.replacement)
        counter[0] += 1
        kept.append(
            FleetNode(f"repl-{counter[0]:05d}", option[0], option[1], option[2], [by_key[k] for k in claim.pods])
        )
    return kept


def _cheapest_allowed(claim: PlannedNodeClaim, replacement: Replacement | None) -> tuple[str, str, float]:
    if replacement is None:
        return claim.cheapest.instance_type, claim.cheapest.zone, claim.cheapest.price
    allowed = {(o.instance_type, o.zone) for o in replacement.options}
    option = next(o for o in claim.launch_options if (o.instance_type, o.zone) in allowed)
    return option.instance_type, option.zone, option.price


def consolidate(nodes: list[FleetNode], cluster: Cluster) -> tuple[list[FleetNode], int, float]:
    """Tick (a minute apart) until ticks decide nothing while single-node consolidation has gone round every
    candidate (it simulates a share of them each tick); returns the fleet, the ticks, the seconds spent deciding."""
    counter = [0]
    decided_seconds = 0.0
    idle = 0
    for ticks in range(1, MAX_TICKS + 1):
        state = load(nodes, cluster, NOW + 60 * ticks)
        started = time.perf_counter()
        decided = plan(state, {})
        decided_seconds += time.perf_counter() - started
        if not decided.decisions:
            idle += 1
            single = next((m.eligible for m in decided.methods if m.method == "single-node"), 0)
            if idle * SINGLE_NODE_SIMULATIONS_PER_TICK >= single:
                return nodes, ticks, decided_seconds
            continue
        idle = 0
        earlier: set[str] = set()
        for decision in decided.decisions:
            nodes = apply(state, decision, earlier, nodes, counter)
            earlier.update(c.name for c in decision.candidates)
    return nodes, MAX_TICKS, decided_seconds


@dataclass(frozen=True, slots=True)
class QualityFigure:
    number: int
    kind: str
    pods: int
    nodes: tuple[int, int]
    before: float
    after: float
    bound: float
    ticks: int
    seconds: float

    @property
    def ratio(self) -> float:
        return self.after / self.bound if self.bound > 0 else float("inf")

    @property
    def reached(self) -> float:
        possible = self.before - self.bound
        return (self.before - self.after) / possible if possible > 1e-9 else 1.0

    def line(self) -> str:
        return (
            f"consolidation workload={self.number:02d} kind={self.kind} pods={self.pods} "
            f"nodes={self.nodes[0]}->{self.nodes[1]} before={self.before:.4f} after={self.after:.4f} "
            f"lp_cfg={self.bound:.4f} ratio={self.ratio:.3f} reached={self.reached:.3f} ticks={self.ticks} "
            f"decide_s={self.seconds:.2f}"
        )


def quality(number: int, cluster: Cluster) -> QualityFigure:
    workload = packing.make_workload(number)
    nodes = provision(workload.pods, cluster)
    scale_in(nodes, random.Random(7000 + number))
    remaining = [p for n in nodes for p in n.pods]
    before = sum(n.price for n in nodes)
    after_nodes, ticks, seconds = consolidate([replace(n, pods=list(n.pods)) for n in nodes], cluster)
    sizes: Counter[tuple[int, int]] = Counter(
        (p.requests.get("cpu", 0), p.requests.get("memory", 0)) for p in remaining
    )
    bound = packing.lp_cfg_bound(sizes, cluster) if sizes else 0.0
    after = sum(n.price for n in after_nodes)
    return QualityFigure(
        number, workload.kind, len(remaining), (len(nodes), len(after_nodes)), before, after, bound, ticks, seconds
    )


def quality_summary(figures: Sequence[QualityFigure]) -> str:
    return (
        f"consolidation median_ratio={statistics.median(f.ratio for f in figures):.3f} "
        f"worst_ratio={max(f.ratio for f in figures):.3f} "
        f"median_reached={statistics.median(f.reached for f in figures):.3f} "
        f"worst_reached={min(f.reached for f in figures):.3f} clusters={len(figures)}"
    )


# ------------------------------------------------------------------------------------------------ tick


def large_fleet(pods: int, seed: int = 11) -> tuple[list[FleetNode], Cluster]:
    """About `pods` pods in Deployments of mixed sizes, provisioned and then scaled in by half."""
    rng = random.Random(seed)
    cluster = on_demand_cluster()
    made: list[Pod] = []
    deployment = 0
    while len(made) < pods * 2:
        cpu = rng.choice((100, 250, 500, 1000, 2000))
        memory = max(64, round(cpu * rng.uniform(1.0, 4.0)))
        size = requests(f"{cpu}m", f"{memory}Mi")
        name = f"d{deployment:03d}"
        made.extend(
            Pod(namespace="default", name=f"{name}-{i}", labels={"app": name}, requests=size)
            for i in range(rng.randint(20, 300))
        )
        deployment += 1
    # Provisioned on types of 16 vCPUs or more, so the fleet is about 1,000 nodes (20 pods a node) as a large
    # production cluster runs; consolidation may then use any on-demand type.
    large = Requirement("karpenter.k8s.aws/instance-cpu", Operator.GT, ("15",))
    nodes = provision(made, replace(cluster, nodepool=replace(cluster.nodepool, requirements=(large,))))
    for node in nodes:
        node.pods = [p for p in node.pods if rng.random() < 1 / 2]
    return nodes, cluster


OVERLAYS = (  # a Savings Plan on a family, a licence fee on another, an extended resource on a third
    ("savings-plan-m", "m5", {"priceAdjustment": "-20%"}),
    ("licence-fee-c", "c5", {"priceAdjustment": "+0.05", "weight": 10}),
    ("fpga-r", "r5", {"capacity": {"example.com/fpga": "1"}}),
)
BUFFERS = 5  # CapacityBuffers of 4 copies of a 2-CPU / 4Gi pod each
UNHEALTHY_SHARE = 0.02  # of the nodes: half past the repair policy's toleration, half still inside it


def feature_documents() -> list[dict[str, Any]]:
    """What NodeOverlays and CapacityBuffers add to a tick's reads: the overlays over the catalog, and the buffers
    (with their PodTemplates), planned as virtual pods (unhealthy nodes for repair: `make_unhealthy`)."""
    family = "karpenter.k8s.aws/instance-family"
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "nodewright.io/v1alpha1",
            "kind": "NodeOverlay",
            "metadata": {"name": name},
            "spec": {"requirements": [{"key": family, "operator": "In", "values": [value]}], **spec},
        }
        for name, value, spec in OVERLAYS
    ]
    for index in range(BUFFERS):
        template = f"room-{index}"
        container = {"name": "app", "image": "pause", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": template, "namespace": "default", "generation": 1},
                "template": {"spec": {"containers": [container]}},
            }
        )
        docs.append(
            {
                "apiVersion": "autoscaling.x-k8s.io/v1beta1",
                "kind": "CapacityBuffer",
                "metadata": {"name": template, "namespace": "default", "uid": f"uid-{template}", "generation": 1},
                "spec": {"podTemplateRef": {"name": template}, "replicas": 4},
            }
        )
    return docs


def make_unhealthy(docs: list[dict[str, Any]], now: float = NOW) -> int:
    """Every 50th Node's Ready condition Unknown, alternately for 40 minutes (past the 30-minute toleration: due)
    and for 10 (waiting); returns how many. A share of 2 % stays under Karpenter's 20 % guard."""
    nodes = [d for d in docs if d["kind"] == "Node"]
    chosen = nodes[:: round(1 / UNHEALTHY_SHARE)]
    for index, node in enumerate(chosen):
        since = now - (40 if index % 2 == 0 else 10) * 60
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
        node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "lastTransitionTime": stamp}]
    return len(chosen)


def tick_figure(pods: int = 20_000, runs: int = 3, features: bool = False) -> str:
    """Load and decide on the large fleet: a cold tick (a new container: every pod parsed), then `runs` warm ticks
    (the median of each phase; a warm container parses only pods whose resourceVersion changed). `features`: with
    NodeOverlays, CapacityBuffers and unhealthy nodes in play (`feature_documents`, `make_unhealthy`)."""
    nodes, cluster = large_fleet(pods)
    docs = documents(nodes, cluster)
    unhealthy = make_unhealthy(docs) if features else 0
    if features:
        docs.extend(feature_documents())
    parsed: ParsedPods = {}  # what a warm planner container keeps between ticks
    known: PodFactsCache = {}

    def load_state() -> ClusterState:
        loaded = load_documents(docs, "bench", False, parsed)
        return cluster_state(docs, cluster.instance_types, NOW, loaded=loaded, known_facts=known)[0]

    started = time.perf_counter()
    state = load_state()
    plan(state, {})
    cold = time.perf_counter() - started
    loads, decides, cpu_loads, cpu_decides = [], [], [], []
    decided: Plan | None = None
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        state = load_state()
        loaded, cpu_loaded = time.perf_counter(), time.process_time()
        decided = plan(state, {}, timer=time.perf_counter)
        loads.append(loaded - started)
        decides.append(time.perf_counter() - loaded)
        # CPU time: what a busy shared machine inflates far less than wall time.
        cpu_loads.append(cpu_loaded - cpu_started)
        cpu_decides.append(time.process_time() - cpu_loaded)
    assert decided is not None
    per_method = " ".join(f"{m.method}={m.seconds * 1000:.0f}ms/{m.eligible}" for m in decided.methods)
    extra = ""
    if features:
        overlays = state.overlays.applied if state.overlays is not None else ()
        hosted = sum(state.buffer_placement().hosts.values())
        extra = (
            f"overlays={len(overlays)} buffer_pods_hosted={hosted} unhealthy={unhealthy} "
            f"repairs_due={len(decided.repairs.due)} "
        )
    moved = sum(len(d.candidates) for d in decided.decisions)
    total = statistics.median(a + b for a, b in zip(loads, decides, strict=True))
    total_cpu = statistics.median(a + b for a, b in zip(cpu_loads, cpu_decides, strict=True))
    return (
        f"{'tick_features' if features else 'tick'} nodes={len(nodes)} pods={sum(len(n.pods) for n in nodes)} "
        f"{extra}cold_ms={cold * 1000:.0f} "
        f"load_ms={statistics.median(loads) * 1000:.0f} decide_ms={statistics.median(decides) * 1000:.0f} "
        f"load_cpu_ms={statistics.median(cpu_loads) * 1000:.0f} "
        f"decide_cpu_ms={statistics.median(cpu_decides) * 1000:.0f} "
        f"total_ms={total * 1000:.0f} total_cpu_ms={total_cpu * 1000:.0f} "
        f"decisions={len(decided.decisions)} nodes_decided={moved} methods: {per_method}"
    )


def run(quick: bool, emit: Any, only: str = "") -> None:
    if only in ("", "tick"):
        emit(
            "# tick: planner load + decision on about 1,100 nodes / 20,000 pods: cold_ms = a new container's first "
            "tick; load/decide/total = warm ticks, median of 3; per method: ms/eligible"
        )
        emit(tick_figure(5_000 if quick else 20_000))
        emit(
            "# tick_features: the same fleet with 3 NodeOverlays, 5 CapacityBuffers (20 virtual pods) and 2 % of the "
            "nodes NotReady (half past the repair policy's toleration)"
        )
        emit(tick_figure(5_000 if quick else 20_000, features=True))
    if only not in ("", "quality"):
        return
    emit("# consolidation: cost after / configuration-LP bound, and the share of the possible saving reached")
    cluster = on_demand_cluster()
    figures = []
    for number in range(QUICK_CLUSTERS if quick else QUALITY_CLUSTERS):
        figure = quality(number, cluster)
        figures.append(figure)
        emit(figure.line())
    emit(quality_summary(figures))


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.bench.consolidation", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("tick", "quality"), default="")
    args = parser.parse_args(argv)
    run(args.quick, lambda line: print(line, flush=True), args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
