"""Issue 21's provisioning convergence through the handlers, against moto: a replacement adopts the NodeClaim its
pods already wait on, and the planner's garbage collection by providerID adopts an unrecorded launch and terminates
a second instance for a NodeClaim."""

from __future__ import annotations

import time
from typing import Any

import pytest
from handlers import Context, load_handler
from test_disruption_handlers import launched_node, state_machine
from test_provisioner_handler import event, instances, pod

from nodewright.disruption import termination
from nodewright.disruption.commands import SPOT_INTERRUPTION, DisruptionCommand


def test_launch_replacement_adopts_the_nodeclaim_a_batch_launched_for_the_draining_pods(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_machine(monkeypatch)
    cluster, claim = launched_node(account)
    steps = load_handler("workflow")
    steps._PORTS = steps.build_ports(cluster=cluster)
    now = time.time()
    command = DisruptionCommand(
        claim["name"], "node-a", claim["instance_id"], SPOT_INTERRUPTION, True, "evt-1", now, now + 120
    ).to_input()
    found = steps.identify({"input": command, "execution": "run-1"}, Context())
    assert found["outcome"] == "proceed"
    # The node is tainted; a batch (another pending pod) plans its pods too and launches a NodeClaim for them.
    cluster.add_node_taint("node-a", "karpenter.sh/disrupted", "", "NoSchedule")
    cluster.put(pod("web-9"))
    provisioner = load_handler("provisioner")
    provisioner._RUNTIME = provisioner.build_runtime(cluster=cluster)
    batch = provisioner.handler(event(cluster, batch_id="batch-2"), Context())
    [for_them] = [c["name"] for c in batch["nodeclaims"] if "web/web-0" in c["pods"]]
    launched = len(instances(account["ec2"]))

    replacement = steps.launch_replacement({"input": {**command, "identify": found}, "execution": "run-1"}, Context())
    assert replacement["nodeclaims"] == [for_them] and replacement["adopted"] == [for_them]
    assert len(instances(account["ec2"])) == launched  # nothing launched a second time


def test_the_planner_adopts_an_unrecorded_launch_and_terminates_a_second_instance_for_a_nodeclaim(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_machine(monkeypatch)
    cluster, claim = launched_node(account)
    ec2 = account["ec2"]
    [first] = instances(ec2)
    # A second instance for the same NodeClaim (an earlier attempt's launch), and a NodeClaim whose provisioner died
    # after CreateFleet: an instance tagged for it, nothing recorded.
    tags = [{"Key": t["Key"], "Value": t["Value"]} for t in first["Tags"]]
    second = ec2.run_instances(
        ImageId=first["ImageId"],
        MinCount=1,
        MaxCount=1,
        InstanceType=first["InstanceType"],
        SubnetId=first["SubnetId"],
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )["Instances"][0]["InstanceId"]
    orphan_tags = [t if t["Key"] != "nodewright.io/nodeclaim" else {**t, "Value": "unrecorded"} for t in tags]
    orphan = ec2.run_instances(
        ImageId=first["ImageId"],
        MinCount=1,
        MaxCount=1,
        InstanceType=first["InstanceType"],
        SubnetId=first["SubnetId"],
        TagSpecifications=[{"ResourceType": "instance", "Tags": orphan_tags}],
    )["Instances"][0]["InstanceId"]
    unrecorded = dict(cluster.nodeclaim(claim["name"]) or {})
    unrecorded["metadata"] = {**unrecorded["metadata"], "name": "unrecorded"}
    unrecorded["status"] = {}
    cluster.put(unrecorded)
    monkeypatch.setattr(termination, "GC_GRACE_SECONDS", -1)  # moto's launch times are now
    planner = load_handler("planner")
    planner._PORTS = planner.build_ports(cluster=cluster)

    tick = planner.handler({}, Context())
    assert tick["collected"] == [second]
    assert [r["nodeclaim"] for r in tick["repaired"] if r["kind"] == "adopt"] == ["unrecorded"]
    adopted = cluster.nodeclaim("unrecorded")
    assert adopted is not None and adopted["status"]["providerID"].endswith(orphan)
    states = {i["InstanceId"]: i["State"]["Name"] for i in instances(ec2)}
    assert states[first["InstanceId"]] == "running" and states[orphan] == "running"
