"""`python -m tests.bench.simulate_cli`: `nodewright simulate --json` end to end on a 10k-pod YAML file, as run.

    python -m tests.bench.simulate_cli                      # 40 Deployments x 250 replicas, and the same as Pods
    python -m tests.bench.simulate_cli --replicas 25 --runs 1 --inputs pods pods-json
    python -m tests.bench.compare --ref main --rounds 3 -- tests.bench.simulate_cli

Three inputs are written to a temporary directory: `deployments`, one EC2NodeClass, two NodePools (on-demand, and a
weighted spot pool) and 40 Deployments of `--replicas` replicas in ten request shapes from 100m/128Mi to 4 CPU/16Gi,
every fifth spread over zones, some selecting a capacity type or an architecture; and `pods`, the same pods as one
Pod document each, as an API server serves a pending pod the scheduler could not place (`pending_pod`): each with its
own generated name, uid, resourceVersion, timestamps, token volume and scheduler message, the defaults the API server
fills in, its ReplicaSet owner and the managedFields of the controller manager and the scheduler, keys sorted as
`kubectl get -o yaml` prints them (about 3.7 KB a pod, 37 MB for 10,000). No two Pod documents are alike but for
their name: replicas share a parse only by what the parse reads (`model/replica_key.py`), as served pods of one
ReplicaSet do; and `pods-json`, the same objects as one `List` in JSON as `kubectl get -o json` prints it (about
90 MB). `--inputs` picks some. Each file is simulated `--runs` times,
each time in a fresh `python -m nodewright simulate --json FILE` process: process start, imports, YAML parsing, the
solve and the JSON output are all in the figure. Per input, one line: `wall_s` (median) and `wall_min_s`, `cpu_s`
(the child's user + system time, median), and `sha` (the output's first 12 hex digits: the same on both sides of a
compare when the plans are the same; the runs of one side must agree).
Under `tests.bench.compare` the child imports the core the compare puts on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

SHAPES = (
    ("100m", "128Mi"),
    ("250m", "256Mi"),
    ("500m", "512Mi"),
    ("500m", "1Gi"),
    ("1", "2Gi"),
    ("1", "4Gi"),
    ("2", "4Gi"),
    ("2", "8Gi"),
    ("4", "8Gi"),
    ("4", "16Gi"),
)
WORKLOADS = 40


def _pools() -> list[dict[str, Any]]:
    node_class = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": "KarpenterNodeRole",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        },
    }
    docs: list[dict[str, Any]] = [node_class]
    for name, capacity, weight in (("general", "on-demand", None), ("spot", "spot", 10)):
        requirements = [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
            {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
        ]
        ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        spec: dict[str, Any] = {
            "template": {"spec": {"nodeClassRef": ref, "requirements": requirements}},
            "limits": {"cpu": "100000"},
        }
        if weight:
            spec["weight"] = weight
        docs.append({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec})
    return docs


def _pod_spec(i: int, app: str) -> dict[str, Any]:
    cpu, memory = SHAPES[i % len(SHAPES)]
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": f"registry.example/{app}:1.0", "resources": resources}]
    }
    if i % 5 == 0:
        selector = {"matchLabels": {"app": app}}
        zone = "topology.kubernetes.io/zone"
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
        ]
    if i % 7 == 3:
        spec["nodeSelector"] = {"karpenter.sh/capacity-type": "on-demand"}
    if i % 11 == 4:
        spec["nodeSelector"] = {"kubernetes.io/arch": "amd64"}
    return spec


def documents(kind: str, replicas: int) -> list[dict[str, Any]]:
    """The `deployments` or `pods` input (module doc)."""
    docs = _pools()
    for i in range(WORKLOADS):
        app = f"app-{i:02d}"
        labels, spec = {"app": app}, _pod_spec(i, app)
        if kind == "deployments":
            template = {"metadata": {"labels": labels}, "spec": spec}
            deployment_spec = {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}
            meta = {"name": app, "namespace": "default"}
            docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": deployment_spec})
        else:
            docs.extend(pending_pod(app, i, r, spec) for r in range(replicas))
    return docs


def _uid(*parts: object) -> str:
    digest = hashlib.md5("/".join(map(str, parts)).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _suffix(*parts: object, length: int = 5) -> str:
    """A name suffix as Kubernetes' generateName makes them (consonants and digits)."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    number = int(hashlib.md5("/".join(map(str, parts)).encode()).hexdigest(), 16)
    return "".join(alphabet[(number >> (5 * k)) % len(alphabet)] for k in range(length))


def _stamp(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1796000000 + seconds))


def pending_pod(app: str, i: int, r: int, template: dict[str, Any]) -> dict[str, Any]:
    """Replica `r` of workload `i` as the API server serves a pending pod the scheduler could not place: its own
    name, uid, resourceVersion, timestamps, projected token volume and scheduler condition, the ReplicaSet's
    defaults filled in, and the managedFields of the controller manager and the scheduler."""
    pod_hash = _suffix(app, length=10)
    replicaset = f"{app}-{pod_hash}"
    name = f"{replicaset}-{_suffix(app, r)}"
    created = _stamp(i * 600 + r)
    scheduled = _stamp(i * 600 + r + 1 + r % 3)
    token = f"kube-api-access-{_suffix(name, 'token')}"
    container = dict(template["containers"][0])
    container.update(
        {
            "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [
                {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": token, "readOnly": True}
            ],
        }
    )
    spec = {
        **{k: v for k, v in template.items() if k != "containers"},
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"effect": "NoExecute", "key": key, "operator": "Exists", "tolerationSeconds": 300}
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
        ],
        "volumes": [_token_volume(token)],
    }
    labels = {"app": app, "pod-template-hash": pod_hash}
    owner_uid = _uid("ReplicaSet", replicaset)
    metadata = {
        "creationTimestamp": created,
        "generateName": f"{replicaset}-",
        "labels": labels,
        "managedFields": [
            _managed("kube-controller-manager", created, _controller_fields(owner_uid, spec)),
            _managed("kube-scheduler", scheduled, _scheduler_fields(), "status"),
        ],
        "name": name,
        "namespace": "default",
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "ReplicaSet",
                "name": replicaset,
                "uid": owner_uid,
            }
        ],
        "resourceVersion": str(4_000_000 + i * 1_000 + r * 7),
        "uid": _uid("Pod", name),
    }
    nodes = 3 + (i * 7 + r) % 5
    message = (
        f"0/{nodes} nodes are available: {nodes} Insufficient cpu. preemption: 0/{nodes} nodes are available: "
        f"{nodes} No preemption victims found for incoming pod."
    )
    status = {
        "conditions": [
            {
                "lastProbeTime": None,
                "lastTransitionTime": scheduled,
                "message": message,
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ],
        "phase": "Pending",
        "qosClass": "Burstable",
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _token_volume(name: str) -> dict[str, Any]:
    namespace_item = {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}
    sources = [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [namespace_item]}},
    ]
    return {"name": name, "projected": {"defaultMode": 420, "sources": sources}}


def _managed(manager: str, stamp: str, fields: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    entry = {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "manager": manager,
        "operation": "Update",
        "time": stamp,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _controller_fields(owner_uid: str, spec: dict[str, Any]) -> dict[str, Any]:
    container = spec["containers"][0]
    spec_fields: dict[str, Any] = {
        "f:containers": {
            f'k:{{"name":"{container["name"]}"}}': {
                ".": {},
                "f:image": {},
                "f:imagePullPolicy": {},
                "f:name": {},
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
    }
    if "nodeSelector" in spec:
        spec_fields["f:nodeSelector"] = {}
    if "topologySpreadConstraints" in spec:
        key = '{"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}'
        spec_fields["f:topologySpreadConstraints"] = {
            ".": {},
            f"k:{key}": {
                ".": {},
                **{f"f:{f}": {} for f in ("labelSelector", "maxSkew", "topologyKey", "whenUnsatisfiable")},
            },
        }
    metadata_fields = {
        "f:generateName": {},
        "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
        "f:ownerReferences": {".": {}, f'k:{{"uid":"{owner_uid}"}}': {}},
    }
    return {"f:metadata": metadata_fields, "f:spec": spec_fields}


def _scheduler_fields() -> dict[str, Any]:
    condition = {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}}
    condition.update({"f:status": {}, "f:type": {}})
    return {"f:status": {"f:conditions": {".": {}, 'k:{"type":"PodScheduled"}': condition}}}


def run_once(path: Path) -> tuple[float, float, bytes]:
    """One `nodewright simulate --json` process: (wall seconds, its CPU seconds, its output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nodewright", "simulate", "--json", str(path)],
        capture_output=True,
        check=True,
        env=dict(os.environ),
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


INPUTS = ("deployments", "pods", "pods-json")


def write_input(directory: Path, name: str, replicas: int) -> Path:
    """The input `name` (module doc) as a file in `directory`."""
    if name == "pods-json":
        # `kubectl get -o json`: one List of the objects, indented by four spaces.
        listed = {"apiVersion": "v1", "kind": "List", "items": documents("pods", replicas), "metadata": {}}
        path = directory / "pods.json"
        path.write_text(json.dumps(listed, indent=4, sort_keys=True))
        return path
    path = directory / f"{name}.yaml"
    # The Pod documents as `kubectl get -o yaml` prints objects: keys sorted, strings quoted where YAML would read
    # them as another type.
    path.write_text(yaml.safe_dump_all(documents(name, replicas), sort_keys=name == "pods"))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=250, help="replicas per Deployment (40 Deployments)")
    parser.add_argument("--runs", type=int, default=3, help="processes per input")
    parser.add_argument("--inputs", nargs="+", choices=INPUTS, default=list(INPUTS), help="inputs to simulate")
    args = parser.parse_args(argv)
    pods = WORKLOADS * args.replicas
    print(f"# simulate: `nodewright simulate --json FILE` in a fresh process, {args.runs} run(s) per input")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.inputs:
            path = write_input(Path(tmp), kind, args.replicas)
            walls, cpus, outputs = [], [], set()
            for _ in range(args.runs):
                wall, cpu, output = run_once(path)
                walls.append(wall)
                cpus.append(cpu)
                outputs.add(hashlib.sha256(output).hexdigest()[:12])
            assert len(outputs) == 1, f"{kind}: runs printed different plans"
            print(
                f"simulate input={kind} pods={pods} wall_s={statistics.median(walls):.3f} "
                f"wall_min_s={min(walls):.3f} cpu_s={statistics.median(cpus):.3f} sha={outputs.pop()}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
