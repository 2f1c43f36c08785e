"""The main job on the local world: the examples' NodePools and workloads become running pods.

`nodewright demo` starts the local world (or reuses a running one), deploys nodewright into it (the
synthesized stack, the CRDs, the forwarder), applies the example EC2NodeClasses and NodePools (as
nodewright.io/v1, pointed at the world's node role and discovery tag) and the example Deployments and
DaemonSets, and waits until their pods run on nodes nodewright launched. It ends with one JSON line:
`{"pods_total", "pods_running", "nodes", "nodeclaims", "cost_per_hour", "seconds"}`.

Kinds the local world cannot run (Jobs asking for GPUs, StatefulSets whose volumes need a CSI driver,
Nodes and Pods bound to nodes that do not exist here) are left out and named in the log.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from nodewright.localworld import deploy, world

GROUP, VERSION = "nodewright.io", "v1"
APPLIED_WORKLOADS = ("Deployment", "DaemonSet")
PRICE_ANNOTATION = "nodewright.io/price-per-hour"
NAMESPACE_KINDS = ("Deployment", "DaemonSet")


def example_documents(folder: Path) -> list[dict[str, Any]]:
    """Every document of the YAML files directly in `folder`, in file order."""
    docs: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return docs


def for_the_world(docs: Iterable[dict[str, Any]], state: world.WorldState, node_role: str) -> list[dict[str, Any]]:
    """NodePools and EC2NodeClasses as nodewright.io/v1 objects that fit this world; other kinds as they are."""
    out = []
    for original in docs:
        doc = copy.deepcopy(original)
        kind = doc.get("kind")
        if kind in ("NodePool", "EC2NodeClass"):
            doc["apiVersion"] = f"{GROUP}/{VERSION}"
        if kind == "EC2NodeClass":
            spec = doc["spec"]
            spec.pop("instanceProfile", None)
            spec["role"] = node_role
            discovery = [{"tags": {"karpenter.sh/discovery": state.cluster}}]
            spec["subnetSelectorTerms"] = discovery
            spec["securityGroupSelectorTerms"] = copy.deepcopy(discovery)
        out.append(doc)
    return out


def run(examples: Path, timeout: float, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the demo; returns the summary that `nodewright demo` prints as its last line."""
    from kubernetes import client, config

    started = time.monotonic()
    state_dir = world.state_dir_default()
    state = world.load_state(state_dir)
    if state is None or not all(world.running(state).values()):
        if state is not None:
            world.down(state_dir, log)
        state = world.up(state_dir, world.Options(), log)
    outputs = deploy.deploy(state, log)
    api = config.new_client_from_config(config_file=state.kubeconfig)  # type: ignore[no-untyped-call]
    custom = client.CustomObjectsApi(api)
    apps = client.AppsV1Api(api)
    core = client.CoreV1Api(api)

    docs = for_the_world(example_documents(examples), state, outputs["NodeRoleName"])
    selectors: list[tuple[str, dict[str, str]]] = []
    for doc in docs:
        kind, name = doc.get("kind"), doc.get("metadata", {}).get("name")
        if kind in ("NodePool", "EC2NodeClass"):
            plural = "nodepools" if kind == "NodePool" else "ec2nodeclasses"
            _apply_custom(custom, plural, doc)
        elif kind in APPLIED_WORKLOADS:
            namespace = doc["metadata"].setdefault("namespace", "default")
            _ensure_namespace(core, namespace)
            _apply_workload(apps, doc)
            selectors.append((namespace, doc["spec"]["selector"]["matchLabels"]))
        else:
            log(f"demo: left out {kind}/{name} (the local world cannot run it)")
    log(f"applied the examples; waiting up to {timeout:.0f}s for their pods to run")

    deadline = time.monotonic() + timeout
    summary: dict[str, Any] = {}
    while True:
        pods = [p for ns, labels in selectors for p in _pods(core, ns, labels)]
        running = [p for p in pods if p.status.phase == "Running"]
        summary = _summary(custom, core, pods, running, started)
        if (pods and len(running) == len(pods)) or time.monotonic() > deadline:
            return summary
        time.sleep(2)


def _summary(custom: Any, core: Any, pods: list[Any], running: list[Any], started: float) -> dict[str, Any]:
    claims = custom.list_cluster_custom_object(GROUP, VERSION, "nodeclaims")["items"]
    nodes = [n for n in core.list_node().items if "karpenter.sh/nodepool" in (n.metadata.labels or {})]
    cost = sum(float((c["metadata"].get("annotations") or {}).get(PRICE_ANNOTATION, 0)) for c in claims)
    return {
        "pods_total": len(pods),
        "pods_running": len(running),
        "nodes": len(nodes),
        "nodeclaims": len(claims),
        "cost_per_hour": round(cost, 4),
        "seconds": round(time.monotonic() - started, 1),
    }


def _pods(core: Any, namespace: str, labels: dict[str, str]) -> list[Any]:
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return list(core.list_namespaced_pod(namespace, label_selector=selector).items)


def _ensure_namespace(core: Any, name: str) -> None:
    from kubernetes import client

    try:
        core.create_namespace({"metadata": {"name": name}})
    except client.ApiException as exc:
        if exc.status != 409:
            raise


def _apply_custom(custom: Any, plural: str, doc: dict[str, Any]) -> None:
    from kubernetes import client

    name = doc["metadata"]["name"]
    try:
        custom.create_cluster_custom_object(GROUP, VERSION, plural, doc)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        current = custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
        doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        custom.replace_cluster_custom_object(GROUP, VERSION, plural, name, doc)


def _apply_workload(apps: Any, doc: dict[str, Any]) -> None:
    from kubernetes import client

    namespace, name = doc["metadata"]["namespace"], doc["metadata"]["name"]
    create, replace = (
        (apps.create_namespaced_deployment, apps.replace_namespaced_deployment)
        if doc["kind"] == "Deployment"
        else (apps.create_namespaced_daemon_set, apps.replace_namespaced_daemon_set)
    )
    try:
        create(namespace, doc)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        replace(name, namespace, doc)


def print_summary(summary: dict[str, Any]) -> None:
    print(json.dumps(summary, sort_keys=False))
