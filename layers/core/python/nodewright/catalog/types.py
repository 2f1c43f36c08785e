"""Instance types and their offerings: the facts the scheduler and the launcher choose between."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

SPOT = "spot"
ON_DEMAND = "on-demand"
RESERVED = "reserved"
CAPACITY_TYPES = (RESERVED, SPOT, ON_DEMAND)


@dataclass(frozen=True, slots=True)
class Offering:
    """One way to buy an instance type: in a zone, as a capacity type, at a price per hour (USD).

    `reservation_id` is set for `reserved` offerings (an On-Demand Capacity Reservation with free
    instances); `available` False marks an offering recently refused (InsufficientInstanceCapacity).
    """

    zone: str
    capacity_type: str
    price: float
    available: bool = True
    reservation_id: str = ""
    reservation_capacity: int = 0
    zone_id: str = ""  # topology.k8s.aws/zone-id (e.g. use1-az6) when the source knows it
    reservation_type: str = ""  # default | capacity-block, for reserved offerings
    price_overlay: str = ""  # the NodeOverlay that set `price` (catalog.overlay), "" for the listed price


@dataclass(frozen=True, slots=True)
class GPU:
    """A GPU or accelerator device group as EC2 describes it (name and manufacturer as EC2 spells them).

    `count` devices of `memory_mib` each; `cores` is the NeuronCores per device (0 for GPUs).
    """

    name: str
    manufacturer: str
    count: int
    memory_mib: int
    cores: int = 0


@dataclass(frozen=True, slots=True)
class InstanceType:
    """An EC2 instance type with the facts that matter for scheduling and launching.

    Memory is in MiB as EC2 reports it; `local_nvme_gib` holds EC2's `TotalSizeInGB` for NVMe instance
    storage (the value Karpenter's instance-local-nvme label carries). `enis` is the maximum number of
    network interfaces on the default network card (what the VPC CNI can use). `labels` holds
    Karpenter's well-known labels with their values for this type (instance-type, arch, os,
    karpenter.k8s.aws/*; see `catalog.labels`), so requirements filter on them.
    """

    name: str
    family: str
    category: str
    generation: int
    size: str
    vcpu: int
    memory_mib: int
    architecture: str  # amd64 | arm64 (Kubernetes names)
    enis: int
    ipv4_per_eni: int
    hypervisor: str = "nitro"
    bare_metal: bool = False
    gpus: tuple[GPU, ...] = ()
    accelerators: tuple[GPU, ...] = ()  # Inferentia / Trainium / other non-GPU accelerators
    local_nvme_gib: int = 0
    ebs_volume_limit: int = 27  # volumes a node can attach (Nitro shared limit minus ENIs/NVMe)
    network_bandwidth_mbps: int = 0
    ebs_bandwidth_mbps: int = 0
    cpu_manufacturer: str = ""
    encryption_in_transit: bool = False
    efa_supported: bool = False
    efa_interfaces: int = 0  # vpc.amazonaws.com/efa capacity (MaximumEfaInterfaces)
    cpu_clock_mhz: int = 0  # sustained clock speed, rounded to MHz
    offerings: tuple[Offering, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    # Extended resources NodeOverlays add to the node's capacity (catalog.overlay), by resource: (amount, overlay).
    overlay_capacity: Mapping[str, tuple[int, str]] = field(default_factory=dict)

    @property
    def gpu_count(self) -> int:
        return sum(g.count for g in self.gpus)


class InstanceTypeSource(Protocol):
    """Where instance types come from: the live EC2/Pricing adapter or the offline snapshot."""

    def instance_types(self) -> Sequence[InstanceType]:
        """Every instance type in the region with its offerings (zone x capacity type x price)."""
        ...
