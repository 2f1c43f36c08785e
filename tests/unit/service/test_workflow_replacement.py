"""LaunchReplacement launches the replacement that was decided, or adopts the NodeClaim its pods already wait on;
a rebalance's early replacement carries the end of its protection window."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from service_fakes import node_for, pod
from test_workflow_service import CATALOG, command, ready, run, setup

from nodewright.disruption.commands import DRIFTED, PREPARE, REBALANCE, DisruptionCommand
from nodewright.disruption.fleet import PROTECTED_UNTIL_ANNOTATION, epoch
from nodewright.ports import Instance
from nodewright.service.batch import Batch
from nodewright.service.provision import provision
from nodewright.service.provision.serial import LOCK_TTL_SECONDS
from nodewright.service.workflow import PlannerBusy
from nodewright.tags import NODECLAIM as NODECLAIM_TAG

PREPARING = "RebalanceRecommendation-old-1"
URGENT = "SpotInterruption-old-2"


def prepare_state() -> dict[str, Any]:
    state = command(REBALANCE, action=PREPARE, deadline=None)
    state["forceful"] = False
    return state


def test_a_rebalance_early_replacement_is_protected_until_its_window_ends() -> None:
    cluster, _, clock, ports = setup()
    state = prepare_state()
    found = run("identify", state, ports, PREPARING)
    [claim] = run("launch_replacement", state, ports, PREPARING)["nodeclaims"]
    stamp = cluster.objects[("NodeClaim", "", claim)]["metadata"]["annotations"][PROTECTED_UNTIL_ANNOTATION]
    assert epoch(stamp) == clock.t + found["protect_seconds"]


def test_a_spot_warning_after_a_rebalance_adopts_the_early_replacement_and_waits_for_it() -> None:
    """Issue 21 item 10: the pods wait on the early replacement; nothing new launches, and the replacement is
    waited for instead of reported ready with nothing launched."""
    _, cloud, clock, ports = setup()
    prepared = prepare_state()
    run("identify", prepared, ports, PREPARING)
    [early] = run("launch_replacement", prepared, ports, PREPARING)["nodeclaims"]
    fleets = len(cloud.fleets)
    clock.t += 30
    urgent = command()
    assert run("identify", urgent, ports, URGENT)["outcome"] == "proceed"
    replacement = run("launch_replacement", urgent, ports, URGENT)
    assert replacement["nodeclaims"] == [early] and replacement["adopted"] == [early]
    assert len(cloud.fleets) == fleets  # nothing launched twice
    assert run("check_replacement", urgent, ports, URGENT) == {"ready": False, "waiting_for": [early]}


def test_a_voluntary_drain_whose_pods_wait_on_a_batch_claim_waits_for_that_claim_before_draining() -> None:
    cluster, cloud, clock, ports = setup()
    # A batch planned the node's pods (it saw the node tainted) and launched a NodeClaim for them.
    drift = command(DRIFTED, deadline=None)
    drift["forceful"] = False
    run("identify", drift, ports, "Drifted-old-1")
    cluster.add_node_taint("node-old", "karpenter.sh/disrupted", "", "NoSchedule")
    batch = provision(
        Batch("b1", "demo", []), cluster, cloud, ports.state, clock, CATALOG, displaced_nodes=["node-old"]
    )
    [claim] = batch.launched
    replacement = run("launch_replacement", drift, ports, "Drifted-old-1")
    assert replacement["nodeclaims"] == [claim.name]
    assert not run("check_replacement", drift, ports, "Drifted-old-1")["ready"]
    node = node_for(cloud.instances[claim.instance_id], "node-new")
    node["spec"]["taints"] = []
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    cluster.put(node)
    assert run("check_replacement", drift, ports, "Drifted-old-1")["ready"]


class SlowCatalog:
    """A catalog whose read takes longer than the planner lock's TTL, with no heartbeat landing meanwhile."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock

    def instance_types(self) -> Any:
        self.clock.t += LOCK_TTL_SECONDS + 10
        return CATALOG.instance_types()


def test_a_replacement_whose_planner_lock_ran_out_while_planning_is_retried_and_creates_nothing() -> None:
    cluster, cloud, clock, ports = setup()
    state = command()
    run("identify", state, ports)
    slow = replace(ports, catalog=SlowCatalog(clock))
    with pytest.raises(PlannerBusy, match="planner lock"):
        run("launch_replacement", state, slow)
    assert not [c for c in cluster.of_kind("NodeClaim") if c["metadata"]["name"] != "old"] and not cloud.fleets


def second_node(cluster: Any, cloud: Any) -> dict[str, Any]:
    """A second node like `setup`'s ("two", node-two, i-two, two pods), and a drift command for it."""
    instance = Instance("i-two", "m5.xlarge", "us-east-1a", "running", "on-demand", 0.0, {NODECLAIM_TAG: "two"})
    cloud.instances["i-two"] = instance
    cluster.put(ready(node_for(instance, "node-two")))
    claim = copy.deepcopy(cluster.objects[("NodeClaim", "", "old")])
    claim["metadata"]["name"] = "two"
    claim["status"].update({"providerID": "aws:///us-east-1a/i-two", "nodeName": "node-two"})
    cluster.put(claim)
    for i in range(2):
        cluster.put({**pod(f"api-{i}"), "spec": {**pod(f"api-{i}")["spec"], "nodeName": "node-two"}})
    started = 1_800_000_000.0
    state = DisruptionCommand("two", "node-two", "i-two", DRIFTED, False, "evt-2", started, None).to_input()
    return state


def test_a_second_drift_command_does_not_adopt_the_first_commands_replacement() -> None:
    """Round 2: the pods of the first command's tainted node wait on its replacement; the second command's
    execution must neither wait for that claim nor (on a rollback) own it: it adopts only what its own pods wait
    on."""
    cluster, cloud, _, ports = setup()
    pool = cluster.objects[("NodePool", "", "general")]
    pool["spec"]["disruption"] = {"consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}
    first = command(DRIFTED, deadline=None)
    first["forceful"] = False
    run("identify", first, ports, "Drifted-old-1")
    [mine] = run("launch_replacement", first, ports, "Drifted-old-1")["nodeclaims"]
    second = second_node(cluster, cloud)
    assert run("identify", second, ports, "Drifted-two-1")["outcome"] == "proceed"
    replacement = run("launch_replacement", second, ports, "Drifted-two-1")
    assert mine not in replacement["nodeclaims"] and replacement["adopted"] == []
    assert replacement["nodeclaims"]  # its own pods got their own replacement
