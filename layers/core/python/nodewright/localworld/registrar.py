"""The registrar: what a node's kubelet does when its EC2 instance boots, for moto instances.

    python -m nodewright.localworld.registrar --kubeconfig K --cluster C --endpoint-url E [--boot-delay S]

Every second it lists this cluster's instances in moto: whoever launched them, as any instance whose user
data joins the cluster becomes a node (tag `kubernetes.io/cluster/<cluster>`, which nodewright, Karpenter and
managed node groups all set, `nodewright.io/cluster=<cluster>` or Karpenter's `eks:eks-cluster-name=<cluster>`).
A running instance older than the boot delay gets a Node, named
by its private DNS name with `spec.providerID = aws:///<az>/<instance-id>`, labels and taints from
its user data, capacity and allocatable from its instance type, and the well-known labels. A Custom
image's user data is read where it can be (a NodeConfig, Bottlerocket TOML, a script's kubelet flags);
when it cannot, the instance still joins, as an image with its own bootstrap would, with only the labels
the kubelet and the cloud provider set and no taints, and the log says so. KWOK then
plays the kubelet (Ready, leases, pods). When the instance stops or terminates, the registrar takes
the node away from KWOK, so its lease stops being renewed and the node lifecycle controller marks it
NotReady, exactly as when a real machine goes away.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nodewright import tags as ownership
from nodewright.localworld.controlplane import KWOK_LABEL_KEY
from nodewright.localworld.userdata import BootConfig, UserDataRefused, parse_user_data

INSTANCE_ANNOTATION = "nodewright.io/instance-id"
GONE_STATES = ("stopping", "stopped", "shutting-down", "terminated")
ARCH = {"x86_64": "amd64", "arm64": "arm64", "i386": "386"}
# Values a real EKS node reports; the version matches the control plane built for the local world.
KUBELET_VERSION = "v1.36.3"
EPHEMERAL_STORAGE_GI = 20


@dataclass(frozen=True)
class InstanceTypeInfo:
    """The parts of DescribeInstanceTypes a kubelet's capacity depends on."""

    name: str
    vcpus: int
    memory_mib: int
    architecture: str
    max_enis: int
    ipv4_per_eni: int
    gpus: int = 0
    gpu_manufacturer: str = ""
    # NVMe instance store in decimal GB (EC2's TotalSizeInGB), 0 without one: what nodeadm's and Bottlerocket's
    # RAID0 set-up assembles, as the planner counts it (catalog/ec2_info.py).
    instance_store_gb: int = 0

    @classmethod
    def from_api(cls, doc: dict[str, Any]) -> InstanceTypeInfo:
        """Build from one element of DescribeInstanceTypes' `InstanceTypes`."""
        arches = doc.get("ProcessorInfo", {}).get("SupportedArchitectures", ["x86_64"])
        gpus = doc.get("GpuInfo", {}).get("Gpus", [])
        return cls(
            name=str(doc["InstanceType"]),
            vcpus=int(doc.get("VCpuInfo", {}).get("DefaultVCpus", 2)),
            memory_mib=int(doc.get("MemoryInfo", {}).get("SizeInMiB", 4096)),
            architecture=str(arches[0]),
            max_enis=int(doc.get("NetworkInfo", {}).get("MaximumNetworkInterfaces", 3)),
            ipv4_per_eni=int(doc.get("NetworkInfo", {}).get("Ipv4AddressesPerInterface", 10)),
            gpus=sum(int(g.get("Count", 0)) for g in gpus),
            gpu_manufacturer=str(gpus[0].get("Manufacturer", "")) if gpus else "",
            instance_store_gb=_nvme_instance_store_gb(doc.get("InstanceStorageInfo") or {}),
        )


def _nvme_instance_store_gb(storage: dict[str, Any]) -> int:
    """EC2's TotalSizeInGB of an NVMe instance store (0 for none, or for disks that are not NVMe)."""
    if storage.get("NvmeSupport", "unsupported") == "unsupported":
        return 0
    return int(storage.get("TotalSizeInGB", 0))


def ephemeral_storage(info: InstanceTypeInfo, local_storage: str) -> tuple[str, str]:
    """Ephemeral-storage capacity and allocatable (10 % kept back for the kubelet's nodefs eviction threshold):
    the instance store when the user data set it up as RAID0 and the type has one, else the 20Gi root volume."""
    if local_storage == "RAID0" and info.instance_store_gb:
        size = info.instance_store_gb * 10**9
        return f"{info.instance_store_gb}G", str(size - size // 10)
    return f"{EPHEMERAL_STORAGE_GI}Gi", f"{EPHEMERAL_STORAGE_GI * 9 // 10}Gi"


def eni_max_pods(info: InstanceTypeInfo) -> int:
    """The VPC CNI's pod limit: ENIs x (IPv4 per ENI - 1) + 2."""
    return info.max_enis * (info.ipv4_per_eni - 1) + 2


def kube_reserved_cpu_millis(vcpus: int) -> int:
    """EKS's kube-reserved CPU: 6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25% beyond."""
    reserved = 0.0
    for core in range(1, vcpus + 1):
        if core == 1:
            reserved += 60
        elif core == 2:
            reserved += 10
        elif core <= 4:
            reserved += 5
        else:
            reserved += 2.5
    return int(reserved)


def capacity_and_allocatable(
    info: InstanceTypeInfo, max_pods: int | None, eni_limited_memory: bool = True, local_storage: str = ""
) -> tuple[dict[str, str], dict[str, str]]:
    """Capacity as the kubelet reports it (memory after the VM overhead) and allocatable after
    kube-reserved and the 100 MiB eviction threshold. On AL2023 (`eni_limited_memory`) nodeadm reserves
    memory for the ENI-limited pod count even when maxPods is overridden, as the catalog does; Bottlerocket
    reserves for the effective maxPods. Ephemeral storage: see `ephemeral_storage`."""
    storage_capacity, storage_allocatable = ephemeral_storage(info, local_storage)
    pods = max_pods if max_pods is not None else eni_max_pods(info)
    memory_pods = eni_max_pods(info) if eni_limited_memory else pods
    memory_mib = int(info.memory_mib * (1 - 0.075))
    reserved_mib = 11 * memory_pods + 255 + 100
    capacity = {
        "cpu": str(info.vcpus),
        "memory": f"{memory_mib * 1024}Ki",
        "pods": str(pods),
        "ephemeral-storage": storage_capacity,
    }
    allocatable = {
        "cpu": f"{info.vcpus * 1000 - kube_reserved_cpu_millis(info.vcpus)}m",
        "memory": f"{max(0, memory_mib - reserved_mib) * 1024}Ki",
        "pods": str(pods),
        "ephemeral-storage": storage_allocatable,
    }
    if info.gpus and info.gpu_manufacturer.upper() == "NVIDIA":
        capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = str(info.gpus)
    return capacity, allocatable


def belongs_to(instance: dict[str, Any], cluster: str) -> bool:
    """True when the instance carries a tag naming this cluster (whoever launched it)."""
    tags = {t["Key"]: t.get("Value", "") for t in instance.get("Tags", [])}
    return (
        ownership.kubernetes_cluster(cluster) in tags
        or tags.get(ownership.CLUSTER) == cluster
        or tags.get("eks:eks-cluster-name") == cluster
    )


def node_manifest(instance: dict[str, Any], info: InstanceTypeInfo, boot: BootConfig, region: str) -> dict[str, Any]:
    """The Node object a kubelet would register for this instance."""
    name = str(instance.get("PrivateDnsName") or instance["InstanceId"])
    zone = str(instance["Placement"]["AvailabilityZone"])
    capacity_type = "spot" if instance.get("InstanceLifecycle") == "spot" else "on-demand"
    labels = {
        "kubernetes.io/arch": ARCH.get(info.architecture, info.architecture),
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": info.name,
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": region,
        "karpenter.sh/capacity-type": capacity_type,
        KWOK_LABEL_KEY: "fake",
    }
    # User-data labels win: the provisioner's intent is what the kubelet is told.
    labels.update(boot.labels)
    capacity, allocatable = capacity_and_allocatable(
        info, boot.max_pods, boot.format != "bottlerocket", boot.local_storage
    )
    addresses = [{"type": "Hostname", "address": name}, {"type": "InternalDNS", "address": name}]
    if instance.get("PrivateIpAddress"):
        addresses.insert(0, {"type": "InternalIP", "address": str(instance["PrivateIpAddress"])})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                INSTANCE_ANNOTATION: str(instance["InstanceId"]),
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": {
            "providerID": f"aws:///{zone}/{instance['InstanceId']}",
            "taints": [
                {"key": t.key, "value": t.value, "effect": t.effect} if t.value else {"key": t.key, "effect": t.effect}
                for t in boot.taints
            ],
        },
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "addresses": addresses,
            "nodeInfo": {
                "architecture": labels["kubernetes.io/arch"],
                "operatingSystem": "linux",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "osImage": "Amazon Linux 2023" if boot.format != "bottlerocket" else "Bottlerocket OS",
                "containerRuntimeVersion": "containerd://2.0.0",
                "machineID": "",
                "systemUUID": "",
                "bootID": str(instance["InstanceId"]),
                "kernelVersion": "6.1.0",
            },
        },
    }


# Windows Server year -> the build its kubelet reports in node.kubernetes.io/windows-build (Karpenter's
# Windows2019Build .. Windows2025Build).
WINDOWS_BUILDS = {"2019": "10.0.17763", "2022": "10.0.20348", "2025": "10.0.26100"}
_WINDOWS_IMAGE = re.compile(r"windows[_-]?(?:server-)?(2019|2022|2025)", re.IGNORECASE)
_AL2_IMAGE = re.compile(r"(^|[^0-9a-z])al2-|amazon-eks(-gpu|-arm64)?-node-[0-9]", re.IGNORECASE)


def image_family(image_name: str) -> str:
    """The bootstrap an image needs, from its name: "windows" (EKS-optimized Windows Server), "al2" (EKS AL2,
    or the local world's stand-in), "" for any other (AL2023, Bottlerocket, a custom image: not checked)."""
    if _WINDOWS_IMAGE.search(image_name):
        return "windows"
    if _AL2_IMAGE.search(image_name):
        return "al2"
    return ""


def check_family(image_name: str, boot: BootConfig) -> None:
    """UserDataRefused when the image's family needs a bootstrap its user data does not carry (a Windows image
    without Start-EKSBootstrap.ps1 PowerShell, an AL2 image without bootstrap.sh): such a node never joins."""
    family = image_family(image_name)
    if family and boot.format != family:
        raise UserDataRefused(f"image {image_name!r} needs {family} user data, got {boot.format}")


def windows_build(image_name: str) -> str:
    """The windows-build of a Windows image, from the Server year in its name ("" when none)."""
    found = _WINDOWS_IMAGE.search(image_name)
    return WINDOWS_BUILDS[found.group(1)] if found else ""


def as_windows_node(manifest: dict[str, Any], info: InstanceTypeInfo, boot: BootConfig, build: str) -> None:
    """Make a registered node a Windows one, as its kubelet and the VPC resource controller report it:
    kubernetes.io/os windows, node.kubernetes.io/windows-build, 110 pods unless maxPods says otherwise,
    vpc.amazonaws.com/PrivateIPv4Address (IPv4 per ENI - 1), kube-reserved memory for those pods, and the 50Gi
    root volume Windows nodes get by default
    as ephemeral storage (10 % kept back for the nodefs eviction threshold)."""
    labels = manifest["metadata"]["labels"]
    labels["kubernetes.io/os"] = "windows"
    if build:
        labels["node.kubernetes.io/windows-build"] = build
    status = manifest["status"]
    status["nodeInfo"]["operatingSystem"] = "windows"
    status["nodeInfo"]["osImage"] = "Windows Server"
    pods = str(boot.max_pods if boot.max_pods is not None else WINDOWS_DEFAULT_PODS)
    # Windows reserves kube-reserved memory for its effective pods, not the ENI-limited count.
    _, windows_allocatable = capacity_and_allocatable(info, int(pods), eni_limited_memory=False)
    status["allocatable"]["memory"] = windows_allocatable["memory"]
    addresses = str(max(info.ipv4_per_eni - 1, 0))
    for resources in (status["capacity"], status["allocatable"]):
        resources["pods"] = pods
        resources["vpc.amazonaws.com/PrivateIPv4Address"] = addresses
    status["capacity"]["ephemeral-storage"] = f"{WINDOWS_ROOT_VOLUME_GI}Gi"
    status["allocatable"]["ephemeral-storage"] = f"{WINDOWS_ROOT_VOLUME_GI * 9 // 10}Gi"


WINDOWS_DEFAULT_PODS = 110
WINDOWS_ROOT_VOLUME_GI = 50


StateSource = Callable[[], dict[str, str]]
DESCRIBE_CHUNK = 100  # instance ids a DescribeInstances asks for at once


def described_states(ec2: Any) -> StateSource:
    """Every instance's state from DescribeInstanceStatus (IncludeAllInstances): the EC2 API's compact listing."""

    def states() -> dict[str, str]:
        found: dict[str, str] = {}
        for page in ec2.get_paginator("describe_instance_status").paginate(IncludeAllInstances=True):
            for status in page["InstanceStatuses"]:
                found[status["InstanceId"]] = status["InstanceState"]["Name"]
        return found

    return states


def served_states(endpoint_url: str, region: str) -> StateSource:
    """Every instance's state from the local world's moto server (`POST /_nodewright/instance-states`): one
    small JSON document read from moto's tables, where moto's EC2 serializer spends milliseconds an instance."""
    import urllib.request

    body = json.dumps({"region": region}).encode()

    def states() -> dict[str, str]:
        request = urllib.request.Request(
            f"{endpoint_url.rstrip('/')}/_nodewright/instance-states", data=body, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return {str(k): str(v) for k, v in json.load(response)["instances"].items()}

    return states


class Registrar:
    """One pass of the loop is `sync()`. It follows instances incrementally: each pass reads every instance's
    state (one compact listing), describes only instances it has not decided about yet (each once), registers
    the booted ones and releases the nodes of gone ones. What it knows of the API server (which instance has a
    node) comes from its own registrations and a full node list every `resync_seconds`, which also catches
    nodes made or deleted by others; instance-type facts and image names never change and are kept.

    Invariants: an instance is described at most once while it waits to boot (its description is kept), a
    node is released at most once per resync, and a running, booted instance of this cluster without a node
    gets one within one resync."""

    def __init__(
        self,
        ec2: Any,
        core_v1: Any,
        cluster: str,
        region: str,
        boot_delay: float,
        states: StateSource | None = None,
        resync_seconds: float = 30.0,
    ) -> None:
        self.ec2 = ec2
        self.core = core_v1
        self.cluster = cluster
        self.region = region
        self.boot_delay = boot_delay
        self.states = states or described_states(ec2)
        self.resync_seconds = resync_seconds
        self._types: dict[str, InstanceTypeInfo] = {}
        self._image_names: dict[str, str] = {}
        self._refused: set[str] = set()
        self._nodes: dict[str, str] = {}  # instance id -> the name of its node (known to exist)
        self._released: set[str] = set()  # instances whose node KWOK no longer plays
        self._waiting: dict[str, dict[str, Any]] = {}  # this cluster's instances still booting, as described
        self._foreign: set[str] = set()  # instances of another cluster (their tags said so)
        self._resynced: datetime.datetime | None = None

    def _describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        """The instances, by id, in chunks (an id gone meanwhile only drops out of the answer)."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(instance_ids), DESCRIBE_CHUNK):
            chunk = instance_ids[start : start + DESCRIBE_CHUNK]
            filters = [{"Name": "instance-id", "Values": chunk}]
            for page in self.ec2.get_paginator("describe_instances").paginate(Filters=filters):
                for reservation in page["Reservations"]:
                    found.extend(reservation["Instances"])
        return found

    def _type(self, name: str) -> InstanceTypeInfo:
        if name not in self._types:
            doc = self.ec2.describe_instance_types(InstanceTypes=[name])["InstanceTypes"][0]
            self._types[name] = InstanceTypeInfo.from_api(doc)
        return self._types[name]

    def _image_name(self, image_id: str) -> str:
        """An image's name ("" when it is gone or has none); names never change, so they are kept."""
        if image_id not in self._image_names:
            images = self.ec2.describe_images(ImageIds=[image_id]).get("Images", []) if image_id else []
            self._image_names[image_id] = str(images[0].get("Name", "")) if images else ""
        return self._image_names[image_id]

    def _boot(self, instance: dict[str, Any]) -> tuple[BootConfig, str] | str:
        """The instance's boot config and image name, or why it cannot join (said once per instance)."""
        try:
            boot = parse_user_data(self._user_data(instance["InstanceId"]))
            image = self._image_name(str(instance.get("ImageId", "")))
            check_family(image, boot)
        except UserDataRefused as refused:
            return str(refused)
        return boot, image

    def _user_data(self, instance_id: str) -> str | None:
        attribute = self.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        value = attribute.get("UserData", {}).get("Value")
        return str(value) if value else None

    def _resync(self) -> None:
        """Learn which instances have a node, and which of those KWOK still plays, from one node list (the
        API server's cache, metadata read from the raw JSON: the client's models would cost seconds at
        thousands of nodes). Forgets which instances were foreign, in case their tags changed."""
        response = self.core.list_node(resource_version="0", _preload_content=False)
        items = json.loads(response.data)["items"]
        self._nodes, self._released = {}, set()
        for item in items:
            meta = item.get("metadata", {})
            instance_id = (meta.get("annotations") or {}).get(INSTANCE_ANNOTATION)
            if not instance_id:
                continue
            self._nodes[instance_id] = str(meta["name"])
            if not (meta.get("labels") or {}).get(KWOK_LABEL_KEY):
                self._released.add(instance_id)
        self._foreign.clear()

    def sync(self, now: datetime.datetime) -> list[str]:
        """Register booted instances and release gone ones; returns what it did, for the log."""
        if self._resynced is None or (now - self._resynced).total_seconds() >= self.resync_seconds:
            self._resync()
            self._resynced = now
        states = self.states()
        actions = self._release_gone(states)
        new = [
            i
            for i, state in states.items()
            if state == "running"
            and i not in self._nodes
            and i not in self._waiting
            and i not in self._foreign
            and i not in self._refused
        ]
        for instance in self._describe(new):
            if belongs_to(instance, self.cluster):
                self._waiting[instance["InstanceId"]] = instance
            else:
                self._foreign.add(instance["InstanceId"])
        for instance_id, instance in list(self._waiting.items()):
            if states.get(instance_id) != "running" or instance_id in self._nodes:
                del self._waiting[instance_id]  # gone before it booted, or its node came from elsewhere
            elif (now - instance["LaunchTime"]).total_seconds() >= self.boot_delay:
                del self._waiting[instance_id]
                actions.extend(self._register(instance))
        return actions

    def _release_gone(self, states: dict[str, str]) -> list[str]:
        """Take the nodes of stopped or terminated instances away from KWOK: the machine dying, so no more
        lease renewals. Each once (the resync's node list says again which are still played)."""
        from kubernetes.client.exceptions import ApiException

        actions = []
        for instance_id, name in self._nodes.items():
            state = states.get(instance_id, "terminated")  # an instance EC2 no longer lists is long gone
            if state not in GONE_STATES or instance_id in self._released:
                continue
            try:
                self.core.patch_node(name, {"metadata": {"labels": {KWOK_LABEL_KEY: None}}})
            except ApiException as exc:
                if exc.status != 404:
                    raise
            self._released.add(instance_id)
            actions.append(f"released {name} ({instance_id} is {state})")
        return actions

    def _register(self, instance: dict[str, Any]) -> list[str]:
        """The Node a booted instance's kubelet registers (or why it does not join)."""
        from kubernetes.client.exceptions import ApiException

        instance_id = instance["InstanceId"]
        booted = self._boot(instance)
        if isinstance(booted, str):
            self._refused.add(instance_id)
            return [f"not joining {instance_id}: {booted}"]
        boot, image = booted
        info = self._type(instance["InstanceType"])
        manifest = node_manifest(instance, info, boot, self.region)
        if boot.format == "windows":
            as_windows_node(manifest, info, boot, windows_build(image))
        # Status goes in with the create, as the kubelet registers it: KWOK initializes a node the
        # moment it appears and keeps capacity that is already there, but fills in its own defaults
        # if a later status patch has not landed yet.
        name = str(manifest["metadata"]["name"])
        try:
            self.core.create_node(manifest)
        except ApiException as exc:
            if exc.status != 409:
                raise
            self._nodes[instance_id] = name  # registered by someone else already (a bench's fleet)
            return []
        self._nodes[instance_id] = name
        unread = " (user data not readable: cloud labels only, no taints)" if boot.format == "unknown" else ""
        return [f"registered {name} for {instance_id}{unread}"]


def main(argv: list[str] | None = None) -> int:
    """Run the registrar loop until terminated."""
    parser = argparse.ArgumentParser(description="register moto instances as Kubernetes nodes")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--endpoint-url", required=True)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--boot-delay", type=float, default=3.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--resync", type=float, default=30.0, help="seconds between full node lists")
    args = parser.parse_args(argv)

    import boto3
    from kubernetes import client, config

    config.load_kube_config(config_file=args.kubeconfig)  # type: ignore[no-untyped-call]
    registrar = Registrar(
        boto3.client("ec2", region_name=args.region, endpoint_url=args.endpoint_url),
        client.CoreV1Api(),
        args.cluster,
        args.region,
        args.boot_delay,
        states=served_states(args.endpoint_url, args.region),
        resync_seconds=args.resync,
    )
    print(f"registrar for cluster {args.cluster} (boot delay {args.boot_delay}s)", flush=True)
    while True:
        try:
            for action in registrar.sync(datetime.datetime.now(datetime.UTC)):
                print(action, flush=True)
        except Exception as exc:
            # A transient API error must not kill the node agent; the next pass retries.
            print(f"sync failed: {type(exc).__name__}: {exc}", flush=True)
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
