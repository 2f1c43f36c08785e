"""The workflow's termination side as Karpenter's: TerminateInstance deletes every Node of the NodeClaim (and never
a Node of another instance), the drain takes the node out of load balancers and Rollback puts it back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from test_workflow_service import EXECUTION, command, run, setup

from nodewright.service import workflow


def test_every_node_with_the_claims_provider_id_goes_and_no_other() -> None:
    cluster, _, _, ports = setup()
    old = cluster.objects[("Node", "", "node-old")]
    cluster.put({**old, "metadata": {**old["metadata"], "name": "node-old-twin"}})
    other = {**old, "metadata": {**old["metadata"], "name": "node-other"}}
    other["spec"] = {**old["spec"], "providerID": "aws:///us-east-1a/i-other"}
    cluster.put(other)
    state = command()
    run("identify", state, ports)
    workflow.STEPS["terminate"](state, EXECUTION, ports)
    assert ("Node", "", "node-old") not in cluster.objects
    assert ("Node", "", "node-old-twin") not in cluster.objects
    assert ("Node", "", "node-other") in cluster.objects
    assert cluster.log.index("delete node/node-old-twin") < cluster.log.index("delete nodeclaim/old")


LB = "node.kubernetes.io/exclude-from-external-load-balancers"


def test_the_drain_takes_the_node_out_of_load_balancers_and_rollback_puts_it_back() -> None:
    """Karpenter's terminator labels a node it drains node.kubernetes.io/exclude-from-external-load-balancers."""
    cluster, _, _, ports = setup()
    state = command()
    run("identify", state, ports)
    run("drain", state, ports)
    labels = cluster.objects[("Node", "", "node-old")]["metadata"]["labels"]
    assert labels[LB] == "nodewright"
    workflow.STEPS["rollback"]({**state, "error": {"Cause": "test"}}, EXECUTION, ports)
    assert LB not in cluster.objects[("Node", "", "node-old")]["metadata"]["labels"]


def test_terminate_marks_the_nodeclaim_instance_terminating_before_its_node_and_claim_go() -> None:
    """Karpenter's termination sets InstanceTerminating (True) on the NodeClaim once the cloud was asked to terminate
    its instance; the planner's budgets read it. It is written after the termination, before the deletions."""
    cluster, cloud, _, ports = setup()
    state = command()
    run("identify", state, ports)
    written: list[tuple[str, list[str], list[str]]] = []  # (claim, instances terminated then, its conditions after)
    original = cluster.set_nodeclaim_conditions

    def spy(name: str, conditions: Any, clear: Any = ()) -> None:
        original(name, conditions, clear)
        written.append((name, list(cloud.terminated), _conditions(cluster, name)))

    cluster.set_nodeclaim_conditions = spy  # type: ignore[method-assign]
    workflow.STEPS["terminate"](state, EXECUTION, ports)
    [(name, terminated, _)] = [w for w in written if "InstanceTerminating=True" in w[2]]
    assert name == "old" and terminated == ["i-old"]  # written once the cloud was asked to terminate
    log = cluster.log
    marked = max(i for i, line in enumerate(log) if line == "conditions nodeclaim/old")
    assert marked < log.index("delete node/node-old") < log.index("delete nodeclaim/old")


def _conditions(cluster: Any, name: str) -> list[str]:
    doc = cluster.objects.get(("NodeClaim", "", name)) or {}
    return [f"{c['type']}={c['status']}" for c in (doc.get("status") or {}).get("conditions") or []]


def test_the_volume_wait_ends_once_the_instance_is_gone_whatever_is_left_attached() -> None:
    """With no deadline (a drift without terminationGracePeriod) a VolumeAttachment left behind would hold the
    termination for ever; once EC2 has terminated the instance there is nothing left to detach from."""
    cluster, cloud, _, ports = setup()
    cluster.put(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": "csi-left"},
            "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-old", "source": {"persistentVolumeName": "pv"}},
        }
    )
    state = command("Drifted", deadline=None)
    run("identify", state, ports)
    state["identify"]["deadline"] = None  # as for a NodeClaim without terminationGracePeriod
    assert not workflow.STEPS["volumes"](state, EXECUTION, ports)["done"]
    cloud.instances["i-old"] = replace(cloud.instances["i-old"], state="stopped")  # still EC2's: still waited for
    assert not workflow.STEPS["volumes"](state, EXECUTION, ports)["done"]
    cloud.instances["i-old"] = replace(cloud.instances["i-old"], state="terminated")
    gone = workflow.STEPS["volumes"](state, EXECUTION, ports)
    assert gone["done"] and gone["pending"] == ["csi-left"] and "instance is gone" in gone["reason"]
