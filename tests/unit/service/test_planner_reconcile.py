"""The planner tick converges whatever died (issue 21): dead leases released and their nodes given back, a Deleted
workflow retried under a new name, NodeClaims of vanished instances forgotten, lost stop events replayed, a
starter that died before StartExecution, and one failed StartExecution that does not stop the tick."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from service_fakes import FakeCloud, FixedClock
from test_termination_service import CATALOG, NODE, running_node

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.disruption.commands import DELETED, INSTANCE_STOPPING
from nodewright.disruption.lease import LEASE_SECONDS, START_GRACE_SECONDS, lock_name
from nodewright.disruption.reconcile import GONE_GRACE_SECONDS
from nodewright.ports import Instance
from nodewright.service.plan import PlannerPorts, TickResult, tick
from nodewright.tags import CORDONED


def ticking(
    cluster: InMemoryCluster, cloud: FakeCloud, state: InMemoryState, clock: FixedClock
) -> tuple[PlannerPorts, InMemoryWorkflows]:
    workflows = InMemoryWorkflows()
    return PlannerPorts(cluster, cloud, workflows, clock, state, CATALOG), workflows


def node(cluster: InMemoryCluster) -> dict[str, Any]:
    return cluster.objects[("Node", "", NODE)]


def drained_by(cluster: InMemoryCluster, state: InMemoryState, clock: FixedClock, claim: str, execution: str) -> None:
    """What a drain that then died leaves: its lease, the disrupted taint, nodewright's cordon."""
    state.acquire_lock(lock_name(claim), execution, clock.now(), LEASE_SECONDS)
    cluster.add_node_taint(NODE, "karpenter.sh/disrupted", "", "NoSchedule")
    cluster.set_unschedulable(NODE, True)


def test_a_node_whose_drain_died_is_given_back_at_the_next_tick() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    ports, workflows = ticking(cluster, cloud, state, clock)
    drained_by(cluster, state, clock, claim, "Drifted-run")
    workflows.statuses["Drifted-run"] = "TIMED_OUT"  # the state machine's time-out: no Catch, no Rollback

    result = tick(ports)

    assert [(r["kind"], r["nodeclaim"]) for r in result.repaired] == [("restore", claim)]
    assert "Drifted-run is TIMED_OUT" in result.repaired[0]["reason"]
    assert all(t["key"] != "karpenter.sh/disrupted" for t in node(cluster)["spec"].get("taints") or [])
    assert not node(cluster)["spec"].get("unschedulable") and CORDONED not in node(cluster)["metadata"]["annotations"]
    assert lock_name(claim) not in state.locks
    assert ("node/" + NODE, "DisruptionRestored") in {(e.pod, e.reason) for e in cluster.events}


def test_a_running_drain_keeps_its_node_whatever_its_age() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    ports, workflows = ticking(cluster, cloud, state, clock)
    drained_by(cluster, state, clock, claim, "Drifted-run")
    workflows.statuses["Drifted-run"] = "RUNNING"
    clock.t += LEASE_SECONDS - 1  # a PodDisruptionBudget has held it for almost an hour; the drain renews its lease
    assert tick(ports).repaired == []
    assert node(cluster)["spec"]["unschedulable"] is True


def test_a_cordon_someone_else_put_on_is_not_lifted() -> None:
    cluster, cloud, state, clock, _, _ = running_node()
    ports, _ = ticking(cluster, cloud, state, clock)
    node(cluster)["spec"]["unschedulable"] = True  # kubectl cordon
    assert tick(ports).repaired == []
    assert node(cluster)["spec"]["unschedulable"] is True


def test_a_deleted_workflow_that_failed_is_retried_under_a_new_name() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    ports, workflows = ticking(cluster, cloud, state, clock)
    cluster.objects[("NodeClaim", "", claim)]["metadata"]["finalizers"] = ["nodewright.io/termination"]
    cluster.request_delete("NodeClaim", claim)
    [first] = [s for s in tick(ports).started if s["reason"] == DELETED]
    workflows.statuses[first["execution"]] = "FAILED"

    clock.t += 60
    [second] = [s for s in tick(ports).started if s["reason"] == DELETED]
    assert second["execution"] != first["execution"]
    assert state.locks[lock_name(claim)].owner == second["execution"]


def test_a_nodeclaim_whose_instance_was_terminated_behind_our_back_is_forgotten_with_its_node() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    ports, _ = ticking(cluster, cloud, state, clock)
    cloud.instances[instance] = replace(cloud.instances[instance], state="terminated")

    result = tick(ports)

    assert [(r["kind"], r["nodeclaim"]) for r in result.repaired] == [("forget", claim)]
    assert cluster.nodeclaim(claim) is None and ("Node", "", NODE) not in cluster.objects
    assert not [s for s in result.started if s["nodeclaim"] == claim]


def test_an_instance_ec2_no_longer_knows_is_forgotten_only_after_the_grace() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    ports, _ = ticking(cluster, cloud, state, clock)
    del cloud.instances[instance]
    created = cluster.objects[("NodeClaim", "", claim)]["metadata"]["creationTimestamp"]
    assert created  # the fake's clock stamped it: now
    assert tick(ports).repaired == []  # EC2 is eventually consistent about a new instance
    clock.t += GONE_GRACE_SECONDS
    assert [r["kind"] for r in tick(ports).repaired] == ["forget"]


def test_an_instance_stopped_behind_our_back_gets_the_workflow_its_lost_event_would_have_started() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    ports, workflows = ticking(cluster, cloud, state, clock)
    cloud.instances[instance] = replace(cloud.instances[instance], state="stopped")
    [started] = tick(ports).started
    assert (started["nodeclaim"], started["reason"]) == (claim, INSTANCE_STOPPING)
    assert workflows.started[started["execution"]]["forceful"]
    assert tick(ports).started == []  # its lease holds the node while it runs


def test_a_planner_that_died_before_starting_its_execution_blocks_the_node_a_minute_at_most() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    ports, workflows = ticking(cluster, cloud, state, clock)
    cloud.instances[instance] = replace(cloud.instances[instance], state="stopped")
    # The previous tick took the lease for its own InstanceStopping execution and died before starting it.
    state.acquire_lock(lock_name(claim), "planned-never-started", clock.now(), LEASE_SECONDS, interruption=True)

    first = tick(ports)
    assert first.started == [] and "planned-never-started" in first.skipped[claim]
    clock.t += START_GRACE_SECONDS
    [started] = tick(ports).started
    assert started["reason"] == INSTANCE_STOPPING and workflows.status("planned-never-started") == ""


class FlakyWorkflows(InMemoryWorkflows):
    """Step Functions refusing one StartExecution (throttled, a deleted state machine)."""

    def start(self, name: str, document: Any) -> bool:
        if document.get("reason") == INSTANCE_STOPPING:
            raise RuntimeError("ThrottlingException")
        return super().start(name, document)


def test_a_failed_start_is_reported_gives_its_lease_back_and_the_tick_goes_on() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    cloud.instances[instance] = replace(cloud.instances[instance], state="stopped")
    cloud.instances["i-leaked"] = replace(cloud.instances[instance], id="i-leaked", state="running", launch_time=0.0)
    cloud.instances["i-leaked"] = replace(
        cloud.instances["i-leaked"], tags={**cloud.instances[instance].tags, "nodewright.io/nodeclaim": "gone"}
    )
    ports = PlannerPorts(cluster, cloud, FlakyWorkflows(), clock, state, CATALOG)

    result: TickResult = tick(ports)

    assert any("StartExecution failed: RuntimeError: ThrottlingException" in p for p in result.problems)
    assert lock_name(claim) not in state.locks
    assert result.collected == ["i-leaked"]  # garbage collection still ran after the failed start


def test_a_drained_node_whose_nodeclaim_is_being_deleted_is_not_given_back_its_deletion_goes_on() -> None:
    cluster, cloud, state, clock, claim, _ = running_node()
    ports, workflows = ticking(cluster, cloud, state, clock)
    cluster.objects[("NodeClaim", "", claim)]["metadata"]["finalizers"] = ["nodewright.io/termination"]
    drained_by(cluster, state, clock, claim, "SpotInterruption-run")
    workflows.statuses["SpotInterruption-run"] = "FAILED"
    cluster.request_nodeclaim_deletion(claim)  # the interruption handler marked it, as Karpenter deletes it

    result = tick(ports)

    assert result.repaired == []
    assert node(cluster)["spec"]["unschedulable"] is True
    [started] = result.started
    assert (started["nodeclaim"], started["reason"]) == (claim, DELETED)


class _CountingCloud(FakeCloud):
    """EC2 that counts how the tick reads it: listings of the cluster's live instances, and descriptions by id."""

    def __init__(self, cloud: FakeCloud, listing_fails: bool = False) -> None:
        self.__dict__.update(cloud.__dict__)
        self.listings, self.described, self.listing_fails = 0, [], listing_fails

    def capacity_instances(self) -> Sequence[Instance]:
        self.listings += 1
        if self.listing_fails:
            raise RuntimeError("RequestLimitExceeded")
        return super().capacity_instances()

    def describe_instances(self, instance_ids: Iterable[str]) -> Sequence[Instance]:
        self.described.append(sorted(instance_ids))
        return super().describe_instances(instance_ids)


def test_a_tick_lists_the_live_instances_once_and_describes_by_id_only_those_not_in_the_listing() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    counting = _CountingCloud(cloud)
    ports, _ = ticking(cluster, counting, state, clock)
    assert tick(ports).repaired == []
    assert (counting.listings, counting.described) == (1, [])  # drift, reconciliation and the GC share one listing

    counting.instances[instance] = replace(counting.instances[instance], state="terminated")
    assert [(r["kind"], r["nodeclaim"]) for r in tick(ports).repaired] == [("forget", claim)]
    assert (counting.listings, counting.described) == (2, [[instance]])  # not live: described by its id


def test_a_listing_ec2_refuses_skips_the_garbage_collection_but_not_the_fleets_description() -> None:
    cluster, cloud, state, clock, claim, instance = running_node()
    counting = _CountingCloud(cloud, listing_fails=True)
    counting.instances[instance] = replace(counting.instances[instance], state="stopped")
    ports, _ = ticking(cluster, counting, state, clock)
    result = tick(ports)
    assert "instance garbage collection: RuntimeError: RequestLimitExceeded" in result.problems
    assert counting.described == [[instance]] and result.collected == []
    [started] = result.started  # the stopped instance is still seen, through its description
    assert (started["nodeclaim"], started["reason"]) == (claim, INSTANCE_STOPPING)
