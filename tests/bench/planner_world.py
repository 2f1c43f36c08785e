"""`python -m tests.bench.planner_world`: the planner's real handler on a large cluster in the local world.

    python -m tests.bench.planner_world --nodes 3000 --running 60000 --pending 500     # issue 26's size
    python -m tests.bench.planner_world --nodes 100 --running 2000 --pending 100       # a quick look
    python -m tests.bench.planner_world --state-dir D --resume --settle 0   # the scenario again on D's live fleet

What it builds: a local world (`nodewright.localworld`, with its schedules paused so the world's own planner
does not tick beside the one measured), the CDK stack synthesized with `clusterNodes=--nodes` (so the planner
gets the memory `infra/sizing.py` gives that size) and deployed into it, and a fleet of `--nodes` nodewright
nodes as a cluster that has run for a while holds them: for each, a moto instance launched from the
EC2NodeClass's image, subnet and security group with nodewright's tags, its Node (KWOK plays its kubelet) and
its NodeClaim with the launch's hash stamps and a Registered, Initialized status. All on one m5a.4xlarge
NodePool, each node packed full by `--running` bare pods (created bound, as `scale.py` does, and selecting that
NodePool: the provisioner's `bench` NodePool has cheaper larger types), so consolidation
finds nothing to do and only what the scenario changes is disrupted; the NodePool's budget lets 2 nodes go at a
time.

Before ticking it waits (at most `--settle` seconds) until KWOK has started every pod, so the ticks meet a steady
cluster and no backlog of KWOK's status writes; `cluster` says how long that took.

What it runs, printed one figure per line (JSON):

- `planner tick`: the real handler (`functions/planner/handler.py`) in a fresh process, as a Lambda container
  runs it, with the planner role's credentials and the function's environment, and its memory size enforced
  (the process exits as Lambda ends a container when its resident memory passes the function's memory). Its
  ticks: `cold` on the steady cluster (nothing to disrupt), `warm` once one node was made empty (its pods
  deleted) and another drifted (its NodeClaim's EC2NodeClass hash stamp changed, what an EC2NodeClass edit
  does), repeated a few seconds apart until both disruptions started, `warm, while the workflows run` every
  15 s until both nodes are gone (the world's own schedule is paused; in AWS it keeps ticking while workflows
  run), and `warm, after the workflows`. Per tick: seconds (the
  function's timeout beside it), CPU seconds, API server requests, writes and MiB read (with the seconds spent
  reading, and writing summed over parallel requests), the AWS calls with their count and seconds (moto's time
  included), decisions and the workflows started, peak resident memory against the function's memory.
- `empty node removed` and `drifted node rolled`: what the world's Step Functions did with those workflows: the
  node, its NodeClaim and its instance gone; for the drifted one also the replacement NodeClaim and its node.
- `provisioner` (from `scale.py`): pending pods' batch to its first CreateFleet, cold and warm, at this size.

Nothing here asserts a time; a shared two-core machine moves by a factor of two within an hour.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import sizing
from nodewright import tags
from nodewright.disruption.drift import NODECLASS_HASH, hash_annotations
from nodewright.localworld import controlplane, deploy
from nodewright.localworld import world as lw
from nodewright.localworld.registrar import INSTANCE_ANNOTATION
from nodewright.model.parse import parse_nodepool
from nodewright.model.parse_ec2nodeclass import parse_ec2nodeclass
from nodewright.model.quantity import parse_quantity
from nodewright.service.provision import node_resources
from tests.bench import scale
from tests.bench.consolidation import on_demand_cluster
from tests.bench.planner_scale import TYPES, BenchNode, node_labels, nodeclaim_document

ROOT = Path(__file__).resolve().parents[2]
POOL = "default"  # planner_scale's documents name their NodePool and EC2NodeClass so
INSTANCE_TYPE = "m5a.4xlarge"  # the cheapest 64 GiB type of TYPES: a full node has no cheaper replacement
NAMESPACE = "fleet"
NODECLAIMS = "/apis/nodewright.io/v1/nodeclaims"

# The child: a planner container's life, one tick per line read from stdin, its memory size enforced.
CHILD = """
import collections, importlib.util, json, os, resource, sys, threading, time
from nodewright.adapters import apiserver

limit_mb = int(sys.argv[2])
page = os.sysconf("SC_PAGE_SIZE")
def enforce():
    # Lambda ends a container whose memory passes the function's: Runtime.OutOfMemory.
    while True:
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * page
        if rss > limit_mb * 2**20:
            print(json.dumps({"error": f"out of memory: {rss / 2**20:.0f} MiB > {limit_mb} MB"}), flush=True)
            os._exit(137)
        time.sleep(0.05)
threading.Thread(target=enforce, daemon=True).start()

requests = []
send = apiserver.ApiServer.request
def counted(self, method, path, query=(), body=None, headers=None):
    started = time.perf_counter()
    status, data = send(self, method, path, query, body, headers)
    requests.append((method, len(data), path, time.perf_counter() - started))
    return status, data
apiserver.ApiServer.request = counted

# AWS calls and their time (moto's answer included): where a tick's wall time goes besides the API server.
from botocore.client import BaseClient
aws_calls = collections.defaultdict(lambda: [0, 0.0])
make_api_call = BaseClient._make_api_call
def timed_call(self, operation, params):
    started = time.perf_counter()
    try:
        return make_api_call(self, operation, params)
    finally:
        aws_calls[operation][0] += 1
        aws_calls[operation][1] += time.perf_counter() - started
BaseClient._make_api_call = timed_call

def kind(path):
    # /api/v1/nodes/N -> nodes; /apis/g/v/nodeclaims/N/status -> nodeclaims/status; namespaces dropped
    parts = path.strip("/").split("/")
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    return "/".join(rest[:1] + rest[2:3])

spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["handler"] = module
spec.loader.exec_module(module)

class Context:
    function_name = "planner"
    memory_limit_in_mb = limit_mb
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:planner"
    aws_request_id = "bench"
    def get_remaining_time_in_millis(self):
        return 55000

for line in sys.stdin:
    label = line.strip()
    requests.clear()
    aws_calls.clear()
    started, cpu = time.perf_counter(), time.process_time()
    result = module.handler({}, Context())
    commands = result["decisions"].get("commands", [])
    print(json.dumps({
        "tick": label,
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(time.process_time() - cpu, 2),
        "api_requests": len(requests),
        "api_writes": sum(1 for r in requests if r[0] != "GET"),
        "writes": sorted(collections.Counter(f"{r[0]} {kind(r[2])}" for r in requests if r[0] != "GET").items()),
        "mib_read": round(sum(r[1] for r in requests) / 2**20, 1),
        "api_read_seconds": round(sum(r[3] for r in requests if r[0] == "GET"), 2),
        "api_write_seconds_summed": round(sum(r[3] for r in requests if r[0] != "GET"), 2),
        "aws_calls": {op: [n, round(t, 2)] for op, (n, t) in sorted(aws_calls.items())},
        "decisions": len(commands),
        "started": [f"{s['method']}/{s['reason']} {s['nodeclaim']}" for s in result["started"]],
        "problems": len(result["problems"]),
        "problem_samples": [str(p)[:200] for p in result["problems"][:3]],
        "repaired": len(result["repaired"]),
        "collected": len(result["collected"]),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "memory_mb": limit_mb,
    }), flush=True)
"""


@dataclass
class WorldNode(BenchNode):
    """A fleet node whose instance is a real moto instance: its id and private DNS name are moto's."""

    instance: str = ""
    dns: str = ""

    @property
    def name(self) -> str:
        return self.dns

    @property
    def instance_id(self) -> str:
        return self.instance


def pool_documents(state: lw.WorldState, node_role: str) -> list[tuple[str, dict[str, Any]]]:
    """The fleet's EC2NodeClass and NodePool: on-demand, the 4xlarge types of planner_scale, budget 2 nodes."""
    discovery = [{"tags": {"karpenter.sh/discovery": state.cluster}}]
    node_class = {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": POOL},
        "spec": {
            "role": node_role,
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
        },
    }
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(TYPES)},
    ]
    pool = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": POOL},
        "spec": {
            "template": {
                "spec": {
                    "requirements": requirements,
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": POOL},
                    "expireAfter": "720h",
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "0s",
                "budgets": [{"nodes": "2"}],
            },
        },
    }
    return [("/apis/nodewright.io/v1/ec2nodeclasses", node_class), ("/apis/nodewright.io/v1/nodepools", pool)]


def stamps(api: scale.Api) -> tuple[dict[str, str], str]:
    """The hash stamps a launch from the served NodePool and EC2NodeClass gets, and the NodePool's uid."""
    served_pool = api.get(f"/apis/nodewright.io/v1/nodepools/{POOL}")[0]
    served_class = api.get(f"/apis/nodewright.io/v1/ec2nodeclasses/{POOL}")[0]
    pool, _ = parse_nodepool(served_pool)
    node_class, _ = parse_ec2nodeclass(served_class)
    assert pool is not None and node_class is not None
    return hash_annotations(pool, node_class), str(served_pool["metadata"]["uid"])


def _claim_document(
    node: WorldNode, resources: dict[str, Any], stamped: dict[str, str], pool_uid: str, image: str
) -> dict[str, Any]:
    """planner_scale's NodeClaim as the API server takes it on create (its status goes in through /status)."""
    doc = nodeclaim_document(node, resources, stamped)
    meta = doc["metadata"]
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"):
        meta.pop(key)
    meta["finalizers"] = [tags.FINALIZER]
    meta["ownerReferences"][0]["uid"] = pool_uid  # the served NodePool's: the garbage collector checks it
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc["status"]["imageID"] = image  # the EC2NodeClass's image today, or the node has drifted (AMIDrift)
    for condition in doc["status"]["conditions"]:
        condition["lastTransitionTime"] = now
    return doc


def _node_document(node: WorldNode, resources: dict[str, Any]) -> dict[str, Any]:
    """The Node its kubelet registers (KWOK keeps its capacity and fills in conditions and heartbeats)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {**node_labels(node), "kwok.x-k8s.io/node": "fake"},
            "annotations": {INSTANCE_ANNOTATION: node.instance_id},
            "finalizers": [tags.FINALIZER],
        },
        "spec": {"providerID": node.provider_id},
        "status": dict(resources),
    }


def _pod(node: WorldNode, slot: int, cpu_m: int, memory_mi: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"run-{node.index:05d}-{slot:02d}", "labels": {"app": f"app-{node.index % 200}"}},
        "spec": {
            "nodeName": node.name,
            # The fleet's NodePool only: the provisioner's `bench` NodePool offers larger, cheaper types (an
            # m6g.8xlarge for two full m5a.4xlarge), which multi-node consolidation rightly took for a saving.
            "nodeSelector": {"karpenter.sh/nodepool": POOL},
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/app:1.0",
                    "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": f"{memory_mi}Mi"}},
                    "env": [{"name": "SETTING", "value": "x" * 40}],
                    "ports": [{"containerPort": 8080}],
                }
            ],
        },
    }


class Fleet:
    """Launches and registers the fleet: moto instances, Nodes, NodeClaims, and the pods packing the nodes."""

    def __init__(self, state: lw.WorldState, api: scale.Api) -> None:
        self.state, self.api = state, api
        self.ec2 = state.client("ec2")
        parameter = f"/aws/service/eks/optimized-ami/{lw.K8S_MINOR}/amazon-linux-2023/x86_64/standard/recommended"
        self.image = state.client("ssm").get_parameter(Name=f"{parameter}/image_id")["Parameter"]["Value"]
        cluster = on_demand_cluster()
        self.instance_type = {it.name: it for it in cluster.instance_types}[INSTANCE_TYPE]
        self.resources = node_resources(self.instance_type, cluster.nodeclass)

    def launch(self, index: int, stamped: dict[str, str], pool_uid: str) -> WorldNode:
        """One node: its instance, Node and NodeClaim (status included)."""
        zone = sorted(self.state.subnet_ids)[index % len(self.state.subnet_ids)]
        node = WorldNode(index, self.instance_type, zone)
        launch_tags = tags.launch_tags(self.state.cluster, POOL, POOL, node.claim)
        [instance] = self.ec2.run_instances(
            ImageId=self.image,
            InstanceType=INSTANCE_TYPE,
            MinCount=1,
            MaxCount=1,
            SubnetId=self.state.subnet_ids[zone],
            SecurityGroupIds=[self.state.security_group_id],
            TagSpecifications=[
                {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in launch_tags.items()]}
            ],
        )["Instances"]
        node.instance, node.dns = instance["InstanceId"], instance["PrivateDnsName"]
        self.api.post("/api/v1/nodes", _node_document(node, self.resources))
        claim = _claim_document(node, self.resources, stamped, pool_uid, self.image)
        status = claim.pop("status")
        self.api.post(NODECLAIMS, claim)
        path = f"{NODECLAIMS}/{node.claim}/status"
        self.api.send("PATCH", path, {"status": status}, "application/merge-patch+json")
        return node

    def existing(self) -> list[WorldNode]:
        """The fleet an earlier run of this bench built in this world (`--resume`), from its NodeClaims."""
        claims = self.api.get(NODECLAIMS, labelSelector=f"karpenter.sh/nodepool={POOL}")[0]["items"]
        fleet = []
        for claim in claims:
            index = int(claim["metadata"]["name"].removeprefix(f"{POOL}-"), 16)
            status = claim.get("status", {})
            zone, instance = status["providerID"].removeprefix("aws:///").split("/")
            fleet.append(WorldNode(index, self.instance_type, zone, instance=instance, dns=status["nodeName"]))
        return sorted(fleet, key=lambda node: node.index)

    def pods_per_node(self, nodes: int, running: int) -> tuple[int, int, int]:
        """(pods a node, cpu m, memory Mi) so `running` pods fill every node to the brim."""
        count = max(1, running // nodes)
        allocatable = self.resources["allocatable"]
        cpu_m = int(parse_quantity(allocatable["cpu"]) * 1000) // count
        memory_mi = int(parse_quantity(allocatable["memory"]) / 2**20) // count
        return count, cpu_m, memory_mi

    def build(self, nodes: int, running: int, log: Callable[[str], None]) -> list[WorldNode]:
        """Launch `nodes` nodes and pack them with `running` pods; returns the nodes by index."""
        stamped, pool_uid = stamps(self.api)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as executor:
            fleet = list(executor.map(lambda i: self.launch(i, stamped, pool_uid), range(nodes)))
        log(f"{nodes} instances, Nodes and NodeClaims in {time.monotonic() - started:.0f}s")
        self.api.post("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        scale._wait(lambda: bool(self.api.get(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts")[0]["items"]), 60, "sa")
        count, cpu_m, memory_mi = self.pods_per_node(nodes, running)
        started = time.monotonic()
        pods = (_pod(node, slot, cpu_m, memory_mi) for node in fleet for slot in range(count))
        self.api.create_all(f"/api/v1/namespaces/{NAMESPACE}/pods", pods)
        took = time.monotonic() - started
        log(f"{count * nodes} pods ({count} a node, {cpu_m}m and {memory_mi}Mi each) in {took:.0f}s")
        return fleet


@contextmanager
def planner_process(
    state: lw.WorldState, outputs: dict[str, str], memory_mb: int
) -> Iterator[Callable[[str], dict[str, Any]]]:
    """A fresh planner container: yields tick(label) -> its figure line (as a dict)."""
    env = scale.function_env(state, outputs["PlannerFunctionName"])
    env["PYTHONPATH"] = str(ROOT / "layers" / "core" / "python")
    handler = ROOT / "functions" / "planner" / "handler.py"
    # Its log to a file: a pipe nobody reads while the bench waits would fill and stop the child mid-tick.
    with tempfile.TemporaryFile(mode="w+") as errors:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(handler), str(memory_mb)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None

        def tick(label: str) -> dict[str, Any]:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(label + "\n")
            child.stdin.flush()
            for line in child.stdout:
                if line.startswith(('{"tick"', '{"error"')):
                    figure: dict[str, Any] = json.loads(line)
                    if "error" in figure:
                        raise SystemExit(f"the planner's process: {figure['error']}")
                    return figure
            errors.seek(0)
            raise SystemExit(f"the planner's process ended (exit {child.wait()}):\n{errors.read()[-4000:]}")

        try:
            yield tick
        finally:
            child.stdin.close()
            child.wait(timeout=120)


def wait_running(api: scale.Api, timeout: float) -> int:
    """Wait until KWOK has started every fleet pod (a steady cluster, and no KWOK backlog loading the API server
    while the planner ticks), at most `timeout` seconds; returns how many are still not Running. Asks for a page
    of the pods not Running, not the whole list, every few seconds."""
    deadline = time.monotonic() + timeout
    while True:
        page = api.get(f"/api/v1/namespaces/{NAMESPACE}/pods", fieldSelector="status.phase!=Running", limit="500")[0]
        left = len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)
        if not page["items"] or time.monotonic() >= deadline:
            return left
        time.sleep(5)


def disrupt(api: scale.Api, empty: WorldNode, drifted: WorldNode) -> None:
    """Make `empty` empty (its pods deleted at once) and `drifted` drifted (its EC2NodeClass hash stamp changed)."""
    for item in api.get(f"/api/v1/namespaces/{NAMESPACE}/pods", fieldSelector=f"spec.nodeName={empty.name}")[0][
        "items"
    ]:
        api.send("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{item['metadata']['name']}", {"gracePeriodSeconds": 0})
    stale = {"metadata": {"annotations": {NODECLASS_HASH: "drifted-by-the-bench"}}}
    api.send("PATCH", f"{NODECLAIMS}/{drifted.claim}", stale, "application/merge-patch+json")


def _exists(api: scale.Api, path: str) -> bool:
    response = api.pool.request("GET", api.base + path)
    return response.status == 200


def gone(api: scale.Api, node: WorldNode) -> bool:
    """Whether `node`'s Node and NodeClaim are both gone."""
    return not _exists(api, f"/api/v1/nodes/{node.name}") and not _exists(api, f"{NODECLAIMS}/{node.claim}")


def outcome(state: lw.WorldState, api: scale.Api, node: WorldNode, before: set[str]) -> dict[str, Any]:
    """What became of `node`, its NodeClaim and its instance, and the NodeClaims created since `before` (a
    replacement) with their nodes."""
    instance = state.client("ec2").describe_instances(InstanceIds=[node.instance_id])["Reservations"][0]["Instances"][0]
    claims = api.get(NODECLAIMS)[0]["items"]
    new = [c for c in claims if c["metadata"]["name"] not in before]
    return {
        "node": node.name,
        "nodeclaim": node.claim,
        "node_gone": not _exists(api, f"/api/v1/nodes/{node.name}"),
        "nodeclaim_gone": not _exists(api, f"{NODECLAIMS}/{node.claim}"),
        "instance": instance["State"]["Name"],
        "new_nodeclaims": [
            {"name": c["metadata"]["name"], "node": c.get("status", {}).get("nodeName", "")} for c in new
        ],
    }


def executions(state: lw.WorldState, outputs: dict[str, str]) -> list[str]:
    """The workflow executions and their status."""
    listed = state.client("stepfunctions").list_executions(stateMachineArn=outputs["StateMachineArn"])["executions"]
    return [f"{e['name']} {e['status']}" for e in listed]


def emit_tick(figure: dict[str, Any], timeout_s: int) -> None:
    """A tick's figure line, with whether it ended within the function's timeout (Lambda ends it there) and
    without problems (the child already ended the run if it passed the function's memory)."""
    ok = figure["seconds"] <= timeout_s and not figure["problems"]
    scale._emit({"figure": "planner tick", **figure, "timeout_s": timeout_s, "within_timeout_no_problems": ok})


def run(args: argparse.Namespace, state: lw.WorldState, log: Callable[[str], None]) -> None:
    outputs = deploy.install(state, log, context={"clusterNodes": str(args.nodes)})
    config = state.client("lambda").get_function_configuration(FunctionName=outputs["PlannerFunctionName"])
    memory_mb, timeout_s = int(config["MemorySize"]), int(config["Timeout"])
    scale._emit(
        {
            "figure": "stack",
            "clusterNodes": args.nodes,
            "planner_memory_mb": memory_mb,
            "sizing_planner_mb": sizing.planner_memory_mb(args.nodes),
            "planner_timeout_s": timeout_s,
        }
    )
    api = scale.Api(state)
    for path, body in [
        *pool_documents(state, outputs["NodeRoleName"]),
        *scale.nodewright_objects(state, outputs["NodeRoleName"]),
    ]:
        api.post(path, body)
    if args.resume:
        fleet = Fleet(state, api).existing()
        log(f"resumed: {len(fleet)} nodes of an earlier run")
    else:
        fleet = Fleet(state, api).build(args.nodes, args.running, log)
    started = time.monotonic()
    waiting = wait_running(api, args.settle)
    pods = api.get(f"/api/v1/namespaces/{NAMESPACE}/pods", resourceVersion="0")[0]["items"]
    running = sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
    settled = round(time.monotonic() - started)
    scale._emit(
        {"figure": "cluster", "nodes": len(fleet), "pods": len(pods), "running_now": running, "settle_s": settled}
    )
    if waiting:
        log(f"{waiting} pods still not Running after {settled}s: the ticks run while KWOK starts them")
    empty, drifted = fleet[0], fleet[len(fleet) // 2]
    before = {n.claim for n in fleet}
    with planner_process(state, outputs, memory_mb) as tick:
        emit_tick(tick("cold"), timeout_s)
        disrupt(api, empty, drifted)
        # Warm ticks a few seconds apart until both disruptions started (or 4 ticks): as the schedule would tick.
        wanted = {empty.claim, drifted.claim}
        for _ in range(4):
            figure = tick("warm")
            emit_tick(figure, timeout_s)
            wanted -= {entry.split()[-1] for entry in figure["started"]}
            if not wanted:
                break
            time.sleep(5)
        # The schedule ticks on while the workflows run (the world's is paused: this container ticks instead).
        waited = time.monotonic()
        while not (gone(api, empty) and gone(api, drifted)) and time.monotonic() - waited < args.wait:
            time.sleep(15)
            figure = tick("warm, while the workflows run")
            emit_tick(figure, timeout_s)
        seconds = round(time.monotonic() - waited, 1)
        scale._emit({"figure": "empty node removed", **outcome(state, api, empty, before), "seconds": seconds})
        scale._emit({"figure": "drifted node rolled", **outcome(state, api, drifted, before), "seconds": seconds})
        scale._emit({"figure": "workflows", "executions": executions(state, outputs)})
        emit_tick(tick("warm, after the workflows"), timeout_s)
    if args.pending:
        scale.measure_provisioner(state, outputs, api, args.pending, log)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--running", type=int, default=60000)
    parser.add_argument("--pending", type=int, default=500, help="pending pods a batch for the provisioner (0: none)")
    parser.add_argument("--wait", type=float, default=600, help="seconds to wait for the disruptions to end")
    parser.add_argument(
        "--settle", type=float, default=900, help="seconds to wait for KWOK to start the fleet's pods before ticking"
    )
    parser.add_argument(
        "--lease-seconds",
        type=int,
        default=40,
        help="KWOK's node lease (the grace before a silent node turns NotReady is 1.25x); longer spares the API server",
    )
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="leave the world running afterwards")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="use the live world in --state-dir with the fleet an earlier run built (kept, or stopped mid-run)",
    )
    args = parser.parse_args(argv)
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="nodewright-planner-world-"))

    def log(line: str) -> None:
        print(line if line.startswith("#") else f"# {line}", file=sys.stderr, flush=True)

    # Kubernetes' own node-health timing by default (a 40 s lease renewed every 10 s, as a kubelet does), not the
    # tests' 10 s lease: thousands of KWOK nodes renewing four times as often would be most of the API server's load.
    # On two cores even 3,000 renewals every 10 s starve pod creation, so a run may lengthen the lease: the scenario
    # never waits for a node to turn NotReady (a workflow deletes the nodes it removes).
    lease = args.lease_seconds
    timing = controlplane.Timing(
        node_lease_seconds=lease, node_monitor_grace=f"{lease * 5 // 4}s", node_monitor_period="5s"
    )
    options = lw.Options(
        cluster=f"scale-{uuid.uuid4().hex[:4]}", short_waits=True, schedules_paused=True, boot_delay=15, timing=timing
    )
    loaded = lw.load_state(state_dir) if args.resume else None
    if args.resume and loaded is None:
        raise SystemExit(f"--resume: no world in {state_dir}")
    state = loaded or lw.up(state_dir, options, log)
    try:
        run(args, state, log)
    finally:
        if not args.keep:
            lw.down(state_dir, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
