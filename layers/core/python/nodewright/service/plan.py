"""The planner's tick: voluntary and scheduled disruption decided on the fleet, each started as a workflow.

On each tick (EventBridge Scheduler, every minute by default):
1. Registrations: NodeClaims whose node has joined are marked Registered and lose karpenter.sh/unregistered;
   NodeClaims with no node 15 minutes after creation are terminated and deleted (the provisioner does the
   same on each batch; the planner makes sure it happens when no batch comes).
2. Every method (expiration first; drift, emptiness and consolidation to come) names candidates; `plan()` turns
   them into commands, and each command starts the disruption workflow under its derived execution name, so
   a tick that runs twice starts nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.disruption.fleet import fleet_nodes
from nodewright.disruption.methods import Expiration, Method, plan
from nodewright.model.loader import load_documents
from nodewright.ports import Clock, Cloud, Cluster, Workflows
from nodewright.service import provision as provisioning

DEFAULT_METHODS: tuple[Method, ...] = (Expiration(),)


@dataclass
class TickResult:
    """What a tick did: workflows started (or found started), candidates skipped, registration decisions."""

    started: list[dict[str, Any]] = field(default_factory=list)
    already_running: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "already_running": self.already_running,
            "skipped": self.skipped,
            "registrations": self.registrations,
            "problems": self.problems,
        }


def tick(
    cluster: Cluster, cloud: Cloud, workflows: Workflows, clock: Clock, methods: Sequence[Method] = DEFAULT_METHODS
) -> TickResult:
    """One planner tick; see the module docstring. Invalid NodePools are reported in `problems`, not skipped
    silently; their NodeClaims still expire by what they carry themselves."""
    now = clock.now()
    out = TickResult()
    view = cluster.read_fleet()
    inputs, errors = load_documents([*view.nodepools, *view.nodeclaims, *view.nodes], "cluster")
    out.problems.extend(f"{e.kind}/{e.name}: {e.path}: {e.message}" for e in errors)

    result = provisioning.ProvisionResult("planner")
    registered = provisioning.finish_registrations(inputs.nodeclaims, inputs.nodes, cluster, now, result)
    provisioning.cleanup_unregistered(inputs.nodeclaims, registered, cluster, cloud, now, result)
    out.registrations = [d.to_json() for d in result.decisions]

    pools = {p.name: p for p in inputs.nodepools}
    fleet = fleet_nodes(view.nodeclaims, view.nodes, pools)
    out.problems.extend(f"nodeclaim/{n.nodeclaim}: {p}" for n in fleet for p in n.problems)
    decided = plan(fleet, pools, methods, now)
    out.skipped = dict(decided.skipped)
    for command in decided.commands:
        name = command.execution_name()
        if workflows.start(name, command.to_input()):
            out.started.append({"execution": name, "nodeclaim": command.nodeclaim, "reason": command.reason})
        else:
            out.already_running.append(name)
    return out
