"""What the simulation decides: new NodeClaims, placements on existing capacity, and refusals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.model.requirements import Requirement
from nodewright.model.taints import Taint


@dataclass(frozen=True, slots=True)
class LaunchOption:
    """One (instance type, capacity type, zone) the claim may launch as, with its price per hour."""

    instance_type: str
    capacity_type: str
    zone: str
    price: float
    reservation_id: str = ""


@dataclass(frozen=True, slots=True)
class PlannedNodeClaim:
    """A NodeClaim the provisioner should create and launch.

    `instance_types` keeps every compatible type that fits all `pods`, cheapest offering first (as
    Karpenter does, so the fleet request can fall back); `launch_options` are the concrete offerings
    (reserved first, then cheapest), of which the first is the simulation's choice.
    """

    name: str
    nodepool: str
    instance_types: tuple[str, ...]
    capacity_types: tuple[str, ...]
    zones: tuple[str, ...]
    launch_options: tuple[LaunchOption, ...]
    pods: tuple[str, ...]
    requirements: tuple[Requirement, ...]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    requests: Mapping[str, int]
    node_class: str = ""

    @property
    def cheapest(self) -> LaunchOption:
        return self.launch_options[0]


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """A pod the simulation could not place, with the constraint and the NodePool(s) that failed it."""

    pod: str
    reason: str


@dataclass(frozen=True, slots=True)
class Results:
    """The outcome of one `solve()`.

    Invariant: every input pod appears exactly once, in a NodeClaim, under `existing` (a node or an
    in-flight NodeClaim, by name) or in `unschedulable`.
    """

    nodeclaims: tuple[PlannedNodeClaim, ...] = ()
    existing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    unschedulable: tuple[Unschedulable, ...] = ()

    @property
    def cost_per_hour(self) -> float:
        return round(sum(claim.cheapest.price for claim in self.nodeclaims), 6)

    def to_json(self) -> dict[str, Any]:
        """The `nodewright simulate --json` shape (see the README)."""
        return {
            "nodeclaims": [
                {
                    "name": claim.name,
                    "nodepool": claim.nodepool,
                    "instance_types": list(claim.instance_types),
                    "capacity_types": list(claim.capacity_types),
                    "zones": list(claim.zones),
                    "instance_type": claim.cheapest.instance_type,
                    "capacity_type": claim.cheapest.capacity_type,
                    "zone": claim.cheapest.zone,
                    "price_per_hour": claim.cheapest.price,
                    "pods": list(claim.pods),
                }
                for claim in self.nodeclaims
            ],
            "existing": {name: list(pods) for name, pods in sorted(self.existing.items())},
            "unschedulable": [{"pod": u.pod, "reason": u.reason} for u in self.unschedulable],
            "cost_per_hour": self.cost_per_hour,
        }
