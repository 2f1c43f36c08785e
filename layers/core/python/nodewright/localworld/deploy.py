"""Deploy nodewright into a running local world, as a user deploys it into AWS and EKS.

1. The CDK app is synthesized with the real `cdk synth` for the world's cluster (snapshot catalog: moto's spot
   prices are placeholders) and deployed through moto's CloudFormation, so the functions are the ones the
   stack defines; their access entries are mapped in the token webhook (`access`), so the chart's RBAC is
   what authorizes them.
2. The chart (charts/nodewright) is installed with helm (release `nodewright` into the namespace `nodewright`
   unless told otherwise), with the stack's outputs as values: CRDs, the forwarder's ServiceAccount,
   Deployment and PDB, and the RBAC.
   For the demo, two KWOK nodes stand in for a managed node group (tainted CriticalAddonsOnly, as system node
   groups often are), so the Deployment's pods schedule as they would in EKS; KWOK runs no process for them.
   The end-to-end tests add them only where they check that (a node every pod's taints reject changes how
   the scheduler requeues pending pods, which the tests' hand-sent batches depend on).
3. The forwarder runs as a local process the way its pod runs it: with the token of the ServiceAccount the
   Deployment names (so only the chart's RBAC lets it read pods and nodes), the Deployment's container
   environment (its values, ConfigMap and Secret references and downward-API fields resolved), and the stack's
   forwarder role's credentials (what Pod Identity hands the pod). `localworld down` stops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from nodewright.localworld import procs, world
from nodewright.localworld.controlplane import KWOK_LABEL_KEY

STACK = "Nodewright"
FORWARDER = "forwarder"
RELEASE = "nodewright"
NAMESPACE = "nodewright"  # the stack's Pod Identity association names nodewright/nodewright-forwarder
DEPLOYMENT = "nodewright-forwarder"  # release `nodewright`: <fullname>-forwarder
SYSTEM_NODES = ("system-a", "system-b")
TOKEN_SECONDS = 24 * 3600


def chart_dir() -> Path:
    return world.repo_root() / "charts" / "nodewright"


def synthesize(state: world.WorldState, log: Callable[[str], None], context: Mapping[str, str] | None = None) -> Path:
    """`npx cdk synth` for the world's cluster into `<state dir>/cdk.out`, with `context` (further `-c` values,
    such as `clusterNodes`) besides the world's own; returns that folder."""
    out = Path(state.state_dir) / "cdk.out"
    argv = ["npx", "cdk", "synth", "--quiet", "-o", str(out)]
    given = (("clusterName", state.cluster), ("catalog", "snapshot"), ("stackName", STACK), *(context or {}).items())
    for key, value in given:
        argv += ["-c", f"{key}={value}"]
    log("synthesizing the CDK app (npx cdk synth)")
    started = time.monotonic()
    done = subprocess.run(argv, cwd=world.repo_root(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cdk synth failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    log(f"synthesized in {time.monotonic() - started:.1f}s")
    return out


def install_crds(api_client: Any, timeout: float = 30.0) -> None:
    """Create or replace the chart's CRDs and wait until they are Established (helm installs crds/ only on a
    first install, never on an upgrade: docs/upgrade.md)."""
    from kubernetes import client

    extensions = client.ApiextensionsV1Api(api_client)
    for path in sorted((chart_dir() / "crds").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        name = doc["metadata"]["name"]
        try:
            extensions.create_custom_resource_definition(doc)
        except client.ApiException as exc:
            if exc.status != 409:
                raise
            current = extensions.read_custom_resource_definition(name).metadata
            assert current is not None
            doc["metadata"]["resourceVersion"] = current.resource_version
            extensions.replace_custom_resource_definition(name, doc)
        deadline = time.monotonic() + timeout
        while not _established(extensions.read_custom_resource_definition(name)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRD {name} not Established after {timeout:.0f}s")
            time.sleep(0.2)


def _established(crd: Any) -> bool:
    conditions = crd.status.conditions if crd.status is not None else None
    return any(c.type == "Established" and c.status == "True" for c in conditions or [])


def helm_binary() -> Path:
    """helm from the cache (scripts/build-helm.sh builds it from the Go module proxy when it is missing)."""
    script = world.repo_root() / "scripts" / "build-helm.sh"
    env = dict(os.environ, NODEWRIGHT_CACHE=str(world.cache_root()))
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise procs.StartupError(f"building helm failed ({script} exit {done.returncode}):\n{done.stderr[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def add_system_nodes(core: Any, names: tuple[str, ...] = SYSTEM_NODES) -> None:
    """KWOK nodes playing a managed node group for the forwarder's pods (present ones are left alone)."""
    from kubernetes import client

    for index, name in enumerate(names):
        zone = f"{world.DEFAULT_REGION}{world.ZONES[index % len(world.ZONES)]}"
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": zone,
            "eks.amazonaws.com/nodegroup": "system",
            KWOK_LABEL_KEY: "fake",
        }
        resources = {"cpu": "2", "memory": "8Gi", "pods": "29"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}]},
            "status": {"capacity": resources, "allocatable": resources},
        }
        try:
            core.create_node(node)
        except client.ApiException as exc:
            if exc.status != 409:
                raise


def install_chart(
    state: world.WorldState,
    outputs: Mapping[str, str],
    log: Callable[[str], None] = print,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    values_file: Path | None = None,
) -> None:
    """`helm upgrade --install` the chart as `release` into `namespace`, with the stack's outputs as values and
    `values_file` (a YAML file of further values, as a user passes with -f) on top."""
    values = {
        "clusterName": state.cluster,
        "region": state.region,
        "provisionerFunction": outputs["ProvisionerFunctionArn"],
    }
    argv = [str(helm_binary()), "upgrade", "--install", release, str(chart_dir()), "-n", namespace]
    argv += ["--create-namespace", "--kubeconfig", state.kubeconfig]
    if values_file is not None:
        argv += ["-f", str(values_file)]
    for key, value in values.items():
        argv += ["--set", f"{key}={value}"]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"helm upgrade --install failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    log(f"installed the chart with helm in {time.monotonic() - started:.1f}s")


def container_environment(core: Any, namespace: str, pod: Mapping[str, Any], identity: str) -> dict[str, str]:
    """The forwarder container's environment as the kubelet would build it from the Deployment's pod template
    `pod` (a dict): `envFrom` sources first, then `env` over them; ConfigMap and Secret references read from
    `namespace`, metadata.name is `identity`, metadata.namespace is `namespace`."""
    import base64

    [container] = pod["spec"]["containers"]
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        if "configMapRef" in source:
            data = core.read_namespaced_config_map(source["configMapRef"]["name"], namespace).data or {}
        else:
            raw = core.read_namespaced_secret(source["secretRef"]["name"], namespace).data or {}
            data = {k: base64.b64decode(v).decode() for k, v in raw.items()}
        env.update({prefix + k: v for k, v in data.items()})
    fields = {"metadata.name": identity, "metadata.namespace": namespace}
    for variable in container.get("env") or []:
        name, ref = variable["name"], variable.get("valueFrom")
        if ref is None:
            env[name] = variable.get("value", "")
        elif "fieldRef" in ref:
            env[name] = fields[ref["fieldRef"]["fieldPath"]]
        elif "configMapKeyRef" in ref:
            key = ref["configMapKeyRef"]
            env[name] = (core.read_namespaced_config_map(key["name"], namespace).data or {})[key["key"]]
        elif "secretKeyRef" in ref:
            key = ref["secretKeyRef"]
            secret = core.read_namespaced_secret(key["name"], namespace).data or {}
            env[name] = base64.b64decode(secret[key["key"]]).decode()
        else:
            raise ValueError(f"env {name}: the local world does not resolve {sorted(ref)}")
    return env


def forwarder_environment(
    state: world.WorldState,
    outputs: Mapping[str, str],
    api_client: Any,
    identity: str,
    namespace: str = NAMESPACE,
    deployment: str = DEPLOYMENT,
) -> dict[str, str]:
    """What the forwarder's pod would have: the Deployment's container environment, a kubeconfig with a token of
    the ServiceAccount it names, and the forwarder role's credentials (as Pod Identity hands them out)."""
    from kubernetes import client

    # The client's typed signatures want its model objects; a plain dict body is what goes on the wire anyway.
    core: Any = client.CoreV1Api(api_client)
    found = client.AppsV1Api(api_client).read_namespaced_deployment(deployment, namespace)
    pod = api_client.sanitize_for_serialization(found.spec.template)
    account = pod["spec"]["serviceAccountName"]
    request = {"spec": {"expirationSeconds": TOKEN_SECONDS}}
    token = core.create_namespaced_service_account_token(account, namespace, request).status.token
    kubeconfig = Path(state.state_dir) / f"{identity}.kubeconfig"
    cluster = {"server": state.api_server, "certificate-authority": state.ca_file}
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": cluster}],
                "users": [{"name": account, "user": {"token": token}}],
                "contexts": [{"name": "forwarder", "context": {"cluster": "local", "user": account}}],
                "current-context": "forwarder",
            }
        )
    )
    credentials = state.client("sts").assume_role(RoleArn=outputs["ForwarderRoleArn"], RoleSessionName=identity)[
        "Credentials"
    ]
    return {
        **container_environment(core, namespace, pod, identity),
        "KUBECONFIG": str(kubeconfig),
        "AWS_ENDPOINT_URL": state.endpoint_url,
        "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
        "AWS_SESSION_TOKEN": credentials["SessionToken"],
        # A process on this machine, not a pod: its own address and a free port instead of the pod's 8080.
        "NODEWRIGHT_FORWARDER_BIND": "127.0.0.1",
        "NODEWRIGHT_FORWARDER_PORT": str(procs.free_port()),
    }


def start_forwarder(
    state: world.WorldState,
    outputs: Mapping[str, str],
    python: str = sys.executable,
    identity: str = "forwarder-local",
    overrides: Mapping[str, str] | None = None,
    namespace: str = NAMESPACE,
    deployment: str = DEPLOYMENT,
) -> procs.Proc:
    """Run one replica of the Deployment `namespace`/`deployment` as deployed (see the module doc) with `python`;
    it still takes its Lease."""
    from kubernetes import config

    api_client = config.new_client_from_config(config_file=state.kubeconfig)  # type: ignore[no-untyped-call]
    # Nothing of the world's own environment leaks in: no admin kubeconfig, no world credentials, no proxy.
    leaked = ("AWS_", "KUBECONFIG", "NODEWRIGHT_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "LOG_LEVEL")
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith(leaked)}
    environment = forwarder_environment(state, outputs, api_client, identity, namespace, deployment)
    env = {**base, **environment, **(overrides or {})}
    return procs.start(identity, [python, "-m", "nodewright.forwarder"], Path(state.state_dir) / "logs", env)


def deployed_outputs(state: world.WorldState) -> dict[str, str] | None:
    """The outputs of the stack when it is already deployed in this world, else None."""
    cfn = state.client("cloudformation")
    try:
        stacks = cfn.describe_stacks(StackName=STACK)["Stacks"]
    except cfn.exceptions.ClientError:
        return None
    if not stacks or stacks[0]["StackStatus"] != "CREATE_COMPLETE":
        return None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def install(
    state: world.WorldState,
    log: Callable[[str], None] = print,
    system_nodes: bool = False,
    context: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Steps 1 and 2 of the module doc (each skipped or repeated harmlessly when done); returns the outputs.
    `context`: further CDK context values for the synthesis (a stack already deployed is kept as it is)."""
    from kubernetes import client, config

    outputs = deployed_outputs(state)
    if outputs is None:
        outputs = world.deploy_stack(state, synthesize(state, log, context), STACK)
        log(f"deployed stack {STACK}: provisioner {outputs['ProvisionerFunctionName']}")
    else:
        log(f"stack {STACK} already deployed: provisioner {outputs['ProvisionerFunctionName']}")
    api_client = config.new_client_from_config(config_file=state.kubeconfig)  # type: ignore[no-untyped-call]
    install_crds(api_client)
    if system_nodes:
        add_system_nodes(client.CoreV1Api(api_client))
    install_chart(state, outputs, log)
    return outputs


def deploy(state: world.WorldState, log: Callable[[str], None] = print) -> dict[str, str]:
    """Install (stack, CRDs, chart) and start the forwarder; a forwarder already running is left alone."""
    outputs = install(state, log, system_nodes=True)
    pid = state.pids.get(FORWARDER)
    if pid is None or not procs.alive(pid):
        forwarder = start_forwarder(state, outputs, identity=FORWARDER)
        state.pids[FORWARDER] = forwarder.pid
        state.logs[FORWARDER] = str(forwarder.log)
        (Path(state.state_dir) / "state.json").write_text(json.dumps(asdict(state), indent=2))
        log(f"forwarder running (pid {forwarder.pid}, log {forwarder.log})")
    return outputs
