"""The workflow's steps on a multi-node consolidation: every node locked, tainted, drained and terminated as its
own Map item; a rollback restores them all; a decision that no longer holds is invalidated before anything."""

from __future__ import annotations

from typing import Any

from cluster_builder import T0, Cluster, instance_types
from service_fakes import FakeCloud, FixedClock

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.catalog.types import InstanceType
from nodewright.disruption.plan import plan
from nodewright.ports import Instance
from nodewright.service import workflow
from nodewright.service.workflow import Ports

EXECUTION = "Underutilized-claim-a-0123456789abcdef"


class BuilderCatalog:
    def instance_types(self) -> tuple[InstanceType, ...]:
        return instance_types()


def three_light_nodes() -> tuple[Cluster, InMemoryCluster, FakeCloud, Ports]:
    built = Cluster()
    built.pool(disruption={"budgets": [{"nodes": "100%"}]})
    for name in ("a", "b", "c"):
        built.node(name, "m5.xlarge")
        built.pod(f"{name}-web-0", name, cpu="700m", memory="2Gi")
    clock = FixedClock(T0)
    cluster = InMemoryCluster(built.docs, clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    for name in ("a", "b", "c"):
        cloud.instances[f"i-{name}"] = Instance(f"i-{name}", "m5.xlarge", "us-east-1a", "running", "on-demand")
    return built, cluster, cloud, Ports(cluster, cloud, InMemoryState(), clock, BuilderCatalog())


def decided(built: Cluster) -> dict[str, Any]:
    [command] = plan(built.state(), {}).commands(T0)
    assert command.method == "multi-node" and len(command.targets) == 3
    return command.to_input()


def test_a_multi_node_consolidation_locks_taints_drains_and_terminates_every_node() -> None:
    built, cluster, cloud, ports = three_light_nodes()
    state = decided(built)
    found = workflow.STEPS["identify"](state, EXECUTION, ports)
    state["identify"] = found
    assert found["outcome"] == "proceed"
    assert sorted(ports.state.locks) == ["nodeclaim/claim-a", "nodeclaim/claim-b", "nodeclaim/claim-c"]  # type: ignore[attr-defined]
    targets = found["targets"]
    assert [t["nodeclaim"] for t in targets] == ["claim-a", "claim-b", "claim-c"]
    assert [t["identify"]["moving"] for t in targets] == [["web/a-web-0"], ["web/b-web-0"], ["web/c-web-0"]]

    launched = workflow.STEPS["launch_replacement"](state, EXECUTION, ports)
    [replacement] = launched["nodeclaims"]
    record = cluster.nodeclaim(replacement)
    assert record is not None
    allowed = {o[0] for o in state["replacement"]["options"]}
    assert record["metadata"]["labels"]["node.kubernetes.io/instance-type"] in allowed  # only what was decided
    for name in ("a", "b", "c"):
        taints = cluster.objects[("Node", "", name)]["spec"]["taints"]
        assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints

    for item in targets:  # the Map: each node with its own state
        assert workflow.STEPS["drain"](item, EXECUTION, ports)["evicted"] == item["identify"]["moving"]
        item["drain"] = workflow.STEPS["drain"](item, EXECUTION, ports)
        assert item["drain"]["done"]
        workflow.STEPS["terminate"](item, EXECUTION, ports)
    assert sorted(cloud.terminated) == ["i-a", "i-b", "i-c"]
    assert all(cluster.nodeclaim(f"claim-{n}") is None for n in "abc")
    assert ports.state.locks == {}  # type: ignore[attr-defined]


def test_a_rollback_restores_every_node_of_the_command() -> None:
    built, cluster, _, ports = three_light_nodes()
    state = decided(built)
    state["identify"] = workflow.STEPS["identify"](state, EXECUTION, ports)
    workflow.STEPS["launch_replacement"](state, EXECUTION, ports)
    state["error"] = {"Cause": "replacement never became Ready"}
    out = workflow.STEPS["rollback"](state, EXECUTION, ports)
    assert out["restored_nodes"] == ["a", "b", "c"] and len(out["removed_replacements"]) == 1
    for name in ("a", "b", "c"):
        node = cluster.objects[("Node", "", name)]
        assert not any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"]["taints"])
        claim = cluster.nodeclaim(f"claim-{name}")
        assert claim is not None and not any(c["type"] == "DisruptionReason" for c in claim["status"]["conditions"])
    assert ports.state.locks == {}  # type: ignore[attr-defined]


def test_a_decision_that_no_longer_holds_is_invalidated_before_anything_is_done() -> None:
    built, cluster, _, ports = three_light_nodes()
    state = decided(built)
    busy = built.pod("late-0", "a", cpu="3")  # the first node fills up before the execution runs
    cluster.put(busy)
    found = workflow.STEPS["identify"](state, EXECUTION, ports)
    assert found["outcome"] == "invalidated"
    assert ports.state.locks == {}  # type: ignore[attr-defined]
    assert not any(entry.startswith("taint") for entry in cluster.log)
    assert [e.reason for e in cluster.events if e.pod == "node/a"] == ["DisruptionInvalidated"]


def test_two_drifted_nodes_replaced_at_once_each_get_a_node_of_their_own() -> None:
    """The second replacement counts the first node's pods as displaced: it must not plan its pod onto the first
    replacement, which is in flight for exactly those pods (the e2e AMI roll once left a pod pending this way)."""
    only_large = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
    ]
    built = Cluster()
    built.pool(disruption={"budgets": [{"nodes": "100%"}]}, requirements=only_large)
    for name in ("a", "b"):
        built.node(name, "m5.large")
        built.pod(f"{name}-web-0", name, cpu="1500m", memory="1Gi")
    clock = FixedClock(T0)
    cluster = InMemoryCluster(built.docs, clock=clock.now)
    ports = Ports(cluster, FakeCloud(cluster_log=cluster.log), InMemoryState(), clock, BuilderCatalog())
    commands = plan(built.state(), {"claim-a": "AMIDrift", "claim-b": "AMIDrift"}).commands(T0)
    assert sorted((c.method, c.node) for c in commands) == [("drift", "a"), ("drift", "b")]

    launched: list[str] = []
    for command in commands:
        state = command.to_input()
        execution = f"Drifted-claim-{command.node}-0123456789abcdef"
        state["identify"] = workflow.STEPS["identify"](state, execution, ports)
        assert state["identify"]["outcome"] == "proceed"
        launched += workflow.STEPS["launch_replacement"](state, execution, ports)["nodeclaims"]
    assert len(set(launched)) == 2
