"""IdentifyCandidate's validation decides on the snapshot the planner's tick decided on: with the EC2NodeClasses'
capacity reservations (issue 22 round 2). Without them a consolidation into a free reservation was always
Invalidated (the reserved offering it decided is not in the validation's catalog)."""

from __future__ import annotations

from test_planner_reservations import ReservingCloud, running_on_demand
from test_termination_service import CATALOG

from nodewright.adapters.memory import InMemoryWorkflows
from nodewright.catalog.catalog import CapacityReservation
from nodewright.service import workflow
from nodewright.service.plan import PlannerPorts, tick
from nodewright.service.workflow import Ports


def test_a_consolidation_into_a_free_reservation_still_holds_at_validation() -> None:
    cluster, cloud, state, clock, instance_type, zone = running_on_demand()
    assert isinstance(cloud, ReservingCloud)
    cloud.reservations = [CapacityReservation("cr-1", instance_type, zone, 1)]
    workflows = InMemoryWorkflows()
    for _ in range(3):  # registers and initializes the node, marks it Consolidatable, decides
        clock.t += 600
        tick(PlannerPorts(cluster, cloud, workflows, clock, state, CATALOG))
    [(execution, document)] = workflows.started.items()
    assert document["reason"] == "Underutilized" and document["validate"]
    clock.t += 15  # the state machine's ValidationDelay
    found = workflow.identify_candidate(dict(document), execution, Ports(cluster, cloud, state, clock, CATALOG))
    assert found["outcome"] == "proceed", found
