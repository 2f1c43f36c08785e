"""The status of an EC2NodeClass, as Karpenter's nodeclass controller writes it: what the class resolved to and
whether it can launch.

Karpenter's EC2NodeClass carries `SubnetsReady`, `SecurityGroupsReady`, `AMIsReady` and `InstanceProfileReady`
conditions, a `Ready` condition that is True when they all are, and the subnets, security groups and instance
profile it resolved (`kubectl get ec2nodeclass` prints Ready). nodewright's planner resolves every class each
tick (drift needs it) and records the outcome the same way, so a class that cannot launch, such as one naming a
role nodewright may not pass, says why in its status before any pod waits on it. Resolution stops at its first
failure: the steps before it are True, the failing one False with the error as its message, the later ones
Unknown (not checked).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.launch.template import ResolvedNodeClass
from nodewright.model.conditions import FALSE, TRUE, UNKNOWN, Condition

READY = "Ready"
SUBNETS_READY = "SubnetsReady"
SECURITY_GROUPS_READY = "SecurityGroupsReady"
AMIS_READY = "AMIsReady"
INSTANCE_PROFILE_READY = "InstanceProfileReady"
# The order nodewright resolves a class in (EC2Launcher.resolve_node_class).
STEPS = (SUBNETS_READY, SECURITY_GROUPS_READY, AMIS_READY, INSTANCE_PROFILE_READY)


def resolved_status(resolved: ResolvedNodeClass) -> tuple[list[Condition], dict[str, Any]]:
    """Inputs: a class resolved against the account. Outputs: every condition True, and the status fields
    (`subnets` of the zones launches use, `securityGroups`, `instanceProfile`) in Karpenter's shapes."""
    conditions = [Condition(step, TRUE, step) for step in STEPS] + [Condition(READY, TRUE, READY)]
    fields: dict[str, Any] = {
        "subnets": [
            {"id": s.id, "zone": s.zone, **({"zoneID": s.zone_id} if s.zone_id else {})} for s in resolved.subnets
        ],
        "securityGroups": [{"id": g} for g in resolved.security_group_ids],
        "instanceProfile": resolved.instance_profile,
    }
    return conditions, fields


def failed_status(condition: str, message: str) -> list[Condition]:
    """Inputs: the condition a resolution failed at ("" when none is to blame) and why. Output: the conditions
    to set; Ready is False with the same message, so the Ready column and `kubectl describe` both show it."""
    conditions: list[Condition] = []
    if condition in STEPS:
        failed = STEPS.index(condition)
        conditions += [Condition(step, TRUE, step) for step in STEPS[:failed]]
        conditions.append(Condition(condition, FALSE, condition.removesuffix("Ready") + "NotReady", message))
        conditions += [
            Condition(step, UNKNOWN, "NotChecked", f"not checked while {condition} is False")
            for step in STEPS[failed + 1 :]
        ]
    reason = "UnhealthyDependents" if condition in STEPS else "ResolutionFailed"
    conditions.append(Condition(READY, FALSE, reason, message))
    return conditions


def needs_write(document: Mapping[str, Any], conditions: list[Condition], fields: Mapping[str, Any]) -> bool:
    """True when the class's current status differs from `conditions` (status, reason, message) or `fields`."""
    status = document.get("status") or {}
    current = {
        c.get("type"): (c.get("status"), c.get("reason"), c.get("message", ""))
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    }
    if any(current.get(c.type) != (c.status, c.reason, c.message) for c in conditions):
        return True
    return any(status.get(key) != value for key, value in fields.items())
