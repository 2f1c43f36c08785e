"""EC2NodeClass: the validated form of a Karpenter v1 / nodewright.io/v1 EC2NodeClass.

Parsing and validation live in `nodewright.model.parse`; this module holds the values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class KubeletConfiguration:
    """The kubelet settings that change allocatable (and a few that user data carries)."""

    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: Mapping[str, int] = field(default_factory=dict)
    kube_reserved: Mapping[str, int] = field(default_factory=dict)
    # Hard eviction thresholds as written (`memory.available: 100Mi` or `5%`).
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    cluster_dns: tuple[str, ...] = ()
    # Grace periods per soft eviction signal, as written (Go durations such as `1m30s`).
    eviction_soft_grace_period: Mapping[str, str] = field(default_factory=dict)
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = None
    image_gc_low_threshold_percent: int | None = None
    cpu_cfs_quota: bool | None = None


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """A subnet / security group / capacity reservation selector term: tags or an id (or name)."""

    tags: Mapping[str, str] = field(default_factory=dict)
    id: str = ""
    name: str = ""
    owner_id: str = ""


@dataclass(frozen=True, slots=True)
class AMISelectorTerm:
    """One amiSelectorTerms entry: an alias, an id, a name (with owner), tags or an SSM parameter."""

    alias: str = ""  # family@version, e.g. al2023@latest, bottlerocket@v1.20.0
    id: str = ""
    name: str = ""
    owner: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    ssm_parameter: str = ""


@dataclass(frozen=True, slots=True)
class BlockDevice:
    """The EBS volume of a blockDeviceMappings entry (size in bytes, gp3 and encrypted by default)."""

    volume_size_bytes: int | None = None
    volume_type: str = "gp3"
    iops: int | None = None
    throughput: int | None = None
    encrypted: bool = True
    kms_key_id: str = ""
    delete_on_termination: bool = True
    snapshot_id: str = ""
    # MiB/s at which EBS fills a volume from its snapshot (100-300); None leaves EBS's default.
    volume_initialization_rate: int | None = None


@dataclass(frozen=True, slots=True)
class BlockDeviceMapping:
    """One blockDeviceMappings entry; `root_volume` marks the volume the AMI boots from."""

    device_name: str
    ebs: BlockDevice
    root_volume: bool = False


@dataclass(frozen=True, slots=True)
class MetadataOptions:
    """The instance metadata service settings (IMDSv2 required, hop limit 1 by default, as in Karpenter)."""

    http_endpoint: str = "enabled"
    http_protocol_ipv6: str = "disabled"
    http_put_response_hop_limit: int = 1
    http_tokens: str = "required"


@dataclass(frozen=True, slots=True)
class EC2NodeClass:
    """An EC2NodeClass (nodewright.io/v1 or karpenter.k8s.aws/v1): how instances of a NodePool are launched."""

    name: str
    ami_selector_terms: tuple[AMISelectorTerm, ...] = ()
    subnet_selector_terms: tuple[SelectorTerm, ...] = ()
    security_group_selector_terms: tuple[SelectorTerm, ...] = ()
    capacity_reservation_selector_terms: tuple[SelectorTerm, ...] = ()
    role: str = ""
    instance_profile: str = ""
    user_data: str = ""
    block_device_mappings: tuple[BlockDeviceMapping, ...] = ()
    metadata_options: MetadataOptions = field(default_factory=MetadataOptions)
    kubelet: KubeletConfiguration = field(default_factory=KubeletConfiguration)
    tags: Mapping[str, str] = field(default_factory=dict)
    associate_public_ip_address: bool | None = None
    detailed_monitoring: bool = False
    instance_store_policy: str = ""
    api_version: str = "nodewright.io/v1"
    source: str = ""
    # spec.context (reserved for EC2 CreateFleet), passed through as written.
    context: str = ""
    # spec.amiFamily lower-cased (al2023, bottlerocket, al2, windows2019/2022/2025, custom), "" when unset (the
    # alias term decides).
    ami_family_setting: str = ""

    @property
    def ami_family(self) -> str:
        """The AMI family (al2023, bottlerocket, al2, windows2019/2022/2025 or custom): spec.amiFamily when set
        (Custom may go with an alias, as in Karpenter), else the alias's family, else al2023."""
        if self.ami_family_setting:
            return self.ami_family_setting
        for term in self.ami_selector_terms:
            if term.alias:
                return term.alias.split("@", 1)[0].lower()
        return "al2023"
