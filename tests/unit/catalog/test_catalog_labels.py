"""Well-known labels: keys and value formats as Karpenter's AWS provider sets them."""

from __future__ import annotations

import pytest

from nodewright.catalog import WELL_KNOWN_LABELS, Offering, SnapshotSource, offering_labels, well_known_labels
from nodewright.catalog import labels as L
from nodewright.catalog.labels import split_name
from nodewright.catalog.types import InstanceType


@pytest.fixture(scope="module")
def types() -> dict[str, InstanceType]:
    return {it.name: it for it in SnapshotSource().instance_types()}


def test_m5_large_labels(types: dict[str, InstanceType]) -> None:
    labels = types["m5.large"].labels
    expected = {
        "node.kubernetes.io/instance-type": "m5.large",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": "us-east-1",
        "karpenter.k8s.aws/instance-family": "m5",
        "karpenter.k8s.aws/instance-category": "m",
        "karpenter.k8s.aws/instance-generation": "5",
        "karpenter.k8s.aws/instance-size": "large",
        "karpenter.k8s.aws/instance-cpu": "2",
        "karpenter.k8s.aws/instance-cpu-manufacturer": "intel",
        "karpenter.k8s.aws/instance-memory": "8192",
        "karpenter.k8s.aws/instance-hypervisor": "nitro",
        "karpenter.k8s.aws/instance-encryption-in-transit-supported": "false",
        "karpenter.k8s.aws/instance-network-bandwidth": "750",
        "karpenter.k8s.aws/instance-ebs-bandwidth": "4750",
        "karpenter.k8s.aws/instance-capability-flex": "false",
    }
    assert {k: labels.get(k) for k in expected} == expected
    # no GPU, no NVMe: those labels are absent, so `In` fails and `DoesNotExist` passes
    assert L.INSTANCE_GPU_NAME not in labels
    assert L.INSTANCE_LOCAL_NVME not in labels


def test_gpu_labels(types: dict[str, InstanceType]) -> None:
    labels = types["p4d.24xlarge"].labels
    assert labels[L.INSTANCE_GPU_NAME] == "a100"
    assert labels[L.INSTANCE_GPU_MANUFACTURER] == "nvidia"
    assert labels[L.INSTANCE_GPU_COUNT] == "8"
    assert labels[L.INSTANCE_GPU_MEMORY] == "40960"  # per GPU, MiB
    assert labels[L.INSTANCE_LOCAL_NVME] == "8000"  # GB, as EC2 reports it
    assert labels[L.INSTANCE_NETWORK_BANDWIDTH] == "400000"  # 4 cards x 100 Gbps baseline


def test_neuron_accelerator_labels(types: dict[str, InstanceType]) -> None:
    labels = types["inf2.xlarge"].labels
    assert labels[L.INSTANCE_ACCELERATOR_NAME] == "inferentia2"
    assert labels[L.INSTANCE_ACCELERATOR_MANUFACTURER] == "aws"
    assert labels[L.INSTANCE_ACCELERATOR_COUNT] == "1"
    assert types["trn1.2xlarge"].labels[L.INSTANCE_ACCELERATOR_NAME] == "trainium"


def test_arm_flex_and_metal(types: dict[str, InstanceType]) -> None:
    assert types["c6g.xlarge"].labels[L.ARCH] == "arm64"
    assert types["c6g.xlarge"].labels[L.INSTANCE_CPU_MANUFACTURER] == "aws"
    flex = types["m7i-flex.large"].labels
    assert (flex[L.INSTANCE_FAMILY], flex[L.INSTANCE_CATEGORY], flex[L.INSTANCE_GENERATION]) == ("m7i-flex", "m", "7")
    assert flex[L.INSTANCE_CAPABILITY_FLEX] == "true"
    metal = types["c5.metal"].labels
    assert metal[L.INSTANCE_SIZE] == "metal"
    assert metal[L.INSTANCE_HYPERVISOR] == ""  # metal has no hypervisor; Karpenter still sets the key


def test_split_name() -> None:
    assert split_name("u-6tb1.metal") == ("u-6tb1", "metal", "u", 1)
    assert split_name("c7gn.16xlarge") == ("c7gn", "16xlarge", "c", 7)
    assert split_name("inf2.xlarge") == ("inf2", "xlarge", "inf", 2)
    assert split_name("weird") == ("weird", "", "", None)


def test_every_label_is_well_known_and_labels_match_facts(types: dict[str, InstanceType]) -> None:
    for it in types.values():
        assert set(it.labels) <= WELL_KNOWN_LABELS, it.name
        assert it.labels == well_known_labels(it, "us-east-1"), it.name
        assert it.labels[L.INSTANCE_CPU] == str(it.vcpu)


def test_well_known_set_covers_scheduler_keys() -> None:
    for key in (
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "karpenter.sh/capacity-type",
        "karpenter.sh/nodepool",
        "kubernetes.io/hostname",
        "karpenter.k8s.aws/capacity-reservation-id",
        "topology.k8s.aws/zone-id",
        "node.kubernetes.io/instance-type",
    ):
        assert key in WELL_KNOWN_LABELS


def test_offering_labels() -> None:
    spot = Offering("us-east-1a", "spot", 0.01, zone_id="use1-az6")
    assert offering_labels(spot) == {
        "topology.kubernetes.io/zone": "us-east-1a",
        "karpenter.sh/capacity-type": "spot",
        "topology.k8s.aws/zone-id": "use1-az6",
    }
    reserved = Offering("us-east-1b", "reserved", 0.0, reservation_id="cr-123")
    assert offering_labels(reserved)["karpenter.k8s.aws/capacity-reservation-id"] == "cr-123"
    assert offering_labels(reserved)["karpenter.k8s.aws/capacity-reservation-type"] == "default"
