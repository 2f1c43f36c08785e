"""`python -m tests.bench.planner_scale`: the planner's tick on 1k-10k-node clusters of realistic API objects.

    python -m tests.bench.planner_scale                          # 1,000 and 2,500 nodes
    python -m tests.bench.planner_scale --sizes 1000 2500 5000 10000 --runs 2
    python -m tests.bench.compare --ref main -- tests.bench.planner_scale --sizes 1000 2500
    python -m tests.bench.planner_scale --sizes 10000 --runs 3 --batch-only   # the provisioner's batches alone

What it builds, per size: a fleet of on-demand nodes of a few 16-vCPU types, filled with Deployment pods and
then scaled in (so emptiness and consolidation have work), three DaemonSets with a pod on every node, about 19
pods a node in all. Every object is shaped as an EKS API server serves it (`managedFields`, full statuses with
conditions, a Node's `images`, `nodeInfo` and addresses, a pod's `containerStatuses`, projected service-account
volume and owner references, a NodeClaim's conditions and hash stamps): about 4.5 KB a pod, 13 KB a Node and
3.4 KB a NodeClaim of JSON. They are served as gzip-compressed JSON list pages of 500 (what the API server sends)
by an in-process transport under the real `adapters.kubernetes_cluster.KubernetesCluster`, so the planner's
tick (`service.plan.tick`) reads and parses them exactly as in a Lambda; EC2 and the state table are in-memory
fakes that agree with the cluster (no drift, no stray instance).

Each size runs in a fresh child process (a cold container): one cold tick, then `--runs` warm ticks (the same
container: its parse caches and, with NODEWRIGHT_INCREMENTAL_READS on (the default), its informers kept; a fresh
lease table and workflow list each tick). Before each warm tick `--change` of the pods (default 1 %) change, in
thirds modified, deleted and added, each change a watch event the server serves from the resourceVersion asked
(410 Gone before its oldest); `--change 0` keeps the cluster as it was, so every tick decides the same. After the
warm ticks, one tick reads the same cluster with full lists. Printed per size, one line of `key=value`:

- `cold_s`/`cold_cpu_s`, `warm_s`/`warm_cpu_s` (median of the warm ticks): wall and CPU time of a tick;
- `mb_read`: uncompressed JSON bytes the cold tick read (`gzip_mb`: as sent), `requests`: API requests;
- `changed_pods` a warm tick, `warm_mb_read` (median) and `warm_requests`: what a warm tick read; `full_mb_read`:
  what the full-list tick of the same cluster read, `read_ratio` = warm / full, and `same_decisions_as_full`
  whether the last warm tick decided as the full-list tick did; `full_warm_cpu_s`: that tick's CPU time. The
  fake server answers a watch at once: a real one holds it open `informer.WATCH_SECONDS` (1 s of wall time);
- `base_mb`: the child's resident memory once the cluster is built (imports, catalog, the compressed pages);
  `peak_mb`: its peak resident memory from then to the end of the warm ticks (before the full-list tick, which a
  planner does not make); `tick_mb` = peak - base; `build_peak_mb`: the peak while the bench built the cluster's
  documents (the bench's own, not the planner's). The peak is Linux's high-water mark, reset once the cluster
  is built (`/proc/self/clear_refs`); where it cannot be reset, `peak_mb` is the process's whole peak
  (`peak_reset=no`) and includes the build's;
- `decisions`, `started`: the cold tick's disruption decisions and workflows started, and `digest`: a hash of
  its decisions, equal on both sides of a comparison when the code decides the same;
- `batch_cold_ms`/`batch_cold_cpu_ms`, `batch_ms`/`batch_cpu_ms` (median of `--runs`): the provisioner's batch
  (`service.provision.provision`, as its handler calls it) for `batch_pods` pending pods of a new Deployment against
  the same cluster through the same server, wall and CPU time; cold with nothing parsed or prepared, warm with the
  parsed objects and the NodePools' preparation kept and, with NODEWRIGHT_INCREMENTAL_READS on (the default), the
  provisioner's own informers (its Nodes and NodeClaims, followed by watches; a warm container; the process's module
  caches are warm in both, as the planner's ticks ran before). The server answers a watch longer than 2 s (the
  provisioner's) with a bookmark at its resourceVersion after the events, as the watch cache sends one 2 s before a
  watch's deadline, and a list of `limit=1` with one object (the provisioner's consistent resourceVersion read). The
  server serves the pending pods only to the provisioner's list of unbound pods, so the planner's ticks do not see
  them, and keeps no NodeClaim a batch creates, so every batch plans the same pods; `batch_read_ms`: a warm batch's
  wall time reading the cluster (`read_cluster`, the lists and their loading); `batch_launched`: the NodeClaims the
  cold batch launched; `batch_digest`: a hash of the cold batch's plan (each claim's pool, placement and pods, and the
  pods' decisions), "warm-differs" when a warm batch planned otherwise. `--batch-only` runs the batches alone, without
  the planner's ticks (`planner_scale_batch`, with `batch_min_cpu_ms`, the least CPU of the warm batches);
- with `--batch-only`, what a new provisioner container pays, in a process of its own that has imported nothing of
  nodewright before (`FIRST_CHILD`): `first_import_ms`/`first_import_cpu_ms`, importing what the provisioner's
  handler imports (Powertools, boto3, the adapters, the provisioning service); `first_catalog_ms`, building and
  loading the instance catalog the handler keeps (the shipped snapshot, `NODEWRIGHT_CATALOG=snapshot`); then, once
  the bench has built the cluster in that process (not timed; it parses its NodePool and EC2NodeClass once),
  `batch_first_ms`/`batch_first_cpu_ms`, that container's first batch against the snapshot catalog (its module
  caches and informers empty, its NodePools prepared against every type of the catalog), and
  `batch_first_fleet_ms`, its wall time to the first CreateFleet (`timings.first_create_fleet`);
  `batch_first_launched` the NodeClaims it launched. Set-up and first batch together are what a new container's
  first batch waits for, less the network.

Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from nodewright.adapters.informer import Informers, object_key
from nodewright.adapters.kubernetes_cluster import KubernetesCluster
from nodewright.adapters.memory import InMemoryState, InMemoryWorkflows
from nodewright.catalog.catalog import CapacityReservation
from nodewright.catalog.types import ON_DEMAND, InstanceType
from nodewright.disruption.drift import hash_annotations
from nodewright.launch.template import Image, LaunchTemplateSpec, ResolvedNodeClass, Subnet
from nodewright.launch.userdata import ClusterInfo
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.parse import parse_nodepool
from nodewright.model.parse_ec2nodeclass import parse_ec2nodeclass
from nodewright.ports import Instance
from nodewright.scheduling import TemplateCache
from nodewright.service.batch import parse_batch
from nodewright.service.plan import PlannerPorts, tick
from nodewright.service.provision import node_resources
from nodewright.settings import incremental_reads
from nodewright.tags import NODECLAIM as NODECLAIM_TAG
from tests.bench.consolidation import on_demand_cluster

NOW = 1_800_000_000.0
CLUSTER = "bench"
PAGE = 500
BATCH_PODS = 100  # pending pods in the provisioner's batch
LIST_VERSION = 10_000_000  # the resourceVersion the cluster is built at; changes count on from it
VERSION_MARK = "@@resourceVersion@@"
TYPES = ("m5.4xlarge", "m6i.4xlarge", "c5.4xlarge", "c6i.4xlarge", "r5.4xlarge", "m5a.4xlarge")
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
SUBNETS = {z: f"subnet-0{i}a1b2c3d4e5f6a7b" for i, z in enumerate(ZONES)}
IMAGE = "ami-0a1b2c3d4e5f67890"
SECURITY_GROUP = "sg-0123456789abcdef0"
CREATED = "2027-01-05T08:14:03Z"
HEARTBEAT = "2027-01-15T07:59:31Z"
# (name, cpu millicores, memory MiB): aws-node, kube-proxy and the EBS CSI node plugin, as on EKS.
DAEMONSETS = (("aws-node", 50, 0), ("kube-proxy", 100, 0), ("ebs-csi-node", 30, 120))
POD_SIZES = ((100, 128), (250, 256), (250, 512), (500, 512), (500, 1024), (1000, 2048))


# ------------------------------------------------------------------------------------------- objects


def _managed(manager: str, operation: str, time_: str, fields: Mapping[str, Any], sub: str = "") -> dict[str, Any]:
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": time_,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if sub:
        entry["subresource"] = sub
    return entry


def _uid(kind: str, name: str) -> str:
    digest = hashlib.md5(f"{kind}/{name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _image_list(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    images = []
    for i in range(30):
        repo = f"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/component-{i:02d}"
        digest = hashlib.sha256(f"{seed}-{i}".encode()).hexdigest()
        images.append(
            {
                "names": [f"{repo}@sha256:{digest}", f"{repo}:v1.{i}.{rng.randint(0, 9)}-eksbuild.1"],
                "sizeBytes": 1000 + i,
            }
        )
    return images


@dataclass
class BenchNode:
    """One node of the fleet: its type, zone and pods (name, app, cpu m, memory Mi)."""

    index: int
    instance_type: InstanceType
    zone: str
    pods: list[tuple[str, str, int, int]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"ip-10-{self.index // 65536}-{self.index // 256 % 256}-{self.index % 256}.ec2.internal"

    @property
    def instance_id(self) -> str:
        return f"i-0{self.index:016x}"

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.instance_id}"

    @property
    def claim(self) -> str:
        return f"default-{self.index:06x}"


def node_labels(node: BenchNode) -> dict[str, str]:
    it = node.instance_type
    return {
        "beta.kubernetes.io/arch": it.architecture,
        "beta.kubernetes.io/instance-type": it.name,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": node.zone,
        "k8s.io/cloud-provider-aws": "a1b2c3d4e5f60718293a4b5c6d7e8f90",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "karpenter.k8s.aws/instance-category": it.name[0],
        "karpenter.k8s.aws/instance-cpu": "16",
        "karpenter.k8s.aws/instance-family": it.family,
        "karpenter.k8s.aws/instance-generation": "5",
        "karpenter.k8s.aws/instance-hypervisor": "nitro",
        "karpenter.k8s.aws/instance-size": it.size,
        "karpenter.sh/capacity-type": ON_DEMAND,
        "karpenter.sh/initialized": "true",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/registered": "true",
        "kubernetes.io/arch": it.architecture,
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": it.name,
        "topology.k8s.aws/zone-id": f"use1-az{ZONES.index(node.zone) + 1}",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": node.zone,
    }


def nodeclaim_document(node: BenchNode, resources: Mapping[str, Any], stamps: Mapping[str, str]) -> dict[str, Any]:
    labels = node_labels(node)
    conditions = [
        {
            "type": t,
            "status": "True",
            "reason": t,
            "message": "",
            "lastTransitionTime": CREATED,
            "observedGeneration": 1,
        }
        for t in ("Launched", "Registered", "Initialized", "Ready", "Consolidatable")
    ]
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": node.claim,
            "uid": _uid("NodeClaim", node.claim),
            "resourceVersion": str(1000 + node.index),
            "generation": 1,
            "creationTimestamp": CREATED,
            "labels": {k: v for k, v in labels.items() if not k.startswith(("beta.", "failure-", "k8s.io"))},
            "annotations": {**stamps, "compatibility.karpenter.k8s.aws/kubelet-drift-hash": "15379597991425564585"},
            "finalizers": ["karpenter.sh/termination"],
            "ownerReferences": [
                {
                    "apiVersion": "nodewright.io/v1",
                    "kind": "NodePool",
                    "name": "default",
                    "uid": _uid("NodePool", "default"),
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                _managed("nodewright", "Update", CREATED, {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {".": {}}}),
                _managed("nodewright", "Update", CREATED, {"f:status": {"f:conditions": {}}}, "status"),
            ],
        },
        "spec": {
            "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(TYPES)},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ON_DEMAND]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ],
            "resources": {"requests": {"cpu": "8150m", "memory": "12Gi", "pods": "20"}},
            "expireAfter": "720h",
        },
        "status": {
            "providerID": node.provider_id,
            "nodeName": node.name,
            "imageID": IMAGE,
            **resources,
            "conditions": conditions,
        },
    }


def node_document(node: BenchNode, resources: Mapping[str, Any]) -> dict[str, Any]:
    conditions = [
        {
            "type": t,
            "status": "False",
            "lastHeartbeatTime": HEARTBEAT,
            "lastTransitionTime": CREATED,
            "reason": f"KubeletHas{why}",
            "message": f"kubelet has {why.lower()}",
        }
        for t, why in (
            ("MemoryPressure", "SufficientMemory"),
            ("DiskPressure", "NoDiskPressure"),
            ("PIDPressure", "SufficientPID"),
        )
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "lastHeartbeatTime": HEARTBEAT,
            "lastTransitionTime": CREATED,
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    )
    ip = f"10.{node.index // 65536}.{node.index // 256 % 256}.{node.index % 256}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "uid": _uid("Node", node.name),
            "resourceVersion": str(500000 + node.index),
            "creationTimestamp": CREATED,
            "labels": node_labels(node),
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "karpenter.k8s.aws/ec2nodeclass-hash": "12345678901234567890",
                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": node.instance_id}),
            },
            "finalizers": ["karpenter.sh/termination"],
            "ownerReferences": [
                {
                    "apiVersion": "nodewright.io/v1",
                    "kind": "NodeClaim",
                    "name": node.claim,
                    "uid": _uid("NodeClaim", node.claim),
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                _managed(
                    "kubelet",
                    "Update",
                    CREATED,
                    {
                        "f:metadata": {
                            "f:annotations": {".": {}, "f:alpha.kubernetes.io/provided-node-ip": {}},
                            "f:labels": {f"f:{k}": {} for k in node_labels(node)},
                        },
                        "f:spec": {"f:providerID": {}},
                    },
                ),
                _managed(
                    "kubelet",
                    "Update",
                    HEARTBEAT,
                    {
                        "f:status": {
                            "f:conditions": {
                                f'k:{{"type":"{t}"}}': {"f:lastHeartbeatTime": {}, "f:message": {}, "f:reason": {}}
                                for t in ("DiskPressure", "MemoryPressure", "PIDPressure", "Ready")
                            },
                            "f:images": {},
                            "f:nodeInfo": {"f:bootID": {}, "f:kernelVersion": {}},
                        }
                    },
                    "status",
                ),
                _managed("nodewright", "Update", CREATED, {"f:metadata": {"f:finalizers": {}, "f:labels": {}}}),
            ],
        },
        "spec": {"providerID": node.provider_id},
        "status": {
            **resources,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "InternalDNS", "address": node.name},
                {"type": "Hostname", "address": node.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": hashlib.md5(node.name.encode()).hexdigest(),
                "systemUUID": _uid("system", node.name),
                "bootID": _uid("boot", node.name),
                "kernelVersion": "6.1.119-129.201.amzn2023.x86_64",
                "osImage": "Amazon Linux 2023.6.20241212",
                "containerRuntimeVersion": "containerd://1.7.23",
                "kubeletVersion": "v1.31.3-eks-59bf375",
                "kubeProxyVersion": "v1.31.3-eks-59bf375",
                "operatingSystem": "linux",
                "architecture": node.instance_type.architecture,
            },
            "images": _image_list(node.index % 7),
        },
    }


def pod_document(node: BenchNode, name: str, owner: str, owner_kind: str, cpu: int, memory: int) -> dict[str, Any]:
    namespace = "kube-system" if owner_kind == "DaemonSet" else f"team-{owner[-1]}"
    labels = {"app": owner, "app.kubernetes.io/name": owner, "pod-template-hash": "7d9f8b6c5"}
    requests = {"cpu": f"{cpu}m", **({"memory": f"{memory}Mi"} if memory else {})}
    image = f"111122223333.dkr.ecr.us-east-1.amazonaws.com/{owner}:2026.11.3"
    started = "2027-01-06T10:00:00Z"
    container_id = hashlib.sha256(name.encode()).hexdigest()
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{owner}-7d9f8b6c5-",
            "namespace": namespace,
            "uid": _uid("Pod", f"{namespace}/{name}"),
            "resourceVersion": str(1_000_000 + node.index),
            "creationTimestamp": started,
            "labels": labels,
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2027-01-06T09:59:58Z",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner_kind,
                    "name": owner if owner_kind == "DaemonSet" else f"{owner}-7d9f8b6c5",
                    "uid": _uid(owner_kind, owner),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                _managed(
                    "kube-controller-manager",
                    "Update",
                    started,
                    {
                        "f:metadata": {
                            "f:generateName": {},
                            "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                            "f:ownerReferences": {".": {}, f'k:{{"uid":"{_uid(owner_kind, owner)}"}}': {}},
                        },
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"app"}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:imagePullPolicy": {},
                                    "f:name": {},
                                    "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {}},
                                    "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                                    "f:terminationMessagePath": {},
                                    "f:terminationMessagePolicy": {},
                                }
                            },
                            "f:dnsPolicy": {},
                            "f:enableServiceLinks": {},
                            "f:restartPolicy": {},
                            "f:schedulerName": {},
                            "f:securityContext": {},
                            "f:terminationGracePeriodSeconds": {},
                        },
                    },
                ),
                _managed(
                    "kubelet",
                    "Update",
                    started,
                    {
                        "f:status": {
                            "f:conditions": {
                                f'k:{{"type":"{t}"}}': {
                                    ".": {},
                                    "f:lastTransitionTime": {},
                                    "f:status": {},
                                    "f:type": {},
                                }
                                for t in ("ContainersReady", "Initialized", "PodReadyToStartContainers", "Ready")
                            },
                            "f:containerStatuses": {},
                            "f:hostIP": {},
                            "f:phase": {},
                            "f:podIP": {},
                            "f:startTime": {},
                        }
                    },
                    "status",
                ),
            ],
        },
        "spec": _pod_spec(node, name, namespace, image, requests),
        "status": _pod_status(node, image, started, container_id),
    }


def _pod_spec(node: BenchNode, name: str, namespace: str, image: str, requests: Mapping[str, str]) -> dict[str, Any]:
    """A pod's spec as the API server serves it, bound to `node`."""
    return {
        "volumes": [
            {
                "name": "kube-api-access-x7k2p",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    }
                                ]
                            }
                        },
                    ],
                    "defaultMode": 420,
                },
            }
        ],
        "containers": [
            {
                "name": "app",
                "image": image,
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": requests},
                "volumeMounts": [
                    {
                        "name": "kube-api-access-x7k2p",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    }
                ],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "nodeName": node.name,
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def _pod_status(node: BenchNode, image: str, started: str, container_id: str) -> dict[str, Any]:
    """A running pod's status with its container's."""
    return {
        "phase": "Running",
        "conditions": [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "hostIP": "10.0.0.1",
        "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": "10.0.1.2",
        "podIPs": [{"ip": "10.0.1.2"}],
        "startTime": started,
        "containerStatuses": [
            {
                "name": "app",
                "state": {"running": {"startedAt": started}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": image,
                "imageID": f"{image.split(':')[0]}@sha256:{container_id}",
                "containerID": f"containerd://{container_id}",
                "started": True,
            }
        ],
        "qosClass": "Burstable",
    }


def pending_pods(count: int, seed: int = 11) -> list[dict[str, Any]]:
    """`count` pods of a new Deployment the kube-scheduler found no room for: unbound, PodScheduled False
    (Unschedulable), shaped as the API server serves them (the provisioner's batch)."""
    rng = random.Random(seed)
    anywhere = BenchNode(0, on_demand_cluster().instance_types[0], ZONES[0])
    out = []
    for i in range(count):
        cpu, memory = POD_SIZES[rng.randrange(len(POD_SIZES))]
        pod = pod_document(anywhere, f"burst-6c5d4f7b8-{i:05x}", "burst", "ReplicaSet", cpu, memory)
        pod["metadata"]["resourceVersion"] = str(LIST_VERSION - count + i)
        del pod["spec"]["nodeName"]
        unschedulable = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
            "lastProbeTime": None,
            "lastTransitionTime": HEARTBEAT,
        }
        pod["status"] = {"phase": "Pending", "conditions": [unschedulable], "qosClass": "Burstable"}
        out.append(pod)
    return out


def daemonset_document(name: str, cpu: int, memory: int) -> dict[str, Any]:
    requests = {"cpu": f"{cpu}m", **({"memory": f"{memory}Mi"} if memory else {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system", "uid": _uid("DaemonSet", name), "resourceVersion": "7"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": name, "image": f"{name}:1", "resources": {"requests": requests}}],
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        },
        "status": {"desiredNumberScheduled": 1, "numberReady": 1},
    }


# -------------------------------------------------------------------------------------------- fleet


def fleet(nodes: int, seed: int = 7) -> list[BenchNode]:
    """`nodes` nodes, each filled with Deployment pods to about 95 % of its CPU and then scaled in: about a
    third of the fleet keeps half its pods, the rest keeps most; DaemonSet pods are added by `documents`."""
    rng = random.Random(seed)
    types = {it.name: it for it in on_demand_cluster().instance_types}
    out = []
    for index in range(nodes):
        it = types[TYPES[index % len(TYPES)]]
        node = BenchNode(index, it, ZONES[index % len(ZONES)])
        budget = 15_000
        keep = 0.3 if rng.random() < 0.35 else 0.55
        count = 0
        while budget > 0:
            cpu, memory = POD_SIZES[rng.randrange(len(POD_SIZES))]
            if cpu > budget:
                break
            budget -= cpu
            app = f"svc{rng.randrange(400):03d}"
            if rng.random() < keep:
                node.pods.append((f"{app}-7d9f8b6c5-{index:05x}{count:02x}", app, cpu, memory))
            count += 1
        out.append(node)
    return out


def documents(nodes: Sequence[BenchNode]) -> dict[str, list[dict[str, Any]]]:
    """The cluster's objects by list path, as the API server serves them."""
    cluster = on_demand_cluster()
    pool_doc = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": "default", "uid": _uid("NodePool", "default"), "resourceVersion": "3"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ON_DEMAND]},
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(TYPES)},
                    ],
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
                    "expireAfter": "720h",
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
                "budgets": [{"nodes": "10%"}],
            },
        },
    }
    class_doc = {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default", "uid": _uid("EC2NodeClass", "default"), "resourceVersion": "4"},
        "spec": {
            "role": "bench-node",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        },
    }
    pool, _ = parse_nodepool(pool_doc)
    node_class, _ = parse_ec2nodeclass(class_doc)
    assert pool is not None and node_class is not None
    stamps = hash_annotations(pool, node_class)
    resources = {name: node_resources(cluster_type, cluster.nodeclass) for name, cluster_type in _types(nodes).items()}
    claims, node_docs, pods = [], [], []
    for node in nodes:
        claims.append(nodeclaim_document(node, resources[node.instance_type.name], stamps))
        node_docs.append(node_document(node, resources[node.instance_type.name]))
        for ds, cpu, memory in DAEMONSETS:
            pods.append(pod_document(node, f"{ds}-{node.index:05x}", ds, "DaemonSet", cpu, memory))
        for name, app, cpu, memory in node.pods:
            pods.append(pod_document(node, name, app, "ReplicaSet", cpu, memory))
    return {
        "/apis/nodewright.io/v1/nodepools": [pool_doc],
        "/apis/nodewright.io/v1/ec2nodeclasses": [class_doc],
        "/apis/nodewright.io/v1/nodeclaims": claims,
        "/api/v1/nodes": node_docs,
        "/api/v1/pods": pods,
        "/apis/apps/v1/daemonsets": [daemonset_document(*d) for d in DAEMONSETS],
    }


def _types(nodes: Sequence[BenchNode]) -> dict[str, InstanceType]:
    return {n.instance_type.name: n.instance_type for n in nodes}


# ---------------------------------------------------------------------------------------- transport


class ListServer:
    """The API server's answers to the planner's reads, from gzip-compressed JSON list pages of 500 in key order
    (each page decompressed per request, as urllib3 does), and watches: the events since a resourceVersion of
    the changes `change_pods` made, or 410 Gone before `oldest`. Anything else: GET of one object 404, writes 200
    (counted)."""

    def __init__(self, lists: Mapping[str, list[dict[str, Any]]], pending: Sequence[dict[str, Any]] = ()) -> None:
        self.version = LIST_VERSION
        self.oldest = LIST_VERSION  # a watch from before this is answered 410 Gone
        self.pages = {path: self._pages(items) for path, items in lists.items()}
        # The pending pods, served only to a list of unbound pods (`spec.nodeName=`, the provisioner's): the planner's
        # list of active pods does not see them, so its ticks decide as without a batch.
        self.pending = self._pages(list(pending))
        self.events: dict[str, list[tuple[int, bytes]]] = {}  # path -> (resourceVersion, event line)
        self.heads: dict[tuple[str, int, bool], bytes] = {}  # first pages of `limit` items (`_head`)
        self.requests = 0
        self.bytes = 0
        self.gzip_bytes = 0
        self.writes = 0

    def _pages(self, items: list[dict[str, Any]]) -> list[bytes]:
        ordered = sorted(items, key=object_key)  # etcd's key order, as a list is served
        return [
            self._page(ordered[start : start + PAGE], start + PAGE < len(ordered), start // PAGE)
            for start in range(0, max(len(ordered), 1), PAGE)
        ]

    @staticmethod
    def _page(items: list[dict[str, Any]], more: bool, number: int) -> bytes:
        for item in items:  # built-in kinds' list items carry no kind/apiVersion (custom resources' do)
            if "/" not in str(item.get("apiVersion")) or str(item.get("apiVersion")).startswith("apps/"):
                item.pop("kind", None)
                item.pop("apiVersion", None)
        # The list's resourceVersion is stamped per request (the server's version then).
        metadata = {"resourceVersion": VERSION_MARK, **({"continue": str(number + 1)} if more else {})}
        return gzip.compress(json.dumps({"metadata": metadata, "items": items}).encode(), compresslevel=1)

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        self.requests += 1
        if method != "GET":
            self.writes += 1
            return 200, b"{}"
        pages = self.pages.get(path)
        params = dict(parse_qsl("&".join(f"{k}={v}" for k, v in query)))
        if pages is not None and params.get("watch") == "1":
            return self._watch(path, int(params["resourceVersion"]), int(params.get("timeoutSeconds", "0")))
        if pages is None:
            return (404, b"{}") if path.count("/") > 4 or path.startswith("/api/v1/nodes/") else (200, b'{"items":[]}')
        if path == "/api/v1/pods" and params.get("fieldSelector", "").startswith("spec.nodeName=,"):
            pages = self.pending
        if params.get("limit", str(PAGE)) != str(PAGE) and "continue" not in params:
            raw = self._head(path, pages, int(params["limit"]))
            self.bytes += len(raw)
            return 200, raw
        packed = pages[int(params.get("continue", "0") or 0)]
        raw = gzip.decompress(packed).replace(VERSION_MARK.encode(), str(self.version).encode(), 1)
        self.gzip_bytes += len(packed)
        self.bytes += len(raw)
        return 200, raw

    def _head(self, path: str, pages: Sequence[bytes], limit: int) -> bytes:
        """A first page of `limit` items (a consistent read's resourceVersion, as the provisioner asks for it),
        cut from the first page and kept per path: the bench's own cost stays out of the batch's."""
        key = (path, limit, pages is self.pending)
        if key not in self.heads:
            page = json.loads(gzip.decompress(pages[0]))
            page["items"] = page["items"][:limit]
            page["metadata"]["continue"] = "1"
            self.heads[key] = json.dumps(page).encode()
        return self.heads[key].replace(VERSION_MARK.encode(), str(self.version).encode(), 1)

    def _watch(self, path: str, since: int, seconds: int) -> tuple[int, bytes]:
        if since < self.oldest:
            gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410}
            return 410, json.dumps(gone).encode()
        raw = b"".join(line for version, line in self.events.get(path, []) if version > since)
        if seconds > 2:
            # The watch cache sends a bookmark 2 s before a watch's deadline (none on a shorter watch), at its own
            # resourceVersion: here, the server's.
            mark = {"kind": "Bookmark", "apiVersion": "v1", "metadata": {"resourceVersion": str(self.version)}}
            raw += json.dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n"
        self.bytes += len(raw)
        self.gzip_bytes += len(gzip.compress(raw, compresslevel=1))
        return 200, raw

    def full_list_bytes(self) -> int:
        """What a full read of every list costs now (uncompressed)."""
        return sum(len(gzip.decompress(p)) for pages in self.pages.values() for p in pages)

    def change_pods(self, fraction: float, rng: random.Random) -> int:
        """Change `fraction` of the pods as a minute of a busy cluster does, in thirds: some modified (a new
        annotation and resourceVersion), some deleted, some added (a copy beside one, on its node). Each change is
        a watch event; the pages are rewritten. Returns how many pods changed."""
        path = "/api/v1/pods"
        counts = [len(json.loads(gzip.decompress(p))["items"]) for p in self.pages[path]]
        spots = [(n, i) for n, count in enumerate(counts) for i in range(count)]
        picked = rng.sample(spots, max(1, round(len(spots) * fraction)))
        changes: dict[int, dict[int, str]] = {}
        for number, (n, i) in enumerate(picked):
            changes.setdefault(n, {})[i] = ("modify", "delete", "add")[number % 3]
        for n, at in sorted(changes.items()):  # a page at a time, so the bench's own memory stays small
            page = json.loads(gzip.decompress(self.pages[path][n]))
            page["items"] = self._changed(page["items"], at, self.events.setdefault(path, []))
            self.pages[path][n] = gzip.compress(json.dumps(page).encode(), compresslevel=1)
        return len(picked)

    def _changed(
        self, items: list[dict[str, Any]], at: Mapping[int, str], log: list[tuple[int, bytes]]
    ) -> list[dict[str, Any]]:
        kept = []
        for i, item in enumerate(items):
            what = at.get(i, "")
            if what in ("modify", "delete"):
                self.version += 1
                item["metadata"]["resourceVersion"] = str(self.version)
                if what == "modify":
                    item["metadata"]["annotations"]["bench.nodewright.io/revision"] = str(self.version)
                log.append(self._event(what, item))
            if what == "delete":
                continue
            kept.append(item)
            if what == "add":
                self.version += 1
                added = json.loads(json.dumps(item))
                metadata = added["metadata"]
                metadata["name"] = f"{metadata['name']}-b{self.version}"
                metadata["uid"] = _uid("Pod", f"{metadata['namespace']}/{metadata['name']}")
                metadata["resourceVersion"] = str(self.version)
                kept.append(added)
                log.append(self._event("add", added))
        return kept

    def _event(self, what: str, item: Mapping[str, Any]) -> tuple[int, bytes]:
        kind = {"modify": "MODIFIED", "delete": "DELETED", "add": "ADDED"}[what]
        event = {"type": kind, "object": {"kind": "Pod", "apiVersion": "v1", **item}}
        return self.version, json.dumps(event).encode() + b"\n"


class BenchCloud:
    """EC2 as the fleet's instances describe it: every instance launched with the class's image, subnet and
    security group, tagged for its NodeClaim (no drift, nothing to collect)."""

    def __init__(self, nodes: Sequence[BenchNode]) -> None:
        self.instances = {
            n.instance_id: Instance(
                n.instance_id,
                n.instance_type.name,
                n.zone,
                "running",
                ON_DEMAND,
                NOW - 86400 * 10,
                {
                    NODECLAIM_TAG: n.claim,
                    f"kubernetes.io/cluster/{CLUSTER}": "owned",
                    "karpenter.sh/nodepool": "default",
                },
                IMAGE,
                SUBNETS[n.zone],
                (SECURITY_GROUP,),
            )
            for n in nodes
        }

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(CLUSTER, "https://api.bench", "Q0EK", "10.100.0.0/16", "1.31")

    def resolve_node_class(self, node_class: EC2NodeClass, k8s_version: str) -> ResolvedNodeClass:
        images = {("amd64", "standard"): Image(IMAGE, "amd64", "standard", "al2023-x86")}
        subnets = tuple(Subnet(SUBNETS[z], z, 1000, f"use1-az{i + 1}") for i, z in enumerate(ZONES))
        return ResolvedNodeClass(node_class, subnets, (SECURITY_GROUP,), images, "bench-node-profile")

    def forget_node_class(self, node_class: EC2NodeClass) -> None:
        pass

    def capacity_reservations(self, resolved: ResolvedNodeClass) -> Sequence[CapacityReservation]:
        return []

    def describe_instances(self, instance_ids: Sequence[str]) -> Sequence[Instance]:
        return [self.instances[i] for i in instance_ids if i in self.instances]

    def capacity_instances(self) -> Sequence[Instance]:
        return list(self.instances.values())

    def terminate(self, instance_ids: Sequence[str]) -> None:
        raise AssertionError(f"the bench fleet has no stray instance: {list(instance_ids)[:3]}")


class BatchCloud(BenchCloud):
    """BenchCloud that launches too: CreateFleet starts the first override's instance (the provisioner's batch)."""

    def __init__(self, nodes: Sequence[BenchNode]) -> None:
        super().__init__(nodes)
        self.launched = 0

    def ensure_launch_template(self, spec: LaunchTemplateSpec, tags: Mapping[str, str]) -> str:
        return spec.name

    def create_fleet(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        override = request["LaunchTemplateConfigs"][0]["Overrides"][0]
        tags = {t["Key"]: t["Value"] for t in request["TagSpecifications"][0]["Tags"]}
        capacity_type = request["TargetCapacitySpecification"]["DefaultTargetCapacityType"]
        self.launched += 1
        instance_id = f"i-1{self.launched:016x}"
        self.instances[instance_id] = Instance(
            instance_id, override["InstanceType"], override["AvailabilityZone"], "running", capacity_type, NOW, tags
        )
        launched = {
            "InstanceIds": [instance_id],
            "InstanceType": override["InstanceType"],
            "Lifecycle": capacity_type,
            "LaunchTemplateAndOverrides": {"Overrides": override},
        }
        return {"Errors": [], "Instances": [launched]}

    def instances_of_nodeclaim(self, nodeclaim: str) -> Sequence[Instance]:
        return [i for i in self.instances.values() if i.tags.get(NODECLAIM_TAG) == nodeclaim]

    def instances_of_nodeclaims(self, nodeclaims: Sequence[str]) -> Mapping[str, Sequence[Instance]]:
        wanted = set(nodeclaims)
        out: dict[str, list[Instance]] = {}
        for instance in self.instances.values():
            if instance.tags.get(NODECLAIM_TAG) in wanted:
                out.setdefault(instance.tags[NODECLAIM_TAG], []).append(instance)
        return out


class BenchCatalog:
    def __init__(self, types: Sequence[InstanceType]) -> None:
        self._types = types

    def instance_types(self) -> Sequence[InstanceType]:
        return self._types


class Clock:
    def now(self) -> float:
        return NOW


# -------------------------------------------------------------------------------------------- child


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> bool:
    """Reset the process's peak resident memory (Linux's VmHWM, which ru_maxrss reads) to what it holds now, so a
    later peak is the planner's and not the bench's building of the documents. False where it cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def _commands(result: Mapping[str, Any]) -> list[Any]:
    return list(result["decisions"].get("commands", []))


def _batch(
    batch: Any,
    cluster: KubernetesCluster,
    cloud: BatchCloud,
    catalog: Any,
    parsed_pods: dict[Any, Any],
    templates: TemplateCache,
    kept: Mapping[str, Any],
) -> Any:
    """One batch as the provisioner's handler runs it (`service.provision.provision`); `kept`: `_warm_kept()`."""
    from nodewright.service.provision import provision

    return provision(
        batch,
        cluster,
        cloud,  # type: ignore[arg-type]
        InMemoryState(),
        Clock(),
        catalog,
        templates=cloud,  # type: ignore[arg-type]
        parsed_pods=parsed_pods,
        nodepool_templates=templates,
        **kept,
    )


def _warm_kept() -> dict[str, Any]:
    """What a warm container keeps between batches (the handler's `WarmBatch`); nothing for a tree from before it
    (compared against an older tree by `tests.bench.compare`)."""
    try:
        from nodewright.service.provision import WarmBatch
    except ImportError:
        return {}
    return {"warm": WarmBatch()}


def measure_batches(
    server: ListServer,
    nodes: Sequence[BenchNode],
    catalog: BenchCatalog,
    pending: Sequence[Mapping[str, Any]],
    runs: int,
) -> tuple[float, float, list[float], list[float], int, list[float], str]:
    """The provisioner's batch (`service.provision.provision`, as its handler calls it) for the `pending` pods
    against the cluster `server` serves: a cold batch (nothing parsed or prepared yet) and `runs` warm ones (the
    same parsed pods, NodePool preparations and `WarmBatch`, as a warm container keeps). The server keeps no
    NodeClaim a batch creates, so every batch plans the same pods. Returns (cold wall ms, cold CPU ms, warm wall
    ms, warm CPU ms, NodeClaims the cold batch launched, the warm batches' ms reading the cluster, a digest of the
    cold batch's plan or "warm-differs" when a warm batch planned otherwise)."""
    # As the provisioner's handler makes it: with informers (its own, not the planner's) unless switched off.
    informers = Informers() if incremental_reads(os.environ) else None
    cluster = KubernetesCluster(server, informers=informers)  # type: ignore[arg-type]
    cloud = BatchCloud(nodes)
    parsed_pods: dict[Any, Any] = {}
    templates = TemplateCache()
    kept = _warm_kept()
    hints = [
        {
            "namespace": p["metadata"]["namespace"],
            "name": p["metadata"]["name"],
            "uid": p["metadata"]["uid"],
            "resourceVersion": p["metadata"]["resourceVersion"],
        }
        for p in pending
    ]
    walls, cpus, reads, launched, plans = [], [], [], 0, []
    for run in range(runs + 1):
        batch = parse_batch({"batch_id": f"bench-{run}", "cluster": CLUSTER, "pods": hints})
        started, cpu = time.perf_counter(), time.process_time()
        result = _batch(batch, cluster, cloud, catalog, parsed_pods, templates, kept)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        reads.append(result.timings.get("read_cluster", 0.0) * 1000)
        plans.append(batch_plan(result.to_json()))
        if run == 0:
            launched = len([c for c in result.to_json()["nodeclaims"] if not c["reused"]])
    digest = hashlib.sha256(plans[0].encode()).hexdigest()[:16]
    if any(plan != plans[0] for plan in plans[1:]):
        digest = "warm-differs"
    return walls[0], cpus[0], walls[1:], cpus[1:], launched, reads[1:], digest


def batch_plan(result: Mapping[str, Any]) -> str:
    """What a batch decided, without what differs from batch to batch by construction (the NodeClaims' names,
    from the batch id, and the instance ids): each claim's pool, placement and pods, and the pods' decisions."""
    claims = sorted(
        json.dumps({k: v for k, v in c.items() if k not in ("name", "instance_id")}, sort_keys=True)
        for c in result["nodeclaims"]
    )
    pods = sorted(f"{d['action']} {d['subject']}" for d in result["decisions"] if d["subject"].startswith("pod/"))
    return json.dumps([claims, pods])


def measure(size: int, runs: int, change: float = 0.0) -> str:
    """One size in this process: build, then a cold tick and `runs` warm ones, `change` of the pods changed before
    each warm tick, then a full-list tick of the last warm tick's cluster (the figure beside it and the decisions it
    must equal); returns the figure line."""
    nodes = fleet(size)
    lists = documents(nodes)
    sizes = {
        kind: len(json.dumps(lists[path][0]))
        for kind, path in (
            ("pod", "/api/v1/pods"),
            ("node", "/api/v1/nodes"),
            ("nodeclaim", "/apis/nodewright.io/v1/nodeclaims"),
        )
    }
    pods = len(lists["/api/v1/pods"])
    server = ListServer(lists, pending_pods(BATCH_PODS))
    del lists
    import gc

    gc.collect()
    base = _current_rss_mb()
    build_peak = _rss_mb()
    reset = _reset_peak()
    incremental = incremental_reads(os.environ)
    cluster = KubernetesCluster(server, informers=Informers() if incremental else None)  # type: ignore[arg-type]
    full = KubernetesCluster(server)  # type: ignore[arg-type]
    cloud = BenchCloud(nodes)
    catalog = BenchCatalog(on_demand_cluster().instance_types)
    catalog.instance_types()
    ports = PlannerPorts(cluster, cloud, InMemoryWorkflows(), Clock(), InMemoryState(), catalog)  # type: ignore[arg-type]

    def one_tick(reading: KubernetesCluster) -> tuple[float, float, int, int, dict[str, Any]]:
        # What a warm container keeps (parsed pods, pod facts, prepared NodePools: whatever fields the core being
        # measured has) comes along; the lease table and workflows are new, so every tick decides anew.
        fresh = dataclasses.replace(ports, cluster=reading, workflows=InMemoryWorkflows(), state=InMemoryState())
        read, requests = server.bytes, server.requests
        started, cpu = time.perf_counter(), time.process_time()
        result = tick(fresh).to_json()
        wall, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        return wall, cpu_s, server.bytes - read, server.requests - requests, result

    cold, cold_cpu, read, requests, result = one_tick(cluster)
    gzip_read = sum(len(p) for pages in server.pages.values() for p in pages)
    rng = random.Random(size)
    warm, changed = [], 0
    for _ in range(runs):
        changed = server.change_pods(change, rng) if change else 0
        warm.append(one_tick(cluster))
    peak = _rss_mb()  # before the full-list tick below, which a planner does not make
    # The last warm tick's cluster read in full: the figure beside the warm tick's, and the decisions it must equal.
    beside = one_tick(full)
    same = _commands(warm[-1][4]) == _commands(beside[4])
    commands = _commands(result)
    digest = hashlib.sha256(json.dumps(sorted(json.dumps(c, sort_keys=True) for c in commands)).encode()).hexdigest()
    if not change and any(_commands(other[4]) != commands for other in warm):
        digest = "warm-differs"
    warm_read = statistics.median(w[2] for w in warm)
    full_read = beside[2]
    writes = server.writes  # the ticks' (the batches below write too)
    batch_cold, batch_cold_cpu, batch_warm, batch_warm_cpu, launched, batch_reads, batch_digest = measure_batches(
        server, nodes, catalog, pending_pods(BATCH_PODS), runs
    )
    return (
        f"planner_scale nodes={size} pods={pods} incremental={'on' if incremental else 'off'} "
        f"cold_s={cold:.2f} cold_cpu_s={cold_cpu:.2f} "
        f"warm_s={statistics.median(w[0] for w in warm):.2f} warm_cpu_s={statistics.median(w[1] for w in warm):.2f} "
        f"full_warm_cpu_s={beside[1]:.2f} "
        f"mb_read={read / 2**20:.1f} gzip_mb={gzip_read / 2**20:.1f} requests={requests} writes={writes} "
        f"changed_pods={changed} warm_mb_read={warm_read / 2**20:.2f} full_mb_read={full_read / 2**20:.1f} "
        f"read_ratio={warm_read / max(full_read, 1):.4f} warm_requests={statistics.median(w[3] for w in warm):.0f} "
        f"base_mb={base:.0f} peak_mb={peak:.0f} tick_mb={peak - base:.0f} build_peak_mb={build_peak:.0f} "
        f"peak_reset={'yes' if reset else 'no'} "
        f"pod_kb={sizes['pod'] / 1024:.1f} node_kb={sizes['node'] / 1024:.1f} "
        f"nodeclaim_kb={sizes['nodeclaim'] / 1024:.1f} "
        f"decisions={len(commands)} started={len(result['started'])} problems={len(result['problems'])} "
        f"same_decisions_as_full={'yes' if same else 'no'} digest={digest[:16]} "
        f"batch_pods={BATCH_PODS} batch_cold_ms={batch_cold:.0f} batch_cold_cpu_ms={batch_cold_cpu:.0f} "
        f"batch_ms={statistics.median(batch_warm):.0f} batch_cpu_ms={statistics.median(batch_warm_cpu):.0f} "
        f"batch_read_ms={statistics.median(batch_reads):.0f} batch_launched={launched} batch_digest={batch_digest}"
    )


def measure_batch_only(size: int, runs: int, change: float = 0.0) -> str:
    """`--batch-only`: one size's provisioner batches (`measure_batches`), without the planner's ticks; returns the
    figure line (the batch fields of `measure`'s, under its own name). `change` is not used: no tick runs."""
    del change
    nodes = fleet(size)
    server = ListServer(documents(nodes), pending_pods(BATCH_PODS))
    catalog = BenchCatalog(on_demand_cluster().instance_types)
    catalog.instance_types()
    cold, cold_cpu, warm, warm_cpu, launched, reads, digest = measure_batches(
        server, nodes, catalog, pending_pods(BATCH_PODS), runs
    )
    return (
        f"planner_scale_batch nodes={size} incremental={'on' if incremental_reads(os.environ) else 'off'} "
        f"batch_pods={BATCH_PODS} batch_cold_ms={cold:.0f} batch_cold_cpu_ms={cold_cpu:.0f} "
        f"batch_ms={statistics.median(warm):.0f} batch_cpu_ms={statistics.median(warm_cpu):.0f} "
        f"batch_min_cpu_ms={min(warm_cpu):.0f} batch_read_ms={statistics.median(reads):.0f} "
        f"batch_launched={launched} batch_digest={digest}"
    )


# The modules the provisioner's handler imports, at its top and in `build_runtime` (functions/provisioner/handler.py).
HANDLER_IMPORTS = (
    "aws_lambda_powertools",
    "aws_lambda_powertools.metrics",
    "nodewright.tracing",
    "nodewright.gcpause",
    "nodewright.service.batch",
    "nodewright.adapters.aws_sdk",
    "nodewright.adapters.ec2_launcher",
    "nodewright.adapters.eks_token",
    "nodewright.adapters.kubernetes_cluster",
    "nodewright.settings",
    "nodewright.adapters.dynamodb_state",
    "nodewright.adapters.ec2_catalog",
    "nodewright.scheduling",
    "nodewright.service.provision",
)

# A new container, in a process that imports nothing of nodewright before it is timed: the handler's imports and
# catalog, then (the bench's own build, not timed) the cluster, then the first batch (`measure_first_batch`).
FIRST_CHILD = """
import importlib, sys, time
started, cpu = time.perf_counter(), time.process_time()
for name in sys.argv[2].split(","):
    importlib.import_module(name)
imported, imported_cpu = time.perf_counter(), time.process_time()
from nodewright.adapters.ec2_catalog import kept_catalog
catalog = kept_catalog("snapshot", "us-east-1", None)
catalog.instance_types()
loaded = time.perf_counter()
from tests.bench.planner_scale import measure_first_batch
print(measure_first_batch(int(sys.argv[1]), catalog, (imported - started, imported_cpu - cpu, loaded - imported)))
"""


def measure_first_batch(size: int, catalog: Any, setup: tuple[float, float, float]) -> str:
    """`FIRST_CHILD`'s first batch: the cluster built, then one batch as a new container's handler runs it (a new
    adapter with empty informers, no parse, preparation or warm state kept); returns the `first_*` and
    `batch_first_*` fields."""
    nodes = fleet(size)
    pending = pending_pods(BATCH_PODS)
    server = ListServer(documents(nodes), pending)
    cloud = BatchCloud(nodes)
    hints = [{k: p["metadata"][k] for k in ("namespace", "name", "uid", "resourceVersion")} for p in pending]
    batch = parse_batch({"batch_id": "bench-first", "cluster": CLUSTER, "pods": hints})
    import gc

    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    cluster = KubernetesCluster(server, informers=Informers() if incremental_reads(os.environ) else None)  # type: ignore[arg-type]
    result = _batch(batch, cluster, cloud, catalog, {}, TemplateCache(), _warm_kept())
    wall, cpu_s = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
    launched = len([c for c in result.to_json()["nodeclaims"] if not c["reused"]])
    imports, imports_cpu, catalog_s = setup
    return (
        f"first_import_ms={imports * 1000:.0f} first_import_cpu_ms={imports_cpu * 1000:.0f} "
        f"first_catalog_ms={catalog_s * 1000:.0f} batch_first_ms={wall:.0f} batch_first_cpu_ms={cpu_s:.0f} "
        f"batch_first_fleet_ms={result.timings.get('first_create_fleet', 0.0) * 1000:.0f} "
        f"batch_first_launched={launched}"
    )


def _first_container(size: int) -> str:
    """`FIRST_CHILD` run for `size` nodes; its figure fields."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CHILD, str(size), ",".join(HANDLER_IMPORTS)],
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),  # `tests` importable
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"# the first-container child failed for size {size}:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.planner_scale", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2500], help="cluster sizes in nodes")
    parser.add_argument("--runs", type=int, default=2, help="warm ticks per size (median printed)")
    parser.add_argument(
        "--change", type=float, default=0.01, help="fraction of the pods changed before each warm tick (0: none)"
    )
    parser.add_argument(
        "--batch-only", action="store_true", help="only the provisioner's batches (no planner tick): batch_* figures"
    )
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        figure = measure_batch_only if args.batch_only else measure
        print(figure(args.child, args.runs, args.change), flush=True)
        return 0
    print("# planner_scale: a fresh process per size; times in s, memory in MB (RSS), bytes read per tick")
    for size in args.sizes:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "tests.bench.planner_scale", "--child", str(size)),
                *("--runs", str(args.runs), "--change", str(args.change)),
                *(("--batch-only",) if args.batch_only else ()),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(f"# size {size} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
            return 2
        line = done.stdout.strip()
        if args.batch_only:
            line = f"{line} {_first_container(size)}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
