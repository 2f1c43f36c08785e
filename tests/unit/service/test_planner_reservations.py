"""The planner's catalog has the capacity reservations the EC2NodeClasses select (issue 22 item 8), as the
provisioner's has: an on-demand node is moved into a free reservation of its type, and a reserved node is priced
(it was "Instance Type not found" and never consolidated)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from service_fakes import FakeCloud, FixedClock, node_for, nodeclass, nodepool, pod
from test_provision_service import batch_of
from test_termination_service import CATALOG, NODE

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.catalog.catalog import CapacityReservation
from nodewright.launch.template import ResolvedNodeClass
from nodewright.model.loader import load_documents
from nodewright.service.plan import PlannerPorts, TickResult, node_class_bounds, tick
from nodewright.service.provision import provision

CAPACITY_TYPES = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "reserved"]}


@dataclass
class ReservingCloud(FakeCloud):
    """A cloud whose EC2NodeClasses with capacityReservationSelectorTerms select `reservations`."""

    reservations: list[CapacityReservation] = field(default_factory=list)

    def capacity_reservations(self, resolved: ResolvedNodeClass) -> Sequence[CapacityReservation]:
        return list(self.reservations)


def running_on_demand() -> tuple[InMemoryCluster, ReservingCloud, InMemoryState, FixedClock, str, str]:
    """An on-demand node launched (before any reservation existed) for one pod, registered, the pod on it."""
    clock = FixedClock()
    selecting = nodeclass()
    selecting["spec"]["capacityReservationSelectorTerms"] = [{"tags": {"team": "web"}}]
    pool = nodepool(requirements=[CAPACITY_TYPES], taints=[])
    pool["spec"]["disruption"] = {"consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}
    cluster = InMemoryCluster([pool, selecting, pod("web-0")], clock=clock.now)
    cloud, state = ReservingCloud(cluster_log=cluster.log), InMemoryState()
    [launched] = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG).launched
    assert launched.capacity_type == "on-demand"
    cluster.put(node_for(cloud.instances[launched.instance_id], NODE))
    node = cluster.objects[("Node", "", NODE)]
    node["metadata"]["labels"].update(
        {"karpenter.sh/capacity-type": "on-demand", "topology.kubernetes.io/zone": launched.zone}
    )
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    cluster.objects[("Pod", "web", "web-0")]["spec"]["nodeName"] = NODE
    return cluster, cloud, state, clock, launched.instance_type, launched.zone


def ticks(cluster: InMemoryCluster, cloud: ReservingCloud, state: InMemoryState, clock: FixedClock) -> TickResult:
    result = None
    for _ in range(3):  # registers and initializes the node, marks it Consolidatable, decides
        clock.t += 600
        result = tick(PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, state, CATALOG))
    assert result is not None
    return result


def test_an_on_demand_node_moves_into_a_free_reservation_its_class_selects() -> None:
    cluster, cloud, state, clock, instance_type, zone = running_on_demand()
    assert ticks(cluster, cloud, state, clock).started == []  # no reservation: nothing cheaper
    cloud.reservations = [CapacityReservation("cr-1", instance_type, zone, 1)]
    result = ticks(cluster, cloud, state, clock)
    [started] = result.started
    assert started["reason"] == "Underutilized"
    [decision] = result.decisions["commands"]
    replacement = decision["replacement"]
    assert replacement["instance_types"][0] == instance_type and "reserved" in replacement["capacity_types"]
    assert replacement["price_per_hour"] < 1e-6 < decision["savings_per_hour"], decision


def test_node_class_bounds_give_a_validation_snapshot_the_ticks_zones_and_reservations() -> None:
    selecting = nodeclass()
    selecting["spec"]["capacityReservationSelectorTerms"] = [{"tags": {"team": "web"}}]
    inputs, errors = load_documents([selecting, nodeclass("plain")], "test")
    assert not errors
    found = [CapacityReservation("cr-1", "m5.large", "us-east-1a", 1)]
    zones, reservations = node_class_bounds(ReservingCloud(reservations=found), inputs.nodeclasses)
    assert set(zones) == {"default", "plain"} and zones["default"]
    assert reservations == {"default": found}
