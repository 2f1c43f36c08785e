"""`python -m tests.bench.simulate_cli`: `nodewright simulate --json` end to end on a 10k-pod YAML file, as run.

    python -m tests.bench.simulate_cli                      # 40 Deployments x 250 replicas, and the same as Pods
    python -m tests.bench.simulate_cli --replicas 25 --runs 1
    python -m tests.bench.compare --ref main --rounds 3 -- tests.bench.simulate_cli

Two inputs are written to a temporary directory: `deployments`, one EC2NodeClass, two NodePools (on-demand, and a
weighted spot pool) and 40 Deployments of `--replicas` replicas in ten request shapes from 100m/128Mi to 4 CPU/16Gi,
every fifth spread over zones, some selecting a capacity type or an architecture; and `pods`, the same pods as one
Pod document each (what `kubectl get pods -o yaml` of a pending cluster gives). Each file is simulated `--runs` times,
each time in a fresh `python -m nodewright simulate --json FILE` process: process start, imports, YAML parsing, the
solve and the JSON output are all in the figure. Per input, one line: `wall_s` (median) and `wall_min_s`, `cpu_s`
(the child's user + system time, median), and `sha` (the output's first 12 hex digits: the same on both sides of a
compare when the plans are the same; the runs of one side must agree).
Under `tests.bench.compare` the child imports the core the compare puts on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import hashlib
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
            for r in range(replicas):
                meta = {"name": f"{app}-{r:03d}", "namespace": "default", "labels": labels}
                docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return docs


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=250, help="replicas per Deployment (40 Deployments)")
    parser.add_argument("--runs", type=int, default=3, help="processes per input")
    args = parser.parse_args(argv)
    pods = WORKLOADS * args.replicas
    print(f"# simulate: `nodewright simulate --json FILE` in a fresh process, {args.runs} run(s) per input")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("deployments", "pods"):
            path = Path(tmp) / f"{kind}.yaml"
            path.write_text(yaml.safe_dump_all(documents(kind, args.replicas), sort_keys=False))
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
