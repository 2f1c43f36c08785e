"""What one provisioning call decided: every decision with its reason, the claims launched, and timings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The `cause` detail of a launch EC2 refused for capacity, and of the pods that claim was for.
CAPACITY = "capacity"


@dataclass(frozen=True, slots=True)
class Decision:
    """One thing the provisioner decided, about one subject, and why.

    `action` is one of: launched, launch-failed, nominated, waiting, existing, unschedulable, skipped,
    registered, initialized, terminated, adopted, invalid, unavailable, throttled, deleted, busy.
    """

    action: str
    subject: str
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "subject": self.subject, "reason": self.reason}
        if self.details:
            out["details"] = dict(self.details)
        return out


@dataclass(frozen=True, slots=True)
class LaunchedClaim:
    """A NodeClaim the provisioner created or reused in this batch, and where it launched."""

    name: str
    nodepool: str
    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    pods: tuple[str, ...]
    reused: bool = False  # found already launched (a re-run), not launched by this call
    # The simulation's first choice (instance type, zone, capacity type); differs from what launched only
    # when EC2 refused it.
    planned: tuple[str, str, str] = ("", "", "")
    template: str = ""  # the launch template the instance came from ("" when adopted or unknown)
    capacity: Mapping[str, str] = field(default_factory=dict)  # status.capacity as recorded on the NodeClaim

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodepool": self.nodepool,
            "instance_id": self.instance_id,
            "instance_type": self.instance_type,
            "zone": self.zone,
            "capacity_type": self.capacity_type,
            "price_per_hour": self.price,
            "pods": list(self.pods),
            "reused": self.reused,
            "planned": {"instance_type": self.planned[0], "zone": self.planned[1], "capacity_type": self.planned[2]},
        }


@dataclass
class ProvisionResult:
    """Every decision with its reason, the claims launched, and timings (seconds)."""

    batch_id: str
    decisions: list[Decision] = field(default_factory=list)
    launched: list[LaunchedClaim] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    fleet_requests: int = 0
    # Pods not planned because a NodeClaim in flight (or the node of one named for them) already has room for
    # them: pod key -> that NodeClaim. A replacement adopts these claims as its own.
    waiting: dict[str, str] = field(default_factory=dict)
    # Keys of CapacityBuffers' virtual pods planned here: no API object to record events on.
    virtual_pods: set[str] = field(default_factory=set)

    def decide(self, action: str, subject: str, reason: str, **details: Any) -> None:
        self.decisions.append(Decision(action, subject, reason, details))

    def merge(self, other: ProvisionResult) -> None:
        """Take another (partial) result's decisions and launches, in order."""
        self.launched.extend(other.launched)
        self.decisions.extend(other.decisions)

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for d in self.decisions:
            counts[d.action] = counts.get(d.action, 0) + 1
        return {
            "batch_id": self.batch_id,
            "summary": dict(sorted(counts.items())),
            "nodeclaims": [c.to_json() for c in self.launched],
            "decisions": [d.to_json() for d in self.decisions],
            "timings": {k: round(v, 4) for k, v in sorted(self.timings.items())},
            "fleet_requests": self.fleet_requests,
            **({"waiting": dict(sorted(self.waiting.items()))} if self.waiting else {}),
        }
