"""Resources: a NodeClaim only keeps instance types whose allocatable holds every pod placed on it."""

from __future__ import annotations

from functools import cache

from builders import by_name, nodeclass, pod, pods, pool, run, small_catalog, unschedulable

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import InstanceType
from nodewright.model.nodeclass import BlockDevice, BlockDeviceMapping, EC2NodeClass, KubeletConfiguration
from nodewright.model.resources import parse_resources
from nodewright.scheduling.results import Results


@cache
def snapshot_types() -> tuple[InstanceType, ...]:
    return tuple(SnapshotSource().instance_types())


def assert_fits(results: Results, types: list[InstanceType] | tuple[InstanceType, ...], nc: EC2NodeClass) -> None:
    for claim in results.nodeclaims:
        for name in claim.instance_types:
            alloc = allocatable_for(by_name(types, name), nc)
            for resource, value in claim.requests.items():
                assert value <= alloc.get(resource, 0), (claim.name, name, resource)


def test_cpu_excludes_types_too_small_and_picks_cheapest_that_fits() -> None:
    results = run([pod("big", cpu="3", memory="1Gi")])
    (claim,) = results.nodeclaims
    assert claim.instance_types[0] == "m5.xlarge"
    assert not {"c5.large", "m5.large", "r5.large", "m6g.large"} & set(claim.instance_types)
    assert claim.requests["cpu"] == 3000
    assert_fits(results, small_catalog(), nodeclass())


def test_cpu_packs_several_pods_without_exceeding_allocatable() -> None:
    results = run(pods("p", 10, cpu="1500m", memory="512Mi"))
    assert not results.unschedulable
    assert sum(len(c.pods) for c in results.nodeclaims) == 10
    assert_fits(results, small_catalog(), nodeclass())


def test_memory_selects_memory_optimized_type() -> None:
    results = run([pod("mem", cpu="500m", memory="12Gi")])
    (claim,) = results.nodeclaims
    assert claim.instance_types[0] == "r5.large"
    assert not {"c5.large", "m5.large", "m6g.large"} & set(claim.instance_types)
    assert_fits(results, small_catalog(), nodeclass())


def test_memory_larger_than_any_type_is_unschedulable_naming_memory() -> None:
    results = run([pod("huge", cpu="1", memory="500Gi")])
    assert not results.nodeclaims
    reason = unschedulable(results)["default/huge"]
    assert "memory" in reason and "default" in reason


def test_ephemeral_storage_limited_by_root_volume() -> None:
    # 20Gi root volume: 17Gi allocatable after kube-reserved and the 10 % eviction threshold.
    big_disk = pod("disk", extra={"ephemeral-storage": "30Gi"})
    results = run([big_disk])
    assert not results.nodeclaims
    assert "ephemeral-storage" in unschedulable(results)["default/disk"]

    root = BlockDeviceMapping("/dev/xvda", BlockDevice(volume_size_bytes=100 * 2**30), root_volume=True)
    nc = nodeclass(block_device_mappings=(root,))
    results = run([big_disk], classes=[nc])
    (claim,) = results.nodeclaims
    assert claim.pods == ("default/disk",)
    assert_fits(results, small_catalog(), nc)


def test_ephemeral_storage_packs_by_disk_not_cpu() -> None:
    results = run(pods("scratch", 4, cpu="100m", memory="128Mi", extra={"ephemeral-storage": "6Gi"}))
    assert not results.unschedulable
    # 17Gi allocatable holds two 6Gi pods: four pods need two NodeClaims.
    assert sorted(len(c.pods) for c in results.nodeclaims) == [2, 2]
    assert_fits(results, small_catalog(), nodeclass())


def test_pods_resource_caps_pods_per_node() -> None:
    nc = nodeclass(kubelet=KubeletConfiguration(max_pods=3))
    results = run(pods("tiny", 10, cpu="10m", memory="16Mi"), classes=[nc])
    assert not results.unschedulable
    assert all(len(c.pods) <= 3 for c in results.nodeclaims)
    assert len(results.nodeclaims) == 4
    assert_fits(results, small_catalog(), nc)


def test_gpu_request_gets_gpu_type_only() -> None:
    results = run([pod("train", cpu="1", memory="4Gi", extra={"nvidia.com/gpu": 1})])
    (claim,) = results.nodeclaims
    assert claim.instance_types == ("g4dn.xlarge",)
    assert claim.requests["nvidia.com/gpu"] == 1


def test_gpu_request_beyond_any_type_names_the_resource() -> None:
    results = run([pod("train", extra={"nvidia.com/gpu": 2})])
    assert not results.nodeclaims
    reason = unschedulable(results)["default/train"]
    assert "nvidia.com/gpu" in reason
    assert "NodePool default" in reason


def test_two_gpu_pods_need_two_single_gpu_nodes() -> None:
    results = run(pods("gpu", 2, cpu="500m", memory="1Gi", extra={"nvidia.com/gpu": 1}))
    assert len(results.nodeclaims) == 2
    assert all(c.instance_types == ("g4dn.xlarge",) for c in results.nodeclaims)


def test_unknown_extended_resource_is_unschedulable_naming_it() -> None:
    results = run([pod("dongle", extra={"example.com/dongle": 1})])
    assert not results.nodeclaims
    assert "example.com/dongle" in unschedulable(results)["default/dongle"]


def test_efa_extended_resource_against_full_catalog() -> None:
    types = snapshot_types()
    results = run([pod("hpc", cpu="4", memory="8Gi", extra={"vpc.amazonaws.com/efa": 1})], types=list(types))
    (claim,) = results.nodeclaims
    assert claim.instance_types
    for name in claim.instance_types:
        assert by_name(types, name).efa_interfaces >= 1
    assert_fits(results, types, nodeclass())


def test_requests_are_exact_quantities() -> None:
    # 1930m allocatable on a 2-vCPU node: two 965m pods fit exactly, a third does not.
    p = pods("exact", 3, cpu="965m", memory="64Mi")
    only_large = [by_name(small_catalog(), "c5.large")]
    results = run(p, types=only_large)
    assert sorted(len(c.pods) for c in results.nodeclaims) == [1, 2]
    assert results.nodeclaims and all(
        c.requests["cpu"] <= allocatable_for(only_large[0], None)["cpu"] for c in results.nodeclaims
    )
    assert parse_resources({"cpu": "965m"})["cpu"] * 2 == 1930


def test_pool_without_matching_type_names_pool_and_requirement() -> None:
    results = run([pod("p")], pools=[pool("tiny")], types=[by_name(small_catalog(), "g4dn.xlarge")][:0])
    assert "NodePool tiny" in unschedulable(results)["default/p"]
