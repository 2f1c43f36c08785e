"""Write nodewright's CustomResourceDefinitions (nodewright.io/v1 NodePool, EC2NodeClass, NodeClaim and
nodewright.io/v1alpha1 NodeOverlay) as YAML.

`python scripts/gen_crds.py` rewrites the four files in charts/nodewright/crds/ (Helm installs them before
the chart's templates) and the same four, as templates, in charts/nodewright-crd/templates/ (the CRD-only
chart, as Karpenter's karpenter-crd, for installing and upgrading the CRDs with Helm); a unit test fails when
either copy differs from what this script produces, so edit the schema here, never the YAML.

Short names: `np` (NodePool) and `nc` (NodeClaim), which Karpenter's CRDs do not use, and `nwec2nc` for the
EC2NodeClass, because Karpenter's EC2NodeClass (v1.14.1) has `ec2nc` and `ec2ncs`: with both installed,
`kubectl get ec2nc` must keep meaning Karpenter's; likewise `nwoverlay` for the NodeOverlay, whose Karpenter
CRD has `overlays`.

`--group G` writes the same schemas for another API group to stdout: the end-to-end tests install
Karpenter's groups that way (karpenter.sh, karpenter.k8s.aws) to prove nodewright leaves Karpenter's objects
alone.

The schemas are structural and follow Karpenter v1's field names and types (karpenter.sh/v1 NodePool and
NodeClaim, karpenter.k8s.aws/v1 EC2NodeClass), so a Karpenter manifest with its apiVersion changed applies
unchanged. They reject wrong types, unknown enum values, malformed durations and quantities at admission
(kubectl's default strict field validation also refuses unknown fields instead of pruning them silently).
The validation of record is nodewright's loader (nodewright.model.parse), which checks much more
(cross-field rules, cron schedules, label syntax) and names what nodewright does not support yet; the CRD
only keeps obviously wrong objects out of the cluster. No `x-kubernetes-preserve-unknown-fields` is used.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

GROUP = "nodewright.io"
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "charts" / "nodewright" / "crds"
CRD_CHART_OUT = ROOT / "charts" / "nodewright-crd" / "templates"

# ----------------------------------------------------------------------------------- shared pieces

DURATION = r"^([0-9]+(s|m|h))+$"
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def integer(**extra: Any) -> dict[str, Any]:
    return {"type": "integer", **extra}


def boolean() -> dict[str, Any]:
    return {"type": "boolean"}


def obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out.update(extra)
    return out


def array(items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **extra}


def string_map(**extra: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": {"type": "string"}, **extra}


def quantity() -> dict[str, Any]:
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True, "pattern": QUANTITY}


def quantity_map() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": quantity()}


def taints() -> dict[str, Any]:
    return array(
        obj(
            {
                "key": string(minLength=1),
                "value": string(),
                "effect": string(enum=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
                "timeAdded": string(format="date-time"),
            },
            required=["key", "effect"],
        )
    )


def requirements(max_items: int = 100) -> dict[str, Any]:
    return array(
        obj(
            {
                "key": string(maxLength=316),
                "operator": string(enum=["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]),
                "values": array(string(), **{"x-kubernetes-list-type": "atomic"}),
                "minValues": integer(minimum=1, maximum=50),
            },
            required=["key", "operator"],
            **{
                "x-kubernetes-validations": [
                    {
                        "rule": "self.operator != 'In' || (has(self.values) && size(self.values) > 0)",
                        "message": "In needs at least one value",
                    },
                    {
                        "rule": "!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || "
                        "(has(self.values) && size(self.values) == 1)",
                        "message": "Gt, Lt, Gte and Lte take exactly one value",
                    },
                ]
            },
        ),
        maxItems=max_items,
    )


def node_class_ref() -> dict[str, Any]:
    return obj(
        {
            "group": string(minLength=1, pattern=r"^[^/]*$"),
            "kind": string(minLength=1),
            "name": string(minLength=1),
        },
        required=["group", "kind", "name"],
    )


def conditions() -> dict[str, Any]:
    return array(
        obj(
            {
                "type": string(minLength=1, maxLength=316),
                "status": string(enum=["True", "False", "Unknown"]),
                "reason": string(maxLength=1024),
                "message": string(maxLength=32768),
                "lastTransitionTime": string(format="date-time"),
                "observedGeneration": integer(format="int64", minimum=0),
            },
            required=["type", "status"],
        )
    )


def tag_terms(fields: dict[str, Any]) -> dict[str, Any]:
    return array(obj(fields), minItems=1, maxItems=30)


def tags() -> dict[str, Any]:
    return string_map(maxProperties=20)


def column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        out["priority"] = priority
    return out


def crd(
    kind: str,
    plural: str,
    short: list[str],
    spec: dict[str, Any],
    status: dict[str, Any],
    columns: list[Any],
    version: str = "v1",
    scale: dict[str, str] | None = None,
) -> dict[str, Any]:
    subresources: dict[str, Any] = {"status": {}}
    if scale is not None:
        subresources["scale"] = scale
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}", "labels": {"app.kubernetes.io/part-of": "nodewright"}},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
                "categories": ["nodewright"],
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": subresources,
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": obj(
                            {
                                "apiVersion": string(),
                                "kind": string(),
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                            required=["spec"],
                        )
                    },
                }
            ],
        },
    }


READY = '.status.conditions[?(@.type=="Ready")].status'
AGE = column("Age", ".metadata.creationTimestamp", "date")

# ----------------------------------------------------------------------------------------- NodePool


# Karpenter v1.14's rules for static NodePools (pkg/apis/v1/nodepool.go): a pool cannot move between static
# (spec.replicas set) and dynamic provisioning after creation, and a static pool has no limit but limits.nodes and
# no weight. nodewright's loader checks the same (`model.parse`).
STATIC_RULES = [
    {
        "rule": "has(self.replicas) == has(oldSelf.replicas)",
        "message": "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) "
        "provisioning modes",
    },
    {
        "rule": "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
        "(size(self.limits) == 1 && 'nodes' in self.limits))",
        "message": "only 'limits.nodes' is supported on static NodePools",
    },
    {"rule": "!has(self.replicas) || !has(self.weight)", "message": "'weight' is not supported on static NodePools"},
]
# `kubectl scale nodepool NAME --replicas=N` writes spec.replicas; status.nodes is the pool's current size.
NODEPOOL_SCALE = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.nodes"}


def nodepool() -> dict[str, Any]:
    budget = obj(
        {
            "nodes": string(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$", default="10%"),
            "schedule": string(),
            "duration": string(pattern=r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"),
            "reasons": array(string(enum=["Underutilized", "Empty", "Drifted"])),
        },
        required=["nodes"],
        **{
            "x-kubernetes-validations": [
                {"rule": "has(self.schedule) == has(self.duration)", "message": "set schedule and duration together"}
            ]
        },
    )
    spec = obj(
        {
            "template": obj(
                {
                    "metadata": obj({"labels": string_map(maxProperties=100), "annotations": string_map()}),
                    "spec": obj(
                        {
                            "nodeClassRef": node_class_ref(),
                            "requirements": requirements(),
                            "taints": taints(),
                            "startupTaints": taints(),
                            "expireAfter": string(pattern=DURATION_OR_NEVER, default="720h"),
                            "terminationGracePeriod": string(pattern=DURATION),
                        },
                        required=["nodeClassRef", "requirements"],
                    ),
                },
                required=["spec"],
            ),
            "disruption": obj(
                {
                    "consolidationPolicy": string(
                        enum=["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"],
                        default="WhenEmptyOrUnderutilized",
                    ),
                    "consolidateAfter": string(pattern=DURATION_OR_NEVER),
                    "budgets": array(budget, maxItems=50, default=[{"nodes": "10%"}]),
                },
                required=["consolidateAfter"],
                default={"consolidateAfter": "0s"},
            ),
            "limits": quantity_map(),
            "weight": integer(format="int32", minimum=1, maximum=100),
            "replicas": integer(format="int64", minimum=0),
        },
        required=["template"],
        **{"x-kubernetes-validations": STATIC_RULES},
    )
    status = obj(
        {
            "conditions": conditions(),
            "resources": quantity_map(),
            "nodes": integer(format="int64"),
        }
    )
    # Karpenter v1.9.1's columns (pkg/apis/v1/nodepool.go), filled by nodewright.service.status.
    columns = [
        column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        column("Nodes", ".status.nodes"),
        column("Ready", READY),
        AGE,
        column("Weight", ".spec.weight", "integer", priority=1),
        column("CPU", ".status.resources.cpu", priority=1),
        column("Memory", ".status.resources.memory", priority=1),
    ]
    return crd("NodePool", "nodepools", ["np"], spec, status, columns, scale=NODEPOOL_SCALE)


# ------------------------------------------------------------------------------------- EC2NodeClass


def ec2nodeclass() -> dict[str, Any]:
    ebs = obj(
        {
            # Karpenter's quantity restricted to whole Gi/G/Ti/T, as the loader checks it.
            "volumeSize": string(pattern="^[1-9][0-9]*(Gi|G|Ti|T)$"),
            "volumeType": string(enum=["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"]),
            "iops": integer(format="int64", minimum=100, maximum=256000),
            "throughput": integer(format="int64", minimum=125, maximum=1000),
            "encrypted": boolean(),
            "kmsKeyID": string(),
            "deleteOnTermination": boolean(),
            "snapshotID": string(),
            "volumeInitializationRate": integer(format="int32", minimum=100, maximum=300),
        }
    )
    kubelet = obj(
        {
            "clusterDNS": array(string()),
            "maxPods": integer(format="int32", minimum=0),
            "podsPerCore": integer(format="int32", minimum=0),
            "systemReserved": string_map(),
            "kubeReserved": string_map(),
            "evictionHard": string_map(),
            "evictionSoft": string_map(),
            "evictionSoftGracePeriod": string_map(),
            "evictionMaxPodGracePeriod": integer(format="int32"),
            "imageGCHighThresholdPercent": integer(format="int32", minimum=0, maximum=100),
            "imageGCLowThresholdPercent": integer(format="int32", minimum=0, maximum=100),
            "cpuCFSQuota": boolean(),
        }
    )
    spec = obj(
        {
            "amiFamily": string(
                enum=["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"]
            ),
            "amiSelectorTerms": tag_terms(
                {
                    "alias": string(maxLength=30),
                    "id": string(pattern="^ami-[0-9a-z]+$"),
                    "name": string(),
                    "owner": string(),
                    "tags": tags(),
                    "ssmParameter": string(),
                }
            ),
            "subnetSelectorTerms": tag_terms({"id": string(pattern="^subnet-[0-9a-z]+$"), "tags": tags()}),
            "securityGroupSelectorTerms": tag_terms(
                {"id": string(pattern="^sg-[0-9a-z]+$"), "name": string(), "tags": tags()}
            ),
            "capacityReservationSelectorTerms": array(
                obj({"id": string(pattern="^cr-[0-9a-z]+$"), "ownerID": string(pattern="^[0-9]{12}$"), "tags": tags()}),
                maxItems=30,
            ),
            "role": string(),
            "instanceProfile": string(),
            "userData": string(),
            "tags": string_map(),
            "kubelet": kubelet,
            "blockDeviceMappings": array(
                obj({"deviceName": string(), "rootVolume": boolean(), "ebs": ebs}, required=["deviceName"]),
                maxItems=50,
            ),
            "metadataOptions": obj(
                {
                    "httpEndpoint": string(enum=["enabled", "disabled"]),
                    "httpProtocolIPv6": string(enum=["enabled", "disabled"]),
                    "httpPutResponseHopLimit": integer(format="int64", minimum=1, maximum=64),
                    "httpTokens": string(enum=["required", "optional"]),
                }
            ),
            "associatePublicIPAddress": boolean(),
            "detailedMonitoring": boolean(),
            "instanceStorePolicy": string(enum=["RAID0"]),
            "context": string(),
        },
        required=["amiSelectorTerms", "subnetSelectorTerms", "securityGroupSelectorTerms"],
        **{
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.role) != has(self.instanceProfile)",
                    "message": "set exactly one of role and instanceProfile",
                }
            ]
        },
    )
    status = obj(
        {
            "conditions": conditions(),
            "subnets": array(obj({"id": string(), "zone": string(), "zoneID": string()}, required=["id", "zone"])),
            "securityGroups": array(obj({"id": string(), "name": string()}, required=["id"])),
            "amis": array(
                obj({"id": string(), "name": string(), "requirements": requirements()}, required=["id", "requirements"])
            ),
            "capacityReservations": array(
                obj(
                    {
                        "id": string(),
                        "instanceType": string(),
                        "ownerID": string(),
                        "availabilityZone": string(),
                        "instanceMatchCriteria": string(),
                        "endTime": string(format="date-time"),
                    },
                    required=["id"],
                )
            ),
            "instanceProfile": string(),
        }
    )
    columns = [column("Ready", READY), AGE, column("Role", ".spec.role", priority=1)]
    return crd("EC2NodeClass", "ec2nodeclasses", ["nwec2nc"], spec, status, columns)


# ---------------------------------------------------------------------------------------- NodeClaim


def nodeclaim() -> dict[str, Any]:
    spec = obj(
        {
            "nodeClassRef": node_class_ref(),
            "requirements": requirements(),
            "taints": taints(),
            "startupTaints": taints(),
            "resources": obj({"requests": quantity_map()}),
            "expireAfter": string(pattern=DURATION_OR_NEVER),
            "terminationGracePeriod": string(pattern=DURATION),
        },
        required=["nodeClassRef", "requirements"],
    )
    status = obj(
        {
            "conditions": conditions(),
            "providerID": string(),
            "nodeName": string(),
            "imageID": string(),
            "capacity": quantity_map(),
            "allocatable": quantity_map(),
            "lastPodEventTime": string(format="date-time"),
        }
    )
    label = ".metadata.labels.{}"
    columns = [
        column("Type", label.format(r"node\.kubernetes\.io/instance-type")),
        column("Capacity", label.format(r"karpenter\.sh/capacity-type")),
        column("Zone", label.format(r"topology\.kubernetes\.io/zone")),
        column("Node", ".status.nodeName"),
        column("Ready", READY),
        AGE,
        column("ImageID", ".status.imageID", priority=1),
        column("ID", ".status.providerID", priority=1),
        column("NodePool", label.format(r"karpenter\.sh/nodepool"), priority=1),
        column("NodeClass", ".spec.nodeClassRef.name", priority=1),
        column("Drifted", '.status.conditions[?(@.type=="Drifted")].status', priority=1),
    ]
    return crd("NodeClaim", "nodeclaims", ["nc"], spec, status, columns)


# -------------------------------------------------------------------------------------- NodeOverlay

# Karpenter's patterns (pkg/apis/v1alpha1/nodeoverlay.go): an unsigned decimal price; a signed amount, a "+"
# percentage, or a "-" percentage of at most two integer digits or exactly -100%.
PRICE = r"^\d+(\.\d+)?$"
PRICE_ADJUSTMENT = r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"


def nodeoverlay() -> dict[str, Any]:
    """nodewright.io/v1alpha1 NodeOverlay, with karpenter.sh/v1alpha1's fields and CEL rules."""
    overlay_requirements = requirements()
    item = overlay_requirements["items"]
    item["properties"].pop("minValues")
    item["x-kubernetes-validations"].append(
        {
            "rule": "self.operator != 'NotIn' || (has(self.values) && size(self.values) > 0)",
            "message": "requirements with operator 'NotIn' must have a value defined",
        }
    )
    overlay_requirements["x-kubernetes-list-type"] = "atomic"
    capacity = quantity_map()
    capacity["x-kubernetes-validations"] = [
        {
            "rule": "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",
            "message": "invalid resource restricted",
        }
    ]
    spec = obj(
        {
            "requirements": overlay_requirements,
            "priceAdjustment": string(pattern=PRICE_ADJUSTMENT),
            "price": string(pattern=PRICE),
            "capacity": capacity,
            "weight": integer(format="int32", minimum=1, maximum=10000),
        },
        required=["requirements"],
        **{
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.price) || !has(self.priceAdjustment)",
                    "message": "cannot set both 'price' and 'priceAdjustment'",
                }
            ]
        },
    )
    status = obj({"conditions": conditions()})
    columns = [column("Ready", READY), AGE, column("Weight", ".spec.weight", "integer", priority=1)]
    return crd("NodeOverlay", "nodeoverlays", ["nwoverlay"], spec, status, columns, version="v1alpha1")


# -------------------------------------------------------------------------------------------- write

HEADER = "# Generated by scripts/gen_crds.py; edit that script, not this file.\n"
FILES = {
    "nodewright.io_nodepools.yaml": nodepool,
    "nodewright.io_ec2nodeclasses.yaml": ec2nodeclass,
    "nodewright.io_nodeclaims.yaml": nodeclaim,
    "nodewright.io_nodeoverlays.yaml": nodeoverlay,
}


def render() -> dict[str, str]:
    """File name -> YAML text of every CRD."""
    return {name: HEADER + yaml.safe_dump(build(), sort_keys=False, width=120) for name, build in FILES.items()}


# The CRD chart's templates are the same YAML with Karpenter's `additionalAnnotations` value added to metadata.
CRD_CHART_ANNOTATIONS = """metadata:
  {{- with .Values.additionalAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
"""


def render_crd_chart() -> dict[str, str]:
    """File name -> template text of charts/nodewright-crd/templates (render() with the annotations hook)."""
    out = {}
    for name, text in render().items():
        head, sep, tail = text.partition("\nmetadata:\n")
        assert sep, f"{name}: no metadata"
        out[name] = head + "\n" + CRD_CHART_ANNOTATIONS + tail
    return out


# Where Karpenter v1 serves each kind, and its short names (pkg/apis/crds at v1.14.1).
KARPENTER_GROUPS = {
    "NodePool": "karpenter.sh",
    "NodeClaim": "karpenter.sh",
    "EC2NodeClass": "karpenter.k8s.aws",
    "NodeOverlay": "karpenter.sh",
}
KARPENTER_SHORT_NAMES: dict[str, list[str]] = {"EC2NodeClass": ["ec2nc", "ec2ncs"], "NodeOverlay": ["overlays"]}


def karpenter_crds() -> list[dict[str, Any]]:
    """The same schemas served in Karpenter's groups, as a cluster running Karpenter has them (named like
    Karpenter's, with Karpenter's short names, category `karpenter`)."""
    out = []
    for build in FILES.values():
        doc = build()
        spec = doc["spec"]
        group = KARPENTER_GROUPS[spec["names"]["kind"]]
        spec["group"] = group
        spec["names"]["categories"] = ["karpenter"]
        spec["names"].pop("shortNames", None)
        if spec["names"]["kind"] in KARPENTER_SHORT_NAMES:
            spec["names"]["shortNames"] = KARPENTER_SHORT_NAMES[spec["names"]["kind"]]
        doc["metadata"] = {"name": f"{spec['names']['plural']}.{group}"}
        out.append(doc)
    return out


def main() -> int:
    for out, files in ((OUT, render()), (CRD_CHART_OUT, render_crd_chart())):
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text)
            print(f"wrote {out / name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
