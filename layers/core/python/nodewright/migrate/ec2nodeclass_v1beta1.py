"""karpenter.k8s.aws/v1beta1 EC2NodeClass -> nodewright.io/v1 EC2NodeClass.

Follows `ConvertFrom` in aws/karpenter-provider-aws `pkg/apis/v1/ec2nodeclass_conversion.go` (v1.0.8) and the
v1 migration guide: an AMI family with no amiSelectorTerms becomes an alias (`al2023@latest`, ...), a family with
terms is kept beside them; Ubuntu becomes AL2 with the Ubuntu root volume (20Gi gp3 at /dev/sda1) unless block
devices are set, and needs amiSelectorTerms. Where v1 changed a default, the old one is written out so nodes do
not change: the IMDS hop limit (2 before v1, 1 in v1).
"""

from __future__ import annotations

import copy
from typing import Any

from nodewright.migrate.common import Converted, Options, check_fields, fail, new_metadata, node_class, spec_of

FIELDS = (
    "amiFamily",
    "amiSelectorTerms",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "role",
    "instanceProfile",
    "userData",
    "blockDeviceMappings",
    "metadataOptions",
    "tags",
    "associatePublicIPAddress",
    "detailedMonitoring",
    "instanceStorePolicy",
    "context",
)
# Families Karpenter v1 names by an alias (ec2nodeclass_conversion.go's switch).
ALIAS_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022")
# Before v1 every metadataOptions field had this default; v1 lowered the hop limit to 1.
OLD_METADATA_DEFAULTS = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 2,
    "httpTokens": "required",
}
# Karpenter's Ubuntu default block device, which v1 writes out when it turns Ubuntu into AL2.
UBUNTU_ROOT_VOLUME = {
    "deviceName": "/dev/sda1",
    "rootVolume": True,
    "ebs": {"encrypted": True, "volumeType": "gp3", "volumeSize": "20Gi"},
}
# Karpenter v1alpha1's restricted tag keys (pkg/apis/v1alpha1/register.go) and v1's (pkg/apis/v1/labels.go).
RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster/"
RESTRICTED_TAGS = (
    "karpenter.sh/provisioner-name",
    "karpenter.sh/managed-by",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
    "eks:eks-cluster-name",
)


def convert(doc: dict[str, Any], options: Options) -> Converted:
    """A v1beta1 EC2NodeClass document as a nodewright.io/v1 EC2NodeClass."""
    spec = spec_of(doc)
    check_fields(doc, spec, "spec", FIELDS)
    if "amiFamily" not in spec:
        raise fail(doc, "spec.amiFamily", "is required in v1beta1; set the family the nodes run (e.g. AL2023)")
    return Converted(node_class(new_metadata(doc), v1_spec(doc, spec, options)))


def v1_spec(
    doc: dict[str, Any], spec: dict[str, Any], options: Options, path: str = "spec", ami_field: str = "amiSelectorTerms"
) -> dict[str, Any]:
    """A v1beta1-shaped EC2NodeClass spec (selector terms, amiFamily, ...) as a v1 spec.

    Errors name `doc` and the field under `path`, the AMI selector as `ami_field` (v1alpha1 called it amiSelector).
    """
    out = copy.deepcopy(spec)
    if not out.get("subnetSelectorTerms"):
        raise fail(
            doc,
            f"{path}.subnetSelectorTerms",
            "is missing; nodes need subnets (e.g. - tags: {karpenter.sh/discovery: my-cluster})",
        )
    if not out.get("securityGroupSelectorTerms"):
        raise fail(
            doc,
            f"{path}.securityGroupSelectorTerms",
            "is missing; nodes need security groups (e.g. - tags: {karpenter.sh/discovery: my-cluster})",
        )
    _check_tags(doc, out.get("tags") or {}, f"{path}.tags")
    terms = out.pop("amiSelectorTerms", None) or []
    out.update(_ami(doc, str(out.pop("amiFamily")), terms, out, path, f"{path}.{ami_field}"))
    if "role" not in out and "instanceProfile" not in out:
        out["role"] = options.role
    out["metadataOptions"] = {**OLD_METADATA_DEFAULTS, **(out.get("metadataOptions") or {})}
    first = (
        "amiFamily",
        "amiSelectorTerms",
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "role",
        "instanceProfile",
    )
    return {**{key: out[key] for key in first if key in out}, **out}


def _ami(
    doc: dict[str, Any], family: str, terms: list[Any], spec: dict[str, Any], path: str, ami_path: str
) -> dict[str, Any]:
    """amiFamily / amiSelectorTerms (and, for Ubuntu, blockDeviceMappings) as v1 writes them."""
    if family in ALIAS_FAMILIES:
        if not terms:
            return {"amiSelectorTerms": [{"alias": f"{family.lower()}@latest"}]}
        return {"amiFamily": family, "amiSelectorTerms": terms}
    if family == "Ubuntu":
        if not terms:
            raise fail(
                doc,
                f"{path}.amiFamily",
                "Ubuntu has no AMI alias in Karpenter v1 (nor in nodewright); add "
                "amiSelectorTerms naming your Ubuntu AMIs (they then boot as AL2), or use AL2023",
            )
        out: dict[str, Any] = {"amiFamily": "AL2", "amiSelectorTerms": terms}
        if not spec.get("blockDeviceMappings"):
            out["blockDeviceMappings"] = [copy.deepcopy(UBUNTU_ROOT_VOLUME)]
        return out
    if family == "Custom":
        if not terms:
            raise fail(doc, ami_path, "amiFamily Custom needs AMI selector terms naming the AMIs")
        return {"amiFamily": "Custom", "amiSelectorTerms": terms}
    raise fail(
        doc,
        f"{path}.amiFamily",
        f'"{family}" is not an AMI family; use AL2, AL2023, Bottlerocket, Ubuntu, Windows2019, Windows2022 or Custom',
    )


def _check_tags(doc: dict[str, Any], tags: dict[str, Any], path: str) -> None:
    for key in tags:
        if str(key).startswith(RESTRICTED_TAG_PREFIX) or key in RESTRICTED_TAGS:
            raise fail(
                doc,
                f"{path}[{key}]",
                "is a restricted tag (Karpenter and nodewright set it on their own instances); remove it",
            )
