"""Launch templates: what an EC2NodeClass resolves to, the template data, and its content hash.

One launch template per (EC2NodeClass, AMI, user data, block devices, metadata options, security
groups, instance profile, reservation) content: the name is `nodewright-<hash>`, so an equal request
finds the template already there and a changed EC2NodeClass gets a new one (old ones are left for
garbage collection by name prefix).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.model.nodeclass import BlockDeviceMapping, EC2NodeClass, MetadataOptions

TEMPLATE_PREFIX = "nodewright-"
GIB = 1024**3
# What Karpenter gives a node when the EC2NodeClass names no block devices. A Custom image keeps the volumes
# its own block device mappings define.
_DEFAULT_DEVICES: Mapping[str, tuple[tuple[str, int], ...]] = {
    "al2023": (("/dev/xvda", 20),),
    "bottlerocket": (("/dev/xvda", 4), ("/dev/xvdb", 20)),
    "custom": (),
    "al2": (("/dev/xvda", 20),),
    # Karpenter's Windows default: a 50Gi root volume at /dev/sda1 (amifamily/windows.go).
    "windows2019": (("/dev/sda1", 50),),
    "windows2022": (("/dev/sda1", 50),),
    "windows2025": (("/dev/sda1", 50),),
}


@dataclass(frozen=True, slots=True)
class Subnet:
    """A subnet a node class selected: id, zone, zone id and free IPv4 addresses."""

    id: str
    zone: str
    available_ips: int = 0
    zone_id: str = ""


@dataclass(frozen=True, slots=True)
class Image:
    """An AMI for one (architecture, variant); variant is `standard` or `nvidia`."""

    id: str
    architecture: str  # amd64 | arm64 (Kubernetes names)
    variant: str = "standard"
    name: str = ""


@dataclass(frozen=True, slots=True)
class ResolvedNodeClass:
    """An EC2NodeClass with its selectors resolved against the account.

    `subnets` are the chosen subnet per zone (the one with the most free addresses); `images` maps
    (architecture, variant) to the AMI to use.
    """

    node_class: EC2NodeClass
    subnets: tuple[Subnet, ...]
    security_group_ids: tuple[str, ...]
    images: Mapping[tuple[str, str], Image]
    instance_profile: str
    # Every subnet the selector terms match (`subnets` keeps the one per zone that takes launches): a node in any
    # of them has not drifted.
    matching_subnet_ids: frozenset[str] = frozenset()

    def subnet_for(self, zone: str) -> Subnet | None:
        return next((s for s in self.subnets if s.zone == zone), None)

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({s.zone for s in self.subnets}))


@dataclass(frozen=True, slots=True)
class LaunchTemplateSpec:
    """The content of one launch template (before base64 and naming)."""

    node_class: str
    image_id: str
    instance_profile: str
    security_group_ids: tuple[str, ...]
    user_data: str
    block_devices: tuple[BlockDeviceMapping, ...]
    metadata_options: MetadataOptions
    tags: Mapping[str, str] = field(default_factory=dict)
    detailed_monitoring: bool = False
    associate_public_ip_address: bool | None = None
    reservation_id: str = ""
    # A Spot launch also creates a spot-instances-request, which must carry the launch's tags like everything
    # else it creates (the IAM policy requires them on every resource a launch creates).
    spot: bool = False

    def data(self) -> dict[str, Any]:
        """LaunchTemplateData for CreateLaunchTemplate."""
        data: dict[str, Any] = {
            "ImageId": self.image_id,
            "IamInstanceProfile": {"Name": self.instance_profile},
            "UserData": base64.b64encode(self.user_data.encode()).decode(),
            "MetadataOptions": {
                "HttpEndpoint": self.metadata_options.http_endpoint,
                "HttpProtocolIpv6": self.metadata_options.http_protocol_ipv6,
                "HttpPutResponseHopLimit": self.metadata_options.http_put_response_hop_limit,
                "HttpTokens": self.metadata_options.http_tokens,
            },
            "Monitoring": {"Enabled": self.detailed_monitoring},
        }
        if self.block_devices:
            # Without mappings (a Custom image), EC2 uses the image's own.
            data["BlockDeviceMappings"] = [_block_device(d) for d in self.block_devices]
        if self.associate_public_ip_address is None:
            data["SecurityGroupIds"] = list(self.security_group_ids)
        else:
            # The public-IP choice only exists on a network interface, which then carries the groups.
            data["NetworkInterfaces"] = [
                {
                    "DeviceIndex": 0,
                    "AssociatePublicIpAddress": self.associate_public_ip_address,
                    "Groups": list(self.security_group_ids),
                }
            ]
        if self.reservation_id:
            data["CapacityReservationSpecification"] = {
                "CapacityReservationTarget": {"CapacityReservationId": self.reservation_id}
            }
        if self.tags:
            tags = [{"Key": k, "Value": v} for k, v in sorted(self.tags.items())]
            kinds = ("network-interface", "spot-instances-request") if self.spot else ("network-interface",)
            data["TagSpecifications"] = [{"ResourceType": kind, "Tags": tags} for kind in kinds]
        return data

    def content_hash(self) -> str:
        """A stable hash of everything that shapes the instance (node class name included)."""
        canonical = json.dumps({"nodeClass": self.node_class, "data": self.data()}, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:20]

    @property
    def name(self) -> str:
        return TEMPLATE_PREFIX + self.content_hash()


def _block_device(mapping: BlockDeviceMapping) -> dict[str, Any]:
    ebs = mapping.ebs
    out: dict[str, Any] = {
        "VolumeType": ebs.volume_type,
        "Encrypted": ebs.encrypted,
        "DeleteOnTermination": ebs.delete_on_termination,
    }
    if ebs.volume_size_bytes is not None:
        out["VolumeSize"] = max(1, -(-ebs.volume_size_bytes // GIB))
    if ebs.iops is not None:
        out["Iops"] = ebs.iops
    if ebs.throughput is not None:
        out["Throughput"] = ebs.throughput
    if ebs.kms_key_id:
        out["KmsKeyId"] = ebs.kms_key_id
    if ebs.snapshot_id:
        out["SnapshotId"] = ebs.snapshot_id
    if ebs.volume_initialization_rate is not None:
        out["VolumeInitializationRate"] = ebs.volume_initialization_rate
    return {"DeviceName": mapping.device_name, "Ebs": out}


def block_devices(node_class: EC2NodeClass) -> tuple[BlockDeviceMapping, ...]:
    """The EC2NodeClass's block devices, or the AMI family's defaults (gp3, encrypted; none for Custom)."""
    if node_class.block_device_mappings:
        return node_class.block_device_mappings
    from nodewright.model.nodeclass import BlockDevice

    defaults = _DEFAULT_DEVICES.get(node_class.ami_family, _DEFAULT_DEVICES["al2023"])
    return tuple(
        BlockDeviceMapping(device, BlockDevice(volume_size_bytes=size * GIB), root_volume=i == 0)
        for i, (device, size) in enumerate(defaults)
    )
