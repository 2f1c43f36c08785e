"""Which AMI an EC2NodeClass means: public SSM parameters for aliases, DescribeImages filters otherwise.

Aliases (`al2023@latest`, `al2023@v20240807`, `bottlerocket@latest`, `bottlerocket@1.20.0`, `al2@latest`,
`al2@v20240807`, `windows2019@latest`, `windows2022@latest`, `windows2025@latest`) resolve per architecture and
variant (standard, or nvidia for NVIDIA GPU types) through the public parameters EKS and Bottlerocket publish,
the paths Karpenter v1.14 reads (`amifamily/al2023.go`, `bottlerocket.go`, `al2.go`, `windows.go`). AL2 has one
GPU image (x86_64 only) and Windows one x86_64 image for every instance type, GPU or not.

Other terms (id, name with owner, tags, ssmParameter) become DescribeImages
requests as Karpenter builds them, and of all the images they find, the one Karpenter would pick per
architecture wins: not deprecated, newest, greatest name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
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
    if family == "al2":
        return _al2_parameter(version, k8s_version, architecture, variant)
    if family in WINDOWS_VERSIONS:
        if architecture != "amd64":
            raise ValueError(f"{family} has no {architecture} image: Windows nodes are amd64 only")
        year = WINDOWS_VERSIONS[family]
        return (
            f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s_version}/image_id"
        )
    raise ValueError(f"AMI alias family {family!r} is not supported (al2023, bottlerocket, al2, windows2019/2022/2025)")


# Windows alias family -> the Windows Server year in its SSM parameter (Karpenter's Windows.Version).
WINDOWS_VERSIONS = {"windows2019": "2019", "windows2022": "2022", "windows2025": "2025"}


def _al2_parameter(version: str, k8s_version: str, architecture: str, variant: str) -> str:
    """Karpenter's AL2 paths: amazon-linux-2 (x86_64), -arm64, and -gpu (x86_64, NVIDIA and Neuron types)."""
    if variant == "nvidia":
        if architecture != "amd64":
            raise ValueError("al2 has no arm64 GPU image")
        path, name = "amazon-linux-2-gpu", "amazon-eks-gpu-node"
    elif architecture == "arm64":
        path, name = "amazon-linux-2-arm64", "amazon-eks-arm64-node"
    else:
        path, name = "amazon-linux-2", "amazon-eks-node"
    release = "recommended" if version == "latest" else f"{name}-{k8s_version}-{version}"
    return f"/aws/service/eks/optimized-ami/{k8s_version}/{path}/{release}/image_id"


def alias_parameters(alias: str, k8s_version: str) -> dict[str, list[tuple[str, str]]]:
    """Every public SSM parameter an alias reads for a Kubernetes version, each with the (architecture,
    variant) pairs its image serves: Windows' one image serves x86_64 standard and GPU types alike, and
    arm64 has none. ValueError for an unknown family."""
    out: dict[str, list[tuple[str, str]]] = {}
    errors: list[ValueError] = []
    for architecture in ARCHITECTURES:
        for variant in VARIANTS:
            try:
                name = alias_parameter(alias, k8s_version, architecture, variant)
            except ValueError as error:
                errors.append(error)
                continue
            out.setdefault(name, []).append((architecture, variant))
    if not out:
        raise errors[0]
    return out


@dataclass(frozen=True, slots=True)
class ImageQuery:
    """One DescribeImages request for non-alias amiSelectorTerms (Karpenter's DescribeImageQuery)."""

    filters: tuple[tuple[str, tuple[str, ...]], ...]
    owners: tuple[str, ...] = ()

    def request(self) -> dict[str, Any]:
        """DescribeImages parameters: available images only, deprecated ones included (they lose to any other)."""
        filters = [{"Name": name, "Values": list(values)} for name, values in self.filters]
        request: dict[str, Any] = {
            "Filters": [*filters, {"Name": "state", "Values": ["available"]}],
            "IncludeDeprecated": True,
        }
        if self.owners:
            request["Owners"] = list(self.owners)
        return request


def image_queries(terms: Sequence[AMISelectorTerm], ssm_images: Mapping[str, str]) -> list[ImageQuery]:
    """The DescribeImages requests for non-alias terms, as Karpenter builds them.

    One request per name or tags term (a name without an owner looks in the account's own and Amazon's
    images only, so a public image that happens to share the name is never picked); every id term and every
    ssmParameter term (resolved through `ssm_images`: parameter -> value, values that are no AMI id left
    out) share one `image-id` request.
    """
    ids: list[str] = []
    queries: list[ImageQuery] = []
    for term in terms:
        if term.id:
            ids.append(term.id)
        elif term.ssm_parameter:
            value = ssm_images.get(term.ssm_parameter, "")
            if value.startswith("ami-"):
                ids.append(value)
        elif term.name or term.tags:
            filters = [("name", (term.name,))] if term.name else []
            filters += [("tag-key", (k,)) if v == "*" else (f"tag:{k}", (v,)) for k, v in sorted(term.tags.items())]
            owners = (term.owner,) if term.owner else (("self", "amazon") if term.name else ())
            queries.append(ImageQuery(tuple(filters), owners))
    if ids:
        queries.append(ImageQuery((("image-id", tuple(dict.fromkeys(ids))),)))
    return queries


_NEVER = -(2**63)


def _seconds(stamp: object) -> int:
    """An EC2 timestamp (ISO 8601 text, or a datetime from botocore) in whole seconds; missing sorts first."""
    if isinstance(stamp, datetime):
        return int(stamp.timestamp())
    if isinstance(stamp, str) and stamp:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
    return _NEVER


def _better(candidate: Mapping[str, Any], current: Mapping[str, Any], now: float) -> bool:
    """Karpenter's compareAMI: not deprecated beats deprecated, then the later creation (whole seconds), then the
    greater name; ids break what is left so the choice never depends on the order EC2 returned them in."""

    def key(image: Mapping[str, Any]) -> tuple[bool, int, str, str]:
        deprecated = "DeprecationTime" in image and _seconds(image["DeprecationTime"]) <= now
        return (
            deprecated,
            _seconds(image.get("CreationDate")),
            str(image.get("Name", "")),
            str(image.get("ImageId", "")),
        )

    c_deprecated, c_created, c_name, c_id = key(candidate)
    k_deprecated, k_created, k_name, k_id = key(current)
    if c_deprecated != k_deprecated:
        return not c_deprecated
    if c_created != k_created:
        return c_created > k_created
    if c_name != k_name:
        return c_name > k_name
    return c_id < k_id


def newest_per_architecture(images: Sequence[Mapping[str, Any]], now: float) -> dict[str, Mapping[str, Any]]:
    """Kubernetes architecture -> the image Karpenter picks among DescribeImages results: not deprecated at `now`
    (seconds since the epoch) over deprecated, then the newest CreationDate, then the greatest name.

    Every instance type of an architecture gets its image (non-alias terms say nothing about GPUs).
    Images of other architectures (i386, x86_64_mac) are ignored.
    """
    best: dict[str, Mapping[str, Any]] = {}
    for image in images:
        arch = KUBE_ARCH.get(str(image.get("Architecture", "")))
        if arch is not None and (arch not in best or _better(image, best[arch], now)):
            best[arch] = image
    return best
