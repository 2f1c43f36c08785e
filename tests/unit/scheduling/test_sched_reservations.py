"""Capacity reservations in one plan: no more NodeClaims launch into a reservation than it has free instances,
whichever NodePools they come from (`scheduling.reservations`)."""

from __future__ import annotations

import dataclasses

from builders import itype, pod, pods, pool, req, run, selector, unschedulable

from nodewright.catalog.catalog import CapacityReservation, Catalog
from nodewright.catalog.labels import CAPACITY_TYPE
from nodewright.catalog.types import RESERVED, InstanceType, Offering
from nodewright.model.objects import HOSTNAME_LABEL, Pod, PodAffinityTerm
from nodewright.scheduling.reservations import ReservationLedger
from nodewright.scheduling.results import LaunchOption, Results

ZONE = "us-east-1a"


def catalog(*reservations: CapacityReservation) -> list[InstanceType]:
    """Two 2-vCPU types (one pod of 1500m each) and a 8-vCPU one, with the given reservations."""
    types = [itype("m5.large", 2, 8, 0.096), itype("c5.large", 2, 4, 0.085), itype("c5.2xlarge", 8, 16, 0.34)]
    return Catalog(types).with_reservations(reservations).instance_types


def apart(name: str, count: int) -> list[Pod]:
    """Pods that each need a node of their own (hostname anti-affinity)."""
    term = PodAffinityTerm(selector(app=name), HOSTNAME_LABEL)
    return pods(name, count, "1500m", "1Gi", labels={"app": name}, pod_anti_affinity=(term,))


def reservations_of(results: Results) -> list[str]:
    return sorted(c.cheapest.reservation_id for c in results.nodeclaims)


def test_a_reservation_takes_no_more_claims_than_it_has_instances() -> None:
    types = catalog(CapacityReservation("cr-c5", "c5.large", ZONE, 2))
    results = run(apart("a", 4), types=types)
    assert len(results.nodeclaims) == 4 and not results.unschedulable
    assert reservations_of(results) == ["", "", "cr-c5", "cr-c5"]
    for claim in results.nodeclaims:
        reserved = [o for o in claim.launch_options if o.capacity_type == RESERVED]
        if claim.cheapest.reservation_id:
            assert claim.capacity_types[0] == RESERVED
        else:  # the reservation is taken: no reserved option, and the claim does not say it may come up reserved
            assert not reserved and RESERVED not in claim.capacity_types
            assert all(RESERVED not in r.values for r in claim.requirements if r.key == CAPACITY_TYPE)


def test_a_claim_takes_one_reservation_and_the_next_claim_the_next() -> None:
    types = catalog(
        CapacityReservation("cr-c5", "c5.large", ZONE, 1), CapacityReservation("cr-m5", "m5.large", ZONE, 1)
    )
    results = run(apart("a", 3), types=types)
    assert reservations_of(results) == ["", "cr-c5", "cr-m5"]
    taken = [c for c in results.nodeclaims if c.cheapest.reservation_id]
    # Each keeps only the reserved options of the reservation it takes.
    for claim in taken:
        assert {o.reservation_id for o in claim.launch_options if o.capacity_type == RESERVED} == {
            claim.cheapest.reservation_id
        }


def test_nodepools_share_a_reservation_count() -> None:
    types = catalog(CapacityReservation("cr-c5", "c5.large", ZONE, 1))
    first = pod("one", "1500m", "1Gi", node_selector={"karpenter.sh/nodepool": "np-1"})
    second = pod("two", "1500m", "1Gi", node_selector={"karpenter.sh/nodepool": "np-2"})
    results = run([first, second], pools=[pool("np-1"), pool("np-2")], types=types)
    assert reservations_of(results) == ["", "cr-c5"]


def test_reserved_only_claims_beyond_the_reservation_wait_for_the_next_round() -> None:
    types = catalog(CapacityReservation("cr-c5", "c5.large", ZONE, 1))
    results = run(apart("a", 2), pools=[pool("default", req(CAPACITY_TYPE, "In", RESERVED))], types=types)
    assert reservations_of(results) == ["cr-c5"]
    (reason,) = unschedulable(results).values()
    assert "capacity reservations" in reason and "next round" in reason


def test_the_ledger_counts_the_fewest_instances_a_reservation_is_listed_with() -> None:
    it = itype("c5.large", 2, 4, 0.085)
    listed = (Offering(ZONE, RESERVED, 1e-8, reservation_id="cr", reservation_capacity=3),)
    again = (Offering(ZONE, RESERVED, 1e-8, reservation_id="cr", reservation_capacity=1),)
    ledger = ReservationLedger(
        [dataclasses.replace(it, offerings=listed), dataclasses.replace(it, name="c5.large-2", offerings=again)]
    )
    assert ledger.left("cr") == 1
    option = LaunchOption("c5.large", RESERVED, ZONE, 1e-8, "cr")
    spot = LaunchOption("c5.large", "spot", ZONE, 0.03)
    assert ledger.take((option, spot)) == (option, spot)
    assert ledger.take((option, spot)) == (spot,)
    assert ledger.left("cr") == 0
