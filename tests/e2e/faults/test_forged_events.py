"""Issue 21, item 3: an interruption event nodewright cannot trust deletes nothing.

Three warnings reach the real queue through the paths a forger or a misroute would use: a Spot warning for an
on-demand instance (through EventBridge, as EC2 would send it), a Spot warning whose `time` is ten minutes old
(through EventBridge's PutEvents with that time), and one whose envelope names another account (straight onto the
queue). Bound proved: each is acknowledged (the queue drains, nothing reaches the dead-letter queue) and, once the
queue is empty, no execution has started, no NodeClaim is being deleted and every pod still runs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from test_disruption import Stack, fresh_warning, nodeclaims
from test_provisioning import converge, deployment, running
from worldkit import World, wait_for


def both_capacity_types(instance_type: str) -> list[dict[str, Any]]:
    return [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [instance_type]},
    ]


def test_forged_or_stale_spot_warnings_are_acknowledged_and_delete_nothing(
    local_world: World, namespace: str, stack: Stack, pool_factory: Any
) -> None:
    world = local_world
    pool = pool_factory(both_capacity_types("m6i.xlarge"))
    deployment(world, namespace, pool, "web", 1, "250m", "256Mi", nodeSelector={"karpenter.sh/capacity-type": "spot"})
    deployment(
        world, namespace, pool, "api", 1, "250m", "256Mi", nodeSelector={"karpenter.sh/capacity-type": "on-demand"}
    )
    converge(stack.provisioner, namespace, 2)
    claims = {c["metadata"]["labels"]["karpenter.sh/capacity-type"]: c for c in nodeclaims(world, pool)}
    assert sorted(claims) == ["on-demand", "spot"], claims
    [spot_node] = world.core.list_node(
        label_selector=f"karpenter.sh/nodepool={pool.name},karpenter.sh/capacity-type=spot"
    ).items
    spot_instance = spot_node.spec.provider_id.rsplit("/", 1)[-1]
    od_instance = claims["on-demand"]["status"]["providerID"].rsplit("/", 1)[-1]
    before = {e["name"] for e in stack.executions()}

    # A Spot warning for an on-demand instance, as EC2 would send it.
    stack.put_spot_warnings(od_instance)
    # A warning sent ten minutes ago: past its two-minute notice whenever it arrives.
    region = world.state.region
    stale = {
        "Source": "aws.ec2",
        "DetailType": "EC2 Spot Instance Interruption Warning",
        "Time": datetime.now(UTC) - timedelta(minutes=10),
        "Resources": [f"arn:aws:ec2:{region}:123456789012:instance/{spot_instance}"],
        "Detail": json.dumps({"instance-id": spot_instance, "instance-action": "terminate"}),
    }
    assert world.aws("events").put_events(Entries=[stale])["FailedEntryCount"] == 0
    # A warning in another account's envelope, straight onto the queue.
    stack.send_raw(json.dumps({**fresh_warning(spot_instance, world.state.region), "account": "999999999999"}))

    sqs = world.aws("sqs")

    def drained() -> bool:
        attributes = sqs.get_queue_attributes(QueueUrl=stack.outputs["InterruptionQueueUrl"], AttributeNames=["All"])
        counts = attributes["Attributes"]
        return counts["ApproximateNumberOfMessages"] == "0" and counts["ApproximateNumberOfMessagesNotVisible"] == "0"

    wait_for(drained, 60, "the three warnings to be acknowledged", interval=1)
    dead = sqs.receive_message(QueueUrl=stack.outputs["InterruptionDeadLetterQueueUrl"], MaxNumberOfMessages=10)
    ours = [m for m in dead.get("Messages", []) if spot_instance in m["Body"] or od_instance in m["Body"]]
    assert not ours, ours  # refused is acknowledged, not failed (another test's malformed message may be there)
    assert {e["name"] for e in stack.executions()} == before
    for claim in nodeclaims(world, pool):
        assert not claim["metadata"].get("deletionTimestamp"), claim["metadata"]
    node = world.core.read_node(spot_node.metadata.name)
    assert not node.spec.unschedulable
    assert all(t.key != "karpenter.sh/disrupted" for t in node.spec.taints or [])
    assert len(running(world, namespace)) == 2
