"""Small builders for scheduling tests: a hand-made catalog, NodePools, pods, nodes and volumes.

Prices are round numbers so a test can say which type must win. Every pod request includes `pods: 1`
as the model promises; quantities are written as Kubernetes writes them (`500m`, `2Gi`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import CAPACITY_TYPE, ZONE, split_name, well_known_labels
from nodewright.catalog.types import GPU, ON_DEMAND, SPOT, InstanceType, Offering
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodeClassRef, NodePool
from nodewright.model.objects import (
    HOSTNAME_LABEL,
    DaemonSet,
    HostPort,
    LabelSelector,
    Node,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    StorageClass,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.resources import parse_resources
from nodewright.model.taints import Taint, Toleration
from nodewright.scheduling.results import PlannedNodeClaim, Results
from nodewright.scheduling.solver import solve

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
NODEPOOL = "karpenter.sh/nodepool"
GiB = 2**30


def itype(
    name: str,
    vcpu: int,
    memory_gib: float,
    on_demand: float,
    spot: float | None = None,
    *,
    arch: str = "amd64",
    enis: int = 4,
    ipv4: int = 15,
    gpus: int = 0,
    bare_metal: bool = False,
    zones: Sequence[str] = ZONES,
    ebs_limit: int = 27,
    zone_prices: Mapping[str, float] | None = None,
) -> InstanceType:
    """An instance type with on-demand (and optionally spot) offerings in `zones`, labels filled in."""
    family, size, category, generation = split_name(name)
    offerings: list[Offering] = []
    for zone in zones:
        offerings.append(Offering(zone, ON_DEMAND, (zone_prices or {}).get(zone, on_demand)))
        if spot is not None:
            offerings.append(Offering(zone, SPOT, spot))
    it = InstanceType(
        name=name,
        family=family,
        category=category,
        generation=generation or 0,
        size=size,
        vcpu=vcpu,
        memory_mib=int(memory_gib * 1024),
        architecture=arch,
        enis=enis,
        ipv4_per_eni=ipv4,
        hypervisor="" if bare_metal else "nitro",
        bare_metal=bare_metal,
        gpus=(GPU("T4", "NVIDIA", gpus, 16384),) if gpus else (),
        ebs_volume_limit=ebs_limit,
        offerings=tuple(offerings),
    )
    return dataclasses.replace(it, labels=well_known_labels(it))


def small_catalog() -> list[InstanceType]:
    """Nine types: general purpose in four sizes, compute, memory, arm, a GPU type and a metal type."""
    return list(_SMALL_CATALOG)


def _build_small_catalog() -> tuple[InstanceType, ...]:
    return (
        itype("c5.large", 2, 4, 0.085, 0.030),
        itype("m5.large", 2, 8, 0.096, 0.035),
        itype("m5.xlarge", 4, 16, 0.192, 0.070),
        itype("m5.2xlarge", 8, 32, 0.384, 0.140),
        itype("m5.4xlarge", 16, 64, 0.768, 0.280),
        itype("r5.large", 2, 16, 0.126, 0.045),
        itype("m6g.large", 2, 8, 0.077, 0.030, arch="arm64"),
        itype("g4dn.xlarge", 4, 16, 0.526, 0.300, gpus=1),
        itype("m5.metal", 96, 384, 4.608, 1.660, bare_metal=True, enis=15, ipv4=50),
    )


_SMALL_CATALOG = _build_small_catalog()


def by_name(types: Iterable[InstanceType], name: str) -> InstanceType:
    return next(it for it in types if it.name == name)


def req(key: str, op: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement(key, Operator(op), tuple(values), min_values)


def nodeclass(name: str = "default", **kwargs: object) -> EC2NodeClass:
    return EC2NodeClass(name=name, role="KarpenterNodeRole", **kwargs)  # type: ignore[arg-type]


def pool(
    name: str = "default",
    *requirements: Requirement,
    weight: int = 0,
    taints: Sequence[Taint] = (),
    startup_taints: Sequence[Taint] = (),
    limits: Mapping[str, str | int] | None = None,
    labels: Mapping[str, str] | None = None,
    node_class: str = "default",
) -> NodePool:
    return NodePool(
        name=name,
        node_class_ref=NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", node_class),
        requirements=tuple(requirements),
        labels=dict(labels or {}),
        taints=tuple(taints),
        startup_taints=tuple(startup_taints),
        limits=parse_resources(limits) if limits else {},
        weight=weight,
    )


def requests(cpu: str = "1", memory: str = "1Gi") -> dict[str, int]:
    return parse_resources({"cpu": cpu, "memory": memory, "pods": 1})


def pod(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    *,
    ns: str = "default",
    labels: Mapping[str, str] | None = None,
    extra: Mapping[str, str | int] | None = None,
    **kwargs: object,
) -> Pod:
    """A pending pod. `extra` adds resources by their Kubernetes names (`nvidia.com/gpu`)."""
    reqs = requests(cpu, memory)
    if extra:
        reqs.update(parse_resources(extra))
    return Pod(namespace=ns, name=name, uid=f"uid-{ns}-{name}", labels=dict(labels or {}), requests=reqs, **kwargs)  # type: ignore[arg-type]


def pods(prefix: str, count: int, cpu: str = "1", memory: str = "1Gi", **kwargs: object) -> list[Pod]:
    return [pod(f"{prefix}-{i}", cpu, memory, **kwargs) for i in range(count)]  # type: ignore[arg-type]


def selector(**match: str) -> LabelSelector:
    return LabelSelector(match_labels=tuple(sorted(match.items())))


def spread(
    key: str, max_skew: int = 1, when: str = "DoNotSchedule", min_domains: int | None = None, **match: str
) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(max_skew, key, when, selector(**match), min_domains)


def affinity_term(key: str, **match: str) -> PodAffinityTerm:
    return PodAffinityTerm(selector(**match), key)


def weighted(weight: int, key: str, **match: str) -> WeightedPodAffinityTerm:
    return WeightedPodAffinityTerm(weight, affinity_term(key, **match))


def node_terms(*terms: Sequence[Requirement]) -> tuple[NodeSelectorTerm, ...]:
    return tuple(NodeSelectorTerm(tuple(t)) for t in terms)


def preferred(weight: int, *requirements: Requirement) -> PreferredSchedulingTerm:
    return PreferredSchedulingTerm(weight, NodeSelectorTerm(tuple(requirements)))


def toleration(key: str = "", value: str = "", effect: str = "", operator: str = "Equal") -> Toleration:
    return Toleration(key=key, operator=operator, value=value, effect=effect)


def host_port(port: int) -> HostPort:
    return HostPort(port)


def node_labels(
    it: InstanceType, zone: str, pool_name: str, name: str, capacity_type: str = ON_DEMAND
) -> dict[str, str]:
    return {
        **it.labels,
        ZONE: zone,
        CAPACITY_TYPE: capacity_type,
        NODEPOOL: pool_name,
        HOSTNAME_LABEL: name,
    }


def node(
    name: str,
    it: InstanceType,
    zone: str = "us-east-1a",
    pool_name: str = "default",
    bound: Sequence[Pod] = (),
    taints: Sequence[Taint] = (),
    labels: Mapping[str, str] | None = None,
) -> Node:
    """An existing, ready node of type `it`; `bound` pods are bound to it (node_name set)."""
    bound_pods = tuple(dataclasses.replace(p, node_name=name) for p in bound)
    return Node(
        name=name,
        labels={**node_labels(it, zone, pool_name, name), **(labels or {})},
        taints=tuple(taints),
        allocatable=dict(allocatable_for(it, None)),
        provider_id=f"aws:///{zone}/i-{name}",
        pods=bound_pods,
    )


def inflight(
    name: str, it: InstanceType, zone: str = "us-east-1a", pool_name: str = "default", nominated: Sequence[Pod] = ()
) -> NodeClaim:
    """A launched NodeClaim whose node has not registered yet."""
    reqs: dict[str, int] = {}
    for p in nominated:
        for k, v in p.requests.items():
            reqs[k] = reqs.get(k, 0) + v
    return NodeClaim(
        name=name,
        nodepool=pool_name,
        requirements=(
            req(INSTANCE_TYPE, "In", it.name),
            req(ZONE, "In", zone),
            req(CAPACITY_TYPE, "In", ON_DEMAND),
        ),
        labels={NODEPOOL: pool_name},
        requests=reqs,
        instance_type=it.name,
        zone=zone,
        capacity_type=ON_DEMAND,
        nominated_pods=tuple(nominated),
        node_class="default",
    )


def daemonset(name: str, cpu: str = "200m", memory: str = "256Mi", **kwargs: object) -> DaemonSet:
    return DaemonSet("kube-system", name, pod(f"{name}-template", cpu, memory, ns="kube-system", **kwargs))  # type: ignore[arg-type]


def zonal_pv(name: str, zone: str, driver: str = "ebs.csi.aws.com") -> PersistentVolume:
    return PersistentVolume(name, node_terms([req(ZONE, "In", zone)]), driver)


def pvc(name: str, storage_class: str = "", volume: str = "", ns: str = "default") -> PersistentVolumeClaim:
    return PersistentVolumeClaim(ns, name, storage_class, volume)


def storage_class(name: str, *zones: str, mode: str = "WaitForFirstConsumer") -> StorageClass:
    topologies = node_terms([req(ZONE, "In", *zones)]) if zones else ()
    return StorageClass(name, "ebs.csi.aws.com", mode, topologies)


def run(
    pending: Sequence[Pod],
    *,
    pools: Sequence[NodePool] | None = None,
    types: Sequence[InstanceType] | None = None,
    classes: Sequence[EC2NodeClass] | None = None,
    **inputs: object,
) -> Results:
    """solve() with one default NodePool, one default EC2NodeClass and the small catalog unless given."""
    return solve(
        pending,
        nodepools=pools if pools is not None else [pool()],
        nodeclasses=classes if classes is not None else [nodeclass()],
        instance_types=types if types is not None else small_catalog(),
        **inputs,  # type: ignore[arg-type]
    )


# ----- reading results ---------------------------------------------------------------------------------


def placement(results: Results) -> dict[str, str]:
    """pod key -> where it went: a NodeClaim name, an existing node / in-flight claim name, or "-"."""
    out: dict[str, str] = {}
    for claim in results.nodeclaims:
        for p in claim.pods:
            out[p] = claim.name
    for name, keys in results.existing.items():
        for p in keys:
            out[p] = name
    for u in results.unschedulable:
        out[u.pod] = "-"
    return out


def claim_of(results: Results, pod_key: str) -> PlannedNodeClaim:
    return next(c for c in results.nodeclaims if pod_key in c.pods)


def unschedulable(results: Results) -> dict[str, str]:
    return {u.pod: u.reason for u in results.unschedulable}
