"""Node repair (`disruption.repair`) and how the tick's plan takes it: which nodes are due, which wait for their
toleration, which the 20 % guard holds back, and what the dry run and the workflow input say."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from cluster_builder import Cluster, iso

from nodewright.disruption.commands import UNHEALTHY
from nodewright.disruption.fleet import NodeCondition
from nodewright.disruption.plan import REPAIR, plan
from nodewright.disruption.repair import (
    AWS_REPAIR_POLICIES,
    TERMINATION_TIMESTAMP_ANNOTATION,
    RepairPolicy,
    repairs,
    threshold,
    unhealthy,
)
from nodewright.disruption.state import DisruptionSettings
from nodewright.disruption.termination import deletions
from nodewright.settings import NODE_REPAIR, SettingsError, node_repair

MINUTE = 60.0


def set_condition(cluster: Cluster, node: str, kind: str = "Ready", status: str = "False", ago: float = 0) -> None:
    """Give the Node `kind`=`status`, transitioned `ago` seconds before the cluster's time."""
    conditions: list[dict[str, Any]] = cluster.find("Node", node)["status"]["conditions"]
    conditions[:] = [c for c in conditions if c["type"] != kind]
    conditions.append({"type": kind, "status": status, "lastTransitionTime": iso(cluster.now - ago)})


def pool_of(count: int, unhealthy_ago: dict[int, float]) -> Cluster:
    """`count` nodes in one pool; node-i Ready=False since `unhealthy_ago[i]` seconds."""
    cluster = Cluster()
    cluster.pool()
    for i in range(count):
        cluster.node(f"node-{i}")
    for i, ago in unhealthy_ago.items():
        set_condition(cluster, f"node-{i}", ago=ago)
    return cluster


def test_the_condition_whose_toleration_ends_first_is_the_one_that_counts() -> None:
    policies = (RepairPolicy("BadNode", "False", 60 * 60), RepairPolicy("ValidUnhealthy", "False", 30 * 60))
    conditions = (NodeCondition("BadNode", "False", 1000.0), NodeCondition("ValidUnhealthy", "False", 1000.0))
    found = unhealthy(conditions, policies)
    assert found is not None and (found.condition, found.due) == ("ValidUnhealthy", 1000.0 + 30 * 60)
    assert unhealthy((NodeCondition("BadNode", "True", 0.0),), policies) is None  # status must match
    assert unhealthy((NodeCondition("Other", "False", 0.0),), policies) is None  # type must match


def test_the_aws_policies_are_karpenters() -> None:
    by_type = {(p.condition, p.status): p.toleration_seconds for p in AWS_REPAIR_POLICIES}
    assert by_type[("Ready", "False")] == by_type[("Ready", "Unknown")] == 30 * 60
    assert by_type[("AcceleratedHardwareReady", "False")] == 10 * 60
    for kind in ("StorageReady", "NetworkingReady", "KernelReady", "ContainerRuntimeReady"):
        assert by_type[(kind, "False")] == 30 * 60


def test_twenty_percent_rounds_up() -> None:
    assert [threshold(n) for n in (1, 3, 5, 10, 11)] == [1, 1, 1, 2, 3]


def test_a_node_not_ready_past_its_toleration_is_due_and_one_within_it_waits() -> None:
    cluster = pool_of(10, {0: 31 * MINUTE, 1: 20 * MINUTE})
    found = repairs(cluster.state().fleet, cluster.now)
    assert [r.member.nodeclaim for r in found.due] == ["claim-node-0"]
    assert found.due[0].terminate_at == cluster.now
    assert "Ready=False for 20m0s (toleration 30m0s)" in found.waiting["claim-node-1"]
    assert not found.held and not found.unhealthy_pools


def test_more_than_twenty_percent_unhealthy_holds_every_repair_of_the_pool() -> None:
    cluster = pool_of(10, {0: 40 * MINUTE, 1: 40 * MINUTE, 2: 1 * MINUTE})  # 3 unhealthy > ceil(2.0)
    found = repairs(cluster.state().fleet, cluster.now)
    assert found.due == []
    assert found.unhealthy_pools == {"general": (3, 10)}
    assert (
        "more than 20% nodes are unhealthy in the nodepool (3 of 10 in NodePool general)" in found.held["claim-node-0"]
    )
    assert set(found.held) == {"claim-node-0", "claim-node-1"}  # node-2 is still within its toleration


def test_one_of_three_unhealthy_is_repaired_since_the_threshold_rounds_up() -> None:
    cluster = pool_of(3, {0: 60 * MINUTE})
    assert [r.member.nodeclaim for r in repairs(cluster.state().fleet, cluster.now).due] == ["claim-node-0"]


def test_pools_are_counted_apart() -> None:
    cluster = Cluster()
    cluster.pool("a")
    cluster.pool("b")
    cluster.node("a-0", pool="a")
    cluster.node("b-0", pool="b")
    cluster.node("b-1", pool="b")
    for node in ("a-0", "b-0", "b-1"):
        set_condition(cluster, node, ago=40 * MINUTE)
    found = repairs(cluster.state().fleet, cluster.now)
    assert [r.member.nodeclaim for r in found.due] == ["claim-a-0"]  # 1 of 1: ceil(0.2) = 1
    assert found.unhealthy_pools == {"b": (2, 2)}


def test_an_earlier_termination_timestamp_is_kept_and_a_later_one_replaced() -> None:
    cluster = Cluster()
    cluster.pool()
    cluster.node("early", claim_annotations={TERMINATION_TIMESTAMP_ANNOTATION: iso(Cluster().now - 180)})
    cluster.node("late", claim_annotations={TERMINATION_TIMESTAMP_ANNOTATION: iso(Cluster().now + 7200)})
    for i in range(8):
        cluster.node(f"healthy-{i}")
    set_condition(cluster, "early", ago=61 * MINUTE)
    set_condition(cluster, "late", ago=61 * MINUTE)
    found = {r.member.nodeclaim: r.terminate_at for r in repairs(cluster.state().fleet, cluster.now).due}
    assert found == {"claim-early": cluster.now - 180, "claim-late": cluster.now}


def test_a_deleting_nodeclaim_is_the_terminations_and_its_deadline_is_the_termination_timestamp() -> None:
    cluster = pool_of(5, {0: 40 * MINUTE})
    claim = cluster.find("NodeClaim", "claim-node-0")
    claim["metadata"]["deletionTimestamp"] = iso(cluster.now - 10)
    claim["metadata"]["annotations"][TERMINATION_TIMESTAMP_ANNOTATION] = iso(cluster.now - 10)
    state = cluster.state()
    assert repairs(state.fleet, cluster.now).due == []
    [command] = deletions(state.fleet, frozenset(), cluster.now)
    assert (command.nodeclaim, command.deadline) == ("claim-node-0", cluster.now - 10)


def test_the_plan_repairs_first_and_nothing_else_decides_the_node() -> None:
    cluster = pool_of(5, {0: 31 * MINUTE})
    cluster.pool(disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s"})  # node-0 is empty
    decided = plan(cluster.state(), {"claim-node-0": "AMIDrift"})
    assert [r.member.nodeclaim for r in decided.repairs.due] == ["claim-node-0"]
    assert all("claim-node-0" not in [c.name for c in d.candidates] for d in decided.decisions)
    [command] = decided.repair_commands(cluster.now)
    assert (command.reason, command.forceful, command.method, command.deadline) == (
        UNHEALTHY,
        True,
        REPAIR,
        cluster.now,
    )
    assert command.interruption  # it takes the node from a voluntary disruption holding it
    shown = decided.to_json(cluster.state())
    [entry] = [c for c in shown["commands"] if c["method"] == REPAIR]
    assert entry["reason"] == UNHEALTHY and entry["condition"] == "Ready=False for 31m0s (toleration 30m0s)"


def test_the_plan_says_why_a_held_node_is_not_repaired_and_the_setting_turns_repair_off() -> None:
    cluster = pool_of(4, {0: 40 * MINUTE, 1: 40 * MINUTE})
    decided = plan(cluster.state(), {})
    assert "2 of 4 in NodePool general" in decided.skipped["claim-node-0"]
    due = pool_of(5, {0: 40 * MINUTE})
    state = due.state()
    off = plan(replace(state, settings=DisruptionSettings(node_repair=False)), {})
    assert off.repairs.due == [] and all(m.method != REPAIR for m in off.methods)
    assert [r.member.nodeclaim for r in plan(state, {}).repairs.due] == ["claim-node-0"]


def test_the_planner_setting_is_true_unless_turned_off_and_names_itself_when_misspelt() -> None:
    assert node_repair({}) is True
    assert node_repair({NODE_REPAIR: "false"}) is False
    with pytest.raises(SettingsError, match="NODEWRIGHT_NODE_REPAIR is 'off': set it to true or false"):
        node_repair({NODE_REPAIR: "off"})
