"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Context("Reserved Capacity"), ported case
by case: one It and one DescribeTable of two Entries, three tests.

Karpenter's fixtures and nodewright's:

- The suite's catalog (fake.InstanceTypes) is the shipped catalog's m5 family here, the NodePool limited to
  `mostExpensiveInstance` = m5.4xlarge and `leastExpensiveInstance` = m5.large (on-demand and spot offerings in
  us-east-1a..c at their real prices). Karpenter's `mostExpensiveSpotInstance` is m5.4xlarge bought as spot. The
  NodePool allows every capacity type, as Karpenter's test NodePool (no requirements) does.
- A reserved offering (Karpenter: `ReservationCapacity: 10`, priced on-demand / 10^6, id `r-<instance type>`) is a
  `CapacityReservation(id, type, us-east-1a, 10)` that the EC2NodeClass selects: the planner resolves the class's
  capacityReservationSelectorTerms and hands them to `cluster_state(reservations=...)`, which adds them to the
  planner's catalog as the provisioner's `Catalog.with_reservations` does (priced on-demand / 10^7). The reserved
  node of the BeforeEach is labelled with its reservation id, as Karpenter's.
- `ExpectSingletonReconciled(disruptionController)` + `queue.GetCommands()` is one `plan()` of the planner's tick;
  `ExpectMakeNewNodeClaimsReady` / cascade deletion are the workflow's, so the assertions are on the decision: one
  command, for the candidate, replacing it by one NodeClaim whose launch options are the expected instance type as
  `reserved` in the reservation's zone. Each type has exactly one reservation here, so a reserved option of that
  type is that reservation (Karpenter asserts the reservation-id label of the new node).
- The ReservedCapacity feature gate has no counterpart: nodewright always uses the reservations an EC2NodeClass
  selects. SpotToSpotConsolidation is on, as in the suite's BeforeEach.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from cluster_builder import Cluster, instance_types

from nodewright.catalog.catalog import CapacityReservation
from nodewright.catalog.labels import CAPACITY_RESERVATION_ID
from nodewright.catalog.types import ON_DEMAND, RESERVED, SPOT
from nodewright.disruption.commands import Replacement
from nodewright.disruption.decision import SINGLE_NODE
from nodewright.disruption.plan import Plan, plan
from nodewright.disruption.state import ClusterState, DisruptionSettings, cluster_state

FILE = "pkg/controllers/disruption/consolidation_test.go"
MOST, LEAST = "m5.4xlarge", "m5.large"
ZONE = "us-east-1a"
R_MOST, R_LEAST = f"r-{MOST}", f"r-{LEAST}"
ALL = {"budgets": [{"nodes": "100%"}], "consolidationPolicy": "WhenEmptyOrUnderutilized"}
SELECT = [{"tags": {"karpenter.sh/discovery": "demo"}}]


def reserved_cluster() -> Cluster:
    """The Context's NodePool (every capacity type, the two types) and an EC2NodeClass that selects reservations."""
    cluster = Cluster()
    cluster.nodeclass(capacityReservationSelectorTerms=SELECT)
    cluster.pool(
        disruption=ALL,
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [SPOT, ON_DEMAND, RESERVED]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [MOST, LEAST]},
        ],
    )
    return cluster


def state_of(cluster: Cluster, reservations: Sequence[CapacityReservation]) -> ClusterState:
    """The planner's snapshot: the class's reservations resolved into its catalog."""
    found, errors = cluster_state(
        copy.deepcopy(cluster.docs),
        instance_types(("m5",)),
        cluster.now,
        settings=DisruptionSettings(spot_to_spot=True),
        reservations={"default": list(reservations)},
    )
    assert not errors, errors
    return found


def replaced_by(decided: Plan, state: ClusterState, nodeclaim: str) -> Replacement:
    """The one command's replacement, after checking it is a single-node consolidation of `nodeclaim` whose every
    launch option is strictly cheaper than the candidate."""
    [command] = decided.to_json(state)["commands"]
    assert (command["nodeclaim"], command["method"], command["reason"]) == (nodeclaim, SINGLE_NODE, "Underutilized")
    assert command["pods"] == ["web/web-0"]
    [decision] = decided.decisions
    replacement = decision.replacement
    assert replacement is not None and replacement.options
    assert all(o.price < decision.price for o in replacement.options)
    return replacement


def test_can_consolidate_from_one_reserved_offering_to_another() -> None:
    """consolidation_test.go Context("Reserved Capacity"): It("can consolidate from one reserved offering to
    another")."""
    cluster = reserved_cluster()
    cluster.node("reserved", MOST, ZONE, RESERVED, claim_labels={CAPACITY_RESERVATION_ID: R_MOST})
    cluster.find("Node", "reserved")["metadata"]["labels"][CAPACITY_RESERVATION_ID] = R_MOST
    cluster.pod("web-0", "reserved", cpu="100m", memory="128Mi")
    state = state_of(
        cluster, [CapacityReservation(R_MOST, MOST, ZONE, 10), CapacityReservation(R_LEAST, LEAST, ZONE, 10)]
    )
    # The reserved node is priced by its reservation (it was "Instance Type not found" without the reservations).
    [member] = state.fleet
    assert state.price(member) is not None and 0 < (state.price(member) or 0) < 1e-6
    replacement = replaced_by(plan(state, {}), state, "claim-reserved")
    # Only the other reservation is cheaper than a reserved m5.4xlarge: the replacement can launch nothing else.
    assert {(o.instance_type, o.capacity_type, o.zone) for o in replacement.options} == {(LEAST, RESERVED, ZONE)}


def can_consolidate_into_reserved_capacity_for_the_same_instance_pool(initial_capacity_type: str) -> None:
    """The DescribeTable's body: an on-demand (or spot) m5.4xlarge is replaced by the same type from the
    reservation its EC2NodeClass selects (10 free instances)."""
    cluster = reserved_cluster()
    cluster.node("node", MOST, ZONE, initial_capacity_type)
    cluster.pod("web-0", "node", cpu="100m", memory="128Mi")
    state = state_of(cluster, [CapacityReservation(R_MOST, MOST, ZONE, 10)])
    replacement = replaced_by(plan(state, {}), state, "claim-node")
    # Karpenter's scheduler narrows a NodeClaim that takes a reservation to `reserved`: the replacement launches
    # into the reservation or not at all.
    assert {(o.instance_type, o.capacity_type, o.zone) for o in replacement.options} == {(MOST, RESERVED, ZONE)}


def test_can_consolidate_into_reserved_capacity_for_the_same_instance_pool_from_on_demand() -> None:
    """consolidation_test.go Context("Reserved Capacity"): DescribeTable("can consolidate into reserved capacity
    for the same instance pool"), Entry("from on-demand")."""
    can_consolidate_into_reserved_capacity_for_the_same_instance_pool(ON_DEMAND)


def test_can_consolidate_into_reserved_capacity_for_the_same_instance_pool_from_spot() -> None:
    """consolidation_test.go Context("Reserved Capacity"): DescribeTable("can consolidate into reserved capacity
    for the same instance pool"), Entry("from spot")."""
    can_consolidate_into_reserved_capacity_for_the_same_instance_pool(SPOT)
