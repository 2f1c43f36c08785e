"""Heterogeneous clusters: many NodePools, many kinds of Deployments, and a provisioner batch on a large cluster.

The mix (`tests.bench.mix`) schedules into one NodePool that allows every type. Production clusters look
different: a spot pool and an on-demand one, a tainted GPU pool, arm64 nodes, pools limited to some instance
families, sizes or zones, dedicated (tainted) pools for batch or one team, a pool on Bottlerocket. Each cluster
here has 13 NodePools of that kind (their parameters drawn from the cluster's seed: weights, families, zones,
generations, a cpu limit) on two EC2NodeClasses (AL2023 and Bottlerocket) with four DaemonSets, and 50
Deployments (shapes) drawn from the same seed: zone topology spread, hostname spread, hostname anti-affinity,
node selectors and required or preferred node affinity (capacity type, arm64, instance family, one zone),
tolerations for the dedicated pools, GPU requests, zone pod affinity to another Deployment, preferred anti-
affinity with a ScheduleAnyway spread. A size of N pods shares N over the shapes by their seeded weights (a
Deployment with hostname anti-affinity or GPUs keeps a realistic replica count at every size).

Figures (`measure`):
- `hetero`: solve() for N pods of a cluster, timed as the mix is (`mix.measure_solve`, the same figure type): a
  traced, untimed warm-up, then the median of up to `max_runs` runs (wall and CPU time), each preparing the 13
  NodePools against the catalog afresh (a new container's first batch), and `warm_pods_per_s` with them kept in
  one TemplateCache (a warm container's batches). Printed with the fleet's
  NodeClaims, unschedulable pods, hourly cost, and `cost_per_pod_m` (the cost per pod in thousandths of a dollar
  an hour), the packing figure to compare between two versions of the solver on the same pods.
- `existing` (`measure_existing`): the provisioner's usual batch, 100 new replicas of the cluster's
  Deployments pending against an existing cluster of 1,000 nodes (a seeded sample of the NodeClaims that
  solve() plans for the cluster, made nodes of their cheapest offering, with their pods and DaemonSet pods
  bound to them); the median of `runs` solve() calls after an untimed warm-up (a warm Lambda container), each
  batch with new Node objects and pod tuples around the same pods, as the loader builds them; `cold_ms`: the
  median of `COLD_RUNS` solves with nothing kept from an earlier one (a new container's first batch).

Every result is audited (`fixtures.audit` and `hetero_violations`: taints tolerated, node selectors and
required node affinity met by the claim's labels and requirements, at most one pod per node of a Deployment
with hostname anti-affinity).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import random
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    DaemonSet,
    LabelSelector,
    Node,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from nodewright.model.parse import parse_nodepool
from nodewright.model.parse_ec2nodeclass import parse_ec2nodeclass
from nodewright.model.requirements import Operator, Requirement, Requirements
from nodewright.model.resources import parse_resources
from nodewright.model.taints import Taint, Toleration, untolerated
from nodewright.scheduling.results import PlannedNodeClaim, Results
from nodewright.scheduling.solver import solve
from tests.bench.fixtures import audit_fleet
from tests.bench.mix import MixFigure, measure_solve, timed

CLUSTER_SEEDS = (1, 2, 3)
SIZES = (1_000, 10_000, 50_000)
SHAPES = 50
EXISTING_NODES = 1_000
EXISTING_PENDING = 100
COLD_RUNS = 3  # batches against 1,000 nodes timed with nothing kept from an earlier solve
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f")
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
AWS = "karpenter.k8s.aws/"
POOL_LABEL = "bench.nodewright.io/pool"
GPU = "nvidia.com/gpu"
# Per kind of Deployment: the weight it is drawn with after every kind has appeared once.
KIND_WEIGHTS = {
    "web": 6,
    "worker": 6,
    "api-anti": 2,
    "host-spread": 2,
    "arm": 3,
    "spot-only": 3,
    "on-demand": 2,
    "critical": 2,
    "gpu": 1,
    "memory": 2,
    "batch": 2,
    "ingest": 1,
    "payments": 1,
    "zonal": 2,
    "prefer-spot": 3,
    "family": 2,
    "co-located": 2,
    "soft-anti": 2,
    "small-nodes": 1,
    "bottlerocket": 1,
}
# Kinds whose replica count does not grow with the cluster (one node per pod, or GPUs).
KIND_CAPS = {"api-anti": 40, "gpu": 24}
FAMILIES = ("m6i", "m6a", "m7i", "m7a", "c6i", "c7i", "r6i", "r7i", "m5", "c5")


@dataclass(frozen=True, slots=True)
class Shape:
    """One Deployment: its pod template (unnamed), its weight in the cluster's pods, a cap on its replicas."""

    name: str
    kind: str
    template: Pod
    weight: float
    cap: int | None


@dataclass(frozen=True, slots=True)
class HeteroCluster:
    """A heterogeneous cluster: the inputs `solve()` gets besides the pods, and its Deployments."""

    name: str
    nodepools: tuple[NodePool, ...]
    nodeclasses: tuple[EC2NodeClass, ...]
    instance_types: tuple[InstanceType, ...]
    daemonsets: tuple[DaemonSet, ...]
    shapes: tuple[Shape, ...]

    def solve_kwargs(self) -> dict[str, Any]:
        return {
            "nodepools": self.nodepools,
            "nodeclasses": self.nodeclasses,
            "instance_types": self.instance_types,
            "daemonsets": self.daemonsets,
        }

    def nodeclass_of(self, claim: PlannedNodeClaim) -> EC2NodeClass:
        return next(c for c in self.nodeclasses if c.name == claim.node_class)


# ----------------------------------------------------------------------------------------------- NodePools


def _requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)} if values else {"key": key, "operator": operator}


def _pool_doc(
    name: str,
    requirements: list[dict[str, Any]],
    *,
    weight: int = 0,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    limits: Mapping[str, str] | None = None,
    node_class: str = "default",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {POOL_LABEL: name, **(labels or {})}},
            "spec": {
                "requirements": requirements,
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class},
                "taints": [dict(t) for t in taints],
            },
        }
    }
    if weight:
        spec["weight"] = weight
    if limits:
        spec["limits"] = dict(limits)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def _dedicated(key: str, value: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": "NoSchedule"}


def _pool_docs(rng: random.Random) -> list[dict[str, Any]]:
    """The cluster's 13 NodePools; the seed decides weights, generations, families, sizes, zones and a limit."""
    general = [
        _requirement(AWS + "instance-category", "In", "c", "m", "r"),
        _requirement(AWS + "instance-generation", "Gt", str(rng.choice((3, 4, 5)))),
    ]
    amd64 = _requirement(ARCH, "In", "amd64")
    zonal = sorted(rng.sample(ZONES, 2))
    families = sorted(rng.sample(FAMILIES, 3))
    return [
        _pool_doc("default", [*general, amd64, _requirement(CAPACITY_TYPE, "In", "spot", "on-demand")]),
        _pool_doc("spot", [*general, amd64, _requirement(CAPACITY_TYPE, "In", "spot")], weight=rng.choice((30, 50))),
        _pool_doc(
            "on-demand",
            [*general, amd64, _requirement(CAPACITY_TYPE, "In", "on-demand")],
            weight=20,
            labels={"tier": "critical"},
            taints=[_dedicated("tier", "critical")],
        ),
        _pool_doc(
            "arm64",
            [*general, _requirement(ARCH, "In", "arm64"), _requirement(CAPACITY_TYPE, "In", "spot", "on-demand")],
            weight=rng.choice((10, 40)),
        ),
        _pool_doc(
            "gpu",
            [
                _requirement(AWS + "instance-category", "In", "g"),
                _requirement(AWS + "instance-gpu-manufacturer", "In", "nvidia"),
            ],
            labels={"accelerator": "nvidia"},
            taints=[{"key": GPU, "value": "true", "effect": "NoSchedule"}],
        ),
        _pool_doc(
            "memory",
            [_requirement(AWS + "instance-category", "In", "r", "x"), amd64],
            labels={"workload": "memory"},
            taints=[_dedicated("workload", "memory")],
        ),
        _pool_doc(
            "batch",
            [*general, _requirement(AWS + "instance-cpu", "Gt", "15"), _requirement(CAPACITY_TYPE, "In", "spot")],
            labels={"dedicated": "batch"},
            taints=[_dedicated("dedicated", "batch")],
        ),
        _pool_doc("family", [_requirement(AWS + "instance-family", "In", *families)], weight=rng.choice((5, 60))),
        _pool_doc(
            "small-nodes",
            [*general, amd64, _requirement(AWS + "instance-size", "In", "large", "xlarge", "2xlarge")],
            weight=rng.choice((3, 35)),
            labels={"size": "small"},
        ),
        _pool_doc("zonal", [*general, amd64, _requirement(ZONE_LABEL, "In", *zonal)], weight=rng.choice((1, 45))),
        _pool_doc(
            "ingest",
            [*general, _requirement(ZONE_LABEL, "In", rng.choice(ZONES)), _requirement(CAPACITY_TYPE, "In", "spot")],
            labels={"dedicated": "ingest"},
            taints=[_dedicated("dedicated", "ingest")],
        ),
        _pool_doc(
            "payments",
            [
                *general,
                amd64,
                _requirement(CAPACITY_TYPE, "In", "on-demand"),
                _requirement(ZONE_LABEL, "In", *ZONES[:3]),
            ],
            labels={"team": "payments"},
            taints=[_dedicated("team", "payments")],
            limits={"cpu": str(rng.choice((400, 1000, 4000)))},
        ),
        _pool_doc(
            "bottlerocket",
            [_requirement(AWS + "instance-generation", "Gt", "6"), amd64],
            labels={"os-image": "bottlerocket"},
            node_class="bottlerocket",
        ),
    ]


def _nodeclass_doc(name: str, alias: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole-bench",
            "amiSelectorTerms": [{"alias": alias}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        },
    }


def _daemonsets() -> tuple[DaemonSet, ...]:
    everywhere = (Toleration(operator="Exists"),)
    both_arches = (NodeSelectorTerm((Requirement(ARCH, Operator.IN, ("amd64", "arm64")),)),)

    def daemonset(name: str, cpu: str, memory: str, **spec: Any) -> DaemonSet:
        pod = Pod(
            namespace="kube-system",
            name=name,
            labels={"app": name},
            requests=_requests(cpu, memory),
            owner_kind="DaemonSet",
            owner_name=name,
            **spec,
        )
        return DaemonSet("kube-system", name, pod)

    return (
        daemonset("kube-proxy", "100m", "128Mi", tolerations=everywhere),
        daemonset("log-agent", "200m", "256Mi", tolerations=everywhere),
        daemonset("node-exporter", "50m", "64Mi", tolerations=everywhere, required_node_terms=both_arches),
        daemonset(
            "nvidia-device-plugin",
            "50m",
            "64Mi",
            tolerations=(Toleration(key=GPU, operator="Exists"),),
            node_selector={"accelerator": "nvidia"},
        ),
    )


# ----------------------------------------------------------------------------------------------- Deployments


@cache
def _requests(cpu: str, memory: str, gpus: int = 0) -> Mapping[str, int]:
    raw: dict[str, str | int] = {"cpu": cpu, "memory": memory, "pods": 1}
    if gpus:
        raw[GPU] = gpus
    return parse_resources(raw)


def _size(rng: random.Random, kind: str) -> Mapping[str, int]:
    if kind == "gpu":
        return _requests("4", f"{rng.choice((12, 16, 24))}Gi", 1)
    if kind == "batch":
        cpu = rng.choice((2000, 4000, 8000))
        return _requests(f"{cpu}m", f"{cpu * rng.choice((1, 2, 4))}Mi")
    if kind == "memory":
        return _requests(f"{rng.choice((250, 500, 1000))}m", f"{rng.choice((4, 8, 16, 32))}Gi")
    cpu = rng.choice((100, 250, 500, 1000, 2000))
    return _requests(f"{cpu}m", f"{max(64, round(cpu * rng.uniform(0.5, 4.0)))}Mi")


def _zone_spread(app: str, when: str = "DoNotSchedule") -> TopologySpreadConstraint:
    return TopologySpreadConstraint(1, ZONE_LABEL, when, LabelSelector((("app", app),)))


def _affinity(*requirements: Requirement) -> tuple[NodeSelectorTerm, ...]:
    return (NodeSelectorTerm(tuple(requirements)),)


def _template(rng: random.Random, kind: str, name: str, namespace: str, anchor: str, zone: str) -> Pod:
    """The pod template of a Deployment of this kind (`anchor`: the Deployment co-located pods follow)."""
    spec: dict[str, Any] = {}
    app = ("app", name)
    if kind == "web":
        spec["topology_spread"] = (_zone_spread(name),)
    elif kind == "api-anti":
        spec["pod_anti_affinity"] = (PodAffinityTerm(LabelSelector((app,)), HOSTNAME_LABEL),)
        spec["topology_spread"] = (_zone_spread(name),)
    elif kind == "host-spread":
        spread = TopologySpreadConstraint(rng.choice((1, 2, 3)), HOSTNAME_LABEL, "DoNotSchedule", LabelSelector((app,)))
        spec["topology_spread"] = (spread,)
    elif kind == "arm":
        spec["node_selector"] = {ARCH: "arm64"}
        spec["topology_spread"] = (_zone_spread(name),) if rng.random() < 0.5 else ()
    elif kind in ("spot-only", "on-demand"):
        capacity = "spot" if kind == "spot-only" else "on-demand"
        spec["required_node_terms"] = _affinity(Requirement(CAPACITY_TYPE, Operator.IN, (capacity,)))
    elif kind in ("critical", "payments"):
        key, value = ("tier", "critical") if kind == "critical" else ("team", "payments")
        spec["node_selector"] = {key: value}
        spec["tolerations"] = (Toleration(key=key, value=value, effect="NoSchedule"),)
        spec["topology_spread"] = (_zone_spread(name),)
    elif kind == "gpu":
        spec["tolerations"] = (Toleration(key=GPU, operator="Exists"),)
    elif kind in ("memory", "batch", "ingest"):
        key, value = ("workload", "memory") if kind == "memory" else ("dedicated", kind)
        spec["node_selector"] = {key: value}
        spec["tolerations"] = (Toleration(key=key, value=value, effect="NoSchedule"),)
    elif kind == "zonal":
        spec["node_selector"] = {ZONE_LABEL: zone}
    elif kind == "prefer-spot":
        term = NodeSelectorTerm((Requirement(CAPACITY_TYPE, Operator.IN, ("spot",)),))
        spec["preferred_node_terms"] = (PreferredSchedulingTerm(50, term),)
    elif kind == "family":
        families = tuple(sorted(rng.sample(FAMILIES, 2)))
        spec["required_node_terms"] = _affinity(Requirement(AWS + "instance-family", Operator.IN, families))
    elif kind == "co-located":
        spec["pod_affinity"] = (PodAffinityTerm(LabelSelector((("app", anchor),)), ZONE_LABEL),)
    elif kind == "soft-anti":
        term = PodAffinityTerm(LabelSelector((app,)), HOSTNAME_LABEL)
        spec["preferred_pod_anti_affinity"] = (WeightedPodAffinityTerm(100, term),)
        spec["topology_spread"] = (_zone_spread(name, "ScheduleAnyway"),)
    elif kind == "small-nodes":
        spec["node_selector"] = {"size": "small"}
    elif kind == "bottlerocket":
        spec["node_selector"] = {"os-image": "bottlerocket"}
    return Pod(
        namespace=namespace,
        name="",
        labels={"app": name, "team": namespace},
        requests=_size(rng, kind),
        owner_kind="ReplicaSet",
        owner_name=name,
        **spec,
    )


def _shapes(rng: random.Random) -> tuple[Shape, ...]:
    """50 Deployments: every kind once, the rest drawn by KIND_WEIGHTS; weights log-normal."""
    kinds = list(KIND_WEIGHTS)
    kinds += rng.choices(kinds, weights=list(KIND_WEIGHTS.values()), k=SHAPES - len(kinds))
    namespaces = ("web", "data", "ml", "platform", "payments")
    shapes: list[Shape] = []
    anchor = ""
    for number, kind in enumerate(kinds):
        name = f"{kind}-{number:02d}"
        anchor = anchor or (name if kind == "web" else "")
        # Co-located pods select the anchor in their own namespace, so the anchor's namespace is shared.
        namespace = "web" if kind in ("web", "co-located") else rng.choice(namespaces)
        template = _template(rng, kind, name, namespace, anchor, rng.choice(ZONES))
        shapes.append(Shape(name, kind, template, rng.lognormvariate(0.0, 1.0), KIND_CAPS.get(kind)))
    return tuple(shapes)


def replicas(shapes: Sequence[Shape], count: int) -> list[int]:
    """`count` pods shared over the shapes by weight (largest remainder), caps kept, the excess shared again."""
    out = [0] * len(shapes)
    open_ = list(range(len(shapes)))
    left = count
    while left > 0 and open_:
        total = sum(shapes[i].weight for i in open_)
        exact = {i: left * shapes[i].weight / total for i in open_}
        share = {i: int(v) for i, v in exact.items()}
        for i in sorted(open_, key=lambda i: (share[i] - exact[i], i))[: left - sum(share.values())]:
            share[i] += 1
        capped = []
        for i in open_:
            cap = shapes[i].cap
            take = share[i] if cap is None else min(share[i], cap - out[i])
            out[i] += take
            left -= take
            if cap is not None and out[i] >= cap:
                capped.append(i)
        if not capped:
            break
        open_ = [i for i in open_ if i not in capped]
    return out


def pods(cluster: HeteroCluster, count: int, prefix: str = "") -> list[Pod]:
    """`count` replicas of the cluster's Deployments, named `<deployment>-<prefix><n>`."""
    out: list[Pod] = []
    for shape, n in zip(cluster.shapes, replicas(cluster.shapes, count), strict=True):
        out.extend(dataclasses.replace(shape.template, name=f"{shape.name}-{prefix}{i:05d}") for i in range(n))
    return out


@cache
def hetero_cluster(seed: int) -> HeteroCluster:
    """Heterogeneous cluster `seed`: its NodePools, EC2NodeClasses, DaemonSets and Deployments (see the module)."""
    rng = random.Random(seed)
    nodepools = []
    for doc in _pool_docs(rng):
        pool, errors = parse_nodepool(doc, "bench")
        if pool is None:
            raise RuntimeError(f"bench NodePool {doc['metadata']['name']} does not parse: {errors}")
        nodepools.append(pool)
    nodeclasses = []
    for name, alias in (("default", "al2023@latest"), ("bottlerocket", "bottlerocket@latest")):
        nodeclass, errors = parse_ec2nodeclass(_nodeclass_doc(name, alias), "bench")
        if nodeclass is None:
            raise RuntimeError(f"bench EC2NodeClass {name} does not parse: {errors}")
        nodeclasses.append(nodeclass)
    return HeteroCluster(
        f"hetero-{seed}",
        tuple(nodepools),
        tuple(nodeclasses),
        tuple(SnapshotSource().instance_types()),
        _daemonsets(),
        _shapes(rng),
    )


# ----------------------------------------------------------------------------------------------- audit


def hetero_violations(results: Results, pending: Sequence[Pod]) -> list[str]:
    """Per NodeClaim: its pods tolerate its taints, their node selectors and required node affinity are met by
    its requirements (each claim's labels are a subset of what they allow), and a Deployment with hostname
    anti-affinity has at most one pod on it. One message per violation."""
    by_key = {p.key: p for p in pending}
    problems: list[str] = []
    for claim in results.nodeclaims:
        node = Requirements.of(claim.requirements).intersect(Requirements.from_labels(claim.labels))
        apps: dict[str, int] = {}
        for key in claim.pods:
            pod = by_key[key]
            if untolerated(pod.tolerations, claim.taints) is not None:
                problems.append(f"{claim.name}: {key} does not tolerate its taints {claim.taints}")
            if not any(_implied(node, option) for option in _node_options(pod)):
                problems.append(f"{claim.name}: {key}'s node selector or affinity is not met by {claim.requirements}")
            if pod.pod_anti_affinity:
                apps[pod.labels["app"]] = apps.get(pod.labels["app"], 0) + 1
        problems.extend(f"{claim.name}: {n} pods of {app} (hostname anti-affinity)" for app, n in apps.items() if n > 1)
    return problems


def _implied(node: Requirements, wanted: Requirements) -> bool:
    """Whether every node these requirements allow meets `wanted` (for In, Gt and Lt: the allowed values do)."""
    for key, want in wanted.by_key.items():
        have = node.get(key)
        if have.allowed is None or not all(want.matches(v) for v in have.allowed):
            return False
    return True


def audit(results: Results, pending: Sequence[Pod], cluster: HeteroCluster) -> list[str]:
    return audit_fleet(results, pending, cluster.instance_types, cluster.nodeclass_of) + hetero_violations(
        results, pending
    )


# ----------------------------------------------------------------------------------------------- figures


def measure(seed: int, count: int, max_runs: int = 3, budget_seconds: float = 30.0) -> tuple[MixFigure, list[str]]:
    """Schedule `count` pods of heterogeneous cluster `seed`; the figure and the invariant violations found."""
    cluster = hetero_cluster(seed)
    pending = pods(cluster, count)
    kwargs = cluster.solve_kwargs()
    return measure_solve(
        lambda templates: solve(pending, templates=templates, **kwargs),
        count,
        lambda results: audit(results, pending, cluster),
        max_runs,
        budget_seconds,
        cluster=cluster.name,
    )


# ----------------------------------------------------------------------------------------------- existing


def existing_nodes(cluster: HeteroCluster, nodes: int = EXISTING_NODES, seed: int = 5) -> list[Node]:
    """`nodes` nodes of the cluster as it runs: a seeded sample of the NodeClaims solve() plans for its
    Deployments, each a node of its cheapest offering with the labels a node of it carries, its NodePool's
    taints, its pods and the DaemonSet pods that run there bound to it."""
    count = 2_000
    planned: tuple[PlannedNodeClaim, ...] = ()
    while len(planned) < nodes:
        count *= 2
        everything = pods(cluster, count)
        planned = solve(everything, **cluster.solve_kwargs()).nodeclaims
    by_key = {p.key: p for p in everything}
    types = {it.name: it for it in cluster.instance_types}
    pools = {p.name: p for p in cluster.nodepools}
    chosen = sorted(random.Random(seed).sample(range(len(planned)), nodes))
    out = []
    for number, index in enumerate(chosen):
        claim = planned[index]
        option = claim.cheapest
        it = types[option.instance_type]
        name = f"ip-10-0-{number // 250}-{number % 250}.ec2.internal"
        labels = {
            **it.labels,
            **claim.labels,
            ZONE_LABEL: option.zone,
            CAPACITY_TYPE: option.capacity_type,
            HOSTNAME_LABEL: name,
        }
        taints: tuple[Taint, ...] = pools[claim.nodepool].taints
        daemon = [
            dataclasses.replace(ds.pod, name=f"{ds.name}-{number:04d}", node_name=name)
            for ds in cluster.daemonsets
            if _daemonset_runs(ds, labels, taints)
        ]
        bound = [dataclasses.replace(by_key[k], node_name=name) for k in claim.pods]
        out.append(
            Node(
                name=name,
                labels=labels,
                taints=taints,
                allocatable=allocatable_for(it, cluster.nodeclass_of(claim)),
                pods=(*daemon, *bound),
                nodeclaim_name="",
            )
        )
    return out


def _daemonset_runs(ds: DaemonSet, labels: Mapping[str, str], taints: Sequence[Taint]) -> bool:
    """Whether the DaemonSet's pod runs on a node with these labels and taints."""
    pod = ds.pod
    if untolerated(pod.tolerations, taints) is not None:
        return False
    return any(option.matches_labels(labels) for option in _node_options(pod))


def _node_options(pod: Pod) -> list[Requirements]:
    """The pod's nodeSelector with each ORed required node affinity term."""
    selected = Requirements.from_labels(pod.node_selector)
    return [selected.intersect(Requirements.of(t.requirements)) for t in pod.required_node_terms] or [selected]


@dataclass(frozen=True, slots=True)
class ExistingFigure:
    cluster: str
    nodes: int
    bound_pods: int
    pending: int
    ms: float
    cpu_ms: float
    cold_ms: float
    runs: int
    on_existing: int
    nodeclaims: int
    unschedulable: int
    violations: int

    def line(self) -> str:
        return (
            f"existing cluster={self.cluster} nodes={self.nodes} bound_pods={self.bound_pods} pending={self.pending} "
            f"ms={self.ms:.1f} cpu_ms={self.cpu_ms:.1f} cold_ms={self.cold_ms:.1f} runs={self.runs} "
            f"on_existing={self.on_existing} "
            f"nodeclaims={self.nodeclaims} unschedulable={self.unschedulable} violations={self.violations}"
        )


@cache
def _existing_inputs(seed: int) -> tuple[tuple[Node, ...], tuple[Pod, ...]]:
    cluster = hetero_cluster(seed)
    return tuple(existing_nodes(cluster)), tuple(pods(cluster, EXISTING_PENDING, prefix="new-"))


def measure_existing(seed: int, runs: int = 11) -> tuple[ExistingFigure, list[str]]:
    """100 pending replicas against 1,000 existing nodes of heterogeneous cluster `seed` (see the module)."""
    cluster = hetero_cluster(seed)
    nodes, pending = _existing_inputs(seed)
    kwargs = {**cluster.solve_kwargs(), "nodes": nodes}
    cold: list[dict[str, object]] = []
    if "templates" in inspect.signature(solve).parameters:
        # A warm provisioner container keeps its prepared NodePools (and what it summed of each node's pods) from
        # batch to batch. (Checked by name so the same bench also times a solver from before the cache, side by
        # side: `tests.bench.compare`.) `cold`: a batch with nothing kept, as a new container's first one.
        from nodewright.scheduling import TemplateCache

        kwargs["templates"] = TemplateCache()
        cold = [kwargs | {"templates": TemplateCache()} for _ in range(COLD_RUNS)]
    results = solve(pending, **kwargs)  # untimed: a warm container has its process-wide caches
    cold_times, _ = timed(lambda: solve(pending, **cold.pop()), len(cold), budget_seconds=60.0) if cold else ([], [])
    # Each batch reads its nodes afresh, as the loader builds them from the parsed objects it keeps: new Node
    # objects with new pod tuples around the same pods, so nothing kept by a node's or a tuple's identity is reused.
    batches = iter([tuple(dataclasses.replace(n, pods=tuple(n.pods)) for n in nodes) for _ in range(runs)])
    times, cpu_times = timed(lambda: solve(pending, **{**kwargs, "nodes": next(batches)}), runs, budget_seconds=60.0)
    problems = audit(results, pending, cluster)
    figure = ExistingFigure(
        cluster.name,
        len(nodes),
        sum(len(n.pods) for n in nodes),
        len(pending),
        1000 * statistics.median(times),
        1000 * statistics.median(cpu_times),
        1000 * statistics.median(cold_times) if cold_times else float("nan"),
        len(times),
        sum(len(v) for v in results.existing.values()),
        len(results.nodeclaims),
        len(results.unschedulable),
        len(problems),
    )
    return figure, problems


def main(argv: Sequence[str] | None = None) -> int:
    """Print the `hetero` figures (per cluster seed and size) and the `existing` figure (per seed); the exit
    status is 1 when an invariant was violated, never because a figure is slow."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.hetero", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(CLUSTER_SEEDS))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--runs", type=int, default=3, help="timed runs per figure (median printed)")
    parser.add_argument("--only", choices=("hetero", "existing"), default="")
    args = parser.parse_args(argv)
    violations = 0
    for seed in args.seeds:
        figures: list[tuple[MixFigure | ExistingFigure, list[str]]] = []
        if args.only in ("", "hetero"):
            figures.extend(measure(seed, size, args.runs) for size in args.sizes)
        if args.only in ("", "existing"):
            figures.append(measure_existing(seed, max(args.runs, 5)))
        for figure, problems in figures:
            print(figure.line(), flush=True)
            violations += len(problems)
            for problem in problems[:5]:
                print(f"# violation: {problem}", flush=True)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
