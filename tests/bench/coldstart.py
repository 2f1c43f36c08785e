"""`python -m tests.bench.coldstart`: the provisioner Lambda's cold start on this machine, tracing off and on.

    python -m tests.bench.coldstart            # 7 fresh processes per mode (after one discarded warm-up)
    python -m tests.bench.coldstart --runs 15
    python -m tests.bench.coldstart --handler /tmp/old/handler.py   # another version of the handler file
    python -m tests.bench.coldstart --from venv   # this checkout's sources and the venv, not the built layers

By default the child runs what `cdk synth` packages: the function bundle and the core and dependencies layers
that `infra/build.py` builds (sources compiled ahead to `.pyc`, the trimmed botocore data directory at its
layer path), on the base interpreter with nothing else on its path but the standard library, like the Lambda
Python runtime. The one difference is the dependencies layer's platform tag: it is built for this machine's
architecture so that its compiled extensions load (Lambda gets the arm64 build of the same pins).
`--from venv` runs this checkout's files with the development venv instead (a quicker loop while editing).

Each run is a fresh Python process that does what a new Lambda container does, timed in three phases:

- import: load `functions/provisioner/handler.py` (the runtime's INIT phase);
- init: the first call's set-up (`build_runtime`: settings, boto3 clients, eks:DescribeCluster, an EKS token,
  the Kubernetes API transport, the catalog source, the idempotency layer);
- first call: the first invocation itself, with one pending pod: idempotency record in DynamoDB, the cluster
  read, node class resolution (EC2, SSM), the catalog snapshot, solve, NodeClaim create, CreateFleet.

`setup_ms` is import + init, the figure the 300 ms target is about. Before the clock starts, the child
imports the standard-library modules the Lambda Python runtime has already imported when it loads a handler
(awslambdaric 4.2.2's bootstrap and its modules: json, logging, traceback, decimal, math, enum), since a
function does not pay for those.

Beside each mode, the same number of `floor` processes (interleaved with the handler's, so both see the same
machine) do only what any Python function using boto3 and Powertools does: import boto3 and Powertools'
Logger, Metrics and DynamoDB idempotency layer, and create one DynamoDB client. `above_floor_ms` is the
handler's setup_ms minus that floor: what nodewright itself adds to a cold start, and the part this code can
change.

AWS is a moto server in this (parent) process, reached over HTTP through AWS_ENDPOINT_URL, so the child
pays no moto import; the Kubernetes API is a tiny stub HTTP server that answers the provisioner's lists
from a fixed world (one NodePool, one EC2NodeClass, one pending pod) and accepts its writes. Tracing "on"
runs with LAMBDA_TASK_ROOT and an X-Ray trace header set, as in Lambda, so Powertools builds its Tracer,
patches the SDKs and opens subsegments (the segments go to a UDP daemon address nobody listens on).

What this does not say about Lambda: the CPU here is not a Lambda arm64 vCPU (the stack gives the provisioner
1,769 MB, which is one vCPU; CPU-bound import and init time scales with its speed), the layers here are
directories in the local bundle cache (in Lambda they are zip-extracted onto a different file system), the
runtime's own bootstrap (interpreter start, the runtime API client) is not included, and moto and the stub
answer on localhost in well under a millisecond where AWS and the EKS endpoint take several milliseconds per
call. It is a comparison tool between versions of this code on one machine, and a lower bound for the import
phase at best. The figures printed are medians over the runs: wall time per phase and in total, and `cpu_ms`,
the child's own CPU time, which moves less than wall time when other work shares the machine (and leaves out
the time spent waiting for moto and the stub). `setup_min_ms` and `floor_min_ms` are the fastest run of
each: this machine is a virtual machine whose host is shared, its speed moves by a factor of up to two within
an hour (the floor alone measured 122 ms and 243 ms on the same day), and contention only ever adds time, so
the minimum is the closest figure to the code's own cost.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from nodewright.adapters import aws_sdk

ROOT = Path(__file__).resolve().parents[2]
HANDLER = ROOT / "functions" / "provisioner" / "handler.py"
REGION = "us-east-1"
CLUSTER = "bench"
K8S = "1.31"
NODE_ROLE = f"{CLUSTER}-node"

# What the Lambda runtime has imported before the handler (see the module doc).
RUNTIME_PRELOAD = "import decimal, enum, json, logging, math, traceback\n"

# The child: nothing but the standard library before the clock starts.
CHILD = (
    RUNTIME_PRELOAD
    + """
import importlib.util, json, sys, time
c0, t0 = time.process_time(), time.perf_counter()
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["handler"] = module
spec.loader.exec_module(module)
c1, t1 = time.process_time(), time.perf_counter()
module._runtime()
c2, t2 = time.process_time(), time.perf_counter()

class Context:
    function_name = "provisioner"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:provisioner"
    aws_request_id = "cold-start"

    def get_remaining_time_in_millis(self):
        return 60000

response = module.handler(json.loads(sys.argv[2]), Context())
c3, t3 = time.process_time(), time.perf_counter()
launched = len(response.get("nodeclaims", []))
figures = {"import": t1 - t0, "init": t2 - t1, "first_call": t3 - t2, "cpu": c3 - c0, "launched": launched}
print(json.dumps(figures))
"""
)

# The floor: what every Python function on boto3 and Powertools pays, with the same botocore data directory.
FLOOR = (
    RUNTIME_PRELOAD
    + """
import json, time
t0 = time.perf_counter()
import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from nodewright.adapters import aws_sdk
logger = Logger(service="floor")
client = aws_sdk.session("us-east-1").client("dynamodb")
DynamoDBPersistenceLayer(table_name="nodewright", boto3_client=client)
print(json.dumps({"floor": time.perf_counter() - t0}))
"""
)


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "web", "uid": "pod-uid", "resourceVersion": "1"},
        "spec": {
            "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def _world(node_role: str) -> dict[str, list[dict[str, Any]]]:
    """List path -> items the stub API server answers with."""
    pool = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                }
            }
        },
    }
    discovery = [{"tags": {"karpenter.sh/discovery": CLUSTER}}]
    node_class = {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": node_role,
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
        },
    }
    return {
        "/apis/nodewright.io/v1/nodepools": [pool],
        "/apis/nodewright.io/v1/ec2nodeclasses": [node_class],
        "/api/v1/pods": [_pod()],
    }


def _stub_api(world: dict[str, list[dict[str, Any]]]) -> ThreadingHTTPServer:
    """A Kubernetes API stand-in on 127.0.0.1: lists from `world` (anything else is empty), writes accepted."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle's algorithm on, the client's delayed ACK
        # would hold every reply back by ~40 ms, a cost of this stub that no API server has.
        disable_nagle_algorithm = True

        def _reply(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            self._reply(200, {"items": world.get(path, []), "metadata": {"resourceVersion": "1"}})

        def _write(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            self._reply(201 if self.command == "POST" else 200, body)

        do_POST = do_PATCH = do_PUT = _write

        def do_DELETE(self) -> None:
            self._reply(200, {})

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="stub-api", daemon=True).start()
    return server


def _seed_account(endpoint: str, api_url: str) -> None:
    """What the local world and the stack create: discovery-tagged network, node role, EKS record, table."""
    import boto3

    from nodewright.localworld.motoserver import seed

    def aws(service: str) -> Any:
        make: Any = boto3.client  # typed per service name; the name is a variable here
        return make(service, region_name=REGION, endpoint_url=endpoint)

    ec2 = aws("ec2")
    tags = [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = []
    for i, zone in enumerate(("us-east-1a", "us-east-1b", "us-east-1c")):
        subnets.append(
            ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.0.{i * 32}.0/19",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}],
            )["Subnet"]["SubnetId"]
        )
    ec2.create_security_group(
        GroupName="nodes",
        Description="nodes",
        VpcId=vpc,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": tags}],
    )
    iam = aws("iam")
    trust = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    node_role = NODE_ROLE
    role_arn = iam.create_role(RoleName=node_role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    iam.create_instance_profile(InstanceProfileName=node_role)
    iam.add_role_to_instance_profile(InstanceProfileName=node_role, RoleName=node_role)
    aws("eks").create_cluster(
        name=CLUSTER,
        version=K8S,
        roleArn=role_arn,
        resourcesVpcConfig={"subnetIds": subnets},
        kubernetesNetworkConfig={"serviceIpv4Cidr": "10.100.0.0/16"},
    )
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n").decode()
    seed({"region": REGION, "k8s_versions": [K8S], "cluster": CLUSTER, "endpoint": api_url, "ca_data": ca})
    aws("dynamodb").create_table(
        TableName="nodewright",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


@dataclass(frozen=True)
class Code:
    """Where the child's code comes from: its interpreter, extra entries for its path, whether the
    interpreter's site-packages are shut out (the layers) or used (the venv), the handler file, and the
    botocore data directory it is given."""

    python: str
    path: tuple[Path, ...]
    handler: Path
    aws_models: Path
    isolated: bool = True

    @classmethod
    def venv(cls, handler: Path) -> Code:
        """The venv's interpreter and packages, with the core of the checkout `handler` belongs to first on
        the path: the venv's editable install points at one checkout, which need not be this one."""
        core = handler.resolve().parents[2] / "layers" / "core" / "python"
        return cls(sys.executable, (core,), handler, aws_sdk.cached_models(), isolated=False)

    @classmethod
    def layers(cls, handler: Path) -> Code:
        """The bundles `cdk synth` would package (built or taken from the bundle cache)."""
        import platform

        from infra import build

        function = build.function_bundle(HANDLER.parent, "provisioner").path
        core = build.core_layer_bundle().path / "python"
        machine = {"x86_64": "manylinux2014_x86_64", "aarch64": "manylinux2014_aarch64"}.get(platform.machine())
        if machine is None:
            raise RuntimeError(f"no manylinux platform tag for this machine ({platform.machine()}); use --from venv")
        dependencies = build.dependencies_layer_bundle(platform=machine).path / "python"
        if handler == HANDLER:
            handler = function / HANDLER.name
        # The base interpreter, not the venv's: its site-packages must not shadow what the layers carry.
        base = getattr(sys, "_base_executable", sys.executable)
        return cls(base, (function, core, dependencies), handler, dependencies / build.AWS_MODELS_DIR)

    def command(self, *args: str) -> list[str]:
        # -S: no site-packages at all, so a module missing from the layers fails here instead of being found
        # in whatever the base interpreter has installed.
        return [self.python, "-S", *args] if self.isolated else [self.python, *args]


def _child_env(endpoint: str, tracing: bool, code: Code) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_LAMBDA_FUNCTION_NAME": "provisioner",
        "NODEWRIGHT_CLUSTER": CLUSTER,
        "NODEWRIGHT_TABLE": "nodewright",
        "NODEWRIGHT_NODE_ROLE": NODE_ROLE,
        "NODEWRIGHT_INSTANCE_PROFILE": NODE_ROLE,
        "NODEWRIGHT_CATALOG": "snapshot",
        # As in Lambda, where the dependencies layer carries these and the stack names them.
        aws_sdk.MODELS_ENV: str(code.aws_models),
        "POWERTOOLS_METRICS_NAMESPACE": "nodewright",
        "POWERTOOLS_SERVICE_NAME": "nodewright-provisioner",
    }
    if code.path:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in code.path)
    if tracing:
        env["LAMBDA_TASK_ROOT"] = str(code.handler.parent)
        env["_X_AMZN_TRACE_ID"] = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
        env["AWS_XRAY_DAEMON_ADDRESS"] = "127.0.0.1:2000"
        env["AWS_XRAY_CONTEXT_MISSING"] = "IGNORE_ERROR"
    else:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    return env


def _run_once(env: dict[str, str], code: Code) -> dict[str, float]:
    event = {"batch_id": uuid.uuid4().hex, "cluster": CLUSTER, "sent_at": "", "pods": [_pod()]}
    done = subprocess.run(
        code.command("-c", CHILD, str(code.handler), json.dumps(event)),
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"import"')]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"cold-start child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(lines[-1])
    if not figures["launched"]:
        raise RuntimeError(f"the first call launched nothing; its log:\n{done.stdout[-3000:]}")
    return figures


def _floor_once(env: dict[str, str], code: Code) -> float:
    done = subprocess.run(code.command("-c", FLOOR), env=env, capture_output=True, text=True, check=False, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"floor"')]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"floor child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return float(json.loads(lines[-1])["floor"])


def measure(runs: int, code: Code) -> list[str]:
    """Median cold-start phases (ms) with tracing off and on, one line each."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's access log, one line per AWS call

    # The seeding clients in this process talk to moto only; they need some credentials to sign with.
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ.setdefault(key, value)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    api = _stub_api(_world(NODE_ROLE))
    try:
        host, port = moto.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        _seed_account(endpoint, f"http://127.0.0.1:{api.server_address[1]}")
        lines = []
        for tracing in (False, True):
            env = _child_env(endpoint, tracing, code)
            _run_once(env, code)  # discarded: writes any missing __pycache__ and warms the file cache
            _floor_once(env, code)
            samples, floors = [], []
            for _ in range(runs):
                samples.append(_run_once(env, code))
                floors.append(_floor_once(env, code))
            phases = {
                k: statistics.median(s[k] for s in samples) * 1000 for k in ("import", "init", "first_call", "cpu")
            }
            total = statistics.median((s["import"] + s["init"] + s["first_call"]) * 1000 for s in samples)
            setups = [(s["import"] + s["init"]) * 1000 for s in samples]
            setup = statistics.median(setups)
            floor = statistics.median(floors) * 1000
            lines.append(
                f"cold_start tracing={'on' if tracing else 'off'} runs={runs} setup_ms={setup:.0f} "
                f"setup_min_ms={min(setups):.0f} floor_ms={floor:.0f} floor_min_ms={min(floors) * 1000:.0f} "
                f"above_floor_ms={setup - floor:.0f} total_ms={total:.0f} "
                f"import_ms={phases['import']:.0f} init_ms={phases['init']:.0f} "
                f"first_call_ms={phases['first_call']:.0f} cpu_ms={phases['cpu']:.0f}"
            )
        return lines
    finally:
        api.shutdown()
        moto.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.coldstart", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per mode (default 7)")
    parser.add_argument("--handler", type=Path, default=HANDLER, help="the handler file to time (default: ours)")
    parser.add_argument(
        "--from",
        dest="source",
        choices=("layers", "venv"),
        default="layers",
        help="run the built Lambda bundles (default) or this checkout with the venv",
    )
    args = parser.parse_args(argv)
    code = Code.layers(args.handler) if args.source == "layers" else Code.venv(args.handler)
    print(
        f"# provisioner cold start from {args.source}: median ms of fresh processes; setup = import + init;"
        " see the module doc"
    )
    for line in measure(args.runs, code):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
