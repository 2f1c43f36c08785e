"""Bring the whole local world up, report on it, and tear it down.

State lives in `<repo>/.localworld/` (git-ignored): `state.json` (ports, pids, names), `kubeconfig`,
`env` (shell exports for clients), `pki/`, `logs/`, etcd data. `up` is idempotent: a world whose
processes all run is reused; a half-dead one is torn down and started afresh.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nodewright.localworld import controlplane, procs
from nodewright.localworld.pki import Pki, create_pki

K8S_VERSION = "v1.36.3"
K8S_MINOR = "1.36"
DEFAULT_CLUSTER = "nodewright-local"
DEFAULT_REGION = "us-east-1"
ZONES = ("a", "b", "c")
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
WEBHOOK_CONFIG = "token-webhook.json"  # in the state directory; the webhook reads it on every review
# Processes in start order; `down` stops them in reverse.
COMPONENTS = (
    "moto",
    "token-webhook",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "registrar",
)


def repo_root() -> Path:
    """The repository this package is installed from (editable install), else the working directory."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "layers").is_dir():
            return parent
    return Path.cwd()


def cache_root() -> Path:
    """Where built binaries live, outside the repository."""
    return Path(os.environ.get("NODEWRIGHT_CACHE", Path.home() / ".cache" / "nodewright"))


def bin_dir() -> Path:
    """Directory of the control-plane binaries for the pinned Kubernetes version."""
    return cache_root() / "k8s" / K8S_VERSION / "bin"


@dataclass
class Options:
    """How to start a world; tests make waits short and boots quick."""

    cluster: str = DEFAULT_CLUSTER
    region: str = DEFAULT_REGION
    short_waits: bool = False
    # The stack's EventBridge Scheduler schedules (the planner's tick) run as in AWS unless paused; the end-to-end
    # tests start paused and resume them only where a test wants the planner ticking behind its back.
    schedules_paused: bool = False
    boot_delay: float = 3.0
    startup_timeout: float = 120.0
    timing: controlplane.Timing = field(default_factory=controlplane.Timing)


@dataclass
class WorldState:
    """Everything a client or a later `down` needs to know about a running world."""

    state_dir: str
    cluster: str
    region: str
    endpoint_url: str
    api_server: str
    kubeconfig: str
    ca_file: str
    node_role_name: str
    node_role_arn: str
    vpc_id: str
    subnet_ids: dict[str, str]
    security_group_id: str
    pids: dict[str, int]
    logs: dict[str, str]
    ready_seconds: float
    short_waits: bool

    def client(self, service: str) -> Any:
        """A boto3 client for `service` against this world's moto server, with the world's credentials."""
        import boto3

        return boto3.client(  # type: ignore[call-overload]
            service,
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def env(self) -> dict[str, str]:
        """Environment for clients (boto3, kubernetes, nodewright) of this world."""
        return {
            "KUBECONFIG": self.kubeconfig,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            **DUMMY_CREDENTIALS,
            "NODEWRIGHT_CLUSTER": self.cluster,
            "NODEWRIGHT_NODE_ROLE": self.node_role_name,
            "NODEWRIGHT_NODE_ROLE_ARN": self.node_role_arn,
        }


def state_dir_default() -> Path:
    """`.localworld/` in the repository root."""
    return repo_root() / ".localworld"


def load_state(state_dir: Path) -> WorldState | None:
    """The recorded world, or None when there is none."""
    path = state_dir / "state.json"
    if not path.is_file():
        return None
    return WorldState(**json.loads(path.read_text()))


def running(state: WorldState) -> dict[str, bool]:
    """Which recorded processes are alive."""
    return {name: procs.alive(pid) for name, pid in state.pids.items()}


def ensure_binaries(log: Callable[[str], None]) -> Path:
    """Build the control-plane binaries unless the cache already has them (prints progress)."""
    script = repo_root() / "scripts" / "build-localworld.sh"
    env = dict(os.environ, NODEWRIGHT_K8S_VERSION=K8S_VERSION, NODEWRIGHT_CACHE=str(cache_root()))
    log(f"checking binaries in {bin_dir()}")
    result = subprocess.run([str(script)], env=env, check=False)
    if result.returncode != 0:
        raise procs.StartupError(f"building the local world binaries failed ({script} exit {result.returncode})")
    return bin_dir()


def _https_get(url: str, pki: Pki) -> int:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    try:
        with urllib.request.urlopen(url, context=context, timeout=3) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _post_json(url: str, doc: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(doc).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


def control(state: WorldState, path: str, doc: dict[str, Any] | None = None, method: str = "POST") -> dict[str, Any]:
    """Call one of the moto server's control endpoints (`/_nodewright/<path>`); its JSON answer.

    A tick waits for the targets it fires (a planner tick takes seconds), hence the long time-out."""
    data = json.dumps(doc).encode() if doc is not None else None
    request = urllib.request.Request(
        f"{state.endpoint_url}/_nodewright/{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


ACCOUNT = "123456789012"
# Roles of functions the end-to-end tests make themselves (tests/e2e/worldkit.py names them fn-<name>).
TEST_FUNCTION_ROLES = "fn-*"


def webhook_config(cluster: str, endpoint_url: str, account: str = ACCOUNT) -> dict[str, Any]:
    """The token webhook's identity mappings before any stack is deployed.

    A deployed stack's functions get the groups of their EKS access entries (`access.record_stack`, put in
    front of these), so the chart's RBAC authorizes them as in EKS. Only the roles of the tests' own functions
    are cluster admins; any other identity (moto's default user, another role) maps to nobody, so an
    unauthenticated path stays visible in tests.
    """
    return {
        "cluster": cluster,
        "sts_endpoint": endpoint_url,
        "mappings": [
            {
                "arn": f"arn:aws:iam::{account}:role/{TEST_FUNCTION_ROLES}",
                "username": "nodewright:{{SessionName}}",
                "groups": ["system:masters"],
            }
        ],
    }


def seed_aws(endpoint_url: str, options: Options, api_server: str, pki: Pki) -> dict[str, Any]:
    """Make moto look like the account nodewright is deployed to."""
    import boto3

    kwargs: dict[str, Any] = {
        "endpoint_url": endpoint_url,
        "region_name": options.region,
        "aws_access_key_id": DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    }
    # Untyped on purpose: the seed passes plain dicts and the stubs' TypedDicts add nothing here.
    ec2: Any = boto3.client("ec2", **kwargs)
    iam: Any = boto3.client("iam", **kwargs)
    eks: Any = boto3.client("eks", **kwargs)
    discovery = [{"Key": "karpenter.sh/discovery", "Value": options.cluster}]

    def tagged(resource: str, name: str) -> list[dict[str, Any]]:
        return [{"ResourceType": resource, "Tags": [*discovery, {"Key": "Name", "Value": name}]}]

    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=tagged("vpc", options.cluster))["Vpc"]["VpcId"]
    subnets = {}
    for i, suffix in enumerate(ZONES):
        zone = options.region + suffix
        subnets[zone] = ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=f"10.0.{i * 32}.0/19",
            AvailabilityZone=zone,
            TagSpecifications=tagged("subnet", f"{options.cluster}-private-{zone}"),
        )["Subnet"]["SubnetId"]
    sg_id = ec2.create_security_group(
        GroupName=f"{options.cluster}-node",
        Description="nodes of the local cluster",
        VpcId=vpc_id,
        TagSpecifications=tagged("security-group", f"{options.cluster}-node"),
    )["GroupId"]

    def role(name: str, service: str) -> str:
        trust = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
        }
        arn: str = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        return arn

    cluster_role = role(f"{options.cluster}-cluster", "eks.amazonaws.com")
    node_role_name = f"{options.cluster}-node"
    node_role = role(node_role_name, "ec2.amazonaws.com")
    eks.create_cluster(
        name=options.cluster,
        version=K8S_MINOR,
        roleArn=cluster_role,
        resourcesVpcConfig={"subnetIds": list(subnets.values()), "securityGroupIds": [sg_id]},
        kubernetesNetworkConfig={"serviceIpv4Cidr": controlplane.SERVICE_CIDR},
    )
    _post_json(
        f"{endpoint_url}/_nodewright/seed",
        {
            "region": options.region,
            "k8s_versions": [K8S_MINOR],
            "cluster": options.cluster,
            "endpoint": api_server,
            "ca_data": base64.b64encode(pki.ca_cert.read_bytes()).decode(),
        },
    )
    return {
        "vpc_id": vpc_id,
        "subnet_ids": subnets,
        "security_group_id": sg_id,
        "node_role_name": node_role_name,
        "node_role_arn": node_role,
    }


def _write_env(state: WorldState, state_dir: Path) -> None:
    lines = [f"export {k}={v}" for k, v in state.env().items()]
    (state_dir / "env").write_text("\n".join(lines) + "\n")


def _start_moto(state_dir: Path, options: Options, logs: Path, env: dict[str, str]) -> tuple[procs.Proc, str]:
    """The moto server (with nodewright's faults, seam and schedules), ready; returns it and its endpoint URL."""
    port = procs.free_port()
    endpoint_url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "nodewright.localworld.motoserver", f"--port={port}"]
    argv += [f"--state-dir={state_dir}", f"--repo-root={repo_root()}"]
    if options.short_waits:
        argv.append("--short-waits")
    if options.schedules_paused:
        argv.append("--schedules-paused")
    moto = procs.start("moto", argv, logs, env=env)
    procs.wait_ready(
        moto,
        lambda: urllib.request.urlopen(f"{endpoint_url}/_nodewright/health", timeout=2).status == 200,
        options.startup_timeout,
    )
    return moto, endpoint_url


def _start_token_webhook(
    state_dir: Path, options: Options, endpoint_url: str, pki: Pki, logs: Path, env: dict[str, str]
) -> tuple[procs.Proc, Path]:
    """The EKS token webhook the API server authenticates with, ready; returns it and the API server's kubeconfig
    for it."""
    port = procs.free_port()
    config = state_dir / WEBHOOK_CONFIG
    config.write_text(json.dumps(webhook_config(options.cluster, endpoint_url), indent=2))
    argv = [sys.executable, "-m", "nodewright.localworld.tokenwebhook", f"--port={port}", f"--config={config}"]
    argv += [f"--cert={pki.serving_cert}", f"--key={pki.serving_key}"]
    webhook = procs.start("token-webhook", argv, logs, env=env)
    procs.wait_ready(webhook, lambda: procs.port_open(port), options.startup_timeout)
    kubeconfig = state_dir / "token-webhook.kubeconfig"
    controlplane.write_webhook_kubeconfig(kubeconfig, port, pki)
    return webhook, kubeconfig


def _start_registrar(
    kubeconfig: Path, options: Options, endpoint_url: str, logs: Path, env: dict[str, str]
) -> procs.Proc:
    """The registrar that turns launched instances into KWOK nodes, ready."""
    argv = [sys.executable, "-m", "nodewright.localworld.registrar", f"--kubeconfig={kubeconfig}"]
    argv += [f"--cluster={options.cluster}", f"--endpoint-url={endpoint_url}", f"--region={options.region}"]
    argv += [f"--boot-delay={options.boot_delay}"]
    registrar = procs.start("registrar", argv, logs, env=env)
    procs.wait_ready(registrar, lambda: "registrar for cluster" in registrar.log.read_text(), 30)
    return registrar


def up(state_dir: Path, options: Options, log: Callable[[str], None] = print) -> WorldState:
    """Start the world (building what is missing) and wait until it is ready; reuse a running one."""
    existing = load_state(state_dir)
    if existing is not None:
        alive = running(existing)
        if all(alive.values()):
            log(f"local world already running ({len(alive)} processes)")
            return existing
        log("a previous world is partly down; stopping its remains and starting afresh")
        down(state_dir, log)

    binaries = ensure_binaries(log)
    started_at = time.monotonic()
    state_dir.mkdir(parents=True, exist_ok=True)
    logs = state_dir / "logs"
    started: list[procs.Proc] = []
    env = dict(os.environ, **DUMMY_CREDENTIALS, AWS_DEFAULT_REGION=options.region)
    env.pop("AWS_ENDPOINT_URL", None)
    env.pop("AWS_PROFILE", None)
    try:
        pki = create_pki(state_dir / "pki")

        moto, endpoint_url = _start_moto(state_dir, options, logs, env)
        started.append(moto)
        log(f"moto server on {endpoint_url}")
        webhook, webhook_kubeconfig = _start_token_webhook(state_dir, options, endpoint_url, pki, logs, env)
        started.append(webhook)

        log("starting etcd and kube-apiserver")
        etcd, etcd_port = controlplane.start_etcd(binaries, state_dir, logs, options.startup_timeout)
        started.append(etcd)
        apiserver, api_port = controlplane.start_apiserver(
            binaries, pki, etcd_port, webhook_kubeconfig, logs, options.startup_timeout
        )
        started.append(apiserver)
        api_server = f"https://127.0.0.1:{api_port}"
        kubeconfig = state_dir / "kubeconfig"
        controlplane.write_kubeconfig(kubeconfig, api_server, pki)

        log("starting kube-controller-manager, kube-scheduler and kwok")
        stages = binaries.parent / "kwok-stages"
        kcm, scheduler, kwok = controlplane.start_controllers(
            binaries, pki, kubeconfig, stages, state_dir, logs, options.timing
        )
        started += [kcm, scheduler, kwok]
        # The default ServiceAccount appears once the controller manager's controllers run.
        procs.wait_ready(
            kcm,
            lambda: _https_get(f"{api_server}/api/v1/namespaces/default/serviceaccounts/default", pki) == 200,
            options.startup_timeout,
        )
        for proc in started:
            if not procs.alive(proc.pid):
                raise procs.StartupError(f"{proc.name} exited; last log lines:\n{procs.log_tail(proc.log)}")

        log("seeding moto (VPC, subnets, security group, roles, EKS cluster, AMI parameters)")
        aws = seed_aws(endpoint_url, options, api_server, pki)

        started.append(_start_registrar(kubeconfig, options, endpoint_url, logs, env))

        state = WorldState(
            state_dir=str(state_dir),
            cluster=options.cluster,
            region=options.region,
            endpoint_url=endpoint_url,
            api_server=api_server,
            kubeconfig=str(kubeconfig),
            ca_file=str(pki.ca_cert),
            pids={p.name: p.pid for p in started},
            logs={p.name: str(p.log) for p in started},
            ready_seconds=round(time.monotonic() - started_at, 1),
            short_waits=options.short_waits,
            **aws,
        )
    except BaseException:
        for proc in reversed(started):
            procs.stop(proc.pid, grace=3)
        raise
    (state_dir / "state.json").write_text(json.dumps(asdict(state), indent=2))
    _write_env(state, state_dir)
    log(f"local world ready in {state.ready_seconds}s; source {state_dir / 'env'}")
    return state


def down(state_dir: Path, log: Callable[[str], None] = print) -> bool:
    """Stop every process the world started and remove its state; False when there was none."""
    state = load_state(state_dir)
    if state is None:
        if state_dir.exists():
            shutil.rmtree(state_dir, ignore_errors=True)
        return False
    # What was deployed into the world (the forwarder) stops first, then the world in reverse start order.
    extras = [name for name in state.pids if name not in COMPONENTS]
    for name in [*extras, *reversed(COMPONENTS)]:
        pid = state.pids.get(name)
        if pid is not None:
            procs.stop(pid)
            log(f"stopped {name} ({pid})")
    shutil.rmtree(state_dir, ignore_errors=True)
    return True


def resident_memory_kib(pids: dict[str, int]) -> dict[str, int]:
    """Resident memory per component, counting every process in its process group."""
    groups = set(pids.values())
    by_group: dict[int, int] = dict.fromkeys(groups, 0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            pgrp = int(stat.rsplit(")", 1)[1].split()[2])
            if pgrp not in by_group:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    by_group[pgrp] += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return {name: by_group.get(pid, 0) for name, pid in pids.items()}


def deploy_stack(state: WorldState, cdk_out: Path, stack: str) -> dict[str, str]:
    """Deploy a synthesized stack into the running world's moto; returns the stack outputs, which
    are also appended to the env file as NODEWRIGHT_STACK_<OUTPUT>. Its functions' access entries are mapped
    in the token webhook (nodewright.localworld.access)."""

    from nodewright.localworld.access import record_stack
    from nodewright.localworld.stack import deploy_synthesized, stack_artifacts

    clients = {name: state.client(name) for name in ("s3", "ssm", "cloudformation")}
    outputs = deploy_synthesized(cdk_out, stack, clients, region=state.region)
    template, _ = stack_artifacts(cdk_out, stack)
    record_stack(Path(state.state_dir) / WEBHOOK_CONFIG, template, stack, clients["cloudformation"], ACCOUNT)
    with (Path(state.state_dir) / "env").open("a") as env:
        for key, value in sorted(outputs.items()):
            env.write(f"export NODEWRIGHT_STACK_{key.upper()}={value}\n")
    return outputs
