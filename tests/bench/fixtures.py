"""What every benchmark shares: the cluster it schedules into, pod construction and a fleet audit.

The cluster is one NodePool with `requirements: []` and one AL2023 EC2NodeClass, both parsed from the
documents a user would write (so the benchmark exercises the same defaults as `nodewright simulate`),
against the full offline us-east-1 catalog. Nothing here is timed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Pod
from nodewright.model.parse import parse_nodepool
from nodewright.model.parse_ec2nodeclass import parse_ec2nodeclass
from nodewright.model.resources import parse_resources
from nodewright.scheduling.results import PlannedNodeClaim, Results

NAMESPACE = "default"

_NODEPOOL_DOC = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "requirements": [],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            }
        }
    },
}

_NODECLASS_DOC = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole-bench",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
    },
}


@dataclass(frozen=True, slots=True)
class Cluster:
    """The inputs `solve()` gets besides the pods."""

    nodepool: NodePool
    nodeclass: EC2NodeClass
    instance_types: tuple[InstanceType, ...]

    def solve_kwargs(self) -> dict[str, object]:
        return {
            "nodepools": (self.nodepool,),
            "nodeclasses": (self.nodeclass,),
            "instance_types": self.instance_types,
        }


@cache
def default_cluster() -> Cluster:
    """The default NodePool and EC2NodeClass with every instance type of the offline catalog."""
    pool, pool_errors = parse_nodepool(_NODEPOOL_DOC, "bench")
    nodeclass, class_errors = parse_ec2nodeclass(_NODECLASS_DOC, "bench")
    if pool is None or nodeclass is None:
        raise RuntimeError(f"benchmark cluster does not parse: {[*pool_errors, *class_errors]}")
    return Cluster(pool, nodeclass, tuple(SnapshotSource().instance_types()))


@cache
def requests(cpu: str, memory: str) -> Mapping[str, int]:
    """A pod's effective requests in canonical units; cached because the generators reuse a few sizes."""
    return parse_resources({"cpu": cpu, "memory": memory, "pods": 1})


def audit(results: Results, pods: Sequence[Pod], cluster: Cluster) -> list[str]:
    """`audit_fleet` for the one-NodePool cluster."""
    return audit_fleet(results, pods, cluster.instance_types, lambda _claim: cluster.nodeclass)


def audit_fleet(
    results: Results,
    pods: Sequence[Pod],
    instance_types: Sequence[InstanceType],
    nodeclass_of: Callable[[PlannedNodeClaim], EC2NodeClass],
) -> list[str]:
    """Invariants every result must keep, whatever the workload; returns one message per violation.

    Every pod appears exactly once (in a NodeClaim or as unschedulable), each NodeClaim's `requests` is the
    sum of its pods' requests, and those requests fit the allocatable (with its EC2NodeClass) of every
    instance type it lists.
    """
    by_key = {p.key: p for p in pods}
    problems: list[str] = []
    seen: Counter[str] = Counter()
    types = {it.name: it for it in instance_types}
    for claim in results.nodeclaims:
        seen.update(claim.pods)
        summed: dict[str, int] = {}
        for key in claim.pods:
            pod = by_key.get(key)
            if pod is None:
                problems.append(f"{claim.name}: unknown pod {key}")
                continue
            for name, value in pod.requests.items():
                summed[name] = summed.get(name, 0) + value
        if any(claim.requests.get(k, 0) != v for k, v in summed.items()):
            problems.append(f"{claim.name}: requests {dict(claim.requests)} != sum of its pods {summed}")
        nodeclass = nodeclass_of(claim)
        for type_name in claim.instance_types:
            alloc = allocatable_for(types[type_name], nodeclass)
            short = [k for k, v in summed.items() if v > alloc.get(k, 0)]
            if short:
                problems.append(f"{claim.name}: over capacity of {type_name} on {short}")
                break
    for placed in results.existing.values():
        seen.update(placed)
    seen.update(u.pod for u in results.unschedulable)
    for key, count in seen.items():
        if count != 1:
            problems.append(f"pod {key} appears {count} times")
    missing = len(by_key) - len(seen.keys() & by_key.keys())
    if missing:
        problems.append(f"{missing} pods appear nowhere")
    return problems
