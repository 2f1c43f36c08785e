"""`windows20xx@latest` and `al2@latest` resolved against moto's SSM, seeded as the local world seeds it: which image
each (architecture, variant) of an instance type gets, through the parameters Karpenter v1.14 reads
(`pkg/providers/amifamily/windows.go`, `al2.go`)."""

from __future__ import annotations

from typing import Any

import pytest
from test_provisioner_handler import CLUSTER, K8S, REGION, account  # noqa: F401 (account is a pytest fixture)

from nodewright.adapters.ec2_launcher import ec2_cloud
from nodewright.localworld.motoserver import al2_and_windows_parameters
from nodewright.model.parse_ec2nodeclass import parse_ec2nodeclass


def resolved(alias: str) -> dict[tuple[str, str], str]:
    doc = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": alias}],
            "role": f"{CLUSTER}-node",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        },
    }
    parsed, errors = parse_ec2nodeclass(doc)
    assert parsed is not None, [str(e) for e in errors]
    cloud = ec2_cloud(CLUSTER, f"{CLUSTER}-node", f"{CLUSTER}-node", REGION)
    return {key: image.id for key, image in cloud.resolve_node_class(parsed, K8S).images.items()}


@pytest.mark.parametrize("year", ["2019", "2022", "2025"])
def test_windows_alias_gives_every_amd64_type_the_one_image(account: dict[str, Any], year: str) -> None:  # noqa: F811
    image = account["amis"][
        f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{K8S}/image_id"
    ]
    assert resolved(f"windows{year}@latest") == {("amd64", "standard"): image, ("amd64", "nvidia"): image}


def test_al2_alias_gives_standard_arm64_and_gpu_images(account: dict[str, Any]) -> None:  # noqa: F811
    base = f"/aws/service/eks/optimized-ami/{K8S}"
    assert resolved("al2@latest") == {
        ("amd64", "standard"): account["amis"][f"{base}/amazon-linux-2/recommended/image_id"],
        ("arm64", "standard"): account["amis"][f"{base}/amazon-linux-2-arm64/recommended/image_id"],
        ("amd64", "nvidia"): account["amis"][f"{base}/amazon-linux-2-gpu/recommended/image_id"],
    }


def test_no_al2_parameters_from_kubernetes_1_33() -> None:
    """AWS publishes no EKS-optimized AL2 AMI for Kubernetes 1.33 and later; the local world seeds none either."""
    assert any("amazon-linux-2/" in name for name, *_ in al2_and_windows_parameters("1.32"))
    assert not any("amazon-linux-2" in name for name, *_ in al2_and_windows_parameters("1.33"))
    assert len(al2_and_windows_parameters("1.33")) == 3  # the three Windows Server years
