"""The disruption workflow's steps: one function per Step Functions task, each safe to run twice.

The state machine (infra/workflow.py) passes every task `{"input": <the execution's state>, "execution": <its
name>}`. The state starts as a `DisruptionCommand` document and gathers each step's result under its own key
(`identify`, `replacement`, `drain`, `volumes`, `terminate`). A step returns a JSON-safe dict; a step that cannot
go on raises `DisruptionFailed`, which the state machine catches and sends to `rollback`.

Leases (`disruption.lease`, `service.leases`): IdentifyCandidate takes each node's lease for this execution, taking
over a holder whose execution no longer runs, and, for an interruption, any holder that is not one. Every later step
renews the lease before it acts and raises `LeaseLost` when another execution holds it: the state machine then
ends `Superseded`, without Rollback, since the node is that execution's now. An interruption whose lease cannot be
written (the state store refuses) goes on without it: the instance goes either way.

Idempotency: the lease's owner is the execution name, so a re-run of IdentifyCandidate re-enters its own lease;
the replacement's NodeClaims are named from `replace-<execution>` (the provisioner's own idempotency does the
rest); taints, cordons, evictions, terminations and deletions are all no-ops the second time; events carry the
execution name as their dedupe key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.catalog.types import InstanceTypeSource
from nodewright.disruption.commands import PREPARE, DisruptionCommand, Replacement, Target
from nodewright.disruption.drain import DISRUPTED_TAINT_KEY, drain_pod, drain_round
from nodewright.disruption.fleet import PROTECTED_UNTIL_ANNOTATION, FleetNode, fleet_nodes
from nodewright.disruption.identify import BLOCKED, GONE, PROCEED, identify
from nodewright.disruption.lease import lock_name
from nodewright.disruption.state import DisruptionSettings
from nodewright.disruption.volumes import (
    AWAITING,
    VOLUMES_DETACHED,
    pending_attachments,
    undrainable_claims,
    volume_wait,
)
from nodewright.model.conditions import FALSE, TRUE, Condition, rfc3339
from nodewright.model.loader import load_documents
from nodewright.model.nodepool import NodePool
from nodewright.ports import BLOCKED as EVICTION_BLOCKED
from nodewright.ports import EVICTED, Clock, Cloud, Cluster, NodeEvent, StateStore, Workflows
from nodewright.scheduling import Results
from nodewright.service import leases
from nodewright.service import provision as provisioning
from nodewright.service.batch import Batch

LOCKED = "locked"
# Set on a node as its drain starts (Karpenter's terminator does the same, with its own name as the value).
EXCLUDE_BALANCERS_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
EXCLUDE_BALANCERS_VALUE = "nodewright"
INVALIDATED = "invalidated"
DISRUPTION_REASON = "DisruptionReason"  # the NodeClaim condition Karpenter sets on the nodes a command takes away
# Set (True) on the NodeClaim once its instance's termination was asked for, as Karpenter's termination does.
INSTANCE_TERMINATING = "InstanceTerminating"
REPLACEMENT_TIMEOUT_SECONDS = 15 * 60  # as long as the provisioner waits for any node to register
# A rebalance's early replacement is kept (and the node softly tainted) at least this long, or the NodePool's
# consolidateAfter when longer: a Spot warning often follows a recommendation within minutes.
PREPARE_PROTECTION_SECONDS = 600
# Drain rounds: every 10 s for the first ten minutes, then every minute, so a PodDisruptionBudget that holds a node
# for days fits in one execution's history (Step Functions keeps 25,000 events).
DRAIN_POLL_SECONDS = 10
DRAIN_SLOW_POLL_SECONDS = 60
DRAIN_FAST_ROUNDS = 60
_LIVE_STATES = frozenset({"pending", "running"})


class DisruptionFailed(Exception):
    """The workflow cannot go on (the replacement cannot launch or never became Ready); roll back."""


class LeaseLost(Exception):
    """Another execution holds a node of this one (an interruption took it, or this execution was judged dead): stand
    down without touching the node."""


class PlannerBusy(Exception):
    """The one planner of new capacity is busy: LaunchReplacement is retried (never read as "nothing to launch")."""


@dataclass(frozen=True, slots=True)
class Ports:
    """What the steps talk to. `catalog` is only needed by `launch_replacement`."""

    cluster: Cluster
    cloud: Cloud
    state: StateStore
    clock: Clock
    catalog: InstanceTypeSource | None = None
    settings: DisruptionSettings = field(default_factory=DisruptionSettings)
    # Whether a lease's execution still runs; without it (dry runs, tests) every unexpired holder counts as alive.
    workflows: Workflows | None = None


def _pools(docs: Sequence[Mapping[str, Any]]) -> dict[str, NodePool]:
    inputs, _ = load_documents(list(docs), "cluster")
    return {p.name: p for p in inputs.nodepools}


def _event(
    ports: Ports, node: str, reason: str, message: str, execution: str, level: str = "Normal", nodeclaim: str = ""
) -> None:
    """An event on the node and, when named, on its NodeClaim (Karpenter records disruption events on both)."""
    dedupe = f"{execution}:{reason}"
    events = [NodeEvent(node, reason, message, level, dedupe)] if node else []
    if nodeclaim:
        events.append(NodeEvent(nodeclaim, reason, message, level, dedupe, kind="NodeClaim"))
    if events:
        ports.cluster.record_node_events(events)


def _identified(state: Mapping[str, Any]) -> Mapping[str, Any]:
    found = state.get("identify")
    if not isinstance(found, Mapping):
        raise DisruptionFailed("the execution state has no `identify` result; IdentifyCandidate must run first")
    return found


def _targets(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Each node's own state document, as IdentifyCandidate made them (one per node of the command)."""
    found = _identified(state)
    targets = found.get("targets")
    if isinstance(targets, list) and targets:
        return [t for t in targets if isinstance(t, Mapping)]
    return [state]


# ------------------------------------------------------------------------------------------- steps


def identify_candidate(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """IdentifyCandidate: the NodeClaims still exist, this execution holds all their leases, a decision the planner
    made is still valid against the cluster now (emptiness, consolidation), and (for voluntary reasons) nothing
    blocks it. Output `outcome`: proceed | gone | locked | blocked | invalidated, with `reason`, the pods that must
    move, the deadline, whether the disruption is urgent (replacement and drain side by side), and `targets`: one
    state document per node, which the drain-and-terminate Map runs on. `lease` says how the nodes are held: "held",
    or why an interruption goes on without its leases."""
    command = DisruptionCommand.from_input(state)
    now = ports.clock.now()
    view = ports.cluster.read_fleet()
    pools = _pools(view.nodepools)
    fleet = {n.nodeclaim: n for n in fleet_nodes(view.nodeclaims, view.nodes, pools)}
    node = fleet.get(command.nodeclaim)
    if node is None:
        return {"outcome": GONE, "reason": f"nodeclaim/{command.nodeclaim} no longer exists"}
    holder, unleased = _lease_all(ports, command, execution, now)
    if holder:
        reason = f"execution {holder} is already disrupting a node of this command"
        _event(ports, node.node, "DisruptionSkipped", reason, execution)
        return {"outcome": LOCKED, "reason": reason}
    others = frozenset() if command.forceful else _held_by_others(ports, execution, now)
    if command.validated:
        why = _validate(command, ports, now, others)
        if why:
            _release_all(ports, command.targets, execution)
            message = f"{command.reason} ({command.method}) no longer holds: {why}"
            _event(ports, node.node, "DisruptionInvalidated", message, execution, nodeclaim=node.nodeclaim)
            return {"outcome": INVALIDATED, "reason": why}
    pods = ports.cluster.pods_on_node(node.node) if node.node else []
    in_pool = [n for n in fleet.values() if n.nodepool == node.nodepool and n.initialized]
    ours = {t.nodeclaim for t in command.targets}
    disrupting = sum(
        1
        for n in in_pool
        if n.nodeclaim not in ours and (n.disrupting or n.deleting or n.nodeclaim in others or not n.ready)
    )
    pool = pools.get(node.nodepool)
    decision = identify(command, node, pods, pool, len(in_pool), disrupting, now)
    if decision.outcome == BLOCKED:
        _release_all(ports, command.targets, execution)
        _event(ports, node.node, "DisruptionBlocked", f"{command.reason}: {decision.reason}", execution, "Warning")
    elif decision.outcome == PROCEED:
        _event(ports, node.node, "DisruptionStarted", decision.reason, execution)
    found: dict[str, Any] = {
        "outcome": decision.outcome,
        "reason": decision.reason,
        "node": node.node,
        "instance_id": node.instance_id or command.instance_id,
        "nodepool": node.nodepool,
        "moving": list(decision.moving),
        "deadline": decision.deadline,
        "urgent": decision.urgent,
        "interruption": command.interruption,
        "lease": f"not held: {unleased}" if unleased else "held",
        "prepare_only": command.action == PREPARE,
        "protect_seconds": _protection(pool),
        "started_at": now,
    }
    if decision.outcome == PROCEED:
        found["targets"] = _target_states(state, command, found, fleet, ports, now)
    return found


def _protection(pool: NodePool | None) -> int:
    """How long a rebalance's early replacement is protected: the pool's consolidateAfter, at least ten minutes."""
    after = pool.disruption.consolidate_after_seconds if pool is not None else None
    return max(PREPARE_PROTECTION_SECONDS, after or 0)


def _lease_all(ports: Ports, command: DisruptionCommand, execution: str, now: float) -> tuple[str, str]:
    """Take every target's lease for this execution. Returns ("", "") when all are ours; (holder, "") when another
    execution keeps one (the leases taken are given back); ("", why) when an interruption could not write its leases
    and goes on without them (a voluntary command raises instead, and the state machine retries)."""
    taken: list[Target] = []
    try:
        for target in command.targets:
            holder = leases.acquire(
                ports.state, ports.workflows, lock_name(target.nodeclaim), execution, now, command.interruption
            )
            if holder:
                _release_all(ports, taken, execution)
                return holder, ""
            taken.append(target)
    except Exception as error:  # the state store's failure: an interruption must not wait for it
        if not command.interruption:
            raise
        return "", f"{type(error).__name__}: {error}"
    return "", ""


def _held_by_others(ports: Ports, execution: str, now: float) -> frozenset[str]:
    """The NodeClaims other executions hold (their budgets count them as being disrupted)."""
    return frozenset(
        lease.nodeclaim for lease in ports.state.leases(now).values() if lease.owner != execution and lease.nodeclaim
    )


def hold(state: Mapping[str, Any], execution: str, ports: Ports) -> None:
    """Renew this execution's lease on every node of `state` before a step acts; raises LeaseLost when another
    execution holds one. An interruption whose lease cannot be written goes on (the instance goes either way)."""
    command = DisruptionCommand.from_input(state)
    held = _renewed(command, execution, ports)
    lost = [t.nodeclaim for t in command.targets if t.nodeclaim not in held]
    if lost:
        holder = ports.state.lease(lock_name(lost[0]), ports.clock.now())
        by = holder.owner if holder is not None else "another execution"
        raise LeaseLost(f"{by} now holds nodeclaim/{lost[0]}; this execution stands down")


def _renewed(command: DisruptionCommand, execution: str, ports: Ports) -> set[str]:
    """The command's NodeClaims whose lease this execution holds, each renewed now. An interruption whose leases
    cannot be written counts every node as its own; anything else raises the state store's error (retried)."""
    now = ports.clock.now()
    held: set[str] = set()
    for target in command.targets:
        try:
            ours = leases.renew(ports.state, lock_name(target.nodeclaim), execution, now, command.interruption)
        except Exception:  # the state store's failure
            if not command.interruption:
                raise
            ours = True
        if ours:
            held.add(target.nodeclaim)
    return held


def _release_all(ports: Ports, targets: Sequence[Target], execution: str) -> None:
    for target in targets:
        ports.state.release_lock(lock_name(target.nodeclaim), execution)


def _validate(command: DisruptionCommand, ports: Ports, now: float, others: frozenset[str]) -> str:
    """The decision against the cluster now (see `disruption.validation`); "" when it still holds."""
    from nodewright.disruption.state import cluster_state
    from nodewright.disruption.validation import validate
    from nodewright.service.plan import node_class_bounds  # the planner imports this module (a cycle)

    if ports.catalog is None:
        raise DisruptionFailed("no instance catalog configured for IdentifyCandidate's validation")
    view = ports.cluster.read()
    documents = [*view.documents, *view.unbound_pods.values()]
    loaded = load_documents(documents, "cluster", summaries=False, buffers=view.buffers)
    # The snapshot the planner's tick decided on: its EC2NodeClasses' zones and capacity reservations (without
    # them a consolidation into a reservation finds no such offering and a reserved candidate has no price), and
    # the offerings EC2 refused lately, marked after the reservations as the tick marks them.
    zones, reservations = node_class_bounds(ports.cloud, loaded[0].nodeclasses)
    snapshot, _ = cluster_state(
        documents,
        ports.catalog.instance_types(),
        now,
        locked=others,
        settings=ports.settings,
        class_zones=zones,
        loaded=loaded,
        reservations=reservations,
        unavailable=ports.state.unavailable_offerings(now),
    )
    return validate(command, snapshot)


def _target_states(
    state: Mapping[str, Any],
    command: DisruptionCommand,
    first: Mapping[str, Any],
    fleet: Mapping[str, FleetNode],
    ports: Ports,
    now: float,
) -> list[dict[str, Any]]:
    """One state document per node of the command: the command narrowed to that node, with its own `identify`
    (its pods, its deadline). Each NodeClaim gets Karpenter's DisruptionReason condition."""
    base = {k: v for k, v in state.items() if k not in ("identify", "others", "replacement")}
    out = []
    for target in command.targets:
        member = fleet.get(target.nodeclaim)
        if member is None:
            continue
        if target.nodeclaim == command.nodeclaim:
            moving, deadline = list(first["moving"]), first["deadline"]
        else:
            pods = ports.cluster.pods_on_node(member.node) if member.node else []
            moving = sorted(p.key for p in map(drain_pod, pods) if not p.stays)
            grace = member.termination_grace_period
            deadline = command.requested_at + grace if grace is not None else command.deadline
        ports.cluster.set_nodeclaim_conditions(
            member.nodeclaim, [Condition(DISRUPTION_REASON, TRUE, command.reason, f"{command.method or 'workflow'}")]
        )
        doc = {**base, "nodeclaim": member.nodeclaim, "node": member.node, "instance_id": member.instance_id}
        doc["others"], doc["replacement"] = [], None
        doc["identify"] = {
            "outcome": PROCEED,
            "reason": first["reason"],
            "node": member.node,
            "instance_id": member.instance_id,
            "nodepool": member.nodepool,
            "moving": moving,
            "deadline": deadline,
            "urgent": False,
            "prepare_only": False,
            "started_at": now,
        }
        out.append(doc)
    return out


def launch_replacement(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """LaunchReplacement: taint the command's nodes (NoSchedule; PreferNoSchedule when only preparing for a
    rebalance), then launch only what their moving pods need through the provisioning service; a consolidation
    launches only within the cheaper offerings it decided. This command's moving pods that another NodeClaim already
    has room for make that claim a replacement too (adopted: WaitForReplacement waits for it to be Ready); the
    claims other commands' pods wait on are theirs, never adopted. Raises PlannerBusy
    when the planner lock is held or was lost (retried), DisruptionFailed when pods cannot be placed, unless the
    disruption is urgent (the node goes anyway; the drain must not wait). A rebalance's early replacement carries
    `nodewright.io/protected-until`, the end of its protection window."""
    found = _identified(state)
    command = DisruptionCommand.from_input(state)
    targets = _targets(state)
    hold(state, execution, ports)
    effect = "PreferNoSchedule" if found.get("prepare_only") else "NoSchedule"
    nodes = [str((t.get("identify") or found).get("node") or "") for t in targets]
    for node in filter(None, nodes):
        ports.cluster.add_node_taint(node, DISRUPTED_TAINT_KEY, "", effect)
    moving = [key for t in targets for key in (t.get("identify") or found).get("moving") or []]
    if not moving:
        return {"nodeclaims": [], "reason": "no pods to move: nothing to launch", "launched_at": ports.clock.now()}
    if ports.catalog is None:
        raise DisruptionFailed("no instance catalog configured for LaunchReplacement")
    plan_filter = _within(command.replacement) if command.replacement is not None else None
    batch = Batch(batch_id=replacement_batch(execution), cluster="", pods=())
    annotations: dict[str, str] = {}
    if found.get("prepare_only"):
        # Emptiness and consolidation leave the early replacement alone while a Spot warning may still follow.
        until = ports.clock.now() + float(found.get("protect_seconds") or PREPARE_PROTECTION_SECONDS)
        annotations[PROTECTED_UNTIL_ANNOTATION] = rfc3339(until)
    result = provisioning.provision(
        batch,
        ports.cluster,
        ports.cloud,
        ports.state,
        ports.clock,
        ports.catalog,
        displaced_nodes=[n for n in nodes if n],
        plan_filter=plan_filter,
        one_claim_in=command.replacement.nodepool if command.replacement is not None else "",
        claim_annotations=annotations,
    )
    busy = [d for d in result.decisions if d.action == "busy"]
    if busy:
        # Never "nothing to launch": the node would be drained with its pods' room never planned.
        raise PlannerBusy(f"replacement for node(s) {', '.join(filter(None, nodes))} not planned yet: {busy[0].reason}")
    launched = sorted({c.name for c in result.launched})
    # Pods another NodeClaim already has room for (a rebalance's early replacement, a batch's claim): that claim is
    # this workflow's replacement too, and the drain waits until it is Ready. Only this command's moving pods count:
    # the provisioning also sees the pods of other commands' tainted nodes, waiting on their own replacements,
    # which this execution must neither wait for nor roll back.
    ours = set(moving)
    waiting = {pod: claim for pod, claim in result.waiting.items() if pod in ours}
    adopted = sorted(set(waiting.values()) - set(launched))
    claims = sorted({*launched, *adopted})
    stuck = [d for d in result.decisions if d.action in ("unschedulable", "throttled", "launch-failed")]
    summary = f"launched {len(launched)} nodeclaim(s) for {len(moving)} pod(s)"
    if adopted:
        summary += f"; {len(waiting)} pod(s) wait on nodeclaim(s) {', '.join(adopted)}"
    if stuck:
        why = "; ".join(f"{d.subject}: {d.reason}" for d in stuck[:5])
        if not found.get("urgent"):
            raise DisruptionFailed(f"replacement for node(s) {', '.join(filter(None, nodes))} cannot launch: {why}")
        summary += f"; {len(stuck)} could not be placed ({why})"
    for claim in launched:
        _event(ports, "", "DisruptionLaunching", f"Launching NodeClaim: {command.reason}", execution, nodeclaim=claim)
    for node in filter(None, nodes):
        _event(ports, node, "ReplacementLaunched", summary, execution)
    return {"nodeclaims": claims, "adopted": adopted, "reason": summary, "launched_at": ports.clock.now()}


def _within(replacement: Replacement) -> Callable[[Results], Results | str]:
    """The provisioning filter of a consolidation: its one replacement, within the offerings it decided."""
    from nodewright.disruption.consolidation import restrict

    return lambda results: restrict(results, replacement)


def replacement_batch(execution: str) -> str:
    """The batch id of an execution's replacement: NodeClaims named from it are found again on a re-run."""
    return f"replace-{execution}"


def check_replacement(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """WaitForReplacement's check: every replacement NodeClaim has a Ready node. Finishes their registration
    (removes karpenter.sh/unregistered) so pods can land at once. Raises DisruptionFailed when a replacement
    disappeared (its launch failed) or is not Ready REPLACEMENT_TIMEOUT_SECONDS after launch."""
    hold(state, execution, ports)
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
    """CordonAndDrain, and each WaitForDrain round: cordon and taint the node (the first round also labels it
    node.kubernetes.io/exclude-from-external-load-balancers, as Karpenter's terminator does), evict what may go
    now in Karpenter's order (DaemonSet and critical pods last; a 429 is counted and asked again next round),
    delete each pod the drain waits for once the deadline is nearer than its own terminationGracePeriodSeconds,
    with what is left of the deadline as its grace period (`disruption.drain`). `done` when no pod the drain
    waits for is left. The round reads the pods whole (status.startTime: do-not-disrupt durations;
    deletionTimestamp: pods stuck terminating) and decides at the clock's time against the deadline
    IdentifyCandidate set.

    The totals add this round to the previous round's: a round that evicted and then failed is retried with the
    previous state, so `evicted_total` counts the evictions of rounds that succeeded (a lower bound).
    `left_total` is read from the cluster instead: how many of the pods that must move are no longer bound to
    the node, however they went."""
    found = _identified(state)
    node = str(found.get("node") or "")
    hold(state, execution, ports)
    now = ports.clock.now()
    if not node:
        return {"done": True, "reason": "the NodeClaim never registered a node: nothing to drain", "wait_seconds": 0}
    previous = state.get("drain") or {}
    ports.cluster.add_node_taint(node, DISRUPTED_TAINT_KEY, "", "NoSchedule")
    ports.cluster.set_unschedulable(node, True)
    if not previous:
        # Karpenter's terminator labels a node it drains so load balancers stop sending it traffic (a cordon no
        # longer does since Kubernetes 1.19); Rollback takes the label off a node it gives back.
        ports.cluster.label_node(node, {EXCLUDE_BALANCERS_LABEL: EXCLUDE_BALANCERS_VALUE})
    deadline = found.get("deadline")
    pods = ports.cluster.pods_on_node(node)
    work = drain_round(pods, now, float(deadline) if deadline is not None else None)
    left = set(found.get("moving") or ()) - {drain_pod(p).key for p in pods}
    outcomes = {key: ports.cluster.evict_pod(*key.split("/", 1)) for key in work.evict}
    for key in work.delete:
        namespace, name = key.split("/", 1)
        ports.cluster.delete_pod(namespace, name, work.grace.get(key))
    evicted = sorted(k for k, v in outcomes.items() if v == EVICTED)
    blocked = sorted(k for k, v in outcomes.items() if v == EVICTION_BLOCKED)
    rounds = int(previous.get("rounds") or 0) + 1
    if not previous:
        reason = str(state.get("reason") or "")
        nodeclaim = str(state.get("nodeclaim") or "")
        _event(ports, node, "DisruptionTerminating", f"Disrupting Node: {reason}", execution, nodeclaim=nodeclaim)
    if work.done:
        _event(ports, node, "Drained", "all pods that must leave have left", execution)
    elif not previous:
        _event(ports, node, "DrainStarted", work.reason, execution)
    if work.delete:
        message = f"deleted {len(work.delete)} pod(s) to be gone by the deadline"
        _event(ports, node, "DrainDeadlinePassed", message, execution, "Warning")
    return {
        "done": work.done,
        "reason": work.reason,
        "evicted": evicted,
        "blocked": blocked,
        "deleted": list(work.delete),
        "waiting": dict(work.waiting),
        "started_at": float(previous.get("started_at") or now),
        "rounds": rounds,
        "wait_seconds": DRAIN_POLL_SECONDS if rounds < DRAIN_FAST_ROUNDS else DRAIN_SLOW_POLL_SECONDS,
        "evicted_total": int(previous.get("evicted_total") or 0) + len(evicted),
        "blocked_total": int(previous.get("blocked_total") or 0) + len(blocked),
        "left_total": len(left),
    }


def await_volumes(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """CheckVolumes, after the drain and each WaitForVolumes: the node's VolumeAttachments the termination waits for
    (`disruption.volumes`: those of PersistentVolumes not held by a pod the drain leaves on the node) are gone, or
    the deadline IdentifyCandidate set has passed. Sets the NodeClaim's VolumesDetached condition as Karpenter's
    termination does (Unknown AwaitingVolumeDetachment while waiting; True; False TerminationGracePeriodElapsed)
    and records AwaitingVolumeDetachment on the node while it waits. `done` lets TerminateInstance go."""
    command = DisruptionCommand.from_input(state)
    found = _identified(state)
    node = str(found.get("node") or "")
    hold(state, execution, ports)
    now = ports.clock.now()
    previous = state.get("volumes") or {}
    rounds = int(previous.get("rounds") or 0) + 1
    if not node:
        return {"done": True, "pending": [], "reason": "the NodeClaim never registered a node", "rounds": rounds}
    attachments = ports.cluster.volume_attachments(node)
    claims: Sequence[Mapping[str, Any]] = ()
    if attachments:
        kept = undrainable_claims(ports.cluster.pods_on_node(node), now)
        claims = ports.cluster.volumes(kept)[0] if kept else ()
    deadline = found.get("deadline")
    pending = pending_attachments(attachments, node, claims)
    instance = str(found.get("instance_id") or "")
    gone = bool(pending) and bool(instance) and _instance_gone(ports, instance)
    wait = volume_wait(pending, now, float(deadline) if deadline is not None else None, instance_gone=gone)
    message = {
        TRUE: "no volume attachment of a drained pod is left",
        FALSE: f"{'the instance is gone' if gone else 'the deadline passed'} with {len(wait.pending)} volume "
        "attachment(s) left: terminating anyway",
    }.get(wait.status, f"awaiting deletion of volume attachment(s) {', '.join(wait.pending[:10])}")
    ports.cluster.set_nodeclaim_conditions(
        command.nodeclaim, [Condition(VOLUMES_DETACHED, wait.status, wait.reason or "VolumesDetached", message)]
    )
    if not wait.done:
        _event(ports, node, AWAITING, message, execution)
    return {
        "done": wait.done,
        "pending": list(wait.pending),
        "reason": message,
        "rounds": rounds,
        "wait_seconds": DRAIN_POLL_SECONDS if rounds < DRAIN_FAST_ROUNDS else DRAIN_SLOW_POLL_SECONDS,
    }


def _instance_gone(ports: Ports, instance: str) -> bool:
    """EC2 no longer lists the instance, or it is shutting down or terminated (as Karpenter's cloud provider answers
    NodeClaimNotFound for it); a stopped instance still exists."""
    return all(i.state in ("shutting-down", "terminated") for i in ports.cloud.describe_instances([instance]))


def terminate_instance(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """TerminateInstance: terminate the instance, mark the NodeClaim InstanceTerminating (True, as Karpenter's
    termination does once it asked the cloud), delete its Nodes (every Node with the claim's providerID) and then
    the NodeClaim (their termination finalizers come off: the instance is gone), release the lock. A claim that never
    recorded its instance has it found by its tag (a launch may have been under way)."""
    command = DisruptionCommand.from_input(state)
    found = _identified(state)
    hold(state, execution, ports)
    node = str(found.get("node") or "")
    instance = str(found.get("instance_id") or "")
    ids = [instance] if instance else [i.id for i in ports.cloud.instances_of_nodeclaim(command.nodeclaim)]
    if ids:
        ports.cloud.terminate(ids)
        instance = ", ".join(ids)
    # Karpenter's termination marks the NodeClaim once the cloud was asked to terminate its instance: the planner's
    # budgets count such a node as going, and a re-run (the same step retried) writes the same condition again.
    ports.cluster.set_nodeclaim_conditions(
        command.nodeclaim,
        [Condition(INSTANCE_TERMINATING, TRUE, INSTANCE_TERMINATING, f"instance {instance or '-'} is terminating")],
    )
    _event(ports, node, "Terminated", f"{command.reason}: instance {instance or '-'} terminated", execution)
    for name in _claim_nodes(ports, command.nodeclaim, node):
        ports.cluster.delete_node(name)
    ports.cluster.delete_nodeclaim(command.nodeclaim)
    out = {"terminated": instance, "node": node, "nodeclaim": command.nodeclaim, "at": ports.clock.now()}
    try:
        ports.state.release_lock(lock_name(command.nodeclaim), execution)
    except Exception as error:  # the state store's failure
        # The node is gone: a lease left behind holds nothing (its execution ends now, so the next tick releases
        # it), and failing here would only roll back what no longer exists.
        out["lease_not_released"] = str(error)
    return out


def _claim_nodes(ports: Ports, nodeclaim: str, node: str) -> list[str]:
    """Every Node of the NodeClaim, its joined `node` first: each Node whose providerID is the claim's (Karpenter's
    lifecycle termination deletes them all: a second Node for one instance is as dead as the first). A claim that
    never recorded an instance has only `node`; Nodes without a providerID are never a claim's."""
    view = ports.cluster.read_fleet()
    claim = next((c for c in view.nodeclaims if (c.get("metadata") or {}).get("name") == nodeclaim), None)
    provider = str(((claim or {}).get("status") or {}).get("providerID") or "")
    names = [node] if node else []
    if provider:
        for doc in view.nodes:
            name = str((doc.get("metadata") or {}).get("name") or "")
            if name and name not in names and (doc.get("spec") or {}).get("providerID") == provider:
                names.append(name)
    return names


def release(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """ReleaseLock: the end of a workflow that keeps the node (a rebalance prepared its replacement and held the node
    through the protection window): the soft taint comes off, so no taint outlives the workflow, and the leases go."""
    command = DisruptionCommand.from_input(state)
    hold(state, execution, ports)
    for target in command.targets:
        node = str(_identified(state).get("node") or "") if target.nodeclaim == command.nodeclaim else target.node
        if node:
            ports.cluster.remove_node_taint(node, DISRUPTED_TAINT_KEY, "PreferNoSchedule")
    _release_all(ports, command.targets, execution)
    return {"released": [lock_name(t.nodeclaim) for t in command.targets]}


def rollback(state: Mapping[str, Any], execution: str, ports: Ports) -> dict[str, Any]:
    """Rollback: every node of the command that this execution still holds, whose instance still runs and whose
    NodeClaim is not being deleted, is untainted, uncordoned and put back behind load balancers (a node
    another execution took over is that execution's; a deleting NodeClaim's node must go, through its Deleted
    workflow); replacement NodeClaims no pod landed on are terminated and deleted; the leases still held are
    released. Returns what it did; the state machine then fails with the original cause."""
    command = DisruptionCommand.from_input(state)
    found = state.get("identify") or {}
    node = str(found.get("node") or command.node)
    cause = str((state.get("error") or {}).get("Cause") or "")
    view = ports.cluster.read_fleet()
    fleet = {n.nodeclaim: n for n in fleet_nodes(view.nodeclaims, view.nodes, _pools(view.nodepools))}
    mine = _renewed(command, execution, ports)
    nodes_by_instance = {
        t.instance_id: t.node
        for t in command.targets
        if t.instance_id and t.node and t.nodeclaim in mine and not _deleting(fleet.get(t.nodeclaim))
    }
    if node and found.get("instance_id") and command.nodeclaim in mine and not _deleting(fleet.get(command.nodeclaim)):
        nodes_by_instance[str(found["instance_id"])] = node
    running = ports.cloud.describe_instances(sorted(nodes_by_instance)) if nodes_by_instance else ()
    restored = sorted(nodes_by_instance[i.id] for i in running if i.state in _LIVE_STATES)
    for name in restored:
        ports.cluster.remove_node_taint(name, DISRUPTED_TAINT_KEY)
        ports.cluster.set_unschedulable(name, False)
        ports.cluster.label_node(name, {EXCLUDE_BALANCERS_LABEL: None})
    for target in command.targets:
        if target.nodeclaim in mine:
            ports.cluster.set_nodeclaim_conditions(target.nodeclaim, [], clear=[DISRUPTION_REASON])
    removed = []
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
    _release_all(ports, [t for t in command.targets if t.nodeclaim in mine], execution)
    message = f"rolled back ({cause[:300] or 'no cause given'}); nodes restored: {restored or 'none'}; "
    message += f"removed {removed or 'none'}"
    lost = sorted({t.nodeclaim for t in command.targets} - mine)
    if lost:
        message += f"; left to the executions that hold {', '.join(lost)}"
    for name in restored or [node]:
        _event(ports, name, "DisruptionRolledBack", message, execution, "Warning")
    return {
        "restored": bool(restored),
        "restored_nodes": restored,
        "removed_replacements": sorted(removed),
        "cause": cause,
    }


def _deleting(member: FleetNode | None) -> bool:
    """A NodeClaim being deleted is not given back: its node must go (the planner starts its Deleted workflow)."""
    return member is not None and member.deleting


def _has_workload(pods: Sequence[Mapping[str, Any]]) -> bool:
    return any(not drain_pod(p).stays for p in pods)


STEPS = {
    "identify": identify_candidate,
    "launch_replacement": launch_replacement,
    "check_replacement": check_replacement,
    "drain": drain,
    "volumes": await_volumes,
    "terminate": terminate_instance,
    "release": release,
    "rollback": rollback,
}
