"""A CapacityBuffer through the services: the planner's tick writes its status and asks the provisioner for the
room it lacks; the provisioner launches a NodeClaim naming the buffer's virtual pods; the next ticks count that
claim, then its node, as the buffer's room, and ask for nothing more."""

from __future__ import annotations

import json
from typing import Any

from service_fakes import FakeCloud, FixedClock, node_for, nodeclass, nodepool
from test_termination_service import CATALOG

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.service.batch import parse_batch
from nodewright.service.plan import PlannerPorts, TickResult, tick
from nodewright.service.provision import PODS_ANNOTATION, provision

TEMPLATE = {
    "apiVersion": "v1",
    "kind": "PodTemplate",
    "metadata": {"name": "burst", "namespace": "web", "generation": 3},
    "template": {
        "metadata": {"labels": {"app": "burst"}},
        "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "1"}}}]},
    },
}
BUFFER = {
    "apiVersion": "autoscaling.x-k8s.io/v1beta1",
    "kind": "CapacityBuffer",
    "metadata": {"name": "burst", "namespace": "web", "uid": "uid-burst", "generation": 1},
    "spec": {"podTemplateRef": {"name": "burst"}, "replicas": 2},
}
WANTED = ["web/capacity-buffer-burst-1", "web/capacity-buffer-burst-2"]


class World:
    def __init__(self) -> None:
        self.clock = FixedClock()
        self.cluster = InMemoryCluster([nodepool(), nodeclass(), TEMPLATE, BUFFER], clock=self.clock.now)
        self.cloud, self.state = FakeCloud(cluster_log=self.cluster.log), InMemoryState()
        self.requests: list[dict[str, Any]] = []

    def tick(self) -> TickResult:
        ports = PlannerPorts(
            self.cluster,
            self.cloud,
            InMemoryWorkflows(),
            self.clock,
            self.state,
            CATALOG,
            request_capacity=lambda payload: self.requests.append(json.loads(json.dumps(payload))),
            cluster_name="demo",
        )
        return tick(ports)

    def status(self) -> dict[str, Any]:
        return self.cluster.objects[("CapacityBuffer", "web", "burst")].get("status") or {}

    def conditions(self) -> dict[str, tuple[str, str]]:
        return {c["type"]: (c["status"], c["reason"]) for c in self.status().get("conditions", [])}


def test_a_short_buffer_gets_a_nodeclaim_and_then_holds_its_room() -> None:
    world = World()
    first = world.tick()
    assert world.status()["replicas"] == 2 and world.status()["podTemplateRef"] == {"name": "burst"}
    assert world.status()["podTemplateGeneration"] == 3
    assert world.conditions() == {
        "ReadyForProvisioning": ("True", "Resolved"),
        "Provisioning": ("False", "RequiresNewCapacity"),
    }
    assert first.buffers["requested"] == {"web/burst": 2}
    [request] = world.requests
    assert request["buffers"] == [{"namespace": "web", "name": "burst", "pods": WANTED}]

    result = provision(parse_batch(request), world.cluster, world.cloud, world.state, world.clock, CATALOG)
    [launched] = result.launched
    claim = world.cluster.objects[("NodeClaim", "", launched.name)]
    assert sorted(json.loads(claim["metadata"]["annotations"][PODS_ANNOTATION])) == WANTED
    # No event is recorded on a pod that does not exist.
    assert not any("capacity-buffer" in e.pod for e in world.cluster.events)

    world.tick()  # the claim in flight holds the buffer's pods: nothing more is asked for
    assert len(world.requests) == 1

    world.cluster.put(node_for(world.cloud.instances[launched.instance_id], "buffer-node"))
    world.tick()  # registers the node
    world.tick()
    assert len(world.requests) == 1
    assert world.conditions()["Provisioning"] == ("True", "FitsExistingCapacity")


def test_a_buffer_whose_template_is_missing_is_not_ready_and_asks_for_nothing() -> None:
    world = World()
    del world.cluster.objects[("PodTemplate", "web", "burst")]
    result = world.tick()
    assert world.conditions() == {
        "ReadyForProvisioning": ("False", "PodTemplateNotFound"),
        "Provisioning": ("False", "NotReadyForProvisioning"),
    }
    assert world.requests == [] and "replicas" not in world.status()
    assert any("capacitybuffer" in p.lower() or "CapacityBuffer" in p for p in result.problems)


def test_status_is_written_only_when_it_changes() -> None:
    world = World()
    assert world.tick().buffers["status_written"] == 1
    assert world.tick().buffers["status_written"] == 0


def test_the_provisioner_skips_pods_no_longer_in_the_buffer() -> None:
    world = World()
    world.tick()
    [request] = world.requests
    world.cluster.objects[("CapacityBuffer", "web", "burst")]["spec"]["replicas"] = 1
    result = provision(parse_batch(request), world.cluster, world.cloud, world.state, world.clock, CATALOG)
    [launched] = result.launched
    assert launched.pods == ("web/capacity-buffer-burst-1",) or list(launched.pods) == ["web/capacity-buffer-burst-1"]
    assert ("skipped", "pod/web/capacity-buffer-burst-2") in {(d.action, d.subject) for d in result.decisions}
