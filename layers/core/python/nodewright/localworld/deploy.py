"""Deploy nodewright into a running local world, as a user deploys it into AWS and EKS.

The CDK app is synthesized with the real `cdk synth` for the world's cluster (snapshot catalog: moto's
spot prices are placeholders) and deployed through moto's CloudFormation, so the provisioner Lambda
is the one the stack defines. The CRDs from `cluster/crds` are applied to the API server, and the
forwarder runs as a local process (`python -m nodewright.forwarder`) with the world's credentials,
invoking the stack's function. `localworld down` stops it with the rest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from nodewright.localworld import procs, world

STACK = "Nodewright"
FORWARDER = "forwarder"


def synthesize(state: world.WorldState, log: Callable[[str], None]) -> Path:
    """`npx cdk synth` for the world's cluster into `<state dir>/cdk.out`; returns that folder."""
    out = Path(state.state_dir) / "cdk.out"
    argv = ["npx", "cdk", "synth", "--quiet", "-o", str(out)]
    for key, value in (("clusterName", state.cluster), ("catalog", "snapshot"), ("stackName", STACK)):
        argv += ["-c", f"{key}={value}"]
    log("synthesizing the CDK app (npx cdk synth)")
    started = time.monotonic()
    done = subprocess.run(argv, cwd=world.repo_root(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cdk synth failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    log(f"synthesized in {time.monotonic() - started:.1f}s")
    return out


def install_crds(api_client: Any, timeout: float = 30.0) -> None:
    """Create or replace the nodewright.io/v1 CRDs from cluster/crds and wait until they are Established."""
    from kubernetes import client

    extensions = client.ApiextensionsV1Api(api_client)
    for path in sorted((world.repo_root() / "cluster" / "crds").glob("*.yaml")):
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


def start_forwarder(state: world.WorldState, function: str) -> procs.Proc:
    """Run the forwarder against the world (one replica; it still takes its Lease)."""
    env = {
        **os.environ,
        **state.env(),
        "NODEWRIGHT_PROVISIONER_FUNCTION": function,
        "NODEWRIGHT_FORWARDER_BIND": "127.0.0.1",
        "NODEWRIGHT_FORWARDER_PORT": str(procs.free_port()),
        "POD_NAME": "forwarder-local",
        "POD_NAMESPACE": "default",
    }
    return procs.start(FORWARDER, [sys.executable, "-m", "nodewright.forwarder"], Path(state.state_dir) / "logs", env)


def deployed_outputs(state: world.WorldState) -> dict[str, str] | None:
    """The outputs of the stack when it is already deployed in this world, else None."""
    import boto3

    cfn = boto3.client(
        "cloudformation",
        endpoint_url=state.endpoint_url,
        region_name=state.region,
        aws_access_key_id=world.DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=world.DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    try:
        stacks = cfn.describe_stacks(StackName=STACK)["Stacks"]
    except cfn.exceptions.ClientError:
        return None
    if not stacks or stacks[0]["StackStatus"] != "CREATE_COMPLETE":
        return None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def deploy(state: world.WorldState, log: Callable[[str], None] = print) -> dict[str, str]:
    """Synthesize and deploy the stack, install the CRDs, start the forwarder; returns the stack outputs.

    Idempotent enough for `up` on a running world: a forwarder that is already running is left alone.
    """
    from kubernetes import config

    outputs = deployed_outputs(state)
    if outputs is None:
        outputs = world.deploy_stack(state, synthesize(state, log), STACK)
        log(f"deployed stack {STACK}: provisioner {outputs['ProvisionerFunctionName']}")
    else:
        log(f"stack {STACK} already deployed: provisioner {outputs['ProvisionerFunctionName']}")
    api_client = config.new_client_from_config(config_file=state.kubeconfig)  # type: ignore[no-untyped-call]
    install_crds(api_client)
    log("installed the nodewright.io/v1 CRDs")
    pid = state.pids.get(FORWARDER)
    if pid is None or not procs.alive(pid):
        forwarder = start_forwarder(state, outputs["ProvisionerFunctionName"])
        state.pids[FORWARDER] = forwarder.pid
        state.logs[FORWARDER] = str(forwarder.log)
        (Path(state.state_dir) / "state.json").write_text(json.dumps(asdict(state), indent=2))
        log(f"forwarder running (pid {forwarder.pid}, log {forwarder.log})")
    return outputs
