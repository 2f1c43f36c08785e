"""Interruption: one SQS message body (an EventBridge event) in, every decision with its reason out.

`handle_message()` is the interruption Lambda's one service call per record. In order:

1. Parse: the body must be JSON and an event of one of the five kinds (`interruption.messages`); anything
   else raises EventError naming the field, so the record fails and SQS redrives it to the dead-letter
   queue after its receives, where a person can read it.
2. Own: only when the event is one nodewright acts on and names instances. The instances' tags decide first
   (one DescribeInstances call, whatever the cluster's size): an instance without this cluster's ownership tag
   and a NodeClaim tag is not ours, and is decided without reading the cluster at all, which is what most
   of a region's EC2 state changes are. For the instances that are tagged, only their NodeClaims are read
   (by name), and their Nodes (by the name the claim recorded); a tagged instance whose NodeClaim is gone is
   not ours either. Instances of no NodeClaim are acknowledged and ignored: retrying would never make them
   ours. Without a Cloud port (tests, `explain-event`), the fleet is read and matched by providerID.
3. Trust (`interruption.trust`): a message of another account or region, or a warning received past its notice,
   is refused before anything is read; an instance EC2 contradicts (a Spot warning for an on-demand instance, a
   state change for an instance that runs) is refused on its own. Refused is acknowledged, logged and counted.
4. Decide (`interruption.decide`; deadlines count from receipt), then act, each step safe to repeat when SQS
   redelivers the message, and in this order, because the two-minute notice is what matters:
   start one workflow per command (execution names derive from the event id and NodeClaim, so a redelivery starts
   nothing: the port answers False); mark each interrupted NodeClaim for deletion, as Karpenter's interruption
   controller deletes it (its finalizer keeps it until the workflow is done, and should the workflow die, the
   planner restarts its deletion from that mark); then mark the offering unavailable (a Spot warning; the
   provisioner's TTL), where a failure is reported, not raised: the workflow has started, and a redelivery 180 s
   later would be past the notice; then record a Kubernetes event on each affected node (deduplicated by event id).
   Events are best effort too: failing the record for them would redrive a message whose workflows already run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.interruption.decide import Plan, decide, ignored_reason
from nodewright.interruption.messages import EventError, Message, parse_event
from nodewright.interruption.ownership import OwnedInstance, claimed_by_tags, owned_by_tags, owned_instances
from nodewright.interruption.trust import instance_refusal, message_refusal
from nodewright.ports import Clock, Cloud, Cluster, Instance, NodeEvent, StateStore, Workflows
from nodewright.service.provision.launch import UNAVAILABLE_TTL_SECONDS


@dataclass(frozen=True, slots=True)
class InterruptResult:
    """What one message led to: the plan, and per command whether its execution was started now (True) or
    existed already (False, a redelivery), by execution name."""

    plan: Plan
    executions: dict[str, bool] = field(default_factory=dict)
    events_recorded: int = 0
    events_error: str = ""
    unavailable_error: str = ""

    @property
    def message(self) -> Message:
        return self.plan.message

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe summary for logs and the handler's response."""
        message = self.plan.message
        decisions = []
        for d in self.plan.decisions:
            entry: dict[str, Any] = {"instance": d.instance_id, "action": d.action, "reason": d.reason}
            if d.nodeclaim:
                entry["nodeclaim"] = d.nodeclaim
            if d.node:
                entry["node"] = d.node
            if d.command is not None:
                name = d.command.execution_name()
                entry["execution"] = name
                entry["started"] = self.executions.get(name)
            decisions.append(entry)
        out: dict[str, Any] = {
            "event_id": message.id,
            "kind": message.kind,
            "action": self.plan.action,
            "reason": self.plan.reason,
            "decisions": decisions,
            "unavailable": [
                {"instance_type": t, "zone": z, "capacity_type": c, "reason": why}
                for (t, z, c), why in sorted(self.plan.unavailable.items())
            ],
            "started": sum(1 for started in self.executions.values() if started),
            "already_started": sum(1 for started in self.executions.values() if not started),
            "events_recorded": self.events_recorded,
        }
        if self.events_error:
            out["events_error"] = self.events_error
        if self.unavailable_error:
            out["unavailable_error"] = self.unavailable_error
        return out


def parse_body(body: str) -> Message:
    """The SQS body as a Message; EventError (path `body` for JSON that does not parse) otherwise."""
    try:
        document = json.loads(body)
    except (json.JSONDecodeError, TypeError) as error:
        raise EventError("body", f"not JSON ({error})") from None
    return parse_event(document)


def _owned_by_tags_first(
    instances: Sequence[Instance], cluster: Cluster, cluster_name: str
) -> dict[str, OwnedInstance]:
    """Ownership from the instances' tags, then only the NodeClaims (and Nodes) those tags name."""
    named = claimed_by_tags(instances, cluster_name)
    if not named:
        return {}
    claims = [c for name in sorted(set(named.values())) if (c := cluster.get_nodeclaim(name)) is not None]
    node_names = sorted({str((c.get("status") or {}).get("nodeName") or "") for c in claims} - {""})
    nodes = [n for name in node_names if (n := cluster.get_node(name)) is not None]
    owned = owned_instances(claims, nodes)
    tagged = [i for i in instances if i.id in named and i.id not in owned]
    owned.update(owned_by_tags(tagged, cluster_name, claims, nodes))
    return {i: o for i, o in owned.items() if i in named}


def handle_message(
    body: str,
    cluster: Cluster,
    state: StateStore,
    workflows: Workflows,
    clock: Clock,
    rebalance_mode: str,
    cloud: Cloud | None = None,
    cluster_name: str = "",
    trusted: tuple[str, str] | None = None,
) -> InterruptResult:
    """Handle one message body. `cloud` and `cluster_name` decide ownership by the instances' tags before the
    cluster is read, and what EC2 says of each instance is checked against the message (the Lambda always passes
    them); `trusted`: the (account, region) a message must come from (the Lambda's own; None only where no message
    is trusted or refused, in tests). Raises EventError for a malformed message; errors of the ports that decide
    (EC2, the API server, Step Functions) propagate so the record is retried."""
    message = parse_body(body)
    now = clock.now()
    owned: dict[str, OwnedInstance] = {}
    refused: dict[str, str] = {}
    why = message_refusal(message, *trusted, now) if trusted is not None else ""
    if why:
        refused = dict.fromkeys(message.instance_ids, why)
    elif message.instance_ids and ignored_reason(message) is None:
        if cloud is not None and cluster_name:
            instances = cloud.describe_instances(message.instance_ids)
            owned = _owned_by_tags_first(instances, cluster, cluster_name)
            refused = {i.id: r for i in instances if i.id in owned and (r := instance_refusal(message, i))}
        else:
            fleet = cluster.read_fleet()
            owned = owned_instances(fleet.nodeclaims, fleet.nodes)
    plan = decide(message, owned, rebalance_mode, now, refused)

    executions = {c.execution_name(): workflows.start(c.execution_name(), c.to_input()) for c in plan.commands}
    for command in plan.commands:
        if command.interruption:
            cluster.request_nodeclaim_deletion(command.nodeclaim)
    unavailable_error = ""
    if plan.unavailable:
        try:
            state.mark_unavailable(plan.unavailable, now, UNAVAILABLE_TTL_SECONDS)
        except Exception as exc:  # the workflow runs already; see the module docstring
            unavailable_error = f"{type(exc).__name__}: {exc}"
    recorded, error = _record_events(cluster, plan)
    return InterruptResult(plan, executions, recorded, error, unavailable_error)


def _record_events(cluster: Cluster, plan: Plan) -> tuple[int, str]:
    """A Kubernetes event on each node the message concerns; (how many were recorded, the error if they were not)."""
    events = [
        NodeEvent(
            node=d.node,
            reason=d.event_reason,
            message=d.reason,
            type="Warning" if d.command is not None and d.command.forceful else "Normal",
            dedupe=f"{plan.message.id}/{d.instance_id}",
        )
        for d in plan.decisions
        if d.notify and d.node
    ]
    if not events:
        return 0, ""
    try:
        cluster.record_node_events(events)
    except Exception as exc:  # events are best effort; see the module docstring
        return 0, f"{type(exc).__name__}: {exc}"
    return len(events), ""
