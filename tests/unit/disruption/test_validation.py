"""IdentifyCandidate's second look: a decision that no longer holds is invalidated, one that holds goes ahead."""

from __future__ import annotations

from cluster_builder import M5_ON_DEMAND, Cluster

from nodewright.disruption.plan import plan
from nodewright.disruption.validation import validate

ALL = {"budgets": [{"nodes": "100%"}]}


def decided(cluster: Cluster):  # type: ignore[no-untyped-def]
    [command] = plan(cluster.state(), {}).commands(cluster.now)
    return command


def test_an_empty_node_a_pod_landed_on_is_no_longer_empty() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL, requirements=M5_ON_DEMAND)
    cluster.node("idle", "m5.large")
    cluster.node("busy", "m5.large")
    cluster.pod("web-0", "busy", cpu="1500m")
    command = decided(cluster)
    assert command.method == "emptiness" and command.validated
    assert validate(command, cluster.state()) == ""
    cluster.pod("late-0", "idle", bound_ago=5)
    assert validate(command, cluster.state()) == "node idle is no longer empty: web/late-0"


def test_a_consolidation_whose_pods_grew_no_longer_holds() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    cluster.node("big", "m5.4xlarge")
    web = cluster.pod("web-0", "big", cpu="1")
    command = decided(cluster)
    assert command.replacement is not None and command.method == "single-node"
    assert validate(command, cluster.state()) == ""
    web["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "15"
    assert "no longer holds" in validate(command, cluster.state()) or "can no longer be" in validate(
        command, cluster.state()
    )


def test_a_budget_another_workflow_used_meanwhile_invalidates() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "1"}]}, requirements=M5_ON_DEMAND)
    cluster.node("idle", "m5.large")
    cluster.node("other", "m5.large")
    cluster.pod("web-0", "other")
    command = decided(cluster)
    assert command.nodeclaim == "claim-idle"
    held = validate(command, cluster.state(locked=["claim-other"]))
    assert "budget nodes=1" in held and "this decision needs 1" in held


def test_a_node_that_disappeared_invalidates() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    cluster.node("idle", "m5.large")
    command = decided(cluster)
    cluster.docs = [d for d in cluster.docs if d["metadata"]["name"] not in ("idle", "claim-idle")]
    assert validate(command, cluster.state()) == "nodeclaim/claim-idle no longer exists"
