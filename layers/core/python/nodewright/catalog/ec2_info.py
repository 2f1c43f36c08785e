"""Turn EC2's `InstanceTypeInfo` (a DescribeInstanceTypes item, as a dict) into an `InstanceType`.

Pure: the live adapter passes what boto3 returned, the snapshot generator passes moto's shipped data;
both get the same facts and the same well-known labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from nodewright.catalog.labels import split_name, well_known_labels
from nodewright.catalog.types import GPU, InstanceType, Offering

# EC2 architecture names -> Kubernetes (kubernetes.io/arch). Others (i386 only, *_mac) are unusable.
ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}


def kubernetes_architecture(info: Mapping[str, Any]) -> str | None:
    """amd64 / arm64 for the first supported architecture Kubernetes knows, else None."""
    for arch in info.get("ProcessorInfo", {}).get("SupportedArchitectures", ()):
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    return None


def _devices(items: Sequence[Mapping[str, Any]], manufacturer: str | None = None) -> tuple[GPU, ...]:
    return tuple(
        GPU(
            name=str(item.get("Name", "")),
            manufacturer=manufacturer or str(item.get("Manufacturer", "")),
            count=int(item.get("Count", 0)),
            memory_mib=int(item.get("MemoryInfo", {}).get("SizeInMiB", 0)),
            cores=int(item.get("CoreInfo", {}).get("Count", 0)),
        )
        for item in items
    )


def instance_type_from_ec2(
    info: Mapping[str, Any], offerings: Sequence[Offering] = (), region: str = ""
) -> InstanceType | None:
    """Build an InstanceType (labels filled) from one DescribeInstanceTypes item.

    Returns None for types Kubernetes nodes cannot be: no amd64/arm64 architecture (mac, i386-only).
    `offerings` are attached as given; `region` adds the topology.kubernetes.io/region label.
    """
    arch = kubernetes_architecture(info)
    if arch is None:
        return None
    name = str(info["InstanceType"])
    family, size, category, generation = split_name(name)
    network = info.get("NetworkInfo", {})
    cards = network.get("NetworkCards") or []
    default_card = int(network.get("DefaultNetworkCardIndex", 0))
    # The VPC CNI only uses the default network card, so its interfaces bound the pod IPs.
    enis = next(
        (int(c.get("MaximumNetworkInterfaces", 0)) for c in cards if c.get("NetworkCardIndex", 0) == default_card),
        int(network.get("MaximumNetworkInterfaces", 0)),
    )
    bandwidth_gbps = sum(float(c.get("BaselineBandwidthInGbps", 0) or 0) for c in cards)
    ebs = info.get("EbsInfo", {})
    ebs_optimized = ebs.get("EbsOptimizedInfo") or {}
    # Karpenter labels EBS bandwidth only for types that are EBS-optimized by default.
    ebs_bandwidth = (
        int(ebs_optimized.get("MaximumBandwidthInMbps", 0)) if ebs.get("EbsOptimizedSupport") == "default" else 0
    )
    storage = info.get("InstanceStorageInfo") or {}
    nvme_gb = int(storage.get("TotalSizeInGB", 0)) if storage.get("NvmeSupport", "unsupported") != "unsupported" else 0
    nvme_disks = sum(int(d.get("Count", 0)) for d in storage.get("Disks", ())) if nvme_gb else 0
    gpus = _devices(info.get("GpuInfo", {}).get("Gpus", ()))
    neuron = info.get("NeuronInfo", {}).get("NeuronDevices", ())
    # Newer data describes Inferentia/Trainium as Neuron devices; prefer them over the legacy
    # inference-accelerator entry, which duplicates them on inf1.
    accelerators = (
        _devices(neuron, manufacturer="AWS")
        if neuron
        else _devices(info.get("InferenceAcceleratorInfo", {}).get("Accelerators", ()))
    )
    attachments = int(ebs.get("MaximumEbsAttachments", 28))
    if ebs.get("AttachmentLimitType", "shared") == "shared":
        # On shared-limit Nitro types the root volume and NVMe disks use attachment slots too.
        attachments -= 1 + nvme_disks
    else:
        attachments -= 1
    processor = info.get("ProcessorInfo", {})
    it = InstanceType(
        name=name,
        family=family,
        category=category,
        generation=generation or 0,
        size=size,
        vcpu=int(info["VCpuInfo"]["DefaultVCpus"]),
        memory_mib=int(info["MemoryInfo"]["SizeInMiB"]),
        architecture=arch,
        enis=enis,
        ipv4_per_eni=int(network.get("Ipv4AddressesPerInterface", 0)),
        hypervisor=str(info.get("Hypervisor", "")),
        bare_metal=bool(info.get("BareMetal", False)),
        gpus=gpus,
        accelerators=accelerators,
        local_nvme_gib=nvme_gb,
        ebs_volume_limit=max(attachments, 0),
        network_bandwidth_mbps=round(bandwidth_gbps * 1000),
        ebs_bandwidth_mbps=ebs_bandwidth,
        cpu_manufacturer=str(processor.get("Manufacturer", "")),
        encryption_in_transit=bool(network.get("EncryptionInTransitSupported", False)),
        efa_supported=bool(network.get("EfaSupported", False)),
        efa_interfaces=int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)),
        cpu_clock_mhz=round(float(processor.get("SustainedClockSpeedInGhz", 0) or 0) * 1000),
        offerings=tuple(offerings),
    )
    return replace(it, labels=well_known_labels(it, region))
