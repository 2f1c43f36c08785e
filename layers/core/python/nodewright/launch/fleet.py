"""CreateFleet requests for one NodeClaim, and what their responses mean.

A NodeClaim's launch options (from the simulation, cheapest first) are tried as a sequence of
`FleetAttempt`s, one per capacity type in the order reserved -> spot -> on-demand: capacity already paid
for first, then the cheapest market, then the one that is always there. Each attempt is one
`CreateFleet Type=instant` for one instance with at most 60 overrides (instance type x the claim zone's
subnet), grouped into one launch template config per AMI variant (an arm64 type needs the arm64 AMI).
Spot uses `price-capacity-optimized`, on-demand `lowest-price`; a reserved attempt targets one capacity
reservation through its launch template and launches as on-demand.

An instant fleet reports refused overrides in the response's `Errors`, not as an exception;
`classify_response` turns them into offerings to mark unavailable (capacity errors) and other failures.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.catalog.types import CAPACITY_TYPES, ON_DEMAND, RESERVED, SPOT
from nodewright.scheduling.results import LaunchOption

MAX_OVERRIDES = 60
# Errors that mean "this offering has no capacity for us now": mark it unavailable and try the next.
CAPACITY_ERRORS = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientHostCapacity",
        "InsufficientCapacityOnHost",
        "UnfulfillableCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "ReservationCapacityExceeded",
    }
)
THROTTLING_ERRORS = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException"})
# Errors that say a subnet, security group or image the EC2NodeClass resolved to is gone: what was resolved is
# dropped, so the next attempt resolves the class against EC2 again rather than waiting out the cache's TTL.
RESOLUTION_ERRORS = frozenset(
    {
        "InvalidSubnetID.NotFound",
        "InvalidSubnet",
        "InvalidGroup.NotFound",
        "InvalidSecurityGroupID.NotFound",
        "InvalidAMIID.NotFound",
        "InvalidAMIID.Unavailable",
    }
)

Offering = tuple[str, str, str]  # (instance type, zone, capacity type)


@dataclass(frozen=True, slots=True)
class Override:
    """One (instance type, subnet) candidate, with the option it stands for."""

    option: LaunchOption
    subnet_id: str
    variant: tuple[str, str]  # (architecture, standard|nvidia): selects the launch template

    def to_api(self) -> dict[str, Any]:
        return {
            "InstanceType": self.option.instance_type,
            "SubnetId": self.subnet_id,
            "AvailabilityZone": self.option.zone,
        }


@dataclass(frozen=True, slots=True)
class FleetAttempt:
    """One CreateFleet call: a capacity type, its overrides (cheapest first) and, for reserved, the ODCR."""

    capacity_type: str
    overrides: tuple[Override, ...]
    reservation_id: str = ""

    @property
    def variants(self) -> tuple[tuple[str, str], ...]:
        return tuple(dict.fromkeys(o.variant for o in self.overrides))


@dataclass(frozen=True, slots=True)
class AttemptPlan:
    """The attempts for a claim and the options left out, each with the reason."""

    attempts: tuple[FleetAttempt, ...]
    skipped: tuple[tuple[LaunchOption, str], ...] = ()


def plan_attempts(
    options: Sequence[LaunchOption],
    subnet_of_zone: Callable[[str], str | None],
    variant_of_type: Callable[[str], tuple[str, str] | None],
    unavailable: frozenset[Offering] = frozenset(),
) -> AttemptPlan:
    """Group a claim's launch options into CreateFleet attempts.

    Inputs: the options cheapest first (as the simulation lists them), the subnet to use per zone, the AMI
    variant per instance type (None: no AMI for it), and offerings known to be out of capacity.
    Output: attempts in capacity order reserved -> spot -> on-demand; reserved options become one attempt
    per reservation. Each attempt keeps the order of `options` and at most 60 overrides; options without
    a subnet, an AMI, or with no capacity are listed in `skipped` with why.
    """
    skipped: list[tuple[LaunchOption, str]] = []
    groups: dict[tuple[str, str], list[Override]] = {}
    for option in options:
        key = (option.instance_type, option.zone, option.capacity_type)
        if key in unavailable:
            skipped.append((option, "offering recently returned insufficient capacity"))
            continue
        subnet = subnet_of_zone(option.zone)
        if subnet is None:
            skipped.append((option, f"no subnet of the EC2NodeClass in {option.zone}"))
            continue
        variant = variant_of_type(option.instance_type)
        if variant is None:
            skipped.append((option, f"no AMI of the EC2NodeClass for {option.instance_type}'s architecture"))
            continue
        reservation = option.reservation_id if option.capacity_type == RESERVED else ""
        group = groups.setdefault((option.capacity_type, reservation), [])
        if len(group) >= MAX_OVERRIDES:
            continue
        # The same (type, zone) can appear twice only through distinct reservations; keep the first.
        if any(o.option.instance_type == option.instance_type and o.option.zone == option.zone for o in group):
            continue
        group.append(Override(option, subnet, variant))
    order = {c: i for i, c in enumerate(CAPACITY_TYPES)}
    attempts = tuple(
        FleetAttempt(capacity_type, tuple(overrides), reservation)
        for (capacity_type, reservation), overrides in sorted(
            groups.items(), key=lambda item: (order.get(item[0][0], 99), _first_price(item[1]), item[0][1])
        )
    )
    return AttemptPlan(attempts, tuple(skipped))


def _first_price(overrides: Sequence[Override]) -> float:
    return overrides[0].option.price if overrides else 0.0


def client_token(nodeclaim: str, attempt: FleetAttempt) -> str:
    """CreateFleet's idempotency token: the NodeClaim name plus the attempt's content (64 chars max).

    A retried invocation that repeats the same attempt for the same NodeClaim gets the fleet EC2 already
    created instead of a second instance.
    """
    content = "|".join(
        [nodeclaim, attempt.capacity_type, attempt.reservation_id]
        + [f"{o.option.instance_type}@{o.subnet_id}" for o in attempt.overrides]
    )
    return f"{nodeclaim[:40]}-{hashlib.sha256(content.encode()).hexdigest()[:23]}"


def fleet_request(
    nodeclaim: str,
    attempt: FleetAttempt,
    template_of_variant: Mapping[tuple[str, str], str],
    tags: Mapping[str, str],
) -> dict[str, Any]:
    """The CreateFleet request (boto3 keyword arguments) for one attempt.

    `template_of_variant` maps each AMI variant of the attempt to its launch template name; `tags` go on
    the instance and its volumes (and the fleet, which an instant fleet leaves behind as a record).
    """
    configs = []
    for variant in attempt.variants:
        configs.append(
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": template_of_variant[variant],
                    "Version": "$Latest",
                },
                "Overrides": [o.to_api() for o in attempt.overrides if o.variant == variant],
            }
        )
    tag_list = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
    request: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": client_token(nodeclaim, attempt),
        "LaunchTemplateConfigs": configs,
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": SPOT if attempt.capacity_type == SPOT else ON_DEMAND,
        },
        "TagSpecifications": [
            {"ResourceType": "instance", "Tags": tag_list},
            {"ResourceType": "volume", "Tags": tag_list},
            {"ResourceType": "fleet", "Tags": tag_list},
        ],
    }
    if attempt.capacity_type == SPOT:
        request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
    return request


@dataclass(frozen=True, slots=True)
class Launched:
    """An instance a CreateFleet request launched, and the launch option (type, zone, capacity type) it matched."""

    instance_id: str
    option: LaunchOption


@dataclass(frozen=True, slots=True)
class FleetOutcome:
    """What one CreateFleet response means.

    `launched` is the instance (if any) with the option it matched; `unavailable` are offerings that
    reported a capacity error (to mark for 3 minutes); `errors` are every error as `code: message`;
    `throttled` is True when EC2 answered with throttling inside `Errors`.
    """

    launched: Launched | None
    unavailable: tuple[tuple[Offering, str], ...] = ()
    errors: tuple[str, ...] = ()
    throttled: bool = False
    other: tuple[str, ...] = field(default_factory=tuple)


def classify_response(
    attempt: FleetAttempt, response: Mapping[str, Any], zone_of_subnet: Callable[[str], str | None]
) -> FleetOutcome:
    """Interpret an instant fleet's response for `attempt`.

    Each error names its override (instance type, subnet or zone); capacity errors mark that offering
    with the attempt's capacity type. An error without an override (rare) marks every override of the
    attempt, since EC2 could not place any of them. The launched instance is matched to the override
    with its instance type and subnet/zone, so the NodeClaim records the price of what really launched.
    """
    unavailable: dict[Offering, str] = {}
    errors: list[str] = []
    other: list[str] = []
    throttled = False
    for error in response.get("Errors") or ():
        code = str(error.get("ErrorCode", ""))
        message = str(error.get("ErrorMessage", ""))
        errors.append(f"{code}: {message}" if message else code)
        overrides = (error.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        if code in THROTTLING_ERRORS:
            throttled = True
            continue
        if code not in CAPACITY_ERRORS:
            other.append(code)
            continue
        instance_type = overrides.get("InstanceType")
        zone = overrides.get("AvailabilityZone") or zone_of_subnet(str(overrides.get("SubnetId", "")))
        if instance_type and zone:
            unavailable.setdefault((str(instance_type), str(zone), attempt.capacity_type), code)
        else:
            for o in attempt.overrides:
                unavailable.setdefault((o.option.instance_type, o.option.zone, attempt.capacity_type), code)
    launched: Launched | None = None
    for instance in response.get("Instances") or ():
        ids = instance.get("InstanceIds") or []
        if not ids:
            continue
        overrides = (instance.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        instance_type = str(instance.get("InstanceType") or overrides.get("InstanceType") or "")
        zone = overrides.get("AvailabilityZone") or zone_of_subnet(str(overrides.get("SubnetId", "")))
        match = next(
            (
                o.option
                for o in attempt.overrides
                if o.option.instance_type == instance_type and (zone is None or o.option.zone == zone)
            ),
            None,
        )
        if match is None:
            match = next((o.option for o in attempt.overrides if o.option.instance_type == instance_type), None)
        if match is not None:
            launched = Launched(str(ids[0]), match)
            break
    return FleetOutcome(launched, tuple(unavailable.items()), tuple(errors), throttled, tuple(other))


def resolution_gone(errors: Iterable[str]) -> bool:
    """Whether any error (`code: message`, or botocore's `... (code) when calling ...`) says a resource the
    launch used from its EC2NodeClass's resolution is gone: a subnet, security group, image, or the instance
    profile (EC2 calls that one an invalid `iamInstanceProfile` parameter)."""
    for error in errors:
        if any(code in error for code in RESOLUTION_ERRORS):
            return True
        if "InvalidParameterValue" in error and "iamInstanceProfile" in error:
            return True
    return False
