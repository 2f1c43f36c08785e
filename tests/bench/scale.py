"""`python -m tests.bench.scale`: the provisioner and the interruption handler on a large cluster in the local world.

    python -m tests.bench.scale                       # 1,000 nodes, 20,000 running pods, 500 pending
    python -m tests.bench.scale --nodes 100 --running 2000 --pending 100     # a quick look
    python -m tests.bench.scale --state-dir /tmp/scale --keep                 # reuse the world next time
    python -m tests.bench.scale --state-dir /tmp/scale --keep --profile /tmp/prof   # cProfile of each call
    python -m tests.bench.scale --state-dir /tmp/scale --keep --code /work/main       # another checkout's handler

What it builds: a local world (`nodewright.localworld`: a real kube-apiserver, KWOK, moto), the CDK stack
deployed into it, `--nodes` KWOK nodes over three zones and `--running` pods bound to them (created bound, as
a cluster that has been running for a while; KWOK runs them), labelled in 200 apps so topology selectors have
something to count, and twice `--pending` pods the kube-scheduler marks Unschedulable (they select the
NodePool's label, which no existing node has): a Karpenter-style mix of small, medium, large, arm64-only and
zone-spread pods, in a fresh namespace per batch (a reused world keeps its nodes and running pods; the pending
namespaces and NodeClaims of earlier runs are deleted first, so every run starts from the same cluster).

What it measures, printed one figure per line (JSON):

- `provisioner`: the real handler (`functions/provisioner/handler.py`) in a fresh process, as a Lambda
  container runs it, with the credentials of the stack's provisioner role (so it reaches the API server with
  an EKS token, as in AWS) and the function's environment. It is invoked with the forwarder's payload for the
  first namespace's pending pods (a cold container) and then for the second's (warm). Per call: batch arrival
  (the handler called) to the first CreateFleet request, the handler's own timings (cluster read, prepare,
  solve), the API server requests it made and the bytes they returned, and the process's peak resident memory
  (the function has 1,769 MB). The second namespace's pods are created only once the first call has answered:
  a provisioner plans every pending pod of the cluster, so pods pending before the cold call would leave the
  warm one nothing to do. Also, for comparison, what one list of every pod costs (what each batch read
  before reads were narrowed).
- `interruption`: the real interruption service with the adapters the Lambda builds, for a Spot warning about
  an instance of another cluster (and, for contrast, one of ours): the decision, its time, and the API server
  requests it needed (none for the foreign one).

Nothing here asserts a time; a shared two-core machine moves by a factor of two within an hour.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import urllib3

from nodewright.adapters import aws_sdk
from nodewright.forwarder.batching import build_payloads, hint_of
from nodewright.localworld import deploy
from nodewright.localworld import world as lw
from nodewright.model.pending import is_pending

ROOT = Path(__file__).resolve().parents[2]
POOL = "bench"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}

# The child: a Lambda container's life for two invocations, with the first CreateFleet timed at the client.
CHILD = """
import importlib.util, json, resource, sys, time
from nodewright.adapters import apiserver, ec2_launcher

first_fleet = []
create_fleet = ec2_launcher.Ec2Cloud.create_fleet
def timed_fleet(self, request):
    first_fleet.append(time.perf_counter())
    return create_fleet(self, request)
ec2_launcher.Ec2Cloud.create_fleet = timed_fleet

requests = []
send = apiserver.ApiServer.request
def counted(self, method, path, query=(), body=None, headers=None):
    started = time.perf_counter()
    status, data = send(self, method, path, query, body, headers)
    took = time.perf_counter() - started
    requests.append((method, path, dict(query).get("fieldSelector", ""), len(data), took, started))
    return status, data
apiserver.ApiServer.request = counted

# AWS calls, with when they started: what the first CreateFleet waited for.
from botocore.client import BaseClient
aws_calls = []
make_api_call = BaseClient._make_api_call
def timed_call(self, operation, params):
    started = time.perf_counter()
    try:
        return make_api_call(self, operation, params)
    finally:
        aws_calls.append((operation, started, time.perf_counter() - started))
BaseClient._make_api_call = timed_call

spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["handler"] = module
spec.loader.exec_module(module)

KEPT = ("read_cluster", "prepare", "solve", "first_create_fleet")

class Context:
    function_name = "provisioner"
    memory_limit_in_mb = 1769
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:provisioner"
    aws_request_id = "bench"
    def get_remaining_time_in_millis(self):
        return 120000

profile_dir = sys.argv[2] if len(sys.argv) > 2 else ""
# One batch a line on stdin (`<label> <payload path>`): the parent creates the next batch's pods only after this
# one is answered, as a warm container meets pods that became pending after its last batch.
for line in sys.stdin:
    label, path = line.split()
    event = json.loads(open(path).read())
    first_fleet.clear(); requests.clear(); aws_calls.clear()
    profiler = None
    if profile_dir:
        import cProfile
        profiler = cProfile.Profile()
        profiler.enable()
    arrival = time.perf_counter()
    response = module.handler(event, Context())
    done = time.perf_counter()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(f"{profile_dir}/{label}.prof")
    posted = [r for r in requests if r[0] == "POST" and r[1].endswith("/nodeclaims")]
    first_post = min((r[5] for r in posted), default=done)
    print(json.dumps({
        "call": label,
        "pods": len(event["pods"]),
        "arrival_to_first_create_fleet_s": round(first_fleet[0] - arrival, 3) if first_fleet else None,
        "handler_s": round(done - arrival, 3),
        "timings": {k: v for k, v in response["timings"].items() if k in KEPT},
        "nodeclaims": len(response["nodeclaims"]),
        "pods_nominated": response["summary"].get("nominated", 0),
        "unschedulable": response["summary"].get("unschedulable", 0),
        "api_requests": len(requests),
        "api_bytes": sum(r[3] for r in requests),
        "pod_lists": sorted({r[2] for r in requests if r[1].endswith("/pods")}),
        "slowest_requests": [
            f"{r[0]} {r[1]} {r[2]} {r[3]} bytes {r[4]:.2f}s" for r in sorted(requests, key=lambda r: -r[4])[:4]
        ],
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "first_nodeclaim_created_s": round(min((r[5] + r[4] for r in posted), default=arrival) - arrival, 3),
        # What the decision read, in order, with its start, time and size: where the read's time went.
        "reads_before_first_nodeclaim": [
            f"{r[1]} {r[2]} at {r[5] - arrival:.2f}s {r[4]:.2f}s {r[3]} bytes"
            for r in sorted(requests, key=lambda r: r[5])
            if r[0] == "GET" and r[5] <= first_post
        ][:24],
        "aws_calls_before_first_create_fleet": [
            f"{op} at {start - arrival:.2f}s {took:.2f}s" for op, start, took in sorted(aws_calls, key=lambda c: c[1])
            if first_fleet and start <= first_fleet[0]
        ][-12:],
    }), flush=True)
"""


def _commit(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain"], capture_output=True, text=True)
    return done.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def _emit(figure: dict[str, Any]) -> None:
    print(json.dumps(figure), flush=True)


class Api:
    """Plain REST to the world's API server with its admin certificate (fast bulk creation)."""

    def __init__(self, state: lw.WorldState) -> None:
        config = json.loads(Path(state.kubeconfig).read_text())
        user = config["users"][0]["user"]
        self.base = config["clusters"][0]["cluster"]["server"]
        self.pool = urllib3.PoolManager(
            maxsize=16, ca_certs=state.ca_file, cert_file=user["client-certificate"], key_file=user["client-key"]
        )

    def post(self, path: str, body: dict[str, Any]) -> None:
        response = self.pool.request(
            "POST", self.base + path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        if response.status >= 300 and response.status != 409:
            raise RuntimeError(f"POST {path}: {response.status} {response.data[:300]!r}")

    def get(self, path: str, **query: str) -> tuple[dict[str, Any], int, float]:
        started = time.perf_counter()
        response = self.pool.request("GET", self.base + path, fields=query)
        data = response.data
        return json.loads(data), len(data), time.perf_counter() - started

    def send(self, method: str, path: str, body: dict[str, Any] | None = None, content_type: str = "") -> None:
        headers = {"Content-Type": content_type or "application/json"}
        data = json.dumps(body).encode() if body is not None else None
        response = self.pool.request(method, self.base + path, body=data, headers=headers)
        if response.status >= 300 and response.status != 404:
            raise RuntimeError(f"{method} {path}: {response.status} {response.data[:300]!r}")

    def create_all(self, path: str, bodies: Iterable[dict[str, Any]]) -> None:
        with ThreadPoolExecutor(max_workers=16) as executor:
            list(executor.map(lambda body: self.post(path, body), bodies))


def _node(i: int) -> dict[str, Any]:
    name = f"bench-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kwok.x-k8s.io/node": "fake",
                "topology.kubernetes.io/zone": ZONES[i % 3],
                "node.kubernetes.io/instance-type": "m5.4xlarge",
            },
        },
        "status": {
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "allocatable": {"cpu": "15890m", "memory": "62Gi", "pods": "110"},
        },
    }


def _running(i: int, nodes: int) -> dict[str, Any]:
    app = f"app-{i % 200}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"run-{i:05d}", "labels": {"app": app, "tier": "web"}},
        "spec": {
            "nodeName": f"bench-{i % nodes:05d}",
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/app:1.0",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                    "env": [{"name": "SETTING", "value": "x" * 40}],
                    "ports": [{"containerPort": 8080}],
                }
            ],
        },
    }


def _pending(i: int, count: int) -> dict[str, Any]:
    """A Karpenter-style mix: 40 % small, 25 % medium, 15 % large, 10 % arm64-only, 10 % zone-spread."""
    share = i / count
    cpu, memory, app = "250m", "256Mi", "web"
    extra: dict[str, Any] = {}
    if share >= 0.4:
        cpu, memory, app = "500m", "1Gi", "api"
    if share >= 0.65:
        cpu, memory, app = "2", "4Gi", "worker"
    if share >= 0.8:
        cpu, memory, app = "500m", "512Mi", "arm"
        extra["nodeSelector"] = {"karpenter.sh/nodepool": POOL, "kubernetes.io/arch": "arm64"}
    if share >= 0.9:
        cpu, memory, app = "500m", "512Mi", "spread"
        extra = {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "spread"}},
                }
            ]
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pend-{i:04d}", "labels": {"app": app}},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": POOL},
            "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            **extra,
        },
    }


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(2)
    raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")


def populate(api: Api, nodes: int, running: int, log: Callable[[str], None]) -> None:
    """Create what the cluster does not hold yet (a reused world keeps what an earlier run made)."""
    have = {n["metadata"]["name"] for n in api.get("/api/v1/nodes", resourceVersion="0")[0]["items"]}
    if len([n for n in have if n.startswith("bench-")]) >= nodes:
        log("# the cluster is populated already")
        return
    started = time.monotonic()
    api.create_all("/api/v1/nodes", (_node(i) for i in range(nodes)))
    api.post("/api/v1/namespaces", {"metadata": {"name": "bench-running"}})
    _wait(lambda: bool(api.get("/api/v1/namespaces/bench-running/serviceaccounts")[0]["items"]), 60, "the namespace")
    log(f"# {nodes} nodes in {time.monotonic() - started:.0f}s")
    started = time.monotonic()
    api.create_all("/api/v1/namespaces/bench-running/pods", (_running(i, nodes) for i in range(running)))
    log(f"# {running} running pods in {time.monotonic() - started:.0f}s")


def forget_earlier_runs(state: lw.WorldState, api: Api, log: Callable[[str], None]) -> None:
    """A reused world starts each run as the first did: the instances earlier runs launched are terminated, and
    their nodes, the NodeClaims and the pending namespaces deleted (finalizers off), so runs of different code
    see the same cluster with nothing in flight."""
    ec2 = boto3.client(
        "ec2",
        endpoint_url=state.endpoint_url,
        region_name=state.region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    # Every instance the registrar would make a node of (it goes by any of these tags).
    live = {"Name": "instance-state-name", "Values": ["pending", "running"]}
    by_tag = [
        {"Name": "tag-key", "Values": [f"kubernetes.io/cluster/{state.cluster}"]},
        {"Name": "tag:nodewright.io/cluster", "Values": [state.cluster]},
        {"Name": "tag:eks:eks-cluster-name", "Values": [state.cluster]},
    ]
    reservations = [r for f in by_tag for r in ec2.describe_instances(Filters=[f, live])["Reservations"]]
    instances = sorted({i["InstanceId"] for r in reservations for i in r["Instances"]})
    if instances:
        ec2.terminate_instances(InstanceIds=instances)
    merge = "application/merge-patch+json"

    def delete(paths: list[str]) -> None:
        for path in paths:
            api.send("PATCH", path, {"metadata": {"finalizers": None}}, merge)
            api.send("DELETE", path)

    def launched_nodes() -> list[str]:
        items = api.get("/api/v1/nodes")[0]["items"]
        return [
            f"/api/v1/nodes/{n['metadata']['name']}" for n in items if not n["metadata"]["name"].startswith("bench-")
        ]

    claims = [
        f"/apis/nodewright.io/v1/nodeclaims/{c['metadata']['name']}"
        for c in api.get("/apis/nodewright.io/v1/nodeclaims")[0]["items"]
    ]
    delete(claims)
    old = [
        n["metadata"]["name"]
        for n in api.get("/api/v1/namespaces")[0]["items"]
        if n["metadata"]["name"].startswith("bench-") and n["metadata"]["name"] != "bench-running"
    ]
    for namespace in old:
        # Their pods at once: a pod bound to a node whose instance was just terminated has no kubelet left to confirm
        # its graceful deletion, and would hold its namespace until the pod garbage collector comes round.
        api.send("DELETE", f"/api/v1/namespaces/{namespace}/pods", {"gracePeriodSeconds": 0})
        api.send("DELETE", f"/api/v1/namespaces/{namespace}")

    def gone() -> bool:
        return not set(old) & {n["metadata"]["name"] for n in api.get("/api/v1/namespaces")[0]["items"]}

    _wait(gone, 600, "the namespaces of earlier runs to go")
    # Last, once instances that were still booting have had time to register: their nodes go too.
    nodes = launched_nodes()
    delete(nodes)
    if instances or claims or nodes or old:
        log(
            f"# removed what earlier runs left: {len(instances)} instances, {len(claims)} NodeClaims, "
            f"{len(nodes)} nodes, {len(old)} namespaces"
        )


def pending_pods(api: Api, pending: int, namespace: str) -> str:
    """A fresh namespace of `pending` pods, once the kube-scheduler has marked each one it could not bind
    Unschedulable (a node an earlier batch launched may take some)."""
    api.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    _wait(lambda: bool(api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts")[0]["items"]), 60, "the namespace")
    api.create_all(f"/api/v1/namespaces/{namespace}/pods", (_pending(i, pending) for i in range(pending)))

    def all_decided() -> bool:
        # As the watch cache has them, where the forwarder's watch sees them (see `payload`).
        items = api.get(f"/api/v1/namespaces/{namespace}/pods", resourceVersion="0")[0]["items"]
        return len(items) >= pending and all(is_pending(p) or p["spec"].get("nodeName") for p in items)

    _wait(all_decided, 900, "the pending pods marked Unschedulable")
    return namespace


def nodewright_objects(state: lw.WorldState, node_role: str) -> list[tuple[str, dict[str, Any]]]:
    discovery = [{"tags": {"karpenter.sh/discovery": state.cluster}}]
    return [
        (
            "/apis/nodewright.io/v1/ec2nodeclasses",
            {
                "apiVersion": "nodewright.io/v1",
                "kind": "EC2NodeClass",
                "metadata": {"name": POOL},
                "spec": {
                    "amiSelectorTerms": [{"alias": "al2023@latest"}],
                    "role": node_role,
                    "subnetSelectorTerms": discovery,
                    "securityGroupSelectorTerms": discovery,
                },
            },
        ),
        (
            "/apis/nodewright.io/v1/nodepools",
            {
                "apiVersion": "nodewright.io/v1",
                "kind": "NodePool",
                "metadata": {"name": POOL},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": POOL},
                            "requirements": [
                                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                                {
                                    "key": "karpenter.k8s.aws/instance-category",
                                    "operator": "In",
                                    "values": ["c", "m", "r"],
                                },
                            ],
                        }
                    }
                },
            },
        ),
    ]


def payload(api: Api, state: lw.WorldState, namespace: str) -> dict[str, Any]:
    """The forwarder's payload for the namespace's pending pods, read from the watch cache (resourceVersion=0), where
    the forwarder's own watch sees pods: only a hint at a version the provisioner's cache has not reached yet sends the
    provisioner to read its namespace again (0.03-0.34 s at 3,000 nodes); a pod the kube-scheduler rewrote since
    (a new condition message as nodes come and go) is read at its later version and confirms the hint."""
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods", resourceVersion="0")[0]["items"]
    [built] = build_payloads([hint_of(p) for p in pods if is_pending(p)], state.cluster, "bench")
    result: dict[str, Any] = json.loads(built.body)
    return result


def function_env(state: lw.WorldState, function: str) -> dict[str, str]:
    """The function's environment and its role's credentials, as the Lambda service would give them."""
    aws: dict[str, Any] = {
        "endpoint_url": state.endpoint_url,
        "region_name": state.region,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    config = boto3.client("lambda", **aws).get_function_configuration(FunctionName=function)
    role = boto3.client("sts", **aws).assume_role(RoleArn=config["Role"], RoleSessionName=function[:64])
    credentials = role["Credentials"]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "NODEWRIGHT_", "POWERTOOLS_"))},
        **config["Environment"]["Variables"],
        "AWS_ENDPOINT_URL": state.endpoint_url,
        "AWS_REGION": state.region,
        "AWS_DEFAULT_REGION": state.region,
        "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
        "AWS_SESSION_TOKEN": credentials["SessionToken"],
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    # The dependencies layer's trimmed AWS models are at a layer path in Lambda; here, the same models built
    # from the installed botocore (as the local world's Lambda seam does).
    if aws_sdk.MODELS_ENV in env:
        env[aws_sdk.MODELS_ENV] = str(aws_sdk.cached_models())
    return env


def measure_provisioner(
    state: lw.WorldState,
    outputs: dict[str, str],
    api: Api,
    pending: int,
    log: Callable[[str], None],
    profile: Path | None = None,
    code: Path = ROOT,
) -> None:
    """The provisioner's handler in a fresh process: a batch of `pending` new pods (cold), then, once it has
    answered, a batch of `pending` more pods created after it (warm). Prints a `provisioner` figure per call."""
    run = uuid.uuid4().hex[:4]
    env = function_env(state, outputs["ProvisionerFunctionName"])
    # The checkout measured: its handler file, and its core package first on the path.
    env["PYTHONPATH"] = os.pathsep.join([str(code / "layers" / "core" / "python"), str(ROOT)])
    handler = code / "functions" / "provisioner" / "handler.py"
    log("# running the provisioner's handler in a fresh process (cold, then warm)")
    # Its log to a file: a pipe nobody reads while the bench creates the next pods would fill and stop the child.
    with (
        tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp,
        tempfile.TemporaryFile(mode="w+") as errors,
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(handler), *([str(profile)] if profile else [])],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        ) as child,
    ):
        assert child.stdin is not None and child.stdout is not None
        for label in ("cold", "warm"):
            namespace = pending_pods(api, pending, f"bench-{run}-{label}")
            path = Path(tmp) / f"{namespace}.json"
            path.write_text(json.dumps(payload(api, state, namespace)))
            child.stdin.write(f"{label} {path}\n")
            child.stdin.flush()
            # The handler logs to stdout too (Powertools): its figure is the line that starts with {"call".
            answer = next((line for line in child.stdout if line.startswith('{"call"')), None)
            if answer is None:
                errors.seek(0)
                raise SystemExit(f"the provisioner's process ended (exit {child.wait()}):\n{errors.read()[-4000:]}")
            _emit({"figure": "provisioner", **json.loads(answer)})
        child.stdin.close()
    # After the provisioner, so its 20,000 pods of load on the API server do not weigh on the calls measured.
    every, size, seconds = api.get("/api/v1/pods", resourceVersion="0")
    _emit(
        {
            "figure": "one list of every pod (what each batch read before)",
            "pods": len(every["items"]),
            "mib": round(size / 2**20, 1),
            "seconds": round(seconds, 2),
        }
    )


def measure_interruption(state: lw.WorldState, outputs: dict[str, str]) -> None:
    from nodewright.adapters.apiserver import ApiServer
    from nodewright.adapters.dynamodb_state import DynamoDBState
    from nodewright.adapters.ec2_launcher import Ec2Cloud
    from nodewright.adapters.eks_token import EksTokenSource
    from nodewright.adapters.kubernetes_cluster import KubernetesCluster
    from nodewright.service.interrupt import handle_message

    # Deciding about a foreign instance takes EC2 alone; the cluster port is real, and counted, to show it.
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=state.region
    )

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=state.endpoint_url)  # type: ignore[call-overload]

    eks, ec2 = client("eks"), client("ec2")
    cluster = KubernetesCluster.from_eks(state.cluster, eks, EksTokenSource(state.cluster, client("sts"), state.region))
    requests: list[str] = []
    send = ApiServer.request

    def counted(self: ApiServer, method: str, path: str, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        requests.append(f"{method} {path}")
        return send(self, method, path, *args, **kwargs)

    ApiServer.request = counted  # type: ignore[method-assign]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    foreign = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]

    class Workflows:
        def start(self, name: str, document: Any) -> bool:
            return True

        def status(self, name: str) -> str:
            return "RUNNING"

    class Clock:
        def now(self) -> float:
            return time.time()

    cloud = Ec2Cloud(state.cluster, "", "", ec2=ec2, ssm=None, eks=eks)
    state_store = DynamoDBState(outputs["TableName"], client("dynamodb"))
    body = json.dumps(
        {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "EC2 Spot Instance Interruption Warning",
            "source": "aws.ec2",
            "account": "123456789012",
            "time": "2026-12-03T12:00:00Z",
            "region": state.region,
            "resources": [],
            "detail": {"instance-id": foreign, "instance-action": "terminate"},
        }
    )
    started = time.perf_counter()
    result = handle_message(body, cluster, state_store, Workflows(), Clock(), "replace", cloud, state.cluster)
    _emit(
        {
            "figure": "interruption, a Spot warning for an instance that is not this cluster's",
            "action": result.plan.action,
            "seconds": round(time.perf_counter() - started, 3),
            "api_requests": len(requests),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--running", type=int, default=20000)
    parser.add_argument("--pending", type=int, default=500)
    parser.add_argument("--state-dir", type=Path, default=None, help="a world to start or reuse there")
    parser.add_argument("--keep", action="store_true", help="leave the world running afterwards")
    parser.add_argument("--profile", type=Path, default=None, help="write each call's cProfile stats here")
    parser.add_argument(
        "--code", type=Path, default=ROOT, help="the checkout whose provisioner handler and core are measured"
    )
    args = parser.parse_args(argv)
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="nodewright-scale-"))

    def log(line: str) -> None:
        print(line if line.startswith("#") else f"# {line}", file=sys.stderr, flush=True)

    state = lw.up(state_dir, lw.Options(cluster=f"scale-{uuid.uuid4().hex[:4]}", short_waits=True), log)
    try:
        outputs = deploy.install(state, log)  # the stack, the CRDs and the chart (its RBAC admits the functions)
        api = Api(state)
        for path, body in nodewright_objects(state, outputs["NodeRoleName"]):
            api.post(path, body)
        populate(api, args.nodes, args.running, log)
        forget_earlier_runs(state, api, log)
        _emit({"figure": "cluster", "nodes": args.nodes, "running_pods": args.running, "pending_pods": args.pending})
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
        measure_provisioner(state, outputs, api, args.pending, log, args.profile, args.code.resolve())
        _emit({"figure": "code measured", "checkout": str(args.code.resolve()), "commit": _commit(args.code)})
        measure_interruption(state, outputs)
    finally:
        if not args.keep:
            lw.down(state_dir, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
