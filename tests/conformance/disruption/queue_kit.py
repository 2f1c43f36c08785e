"""The disruption workflow's steps (service/workflow.py) driven in memory, for the port of Karpenter's orchestration
queue: a built cluster served by `InMemoryCluster`, `FakeCloud` launching what the provisioner asks, a fixed clock,
and the builder's catalog. As tests/unit/disruption/test_workflow_commands.py does; the Step Functions state
machine's order is the test's: IdentifyCandidate, LaunchReplacement, WaitForReplacement (check_replacement, again
until ready), CordonAndDrain / WaitForDrain (drain, until done), TerminateInstance; on DisruptionFailed, Rollback.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SERVICE = Path(__file__).resolve().parents[2] / "unit" / "service"
if str(_SERVICE) not in sys.path:
    sys.path.insert(0, str(_SERVICE))

from cluster_builder import T0, Cluster, instance_types  # noqa: E402
from service_fakes import FakeCloud, FixedClock, node_for  # noqa: E402

from nodewright.adapters.memory import InMemoryCluster, InMemoryState  # noqa: E402
from nodewright.catalog.types import InstanceType  # noqa: E402
from nodewright.disruption.commands import DisruptionCommand  # noqa: E402
from nodewright.disruption.plan import plan  # noqa: E402
from nodewright.ports import Instance  # noqa: E402
from nodewright.service import workflow  # noqa: E402
from nodewright.service.workflow import Ports  # noqa: E402

DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}


class BuilderCatalog:
    def instance_types(self) -> tuple[InstanceType, ...]:
        return instance_types()


@dataclass
class World:
    built: Cluster
    cluster: InMemoryCluster
    cloud: FakeCloud
    clock: FixedClock
    ports: Ports

    def drift(self, *names: str) -> list[DisruptionCommand]:
        """The planner's drift commands for nodes `names` (drifted by their AMI), in the order it decides them."""
        commands = plan(self.built.state(), {f"claim-{n}": "AMIDrift" for n in names}).commands(T0)
        assert sorted(c.node for c in commands) == sorted(names), commands
        return commands

    def step(self, name: str, state: dict[str, Any], execution: str) -> dict[str, Any]:
        return workflow.STEPS[name](state, execution, self.ports)

    def start(self, command: DisruptionCommand, execution: str) -> dict[str, Any]:
        """IdentifyCandidate and LaunchReplacement: the execution's state afterwards."""
        state = command.to_input()
        state["identify"] = self.step("identify", state, execution)
        assert state["identify"]["outcome"] == "proceed", state["identify"]
        state["replacement"] = self.step("launch_replacement", state, execution)
        return state

    def ready(self, claim: str, node: str) -> None:
        """The replacement NodeClaim `claim` registers as Node `node`, Ready (initialized)."""
        record = self.cluster.nodeclaim(claim)
        assert record is not None
        instance = record["status"]["providerID"].rsplit("/", 1)[-1]
        doc = node_for(self.cloud.instances[instance], node)
        doc["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        self.cluster.put(doc)

    def finish(self, state: dict[str, Any], execution: str) -> None:
        """CordonAndDrain until the node is drained, then TerminateInstance."""
        for _ in range(5):
            state["drain"] = self.step("drain", state, execution)
            if state["drain"]["done"]:
                break
        assert state["drain"]["done"], state["drain"]
        self.step("terminate", state, execution)

    def taints(self, node: str) -> list[dict[str, Any]]:
        return list(self.cluster.objects[("Node", "", node)]["spec"].get("taints") or [])

    def events(self, subject: str) -> list[str]:
        return [e.reason for e in self.cluster.events if e.pod == subject]

    def nodeclaims(self) -> list[str]:
        return sorted(name for kind, _, name in self.cluster.objects if kind == "NodeClaim")


def world(nodes: dict[str, tuple[str, list[str]]], requirements: list[dict[str, Any]] | None = None) -> World:
    """A NodePool (`requirements` for its template, budget 100 %) and `nodes`: name -> (instance type, the CPU
    request of each of its pods)."""
    built = Cluster()
    spec: dict[str, Any] = {"requirements": requirements} if requirements else {}
    built.pool(disruption={"budgets": [{"nodes": "100%"}]}, **spec)
    for name, (instance_type, pods) in nodes.items():
        built.node(name, instance_type)
        for i, cpu in enumerate(pods):
            built.pod(f"{name}-web-{i}", name, cpu=cpu, memory="1Gi")
    clock = FixedClock(T0)
    cluster = InMemoryCluster(built.docs, clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    for name, (instance_type, _) in nodes.items():
        cloud.instances[f"i-{name}"] = Instance(f"i-{name}", instance_type, "us-east-1a", "running", "on-demand")
    return World(built, cluster, cloud, clock, Ports(cluster, cloud, InMemoryState(), clock, BuilderCatalog()))
