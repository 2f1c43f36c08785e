"""Faults the moto server injects at the wire, because moto never produces them by itself.

- Insufficient capacity: CreateFleet overrides whose (instance type, zone, capacity type) offering is
  marked unavailable are removed from the request before moto sees it, and reported in the response's
  `errorSet` with `InsufficientInstanceCapacity`, exactly where an instant fleet reports them in AWS.
- Throttling: the next N calls of chosen actions answer HTTP 503 `RequestLimitExceeded`.

This module is the pure part (rules, request rewriting, XML); the WSGI middleware in `motoserver`
applies it. Rules are JSON so tests switch them per test through the server's control endpoint.
"""

from __future__ import annotations

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


@dataclass
class Faults:
    """The switchable fault state of one moto server; thread-safe because moto serves threaded."""

    unavailable: list[Offering] = field(default_factory=list)
    throttle: dict[str, int] = field(default_factory=dict)
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
        with self._lock:
            self.unavailable = offerings
            self.throttle = throttle

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
