"""Seeded random clusters for `tests.bench.random_clusters`: NodePools, DaemonSets, Deployments and existing nodes.

`generate(seed, count)` is a pure function of its arguments: the seed draws the cluster's structure (NodePools,
DaemonSets, Deployments, the share of existing nodes), `count` how many pending pods the Deployments have (and so the
NodePool limits, which leave room for them, and how many nodes already run). Nothing here is timed.

Schedulable by construction: each Deployment is drawn for one NodePool (its target) and gets only constraints that
pool can meet: the pool's taints tolerated, node selectors and node affinity within the pool's requirements, a size
that fits one of the pool's instance types in the catalog after the DaemonSets that may run there (`_fits`, which
redraws the constraints and then halves the size until it does). Untargeted Deployments (no node selector) are
sized for the first NodePool, which is untainted and has no limits. Limits are only on tainted pools and are drawn
at least three times the cpu of what may land there plus room for one-pod-per-node Deployments and existing nodes.
Required zone pod affinity follows an earlier Deployment of the same target with the same node constraints.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.catalog import is_accelerated, is_bare_metal, offering_matches, type_matches
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
from nodewright.model.taints import Toleration, untolerated
from nodewright.scheduling.results import PlannedNodeClaim

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f")
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
ARCH = "kubernetes.io/arch"
AWS = "karpenter.k8s.aws/"
GPU = "nvidia.com/gpu"
NAMESPACES = ("web", "api", "data", "ml", "platform", "payments")
# (cpu, memory) of real services' requests, from a sidecar-sized 100m/128Mi to 4 CPU/16Gi.
SERVICE_SHAPES = (
    ("100m", "128Mi"),
    ("100m", "256Mi"),
    ("200m", "256Mi"),
    ("250m", "512Mi"),
    ("500m", "512Mi"),
    ("500m", "1Gi"),
    ("750m", "1536Mi"),
    ("1", "1Gi"),
    ("1", "2Gi"),
    ("1", "4Gi"),
    ("2", "2Gi"),
    ("2", "4Gi"),
    ("2", "8Gi"),
    ("4", "8Gi"),
    ("4", "16Gi"),
)
CACHE_SHAPES = (("500m", "4Gi"), ("1", "8Gi"), ("1", "16Gi"), ("2", "16Gi"), ("2", "32Gi"), ("4", "30Gi"))
BATCH_SHAPES = (("1", "2Gi"), ("2", "4Gi"), ("4", "8Gi"), ("4", "16Gi"), ("8", "16Gi"), ("8", "32Gi"), ("16", "64Gi"))
GPU_SHAPES = (("4", "16Gi", 1), ("8", "30Gi", 1), ("8", "60Gi", 2), ("16", "120Gi", 4))
# NodePool kinds after the first (always `general`, untainted, no limits), with the weights they are drawn by.
POOL_KINDS = {"general": 5, "spot": 3, "arm64": 2, "critical": 2, "memory": 2, "batch": 2, "gpu": 2, "team": 2}
TAINTED = ("critical", "memory", "batch", "gpu", "team")
WORKLOAD_KINDS = {"service": 70, "cache": 8, "batch": 10, "gpu": 4}
CAPS = {"gpu": (2, 24), "anti": (3, 60)}  # replicas drawn in this range, whatever the size


def _requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@cache
def _requests(cpu: str, memory: str, gpus: int = 0) -> Mapping[str, int]:
    raw: dict[str, str | int] = {"cpu": cpu, "memory": memory, "pods": 1}
    if gpus:
        raw[GPU] = gpus
    return parse_resources(raw)


@cache
def _catalog() -> tuple[InstanceType, ...]:
    return tuple(SnapshotSource().instance_types())


@cache
def _nodeclasses() -> tuple[EC2NodeClass, ...]:
    out = []
    for name, alias in (("default", "al2023@latest"), ("bottlerocket", "bottlerocket@latest")):
        doc = {
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
        nodeclass, errors = parse_ec2nodeclass(doc, "bench")
        if nodeclass is None:
            raise RuntimeError(f"bench EC2NodeClass {name} does not parse: {errors}")
        out.append(nodeclass)
    return tuple(out)


# ----------------------------------------------------------------------------------------------- NodePools


@dataclass(slots=True)
class PoolDraft:
    """A NodePool before its limit is known (the limit depends on what lands there)."""

    name: str
    kind: str
    requirements: list[dict[str, Any]]
    labels: dict[str, str]
    taints: list[dict[str, str]]
    weight: int
    node_class: str
    limit_floor: int  # drawn cpu limit, raised to leave room (0: no limit)

    def doc(self, limit: int = 0) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "template": {
                "metadata": {"labels": dict(self.labels)},
                "spec": {
                    "requirements": self.requirements,
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": self.node_class},
                    "taints": [dict(t) for t in self.taints],
                },
            }
        }
        if self.weight:
            spec["weight"] = self.weight
        if limit:
            spec["limits"] = {"cpu": str(limit)}
        return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": self.name}, "spec": spec}

    def parsed(self, limit: int = 0) -> NodePool:
        pool, errors = parse_nodepool(self.doc(limit), "bench")
        if pool is None:
            raise RuntimeError(f"bench NodePool {self.name} does not parse: {errors}")
        return pool


def _draw_pool(rng: random.Random, number: int, kind: str) -> PoolDraft:
    name = f"{kind}-{number}"
    req: list[dict[str, Any]] = []
    labels: dict[str, str] = {}
    taints: list[dict[str, str]] = []
    if kind == "gpu":
        categories = ["g", "p"] if rng.random() < 0.3 else ["g"]
        req.append(_requirement(AWS + "instance-category", "In", *categories))
        req.append(_requirement(AWS + "instance-gpu-manufacturer", "In", "nvidia"))
        req.append(_requirement(ARCH, "In", "amd64"))
        labels["accelerator"] = "nvidia"
        taints.append({"key": GPU, "value": "true", "effect": "NoSchedule"})
    elif kind == "memory":
        req.append(_requirement(AWS + "instance-category", "In", *rng.choice((["r"], ["r", "x"], ["r", "m"]))))
        labels["workload"] = "memory"
        taints.append({"key": "workload", "value": "memory", "effect": "NoSchedule"})
    else:
        categories = sorted(rng.sample(("c", "m", "r"), rng.randint(1, 3)))
        if kind in ("batch", "spot") and "c" not in categories:
            categories = ["c", *categories]
        req.append(_requirement(AWS + "instance-category", "In", *categories))
    if kind != "gpu":
        generation = rng.choice((None, 2, 3, 4, 5, 5, 6))
        if generation is not None:
            req.append(_requirement(AWS + "instance-generation", "Gt", str(generation)))
        arch = "arm64" if kind == "arm64" else rng.choice(("amd64", "amd64", "both", "unset"))
        if arch == "both":
            req.append(_requirement(ARCH, "In", "amd64", "arm64"))
        elif arch != "unset":
            req.append(_requirement(ARCH, "In", arch))
    capacity = {
        "spot": ["spot"],
        "batch": ["spot"],
        "critical": ["on-demand"],
    }.get(kind) or rng.choice((["spot", "on-demand"], ["spot", "on-demand"], ["on-demand"], ["spot"], []))
    if capacity:
        req.append(_requirement(CAPACITY_TYPE, "In", *capacity))
    if rng.random() < 0.25:
        req.append(_requirement(ZONE_LABEL, "In", *sorted(rng.sample(ZONES, rng.randint(1, 3)))))
    if kind not in ("gpu",) and rng.random() < 0.2:
        req.append(_requirement(AWS + "instance-size", "NotIn", "nano", "micro", "small", "metal"))
    if kind == "batch":
        req.append(_requirement(AWS + "instance-cpu", "Gt", str(rng.choice((7, 15, 31)))))
        labels["dedicated"] = "batch"
        taints.append({"key": "dedicated", "value": "batch", "effect": "NoSchedule"})
    elif kind not in ("gpu",) and rng.random() < 0.15:
        req.append(_requirement(AWS + "instance-cpu", "Lt", str(rng.choice((17, 33, 65)))))
    if kind == "critical":
        labels["tier"] = "critical"
        taints.append({"key": "tier", "value": "critical", "effect": "NoSchedule"})
    elif kind == "team":
        team = rng.choice(NAMESPACES)
        labels["team"] = team
        taints.append({"key": "team", "value": team, "effect": rng.choice(("NoSchedule", "NoExecute"))})
    limit = 0
    if kind in TAINTED and rng.random() < (0.6 if kind == "team" else 0.25):
        limit = rng.choice((100, 400, 1000))
    weight = 0 if number == 0 or rng.random() < 0.5 else rng.randint(1, 100)
    node_class = "bottlerocket" if kind != "gpu" and rng.random() < 0.15 else "default"
    return PoolDraft(name, kind, req, labels, taints, weight, node_class, limit)


def _pool_families(pool: NodePool) -> list[str]:
    """The instance families of the catalog's types the pool may launch (non-exotic ones when there are some)."""
    matching = _pool_types(pool)
    return sorted({it.family for it in matching})


def _pool_types(pool: NodePool) -> tuple[InstanceType, ...]:
    requirements = pool.node_requirements()
    out = [
        it
        for it in _catalog()
        if type_matches(it, requirements)
        and any(o.available and offering_matches(o, requirements) for o in it.offerings)
    ]
    plain = [it for it in out if not (is_bare_metal(it) or is_accelerated(it))]
    return tuple(plain or out)


# ----------------------------------------------------------------------------------------------- DaemonSets


def _daemonsets(rng: random.Random, pools: Sequence[PoolDraft]) -> tuple[DaemonSet, ...]:
    everywhere = (Toleration(operator="Exists"),)

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

    out = [daemonset("kube-proxy", "100m", "128Mi", tolerations=everywhere)]
    if rng.random() < 0.8:
        out.append(daemonset("aws-node", "25m", "64Mi", tolerations=everywhere))
    if rng.random() < 0.6:
        # Only where no taint keeps it out: a log agent that does not tolerate the dedicated pools.
        out.append(daemonset("log-agent", rng.choice(("100m", "200m")), rng.choice(("200Mi", "512Mi"))))
    if rng.random() < 0.4:
        arches = (NodeSelectorTerm((Requirement(ARCH, Operator.IN, ("amd64", "arm64")),)),)
        out.append(daemonset("node-exporter", "50m", "64Mi", tolerations=everywhere, required_node_terms=arches))
    if any(p.kind == "gpu" for p in pools):
        gpu = (Toleration(key=GPU, operator="Exists"),)
        out.append(
            daemonset("nvidia-device-plugin", "50m", "100Mi", tolerations=gpu, node_selector={"accelerator": "nvidia"})
        )
    team = [p for p in pools if p.kind == "team"]
    if team and rng.random() < 0.5:
        pool = rng.choice(team)
        tolerate = (Toleration(key="team", operator="Exists"),)
        out.append(
            daemonset("team-agent", "250m", "256Mi", tolerations=tolerate, node_selector={NODEPOOL_LABEL: pool.name})
        )
    return tuple(out)


def _daemon_overhead(daemonsets: Sequence[DaemonSet], pool: NodePool) -> dict[str, int]:
    """The requests of every DaemonSet that may run on a node of the pool (an over-estimate: the fit check is safe)."""
    requirements = pool.node_requirements()
    total: dict[str, int] = {}
    for ds in daemonsets:
        if untolerated(ds.pod.tolerations, pool.taints) is not None:
            continue
        if all(option.conflict(requirements) is not None for option in node_options(ds.pod)):
            continue
        for key, value in ds.pod.requests.items():
            total[key] = total.get(key, 0) + value
    return total


def node_options(pod: Pod) -> list[Requirements]:
    """The pod's nodeSelector with each ORed required node affinity term."""
    selected = Requirements.from_labels(pod.node_selector)
    return [selected.intersect(Requirements.of(t.requirements)) for t in pod.required_node_terms] or [selected]


# ----------------------------------------------------------------------------------------------- Deployments


@dataclass(frozen=True, slots=True)
class Workload:
    """One Deployment: its pod template (unnamed), the pool it was drawn for, its weight, a replica range."""

    name: str
    kind: str
    pool: str
    template: Pod
    weight: float
    cap: int | None
    features: tuple[str, ...]


def _fits(template: Pod, pool: NodePool, overhead: Mapping[str, int], nodeclass: EC2NodeClass) -> bool:
    """Whether one pod of the template fits a node the pool may launch with its node constraints (non-exotic types
    for pods without GPUs, as the solver prefers), after `overhead`."""
    if untolerated(template.tolerations, pool.taints) is not None:
        return False
    requirements = pool.node_requirements()
    gpus = template.requests.get(GPU, 0)
    for option in node_options(template):
        if option.conflict(requirements) is not None:
            continue
        wanted = requirements.intersect(option)
        for it in _catalog():
            if (not is_accelerated(it)) if gpus else (is_bare_metal(it) or is_accelerated(it)):
                continue
            if not type_matches(it, wanted):
                continue
            if not any(o.available and offering_matches(o, wanted) for o in it.offerings):
                continue
            alloc = allocatable_for(it, nodeclass)
            if all(alloc.get(k, 0) >= v + overhead.get(k, 0) for k, v in template.requests.items()):
                return True
    return False


def _zones_for_spread(template: Pod, pool: NodePool, overhead: Mapping[str, int], nodeclass: EC2NodeClass) -> Pod:
    """A template with a DoNotSchedule zone spread, given required node affinity to the zones its pool can launch it
    in, as users write to work around Karpenter's spread over every zone any NodePool offers
    (kubernetes-sigs/karpenter#2227: a pod pinned to a pool with fewer zones is otherwise left pending, and nodewright
    does as Karpenter does)."""
    if not any(
        s.topology_key == ZONE_LABEL and s.when_unsatisfiable == "DoNotSchedule" for s in template.topology_spread
    ):
        return template
    if any(ZONE_LABEL in option.by_key for option in node_options(template)):
        return template
    zones = tuple(
        z
        for z in ZONES
        if _fits(
            dataclasses.replace(template, node_selector={**template.node_selector, ZONE_LABEL: z}),
            pool,
            overhead,
            nodeclass,
        )
    )
    zone = Requirement(ZONE_LABEL, Operator.IN, zones)
    terms = template.required_node_terms or (NodeSelectorTerm(()),)
    return dataclasses.replace(
        template, required_node_terms=tuple(NodeSelectorTerm((*t.requirements, zone)) for t in terms)
    )


def _shape(rng: random.Random, kind: str) -> Mapping[str, int]:
    if kind == "gpu":
        cpu, memory, gpus = rng.choice(GPU_SHAPES)
        return _requests(cpu, memory, gpus)
    shapes = {"cache": CACHE_SHAPES, "batch": BATCH_SHAPES}.get(kind, SERVICE_SHAPES)
    # Small services are the most common: the first shapes are drawn more often.
    cpu, memory = shapes[min(int(rng.expovariate(1 / (len(shapes) / 3))), len(shapes) - 1)]
    return _requests(cpu, memory)


def _halved(requests: Mapping[str, int]) -> Mapping[str, int]:
    return {k: (v if k in ("pods", GPU) else max(1, v // 2)) for k, v in requests.items()}


def _pick_pool(rng: random.Random, kind: str, pools: Sequence[PoolDraft]) -> PoolDraft:
    wanted = {"gpu": ("gpu",), "batch": ("batch",), "cache": ("memory",)}.get(kind, ())
    matching = [p for p in pools if p.kind in wanted]
    if matching and (kind == "gpu" or rng.random() < 0.85):
        return rng.choice(matching)
    return rng.choice([p for p in pools if p.kind != "gpu"])


def _node_constraints(
    rng: random.Random, draft: PoolDraft, pool: NodePool, pools: Sequence[PoolDraft], features: list[str]
) -> dict[str, Any]:
    """Node selectors and node affinity within what the pool allows."""
    spec: dict[str, Any] = {}
    selector: dict[str, str] = {}
    requirements = pool.node_requirements()
    tolerations = tuple(Toleration(key=t["key"], value=t["value"], effect=t["effect"]) for t in draft.taints)
    if tolerations:
        spec["tolerations"] = tolerations
        features.append("toleration")
    unique = [k for k, v in draft.labels.items() if sum(p.labels.get(k) == v for p in pools) == 1]
    if unique and rng.random() < 0.6:
        key = rng.choice(sorted(unique))
        selector[key] = draft.labels[key]
    elif draft.taints or draft.name != "general-0" or rng.random() < 0.4:
        selector[NODEPOOL_LABEL] = draft.name
    arches = requirements.get(ARCH).allowed
    if (arches is None or len(arches) > 1) and rng.random() < 0.2:
        selector[ARCH] = rng.choice(sorted(arches or ("amd64", "arm64")))
    if rng.random() < 0.1:
        zones = requirements.get(ZONE_LABEL).allowed or ZONES
        selector[ZONE_LABEL] = rng.choice(sorted(zones))
    if selector:
        spec["node_selector"] = selector
        features.append("node_selector")
    terms: list[Requirement] = []
    capacity = requirements.get(CAPACITY_TYPE).allowed
    if (capacity is None or len(capacity) > 1) and rng.random() < 0.2:
        terms.append(Requirement(CAPACITY_TYPE, Operator.IN, (rng.choice(("spot", "on-demand")),)))
    if rng.random() < 0.1:
        families = _pool_families(pool)
        if len(families) > 1:
            terms.append(Requirement(AWS + "instance-family", Operator.IN, tuple(sorted(rng.sample(families, 2)))))
    if rng.random() < 0.1:
        terms.append(Requirement(AWS + "instance-generation", Operator.GT, (str(rng.choice((4, 5))),)))
    if terms:
        spec["required_node_terms"] = (NodeSelectorTerm(tuple(terms)),)
        features.append("node_affinity")
    if rng.random() < 0.15:
        term = NodeSelectorTerm((Requirement(CAPACITY_TYPE, Operator.IN, ("spot",)),))
        spec["preferred_node_terms"] = (PreferredSchedulingTerm(rng.choice((10, 50, 100)), term),)
        features.append("preferred_node_affinity")
    return spec


def _pod_constraints(
    rng: random.Random, name: str, kind: str, anchor: Workload | None, features: list[str]
) -> tuple[dict[str, Any], int | None]:
    """Topology spreads and pod (anti-)affinity; the replica cap they need (None: none)."""
    spec: dict[str, Any] = {}
    cap = None
    own = LabelSelector((("app", name),))
    spreads = []
    draw = rng.random()
    if draw < 0.25:
        spreads.append(TopologySpreadConstraint(1, ZONE_LABEL, "DoNotSchedule", own))
        features.append("zone_spread")
    elif draw < 0.35:
        spreads.append(TopologySpreadConstraint(1, ZONE_LABEL, "ScheduleAnyway", own))
        features.append("zone_spread_soft")
    if rng.random() < 0.08:
        spreads.append(TopologySpreadConstraint(rng.choice((1, 2, 3)), HOSTNAME_LABEL, "DoNotSchedule", own))
        features.append("hostname_spread")
    if spreads:
        spec["topology_spread"] = tuple(spreads)
    draw = rng.random()
    if kind == "service" and draw < 0.05:
        spec["pod_anti_affinity"] = (PodAffinityTerm(own, HOSTNAME_LABEL),)
        cap = rng.randint(*CAPS["anti"])
        features.append("anti_affinity")
    elif draw < 0.2:
        term = PodAffinityTerm(own, rng.choice((HOSTNAME_LABEL, HOSTNAME_LABEL, ZONE_LABEL)))
        spec["preferred_pod_anti_affinity"] = (WeightedPodAffinityTerm(rng.choice((50, 100)), term),)
        features.append("preferred_anti_affinity")
    if anchor is not None:
        selector = LabelSelector((("app", anchor.name),))
        # Required zone affinity only to a Deployment whose own zone spread pins each of its nodes to one zone: with
        # a NodeClaim that may launch in several zones the domain is unknown in the batch (as in Karpenter). Not for
        # a Deployment with a zone spread of its own: the spread counts every zone its nodes may use, the affinity
        # allows only the anchor's, so past one pod a zone the spread needs is one the affinity refuses.
        if "zone_spread" in anchor.features and rng.random() < 0.5 and "zone_spread" not in features:
            spec["pod_affinity"] = (PodAffinityTerm(selector, ZONE_LABEL, namespaces=(anchor.template.namespace,)),)
            features.append("zone_affinity")
        else:
            term = PodAffinityTerm(selector, HOSTNAME_LABEL, namespaces=(anchor.template.namespace,))
            spec["preferred_pod_affinity"] = (WeightedPodAffinityTerm(rng.choice((20, 80)), term),)
            features.append("preferred_affinity")
    return spec, cap


def _workload(
    rng: random.Random,
    number: int,
    pools: Sequence[PoolDraft],
    parsed: Mapping[str, NodePool],
    daemonsets: Sequence[DaemonSet],
    earlier: Sequence[Workload],
) -> Workload:
    kinds = [k for k in WORKLOAD_KINDS if k != "gpu" or any(p.kind == "gpu" for p in pools)]
    kind = rng.choices(kinds, weights=[WORKLOAD_KINDS[k] for k in kinds])[0]
    draft = _pick_pool(rng, kind, pools)
    pool = parsed[draft.name]
    nodeclass = next(c for c in _nodeclasses() if c.name == draft.node_class)
    overhead = _daemon_overhead(daemonsets, pool)
    name = f"{kind}-{number:03d}"
    namespace = rng.choice(NAMESPACES)
    # A follower copies an earlier Deployment's target and node constraints, so wherever that one runs it may too.
    candidates = [w for w in earlier if w.pool == draft.name and w.kind == kind and "zone_affinity" not in w.features]
    anchor = rng.choice(candidates) if candidates and rng.random() < 0.1 else None
    requests = _shape(rng, kind)
    for attempt in range(12):
        features: list[str] = []
        if attempt == 6:
            anchor = None
        if anchor is not None:
            node_spec = {
                "tolerations": anchor.template.tolerations,
                "node_selector": anchor.template.node_selector,
                "required_node_terms": anchor.template.required_node_terms,
            }
            features += [f for f in anchor.features if f in ("toleration", "node_selector", "node_affinity")]
        elif attempt < 6:
            node_spec = _node_constraints(rng, draft, pool, pools, features)
        else:  # the drawn constraints never fit: only what targets the pool
            tolerations = tuple(Toleration(key=t["key"], value=t["value"], effect=t["effect"]) for t in draft.taints)
            node_spec = {"tolerations": tolerations, "node_selector": {NODEPOOL_LABEL: draft.name}}
        if kind == "gpu":
            node_spec["tolerations"] = (*node_spec.get("tolerations", ()), Toleration(key=GPU, operator="Exists"))
        pod_spec, cap = _pod_constraints(rng, name, kind, anchor, features)
        if kind == "gpu":
            cap = rng.randint(*CAPS["gpu"])
            features.append("gpu")
        template = Pod(
            namespace=namespace,
            name="",
            labels={"app": name, "team": namespace},
            requests=requests,
            owner_kind="ReplicaSet" if kind != "batch" else "Job",
            owner_name=name,
            **node_spec,
            **pod_spec,
        )
        if draft.kind == "general" and draft.name == "general-0" and not template.node_selector:
            features.append("untargeted")
        if _fits(template, pool, overhead, nodeclass):
            template = _zones_for_spread(template, pool, overhead, nodeclass)
            return Workload(name, kind, draft.name, template, rng.lognormvariate(0.0, 1.2), cap, tuple(features))
        if attempt >= 6:
            requests = _halved(requests)
    raise RuntimeError(f"{name}: no size fits NodePool {draft.name}")


def replicas(workloads: Sequence[Workload], count: int, rng: random.Random) -> list[int]:
    """`count` pods over the workloads: capped ones get their drawn count (at most a third of `count` in all),
    every other at least one when there are enough pods, the rest by weight (largest remainder)."""
    out = [0] * len(workloads)
    left = count
    capped = [i for i, w in enumerate(workloads) if w.cap is not None]
    for i in capped:
        take = min(workloads[i].cap or 0, max(1, count // (3 * len(capped))), left)
        out[i], left = take, left - take
    free = [i for i, w in enumerate(workloads) if w.cap is None] or capped
    if left >= len(free):
        for i in free:
            out[i] += 1
        left -= len(free)
    total = sum(workloads[i].weight for i in free)
    exact = {i: left * workloads[i].weight / total for i in free}
    shares = {i: int(v) for i, v in exact.items()}
    for i in sorted(free, key=lambda i: (shares[i] - exact[i], i))[: left - sum(shares.values())]:
        shares[i] += 1
    for i in free:
        out[i] += shares[i]
    return out


# ----------------------------------------------------------------------------------------------- the cluster


@dataclass(frozen=True, slots=True)
class RandomCluster:
    """The inputs `solve()` gets for one seed and size, and what they were drawn from."""

    name: str
    seed: int
    nodepools: tuple[NodePool, ...]
    nodeclasses: tuple[EC2NodeClass, ...]
    instance_types: tuple[InstanceType, ...]
    daemonsets: tuple[DaemonSet, ...]
    workloads: tuple[Workload, ...]
    replicas: tuple[int, ...]
    nodes: tuple[Node, ...]
    pending: tuple[Pod, ...]

    def solve_kwargs(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "nodepools": self.nodepools,
            "nodeclasses": self.nodeclasses,
            "instance_types": self.instance_types,
            "daemonsets": self.daemonsets,
        }

    def nodeclass_of(self, claim: PlannedNodeClaim) -> EC2NodeClass:
        return next(c for c in self.nodeclasses if c.name == claim.node_class)

    def features(self) -> str:
        """What the cluster has: pools by kind, and per feature the Deployments and pending pods that have it."""
        kinds = Counter(p.name.rsplit("-", 1)[0] for p in self.nodepools)
        pools = ",".join(f"{k}:{n}" for k, n in sorted(kinds.items()))
        deployments: Counter[str] = Counter()
        pods: Counter[str] = Counter()
        for workload, n in zip(self.workloads, self.replicas, strict=True):
            for feature in workload.features:
                deployments[feature] += 1
                pods[feature] += n
        limited = sum(1 for p in self.nodepools if p.limits)
        listed = " ".join(f"{f}={deployments[f]}/{pods[f]}" for f in sorted(deployments))
        return (
            f"pools={pools} limited={limited} daemonsets={len(self.daemonsets)} workloads={len(self.workloads)} "
            f"existing_nodes={len(self.nodes)} bound_pods={sum(len(n.pods) for n in self.nodes)} "
            f"features(deployments/pods): {listed}"
        )


def _existing_nodes(
    rng: random.Random,
    count: int,
    pools: Sequence[NodePool],
    workloads: Sequence[Workload],
    daemonsets: Sequence[DaemonSet],
) -> list[Node]:
    """Nodes that already run: each of a type and offering its pool may launch, with the pool's labels and taints,
    the DaemonSet pods that run there and pods of the Deployments targeting the pool (not those with hostname
    anti-affinity or GPUs) up to a drawn share of its room."""
    share = rng.choice((0.0, 0.0, 0.05, 0.2, 0.5))
    wanted = int(count * share / 30)
    hosted = [p for p in pools if p.name.split("-")[0] not in ("gpu",)]
    nodeclasses = {c.name: c for c in _nodeclasses()}
    out: list[Node] = []
    for number in range(wanted):
        pool = rng.choice(hosted)
        requirements = pool.node_requirements()
        types = [it for it in _pool_types(pool) if 2 <= it.vcpu <= 64]
        if not types:
            continue
        it = rng.choice(types)
        offerings = [o for o in it.offerings if o.available and o.zone in ZONES and offering_matches(o, requirements)]
        if not offerings:
            continue
        offering = rng.choice(offerings)
        name = f"ip-10-1-{number // 250}-{number % 250}.ec2.internal"
        labels = {
            **it.labels,
            **pool.labels,
            NODEPOOL_LABEL: pool.name,
            ZONE_LABEL: offering.zone,
            CAPACITY_TYPE: offering.capacity_type,
            HOSTNAME_LABEL: name,
        }
        alloc = dict(allocatable_for(it, nodeclasses[pool.node_class_ref.name]))
        bound: list[Pod] = []
        for ds in daemonsets:
            if untolerated(ds.pod.tolerations, pool.taints) is None and any(
                o.matches_labels(labels) for o in node_options(ds.pod)
            ):
                bound.append(dataclasses.replace(ds.pod, name=f"{ds.name}-{number:04d}", node_name=name))
        free = {k: v - sum(p.requests.get(k, 0) for p in bound) for k, v in alloc.items()}
        mine = [
            w
            for w in workloads
            if w.pool == pool.name
            and not w.template.pod_anti_affinity
            and not w.template.pod_affinity
            and GPU not in w.template.requests
            and any(o.matches_labels(labels) for o in node_options(w.template))
        ]
        fill = rng.uniform(0.3, 0.9)
        for attempt in range(40 if mine else 0):
            w = rng.choice(mine)
            if any(
                v > free.get(k, 0) - (1 - fill) * alloc.get(k, 0) for k, v in w.template.requests.items() if k != "pods"
            ):
                continue
            if w.template.requests.get("pods", 1) > free.get("pods", 0):
                break
            bound.append(
                dataclasses.replace(w.template, name=f"{w.name}-run-{number:04d}-{attempt:02d}", node_name=name)
            )
            for k, v in w.template.requests.items():
                free[k] = free.get(k, 0) - v
        taints = tuple(pool.taints)
        out.append(Node(name=name, labels=labels, taints=taints, allocatable=alloc, pods=tuple(bound)))
    return out


def _limit(draft: PoolDraft, workloads: Sequence[Workload], counts: Sequence[int], nodes: Sequence[Node]) -> int:
    """A cpu limit (whole vCPUs) that leaves room for everything that may land in the pool: the drawn limit, raised
    to three times the vCPUs its Deployments need plus 16 vCPUs per pod of a one-per-node Deployment, plus the
    largest type twice and the existing nodes of the pool. A pod needs its cpu request, or for a memory-heavy pod
    the vCPUs that come with its memory on the pool's most memory-dense type (a limit counts nodes' vCPUs, and a
    cache of 16 GiB and 0.5 CPU takes 2 vCPUs of an r type's node, more of any other)."""
    pool = draft.parsed()
    types = _pool_types(pool)
    mib_per_vcpu = max((it.memory_mib / it.vcpu for it in types if it.vcpu), default=0.0)
    cpu = 0.0
    one_per_node = 0
    for w, n in zip(workloads, counts, strict=True):
        if w.pool == draft.name:
            memory_vcpus = w.template.requests.get("memory", 0) / 2**20 / mib_per_vcpu if mib_per_vcpu else 0.0
            cpu += n * max(w.template.requests.get("cpu", 0) / 1000, memory_vcpus)
            if w.template.pod_anti_affinity or any(
                s.topology_key == HOSTNAME_LABEL for s in w.template.topology_spread
            ):
                one_per_node += n
    largest = max((it.vcpu for it in types), default=0)
    existing = sum(
        int(n.labels.get(AWS + "instance-cpu", "0")) for n in nodes if n.labels.get(NODEPOOL_LABEL) == draft.name
    )
    return max(draft.limit_floor, math.ceil(3 * cpu + 16 * one_per_node + 2 * largest + existing))


@cache
def _structure(seed: int) -> tuple[tuple[PoolDraft, ...], tuple[DaemonSet, ...], tuple[Workload, ...]]:
    """What the seed alone decides: NodePools (limits not yet set), DaemonSets and Deployments."""
    rng = random.Random(seed)
    drafts: list[PoolDraft] = []
    kinds = list(POOL_KINDS)
    for number in range(rng.randint(1, 15)):
        for _ in range(20):
            kind = "general" if number == 0 else rng.choices(kinds, weights=list(POOL_KINDS.values()))[0]
            draft = _draw_pool(rng, number, kind)
            if number == 0:  # untainted, unlimited, in every zone: where untargeted Deployments always fit
                draft.taints, draft.limit_floor, draft.weight = [], 0, 0
                draft.requirements = [r for r in draft.requirements if r["key"] != ZONE_LABEL]
            if _pool_types(draft.parsed()):
                drafts.append(draft)
                break
    parsed = {d.name: d.parsed() for d in drafts}
    daemonsets = _daemonsets(rng, drafts)
    workloads: list[Workload] = []
    for number in range(rng.randint(5, 200)):
        workloads.append(_workload(rng, number, drafts, parsed, daemonsets, workloads))
    return tuple(drafts), daemonsets, tuple(workloads)


def generate(seed: int, count: int) -> RandomCluster:
    """Random cluster `seed` with `count` pending pods (see the module)."""
    drafts, daemonsets, workloads = _structure(seed)
    rng = random.Random(seed * 1_000_003 + count)
    counts = replicas(workloads, count, rng)
    unlimited = [d.parsed() for d in drafts]
    nodes = _existing_nodes(rng, count, unlimited, workloads, daemonsets)
    pools = tuple(d.parsed(_limit(d, workloads, counts, nodes) if d.limit_floor else 0) for d in drafts)
    pending = tuple(
        dataclasses.replace(w.template, name=f"{w.name}-{i:05d}")
        for w, n in zip(workloads, counts, strict=True)
        for i in range(n)
    )
    return RandomCluster(
        f"random-{seed}",
        seed,
        pools,
        _nodeclasses(),
        _catalog(),
        daemonsets,
        workloads,
        tuple(counts),
        tuple(nodes),
        pending,
    )
