"""The local world's AWS: moto's HTTP server with three additions, run as its own process.

    python -m nodewright.localworld.motoserver --port P --state-dir D --repo-root R [--short-waits]

1. Step Functions executes state machines for real; Lambda tasks and SQS event sources (`sqs_poller`)
   run our handlers in-process through `lambda_seam` (no Docker). `--short-waits` cuts Wait states and
   Retry intervals to at most a second, so tests do not sleep for minutes while poll loops still pace
   themselves.
2. Faults (`faults`): CreateFleet capacity errors, RequestLimitExceeded throttling and refusals of chosen
   actions at the wire, and kills of Lambda invocations at a named step in the seam, switched per test through
   `PUT /_nodewright/faults`.
3. Seeding what the public AWS namespace holds and moto refuses to accept from a client
   (`POST /_nodewright/seed`): the EKS and Bottlerocket AMI SSM parameters (with matching AMIs), and
   an EKS cluster record pointing at the local API server; and publishing a new AMI release behind one of
   those parameters (`POST /_nodewright/release-ami`), as EKS does, for drift.
4. EventBridge Scheduler running the deployed stack's schedules (`schedule_runner`): `GET /_nodewright/schedules`
   lists them, `POST .../pause`, `.../resume` (`{"period_seconds": 10}` to tick faster than the expression)
   and `.../tick` (fire now, synchronously; `{"due_only": true}`, `{"name": "<substring>"}`) control them.
   `--schedules-paused` starts the server with them paused, as the end-to-end tests do.

Control endpoints live under `/_nodewright/` on the same port; nothing in AWS answers that path.
"""

from __future__ import annotations

import argparse
import datetime
import http
import io
import json
import os
import re
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nodewright.localworld import faults as faultmod
from nodewright.localworld import lambda_seam, schedule_runner, sqs_poller

DEFAULT_ACCOUNT = "123456789012"
EKS_AMI_OWNER = "602401143452"
BOTTLEROCKET_AMI_OWNER = "092701018921"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def ssm_ami_parameters(k8s_version: str) -> list[tuple[str, str, str, str]]:
    """Every public AMI parameter nodewright reads: (name, family, architecture, variant)."""
    params = []
    for arch in ("x86_64", "arm64"):
        for variant in ("standard", "nvidia"):
            params.append(
                (
                    f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2023/{arch}/{variant}"
                    "/recommended/image_id",
                    "al2023",
                    arch,
                    variant,
                )
            )
            suffix = "-nvidia" if variant == "nvidia" else ""
            params.append(
                (
                    f"/aws/service/bottlerocket/aws-k8s-{k8s_version}{suffix}/{arch}/latest/image_id",
                    "bottlerocket",
                    arch,
                    variant,
                )
            )
    return params + al2_and_windows_parameters(k8s_version)


def al2_and_windows_parameters(k8s_version: str) -> list[tuple[str, str, str, str]]:
    """The AL2 (x86_64, arm64, x86_64 GPU) and Windows Server 2019/2022/2025 (x86_64) AMI parameters of
    `al2@latest` and `windows20xx@latest`, named as launch.amis resolves them (Karpenter's paths). As in AWS, there
    are no AL2 parameters from Kubernetes 1.33 on: AWS stopped publishing EKS-optimized AL2 AMIs there."""
    from nodewright.launch.amis import ARCHITECTURES, alias_parameters

    major, _, minor = k8s_version.partition(".")
    al2 = ("al2",) if (int(major), int(minor or 0)) < (1, 33) else ()
    params = []
    for family in (*al2, "windows2019", "windows2022", "windows2025"):
        for name, served in alias_parameters(f"{family}@latest", k8s_version).items():
            arch, variant = served[0]
            params.append((name, family, ARCHITECTURES[arch], variant))
    return params


def seed(doc: dict[str, Any]) -> dict[str, Any]:
    """Seed SSM AMI parameters (with real moto AMIs behind them) and point the EKS cluster record at
    the local API server. Runs inside the server process because it writes moto's backends."""
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.amis import Ami
    from moto.ec2.utils import random_ami_id
    from moto.eks.models import eks_backends
    from moto.ssm.models import Parameter, ssm_backends

    account = str(doc.get("account", DEFAULT_ACCOUNT))
    region = str(doc["region"])
    now = datetime.datetime.now(datetime.UTC)
    ec2 = ec2_backends[account][region]
    ssm = ssm_backends[account][region]
    amis: dict[str, str] = {}
    for k8s_version in doc.get("k8s_versions", []):
        for name, family, arch, variant in ssm_ami_parameters(str(k8s_version)):
            if ssm._parameters.get(name):
                amis[name] = ssm._parameters[name][-1].value
                continue
            ami_id = random_ami_id()
            owner = BOTTLEROCKET_AMI_OWNER if family == "bottlerocket" else EKS_AMI_OWNER
            label = f"{family}-{variant}-{k8s_version}-{arch}"
            ec2.amis[ami_id] = Ami(
                ec2,
                ami_id,
                name=f"nodewright-local-{label}",
                description=f"Local stand-in for the public {label} AMI",
                owner_id=owner,
                public=True,
                virtualization_type="hvm",
                architecture=arch,
                root_device_type="ebs",
                root_device_name="/dev/sda1" if family.startswith("windows") else "/dev/xvda",
                region_name=region,
            )
            ssm._parameters[name].append(
                Parameter(  # type: ignore[abstract]
                    account_id=account,
                    name=name,
                    value=ami_id,
                    parameter_type="String",
                    description=None,
                    allowed_pattern=None,
                    keyid=None,
                    last_modified_date=now,
                    version=1,
                    data_type="aws:ec2:image",
                )
            )
            amis[name] = ami_id

    cluster_name = doc.get("cluster")
    if cluster_name:
        cluster = eks_backends[account][region].clusters[str(cluster_name)]
        cluster.endpoint = str(doc["endpoint"])
        cluster.certificate_authority = {"data": str(doc["ca_data"])}
        cluster.status = "ACTIVE"
    return {"amis": amis}


def _route_cloudformation_state_machines() -> None:
    """Make CloudFormation create state machines where executions look for them.

    With execution enabled, moto's Step Functions API serves from its ASL-interpreting backend, but
    its CloudFormation handlers write to the plain one, so a synthesized stack's state machine would
    be invisible to StartExecution. The handlers read the module-level name at call time.
    """
    from moto.stepfunctions import models as sfn_models
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    setattr(sfn_models, "stepfunctions_backends", stepfunctions_parser_backends)  # noqa: B010


def secret_for(access_key_id: str) -> dict[str, str] | None:
    """The secret (and session token) behind an access key moto issued, for the token webhook's
    signature check; None for keys moto did not issue (such as the dummy `testing`)."""
    from moto.iam.models import iam_backends
    from moto.sts.models import sts_backends

    for account_id in list(sts_backends.keys()):
        role = sts_backends[account_id]["aws"].get_assumed_role_from_access_key(access_key_id)
        if role is not None:
            return {"secret_access_key": role.secret_access_key, "session_token": role.session_token}
    for account_id in list(iam_backends.keys()):
        for key in iam_backends[account_id]["aws"].get_all_access_keys_for_all_users():
            if key.access_key_id == access_key_id:
                return {"secret_access_key": key.secret_access_key}
    return None


SHORT_WAIT_SECONDS = 1.0


def _install_short_waits() -> None:
    """Cut Wait states and Retry intervals to at most SHORT_WAIT_SECONDS (tests and demos only)."""
    import time

    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function import wait_function

    class _ShortSleep:
        # retrier_decl only calls time.sleep; everything else is delegated to the real module.
        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

        @staticmethod
        def sleep(seconds: float) -> None:
            time.sleep(min(seconds, SHORT_WAIT_SECONDS))

    setattr(retrier_decl, "time", _ShortSleep())  # noqa: B010

    def _short_wait(self: Any, env: Any, wait_seconds: int) -> None:
        time.sleep(min(wait_seconds, SHORT_WAIT_SECONDS))

    setattr(wait_function.WaitFunction, "_wait_interval", _short_wait)  # noqa: B010


def complete_event_envelope() -> None:
    """EventBridge delivers a rule target's event whole, `account` included; moto's default target template drops
    it, and nodewright refuses an interruption event that does not name this stack's account. Put it back."""
    from moto.events.utils import EventTemplateParser

    template = EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE
    if '"account"' not in template:
        EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE = template.replace(
            '"source": "<source>",', '"source": "<source>", "account": "<account>",'
        )


def serialize_subnet_addresses() -> None:
    """Hand out subnet addresses one launch at a time, as EC2 does.

    moto draws a subnet's next private address from one generator; two CreateFleet calls in parallel threads (the
    provisioner launches its NodeClaims concurrently) enter it together and one fails with "generator already
    executing", a fault real EC2 never has."""
    from moto.ec2.models.subnets import Subnet

    original = Subnet.get_available_subnet_ip
    if getattr(original, "serialized", False):
        return
    lock = threading.Lock()

    def get_available_subnet_ip(self: Any, instance: Any) -> str:
        with lock:
            return original(self, instance)

    get_available_subnet_ip.serialized = True  # type: ignore[attr-defined]
    setattr(Subnet, "get_available_subnet_ip", get_available_subnet_ip)  # noqa: B010


def index_ec2_tags() -> None:
    """Read an EC2 resource's tags straight from the tag table, by its id.

    moto finds one resource's tags by scanning every tag of every resource (`describe_tags` with a resource-id
    filter), and it does so for each instance a DescribeInstances renders or tests against a tag filter: a call
    costs instances x tags, so at a few thousand instances one tag-filtered DescribeInstances takes minutes and
    the server chokes. EC2 answers by index; so does this. Same entries, same order as `describe_tags` gives."""
    from moto.ec2.models.core import TaggedEC2Resource
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    if getattr(TaggedEC2Resource.get_tags, "indexed", False):
        return

    def get_tags(self: Any) -> list[dict[str, str]]:
        resource_id = self.id
        if not resource_id:
            return []
        # .get, not [...]: the table is a defaultdict, and a lookup must not add an empty row to it.
        found: dict[str, str] = self.ec2_backend.tags.get(resource_id) or {}
        resource_type = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
        return [
            {"resource_id": resource_id, "key": key, "value": value, "resource_type": resource_type}
            for key, value in found.items()
        ]

    get_tags.indexed = True  # type: ignore[attr-defined]
    setattr(TaggedEC2Resource, "get_tags", get_tags)  # noqa: B010


def instance_states(region: str) -> dict[str, str]:
    """Every instance of `region` (all accounts) and its state name, read from moto's tables: what the registrar
    follows each second. Cheap at any size, where a DescribeInstanceStatus of every instance costs moto's
    serializer about half a millisecond an instance (seconds at a few thousand)."""
    from moto.ec2.models import ec2_backends

    states: dict[str, str] = {}
    for account_id in list(ec2_backends.keys()):
        backend = ec2_backends[account_id].get(region)
        if backend is None:
            continue
        for reservation in list(backend.reservations.values()):
            for instance in list(reservation.instances):
                states[str(instance.id)] = str(instance.state)
    return states


def release_ami(doc: dict[str, Any]) -> dict[str, Any]:
    """A new AMI release behind a public AMI parameter, as EKS publishes one: a new image of the same
    architecture is registered and becomes the parameter's next version. Returns the old and new image ids."""
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.amis import Ami
    from moto.ec2.utils import random_ami_id
    from moto.ssm.models import Parameter, ssm_backends

    account = str(doc.get("account", DEFAULT_ACCOUNT))
    region, name = str(doc["region"]), str(doc["name"])
    ec2 = ec2_backends[account][region]
    versions = ssm_backends[account][region]._parameters[name]
    if not versions:
        raise KeyError(f"no AMI parameter {name}; seed the world first")
    current = versions[-1]
    old = ec2.amis[current.value]
    ami_id = random_ami_id()
    ec2.amis[ami_id] = Ami(
        ec2,
        ami_id,
        name=f"{old.name}-r{current.version + 1}",
        description=old.description,
        owner_id=old.owner_id,
        public=True,
        virtualization_type="hvm",
        architecture=old.architecture,
        root_device_type="ebs",
        root_device_name="/dev/xvda",
        region_name=region,
    )
    versions.append(
        Parameter(  # type: ignore[abstract]
            account_id=account,
            name=name,
            value=ami_id,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.datetime.now(datetime.UTC),
            version=current.version + 1,
            data_type="aws:ec2:image",
        )
    )
    return {"old": current.value, "new": ami_id}


def install_launch_template_security_groups() -> None:
    """Give fleet instances their launch template's security groups, as EC2 does.

    moto's CreateFleet reads a template's groups from a key EC2 does not use (`GroupSet`), so its instances got the
    VPC's default group, and every node would look drifted (SecurityGroupDrift). The groups are filled in from the
    template's `SecurityGroupId(s)` before the fleet's instances are created."""
    from moto.ec2.models import fleets

    def with_template_groups(create: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            for spec in self.launch_specs:
                template_spec = spec.launch_template_spec or {}
                if spec.group_set or "LaunchTemplateId" not in template_spec:
                    continue
                template = self.ec2_backend.get_launch_template(template_spec["LaunchTemplateId"])
                version = template_spec.get("Version", template.default_version_number)
                data = template.get_version(version).data
                spec.group_set = list(data.get("SecurityGroupIds") or data.get("SecurityGroupId") or [])
            return create(self, *args, **kwargs)

        return run

    for name in ("create_spot_requests", "create_on_demand_requests"):
        setattr(fleets.Fleet, name, with_template_groups(getattr(fleets.Fleet, name)))


_REGION_IN_AUTH = re.compile(r"Credential=([^/]+)/\d{8}/([^/]+)/")
_CREDENTIAL_SCOPE = re.compile(r"Credential=([^/]+)/\d{8}/[^/]+/([^/]+)/")


def _request_service(environ: dict[str, Any]) -> tuple[str, str]:
    """The access key and the service (its signing name: ec2, dynamodb, states) of a SigV4-signed request."""
    match = _CREDENTIAL_SCOPE.search(str(environ.get("HTTP_AUTHORIZATION", "")))
    return (match.group(1), match.group(2)) if match else ("", "")


def _request_protocol(environ: dict[str, Any], action: str) -> str:
    """How the service speaks errors: "json" (X-Amz-Target), "query" (an Action parameter) or "rest"."""
    if environ.get("HTTP_X_AMZ_TARGET"):
        return "json"
    return "query" if action else "rest"


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def caller_function(access_key: str) -> str:
    """The Lambda function behind `access_key`: the seam signs each invocation's calls with a session of the
    function's role named after the function (`lambda_seam`), so the session name is the function's name
    (cut at 64 characters, as STS does). Empty for any other caller."""
    from moto.sts.models import sts_backends

    for account_id in list(sts_backends.keys()):
        role = sts_backends[account_id]["aws"].get_assumed_role_from_access_key(access_key)
        if role is not None:
            return str(role.session_name)
    return ""


def _request_action(environ: dict[str, Any], body: bytes) -> str:
    """The API action of a request, for query (Action=...) and JSON (X-Amz-Target) protocols."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        return str(target).rsplit(".", 1)[-1]
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    if "Action" in query:
        return str(query["Action"][0])
    content_type = environ.get("CONTENT_TYPE", "")
    if body and "x-www-form-urlencoded" in content_type:
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        if "Action" in form:
            return str(form["Action"][0])
    return ""


class FaultMiddleware:
    """WSGI middleware in front of moto: control endpoints, throttling, refusals and CreateFleet capacity."""

    def __init__(
        self, app: WsgiApp, faults: faultmod.Faults, schedules: schedule_runner.ScheduleRunner | None = None
    ) -> None:
        self.app = app
        self.faults = faults
        self.schedules = schedules

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path.startswith("/_nodewright/"):
            return self._control(path, environ, start_response)

        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        action = _request_action(environ, body)

        if action and self.faults.take_throttle(action):
            payload = faultmod.throttle_response_body()
            start_response(
                "503 Service Unavailable",
                [("Content-Type", "text/xml"), ("Content-Length", str(len(payload)))],
            )
            return [payload]

        if action:
            access_key, service = _request_service(environ)
            refusal = self.faults.take_refusal(service, action, lambda: caller_function(access_key))
            if refusal is not None:
                headers, payload = faultmod.error_response(
                    _request_protocol(environ, action), service, refusal.code, refusal.message
                )
                headers.append(("Content-Length", str(len(payload))))
                start_response(f"{refusal.status} {_reason(refusal.status)}", headers)
                return [payload]

        rejected: list[faultmod.Rejected] = []
        if action == "CreateFleet":
            body, rejected, all_gone = self._rewrite_fleet(environ, body)
            if all_gone:
                payload = faultmod.all_rejected_response(rejected).encode()
                start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(payload)))])
                return [payload]

        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        if not rejected:
            return self.app(environ, start_response)

        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured["status"], captured["headers"] = status, headers
            return lambda _data: None

        chunks = b"".join(self.app(environ, capture))
        status = str(captured["status"])
        if status.startswith("200"):
            chunks = faultmod.add_errors_to_response(chunks.decode(), rejected).encode()
        headers = [(k, v) for k, v in captured["headers"] if k.lower() != "content-length"]
        headers.append(("Content-Length", str(len(chunks))))
        start_response(status, headers)
        return [chunks]

    def _rewrite_fleet(self, environ: dict[str, Any], body: bytes) -> tuple[bytes, list[faultmod.Rejected], bool]:
        from moto.ec2.models import ec2_backends
        from moto.iam.models import get_account_id_from

        match = _REGION_IN_AUTH.search(str(environ.get("HTTP_AUTHORIZATION", "")))
        access_key, region = (match.group(1), match.group(2)) if match else ("", "us-east-1")
        backend = ec2_backends[get_account_id_from(access_key)][region]

        def zone_of_subnet(subnet_id: str) -> str:
            return str(backend.get_subnet(subnet_id).availability_zone)

        def instance_type_of_template(spec: dict[str, str]) -> str:
            if "LaunchTemplateId" in spec:
                template = backend.get_launch_template(spec["LaunchTemplateId"])
            else:
                template = backend.get_launch_template_by_name(spec.get("LaunchTemplateName", ""))
            version = template.get_version(spec.get("Version", "$Default"))
            return str(version.data.get("InstanceType", ""))

        flat = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode(), keep_blank_values=True).items()}
        rewritten, rejected = faultmod.rewrite_create_fleet(
            flat, self.faults, zone_of_subnet, instance_type_of_template
        )
        if not rejected:
            return body, [], False
        still_launching = any(k.startswith("LaunchTemplateConfigs.") for k in rewritten)
        return urllib.parse.urlencode(rewritten).encode(), rejected, not still_launching

    def _control(self, path: str, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        doc = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
        status, result = "200 OK", dict[str, Any]()
        try:
            if path == "/_nodewright/health":
                result = {"ok": True}
            elif path == "/_nodewright/faults" and method in ("PUT", "POST"):
                self.faults.replace(doc)
                result = self.faults.to_json()
            elif path == "/_nodewright/faults" and method == "DELETE":
                self.faults.replace({})
                result = self.faults.to_json()
            elif path == "/_nodewright/faults":
                result = self.faults.to_json()
            elif path.startswith("/_nodewright/schedules"):
                status, result = self._schedules(path, method, doc)
            elif path == "/_nodewright/seed" and method == "POST":
                result = seed(doc)
            elif path == "/_nodewright/instance-states" and method == "POST":
                result = {"instances": instance_states(str(doc.get("region", "us-east-1")))}
            elif path == "/_nodewright/release-ami" and method == "POST":
                result = release_ami(doc)
            elif path.startswith("/_nodewright/credentials/"):
                found = secret_for(path.rsplit("/", 1)[1])
                status, result = ("200 OK", found) if found else ("404 Not Found", {"error": "unknown access key"})
            else:
                status, result = "404 Not Found", {"error": f"no control endpoint {method} {path}"}
        except Exception as exc:
            status, result = "500 Internal Server Error", {"error": f"{type(exc).__name__}: {exc}"}
        payload = json.dumps(result).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        return [payload]

    def _schedules(self, path: str, method: str, doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        runner = self.schedules
        if runner is None:
            return "404 Not Found", {"error": "this server runs no schedules"}
        verb = path.removeprefix("/_nodewright/schedules").strip("/")
        if verb == "" and method == "GET":
            return "200 OK", runner.describe()
        if verb == "pause" and method == "POST":
            runner.pause()
            return "200 OK", runner.describe()
        if verb == "resume" and method == "POST":
            period = doc.get("period_seconds")
            runner.resume(float(period) if period is not None else None)
            return "200 OK", runner.describe()
        if verb == "tick" and method == "POST":
            results = runner.tick(due_only=bool(doc.get("due_only", False)), name=str(doc.get("name", "")))
            return "200 OK", {"results": results}
        return "404 Not Found", {"error": f"no control endpoint {method} {path}"}


def _accept_cloudformation_key_tags() -> None:
    """Let CloudFormation create tagged KMS keys, as AWS does.

    moto's `AWS::KMS::Key` handler passes the template's tags (`Key`/`Value`, as CloudFormation writes them)
    to a backend that expects KMS's API shape (`TagKey`/`TagValue`) and fails on every tagged key; the stack
    tags every resource, its alarm topic's key included.
    """
    from moto.kms.models import KmsBackend

    create_key = KmsBackend.create_key

    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        tags = kwargs.get("tags")
        if tags:
            kwargs["tags"] = [
                {"TagKey": t.get("TagKey", t.get("Key")), "TagValue": t.get("TagValue", t.get("Value"))} for t in tags
            ]
        return create_key(self, *args, **kwargs)

    setattr(KmsBackend, "create_key", create)  # noqa: B010


def main(argv: list[str] | None = None) -> int:
    """Run the server until terminated."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--repo-root", type=Path, required=True)
    parser.add_argument("--short-waits", action="store_true")
    parser.add_argument("--schedules-paused", action="store_true", help="start with the schedules paused")
    args = parser.parse_args(argv)

    # moto's Step Functions and Lambda call back into "the server" through MOTO_PORT.
    os.environ["MOTO_PORT"] = str(args.port)
    endpoint = f"http://127.0.0.1:{args.port}"

    from moto.core.config import default_user_config
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import run_simple

    default_user_config["stepfunctions"] = {"execute_state_machine": True}
    _route_cloudformation_state_machines()
    _accept_cloudformation_key_tags()
    faults = faultmod.Faults()
    lambda_seam.install(args.repo_root.resolve(), args.state_dir / "lambda-code", endpoint, faults)
    sqs_poller.install()
    schedule_runner.install_cloudformation_schedules()
    schedules = schedule_runner.ScheduleRunner(paused=args.schedules_paused)
    schedules.start()
    install_launch_template_security_groups()
    complete_event_envelope()
    serialize_subnet_addresses()
    index_ec2_tags()
    if args.short_waits:
        _install_short_waits()

    app = DomainDispatcherApplication(create_backend_app)
    wrapped = FaultMiddleware(app, faults, schedules)
    print(
        f"nodewright moto server on {endpoint} (short waits: {args.short_waits}, "
        f"schedules {'paused' if args.schedules_paused else 'running'})",
        flush=True,
    )
    run_simple("127.0.0.1", args.port, wrapped, threaded=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
