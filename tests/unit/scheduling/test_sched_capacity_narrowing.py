"""A pod that requires on-demand does not turn a spot claim full of flexible pods into an on-demand one.

Karpenter adds a pod to the first NodeClaim it fits, narrowing the claim's requirements: one pod requiring
on-demand that joins a claim the flexible pods opened makes the whole node on-demand. nodewright passes over a
claim when that narrowing would add more to its price than a claim of the pod's own costs
(`Claims.narrowing_dearer`); a narrowing that costs nothing is still taken, as Karpenter takes it.
"""

from __future__ import annotations

from builders import pod, pods, pool, req, run

from nodewright.catalog.labels import CAPACITY_TYPE, ZONE
from nodewright.catalog.types import ON_DEMAND, SPOT
from nodewright.model.nodepool import NodePool


def _both() -> list[NodePool]:
    return [pool("both", req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND))]


def test_on_demand_pod_opens_its_own_claim_instead_of_narrowing_a_spot_one() -> None:
    # 14 flexible pods of 1 CPU open one spot m5.4xlarge (0.280 $/h) with room left; the 500m pod that requires
    # on-demand fits in that room, but joining would make the node on-demand (0.768): a claim of its own
    # (m6g.large on-demand, 0.077) costs far less.
    flexible = pods("flex", 14, cpu="1", memory="1Gi")
    od = pod("od", cpu="500m", memory="512Mi", node_selector={CAPACITY_TYPE: ON_DEMAND})
    results = run([*flexible, od], pools=_both())
    by_pod = {p: c for c in results.nodeclaims for p in c.pods}
    spot_claim = by_pod[flexible[0].key]
    assert all(by_pod[p.key] is spot_claim for p in flexible)
    assert spot_claim.cheapest.capacity_type == SPOT
    assert by_pod[od.key] is not spot_claim
    assert by_pod[od.key].capacity_types == (ON_DEMAND,)
    assert results.cost_per_hour == round(0.280 + 0.077, 6)


def test_narrowing_that_costs_nothing_is_still_taken() -> None:
    # The same pods, the last one requiring spot: joining narrows the claim to spot at the same price, so it
    # joins (one NodeClaim, as Karpenter plans it).
    flexible = pods("flex", 14, cpu="1", memory="1Gi")
    spot = pod("spot", cpu="500m", memory="512Mi", node_selector={CAPACITY_TYPE: SPOT})
    results = run([*flexible, spot], pools=_both())
    (claim,) = results.nodeclaims
    assert claim.cheapest.capacity_type == SPOT
    assert claim.capacity_types == (SPOT,)


def test_small_claim_still_narrows_when_its_own_claim_would_cost_more() -> None:
    # One flexible pod on a spot c5.large (0.030): narrowing it to on-demand adds 0.055, less than a claim of its
    # own for the on-demand pod (0.077), so the pod joins, as in Karpenter.
    flexible = pod("flex", cpu="500m", memory="512Mi")
    od = pod("od", cpu="250m", memory="256Mi", node_selector={CAPACITY_TYPE: ON_DEMAND, ZONE: "us-east-1a"})
    results = run([flexible, od], pools=_both())
    (claim,) = results.nodeclaims
    assert claim.capacity_types == (ON_DEMAND,)
