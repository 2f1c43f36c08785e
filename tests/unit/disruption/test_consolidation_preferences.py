"""Consolidation respects a moving pod's preferred node affinity as Karpenter's default PreferencePolicy (Respect)
does: a preference met only by a type dearer than the node is kept, so no cheaper replacement exists and the node
stays; the simulation's price ceiling must not make the preference unmeetable and relax it."""

from __future__ import annotations

from typing import Any

from cluster_builder import Cluster

from nodewright.disruption.plan import plan

POOL = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def prefer(instance_type: str) -> dict[str, Any]:
    term = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [instance_type]}
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [term]}}
            ]
        }
    }


def one_node(affinity: dict[str, Any] | None) -> Cluster:
    cluster = Cluster()
    cluster.pool(disruption=POOL, requirements=ON_DEMAND)
    cluster.node("node", "m5.xlarge")
    extra = {"affinity": affinity} if affinity else {}
    cluster.pod("web-0", "node", cpu="100m", memory="100Mi", **extra)
    return cluster


def test_a_node_is_replaced_by_a_cheaper_type_when_its_pod_has_no_preference() -> None:
    [decision] = plan(one_node(None).state(), {}).decisions
    assert decision.replacement is not None and decision.replacement_price < decision.price


def test_a_preference_only_a_dearer_type_meets_is_kept_and_the_node_stays() -> None:
    decided = plan(one_node(prefer("m5.8xlarge")).state(), {})
    assert decided.decisions == []
    assert decided.unconsolidatable["claim-node"] == "Can't replace with a cheaper node"


def test_a_preference_a_cheaper_type_meets_is_kept_in_the_replacement() -> None:
    [decision] = plan(one_node(prefer("m5.large")).state(), {}).decisions
    assert decision.replacement is not None
    assert {o.instance_type for o in decision.replacement.options} == {"m5.large"}
