"""The registrar's kubelet arithmetic and the Node it registers for an instance."""

from __future__ import annotations

import datetime
from typing import Any

from nodewright.localworld.registrar import (
    InstanceTypeInfo,
    belongs_to,
    capacity_and_allocatable,
    eni_max_pods,
    kube_reserved_cpu_millis,
    node_manifest,
)
from nodewright.localworld.userdata import BootConfig, Taint

M5_LARGE = InstanceTypeInfo.from_api(
    {
        "InstanceType": "m5.large",
        "VCpuInfo": {"DefaultVCpus": 2},
        "MemoryInfo": {"SizeInMiB": 8192},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
        "NetworkInfo": {"MaximumNetworkInterfaces": 3, "Ipv4AddressesPerInterface": 10},
    }
)
G5 = InstanceTypeInfo.from_api(
    {
        "InstanceType": "g5.xlarge",
        "VCpuInfo": {"DefaultVCpus": 4},
        "MemoryInfo": {"SizeInMiB": 16384},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
        "NetworkInfo": {"MaximumNetworkInterfaces": 4, "Ipv4AddressesPerInterface": 15},
        "GpuInfo": {"Gpus": [{"Count": 1, "Manufacturer": "NVIDIA"}]},
    }
)


def test_kubelet_numbers_follow_the_eks_formulas() -> None:
    assert eni_max_pods(M5_LARGE) == 29
    assert kube_reserved_cpu_millis(1) == 60
    assert kube_reserved_cpu_millis(2) == 70
    assert kube_reserved_cpu_millis(4) == 80
    assert kube_reserved_cpu_millis(8) == 90
    capacity, allocatable = capacity_and_allocatable(M5_LARGE, None)
    assert capacity["pods"] == "29"
    assert allocatable["cpu"] == "1930m"
    # 8192 MiB less 7.5 % VM overhead = 7577 MiB; less 11*29+255 kube-reserved and 100 eviction.
    assert capacity["memory"] == f"{7577 * 1024}Ki"
    assert allocatable["memory"] == f"{(7577 - 319 - 255 - 100) * 1024}Ki"
    assert capacity_and_allocatable(M5_LARGE, 110)[0]["pods"] == "110"
    assert capacity_and_allocatable(G5, None)[1]["nvidia.com/gpu"] == "1"


def _instance(**extra: Any) -> dict[str, Any]:
    instance = {
        "InstanceId": "i-0abc",
        "InstanceType": "m5.large",
        "PrivateDnsName": "ip-10-0-1-5.ec2.internal",
        "PrivateIpAddress": "10.0.1.5",
        "Placement": {"AvailabilityZone": "us-east-1b"},
        "State": {"Name": "running"},
        "Tags": [{"Key": "kubernetes.io/cluster/prod", "Value": "owned"}],
        "LaunchTime": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    }
    instance.update(extra)
    return instance


def test_node_manifest_carries_identity_labels_and_taints() -> None:
    boot = BootConfig(
        format="al2023",
        labels={"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot"},
        taints=[Taint("dedicated", "gpu", "NoSchedule"), Taint("startup", "", "NoExecute")],
    )
    node = node_manifest(_instance(InstanceLifecycle="spot"), M5_LARGE, boot, "us-east-1")
    meta = node["metadata"]
    assert meta["name"] == "ip-10-0-1-5.ec2.internal"
    assert node["spec"]["providerID"] == "aws:///us-east-1b/i-0abc"
    assert meta["labels"]["node.kubernetes.io/instance-type"] == "m5.large"
    assert meta["labels"]["topology.kubernetes.io/zone"] == "us-east-1b"
    assert meta["labels"]["kubernetes.io/arch"] == "amd64"
    assert meta["labels"]["kubernetes.io/hostname"] == "ip-10-0-1-5.ec2.internal"
    assert meta["labels"]["karpenter.sh/capacity-type"] == "spot"
    assert meta["labels"]["karpenter.sh/nodepool"] == "default"
    assert node["spec"]["taints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "startup", "effect": "NoExecute"},
    ]
    assert {"type": "InternalIP", "address": "10.0.1.5"} in node["status"]["addresses"]
    assert (
        node_manifest(_instance(), M5_LARGE, BootConfig("none"), "us-east-1")["metadata"]["labels"][
            "karpenter.sh/capacity-type"
        ]
        == "on-demand"
    )


def test_ownership_tags() -> None:
    assert belongs_to(_instance(), "prod")
    assert not belongs_to(_instance(), "staging")
    assert belongs_to(_instance(Tags=[{"Key": "eks:eks-cluster-name", "Value": "staging"}]), "staging")
    assert belongs_to(_instance(Tags=[{"Key": "nodewright.io/cluster", "Value": "staging"}]), "staging")


def test_al2023_reserves_memory_for_the_eni_limited_pods_even_with_max_pods_set() -> None:
    # As nodeadm does and the provisioner's catalog assumes: otherwise a node with maxPods 110 would register
    # about 1 GiB smaller than the provisioner planned, and a pod planned onto it would be stranded.
    default = capacity_and_allocatable(M5_LARGE, None)[1]["memory"]
    assert capacity_and_allocatable(M5_LARGE, 110)[1]["memory"] == default
    bottlerocket = capacity_and_allocatable(M5_LARGE, 110, eni_limited_memory=False)[1]["memory"]
    assert int(bottlerocket.removesuffix("Ki")) < int(default.removesuffix("Ki"))
