"""Karpenter's fake cloud provider (pkg/cloudprovider/fake, v1.14.1: the same types as v1.9.1's) as real instance
types of our catalog.

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
from nodewright.model import resources as res
from nodewright.model.inputs import ClusterInputs
from nodewright.model.loader import load_text
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import HOSTNAME_LABEL, DaemonSet, Node, Pod
from nodewright.scheduling.results import PlannedNodeClaim, Results
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


# fake.InstanceTypesAssorted(): every (cpu 1..64, memory 1..128 GiB, arch, os, zone, capacity type). Here the
# real types of both architectures from 2 to 64 vCPU and 2 to 256 GiB, each in every zone for both capacity
# types (an instance type runs Windows when its EC2NodeClass's AMI family is Windows, amd64 only).
ASSORTED = (
    "t3.small", "c5.large", "m5.large", "r5.large", "c5.xlarge", "m5.xlarge", "r5.xlarge", "c5.2xlarge",
    "m5.2xlarge", "r5.2xlarge", "c5.4xlarge", "m5.4xlarge", "r5.4xlarge", "m5.8xlarge", "m5.16xlarge",
    "t4g.small", "c6g.large", "m6g.large", "r6g.large", "c6g.xlarge", "m6g.xlarge", "r6g.xlarge", "c6g.2xlarge",
    "m6g.2xlarge", "m6g.4xlarge", "r6g.4xlarge", "m6g.8xlarge", "m6g.16xlarge",
)  # fmt: skip


def assorted_catalog() -> list[InstanceType]:
    """The suites' InstanceTypesAssorted view with real types (see ASSORTED)."""
    return [real(name, FAKE_ZONES, FAKE_ZONES) for name in ASSORTED]


def spread_catalog() -> list[InstanceType]:
    """Each default type in every zone for both capacity types (the suites' InstanceTypesAssorted view)."""
    return [real(name, FAKE_ZONES, FAKE_ZONES) for name in (DEFAULT, SMALL, ARM)]


# ----- Karpenter's test harness: ExpectProvisioned, ExpectScheduled, ExpectSkew -----------------------------


class Cluster:
    """A cluster that provisions in rounds, as Karpenter's suites do with ExpectProvisioned.

    Each `provision` solves the pending pods against the nodes and NodeClaims so far; every planned
    NodeClaim is then launched as its first launch option. By default it registers at once: it becomes a
    node (labels, taints, allocatable) with its pods bound. With `inflight=True` it stays a launched
    NodeClaim without a node (Karpenter's in-flight node) with its pods nominated, until `register` turns
    it into its node. Pods placed on existing nodes or claims are bound or nominated there. Unschedulable
    pods stay pending and are forgotten, as a pod Karpenter could not schedule is not bound.
    """

    def __init__(
        self,
        pools: Sequence[NodePool],
        types: Sequence[InstanceType] | None = None,
        nodes: Sequence[Node] = (),
        daemonsets: Sequence[DaemonSet] = (),
        *,
        inflight: bool = False,
    ) -> None:
        self.pools = list(pools)
        self.types = list(types) if types is not None else default_catalog()
        self.nodes: dict[str, Node] = {n.name: n for n in nodes}
        self.claims: dict[str, NodeClaim] = {}
        self.daemonsets = list(daemonsets)
        self.inflight = inflight
        self.last: Results = Results()

    def provision(self, *pending: Pod, **inputs: object) -> Results:
        """solve() the pending pods against the cluster, then launch and bind what it planned."""
        self.last = solve(
            list(pending),
            nodes=list(self.nodes.values()),
            nodeclaims=list(self.claims.values()),
            nodepools=self.pools,
            nodeclasses=[nodeclass()],
            instance_types=self.types,
            daemonsets=self.daemonsets,
            **inputs,  # type: ignore[arg-type]
        )
        by_key = {p.key: p for p in pending}
        for name, keys in self.last.existing.items():
            if name in self.nodes:
                current = self.nodes[name]
                bound = tuple(dataclasses.replace(by_key[k], node_name=name) for k in keys)
                self.nodes[name] = dataclasses.replace(current, pods=current.pods + bound)
            else:
                claim = self.claims[name]
                nominated = tuple(by_key[k] for k in keys)
                requests = res.add(claim.requests, res.total(p.requests for p in nominated))
                self.claims[name] = dataclasses.replace(
                    claim, nominated_pods=claim.nominated_pods + nominated, requests=requests
                )
        for planned in self.last.nodeclaims:
            claim = self._launch(planned, tuple(by_key[k] for k in planned.pods))
            self.claims[claim.name] = claim
            if not self.inflight:
                self.register(claim.name)
        return self.last

    def _launch(self, planned: PlannedNodeClaim, pods: tuple[Pod, ...]) -> NodeClaim:
        option = planned.cheapest
        return NodeClaim(
            name=f"claim-{len(self.claims)}",
            nodepool=planned.nodepool,
            requirements=planned.requirements,
            labels=dict(planned.labels),
            taints=planned.taints,
            startup_taints=planned.startup_taints,
            requests=dict(planned.requests),
            instance_type=option.instance_type,
            zone=option.zone,
            capacity_type=option.capacity_type,
            nominated_pods=pods,
            node_class=planned.node_class,
        )

    def register(self, claim_name: str, **node_fields: object) -> Node:
        """The claim's node joins: named node-<n>, with the claim's labels and taints (startup taints too,
        as a new node carries them) and its pods bound; `node_fields` override the node's fields."""
        claim = self.claims[claim_name]
        it = {t.name: t for t in self.types}[claim.instance_type]
        name = f"node-{len(self.nodes)}"
        labels = {
            **it.labels,
            **claim.labels,
            ZONE: claim.zone,
            CAPACITY_TYPE: claim.capacity_type,
            HOSTNAME_LABEL: name,
        }
        bound = tuple(dataclasses.replace(p, node_name=name) for p in claim.nominated_pods)
        node = Node(
            name,
            labels,
            taints=(*claim.taints, *claim.startup_taints),
            allocatable=dict(allocatable_for(it, None)),
            pods=bound,
            nodeclaim_name=claim.name,
        )
        node = dataclasses.replace(node, **node_fields)  # type: ignore[arg-type]
        self.nodes[name] = node
        self.claims[claim_name] = dataclasses.replace(claim, node_name=name, registered=True, nominated_pods=())
        return node

    def where(self, pod: Pod) -> str | None:
        """ExpectScheduled: the node (or in-flight claim) the pod is bound (nominated) to, or None."""
        for node in self.nodes.values():
            if any(p.key == pod.key for p in node.pods):
                return node.name
        for claim in self.claims.values():
            if any(p.key == pod.key for p in claim.nominated_pods):
                return claim.name
        return None

    def labels_of(self, pod: Pod) -> Mapping[str, str]:
        """The labels of the node (or in-flight claim, as its node will have them) the pod went to."""
        name = self.where(pod)
        assert name is not None, f"{pod.key} was not scheduled"
        if name in self.nodes:
            return self.nodes[name].labels
        claim = self.claims[name]
        it = {t.name: t for t in self.types}[claim.instance_type]
        return {**it.labels, **claim.labels, ZONE: claim.zone, CAPACITY_TYPE: claim.capacity_type}

    def node_of(self, pod: Pod) -> Node | None:
        """ExpectScheduled: the node the pod is bound to, or None when it stayed pending."""
        return next((n for n in self.nodes.values() if any(p.key == pod.key for p in n.pods)), None)

    def skew(self, key: str, match: Mapping[str, str] | None = None, namespace: str = "default") -> list[int]:
        """ExpectSkew: pods matching the labels in the namespace, counted per domain of `key`, sorted.

        Like Karpenter's helper, domains without a matching pod are not listed, and `match` None selects
        every pod (a spread without a labelSelector).
        """
        counts: Counter[str] = Counter()
        placed = [(n.labels, n.pods) for n in self.nodes.values()]
        for claim in self.claims.values():
            if claim.nominated_pods:
                labels = {**self.labels_of(claim.nominated_pods[0]), HOSTNAME_LABEL: claim.name}
                placed.append((labels, claim.nominated_pods))
        for labels, pods in placed:
            domain = labels.get(key)
            if domain is None:
                continue
            for p in pods:
                if p.namespace == namespace and all(p.labels.get(k) == v for k, v in (match or {}).items()):
                    counts[domain] += 1
        return sorted(counts.values())


def from_yaml(text: str) -> ClusterInputs:
    """Objects written as Kubernetes YAML, through the loader `nodewright simulate` uses (for cases whose
    pods rely on parsing: limits taken as requests, init containers, overhead, DaemonSet templates)."""
    inputs, errors = load_text(text, "test.yaml")
    assert not errors, errors
    return inputs
