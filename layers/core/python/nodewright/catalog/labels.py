"""Karpenter's well-known node labels and the values an instance type (or an offering) gives them.

Two kinds of labels describe a node that does not exist yet:

- per instance type (`well_known_labels`): instance-type, arch, os and the `karpenter.k8s.aws/instance-*`
  facts. Values follow Karpenter's AWS provider: GPU and accelerator names/manufacturers in lower
  kebab case, memory in MiB, bandwidths in Mbps, local NVMe in GB, booleans as "true"/"false". A label
  whose fact is missing (no GPU, no NVMe) is absent, so `In` fails and `NotIn`/`DoesNotExist` pass,
  exactly as Karpenter's DoesNotExist requirements behave.
- per offering (`offering_labels`): zone, zone id, capacity type and, for reserved capacity, the
  reservation id and type. They are not in `InstanceType.labels` because one type has many offerings.

`WELL_KNOWN_LABELS` lists every key Karpenter treats as well known: a pod may select on one of them
even when no NodePool mentions it, and the scheduler then narrows the NodeClaim instead of failing.
"""

from __future__ import annotations

import dataclasses
import re

from nodewright.catalog.types import RESERVED, InstanceType, Offering

# Upstream Kubernetes labels.
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"
# Windows AMI family -> its build (Karpenter's Windows2019Build .. Windows2025Build, pkg/apis/v1/labels.go).
WINDOWS_BUILDS = {"windows2019": "10.0.17763", "windows2022": "10.0.20348", "windows2025": "10.0.26100"}
# Karpenter core.
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
# AWS.
ZONE_ID = "topology.k8s.aws/zone-id"
_AWS = "karpenter.k8s.aws/"
CAPACITY_RESERVATION_ID = _AWS + "capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = _AWS + "capacity-reservation-type"
INSTANCE_HYPERVISOR = _AWS + "instance-hypervisor"
INSTANCE_ENCRYPTION_IN_TRANSIT = _AWS + "instance-encryption-in-transit-supported"
INSTANCE_CATEGORY = _AWS + "instance-category"
INSTANCE_FAMILY = _AWS + "instance-family"
INSTANCE_GENERATION = _AWS + "instance-generation"
INSTANCE_SIZE = _AWS + "instance-size"
INSTANCE_LOCAL_NVME = _AWS + "instance-local-nvme"
INSTANCE_CPU = _AWS + "instance-cpu"
INSTANCE_CPU_MANUFACTURER = _AWS + "instance-cpu-manufacturer"
INSTANCE_CPU_CLOCK = _AWS + "instance-cpu-sustained-clock-speed-mhz"
INSTANCE_MEMORY = _AWS + "instance-memory"
INSTANCE_EBS_BANDWIDTH = _AWS + "instance-ebs-bandwidth"
INSTANCE_NETWORK_BANDWIDTH = _AWS + "instance-network-bandwidth"
INSTANCE_CAPABILITY_FLEX = _AWS + "instance-capability-flex"
INSTANCE_GPU_NAME = _AWS + "instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = _AWS + "instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = _AWS + "instance-gpu-count"
INSTANCE_GPU_MEMORY = _AWS + "instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = _AWS + "instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = _AWS + "instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = _AWS + "instance-accelerator-count"

WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    {
        INSTANCE_TYPE,
        ARCH,
        OS,
        ZONE,
        REGION,
        HOSTNAME,
        WINDOWS_BUILD,
        CAPACITY_TYPE,
        NODEPOOL,
        ZONE_ID,
        CAPACITY_RESERVATION_ID,
        CAPACITY_RESERVATION_TYPE,
        INSTANCE_HYPERVISOR,
        INSTANCE_ENCRYPTION_IN_TRANSIT,
        INSTANCE_CATEGORY,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_SIZE,
        INSTANCE_LOCAL_NVME,
        INSTANCE_CPU,
        INSTANCE_CPU_MANUFACTURER,
        INSTANCE_CPU_CLOCK,
        INSTANCE_MEMORY,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_CAPABILITY_FLEX,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME,
        INSTANCE_ACCELERATOR_MANUFACTURER,
        INSTANCE_ACCELERATOR_COUNT,
    }
)

# Labels that vary per offering rather than per instance type.
OFFERING_LABELS: frozenset[str] = frozenset(
    {ZONE, ZONE_ID, CAPACITY_TYPE, CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE}
)

# Labels an instance type decides by itself; the rest of WELL_KNOWN_LABELS come from the offering
# (zone, capacity type, reservation) or from the node (hostname, nodepool).
TYPE_LABELS: frozenset[str] = WELL_KNOWN_LABELS - OFFERING_LABELS - {HOSTNAME, NODEPOOL}

# Category is the leading letters, generation the digits after them; the optional "-<n>tb" of the high
# memory families (u-6tb1) sits between the two and belongs to neither.
_NAME_SCHEME = re.compile(r"^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.")


def kebab(text: str) -> str:
    """Lower kebab case, as Karpenter writes GPU and accelerator names ("Radeon Pro V520" -> "radeon-pro-v520")."""
    return text.replace(" ", "-").lower()


def split_name(name: str) -> tuple[str, str, str, int | None]:
    """Split an instance type name into (family, size, category, generation).

    `m7i-flex.large` -> ("m7i-flex", "large", "m", 7); `u-6tb1.metal` -> ("u-6tb1", "metal", "u", 1).
    Category is "" and generation None when the name does not follow EC2's scheme.
    """
    family, _, size = name.partition(".")
    match = _NAME_SCHEME.match(name)
    if match is None:
        return family, size, "", None
    return family, size, match[1], int(match[3])


def well_known_labels(it: InstanceType, region: str = "") -> dict[str, str]:
    """The well-known labels a node of this instance type carries, with Karpenter's value formats.

    Input: an instance type (its facts, not its labels) and optionally the region (adds
    topology.kubernetes.io/region). Output: a new dict. Zone, capacity type and reservation labels are
    per offering: see `offering_labels`.
    """
    labels = {
        INSTANCE_TYPE: it.name,
        ARCH: it.architecture,
        OS: "linux",
        INSTANCE_CPU: str(it.vcpu),
        INSTANCE_MEMORY: str(it.memory_mib),
        # Metal types have no hypervisor; Karpenter still sets the label, to the empty string.
        INSTANCE_HYPERVISOR: it.hypervisor,
        INSTANCE_ENCRYPTION_IN_TRANSIT: "true" if it.encryption_in_transit else "false",
    }
    if region:
        labels[REGION] = region
    family, size, category, generation = split_name(it.name)
    if size:
        labels[INSTANCE_FAMILY] = family
        labels[INSTANCE_SIZE] = size
        labels[INSTANCE_CAPABILITY_FLEX] = "true" if "-flex" in family else "false"
    if category and generation is not None:
        labels[INSTANCE_CATEGORY] = category
        labels[INSTANCE_GENERATION] = str(generation)
    if it.cpu_manufacturer:
        labels[INSTANCE_CPU_MANUFACTURER] = kebab(it.cpu_manufacturer)
    if it.cpu_clock_mhz:
        labels[INSTANCE_CPU_CLOCK] = str(it.cpu_clock_mhz)
    if it.local_nvme_gib:
        labels[INSTANCE_LOCAL_NVME] = str(it.local_nvme_gib)
    if it.network_bandwidth_mbps:
        labels[INSTANCE_NETWORK_BANDWIDTH] = str(it.network_bandwidth_mbps)
    if it.ebs_bandwidth_mbps:
        labels[INSTANCE_EBS_BANDWIDTH] = str(it.ebs_bandwidth_mbps)
    # Karpenter labels GPUs and accelerators only when the type has exactly one kind of device: a label
    # has one value, and a mixed set has no single honest name.
    if len(it.gpus) == 1:
        gpu = it.gpus[0]
        labels[INSTANCE_GPU_NAME] = kebab(gpu.name)
        labels[INSTANCE_GPU_MANUFACTURER] = kebab(gpu.manufacturer)
        labels[INSTANCE_GPU_COUNT] = str(gpu.count)
        labels[INSTANCE_GPU_MEMORY] = str(gpu.memory_mib)
    if len(it.accelerators) == 1:
        accelerator = it.accelerators[0]
        labels[INSTANCE_ACCELERATOR_NAME] = kebab(accelerator.name)
        labels[INSTANCE_ACCELERATOR_MANUFACTURER] = kebab(accelerator.manufacturer)
        labels[INSTANCE_ACCELERATOR_COUNT] = str(accelerator.count)
    return labels


def offering_labels(offering: Offering) -> dict[str, str]:
    """The labels a node launched from this offering carries: zone, zone id, capacity type, reservation.

    Reserved offerings add karpenter.k8s.aws/capacity-reservation-id (and -type when known).
    """
    labels = {ZONE: offering.zone, CAPACITY_TYPE: offering.capacity_type}
    if offering.zone_id:
        labels[ZONE_ID] = offering.zone_id
    if offering.capacity_type == RESERVED and offering.reservation_id:
        labels[CAPACITY_RESERVATION_ID] = offering.reservation_id
        labels[CAPACITY_RESERVATION_TYPE] = offering.reservation_type or "default"
    return labels


def os_labels(ami_family: str) -> dict[str, str]:
    """The OS labels nodes of an AMI family carry: kubernetes.io/os windows and node.kubernetes.io/windows-build
    for the Windows families, kubernetes.io/os linux (and no windows-build) for every other."""
    build = WINDOWS_BUILDS.get(ami_family)
    return {OS: "windows", WINDOWS_BUILD: build} if build else {OS: "linux"}


def for_ami_family(it: InstanceType, ami_family: str) -> InstanceType | None:
    """The instance type as a node of `ami_family` would be: its OS labels set as Karpenter's getOS and
    windows-build requirements set them. None when the family cannot run on the type (Windows on arm64:
    Karpenter gives such a type no OS value, so no NodePool can launch it). Linux families get `it` itself."""
    if ami_family not in WINDOWS_BUILDS:
        return it
    if it.architecture != "amd64":
        return None
    return dataclasses.replace(it, labels={**it.labels, **os_labels(ami_family)})
