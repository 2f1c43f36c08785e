"""karpenter.k8s.aws/v1alpha1 AWSNodeTemplate (and a v1alpha5 Provisioner's inline `provider`) -> nodewright.io/v1
EC2NodeClass.

Selector maps become selector terms as aws/karpenter-provider-aws `pkg/utils/nodeclass/nodeclass.go` (v0.32.10)
builds them: keys in sorted order, comma-separated values expanded into one term per combination, `aws-ids` /
`aws::ids` into `id` terms, and for AMIs every `aws::owners` x `aws::name` x tags combination. An unset amiFamily
meant AL2. The v1beta1 spec that gives is then converted to v1 as `ec2nodeclass_v1beta1` does.
"""

from __future__ import annotations

from typing import Any

from nodewright.migrate import ec2nodeclass_v1beta1
from nodewright.migrate.common import Converted, Options, check_fields, fail, new_metadata, node_class, spec_of

# v1alpha1's inline AWS provider fields (pkg/apis/v1alpha1/provider.go) and the template's own.
PROVIDER_FIELDS = (
    "amiFamily",
    "context",
    "instanceProfile",
    "subnetSelector",
    "securityGroupSelector",
    "tags",
    "launchTemplate",
    "metadataOptions",
    "blockDeviceMappings",
)
TEMPLATE_FIELDS = (*PROVIDER_FIELDS, "amiSelector", "userData", "detailedMonitoring")
ID_KEYS = ("aws-ids", "aws::ids")


def convert(doc: dict[str, Any], options: Options) -> Converted:
    """An AWSNodeTemplate document as a nodewright.io/v1 EC2NodeClass of the same name."""
    spec = spec_of(doc)
    check_fields(doc, spec, "spec", TEMPLATE_FIELDS)
    return Converted(node_class(new_metadata(doc), v1_spec(doc, spec, options)))


def from_provider(doc: dict[str, Any], provider: Any, options: Options) -> Converted:
    """A Provisioner's inline `spec.provider` as an EC2NodeClass named after the Provisioner."""
    if not isinstance(provider, dict):
        raise fail(doc, "spec.provider", "must be a map of AWS settings")
    check_fields(doc, provider, "spec.provider", PROVIDER_FIELDS)
    name = str(doc["metadata"]["name"])
    return Converted(node_class({"name": name}, v1_spec(doc, provider, options, "spec.provider")))


def v1_spec(doc: dict[str, Any], spec: dict[str, Any], options: Options, path: str = "spec") -> dict[str, Any]:
    """A v1alpha1 AWS spec (`spec` of a template, or a provider) as a nodewright v1 EC2NodeClass spec."""
    if "launchTemplate" in spec:
        raise fail(
            doc,
            f"{path}.launchTemplate",
            "custom launch templates cannot be converted (Karpenter v1beta1 "
            "dropped them too); move the settings into amiSelector, userData, blockDeviceMappings and "
            "metadataOptions and remove launchTemplate",
        )
    if not spec.get("subnetSelector"):
        raise fail(
            doc,
            f"{path}.subnetSelector",
            "is missing; nodes need subnets, e.g. subnetSelector: {karpenter.sh/discovery: my-cluster}",
        )
    if not spec.get("securityGroupSelector"):
        raise fail(
            doc,
            f"{path}.securityGroupSelector",
            "is missing; nodes need security groups, e.g. securityGroupSelector: {karpenter.sh/discovery: my-cluster}",
        )
    out: dict[str, Any] = {
        "amiFamily": spec.get("amiFamily") or "AL2",
        "subnetSelectorTerms": _terms(doc, spec["subnetSelector"], f"{path}.subnetSelector", ()),
        "securityGroupSelectorTerms": _terms(doc, spec["securityGroupSelector"], f"{path}.securityGroupSelector", ()),
    }
    if spec.get("amiSelector"):
        out["amiSelectorTerms"] = _terms(doc, spec["amiSelector"], f"{path}.amiSelector", ("aws::owners", "aws::name"))
    for key in (
        "instanceProfile",
        "userData",
        "blockDeviceMappings",
        "metadataOptions",
        "detailedMonitoring",
        "tags",
        "context",
    ):
        if key in spec:
            out[key] = spec[key]
    return ec2nodeclass_v1beta1.v1_spec(doc, out, options, path, "amiSelector")


def _split(value: Any) -> list[str]:
    return [part.strip() for part in str(value).split(",")]


def _terms(doc: dict[str, Any], selector: Any, path: str, special: tuple[str, ...]) -> list[dict[str, Any]]:
    """A selector map as selector terms (nodeclass.go's New*SelectorTerms).

    `special` names the keys that are term fields rather than tags (`aws::owners` -> owner, `aws::name` -> name).
    """
    if not isinstance(selector, dict):
        raise fail(doc, path, "must be a map of tag keys (or aws::ids) to values")
    id_keys = [key for key in selector if key in ID_KEYS]
    if id_keys and len(selector) > 1:
        raise fail(
            doc,
            f"{path}[{id_keys[0]}]",
            "cannot be combined with other keys (Karpenter v1alpha1 refused "
            "it too); keep only the IDs, or drop them and select by tags",
        )
    if id_keys:
        return [{"id": part} for part in _split(selector[id_keys[0]])]
    tag_sets: list[dict[str, str]] = [{}]
    fields: dict[str, list[str]] = {"aws::owners": [""], "aws::name": [""]}
    for key in sorted(selector):
        value = selector[key]
        if key in special:
            fields[key] = _split(value)
        elif key.startswith("aws::") or key == "aws-ids":
            raise fail(
                doc,
                f"{path}[{key}]",
                "is not a key v1alpha1 understood here; use tags, aws::ids"
                + (", aws::name or aws::owners" if special else ""),
            )
        else:
            tag_sets = [{**tags, key: part} for part in _split(value) for tags in tag_sets]
    terms: list[dict[str, Any]] = []
    for owner in fields["aws::owners"]:
        for name in fields["aws::name"]:
            for tags in tag_sets:
                term: dict[str, Any] = {}
                if tags:
                    term["tags"] = tags
                if name:
                    term["name"] = name
                if owner:
                    term["owner"] = owner
                terms.append(term)
    if any(set(term) == {"owner"} for term in terms):
        raise fail(doc, f"{path}[aws::owners]", "needs aws::name or tags beside it; owners alone select nothing")
    return terms
