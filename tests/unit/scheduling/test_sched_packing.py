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


# Ten 2-vCPU pods per node: P holds them at the lowest price per pod but its 1.9 spare vCPU fit no small
# pod, so the small pods need a node of their own (R); Q holds all twelve pods for less than P and R.
P = itype("c6i.6xlarge", 24, 16, 0.332)
Q = itype("m6i.8xlarge", 32, 48, 0.35)
R = itype("m5.xlarge", 4, 16, 0.162)


def test_a_class_of_many_large_pods_per_node_is_planned_with_the_pods_to_come_when_that_is_cheaper() -> None:
    pending = pods("large", 10, cpu="2", memory="1Gi") + pods("small", 2, cpu="1900m", memory="2Gi")
    results = run(pending, types=[P, Q, R])
    assert not results.unschedulable
    # Class by class: P for the large pods and R for the small ones, 0.494 in all.
    (claim,) = results.nodeclaims
    assert claim.cheapest.instance_type == Q.name
    assert round(results.cost_per_hour, 3) == 0.35
    assert run(list(reversed(pending)), types=[P, Q, R]) == results


def test_the_look_ahead_may_give_a_node_far_fewer_of_the_opening_class_than_fit() -> None:
    # A node of s holds three large pods, but with two or three of them it has memory for one small pod at
    # most; one large and two small pods per node fill three nodes, where more large pods per node need four.
    s = itype("r6i.6xlarge", 24, 32, 0.268)
    pending = pods("large", 3, cpu="3", memory="8Gi") + pods("small", 6, cpu="2", memory="10Gi")
    results = run(pending, types=[s, R])
    assert not results.unschedulable
    assert round(results.cost_per_hour, 3) == 0.804
    for claim in results.nodeclaims:
        assert sorted(p.split("/")[1].rsplit("-", 1)[0] for p in claim.pods) == ["large", "small", "small"]
