"""What Karpenter's NodeOverlay suites build, in nodewright's terms.

- `fake_type(...)`: Karpenter's `fake.NewInstanceType` (4 vCPU, 4Gi; spot in test-zone-1 and -2, on-demand in
  test-zone-1, -2 and -3, priced by `fake.PriceFromResources`), or with the offerings a test gives.
- `reset_types()`: the fake cloud provider's list after `Reset()` (six types, one arm64).
- `overlay(...)`: a NodeOverlay document (`test.NodeOverlay`), as `kubectl apply` would store it.
- `reconcile(types, docs)`: the controller's `Reconcile` followed by the store's `ApplyAll`: the documents loaded as
  the planner loads them, the valid ones applied to the catalog (`catalog.overlay`), each overlay's conditions
  written by the planner's status writer (`service.overlay_status`) onto an in-memory cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.adapters.memory import InMemoryCluster
from nodewright.catalog.catalog import Catalog, available_offerings
from nodewright.catalog.overlay import OverlayResult, apply_overlays
from nodewright.catalog.types import InstanceType, Offering
from nodewright.model.loader import load_documents
from nodewright.model.requirements import Operator, Requirement, Requirements
from nodewright.service.overlay_status import write_overlay_status

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
DEFAULT_PRICE = 0.4 + 0.1 * 4 * 2**30 / 1e9  # fake.PriceFromResources: 4 cpu, 4Gi
DEFAULT_OFFERINGS = (
    ("test-zone-1", "spot"),
    ("test-zone-2", "spot"),
    ("test-zone-1", "on-demand"),
    ("test-zone-2", "on-demand"),
    ("test-zone-3", "on-demand"),
)


def offering(zone: str, capacity_type: str, price: float) -> Offering:
    """One offering (`cloudprovider.Offering{Available: true, ...}`)."""
    return Offering(zone=zone, capacity_type=capacity_type, price=price)


def fake_type(
    name: str, arch: str = "amd64", os: str = "linux", offerings: Sequence[Offering] | None = None
) -> InstanceType:
    """`fake.NewInstanceType(name, ...)`."""
    if offerings is None:
        offerings = [offering(z, c, DEFAULT_PRICE) for z, c in DEFAULT_OFFERINGS]
    return InstanceType(
        name=name,
        family=name,
        category="",
        generation=0,
        size="",
        vcpu=4,
        memory_mib=4096,
        architecture=arch,
        enis=1,
        ipv4_per_eni=5,
        offerings=tuple(offerings),
        labels={INSTANCE_TYPE: name, ARCH: arch, OS: os},
    )


def default_type() -> InstanceType:
    """The suite's BeforeEach type: one spot offering in test-zone-1 at 1.020."""
    return fake_type("default-instance-type", offerings=[offering("test-zone-1", "spot", 1.020)])


def reset_types() -> list[InstanceType]:
    """The fake cloud provider's instance types after `Reset()`."""
    return [
        fake_type("default-instance-type"),
        fake_type("small-instance-type"),
        fake_type("gpu-vendor-instance-type"),
        fake_type("gpu-vendor-b-instance-type"),
        fake_type("arm-instance-type", arch="arm64"),
        fake_type("single-pod-instance-type"),
    ]


def requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A NodeOverlay requirement as written."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def overlay(
    name: str,
    *requirements: Mapping[str, Any],
    weight: int | None = None,
    price: str | None = None,
    price_adjustment: str | None = None,
    capacity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A nodewright.io/v1alpha1 NodeOverlay document (`test.NodeOverlay`)."""
    spec: dict[str, Any] = {"requirements": [dict(r) for r in requirements]}
    if weight is not None:
        spec["weight"] = weight
    if price is not None:
        spec["price"] = price
    if price_adjustment is not None:
        spec["priceAdjustment"] = price_adjustment
    if capacity is not None:
        spec["capacity"] = dict(capacity)
    return {"apiVersion": "nodewright.io/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name}, "spec": spec}


@dataclass
class Reconciled:
    """The overlaid catalog and the overlays as stored after the status pass."""

    catalog: Catalog
    result: OverlayResult
    cluster: InMemoryCluster

    def condition(self, name: str, kind: str = "ValidationSucceeded") -> Mapping[str, Any]:
        doc = self.cluster.objects[("NodeOverlay", "", name)]
        return next(c for c in doc["status"]["conditions"] if c["type"] == kind)

    def succeeded(self, name: str) -> bool:
        """`StatusConditions().IsTrue(ValidationSucceeded)`."""
        return self.condition(name)["status"] == "True"

    def reason(self, name: str) -> str:
        return str(self.condition(name)["reason"])

    def prices(self, name: str, **selected: str) -> list[float]:
        """The prices of the type's offerings that the given zone / capacity type select
        (`Offerings.Compatible(req)`), in the catalog's order."""
        keys = {"zone": ZONE, "capacity_type": CAPACITY_TYPE}
        requirements = Requirements.of(Requirement(keys[k], Operator.IN, (v,)) for k, v in selected.items())
        return [o.price for o in available_offerings(self.catalog[name], requirements)]

    def price_overlaid(self, name: str) -> bool:
        """`IsPricingOverlayApplied()`: an overlay priced one of the type's offerings."""
        return any(o.price_overlay for o in self.catalog[name].offerings)

    def capacity(self, name: str) -> dict[str, int]:
        """The extended resources overlays gave the type."""
        return {resource: amount for resource, (amount, _) in self.catalog[name].overlay_capacity.items()}


def reconcile(types: Iterable[InstanceType], docs: Sequence[Mapping[str, Any]]) -> Reconciled:
    """`ExpectReconciled(nodeOverlayController)` then `store.ApplyAll`: see the module."""
    cluster = InMemoryCluster(docs)
    inputs, _ = load_documents(docs, "cluster")
    result = apply_overlays(Catalog(types), inputs.nodeoverlays)
    write_overlay_status(cluster, docs, result)
    return Reconciled(result.catalog, result, cluster)
