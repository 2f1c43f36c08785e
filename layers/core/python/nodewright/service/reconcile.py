"""The planner tick's reconciliation carried out: nodes given back, NodeClaims of vanished instances forgotten.

`disruption.reconcile` decides (pure); this module writes: a node restored loses nodewright's taint and cordon and its
NodeClaim its DisruptionReason condition; a NodeClaim whose instance is gone is deleted with its Node (finalizers
off: nothing is left to drain). Each repair is recorded as an event on the node and its NodeClaim and returned
for the tick's log. One repair that fails is reported and the others go on: a later tick tries again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.disruption.commands import DisruptionCommand
from nodewright.disruption.drain import DISRUPTED_TAINT_KEY
from nodewright.disruption.lease import Lease, why_void
from nodewright.disruption.reconcile import FORGET, Repair, lost_instances, restorations
from nodewright.disruption.state import ClusterState
from nodewright.ports import Cluster, Instance, NodeEvent
from nodewright.service.workflow import DISRUPTION_REASON

EVENT_REASONS = {"restore": "DisruptionRestored", FORGET: "InstanceGone"}


def reconcile(
    cluster: Cluster,
    state: ClusterState,
    dead: Mapping[str, tuple[Lease, str]],
    instances: Mapping[str, Instance],
    problems: list[str],
) -> tuple[list[dict[str, Any]], list[DisruptionCommand], set[str]]:
    """Repair what the tick finds out of place. `state.locked`: the NodeClaims under a live lease; `dead`: the leases
    found void this tick (name -> lease and its execution's status), for the reasons; `instances`: what EC2 reported
    for the fleet. Returns (the repairs done, as JSON; the InstanceStopping commands to start; the NodeClaims
    forgotten, which nothing else this tick may act on)."""
    now = state.now
    reasons = {lease.nodeclaim: why_void(lease, status, now) for lease, status in dead.values()}
    forget, stopping = lost_instances(state.fleet, instances, now)
    forgotten = {r.nodeclaim for r in forget}
    restore = [r for r in restorations(state.fleet, state.locked, reasons) if r.nodeclaim not in forgotten]
    done: list[Repair] = []
    for repair in [*restore, *forget]:
        try:
            _carry_out(cluster, repair)
        except Exception as error:  # a later tick tries again; the rest of the tick must go on
            problems.append(f"nodeclaim/{repair.nodeclaim}: {repair.kind}: {type(error).__name__}: {error}")
            continue
        done.append(repair)
    _record(cluster, done, now)
    repairs = [{"kind": r.kind, "nodeclaim": r.nodeclaim, "node": r.node, "reason": r.reason} for r in done]
    return repairs, stopping, forgotten


def _carry_out(cluster: Cluster, repair: Repair) -> None:
    if repair.kind == FORGET:
        if repair.node:
            cluster.delete_node(repair.node)
        cluster.delete_nodeclaim(repair.nodeclaim)
        return
    cluster.remove_node_taint(repair.node, DISRUPTED_TAINT_KEY)
    cluster.set_unschedulable(repair.node, False)
    cluster.set_nodeclaim_conditions(repair.nodeclaim, [], clear=[DISRUPTION_REASON])


def _record(cluster: Cluster, repairs: list[Repair], now: float) -> None:
    events: list[NodeEvent] = []
    for repair in repairs:
        reason = EVENT_REASONS[repair.kind]
        dedupe = f"{repair.kind}:{repair.nodeclaim}:{int(now // 60)}"
        if repair.node:
            events.append(NodeEvent(repair.node, reason, repair.reason, "Warning", dedupe))
        events.append(NodeEvent(repair.nodeclaim, reason, repair.reason, "Warning", dedupe, kind="NodeClaim"))
    if events:
        cluster.record_node_events(events)
