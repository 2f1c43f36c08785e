"""Allocatable figures for concrete instance types, computed by hand in each test from Karpenter's rules."""

from __future__ import annotations

import math

import pytest

from nodewright.catalog import SnapshotSource, allocatable, allocatable_for, capacity, max_pods, overhead
from nodewright.catalog.allocatable import (
    BOTTLEROCKET,
    kube_reserved_cpu_millis,
    memory_capacity_bytes,
    root_volume_bytes,
)
from nodewright.catalog.types import GPU, InstanceType
from nodewright.model.nodeclass import (
    AMISelectorTerm,
    BlockDevice,
    BlockDeviceMapping,
    EC2NodeClass,
    KubeletConfiguration,
)

Mi = 2**20
Gi = 2**30


@pytest.fixture(scope="module")
def types() -> dict[str, InstanceType]:
    return {it.name: it for it in SnapshotSource().instance_types()}


def test_m5_large_defaults(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    # 8192 MiB - ceil(8192 * 0.075 = 614.4) = 8192 - 615 = 7577 MiB
    # pods: 3 ENIs * (10 - 1) + 2 = 29; kube-reserved memory 11 * 29 + 255 = 574 MiB; eviction 100 MiB
    # cpu: 2000m - (60 + 10) = 1930m; storage 20Gi - 1Gi kube-reserved - 10% (2Gi) = 17Gi
    assert dict(capacity(it)) == {"cpu": 2000, "memory": 7577 * Mi, "ephemeral-storage": 20 * Gi, "pods": 29}
    assert dict(allocatable(it)) == {
        "cpu": 1930,
        "memory": (7577 - 574 - 100) * Mi,
        "ephemeral-storage": 17 * Gi,
        "pods": 29,
    }


def test_c6g_xlarge_graviton_reserves_cma(types: dict[str, InstanceType]) -> None:
    it = types["c6g.xlarge"]
    assert (it.architecture, it.vcpu, it.memory_mib, it.enis, it.ipv4_per_eni) == ("arm64", 4, 8192, 4, 15)
    # arm64: 8192 - 64 = 8128; ceil(8128 * 0.075 = 609.6) = 610 -> 7518 MiB
    # pods 4 * 14 + 2 = 58 -> kube-reserved 11 * 58 + 255 = 893 MiB
    # cpu 4000 - (60 + 10 + 5 + 5) = 3920
    alloc = allocatable(it)
    assert capacity(it)["memory"] == 7518 * Mi
    assert alloc["memory"] == (7518 - 893 - 100) * Mi
    assert alloc["cpu"] == 3920
    assert alloc["pods"] == 58


def test_gpu_type_exposes_gpus_and_efa(types: dict[str, InstanceType]) -> None:
    g5 = types["g5.xlarge"]
    # 16384 - ceil(1228.8) = 15155 MiB; pods 58 -> 893 MiB reserved
    assert allocatable(g5)["memory"] == (15155 - 893 - 100) * Mi
    assert allocatable(g5)["nvidia.com/gpu"] == 1
    p4d = types["p4d.24xlarge"]
    cap = capacity(p4d)
    # VPC CNI uses the default network card only: 15 ENIs * 49 + 2 = 737 (not the 60 ENIs of 4 cards)
    assert cap["pods"] == 737
    assert cap["nvidia.com/gpu"] == 8
    assert cap["vpc.amazonaws.com/efa"] == 4
    # 96 cores: 60 + 10 + 10 + 0.25% of 92000 (230) = 310m
    assert allocatable(p4d)["cpu"] == 96000 - 310


def test_neuron_devices_and_cores(types: dict[str, InstanceType]) -> None:
    cap = capacity(types["inf2.xlarge"])
    assert cap["aws.amazon.com/neuron"] == 1
    assert cap["aws.amazon.com/neuroncore"] == 2
    assert "nvidia.com/gpu" not in cap


def test_amd_and_habana_gpus_map_to_their_resources() -> None:
    base = dict(family="x1", category="x", generation=1, size="large", vcpu=4, memory_mib=16384)
    amd = InstanceType(
        name="g4ad.xlarge",
        architecture="amd64",
        enis=2,
        ipv4_per_eni=4,
        gpus=(GPU("Radeon Pro V520", "AMD", 1, 8192),),
        **base,
    )  # type: ignore[arg-type]
    gaudi = InstanceType(
        name="dl1.x", architecture="amd64", enis=2, ipv4_per_eni=4, gpus=(GPU("Gaudi", "Habana", 8, 32768),), **base
    )  # type: ignore[arg-type]
    assert capacity(amd)["amd.com/gpu"] == 1
    assert capacity(gaudi)["habana.ai/gaudi"] == 8
    assert "nvidia.com/gpu" not in capacity(amd)


def test_kube_reserved_cpu_tiers() -> None:
    assert kube_reserved_cpu_millis(1) == 60
    assert kube_reserved_cpu_millis(2) == 70
    assert kube_reserved_cpu_millis(4) == 80
    assert kube_reserved_cpu_millis(8) == 90  # + 0.25% of 4000
    assert kube_reserved_cpu_millis(48) == 80 + 110  # + 0.25% of 44000


def test_max_pods_override_keeps_eni_limited_memory_reservation_on_al2023(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    kubelet = KubeletConfiguration(max_pods=110)
    assert capacity(it, kubelet)["pods"] == 110
    # AL2023 (nodeadm) reserves memory for the ENI-limited 29 pods: still 574 MiB
    assert allocatable(it, kubelet)["memory"] == (7577 - 574 - 100) * Mi
    # Bottlerocket reserves for the effective maxPods: 11 * 110 + 255 = 1465 MiB
    assert allocatable(it, kubelet, ami_family=BOTTLEROCKET)["memory"] == (7577 - 1465 - 100) * Mi


def test_pods_per_core_caps_max_pods_except_on_bottlerocket(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    kubelet = KubeletConfiguration(pods_per_core=10)
    assert max_pods(it, kubelet) == 20  # min(29, 10 * 2 vCPU)
    assert max_pods(it, KubeletConfiguration(max_pods=110, pods_per_core=50)) == 100
    assert max_pods(it, kubelet, BOTTLEROCKET) == 29


def test_system_and_kube_reserved_overrides(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    kubelet = KubeletConfiguration(
        system_reserved={"cpu": 100, "memory": 200 * Mi},
        kube_reserved={"cpu": 250, "memory": 1 * Gi},
    )
    alloc = allocatable(it, kubelet)
    assert alloc["cpu"] == 2000 - 250 - 100
    assert alloc["memory"] == 7577 * Mi - 1 * Gi - 200 * Mi - 100 * Mi
    # kube-reserved ephemeral-storage keeps its 1Gi default when not overridden
    assert alloc["ephemeral-storage"] == 17 * Gi


def test_eviction_hard_percentages_and_absolute(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    kubelet = KubeletConfiguration(eviction_hard={"memory.available": "5%", "nodefs.available": "15%"})
    memory = 7577 * Mi
    alloc = allocatable(it, kubelet)
    assert alloc["memory"] == memory - 574 * Mi - math.ceil(memory * 5 / 100)
    assert alloc["ephemeral-storage"] == 20 * Gi - 1 * Gi - math.ceil(20 * Gi * 15 / 100)
    absolute = allocatable(it, KubeletConfiguration(eviction_hard={"memory.available": "500Mi"}))
    assert absolute["memory"] == (7577 - 574 - 500) * Mi
    # 100% disables a threshold (kubelet semantics)
    disabled = allocatable(it, KubeletConfiguration(eviction_hard={"memory.available": "100%"}))
    assert disabled["memory"] == (7577 - 574) * Mi


def test_eviction_soft_does_not_change_allocatable(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    soft = KubeletConfiguration(eviction_soft={"memory.available": "1Gi"})
    assert allocatable(it, soft) == allocatable(it)


def test_root_volume_and_raid0(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    assert allocatable(it, root_volume_bytes=100 * Gi)["ephemeral-storage"] == 100 * Gi - 1 * Gi - 10 * Gi
    m5d = types["m5d.large"]
    # RAID0 instance store: the NVMe total (75 GB, decimal) backs ephemeral storage
    assert capacity(m5d, instance_store_raid0=True)["ephemeral-storage"] == 75 * 10**9
    # a type without NVMe keeps its root volume
    assert capacity(it, instance_store_raid0=True)["ephemeral-storage"] == 20 * Gi


def test_root_volume_bytes_from_node_class() -> None:
    root = BlockDeviceMapping("/dev/xvda", BlockDevice(volume_size_bytes=80 * Gi), root_volume=True)
    assert root_volume_bytes(EC2NodeClass(name="a", block_device_mappings=(root,))) == 80 * Gi
    xvdb = BlockDeviceMapping("/dev/xvdb", BlockDevice(volume_size_bytes=60 * Gi))
    bottlerocket = EC2NodeClass(
        name="b", ami_selector_terms=(AMISelectorTerm(alias="bottlerocket@latest"),), block_device_mappings=(xvdb,)
    )
    assert root_volume_bytes(bottlerocket) == 60 * Gi
    # On AL2023 /dev/xvdb is not the ephemeral device: default 20Gi
    assert root_volume_bytes(EC2NodeClass(name="c", block_device_mappings=(xvdb,))) == 20 * Gi
    assert root_volume_bytes(EC2NodeClass(name="d")) == 20 * Gi


def test_allocatable_for_node_class(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    node_class = EC2NodeClass(
        name="big",
        block_device_mappings=(BlockDeviceMapping("/dev/xvda", BlockDevice(volume_size_bytes=50 * Gi), True),),
        kubelet=KubeletConfiguration(max_pods=20),
    )
    alloc = allocatable_for(it, node_class)
    assert alloc["pods"] == 20
    assert alloc["ephemeral-storage"] == 50 * Gi - 1 * Gi - 5 * Gi
    assert allocatable_for(it, None) == allocatable(it)


def test_results_are_cached_and_read_only(types: dict[str, InstanceType]) -> None:
    it = types["m5.large"]
    first = allocatable(it, KubeletConfiguration(max_pods=50))
    assert allocatable(it, KubeletConfiguration(max_pods=50)) is first
    assert allocatable(it, KubeletConfiguration(max_pods=51)) is not first
    with pytest.raises(TypeError):
        first["cpu"] = 1  # type: ignore[index]


def test_overhead_explains_the_difference(types: dict[str, InstanceType]) -> None:
    it = types["c6g.xlarge"]
    parts = overhead(it)
    cap, alloc = capacity(it), allocatable(it)
    for name in ("cpu", "memory", "ephemeral-storage"):
        reserved = sum(part.get(name, 0) for part in parts.values())
        assert cap[name] - reserved == alloc[name]


def test_memory_overhead_matches_karpenter_float_rounding() -> None:
    # 8000 MiB * 0.075 is exactly 600 in float64 as in exact arithmetic: no extra MiB
    it = InstanceType("t.x", "t", "t", 1, "x", 2, 8000, "amd64", 2, 4)
    assert memory_capacity_bytes(it) == 7400 * Mi


def test_every_snapshot_type_has_positive_allocatable(types: dict[str, InstanceType]) -> None:
    for it in types.values():
        alloc = allocatable(it)
        assert alloc["cpu"] > 0 and alloc["pods"] > 0, it.name
        assert alloc["memory"] > 0, it.name


def test_a_custom_image_takes_ephemeral_storage_from_its_last_mapping_as_karpenter_assumes() -> None:
    from nodewright.catalog.allocatable import DEFAULT_ROOT_VOLUME_BYTES, root_volume_bytes
    from nodewright.model.nodeclass import BlockDevice, BlockDeviceMapping, EC2NodeClass

    def mapping(device: str, gib: int | None, root: bool = False) -> BlockDeviceMapping:
        return BlockDeviceMapping(device, BlockDevice(volume_size_bytes=gib * 2**30 if gib else None), root)

    custom = EC2NodeClass(name="c", ami_family_setting="custom")
    assert root_volume_bytes(custom) == DEFAULT_ROOT_VOLUME_BYTES
    two = (mapping("/dev/sda1", 30), mapping("/dev/sdb", 200))
    assert (
        root_volume_bytes(EC2NodeClass(name="c", ami_family_setting="custom", block_device_mappings=two)) == 200 * 2**30
    )
    rooted = (mapping("/dev/sda1", 30, root=True), mapping("/dev/sdb", 200))
    assert (
        root_volume_bytes(EC2NodeClass(name="c", ami_family_setting="custom", block_device_mappings=rooted))
        == 30 * 2**30
    )
    # AL2023 reads its own device only: /dev/sdb is not where its kubelet keeps pods' data.
    assert root_volume_bytes(EC2NodeClass(name="a", block_device_mappings=two)) == DEFAULT_ROOT_VOLUME_BYTES
