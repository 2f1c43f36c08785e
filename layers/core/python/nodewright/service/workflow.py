"""The disruption workflow's steps: one function per Step Functions task, each safe to run twice.

The state machine (infra/workflow.py) passes every task `{"input": <the execution's state>, "execution": <its
name>}`. The state starts as a `DisruptionCommand` document and gathers each step's result under its own key
(`identify`, `replacement`, `drain`, `terminate`). A step returns a JSON-safe dict; a step that cannot go on
raises `DisruptionFailed`, which the state machine catches and sends to `rollback`.

Idempotency: the lock's owner is the execution name, so a re-run of IdentifyCandidate re-enters its own lock;
the replacement's NodeClaims are named from `replace-<execution>` (the provisioner's own idempotency does the
rest); taints, cordons, evictions, terminations and deletions are all no-ops the second time; events carry the
execution name as their dedupe key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.catalog.types import InstanceTypeSource
from nodewright.disruption.commands import PREPARE, DisruptionCommand
from nodewright.disruption.drain import DISRUPTED_TAINT_KEY, drain_pod, drain_round
from nodewright.disruption.fleet import FleetNode, fleet_nodes
from nodewright.disruption.identify import BLOCKED, GONE, PROCEED, identify
from nodewright.model.loader import load_documents
from nodewright.model.nodepool import NodePool
from nodewright.ports import BLOCKED as EVICTION_BLOCKED
from nodewright.ports import EVICTED, Clock, Cloud, Cluster, NodeEvent, StateStore
from nodewright.service import provision as provisioning
from nodewright.service.batch import Batch

LOCKED = "locked"
REPLACEMENT_TIMEOUT_SECONDS = 15 * 60  # as long as the provisioner waits for any node to register
LOCK_MIN_SECONDS = 2 * 3600
_LIVE_STATES = frozenset({"pending", "running"})


class DisruptionFailed(Exception):
    """The workflow cannot go on (the replacement cannot launch or never became Ready); roll back."""


@dataclass(frozen=True, slots=True)
class Ports:
    """What the steps talk to. `catalog` is only needed by `launch_replacement`."""

    cluster: Cluster
    cloud: Cloud
    state: StateStore
    clock: Clock
    catalog: InstanceTypeSource | None = None


def lock_name(nodeclaim: str) -> str:
    return f"nodeclaim/{nodeclaim}"


def _pools(docs: Sequence[Mapping[str, Any]]) -> dict[str, NodePool]:
    inputs, _ = load_documents(list(docs), "cluster")
    return {p.name: p for p in inputs.nodepools}


def _find(fleet: Sequence[FleetNode], nodeclaim: str) -> FleetNode | None:
    return next((n for n in fleet if n.nodeclaim == nodeclaim), None)


def _event(ports: Ports, node: str, reason: str, message: str, execution: str, kind: str = "Normal") -> None:
    if node:
        ports.cluster.record_node_events([NodeEvent(node, reason, message, kind, dedupe=f"{execution}:{reason}")])


def _identified(state: Mapping[str, Any]) -> Mapping[str, Any]:
    found = state.get("identify")
    if not isinstance(found, Mapping):
        raise DisruptionFailed("the execution state has no `identify` result; IdentifyCandidate must run first")
    return found


# ------------------------------------------------------------------------------------------- steps


def identify_candidate(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """IdentifyCandidate: the NodeClaim still exists, this execution holds its lock, and (for voluntary reasons)
    nothing blocks it. Output `outcome`: proceed | gone | locked | blocked, with `reason`, the pods that must
    move, the deadline and whether the disruption is urgent (replacement and drain side by side)."""
    command = DisruptionCommand.from_input(state)
    now = ports.clock.now()
    view = ports.cluster.read_fleet()
    pools = _pools(view.nodepools)
    fleet = fleet_nodes(view.nodeclaims, view.nodes, pools)
    node = _find(fleet, command.nodeclaim)
    if node is None:
        return {"outcome": GONE, "reason": f"nodeclaim/{command.nodeclaim} no longer exists"}
    deadline_hint = command.deadline if command.deadline is not None else now
    ttl = max(LOCK_MIN_SECONDS, int(deadline_hint - now) + (node.termination_grace_period or 0) + 3600)
    holder = ports.state.acquire_lock(lock_name(node.nodeclaim), execution, now, ttl)
    if holder != execution:
        reason = f"execution {holder} is already disrupting nodeclaim/{node.nodeclaim}"
        _event(ports, node.node, "DisruptionSkipped", reason, execution)
        return {"outcome": LOCKED, "reason": reason}
    pods = ports.cluster.pods_on_node(node.node) if node.node else []
    in_pool = [n for n in fleet if n.nodepool == node.nodepool]
    decision = identify(
        command,
        node,
        pods,
        pools.get(node.nodepool),
        len(in_pool),
        sum(1 for n in in_pool if n.disrupting and n.nodeclaim != node.nodeclaim),
        now,
    )
    if decision.outcome == BLOCKED:
        ports.state.release_lock(lock_name(node.nodeclaim), execution)
        _event(ports, node.node, "DisruptionBlocked", f"{command.reason}: {decision.reason}", execution, "Warning")
    elif decision.outcome == PROCEED:
        _event(ports, node.node, "DisruptionStarted", decision.reason, execution)
    return {
        "outcome": decision.outcome,
        "reason": decision.reason,
        "node": node.node,
        "instance_id": node.instance_id or command.instance_id,
        "nodepool": node.nodepool,
        "moving": list(decision.moving),
        "deadline": decision.deadline,
        "urgent": decision.urgent,
        "prepare_only": command.action == PREPARE,
        "started_at": now,
    }


def launch_replacement(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """LaunchReplacement: taint the node (NoSchedule; PreferNoSchedule when only preparing for a rebalance),
    then launch only what its moving pods need through the provisioning service. Raises DisruptionFailed when
    pods cannot be placed, unless the disruption is urgent (the node goes anyway; the drain must not wait)."""
    found = _identified(state)
    node = str(found.get("node") or "")
    effect = "PreferNoSchedule" if found.get("prepare_only") else "NoSchedule"
    if node:
        ports.cluster.add_node_taint(node, DISRUPTED_TAINT_KEY, "", effect)
    if not found.get("moving"):
        return {"nodeclaims": [], "reason": "no pods to move: nothing to launch", "launched_at": ports.clock.now()}
    if ports.catalog is None:
        raise DisruptionFailed("no instance catalog configured for LaunchReplacement")
    batch = Batch(batch_id=replacement_batch(execution), cluster="", pods=())
    result = provisioning.provision(
        batch, ports.cluster, ports.cloud, ports.state, ports.clock, ports.catalog, displaced_node=node
    )
    claims = sorted({c.name for c in result.launched})
    stuck = [d for d in result.decisions if d.action in ("unschedulable", "throttled", "launch-failed")]
    summary = f"launched {len(claims)} nodeclaim(s) for {len(found.get('moving') or [])} pod(s)"
    if stuck:
        why = "; ".join(f"{d.subject}: {d.reason}" for d in stuck[:5])
        if not found.get("urgent"):
            raise DisruptionFailed(f"replacement for node {node} cannot launch: {why}")
        summary += f"; {len(stuck)} could not be placed ({why})"
    _event(ports, node, "ReplacementLaunched", summary, execution)
    return {"nodeclaims": claims, "reason": summary, "launched_at": ports.clock.now()}


def replacement_batch(execution: str) -> str:
    """The batch id of an execution's replacement: NodeClaims named from it are found again on a re-run."""
    return f"replace-{execution}"


def check_replacement(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """WaitForReplacement's check: every replacement NodeClaim has a Ready node. Finishes their registration
    (removes karpenter.sh/unregistered) so pods can land at once. Raises DisruptionFailed when a replacement
    disappeared (its launch failed) or is not Ready REPLACEMENT_TIMEOUT_SECONDS after launch."""
    replacement = state.get("replacement") or {}
    names = list(replacement.get("nodeclaims") or [])
    now = ports.clock.now()
    if not names:
        return {"ready": True, "waiting_for": []}
    view = ports.cluster.read_fleet()
    inputs, _ = load_documents([*view.nodepools, *view.nodeclaims, *view.nodes], "cluster")
    mine = [c for c in inputs.nodeclaims if c.name in names]
    provisioning.finish_registrations(
        mine, inputs.nodes, ports.cluster, now, provisioning.ProvisionResult(replacement_batch(execution))
    )
    fleet = {n.nodeclaim: n for n in fleet_nodes(view.nodeclaims, view.nodes, _pools(view.nodepools))}
    missing = [n for n in names if n not in fleet]
    if missing:
        raise DisruptionFailed(f"replacement nodeclaim(s) {', '.join(missing)} were deleted: their launch failed")
    waiting = [n for n in names if not fleet[n].ready]
    if waiting and now - float(replacement.get("launched_at") or now) > REPLACEMENT_TIMEOUT_SECONDS:
        raise DisruptionFailed(
            f"replacement nodeclaim(s) {', '.join(waiting)} not Ready {REPLACEMENT_TIMEOUT_SECONDS}s after launch"
        )
    return {"ready": not waiting, "waiting_for": waiting}


def drain(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """CordonAndDrain, and each WaitForDrain round: cordon and taint the node, evict what may go now (a 429 is
    counted and asked again next round), delete what is left once the deadline has passed. `done` when no pod
    that must leave is left.

    The totals add this round to the previous round's: a round that evicted and then failed is retried with
    the previous state, so `evicted_total` counts the evictions of rounds that succeeded (a lower bound).
    `left_total` is read from the cluster instead: how many of the pods that must move are no longer bound to
    the node, however they went."""
    found = _identified(state)
    node = str(found.get("node") or "")
    now = ports.clock.now()
    if not node:
        return {"done": True, "reason": "the NodeClaim never registered a node: nothing to drain"}
    ports.cluster.add_node_taint(node, DISRUPTED_TAINT_KEY, "", "NoSchedule")
    ports.cluster.set_unschedulable(node, True)
    deadline = found.get("deadline")
    pods = ports.cluster.pods_on_node(node)
    work = drain_round(pods, now, float(deadline) if deadline is not None else None)
    left = set(found.get("moving") or ()) - {drain_pod(p).key for p in pods}
    outcomes = {key: ports.cluster.evict_pod(*key.split("/", 1)) for key in work.evict}
    for key in work.delete:
        ports.cluster.delete_pod(*key.split("/", 1))
    evicted = sorted(k for k, v in outcomes.items() if v == EVICTED)
    blocked = sorted(k for k, v in outcomes.items() if v == EVICTION_BLOCKED)
    previous = state.get("drain") or {}
    if work.done:
        _event(ports, node, "Drained", "all pods that must leave have left", execution)
    elif not previous:
        _event(ports, node, "DrainStarted", work.reason, execution)
    if work.delete:
        _event(ports, node, "DrainDeadlinePassed", f"deleted {len(work.delete)} pod(s)", execution, "Warning")
    return {
        "done": work.done,
        "reason": work.reason,
        "evicted": evicted,
        "blocked": blocked,
        "deleted": list(work.delete),
        "waiting": dict(work.waiting),
        "started_at": float(previous.get("started_at") or now),
        "rounds": int(previous.get("rounds") or 0) + 1,
        "evicted_total": int(previous.get("evicted_total") or 0) + len(evicted),
        "blocked_total": int(previous.get("blocked_total") or 0) + len(blocked),
        "left_total": len(left),
    }


def terminate_instance(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """TerminateInstance: terminate the instance, delete the Node and the NodeClaim, release the lock."""
    command = DisruptionCommand.from_input(state)
    found = _identified(state)
    node = str(found.get("node") or "")
    instance = str(found.get("instance_id") or "")
    if instance:
        ports.cloud.terminate([instance])
    _event(ports, node, "Terminated", f"{command.reason}: instance {instance or '-'} terminated", execution)
    if node:
        ports.cluster.delete_node(node)
    ports.cluster.delete_nodeclaim(command.nodeclaim)
    ports.state.release_lock(lock_name(command.nodeclaim), execution)
    return {"terminated": instance, "node": node, "nodeclaim": command.nodeclaim, "at": ports.clock.now()}


def release(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """ReleaseLock: the end of a workflow that keeps the node (a rebalance only prepares its replacement)."""
    command = DisruptionCommand.from_input(state)
    ports.state.release_lock(lock_name(command.nodeclaim), execution)
    return {"released": lock_name(command.nodeclaim)}


def rollback(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """Rollback: if the instance still runs, untaint and uncordon its node; terminate and delete replacement
    NodeClaims no pod landed on; release the lock. Returns what it did; the state machine then fails with
    the original cause."""
    command = DisruptionCommand.from_input(state)
    found = state.get("identify") or {}
    node = str(found.get("node") or command.node)
    instance = str(found.get("instance_id") or command.instance_id)
    cause = str((state.get("error") or {}).get("Cause") or "")
    restored = False
    if node and instance and any(i.state in _LIVE_STATES for i in ports.cloud.describe_instances([instance])):
        ports.cluster.remove_node_taint(node, DISRUPTED_TAINT_KEY)
        ports.cluster.set_unschedulable(node, False)
        restored = True
    removed = []
    view = ports.cluster.read_fleet()
    fleet = {n.nodeclaim: n for n in fleet_nodes(view.nodeclaims, view.nodes, _pools(view.nodepools))}
    batch = replacement_batch(execution)
    for doc in view.nodeclaims:
        metadata = doc.get("metadata") or {}
        if (metadata.get("annotations") or {}).get(provisioning.BATCH_ANNOTATION) != batch:
            continue
        name = str(metadata.get("name", ""))
        replacement = fleet.get(name)
        if replacement is not None and replacement.node and _has_workload(ports.cluster.pods_on_node(replacement.node)):
            continue
        ids = [replacement.instance_id] if replacement is not None and replacement.instance_id else []
        ids = ids or [i.id for i in ports.cloud.instances_of_nodeclaim(name)]
        if ids:
            ports.cloud.terminate(ids)
        if replacement is not None and replacement.node:
            ports.cluster.delete_node(replacement.node)
        ports.cluster.delete_nodeclaim(name)
        removed.append(name)
    ports.state.release_lock(lock_name(command.nodeclaim), execution)
    message = f"rolled back ({cause[:300] or 'no cause given'}); node restored: {restored}; removed {removed or 'none'}"
    _event(ports, node, "DisruptionRolledBack", message, execution, "Warning")
    return {"restored": restored, "removed_replacements": sorted(removed), "cause": cause}


def _has_workload(pods: Sequence[Mapping[str, Any]]) -> bool:
    return any(not drain_pod(p).stays for p in pods)


STEPS = {
    "identify": identify_candidate,
    "launch_replacement": launch_replacement,
    "check_replacement": check_replacement,
    "drain": drain,
    "terminate": terminate_instance,
    "release": release,
    "rollback": rollback,
}
