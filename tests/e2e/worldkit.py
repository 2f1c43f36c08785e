"""Helpers for end-to-end tests over a running local world: clients, a node factory, Lambda
functions from tests/e2e/functions, fault switching, the world's schedules, and bounded waiting."""

from __future__ import annotations

import io
import json
import ssl
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import boto3
from kubernetes import client, config

from nodewright.localworld import controlplane, world

T = TypeVar("T")
FUNCTIONS_DIR = Path(__file__).parent / "functions"


def wait_for(predicate: Callable[[], T | None], timeout: float, message: str, interval: float = 0.25) -> T:
    """Poll `predicate` until it returns something truthy, and return that; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = predicate()
            if result:
                return result
        except Exception as exc:  # the condition may be unreadable while it converges
            last_error = exc
        time.sleep(interval)
    suffix = f" (last error: {last_error})" if last_error else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {message}{suffix}")


class World:
    """Clients and helpers for a running local world."""

    def __init__(self, state: world.WorldState) -> None:
        self.state = state
        self.api_client = config.new_client_from_config(config_file=state.kubeconfig)  # type: ignore[no-untyped-call]
        self.core = client.CoreV1Api(self.api_client)
        self.apps = client.AppsV1Api(self.api_client)
        self.policy = client.PolicyV1Api(self.api_client)

    def aws(self, service: str, **overrides: Any) -> Any:
        """A boto3 client for `service` against the world's moto server."""
        kwargs: dict[str, Any] = {
            "endpoint_url": self.state.endpoint_url,
            "region_name": self.state.region,
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        kwargs.update(overrides)
        # The service name is a runtime string, which the stubs' per-service overloads cannot type.
        return boto3.client(service, **kwargs)  # type: ignore[call-overload]

    def role_token(self, role_arn: str, cluster: str | None = None) -> str:
        """An EKS token for a session of `role_arn` (signed for `cluster`, by default the world's), as a Lambda
        with that execution role would mint it."""
        from nodewright.adapters.eks_token import EksTokenSource

        credentials = self.aws("sts").assume_role(RoleArn=role_arn, RoleSessionName="e2e")["Credentials"]
        sts = self.aws(
            "sts",
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
        )
        return EksTokenSource(cluster or self.state.cluster, sts_client=sts).token()

    def api_status(self, token: str, method: str, path: str) -> int:
        """The HTTP status the API server answers `method path` with, for a bearer `token`."""
        request = urllib.request.Request(
            f"{self.state.api_server}{path}", method=method, headers={"Authorization": f"Bearer {token}"}
        )
        context = ssl.create_default_context(cafile=self.state.ca_file)
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def set_faults(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Replace the moto server's fault rules (see nodewright.localworld.faults): `unavailable`, `throttle`,
        `refuse` and `kill`; `{}` clears them all. Returns the rules with each one's `remaining` and `fired`."""
        request = urllib.request.Request(
            f"{self.state.endpoint_url}/_nodewright/faults", data=json.dumps(doc).encode(), method="PUT"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def faults(self) -> dict[str, Any]:
        """The fault rules in force, each with its `remaining` count and how often it `fired`."""
        return world.control(self.state, "faults", method="GET")

    def schedules(self) -> dict[str, Any]:
        """The stack's EventBridge Scheduler schedules as the world runs them: `paused`, `period_seconds`,
        `schedules` (name, expression, target, next, last firing) and `history` (recent firings)."""
        return world.control(self.state, "schedules", method="GET")

    def pause_schedules(self) -> dict[str, Any]:
        """Stop firing schedules; returns once a firing in progress has ended."""
        return world.control(self.state, "schedules/pause", {})

    def resume_schedules(self, period_seconds: float | None = None) -> dict[str, Any]:
        """Fire schedules again, counted from now: every `period_seconds` if given, else on their expressions."""
        return world.control(self.state, "schedules/resume", {"period_seconds": period_seconds})

    def tick_schedules(self, due_only: bool = False, name: str = "") -> list[dict[str, Any]]:
        """Fire the schedules now (paused or not; only the due ones with `due_only`; only those whose name contains
        `name`), wait for their targets and return one record per firing: `schedule`, `target`, `at`, `seconds`,
        `ok`, `result` (the Lambda's answer), `error`, `dead_lettered`."""
        results: list[dict[str, Any]] = world.control(
            self.state, "schedules/tick", {"due_only": due_only, "name": name}
        )["results"]
        return results

    def release_ami(self, parameter: str) -> dict[str, str]:
        """Publish a new AMI behind a public AMI parameter, as an EKS release does; returns old and new ids."""
        body = json.dumps({"region": self.state.region, "name": parameter}).encode()
        request = urllib.request.Request(f"{self.state.endpoint_url}/_nodewright/release-ami", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            result: dict[str, str] = json.loads(response.read())
            return result

    def make_node(
        self,
        name: str | None = None,
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
        cpu: str = "4",
        memory: str = "16Gi",
        pods: str = "110",
    ) -> str:
        """Create a KWOK-managed node (no EC2 instance behind it) and wait until it is Ready."""
        name = name or f"kwok-{uuid.uuid4().hex[:8]}"
        node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", controlplane.KWOK_LABEL_KEY: "fake"}
        node_labels.update(labels or {})
        # A plain manifest: the client serializes dicts as they are, like kubectl would.
        manifest: Any = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": node_labels,
            },
            "spec": {"taints": taints or []},
            "status": {
                "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
                "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            },
        }
        self.core.create_node(manifest)
        wait_for(lambda: self.node_ready(name), 30, f"node {name} Ready")
        return name

    def node_ready(self, name: str) -> bool:
        """True when the node's Ready condition is True."""
        node = self.core.read_node(name)
        conditions = node.status.conditions if node.status else None
        return any(c.type == "Ready" and c.status == "True" for c in conditions or [])

    def create_function(
        self, name: str, source: str, tag_source: bool = False, environment: dict[str, str] | None = None
    ) -> str:
        """Create a Lambda function from tests/e2e/functions/<source>; returns its ARN.

        By default the folder is zipped and uploaded (the seam then runs the deployed package); with
        `tag_source` the function points at the folder through the `nodewright:source` tag instead.
        """
        iam = self.aws("iam")
        role_name = f"fn-{name}"
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
            ],
        }
        role = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        folder = FUNCTIONS_DIR / source
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for file in folder.rglob("*.py"):
                archive.write(file, file.relative_to(folder).as_posix())
        kwargs: dict[str, Any] = {}
        if environment:
            kwargs["Environment"] = {"Variables": environment}
        if tag_source:
            kwargs["Tags"] = {"nodewright:source": str(folder.relative_to(world.repo_root()))}
        arn: str = self.aws("lambda").create_function(
            FunctionName=name,
            Runtime="python3.11",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": buffer.getvalue()},
            Timeout=30,
            **kwargs,
        )["FunctionArn"]
        return arn
