"""TerminateInstance deletes every Node of the NodeClaim (Karpenter's lifecycle termination: "should delete multiple
Nodes if multiple Nodes map to the NodeClaim"), and never a Node of another instance."""

from __future__ import annotations

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
