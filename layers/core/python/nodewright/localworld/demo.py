"""The main job on the local world: the examples' NodePools and workloads become running pods.

`nodewright demo` starts the local world (or reuses a running one), deploys nodewright into it (the
synthesized stack, the CRDs, the forwarder), applies the example EC2NodeClasses and NodePools (as
nodewright.io/v1, pointed at the world's node role and discovery tag) and the example Deployments and
DaemonSets, and waits until their pods run on nodes nodewright launched. Then EC2 "interrupts" the busiest
Spot node: a Spot Instance Interruption Warning goes onto EventBridge's default bus, and the stack's rule,
queue, interruption Lambda and disruption workflow replace, drain and terminate it while the forwarder and
the provisioner put its pods back. Last, the example Deployments scale in to a third of their replicas and
the planner is invoked as its schedule would invoke it, tick after tick, until a tick finds nothing more to
take away: empty nodes go, the rest consolidate onto fewer or cheaper nodes. It ends with one JSON line:
`{"pods_total", "pods_running", "nodes", "nodeclaims", "cost_per_hour", "interruptions", "executions_succeeded",
"seconds_to_drain_start", "seconds_to_drain", "scale_in": {"replicas", "nodes", "cost_per_hour", "disruptions",
"seconds"}, "seconds"}` (drain times count from the warning; the scale-in's nodes and cost are [before, after]).

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
DEMO_CONSOLIDATE_AFTER = "10s"


def example_documents(folder: Path) -> list[dict[str, Any]]:
    """Every document of the YAML files directly in `folder`, in file order."""
    docs: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return docs


def for_the_world(docs: Iterable[dict[str, Any]], state: world.WorldState, node_role: str) -> list[dict[str, Any]]:
    """NodePools and EC2NodeClasses as nodewright.io/v1 objects that fit this world (a NodePool's consolidateAfter
    shortened to DEMO_CONSOLIDATE_AFTER); other kinds as they are."""
    out = []
    for original in docs:
        doc = copy.deepcopy(original)
        kind = doc.get("kind")
        if kind in ("NodePool", "EC2NodeClass"):
            doc["apiVersion"] = f"{GROUP}/{VERSION}"
        if kind == "NodePool" and "consolidateAfter" in doc["spec"].get("disruption", {}):
            # Minutes of waiting would make the demo's scale-in the longest part of it.
            doc["spec"]["disruption"]["consolidateAfter"] = DEMO_CONSOLIDATE_AFTER
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
    summary = _wait_running(custom, core, selectors, started, deadline)
    if summary["pods_running"] < summary["pods_total"]:
        return {**summary, "interruptions": 0, "executions_succeeded": 0}
    log("all example pods run; interrupting the busiest Spot node")
    # The interruption gets a time budget of its own: the first phase may have used most of the first one.
    deadline = time.monotonic() + timeout
    disruption = interrupt_busiest_spot_node(state, outputs, core, log, deadline)
    summary = _wait_running(custom, core, selectors, started, deadline)
    if summary["pods_running"] < summary["pods_total"]:
        return {**{k: v for k, v in summary.items() if k != "seconds"}, **disruption, "seconds": summary["seconds"]}
    log("the interrupted node's pods run again; scaling the example Deployments in")
    deadline = time.monotonic() + timeout
    scaled = scale_in(state, outputs, docs, (custom, apps, core), selectors, log, deadline)
    summary = _wait_running(custom, core, selectors, started, deadline)
    return {
        **{k: v for k, v in summary.items() if k != "seconds"},
        **disruption,
        "scale_in": scaled,
        "seconds": summary["seconds"],
    }


def scale_in(
    state: world.WorldState,
    outputs: dict[str, str],
    docs: list[dict[str, Any]],
    clients: tuple[Any, Any, Any],
    selectors: list[tuple[str, dict[str, str]]],
    log: Callable[[str], None],
    deadline: float,
) -> dict[str, Any]:
    """Scale the example Deployments to a third of their replicas (at least one), then tick the planner until a
    tick starts nothing; returns replicas, nodes and $/hour before and after, and the disruptions it started."""
    custom, apps, core = clients
    started = time.monotonic()
    before = _summary(custom, core, [], [], started)
    deployments = [d for d in docs if d.get("kind") == "Deployment"]
    replicas = [0, 0]
    for doc in deployments:
        now = int(doc["spec"].get("replicas", 1))
        target = max(1, now // 3)
        replicas[0] += now
        replicas[1] += target
        apps.patch_namespaced_deployment_scale(
            doc["metadata"]["name"], doc["metadata"]["namespace"], {"spec": {"replicas": target}}
        )
    _wait_running(custom, core, selectors, started, deadline)
    lambda_ = state.client("lambda")
    sfn = state.client("stepfunctions")
    disruptions: list[str] = []
    while time.monotonic() < deadline:
        response = lambda_.invoke(FunctionName=outputs["PlannerFunctionName"], Payload=b"{}")
        tick = json.loads(response["Payload"].read())
        names = [s["execution"] for s in tick.get("started", [])]
        for entry in tick.get("started", []):
            log(f"demo: planner started {entry['execution']} ({entry['method']}, {entry['reason']})")
        disruptions.extend(names)
        running = sfn.list_executions(stateMachineArn=outputs["StateMachineArn"], statusFilter="RUNNING")
        if not names and not running["executions"]:
            break
        time.sleep(3)
    after = _summary(custom, core, [], [], started)
    return {
        "replicas": replicas,
        "nodes": [before["nodes"], after["nodes"]],
        "cost_per_hour": [before["cost_per_hour"], after["cost_per_hour"]],
        "disruptions": len(disruptions),
        "seconds": round(time.monotonic() - started, 1),
    }


def _wait_running(
    custom: Any, core: Any, selectors: list[tuple[str, dict[str, str]]], started: float, deadline: float
) -> dict[str, Any]:
    while True:
        pods = [p for ns, labels in selectors for p in _pods(core, ns, labels)]
        running = [p for p in pods if p.status.phase == "Running" and p.metadata.deletion_timestamp is None]
        summary = _summary(custom, core, pods, running, started)
        if (pods and len(running) == len(pods)) or time.monotonic() > deadline:
            return summary
        time.sleep(2)


def interrupt_busiest_spot_node(
    state: world.WorldState, outputs: dict[str, str], core: Any, log: Callable[[str], None], deadline: float
) -> dict[str, Any]:
    """Send a Spot interruption warning for the Spot node running most pods and follow its workflow; returns
    `interruptions`, `executions_succeeded` and the seconds from the warning to the first eviction round and
    to the last pod leaving."""
    aws = state.client

    spot = [
        n
        for n in core.list_node(label_selector="karpenter.sh/capacity-type=spot").items
        if n.spec.provider_id and not n.spec.unschedulable
    ]
    if not spot:
        log("demo: no Spot node to interrupt")
        return {"interruptions": 0, "executions_succeeded": 0}
    pods = core.list_pod_for_all_namespaces(field_selector="status.phase=Running").items
    load = {n.metadata.name: sum(1 for p in pods if p.spec.node_name == n.metadata.name) for n in spot}
    node = max(spot, key=lambda n: (load[n.metadata.name], n.metadata.name))
    instance_id = node.spec.provider_id.rsplit("/", 1)[-1]
    sent = time.time()
    aws("events").put_events(
        Entries=[
            {
                "Source": "aws.ec2",
                "DetailType": "EC2 Spot Instance Interruption Warning",
                "Resources": [f"arn:aws:ec2:{state.region}:123456789012:instance/{instance_id}"],
                "Detail": json.dumps({"instance-id": instance_id, "instance-action": "terminate"}),
            }
        ]
    )
    name = node.metadata.name
    log(f"demo: Spot interruption warning for {instance_id} (node {name}, {load[name]} pods)")
    sfn = aws("stepfunctions")
    machine = outputs["StateMachineArn"]
    execution: dict[str, Any] = {}
    while time.monotonic() < deadline:
        found = [
            e
            for e in sfn.list_executions(stateMachineArn=machine)["executions"]
            if e["name"].startswith("SpotInterruption-") and e["startDate"].timestamp() >= sent - 1
        ]
        if found:
            execution = sfn.describe_execution(executionArn=found[0]["executionArn"])
            if execution["status"] != "RUNNING":
                break
        time.sleep(1)
    result: dict[str, Any] = {"interruptions": 1}
    if execution:
        history = sfn.get_execution_history(executionArn=execution["executionArn"], maxResults=1000)["events"]
        drains = [
            (e["timestamp"].timestamp(), json.loads(e["stateExitedEventDetails"]["output"]).get("drain") or {})
            for e in history
            if e["type"] == "TaskStateExited"
            and e["stateExitedEventDetails"]["name"].startswith(("CordonAndDrain", "CheckDrain"))
        ]
        if drains:
            result["seconds_to_drain_start"] = round(drains[0][0] - sent, 1)
            done = [t for t, d in drains if d.get("done")]
            if done:
                result["seconds_to_drain"] = round(done[0] - sent, 1)
        log(f"demo: workflow {execution['name']} {execution['status']}")
    succeeded = sfn.list_executions(stateMachineArn=machine, statusFilter="SUCCEEDED")["executions"]
    result["executions_succeeded"] = len(succeeded)
    return result


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
