"""The disruption state's catalog and capacity reservations (issue 22 item 8): reserved nodes are priced by their
reservation, a reservation nobody selects any more still prices the nodes running in it, and a NodePool is kept
to its own EC2NodeClass's reservations."""

from __future__ import annotations

import copy

from cluster_builder import Cluster, instance_types

from nodewright.catalog.catalog import CapacityReservation
from nodewright.catalog.labels import CAPACITY_RESERVATION_ID
from nodewright.catalog.pricing import reserved_price
from nodewright.disruption.decision import SINGLE_NODE
from nodewright.disruption.plan import plan
from nodewright.disruption.state import cluster_state
from nodewright.model.requirements import Operator, Requirement

RESERVED_POOL = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "reserved"]}]


def reserved_node(cluster: Cluster, name: str, reservation: str, instance_type: str = "m5.xlarge") -> None:
    cluster.node(name, instance_type, capacity_type="reserved", claim_labels={CAPACITY_RESERVATION_ID: reservation})
    cluster.find("Node", name)["metadata"]["labels"][CAPACITY_RESERVATION_ID] = reservation


def test_a_reserved_node_whose_reservation_is_not_selected_is_priced_and_consolidated() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "100%"}]}, requirements=RESERVED_POOL)
    reserved_node(cluster, "reserved", "cr-gone")
    cluster.pod("web-0", "reserved", cpu="100m")
    cluster.node("roomy", "m5.2xlarge")
    cluster.pod("api-0", "roomy", cpu="6")
    state, errors = cluster_state(copy.deepcopy(cluster.docs), instance_types(("m5",)), cluster.now)
    assert not errors
    member = next(m for m in state.fleet if m.node == "reserved")
    it = state.catalog.get("m5.xlarge")
    assert it is not None
    on_demand = next(o.price for o in it.offerings if o.capacity_type == "on-demand")
    assert state.price(member) == reserved_price(on_demand)
    # Known, never launched into: the offering has no free instance.
    [offering] = [o for o in it.offerings if o.reservation_id]
    assert (offering.reservation_id, offering.available, offering.reservation_capacity) == ("cr-gone", False, 0)
    # Its pod fits on the roomy node: deleted (it was "Instance Type not found" and never consolidated).
    decided = plan(state, {})
    [command] = decided.to_json(state)["commands"]
    assert (command["nodeclaim"], command["method"], command["replacement"]) == ("claim-reserved", SINGLE_NODE, None)


def test_a_reserved_node_is_priced_by_its_own_reservation_and_pools_keep_to_their_class() -> None:
    cluster = Cluster()
    cluster.nodeclass("other")
    reserved_node(cluster, "reserved", "cr-mine")
    selected = {
        "default": [CapacityReservation("cr-mine", "m5.xlarge", "us-east-1a", 2)],
        "other": [CapacityReservation("cr-theirs", "m5.xlarge", "us-east-1a", 5)],
    }
    state, _ = cluster_state(copy.deepcopy(cluster.docs), instance_types(("m5",)), cluster.now, reservations=selected)
    [member] = state.fleet
    assert state.price(member) is not None
    it = state.catalog.get("m5.xlarge")
    assert it is not None
    assert {o.reservation_id: o.reservation_capacity for o in it.offerings if o.reservation_id} == {
        "cr-mine": 2,
        "cr-theirs": 5,
    }
    bounded = state.bounded(state.pools["general"])
    assert bounded.requirements[-1] == Requirement(CAPACITY_RESERVATION_ID, Operator.NOT_IN, ("cr-theirs",))


def test_a_node_is_not_moved_into_a_reservation_only_another_class_selects() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "100%"}]}, requirements=RESERVED_POOL)
    cluster.nodeclass("other")
    cluster.node("node", "m5.xlarge")
    cluster.pod("web-0", "node", cpu="3")
    theirs = {"other": [CapacityReservation("cr-theirs", "m5.xlarge", "us-east-1a", 5)]}
    state, _ = cluster_state(copy.deepcopy(cluster.docs), instance_types(("m5",)), cluster.now, reservations=theirs)
    assert plan(state, {}).to_json(state)["commands"] == []
