"""karpenter.sh/v1alpha5 Provisioner -> nodewright.io/v1 NodePool (and an EC2NodeClass for an inline provider).

Follows kubernetes-sigs/karpenter `pkg/utils/nodepool/nodepool.go` (v0.32.3) and karpenter-convert (v0.32.10),
then v1's conversion, in one step:
- `consolidation.enabled: true` -> WhenEmptyOrUnderutilized, consolidateAfter 0s;
- `ttlSecondsAfterEmpty: N` -> WhenEmpty, consolidateAfter Ns; with neither, v1alpha5 removed no node for being
  empty or underused, so WhenEmpty with consolidateAfter Never (v1 would otherwise consolidate);
- `ttlSecondsUntilExpired: N` -> spec.template.spec.expireAfter; absent meant never (v1's default is 720h);
- `providerRef` -> nodeClassRef, inline `provider` -> an EC2NodeClass named after the Provisioner;
- `limits.resources` -> limits; labels, annotations, taints, startupTaints, requirements, weight carried;
- `kubeletConfiguration` -> the EC2NodeClass's kubelet;
- v1alpha5's defaulted requirements (linux, amd64, on-demand, c/m/r generation > 2) written out, as its webhook
  added them, unless Options.ignore_defaults.
"""

from __future__ import annotations

import copy
from typing import Any

from nodewright.migrate import awsnodetemplate_v1alpha1, kubelet
from nodewright.migrate.common import (
    API_VERSION,
    Converted,
    Options,
    check_fields,
    fail,
    new_metadata,
    node_class_ref,
    seconds,
    spec_of,
)

SPEC_FIELDS = (
    "providerRef",
    "provider",
    "taints",
    "startupTaints",
    "labels",
    "annotations",
    "requirements",
    "kubeletConfiguration",
    "limits",
    "consolidation",
    "ttlSecondsAfterEmpty",
    "ttlSecondsUntilExpired",
    "weight",
)
OS, ARCH, CAPACITY_TYPE = "kubernetes.io/os", "kubernetes.io/arch", "karpenter.sh/capacity-type"
CATEGORY, GENERATION = "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-generation"
# Any of these kept v1alpha5 from adding its instance category / generation default.
INSTANCE_KEYS = ("node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family", CATEGORY, GENERATION)


def convert(doc: dict[str, Any], options: Options) -> list[Converted]:
    """A Provisioner document as a NodePool (its kubelet still to be placed), then the EC2NodeClass made from its
    inline provider if it has one."""
    spec = spec_of(doc)
    check_fields(doc, spec, "spec", SPEC_FIELDS)
    name = new_metadata(doc)["name"]
    if "provider" in spec and "providerRef" in spec:
        raise fail(doc, "spec.provider", "cannot be set with spec.providerRef (v1alpha5 refused it too); keep one")
    classes: list[Converted] = []
    if "provider" in spec:
        classes.append(awsnodetemplate_v1alpha1.from_provider(doc, spec["provider"], options))
        class_name = name
    else:
        ref = spec.get("providerRef")
        if not isinstance(ref, dict) or not ref.get("name"):
            raise fail(
                doc,
                "spec.providerRef",
                "is missing; name the AWSNodeTemplate (providerRef: {name: default}) or set spec.provider",
            )
        class_name = str(ref["name"])
    notes: list[str] = []
    node_spec: dict[str, Any] = {
        "nodeClassRef": node_class_ref(class_name),
        "expireAfter": (
            seconds(doc, spec["ttlSecondsUntilExpired"], "spec.ttlSecondsUntilExpired")
            if "ttlSecondsUntilExpired" in spec
            else "Never"
        ),
    }
    requirements = copy.deepcopy(spec.get("requirements") or [])
    if not options.ignore_defaults:
        requirements = with_defaults(requirements)
    # v1 requires the field; an empty list allows every instance type, as no requirements did.
    node_spec["requirements"] = requirements
    for key in ("taints", "startupTaints"):
        if spec.get(key):
            node_spec[key] = spec[key]
    template: dict[str, Any] = {}
    metadata = {key: spec[key] for key in ("labels", "annotations") if spec.get(key)}
    if metadata:
        template["metadata"] = metadata
    template["spec"] = node_spec
    new_spec: dict[str, Any] = {"template": template, "disruption": _disruption(doc, spec)}
    limits = spec.get("limits")
    if isinstance(limits, dict) and limits.get("resources"):
        new_spec["limits"] = limits["resources"]
    if "weight" in spec:
        new_spec["weight"] = spec["weight"]
    settings = kubelet.read(doc, spec.get("kubeletConfiguration"), "spec.kubeletConfiguration", notes)
    pool = {"apiVersion": API_VERSION, "kind": "NodePool", "metadata": new_metadata(doc), "spec": new_spec}
    return [Converted(pool, settings, notes), *classes]


def _disruption(doc: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    consolidation = spec.get("consolidation") or {}
    if not isinstance(consolidation, dict):
        raise fail(doc, "spec.consolidation", "must be a map such as {enabled: true}")
    enabled = consolidation.get("enabled") is True
    if enabled and "ttlSecondsAfterEmpty" in spec:
        raise fail(
            doc,
            "spec.ttlSecondsAfterEmpty",
            "cannot be set with consolidation.enabled: true (v1alpha5 refused it too); remove one",
        )
    if enabled:
        return {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    if "ttlSecondsAfterEmpty" in spec:
        after = seconds(doc, spec["ttlSecondsAfterEmpty"], "spec.ttlSecondsAfterEmpty")
        return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": after}
    return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}


def with_defaults(requirements: list[Any]) -> list[Any]:
    """`requirements` with v1alpha5's defaults appended where the key was not constrained (Provisioner.SetDefaults
    in aws/karpenter-provider-aws pkg/apis/v1alpha5/provisioner.go)."""
    keys = {r.get("key") for r in requirements if isinstance(r, dict)}
    out = list(requirements)
    if OS not in keys:
        out.append({"key": OS, "operator": "In", "values": ["linux"]})
    if ARCH not in keys:
        out.append({"key": ARCH, "operator": "In", "values": ["amd64"]})
    if CAPACITY_TYPE not in keys:
        out.append({"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]})
    if not keys.intersection(INSTANCE_KEYS):
        out.append({"key": CATEGORY, "operator": "In", "values": ["c", "m", "r"]})
        out.append({"key": GENERATION, "operator": "Gt", "values": ["2"]})
    return out
