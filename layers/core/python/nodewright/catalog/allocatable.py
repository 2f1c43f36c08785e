"""Capacity and allocatable of a node before it exists, computed the way Karpenter's AWS provider does.

All values are nodewright's canonical integers (cpu in millicores, memory and storage in bytes,
everything else in units). For an instance type `it` with kubelet settings `kubelet`:

capacity
- cpu: vCPUs x 1000.
- memory: EC2's MiB, minus 64 MiB on arm64 (Graviton reserves it for CMA), minus the VM overhead
  `ceil(MiB x 0.075)` MiB (Karpenter's default `vmMemoryOverheadPercent`, computed in float64 in the same
  order as Karpenter so the rounding matches bit for bit).
- pods: kubelet maxPods when set, else ENI-limited `ENIs x (IPv4 per ENI - 1) + 2` (ENIs of the default
  network card; Windows: 110, Karpenter's default where the family has no ENI-limited density); then
  `min(pods, podsPerCore x vCPUs)` when podsPerCore is set (Bottlerocket ignores podsPerCore, as in Karpenter).
- ephemeral-storage: the root volume (default 20Gi, 50Gi on Windows); with instance store policy RAID0, the local NVMe
  total in GB.
- nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi (by GPU manufacturer), aws.amazon.com/neuron (devices),
  aws.amazon.com/neuroncore (devices x cores), vpc.amazonaws.com/efa (max EFA interfaces); only present
  when non-zero (absent and zero mean the same to `resources.fits`).
- vpc.amazonaws.com/PrivateIPv4Address (Windows only): IPv4 per ENI - 1, the addresses the VPC resource
  controller hands Windows pods.

overhead (subtracted from capacity to give allocatable)
- kube-reserved: memory `11 MiB x pods + 255 MiB`, cpu 6 % of the first core, 1 % of the second, 0.5 %
  of cores 3-4, 0.25 % of the rest (each tier truncated to whole millicores), ephemeral-storage 1Gi;
  each key overridable by kubelet kubeReserved. On AL2023 the pods in the memory formula are the
  ENI-limited count even when maxPods is overridden (nodeadm and Karpenter's UsesENILimitedMemoryOverhead);
  on Bottlerocket and Windows they are the effective pods (110 on Windows unless maxPods says otherwise).
- system-reserved: kubelet systemReserved as given (no default).
- eviction threshold: memory.available 100Mi and nodefs.available 10 % of ephemeral storage, each
  replaced by kubelet evictionHard when set there (absolute, or a percentage of capacity; 100 % means
  disabled). evictionSoft does not change allocatable: the kubelet reports allocatable net of hard
  thresholds only, and current Karpenter computes it the same way (older releases also took the larger
  of the soft thresholds, which under-reported allocatable).

Results are cached per (instance type facts, kubelet settings, root volume, AMI family) and returned
as read-only mappings, because the scheduler asks for every instance type for every NodePool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from nodewright.catalog.types import InstanceType
from nodewright.model.nodeclass import EC2NodeClass, KubeletConfiguration
from nodewright.model.quantity import to_canonical

MiB = 2**20
GiB = 2**30

VM_MEMORY_OVERHEAD_PERCENT = 0.075
GRAVITON_CMA_MIB = 64
DEFAULT_ROOT_VOLUME_BYTES = 20 * GiB
DEFAULT_EVICTION_MEMORY_BYTES = 100 * MiB
DEFAULT_EVICTION_NODEFS_PERCENT = 10
KUBE_RESERVED_EPHEMERAL_BYTES = 1 * GiB
DEFAULT_MAX_PODS_WITHOUT_ENI_LIMIT = 110

AL2023 = "al2023"
BOTTLEROCKET = "bottlerocket"
AL2 = "al2"
WINDOWS_FAMILIES = ("windows2019", "windows2022", "windows2025")
# Windows pod density: Karpenter's default maxPods where the family has no ENI-limited density (110).
WINDOWS_DEFAULT_MAX_PODS = DEFAULT_MAX_PODS_WITHOUT_ENI_LIMIT
WINDOWS_ROOT_VOLUME_BYTES = 50 * GiB
PRIVATE_IPV4_ADDRESS = "vpc.amazonaws.com/PrivateIPv4Address"

NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
HABANA_GAUDI = "habana.ai/gaudi"
AWS_NEURON = "aws.amazon.com/neuron"
AWS_NEURON_CORE = "aws.amazon.com/neuroncore"
EFA = "vpc.amazonaws.com/efa"

# Resources that make an instance type "exotic" in Karpenter's sense (see catalog.filter_exotic).
ACCELERATOR_RESOURCES = (NVIDIA_GPU, AMD_GPU, HABANA_GAUDI, AWS_NEURON, AWS_NEURON_CORE)

_GPU_RESOURCE_BY_MANUFACTURER = {"nvidia": NVIDIA_GPU, "amd": AMD_GPU, "habana": HABANA_GAUDI}

# (start, end, fraction) in millicores: the kube-reserved CPU tiers.
_CPU_TIERS = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))

# Ephemeral-storage device per AMI family when blockDeviceMappings has no rootVolume entry.
_EPHEMERAL_DEVICE = {AL2023: "/dev/xvda", BOTTLEROCKET: "/dev/xvdb", AL2: "/dev/xvda"} | {
    family: "/dev/sda1" for family in WINDOWS_FAMILIES
}


def is_windows(ami_family: str) -> bool:
    """Whether nodes of this AMI family run Windows (Karpenter's *amifamily.Windows)."""
    return ami_family in WINDOWS_FAMILIES


def eni_limited_pods(it: InstanceType, reserved_enis: int = 0) -> int:
    """The VPC CNI pod limit: `ENIs x (IPv4 per ENI - 1) + 2`, 0 when no ENI is usable."""
    usable = max(it.enis - reserved_enis, 0)
    if usable == 0:
        return 0
    return usable * (it.ipv4_per_eni - 1) + 2


def max_pods(it: InstanceType, kubelet: KubeletConfiguration | None = None, ami_family: str = AL2023) -> int:
    """Pods a node of this type accepts: kubelet maxPods or the ENI limit, capped by podsPerCore x vCPUs."""
    kubelet = kubelet or _NO_KUBELET
    if kubelet.max_pods is not None:
        count = kubelet.max_pods
    elif is_windows(ami_family):
        count = WINDOWS_DEFAULT_MAX_PODS  # Windows has no ENI-limited pod density in Karpenter
    else:
        count = eni_limited_pods(it)
    if kubelet.pods_per_core and ami_family != BOTTLEROCKET:
        count = min(count, kubelet.pods_per_core * it.vcpu)
    return count


def memory_capacity_bytes(it: InstanceType) -> int:
    """EC2 memory minus Graviton CMA and the VM overhead, in bytes (a whole number of MiB)."""
    mib = it.memory_mib - (GRAVITON_CMA_MIB if it.architecture == "arm64" else 0)
    # Same float64 expression and order as Karpenter, so the ceiling lands on the same MiB.
    overhead_mib = math.ceil(float(mib * MiB) * VM_MEMORY_OVERHEAD_PERCENT / 1024 / 1024)
    return (mib - overhead_mib) * MiB


def kube_reserved_cpu_millis(vcpu: int) -> int:
    """Default kube-reserved CPU for `vcpu` cores, in millicores (each tier truncated like Karpenter)."""
    cpu = vcpu * 1000
    total = 0
    for start, end, fraction in _CPU_TIERS:
        if cpu >= start:
            total += int((min(cpu, end) - start) * fraction)
    return total


def root_volume_bytes(node_class: EC2NodeClass) -> int:
    """The volume that backs ephemeral-storage for nodes of this EC2NodeClass, in bytes.

    The blockDeviceMapping marked rootVolume when it has a size; otherwise the AMI family's ephemeral
    device (/dev/xvda on AL2023, /dev/xvdb on Bottlerocket) when mapped with a size, and for a Custom image,
    whose layout nodewright cannot know, the last mapping as Karpenter assumes; otherwise 20Gi.
    """
    mappings = node_class.block_device_mappings
    for mapping in mappings:
        if mapping.root_volume and mapping.ebs.volume_size_bytes is not None:
            return mapping.ebs.volume_size_bytes
    if node_class.ami_family == "custom" and mappings:
        return mappings[-1].ebs.volume_size_bytes or DEFAULT_ROOT_VOLUME_BYTES
    device = _EPHEMERAL_DEVICE.get(node_class.ami_family, "/dev/xvda")
    for mapping in mappings:
        if mapping.device_name == device and mapping.ebs.volume_size_bytes is not None:
            return mapping.ebs.volume_size_bytes
    return WINDOWS_ROOT_VOLUME_BYTES if is_windows(node_class.ami_family) else DEFAULT_ROOT_VOLUME_BYTES


def _eviction_bytes(capacity: int, signal: str) -> int:
    """An eviction threshold as bytes: a percentage of `capacity` (rounded up) or an absolute quantity."""
    text = signal.strip()
    if text.endswith("%"):
        percent = float(text[:-1])
        if percent == 100:  # kubelet: 100 % disables the threshold
            percent = 0.0
        return math.ceil(float(capacity) / 100 * percent)
    return to_canonical("memory", text)


def _kubelet_key(kubelet: KubeletConfiguration) -> tuple[object, ...]:
    return (
        kubelet.max_pods,
        kubelet.pods_per_core,
        tuple(sorted(kubelet.system_reserved.items())),
        tuple(sorted(kubelet.kube_reserved.items())),
        tuple(sorted(kubelet.eviction_hard.items())),
    )


def _type_key(it: InstanceType) -> tuple[object, ...]:
    return (
        it.name,
        it.vcpu,
        it.memory_mib,
        it.architecture,
        it.enis,
        it.ipv4_per_eni,
        it.gpus,
        it.accelerators,
        it.efa_interfaces,
        it.local_nvme_gib,
        tuple(sorted(it.overlay_capacity.items())),
    )


_NO_KUBELET = KubeletConfiguration()
_CACHE_LIMIT = 200_000
_capacity_cache: dict[tuple[object, ...], Mapping[str, int]] = {}
_allocatable_cache: dict[tuple[object, ...], Mapping[str, int]] = {}


def _remember(
    cache: dict[tuple[object, ...], Mapping[str, int]], key: tuple[object, ...], value: dict[str, int]
) -> Mapping[str, int]:
    if len(cache) >= _CACHE_LIMIT:  # a bound, not an LRU: the working set is types x kubelet configs
        cache.clear()
    frozen = MappingProxyType(value)
    cache[key] = frozen
    return frozen


def _compute_capacity(
    it: InstanceType, kubelet: KubeletConfiguration, root_bytes: int, ami_family: str, raid0: bool
) -> dict[str, int]:
    storage = root_bytes
    if raid0 and it.local_nvme_gib:
        storage = it.local_nvme_gib * 10**9  # EC2 reports instance storage in decimal GB
    out = {
        "cpu": it.vcpu * 1000,
        "memory": memory_capacity_bytes(it),
        "ephemeral-storage": storage,
        "pods": max_pods(it, kubelet, ami_family),
    }
    for gpu in it.gpus:
        resource = _GPU_RESOURCE_BY_MANUFACTURER.get(gpu.manufacturer.lower())
        if resource is not None and gpu.count:
            out[resource] = out.get(resource, 0) + gpu.count
    for accelerator in it.accelerators:
        # Neuron devices (Inferentia, Trainium) are the AWS-made accelerators EC2 lists.
        if accelerator.manufacturer.lower() == "aws" and accelerator.count:
            out[AWS_NEURON] = out.get(AWS_NEURON, 0) + accelerator.count
            if accelerator.cores:
                out[AWS_NEURON_CORE] = out.get(AWS_NEURON_CORE, 0) + accelerator.count * accelerator.cores
    if it.efa_interfaces:
        out[EFA] = it.efa_interfaces
    if is_windows(ami_family) and it.ipv4_per_eni > 1:
        # The VPC resource controller's Windows IPAM: the primary ENI's secondary addresses (Karpenter's
        # privateIPv4Address, IPv4 per interface - 1).
        out[PRIVATE_IPV4_ADDRESS] = it.ipv4_per_eni - 1
    for resource, (amount, _) in it.overlay_capacity.items():
        out[resource] = amount  # a NodeOverlay's extended resource (Karpenter merges it over the type's own)
    return out


def _normalized(
    it: InstanceType,
    kubelet: KubeletConfiguration | None,
    root_volume_bytes: int | None,
    ami_family: str,
    instance_store_raid0: bool,
) -> tuple[KubeletConfiguration, int, tuple[object, ...]]:
    """Defaults filled in, and the cache key of one (type, kubelet, volume, AMI family, RAID0) question."""
    kubelet = kubelet or _NO_KUBELET
    root_bytes = DEFAULT_ROOT_VOLUME_BYTES if root_volume_bytes is None else root_volume_bytes
    return kubelet, root_bytes, (_type_key(it), _kubelet_key(kubelet), root_bytes, ami_family, instance_store_raid0)


def capacity(
    it: InstanceType,
    kubelet: KubeletConfiguration | None = None,
    root_volume_bytes: int | None = None,
    ami_family: str = AL2023,
    instance_store_raid0: bool = False,
) -> Mapping[str, int]:
    """The capacity a node of type `it` will report, as canonical integers (read-only, cached).

    Inputs: kubelet settings from the EC2NodeClass (None: defaults), the ephemeral volume size in bytes
    (None: 20Gi; see `root_volume_bytes`), the AMI family ("al2023" or "bottlerocket"), and whether the
    EC2NodeClass sets instanceStorePolicy RAID0. Invariant: every value is >= 0.
    """
    kubelet, root_bytes, key = _normalized(it, kubelet, root_volume_bytes, ami_family, instance_store_raid0)
    cached = _capacity_cache.get(key)
    if cached is not None:
        return cached
    return _remember(_capacity_cache, key, _compute_capacity(it, kubelet, root_bytes, ami_family, instance_store_raid0))


def overhead(
    it: InstanceType,
    kubelet: KubeletConfiguration | None = None,
    root_volume_bytes: int | None = None,
    ami_family: str = AL2023,
    instance_store_raid0: bool = False,
) -> dict[str, dict[str, int]]:
    """The three reservations subtracted from capacity: {"kube-reserved", "system-reserved", "eviction"}.

    Each is a resource list of canonical integers. Useful to explain an allocatable figure.
    """
    kubelet = kubelet or _NO_KUBELET
    cap = capacity(it, kubelet, root_volume_bytes, ami_family, instance_store_raid0)
    # Karpenter's UsesENILimitedMemoryOverhead: AL2023 and AL2 reserve memory for the ENI-limited pod count,
    # Bottlerocket and Windows for the node's effective pods.
    eni_limited_memory = ami_family != BOTTLEROCKET and not is_windows(ami_family)
    pods_for_memory = eni_limited_pods(it) if eni_limited_memory else cap["pods"]
    kube_reserved = {
        "cpu": kube_reserved_cpu_millis(it.vcpu),
        "memory": (11 * pods_for_memory + 255) * MiB,
        "ephemeral-storage": KUBE_RESERVED_EPHEMERAL_BYTES,
    }
    kube_reserved.update(kubelet.kube_reserved)
    eviction = {
        "memory": DEFAULT_EVICTION_MEMORY_BYTES,
        # Karpenter: ceil(float(storage) / 100 * 10)
        "ephemeral-storage": math.ceil(float(cap["ephemeral-storage"]) / 100 * DEFAULT_EVICTION_NODEFS_PERCENT),
    }
    hard = kubelet.eviction_hard
    if "memory.available" in hard:
        eviction["memory"] = _eviction_bytes(cap["memory"], hard["memory.available"])
    if "nodefs.available" in hard:
        eviction["ephemeral-storage"] = _eviction_bytes(cap["ephemeral-storage"], hard["nodefs.available"])
    return {"kube-reserved": kube_reserved, "system-reserved": dict(kubelet.system_reserved), "eviction": eviction}


def allocatable(
    it: InstanceType,
    kubelet: KubeletConfiguration | None = None,
    root_volume_bytes: int | None = None,
    ami_family: str = AL2023,
    instance_store_raid0: bool = False,
) -> Mapping[str, int]:
    """What pods can request on a node of type `it`: capacity minus kube-reserved, system-reserved and
    the hard eviction thresholds, per resource, never below 0 (read-only, cached).

    Same inputs as `capacity`. Resources reserved but absent from capacity are ignored.
    """
    kubelet, root_bytes, key = _normalized(it, kubelet, root_volume_bytes, ami_family, instance_store_raid0)
    cached = _allocatable_cache.get(key)
    if cached is not None:
        return cached
    out = dict(capacity(it, kubelet, root_bytes, ami_family, instance_store_raid0))
    for reserved in overhead(it, kubelet, root_bytes, ami_family, instance_store_raid0).values():
        for name, value in reserved.items():
            if name in out:
                out[name] = max(out[name] - value, 0)
    return _remember(_allocatable_cache, key, out)


def allocatable_key(node_class: EC2NodeClass) -> tuple[object, ...]:
    """What `allocatable_for` reads of an EC2NodeClass: equal keys give every instance type equal allocatable."""
    return (
        _kubelet_key(node_class.kubelet),
        root_volume_bytes(node_class),
        node_class.ami_family,
        node_class.instance_store_policy == "RAID0",
    )


def allocatable_for(it: InstanceType, node_class: EC2NodeClass | None) -> Mapping[str, int]:
    """`allocatable` with the kubelet, root volume, AMI family and instance store policy of an EC2NodeClass."""
    if node_class is None:
        return allocatable(it)
    return allocatable(
        it,
        node_class.kubelet,
        root_volume_bytes(node_class),
        node_class.ami_family,
        node_class.instance_store_policy == "RAID0",
    )


def clear_cache() -> None:
    """Forget every cached capacity and allocatable (tests; a long-lived process never needs it)."""
    _capacity_cache.clear()
    _allocatable_cache.clear()


__all__ = [
    "ACCELERATOR_RESOURCES",
    "AL2",
    "AL2023",
    "BOTTLEROCKET",
    "PRIVATE_IPV4_ADDRESS",
    "WINDOWS_FAMILIES",
    "allocatable",
    "allocatable_for",
    "allocatable_key",
    "capacity",
    "clear_cache",
    "eni_limited_pods",
    "is_windows",
    "kube_reserved_cpu_millis",
    "max_pods",
    "memory_capacity_bytes",
    "overhead",
    "root_volume_bytes",
]
