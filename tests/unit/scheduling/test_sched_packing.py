"""Packing: how large pods of different Deployments share nodes."""

from __future__ import annotations

from builders import itype, pods, run

# X is the cheapest node per pod for the large pods alone, but the 0.9 vCPU it leaves fits nothing;
# Y costs more per large pod and leaves 2.9 vCPU, which one small pod fills.
X = itype("c6i.xlarge", 6, 16, 0.30)
Y = itype("m6i.2xlarge", 8, 32, 0.384)
Z = itype("m5.xlarge", 4, 16, 0.192)


def test_large_pods_take_the_type_whose_room_the_pods_still_to_come_can_use() -> None:
    pending = pods("large", 2, cpu="5", memory="8Gi") + pods("small", 2, cpu="2500m", memory="2Gi")
    results = run(pending, types=[X, Y, Z])
    assert not results.unschedulable
    # Class by class: two X for the large pods (0.60) and one X for both small ones (0.30), 0.90 in all.
    assert round(results.cost_per_hour, 3) == 0.768
    for claim in results.nodeclaims:
        assert claim.cheapest.instance_type == Y.name
        assert sorted(p.split("/")[1].rsplit("-", 1)[0] for p in claim.pods) == ["large", "small"]


def test_small_pods_alone_keep_the_cheapest_type_per_pod() -> None:
    results = run(pods("small", 2, cpu="2500m", memory="2Gi"), types=[X, Y, Z])
    (claim,) = results.nodeclaims
    assert claim.cheapest.instance_type == X.name


def test_the_look_ahead_does_not_depend_on_input_order() -> None:
    large = pods("large", 5, cpu="5", memory="8Gi")
    small = pods("small", 4, cpu="2500m", memory="2Gi")
    medium = pods("medium", 3, cpu="3", memory="9Gi")
    forward = run(large + small + medium, types=[X, Y, Z])
    backward = run(list(reversed(medium + small + large)), types=[X, Y, Z])
    assert forward == backward
    assert not forward.unschedulable
