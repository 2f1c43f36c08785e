"""Which AMI an EC2NodeClass means: public SSM parameters for aliases, DescribeImages filters otherwise.

Aliases (`al2023@latest`, `al2023@v20240807`, `bottlerocket@latest`, `bottlerocket@v1.20.0`) resolve per
architecture and variant (standard, or nvidia for NVIDIA GPU types) through the public parameters EKS
and Bottlerocket publish. Other terms (id, name, tags, owner) become DescribeImages filters; the newest
image per architecture wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.catalog.types import InstanceType
from nodewright.model.nodeclass import AMISelectorTerm

ARCHITECTURES = {"amd64": "x86_64", "arm64": "arm64"}  # Kubernetes name -> EC2 name
KUBE_ARCH = {v: k for k, v in ARCHITECTURES.items()}
VARIANTS = ("standard", "nvidia")


def variant_of(it: InstanceType) -> tuple[str, str]:
    """(architecture, variant) an instance type needs: the nvidia AMI for NVIDIA GPUs."""
    nvidia = any(g.manufacturer.lower() == "nvidia" for g in it.gpus)
    return (it.architecture, "nvidia" if nvidia else "standard")


def alias_parameter(alias: str, k8s_version: str, architecture: str, variant: str) -> str:
    """The public SSM parameter holding the AMI id for an alias, a Kubernetes version, an architecture
    (Kubernetes name) and a variant. ValueError for an unknown family."""
    family, _, version = alias.partition("@")
    family = family.lower()
    version = version or "latest"
    arch = ARCHITECTURES[architecture]
    if family == "al2023":
        if version == "latest":
            return (
                f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2023/{arch}/{variant}/recommended/image_id"
            )
        name = f"amazon-eks-node-al2023-{arch}-{variant}-{k8s_version}-{version}"
        return f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2023/{arch}/{variant}/{name}/image_id"
    if family == "bottlerocket":
        suffix = "-nvidia" if variant == "nvidia" else ""
        release = "latest" if version == "latest" else version.removeprefix("v")
        return f"/aws/service/bottlerocket/aws-k8s-{k8s_version}{suffix}/{arch}/{release}/image_id"
    raise ValueError(f"AMI alias family {family!r} is not supported (al2023 or bottlerocket)")


def image_filters(term: AMISelectorTerm) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """DescribeImages (ImageIds, Filters, Owners) for one non-alias term."""
    if term.id:
        return [term.id], [], []
    filters: list[dict[str, Any]] = []
    if term.name:
        filters.append({"Name": "name", "Values": [term.name]})
    for key, value in sorted(term.tags.items()):
        if value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [value]})
    owners = [term.owner] if term.owner else []
    return [], filters, owners


def newest_per_architecture(images: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Kubernetes architecture -> the newest image (by CreationDate, then id) among DescribeImages results."""
    best: dict[str, Mapping[str, Any]] = {}
    for image in sorted(images, key=lambda i: (str(i.get("CreationDate", "")), str(i.get("ImageId", "")))):
        arch = KUBE_ARCH.get(str(image.get("Architecture", "")))
        if arch is not None:
            best[arch] = image
    return best
