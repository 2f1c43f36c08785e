"""Instance catalog: instance types and offerings, allocatable, well-known labels, prices.

Entry points for the scheduler and services:
- `SnapshotSource` / `snapshot.load()`: the offline catalog shipped in the package;
  `nodewright.adapters.ec2_catalog.LiveSource`: the same from EC2 and the Pricing API.
- `Catalog(source.instance_types())`, then `.with_unavailable(...)` and `.with_reservations(...)`.
- `allocatable(it, kubelet, root_volume_bytes, ami_family)` / `allocatable_for(it, node_class)`.
- `filter_exotic(types, requirements)`: Karpenter's bare-metal / accelerator rule.
- `WELL_KNOWN_LABELS`, `well_known_labels(it)`, `offering_labels(offering)`.
"""

from nodewright.catalog.allocatable import allocatable, allocatable_for, capacity, max_pods, overhead, root_volume_bytes
from nodewright.catalog.catalog import (
    CapacityReservation,
    Catalog,
    available_offerings,
    cheapest_price,
    filter_exotic,
    is_accelerated,
    is_bare_metal,
    offering_matches,
    type_matches,
)
from nodewright.catalog.labels import (
    OFFERING_LABELS,
    TYPE_LABELS,
    WELL_KNOWN_LABELS,
    offering_labels,
    well_known_labels,
)
from nodewright.catalog.snapshot import Snapshot, SnapshotError, SnapshotSource
from nodewright.catalog.types import (
    CAPACITY_TYPES,
    GPU,
    ON_DEMAND,
    RESERVED,
    SPOT,
    InstanceType,
    InstanceTypeSource,
    Offering,
)

__all__ = [
    "CAPACITY_TYPES",
    "GPU",
    "OFFERING_LABELS",
    "ON_DEMAND",
    "RESERVED",
    "SPOT",
    "TYPE_LABELS",
    "WELL_KNOWN_LABELS",
    "CapacityReservation",
    "Catalog",
    "InstanceType",
    "InstanceTypeSource",
    "Offering",
    "Snapshot",
    "SnapshotError",
    "SnapshotSource",
    "allocatable",
    "allocatable_for",
    "available_offerings",
    "capacity",
    "cheapest_price",
    "filter_exotic",
    "is_accelerated",
    "is_bare_metal",
    "max_pods",
    "offering_labels",
    "offering_matches",
    "overhead",
    "root_volume_bytes",
    "type_matches",
    "well_known_labels",
]
