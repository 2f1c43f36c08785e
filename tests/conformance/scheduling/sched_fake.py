"""Karpenter's fake cloud provider (pkg/cloudprovider/fake, v1.9.1) as real instance types of our catalog.

Karpenter's scheduling suites run against made-up instance types. The ported tests run against real ones
from the catalog snapshot the simulator ships, chosen by the facts each fake type stands for; prices are
the real ones, and offerings keep the fake's layout (spot in test-zone-1 and -2, on-demand in all three):

    Karpenter fake type             facts                         here
    default-instance-type           4 vCPU, 4 GiB, amd64          c5.xlarge    (4 vCPU, 8 GiB, amd64)
    small-instance-type             2 vCPU, 2 GiB, amd64          t3.small     (2 vCPU, 2 GiB, amd64)
    arm-instance-type               16 vCPU, 128 GiB, arm64       r6g.4xlarge  (16 vCPU, 128 GiB, arm64)
    gpu-vendor-instance-type        4 vCPU, 4 GiB, 2 GPUs         g4dn.xlarge  (4 vCPU, 16 GiB, 1 GPU)
    InstanceTypes(n): fake-it-i     i+1 vCPU, 2(i+1) GiB          c5 / m5 sizes of the same vCPU count

The fake types allow 5 pods each; real ones allow what their ENIs do (29 to 234), which only matters
where a test says so. Zones test-zone-1/2/3 are us-east-1a/b/c.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache

from builders import nodeclass

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import CAPACITY_TYPE, ZONE
from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import ON_DEMAND, SPOT, InstanceType, Offering
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import HOSTNAME_LABEL, DaemonSet, Node, Pod
from nodewright.model.taints import Taint
from nodewright.scheduling.results import Results
from nodewright.scheduling.solver import solve

ZONE_1, ZONE_2, ZONE_3 = "us-east-1a", "us-east-1b", "us-east-1c"
FAKE_ZONES = (ZONE_1, ZONE_2, ZONE_3)
DEFAULT = "c5.xlarge"
SMALL = "t3.small"
ARM = "r6g.4xlarge"
GPU = "g4dn.xlarge"
# fake.InstanceTypes(5): 1..5 vCPU with 2 GiB per vCPU; the real types nearest in vCPU and memory.
SIZED = ("t3.small", "c5.large", "c5.xlarge", "c5.xlarge", "m5.xlarge")


@cache
def _real() -> dict[str, InstanceType]:
    return {it.name: it for it in SnapshotSource().instance_types()}


def real(name: str, spot_zones: Sequence[str] = (ZONE_1, ZONE_2), od_zones: Sequence[str] = FAKE_ZONES) -> InstanceType:
    """The catalog's type `name` with the fake provider's offering layout and the type's own prices."""
    it = _real()[name]
    price = {(o.zone, o.capacity_type): o.price for o in it.offerings}
    offerings = [Offering(z, SPOT, price[(z, SPOT)]) for z in spot_zones]
    offerings += [Offering(z, ON_DEMAND, price[(z, ON_DEMAND)]) for z in od_zones]
    return dataclasses.replace(it, offerings=tuple(offerings))


def default_catalog() -> list[InstanceType]:
    """fake.CloudProvider's default types (without single-pod-instance-type, which no real type is)."""
    return [real(DEFAULT), real(SMALL), real(ARM), real(GPU)]


def spread_catalog() -> list[InstanceType]:
    """Each default type in every zone for both capacity types (the suites' InstanceTypesAssorted view)."""
    return [real(name, FAKE_ZONES, FAKE_ZONES) for name in (DEFAULT, SMALL, ARM)]


# ----- Karpenter's test harness: ExpectProvisioned, ExpectScheduled, ExpectSkew -----------------------------


class Cluster:
    """A cluster that provisions in rounds, as Karpenter's suites do with ExpectProvisioned.

    Each `provision` solves the pending pods against the nodes so far; every planned NodeClaim then
    becomes a node of its first launch option (labels, taints, allocatable) with its pods bound, and pods
    placed on existing nodes are bound there. Unschedulable pods stay pending and are forgotten, as a
    pod Karpenter could not schedule is not bound.
    """

    def __init__(
        self,
        pools: Sequence[NodePool],
        types: Sequence[InstanceType] | None = None,
        nodes: Sequence[Node] = (),
        daemonsets: Sequence[DaemonSet] = (),
    ) -> None:
        self.pools = list(pools)
        self.types = list(types) if types is not None else default_catalog()
        self.nodes: dict[str, Node] = {n.name: n for n in nodes}
        self.daemonsets = list(daemonsets)
        self.last: Results = Results()

    def provision(self, *pending: Pod, **inputs: object) -> Results:
        """solve() the pending pods against the cluster, then launch and bind what it planned."""
        self.last = solve(
            list(pending),
            nodes=list(self.nodes.values()),
            nodepools=self.pools,
            nodeclasses=[nodeclass()],
            instance_types=self.types,
            daemonsets=self.daemonsets,
            **inputs,  # type: ignore[arg-type]
        )
        by_key = {p.key: p for p in pending}
        for name, keys in self.last.existing.items():
            current = self.nodes[name]
            bound = tuple(dataclasses.replace(by_key[k], node_name=name) for k in keys)
            self.nodes[name] = dataclasses.replace(current, pods=current.pods + bound)
        types = {it.name: it for it in self.types}
        for claim in self.last.nodeclaims:
            option = claim.cheapest
            it = types[option.instance_type]
            name = f"node-{len(self.nodes)}"
            labels = {
                **it.labels,
                **claim.labels,
                ZONE: option.zone,
                CAPACITY_TYPE: option.capacity_type,
                HOSTNAME_LABEL: name,
            }
            taints: tuple[Taint, ...] = tuple(claim.taints)
            bound = tuple(dataclasses.replace(by_key[k], node_name=name) for k in claim.pods)
            self.nodes[name] = Node(
                name, labels, taints=taints, allocatable=dict(allocatable_for(it, None)), pods=bound
            )
        return self.last

    def node_of(self, pod: Pod) -> Node | None:
        """ExpectScheduled: the node the pod is bound to, or None when it stayed pending."""
        return next((n for n in self.nodes.values() if any(p.key == pod.key for p in n.pods)), None)

    def skew(self, key: str, match: Mapping[str, str] | None = None, namespace: str = "default") -> list[int]:
        """ExpectSkew: pods matching the labels in the namespace, counted per domain of `key`, sorted.

        Like Karpenter's helper, domains without a matching pod are not listed, and `match` None selects
        every pod (a spread without a labelSelector).
        """
        counts: Counter[str] = Counter()
        for n in self.nodes.values():
            domain = n.labels.get(key)
            if domain is None:
                continue
            for p in n.pods:
                if p.namespace == namespace and all(p.labels.get(k) == v for k, v in (match or {}).items()):
                    counts[domain] += 1
        return sorted(counts.values())
