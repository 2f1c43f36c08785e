"""An in-memory Cloud for service tests, a fixed clock, a small real catalog and manifest builders."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.catalog.catalog import CapacityReservation
from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import InstanceType
from nodewright.launch.template import Image, LaunchTemplateSpec, ResolvedNodeClass, Subnet
from nodewright.launch.userdata import ClusterInfo
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import Instance, LaunchError, NodeClassError, Throttled
from nodewright.tags import NODECLAIM as NODECLAIM_TAG
from nodewright.tags import is_owned

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
FAMILIES = ("m5", "m6g", "c5", "c6g", "r5")
_SNAPSHOT = SnapshotSource()


class SmallCatalog:
    """The shipped snapshot restricted to a few families and three zones (fast and realistic)."""

    def __init__(self) -> None:
        self._types: tuple[InstanceType, ...] | None = None

    def instance_types(self) -> Sequence[InstanceType]:
        if self._types is None:
            from dataclasses import replace

            kept = []
            for it in _SNAPSHOT.instance_types():
                if it.family in FAMILIES and it.size in ("large", "xlarge", "2xlarge", "4xlarge"):
                    kept.append(replace(it, offerings=tuple(o for o in it.offerings if o.zone in ZONES)))
            self._types = tuple(kept)
        return self._types


@dataclass
class FixedClock:
    t: float = 1_800_000_000.0

    def now(self) -> float:
        return self.t


@dataclass
class FakeCloud:
    """Launches whatever the first acceptable override says; `refuse` offerings answer ICE in Errors."""

    cluster_log: list[str] = field(default_factory=list)
    refuse: set[tuple[str, str, str]] = field(default_factory=set)
    throttle: bool = False
    reject: str = ""  # when set, CreateFleet refuses every request with this message
    fleets: list[Mapping[str, Any]] = field(default_factory=list)
    answered: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # CreateFleet answers by ClientToken
    templates: dict[str, LaunchTemplateSpec] = field(default_factory=dict)
    instances: dict[str, Instance] = field(default_factory=dict)
    terminated: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)  # EC2NodeClasses whose resolution a launch dropped
    _ids: Iterable[int] = field(default_factory=lambda: itertools.count(1))

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo("demo", "https://api.demo", "Q0EK", "10.100.0.0/16", "1.31")

    def forget_node_class(self, node_class: EC2NodeClass) -> None:
        self.forgotten.append(node_class.name)

    def resolve_node_class(self, node_class: EC2NodeClass, k8s_version: str) -> ResolvedNodeClass:
        resolved = ResolvedNodeClass(
            node_class,
            tuple(Subnet(f"subnet-{z[-1]}", z, 100, f"use1-az{i + 1}") for i, z in enumerate(ZONES)),
            ("sg-1",),
            {
                ("amd64", "standard"): Image("ami-x86", "amd64", "standard", "al2023-x86"),
                ("arm64", "standard"): Image("ami-arm", "arm64", "standard", "al2023-arm"),
            },
            "demo-node-profile",
        )
        if node_class.role and node_class.role != "demo-node":
            message = f"role {node_class.role} is not the node role nodewright may pass (demo-node)"
            failures = {"InstanceProfileReady": ("InstanceProfileNotAllowed", message)}
            raise NodeClassError(message, failures, replace(resolved, instance_profile=""))
        return resolved

    def capacity_reservations(self, resolved: ResolvedNodeClass) -> Sequence[CapacityReservation]:
        return []

    def ensure_launch_template(self, spec: LaunchTemplateSpec, tags: Mapping[str, str]) -> str:
        self.templates[spec.name] = spec
        return spec.name

    def create_fleet(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        tags = {t["Key"]: t["Value"] for t in request["TagSpecifications"][0]["Tags"]}
        self.cluster_log.append(f"fleet nodeclaim/{tags[NODECLAIM_TAG]}")
        self.fleets.append(request)
        token = request.get("ClientToken")
        if token in self.answered:
            return self.answered[token]  # EC2: a repeated idempotency token gets the first request's answer
        answer = self._create_fleet(request, tags)
        if token:
            self.answered[token] = answer
        return answer

    def _create_fleet(self, request: Mapping[str, Any], tags: Mapping[str, str]) -> Mapping[str, Any]:
        if self.throttle:
            raise Throttled("RequestLimitExceeded")
        if self.reject:
            raise LaunchError(self.reject)
        capacity_type = request["TargetCapacitySpecification"]["DefaultTargetCapacityType"]
        errors = []
        for config in request["LaunchTemplateConfigs"]:
            for override in config["Overrides"]:
                offering = (override["InstanceType"], override["AvailabilityZone"], capacity_type)
                if offering in self.refuse:
                    errors.append(
                        {
                            "ErrorCode": "InsufficientInstanceCapacity",
                            "Lifecycle": capacity_type,
                            "LaunchTemplateAndOverrides": {"Overrides": override},
                        }
                    )
                    continue
                instance_id = f"i-{next(iter(self._ids)):08x}"
                self.instances[instance_id] = Instance(
                    instance_id,
                    override["InstanceType"],
                    override["AvailabilityZone"],
                    "running",
                    capacity_type,
                    0.0,
                    tags,
                )
                return {
                    "Errors": errors,
                    "Instances": [
                        {
                            "InstanceIds": [instance_id],
                            "InstanceType": override["InstanceType"],
                            "Lifecycle": capacity_type,
                            "LaunchTemplateAndOverrides": {"Overrides": override},
                        }
                    ],
                }
        return {"Errors": errors, "Instances": []}

    def instances_of_nodeclaim(self, nodeclaim: str) -> Sequence[Instance]:
        # Claims launch in threads: a copy, so another claim's launch does not change the dict mid-iteration.
        return [
            i for i in self.instances.values() if i.tags.get(NODECLAIM_TAG) == nodeclaim and i.state != "terminated"
        ]

    def instances_of_nodeclaims(self, nodeclaims: Sequence[str]) -> Mapping[str, Sequence[Instance]]:
        self.cluster_log.append(f"instances of {len(nodeclaims)} nodeclaims")
        found = {name: self.instances_of_nodeclaim(name) for name in nodeclaims}
        return {name: instances for name, instances in found.items() if instances}

    def describe_instances(self, instance_ids: Iterable[str]) -> Sequence[Instance]:
        return [self.instances[i] for i in sorted(set(instance_ids)) if i in self.instances]

    def capacity_instances(self) -> Sequence[Instance]:
        live = [i for i in list(self.instances.values()) if i.state not in ("terminated", "shutting-down")]
        return [i for i in live if is_owned(i.tags, self.cluster_info().name)]

    def terminate(self, instance_ids: Iterable[str]) -> None:
        from dataclasses import replace

        for instance_id in instance_ids:
            self.terminated.append(instance_id)
            if instance_id in self.instances:
                self.instances[instance_id] = replace(self.instances[instance_id], state="terminated")


# ------------------------------------------------------------------------------------ manifests


def nodepool(name: str = "general", limits: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}],
    }
    template_spec.update(spec)
    doc: dict[str, Any] = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"metadata": {"labels": {"team": "web"}}, "spec": template_spec}},
    }
    if limits:
        doc["spec"]["limits"] = dict(limits)
    return doc


def nodeclass(name: str = "default", role: str = "demo-node") -> dict[str, Any]:
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": role,
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        },
    }


def pod(name: str, cpu: str = "1", memory: str = "1Gi", namespace: str = "web", **spec: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    }
    pod_spec.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "resourceVersion": "1",
            "labels": {"app": name.rsplit("-", 1)[0]},
        },
        "spec": pod_spec,
        # As the kube-scheduler leaves a pod it found no node for.
        "status": {"phase": "Pending", "conditions": [UNSCHEDULABLE]},
    }


def node_for(instance: Instance, name: str, pool: str = "general") -> dict[str, Any]:
    # As the kubelet registers: with the labels of nodewright's user data, its NodePool (the instance's tag) among
    # them.
    labels = {
        "node.kubernetes.io/instance-type": instance.instance_type,
        "karpenter.sh/nodepool": instance.tags.get("nodewright.io/nodepool") or pool,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "providerID": f"aws:///{instance.zone}/{instance.id}",
            "taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
        },
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
    }
