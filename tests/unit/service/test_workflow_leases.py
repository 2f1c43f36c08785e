"""The workflow's leases (issue 21): an interruption takes a node from whatever voluntary execution holds it and that
execution stands down; a dead holder loses its node at once; an interruption goes on when the state store refuses;
a busy planner is retried, never read as "nothing to launch"; rollback gives back only what it still holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from test_workflow_service import EXECUTION, command, run, setup

from nodewright.adapters.memory import InMemoryState, InMemoryWorkflows
from nodewright.disruption.commands import DRIFTED, EXPIRED
from nodewright.disruption.lease import LEASE_SECONDS, Lease, lock_name
from nodewright.service import workflow
from nodewright.service.provision import ProvisionResult
from nodewright.service.workflow import LeaseLost, PlannerBusy, Ports

LEASE = lock_name("old")


def voluntary(reason: str = DRIFTED) -> dict[str, Any]:
    state = command(reason, deadline=None)
    state["forceful"] = False
    state["trigger"] = "planner:drift:1"
    return state


def with_workflows(ports: Ports) -> tuple[Ports, InMemoryWorkflows]:
    workflows = InMemoryWorkflows()
    return Ports(
        ports.cluster, ports.cloud, ports.state, ports.clock, ports.catalog, ports.settings, workflows
    ), workflows


def test_a_spot_warning_takes_the_node_from_a_running_drift_drain_which_stands_down() -> None:
    cluster, _, clock, ports = setup()
    ports, workflows = with_workflows(ports)
    drift = voluntary()
    workflows.start("drift-run", drift)
    assert run("identify", drift, ports, "drift-run")["outcome"] == "proceed"
    run("drain", drift, ports, "drift-run")

    spot = command()
    workflows.start(EXECUTION, spot)
    found = run("identify", spot, ports)
    assert found["outcome"] == "proceed" and found["lease"] == "held" and found["interruption"]
    assert ports.state.lease(LEASE, clock.now()).owner == EXECUTION  # type: ignore[union-attr]

    # The drift execution's next round finds the node is no longer its own, and touches nothing.
    before = list(cluster.log)
    with pytest.raises(LeaseLost, match=EXECUTION):
        run("drain", drift, ports, "drift-run")
    with pytest.raises(LeaseLost):
        run("terminate", drift, ports, "drift-run")
    assert cluster.log == before


def test_two_interruptions_for_one_node_the_first_keeps_it() -> None:
    _, _, _, ports = setup()
    ports, workflows = with_workflows(ports)
    workflows.start(EXECUTION, command())
    run("identify", command(), ports)
    second = command()
    second["trigger"] = "evt-2"
    assert run("identify", second, ports, "second-warning")["outcome"] == "locked"


def test_a_voluntary_holder_keeps_its_node_against_another_voluntary_command() -> None:
    _, _, _, ports = setup()
    ports, workflows = with_workflows(ports)
    workflows.start("drift-run", voluntary())
    run("identify", voluntary(), ports, "drift-run")
    assert run("identify", voluntary(EXPIRED), ports, "expire-run")["outcome"] == "locked"


def test_a_holder_whose_execution_ended_loses_the_node_at_once_not_after_its_ttl() -> None:
    _, _, clock, ports = setup()
    ports, workflows = with_workflows(ports)
    ports.state.acquire_lock(LEASE, "crashed-run", clock.now() - 5, LEASE_SECONDS)
    workflows.statuses["crashed-run"] = "FAILED"
    found = run("identify", voluntary(), ports, "drift-run")
    assert found["outcome"] == "proceed"
    assert ports.state.lease(LEASE, clock.now()).owner == "drift-run"  # type: ignore[union-attr]


class RefusingState(InMemoryState):
    """A state store whose writes fail (throttling, a restore, IAM)."""

    def acquire_lock(self, name: str, owner: str, now: float, ttl_seconds: int, interruption: bool = False) -> str:
        raise RuntimeError("AccessDeniedException: dynamodb:PutItem")

    def leases(self, now: float) -> Mapping[str, Lease]:
        raise RuntimeError("AccessDeniedException: dynamodb:Query")

    def release_lock(self, name: str, owner: str) -> None:
        raise RuntimeError("AccessDeniedException: dynamodb:DeleteItem")


def test_an_interruption_drains_even_when_the_state_store_refuses_its_lease() -> None:
    _, _, _, ports = setup()
    ports = Ports(ports.cluster, ports.cloud, RefusingState(), ports.clock, ports.catalog)
    state = command()
    found = run("identify", state, ports)
    assert found["outcome"] == "proceed" and found["lease"].startswith("not held: RuntimeError")
    drained = run("drain", state, ports)
    assert drained["evicted"] == ["web/web-0", "web/web-1", "web/web-2"]
    # The lease it never held cannot be released either: the node goes all the same, nothing rolls back.
    terminated = run("terminate", state, ports)
    assert terminated["terminated"] and "DeleteItem" in terminated["lease_not_released"]


def test_a_voluntary_disruption_does_not_go_on_without_its_lease() -> None:
    _, _, _, ports = setup()
    ports = Ports(ports.cluster, ports.cloud, RefusingState(), ports.clock, ports.catalog)
    with pytest.raises(RuntimeError, match="AccessDenied"):
        run("identify", voluntary(), ports)


def test_a_busy_planner_is_retried_not_read_as_nothing_to_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, _, ports = setup()
    state = voluntary()
    run("identify", state, ports)

    def busy(batch: Any, *args: Any, **kwargs: Any) -> ProvisionResult:
        result = ProvisionResult(batch.batch_id)
        result.decide("busy", "planner", "a-batch/1234 is planning new capacity")
        return result

    monkeypatch.setattr(workflow.provisioning, "provision", busy)
    with pytest.raises(PlannerBusy, match="a-batch/1234"):
        workflow.launch_replacement(state, EXECUTION, ports)


def test_a_long_drain_backs_off_and_keeps_renewing_its_lease() -> None:
    cluster, _, clock, ports = setup()
    cluster.eviction_blocked.update({"web/web-0"})
    state = voluntary()
    run("identify", state, ports)
    waits = []
    for _ in range(workflow.DRAIN_FAST_ROUNDS + 1):
        clock.t += 10
        waits.append(run("drain", state, ports)["wait_seconds"])
    assert set(waits[: workflow.DRAIN_FAST_ROUNDS - 1]) == {workflow.DRAIN_POLL_SECONDS}
    assert waits[-1] == workflow.DRAIN_SLOW_POLL_SECONDS
    assert ports.state.lease(LEASE, clock.now()).expires_at == clock.now() + LEASE_SECONDS  # type: ignore[union-attr]


def test_rollback_gives_back_only_the_nodes_it_still_holds() -> None:
    cluster, _, clock, ports = setup()
    state = voluntary()
    run("identify", state, ports)
    run("drain", state, ports)
    ports.state.take_over_lock(LEASE, "spot-run", EXECUTION, clock.now(), LEASE_SECONDS, interruption=True)
    state["error"] = {"Cause": "boom"}
    out = run("rollback", state, ports)
    assert out["restored_nodes"] == []
    node = cluster.objects[("Node", "", "node-old")]
    assert node["spec"].get("unschedulable") is True
    assert ports.state.lease(LEASE, clock.now()).owner == "spot-run"  # type: ignore[union-attr]


def test_rollback_does_not_give_back_a_node_whose_nodeclaim_is_being_deleted() -> None:
    cluster, _, _, ports = setup()
    cluster.objects[("NodeClaim", "", "old")]["metadata"]["finalizers"] = ["nodewright.io/termination"]
    state = voluntary()
    run("identify", state, ports)
    run("drain", state, ports)
    cluster.request_nodeclaim_deletion("old")
    state["error"] = {"Cause": "boom"}
    assert run("rollback", state, ports)["restored_nodes"] == []
    assert cluster.objects[("Node", "", "node-old")]["spec"].get("unschedulable") is True


def test_rollback_never_lifts_a_cordon_someone_else_put_on() -> None:
    cluster, _, _, ports = setup()
    cluster.objects[("Node", "", "node-old")]["spec"]["unschedulable"] = True  # kubectl cordon, before us
    state = voluntary()
    run("identify", state, ports)
    run("drain", state, ports)
    state["error"] = {"Cause": "boom"}
    assert run("rollback", state, ports)["restored_nodes"] == ["node-old"]
    node = cluster.objects[("Node", "", "node-old")]
    assert node["spec"]["unschedulable"] is True
    assert all(t["key"] != "karpenter.sh/disrupted" for t in node["spec"]["taints"])
