"""Karpenter v1.14.1 pkg/controllers/provisioning/scheduling/suite_test.go, Describe("Reserved Instance Types"),
ported case by case.

The Describe's catalog: large-instance-type (6 vCPU, 6 GiB), medium-instance-type (3 vCPU, 3 GiB) and
small-instance-type (2 vCPU, 2 GiB), with the fake provider's spot and on-demand offerings; medium and small each
get a reserved offering in test-zone-1 with one free instance, reservation ids r-medium-instance-type and
r-small-instance-type, priced by size far below the rest. Here (see sched_fake): large is c5.2xlarge (8 vCPU, holds
three pods of 1800m), medium t3.medium (2 vCPU: one pod of 1800m, not two, as the fake's 3 vCPU) and small
t3.small, in us-east-1a..c. The reserved offerings are `Catalog.with_reservations([CapacityReservation(id, type,
us-east-1a, free instances)])`: nodewright's model of an On-Demand Capacity Reservation, priced on-demand / 10^7
as Karpenter prices them, so also ordered by size.

Karpenter's fake CloudProvider.Create launches a NodeClaim into the cheapest compatible reserved offering and takes
one instance from it (the offering becomes unavailable at zero); `ReservedCluster` does the same between rounds:
the claim launches as its first launch option, and the reservation it names has one free instance less in the
next round's catalog (as EC2's available count would). Karpenter's `InstanceTypesForNodePool` (a NodePool that sees
a reservation the others do not) is a NodePool requirement `karpenter.k8s.aws/capacity-reservation-id NotIn`
the reservations it does not see: nodewright offers the reservations of every EC2NodeClass to every NodePool.

One deliberate difference runs through the Describe. Karpenter does not know at scheduling time which instance
type the launch will pick, so a NodeClaim reserves every compatible reservation with room (pessimistically), and
a pod that would need one of those is deferred to the next simulation (ReservedOfferingError: no fallback to
spot or on-demand, to a lower-weight NodePool, or to relaxed preferences). nodewright decides each NodeClaim's
launch option in the plan: each takes one reservation (its first reserved option with an instance left), the
plan never puts more NodeClaims on a reservation than it has free instances, across NodePools
(`scheduling.reservations`), and the pods whose reservations are taken go to spot or on-demand in the same round.
So where Karpenter binds one pod per round, these tests find, in the first round, the nodes Karpenter has after
its last: the same reservations used the same number of times, the same pods on non-reserved capacity in the same
NodePools. Pods that may only use reserved capacity still wait for the next round, as Karpenter's do.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from builders import affinity_term, pod, pool, preferred, req
from sched_fake import ZONE_1, Cluster, real

from nodewright.catalog.catalog import CapacityReservation, Catalog
from nodewright.catalog.labels import CAPACITY_RESERVATION_ID, CAPACITY_TYPE, INSTANCE_TYPE, ZONE
from nodewright.catalog.types import ON_DEMAND, RESERVED, SPOT, InstanceType
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import HOSTNAME_LABEL, NodeSelectorTerm, Pod
from nodewright.model.requirements import Requirement
from nodewright.scheduling.results import LaunchOption, PlannedNodeClaim, Results

FILE = "pkg/controllers/provisioning/scheduling/suite_test.go"
LARGE, MEDIUM, SMALL = "c5.2xlarge", "t3.medium", "t3.small"
R_SMALL, R_MEDIUM = "r-small-instance-type", "r-medium-instance-type"
NODEPOOL = "karpenter.sh/nodepool"


def reservations(**extra: int) -> list[CapacityReservation]:
    """The BeforeEach's reservations (one free instance each in test-zone-1), plus `extra` on small (id: count)."""
    out = [CapacityReservation(R_MEDIUM, MEDIUM, ZONE_1, 1), CapacityReservation(R_SMALL, SMALL, ZONE_1, 1)]
    out += [CapacityReservation(rid, SMALL, ZONE_1, count) for rid, count in extra.items()]
    return out


class ReservedCluster(Cluster):
    """`Cluster` whose launches take an instance from the reservation they launch into (fake CloudProvider.Create),
    and whose nodes carry the reservation-id label of the offering they launched as."""

    def __init__(self, pools: Sequence[NodePool], held: Sequence[CapacityReservation]) -> None:
        self.base = [real(LARGE), real(MEDIUM), real(SMALL)]
        self.held = list(held)
        super().__init__(pools, self._catalog())
        self.launched: dict[str, LaunchOption] = {}

    def _catalog(self) -> list[InstanceType]:
        return list(Catalog(self.base).with_reservations(self.held).instance_types)

    def _launch(self, planned: PlannedNodeClaim, pods: tuple[Pod, ...]) -> NodeClaim:
        claim = super()._launch(planned, pods)
        option = planned.cheapest
        self.launched[claim.name] = option
        if option.capacity_type == RESERVED:
            self.held = [
                dataclasses.replace(r, available_count=r.available_count - 1) if r.id == option.reservation_id else r
                for r in self.held
            ]
            self.types = self._catalog()
        return claim

    def node_labels(self, p: Pod) -> dict[str, str]:
        """ExpectScheduled: the labels of the pod's node, the reservation id included when it launched reserved."""
        node = self.node_of(p)
        assert node is not None, f"{p.key} was not scheduled"
        option = self.launched[node.nodeclaim_name]
        labels = dict(node.labels)
        if option.reservation_id:
            labels[CAPACITY_RESERVATION_ID] = option.reservation_id
        return labels


def suite_pool(name: str = "default", *requirements: Requirement, weight: int = 0) -> NodePool:
    """The suite's NodePool: every capacity type (the ReservedCapacity feature gate is on)."""
    return pool(name, req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND, RESERVED), *requirements, weight=weight)


def sees_not(*reservation_ids: str) -> Requirement:
    """A NodePool that does not see these reservations (Karpenter's InstanceTypesForNodePool)."""
    return req(CAPACITY_RESERVATION_ID, "NotIn", *reservation_ids)


def apart(count: int, *requirements: Sequence[Requirement], **kwargs: object) -> list[Pod]:
    """Pods labeled app=test with required hostname anti-affinity to each other; pod i requires
    `requirements[i]` (or `requirements[0]` for all when one is given)."""
    out = []
    for i in range(count):
        terms = requirements[i] if len(requirements) > 1 else requirements[0]
        out.append(
            pod(
                f"p{i}",
                "10m",
                "16Mi",
                labels={"app": "test"},
                pod_anti_affinity=(affinity_term(HOSTNAME_LABEL, app="test"),),
                required_node_terms=(NodeSelectorTerm(tuple(terms)),),
                **kwargs,  # type: ignore[arg-type]
            )
        )
    return out


def reserved_use(cluster: ReservedCluster, pods: Sequence[Pod]) -> Counter[str]:
    """Per reservation id ("" for spot or on-demand), how many of the pods' nodes launched into it."""
    return Counter(cluster.node_labels(p).get(CAPACITY_RESERVATION_ID, "") for p in pods)


def all_placed(results: Results) -> None:
    assert not results.unschedulable, results.unschedulable


def test_shouldnt_fallback_to_on_demand_or_spot_when_compatible_reserved_offerings_are_available() -> None:
    """It("shouldn't fallback to on-demand or spot when compatible reserved offerings are available").

    Three pods of 1800m: each fits small or medium alone, two fit neither, three fit large. Karpenter binds one
    pod a round: small reserved, then medium reserved (small's reservation is spent), then small on spot or
    on-demand; never the large type, which would leave the reservations for spot or on-demand. nodewright plans
    the same three nodes in the first round: one NodeClaim per reservation, the third off reservations."""
    cluster = ReservedCluster([suite_pool()], reservations())
    pending = [pod(f"p{i}", "1800m", "16Mi") for i in range(3)]
    all_placed(cluster.provision(*pending))
    nodes = sorted(
        (labels.get(CAPACITY_RESERVATION_ID, ""), labels[CAPACITY_TYPE], labels[INSTANCE_TYPE])
        for labels in map(cluster.node_labels, pending)
    )
    assert nodes[1:] == [(R_MEDIUM, RESERVED, MEDIUM), (R_SMALL, RESERVED, SMALL)]
    assert nodes[0][0] == "" and nodes[0][1] != RESERVED and nodes[0][2] == SMALL
    assert len(cluster.nodes) == 3


def test_should_correctly_track_reservations_shared_across_nodepools() -> None:
    """It("should correctly track reservations shared across nodepools").

    Two NodePools see the same small reservation (one free instance); one pod must go to each, on small.
    Karpenter launches one reserved node and, a round later, the other pod on spot or on-demand. Here both in
    one round: the reservation's single instance goes to one NodePool's claim only."""
    cluster = ReservedCluster([suite_pool("np-1"), suite_pool("np-2")], reservations())
    pending = apart(
        2,
        [req(INSTANCE_TYPE, "In", SMALL), req(NODEPOOL, "In", "np-1")],
        [req(INSTANCE_TYPE, "In", SMALL), req(NODEPOOL, "In", "np-2")],
    )
    all_placed(cluster.provision(*pending))
    assert reserved_use(cluster, pending) == Counter({R_SMALL: 1, "": 1})
    for p in pending:
        labels = cluster.node_labels(p)
        assert labels[INSTANCE_TYPE] == SMALL
        assert (labels[CAPACITY_TYPE] == RESERVED) == (CAPACITY_RESERVATION_ID in labels)


def test_should_correctly_track_reservations_for_multiple_nodepools_with_distinct_reservations() -> None:
    """It("should correctly track reservations for multiple nodepools with distinct reservations for the same
    instance pool").

    np-2's small type has its own reservation r-distinct (np-1 sees r-small-instance-type only, np-2 r-distinct
    only); one pod must go to each NodePool, on small. Both launch reserved in the first round, into distinct
    reservations (Karpenter's result too)."""
    pools = [suite_pool("np-1", sees_not("r-distinct")), suite_pool("np-2", sees_not(R_SMALL))]
    cluster = ReservedCluster(pools, reservations(**{"r-distinct": 1}))
    pending = apart(
        2,
        [req(INSTANCE_TYPE, "In", SMALL), req(NODEPOOL, "In", "np-1")],
        [req(INSTANCE_TYPE, "In", SMALL), req(NODEPOOL, "In", "np-2")],
    )
    all_placed(cluster.provision(*pending))
    for p in pending:
        labels = cluster.node_labels(p)
        assert labels[CAPACITY_TYPE] == RESERVED and labels[INSTANCE_TYPE] == SMALL
    assert reserved_use(cluster, pending) == Counter({R_SMALL: 1, "r-distinct": 1})


def test_should_correctly_track_multiple_reservations_for_the_same_instance_pool() -> None:
    """It("should correctly track multiple reservations for the same instance pool").

    Small has a second reservation with two free instances; four pods must each have a small node. Karpenter
    binds two, then one (reserved), then the last on spot or on-demand: three reserved nodes, one not. Here the
    same four nodes in one round: r-small-instance-type once, the second reservation twice, one off reservations."""
    second = f"{R_SMALL}-2"
    cluster = ReservedCluster([suite_pool()], reservations(**{second: 2}))
    pending = apart(4, [req(INSTANCE_TYPE, "In", SMALL)])
    all_placed(cluster.provision(*pending))
    assert reserved_use(cluster, pending) == Counter({R_SMALL: 1, second: 2, "": 1})
    for p in pending:
        labels = cluster.node_labels(p)
        assert labels[INSTANCE_TYPE] == SMALL
        assert (labels[CAPACITY_TYPE] == RESERVED) == (CAPACITY_RESERVATION_ID in labels)


def test_shouldnt_fallback_to_a_lower_weight_nodepool_if_a_reserved_offering_is_available() -> None:
    """It("shouldn't fallback to a lower weight NodePool if a reserved offering is available").

    np-primary (weight 100) sees r-small-instance-type, np-fallback (weight 50) only its own r-fallback; two pods
    must each have a small node. Karpenter launches one reserved node in np-primary, defers the other pod rather
    than use np-fallback's reservation, and next round puts it in np-primary on spot or on-demand. Here both in
    np-primary in one round, one reserved and one not: np-fallback and its reservation stay unused."""
    primary = suite_pool("np-primary", sees_not("r-fallback"), weight=100)
    fallback = suite_pool("np-fallback", sees_not(R_SMALL), weight=50)
    cluster = ReservedCluster([primary, fallback], reservations(**{"r-fallback": 1}))
    pending = apart(2, [req(INSTANCE_TYPE, "In", SMALL)])
    all_placed(cluster.provision(*pending))
    assert reserved_use(cluster, pending) == Counter({R_SMALL: 1, "": 1})
    for p in pending:
        labels = cluster.node_labels(p)
        assert labels[INSTANCE_TYPE] == SMALL and labels[NODEPOOL] == "np-primary"
        assert (labels[CAPACITY_TYPE] == RESERVED) == (CAPACITY_RESERVATION_ID in labels)


def test_shouldnt_relax_preferences_when_a_pod_fails_to_schedule_due_to_a_reserved_offering_error() -> None:
    """It("shouldn't relax preferences when a pod fails to schedule due to a reserved offering error").

    Two pods prefer np-1 (which sees r-small-instance-type) and may use np-2 (which sees r-distinct); each needs
    a small node. Karpenter launches one reserved node in np-1, defers the other pod without relaxing its
    preference (which would have put it on np-2's reservation), and next round puts it in np-1 on spot or
    on-demand. Here both in np-1 in one round, one reserved and one not; r-distinct stays unused."""
    pools = [suite_pool("np-1", sees_not("r-distinct")), suite_pool("np-2", sees_not(R_SMALL))]
    cluster = ReservedCluster(pools, reservations(**{"r-distinct": 1}))
    pending = apart(
        2, [req(INSTANCE_TYPE, "In", SMALL)], preferred_node_terms=(preferred(1, req(NODEPOOL, "In", "np-1")),)
    )
    all_placed(cluster.provision(*pending))
    assert reserved_use(cluster, pending) == Counter({R_SMALL: 1, "": 1})
    for p in pending:
        labels = cluster.node_labels(p)
        assert labels[INSTANCE_TYPE] == SMALL and labels[NODEPOOL] == "np-1"
        assert (labels[CAPACITY_TYPE] == RESERVED) == (CAPACITY_RESERVATION_ID in labels)


def test_should_handle_multiple_pods_on_reserved_nodes() -> None:
    """It("should handle multiple pods on reserved nodes").

    Two pods (no requests in Karpenter: 10m and 16Mi here) require small, np-1, reserved capacity and
    test-zone-1, with required zonal pod affinity to each other. Both go to one node, launched into
    r-small-instance-type (Karpenter's result too)."""
    cluster = ReservedCluster([suite_pool("np-1")], reservations())
    terms = [
        req(INSTANCE_TYPE, "In", SMALL),
        req(NODEPOOL, "In", "np-1"),
        req(CAPACITY_TYPE, "In", RESERVED),
        req(ZONE, "In", ZONE_1),
    ]
    pending = [
        pod(
            f"p{i}",
            "10m",
            "16Mi",
            labels={"app": "test"},
            pod_affinity=(affinity_term(ZONE, app="test"),),
            required_node_terms=(NodeSelectorTerm(tuple(terms)),),
        )
        for i in range(2)
    ]
    all_placed(cluster.provision(*pending))
    names = {cluster.where(p) for p in pending}
    assert len(names) == 1 and len(cluster.nodes) == 1
    labels = cluster.node_labels(pending[0])
    assert labels[CAPACITY_RESERVATION_ID] == R_SMALL
    assert labels[CAPACITY_TYPE] == RESERVED and labels[INSTANCE_TYPE] == SMALL
