"""Faults the moto server injects at the wire, because moto never produces them by itself.

- Insufficient capacity: CreateFleet overrides whose (instance type, zone, capacity type) offering is
  marked unavailable are removed from the request before moto sees it, and reported in the response's
  `errorSet` with `InsufficientInstanceCapacity`, exactly where an instant fleet reports them in AWS.
- Throttling: the next N calls of chosen actions answer HTTP 503 `RequestLimitExceeded`.
- Refusals: calls of an action (`dynamodb:PutItem`), optionally only those a named Lambda function makes, answer
  an AWS error of the test's choosing (`ProvisionedThroughputExceededException`, HTTP 400) N times or for ever,
  in the wire format of the service's protocol, so botocore raises the ClientError it would raise in AWS.
- Kills: a Lambda function running in the seam (`lambda_seam`) dies at a named step, before an AWS call is sent
  or after its answer arrived (`ec2:CreateFleet`, `states:StartExecution`), or at a Kubernetes request
  (`k8s:POST /apis/nodewright.io/v1/nodeclaims`), as a crashed container would: `InvocationKilled` is a
  BaseException, so no `except Exception` in handler code stops it, and the invocation ends with Lambda's
  `Runtime.ExitError`.

The rules document (`PUT /_nodewright/faults`, every key optional; a missing key means no rules of that kind,
so `{}` resets everything):

    {"unavailable": [{"instance_type": "m5.large", "zone": "us-east-1a", "capacity_type": "spot"}],
     "throttle": {"DescribeInstanceTypes": 2},
     "refuse": [{"action": "dynamodb:PutItem", "code": "ProvisionedThroughputExceededException",
                 "status": 400, "count": -1, "function": "Interruption", "message": "..."}],
     "kill": [{"function": "Provisioner", "before": "ec2:CreateFleet", "count": 1, "error": "..."}]}

`count` is how many matching calls the rule takes (-1: for ever; refusals default to -1, kills to 1); a
`function` matches a function name exactly or as a substring (empty: any caller). The server reports each
rule back with `remaining` and `fired` so a test can see that its fault happened.

This module is the pure part (rules, request rewriting, error bodies); the WSGI middleware in `motoserver`
and the seam apply it. Rules are JSON so tests switch them per test through the server's control endpoint.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

WILDCARD = "*"


@dataclass(frozen=True)
class Offering:
    """One (instance type, zone, capacity type) triple; any field may be the wildcard `*`."""

    instance_type: str
    zone: str
    capacity_type: str

    def matches(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        """True when every non-wildcard field equals the given value."""
        return (
            self.instance_type in (WILDCARD, instance_type)
            and self.zone in (WILDCARD, zone)
            and self.capacity_type in (WILDCARD, capacity_type)
        )


FOREVER = -1
KILL_PHASES = ("before", "after")
K8S_PREFIX = "k8s:"


def function_matches(pattern: str, function: str) -> bool:
    """A rule's `function` names a function exactly or by a substring of its (generated) name; empty: any."""
    return not pattern or pattern == function or pattern in function


def _count(value: Any, default: int) -> int:
    count = int(default if value is None else value)
    if count < FOREVER:
        raise ValueError(f"count {count}: use a positive number, or -1 for ever")
    return count


def action_matches(pattern: str, service: str, action: str) -> bool:
    """`service:Action`, `service:*`, a bare `Action` (any service) or `*` against one call."""
    if pattern == WILDCARD:
        return True
    wanted_service, sep, wanted_action = pattern.rpartition(":")
    if sep and wanted_service.lower() != service.lower():
        return False
    return wanted_action in (WILDCARD, action)


@dataclass
class RefuseRule:
    """Answer calls of `action` with an AWS error `code` (HTTP `status`), `remaining` times (-1: for ever)."""

    action: str
    code: str
    status: int = 400
    message: str = ""
    remaining: int = FOREVER
    function: str = ""
    fired: int = 0

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RefuseRule:
        """Read one rule; `action` and `code` are required."""
        if not doc.get("action") or not doc.get("code"):
            raise ValueError(f"a refuse rule needs an action and a code: {doc}")
        return cls(
            action=str(doc["action"]),
            code=str(doc["code"]),
            status=int(doc.get("status", 400)),
            message=str(doc.get("message") or f"{doc['code']} (injected by the local world)"),
            remaining=_count(doc.get("count"), FOREVER),
            function=str(doc.get("function", "")),
        )

    def to_json(self) -> dict[str, Any]:
        """The rule as the control endpoint reports it."""
        return {
            "action": self.action,
            "code": self.code,
            "status": self.status,
            "message": self.message,
            "function": self.function,
            "remaining": self.remaining,
            "fired": self.fired,
        }


@dataclass
class KillRule:
    """Kill an invocation of `function` when it reaches `step` (`phase` before the call or after its answer)."""

    function: str
    phase: str
    step: str
    remaining: int = 1
    error: str = ""
    fired: int = 0

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> KillRule:
        """Read one rule: exactly one of `before` / `after` names the step."""
        phases = [p for p in KILL_PHASES if doc.get(p)]
        if len(phases) != 1:
            raise ValueError(f"a kill rule names its step with exactly one of 'before' or 'after': {doc}")
        step = str(doc[phases[0]])
        if step.startswith(K8S_PREFIX):
            re.compile(step.removeprefix(K8S_PREFIX))  # a bad pattern fails when the rule is set, not mid-test
        elif ":" not in step:
            raise ValueError(f"step {step!r}: use service:Action (ec2:CreateFleet) or k8s:<METHOD path regex>")
        return cls(
            function=str(doc.get("function", "")),
            phase=phases[0],
            step=step,
            remaining=_count(doc.get("count"), 1),
            error=str(doc.get("error", "")),
        )

    def matches(self, function: str, phase: str, step: str) -> bool:
        """True when this rule stops `function` at `step` in `phase` (count aside).

        AWS steps compare as `service:Action` (service case-insensitive, `service:*` for any action); a
        Kubernetes step `k8s:<METHOD> <path>` is matched by the rule's regex from its start."""
        if phase != self.phase or not function_matches(self.function, function):
            return False
        if self.step.startswith(K8S_PREFIX):
            return (
                step.startswith(K8S_PREFIX)
                and re.match(self.step.removeprefix(K8S_PREFIX), step.removeprefix(K8S_PREFIX)) is not None
            )
        service, _, action = step.partition(":")
        return not step.startswith(K8S_PREFIX) and action_matches(self.step, service, action)

    def to_json(self) -> dict[str, Any]:
        """The rule as the control endpoint reports it."""
        return {
            "function": self.function,
            self.phase: self.step,
            "error": self.error,
            "remaining": self.remaining,
            "fired": self.fired,
        }


class InvocationKilled(BaseException):
    """A kill rule stopped the Lambda invocation: a BaseException, so that handler code catching Exception
    does not survive what a real crash would end."""

    def __init__(self, function: str, phase: str, step: str, error: str = "") -> None:
        self.function, self.phase, self.step = function, phase, step
        super().__init__(error or f"killed {phase} {step} (local world kill rule)")


def _take(rule: RefuseRule | KillRule) -> bool:
    if rule.remaining == 0:
        return False
    if rule.remaining > 0:
        rule.remaining -= 1
    rule.fired += 1
    return True


@dataclass
class Faults:
    """The switchable fault state of one moto server; thread-safe because moto serves threaded."""

    unavailable: list[Offering] = field(default_factory=list)
    throttle: dict[str, int] = field(default_factory=dict)
    refuse: list[RefuseRule] = field(default_factory=list)
    kill: list[KillRule] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The rules as the control endpoint reports them."""
        with self._lock:
            return {
                "unavailable": [
                    {"instance_type": o.instance_type, "zone": o.zone, "capacity_type": o.capacity_type}
                    for o in self.unavailable
                ],
                "throttle": dict(self.throttle),
                "refuse": [r.to_json() for r in self.refuse],
                "kill": [k.to_json() for k in self.kill],
            }

    def replace(self, doc: dict[str, Any]) -> None:
        """Replace all rules with those in `doc` (missing keys mean no rules of that kind)."""
        offerings = [
            Offering(
                str(o.get("instance_type", WILDCARD)),
                str(o.get("zone", WILDCARD)),
                str(o.get("capacity_type", WILDCARD)),
            )
            for o in doc.get("unavailable", [])
        ]
        throttle = {str(k): int(v) for k, v in dict(doc.get("throttle", {})).items()}
        refuse = [RefuseRule.from_json(dict(r)) for r in doc.get("refuse", [])]
        kill = [KillRule.from_json(dict(k)) for k in doc.get("kill", [])]
        with self._lock:
            self.unavailable = offerings
            self.throttle = throttle
            self.refuse = refuse
            self.kill = kill

    def take_refusal(self, service: str, action: str, caller: Callable[[], str]) -> RefuseRule | None:
        """Consume one refusal of `service:action` and return its rule, or None when the call goes through.
        `caller()` names the Lambda function making the call (empty for others); it is only asked when a rule
        scoped to a function matches the action, because finding it costs a lookup."""
        with self._lock:
            candidates = [r for r in self.refuse if r.remaining != 0 and action_matches(r.action, service, action)]
        if not candidates:
            return None
        function = caller() if any(r.function for r in candidates) else ""
        with self._lock:
            for rule in candidates:
                if (not rule.function or (function and function_matches(rule.function, function))) and _take(rule):
                    return rule
        return None

    def take_kill(self, function: str, phase: str, step: str) -> KillRule | None:
        """Consume one kill for `function` at `step` in `phase`; the rule that fired, or None."""
        with self._lock:
            for rule in self.kill:
                if rule.matches(function, phase, step) and _take(rule):
                    return rule
        return None

    def take_throttle(self, action: str) -> bool:
        """Consume one throttled call for `action` (or for `*`); True when this call is throttled."""
        with self._lock:
            for key in (action, WILDCARD):
                remaining = self.throttle.get(key, 0)
                if remaining > 0:
                    self.throttle[key] = remaining - 1
                    return True
            return False

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        """True when a rule marks this offering as out of capacity."""
        with self._lock:
            return any(o.matches(instance_type, zone, capacity_type) for o in self.unavailable)


THROTTLE_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>RequestLimitExceeded</Code>'
    "<Message>Request limit exceeded.</Message></Error></Errors><RequestID>{rid}</RequestID></Response>"
)


def throttle_response_body() -> bytes:
    """The body EC2 sends with HTTP 503 when an account's request rate is exceeded."""
    return THROTTLE_BODY.format(rid=uuid.uuid4()).encode()


# Services whose REST protocol speaks XML; every other REST service (lambda, eks, scheduler) speaks JSON.
_REST_XML = frozenset({"s3", "route53", "cloudfront"})


def error_response(protocol: str, service: str, code: str, message: str) -> tuple[list[tuple[str, str]], bytes]:
    """Headers (without Content-Length) and body of an AWS error in the wire format botocore parses for
    `protocol`: "json" (X-Amz-Target: DynamoDB, Step Functions, SQS), "query" (Action=: EC2's own shape, else
    the ErrorResponse of STS, IAM, SNS) or "rest" (a path per operation: Lambda, EKS, S3)."""
    rid = str(uuid.uuid4())
    if protocol == "json":
        body = json.dumps({"__type": f"com.amazonaws.{service}#{code}", "message": message}).encode()
        return [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-RequestId", rid)], body
    if protocol == "query" and service == "ec2":
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
            f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message></Error></Errors>"
            f"<RequestID>{rid}</RequestID></Response>"
        )
        return [("Content-Type", "text/xml")], xml.encode()
    if protocol == "query" or service in _REST_XML:
        xml = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{escape(code)}</Code>"
            f"<Message>{escape(message)}</Message></Error><RequestId>{rid}</RequestId></ErrorResponse>"
        )
        return [("Content-Type", "text/xml"), ("x-amzn-RequestId", rid)], xml.encode()
    body = json.dumps({"message": message, "Type": "User"}).encode()
    return [("Content-Type", "application/json"), ("x-amzn-ErrorType", code), ("x-amzn-RequestId", rid)], body


_OVERRIDE_KEY = re.compile(r"^LaunchTemplateConfigs\.(\d+)\.Overrides\.(\d+)\.(.+)$")
_CONFIG_KEY = re.compile(r"^LaunchTemplateConfigs\.(\d+)\.(.+)$")


@dataclass(frozen=True)
class Rejected:
    """An override removed from a CreateFleet request, with what the error item must echo."""

    template: dict[str, str]
    overrides: dict[str, str]
    instance_type: str
    zone: str
    capacity_type: str


def rewrite_create_fleet(
    params: dict[str, str],
    faults: Faults,
    zone_of_subnet: Callable[[str], str],
    instance_type_of_template: Callable[[dict[str, str]], str],
) -> tuple[dict[str, str], list[Rejected]]:
    """Drop the overrides of unavailable offerings from flat CreateFleet query `params`.

    Returns the rewritten params (configs and overrides renumbered from 1, because moto reads
    indexed parameters until the first gap) and the rejected overrides. A config with no overrides
    stands for one offering: the template's instance type in any zone.
    """
    capacity_type = params.get("TargetCapacitySpecification.DefaultTargetCapacityType", "on-demand")
    configs: dict[int, dict[str, str]] = {}
    overrides: dict[int, dict[int, dict[str, str]]] = {}
    rest: dict[str, str] = {}
    for key, value in params.items():
        m = _OVERRIDE_KEY.match(key)
        if m:
            overrides.setdefault(int(m.group(1)), {}).setdefault(int(m.group(2)), {})[m.group(3)] = value
            continue
        m = _CONFIG_KEY.match(key)
        if m:
            configs.setdefault(int(m.group(1)), {})[m.group(2)] = value
            continue
        rest[key] = value

    rejected: list[Rejected] = []
    kept: list[tuple[dict[str, str], list[dict[str, str]]]] = []
    for index in sorted(set(configs) | set(overrides)):
        config = configs.get(index, {})
        template = {
            k.removeprefix("LaunchTemplateSpecification."): v
            for k, v in config.items()
            if k.startswith("LaunchTemplateSpecification.")
        }
        these = [overrides[index][i] for i in sorted(overrides.get(index, {}))]
        if not these:
            itype = instance_type_of_template(template)
            if faults.is_unavailable(itype, WILDCARD, capacity_type):
                rejected.append(Rejected(template, {}, itype, "", capacity_type))
            else:
                kept.append((config, []))
            continue
        survivors = []
        for override in these:
            itype = override.get("InstanceType") or instance_type_of_template(template)
            zone = override.get("AvailabilityZone") or (
                zone_of_subnet(override["SubnetId"]) if "SubnetId" in override else ""
            )
            if faults.is_unavailable(itype, zone, capacity_type):
                rejected.append(Rejected(template, override, itype, zone, capacity_type))
            else:
                survivors.append(override)
        if survivors:
            kept.append((config, survivors))

    out = dict(rest)
    for ci, (config, survivors) in enumerate(kept, start=1):
        for k, v in config.items():
            out[f"LaunchTemplateConfigs.{ci}.{k}"] = v
        for oi, override in enumerate(survivors, start=1):
            for k, v in override.items():
                out[f"LaunchTemplateConfigs.{ci}.Overrides.{oi}.{k}"] = v
    return out, rejected


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


def error_set_xml(rejected: list[Rejected]) -> str:
    """The `<errorSet>` of an instant fleet for the rejected overrides."""
    items = []
    for r in rejected:
        spec = "".join(
            f"<{_lower_first(k)}>{escape(v)}</{_lower_first(k)}>"
            for k, v in r.template.items()
            if k in ("LaunchTemplateId", "LaunchTemplateName", "Version")
        )
        ov = dict(r.overrides)
        ov.setdefault("InstanceType", r.instance_type)
        if r.zone:
            ov.setdefault("AvailabilityZone", r.zone)
        over = "".join(
            f"<{_lower_first(k)}>{escape(v)}</{_lower_first(k)}>"
            for k, v in ov.items()
            if "." not in k  # nested override structures (placement, requirements) are not echoed
        )
        message = (
            f"We currently do not have sufficient {r.instance_type} capacity in the Availability Zone "
            f"you requested ({r.zone or 'any'}). Our system will be working on provisioning additional "
            "capacity."
        )
        items.append(
            "<item><launchTemplateAndOverrides>"
            f"<launchTemplateSpecification>{spec}</launchTemplateSpecification>"
            f"<overrides>{over}</overrides></launchTemplateAndOverrides>"
            f"<lifecycle>{escape(r.capacity_type)}</lifecycle>"
            "<errorCode>InsufficientInstanceCapacity</errorCode>"
            f"<errorMessage>{escape(message)}</errorMessage></item>"
        )
    return "<errorSet>" + "".join(items) + "</errorSet>"


def add_errors_to_response(body: str, rejected: list[Rejected]) -> str:
    """Insert the error set into moto's CreateFleetResponse XML (replacing an empty one)."""
    if not rejected:
        return body
    body = re.sub(r"<errorSet\s*/>|<errorSet>\s*</errorSet>", "", body)
    return body.replace("</CreateFleetResponse>", error_set_xml(rejected) + "</CreateFleetResponse>", 1)


def all_rejected_response(rejected: list[Rejected]) -> str:
    """The whole response of an instant fleet that launched nothing: a fleet id and only errors."""
    fleet_id = "fleet-" + uuid.uuid4().hex[:8] + "-" + uuid.uuid4().hex[:4] + "-" + uuid.uuid4().hex[:12]
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<requestId>{uuid.uuid4()}</requestId><fleetId>{fleet_id}</fleetId>"
        f"{error_set_xml(rejected)}<fleetInstanceSet/></CreateFleetResponse>"
    )
