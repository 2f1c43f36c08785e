"""The planner's tick: voluntary and scheduled disruption decided on the cluster, each started as a workflow.

On each tick (EventBridge Scheduler, every minute):
1. Read the cluster (NodePools, EC2NodeClasses, NodeClaims, NodeOverlays, Nodes, Pods, DaemonSets, PDBs, volumes),
   the locks of the workflows in flight, the offerings refused for capacity, and the instance catalog.
2. Registrations: NodeClaims whose node has joined are marked Registered (then Initialized and Ready) and lose
   karpenter.sh/unregistered; NodeClaims with no node 15 minutes after creation are terminated and deleted.
3. Each EC2NodeClass is resolved once; NodePool and EC2NodeClass status is written from it (`service.status`),
   so a cluster without pending pods has status too; NodeOverlays get theirs from the catalog the tick's simulations
   read, overlays applied (`service.overlay_status`). Drift: what each EC2NodeClass selects now (images,
   subnets, security groups) and what each instance was launched with, compared by `disruption.drift`.
   NodeClaims get Karpenter's `Drifted` and `Consolidatable` conditions (written only when they change), and
   stamps of an older hash version are replaced.
4. Leases and reconciliation (`service.leases`, `service.reconcile`): the leases whose execution no longer runs are
   released; a node tainted or cordoned by nodewright with no live lease behind it is given back; a NodeClaim whose
   instance is gone is deleted with its Node; an instance stopping or stopped gets its InstanceStopping workflow.
5. `disruption.plan` decides (node repair first, then expiration, emptiness, drift, multi-node, single-node
   consolidation, under budgets). A repair (`disruption.repair`) sets its NodeClaim's termination timestamp, starts
   a forceful `Unhealthy` workflow and then deletes the NodeClaim, as Karpenter's health controller does; if the
   start fails, the next tick finds the node again (or, once the NodeClaim is deleting, the termination does).
   Each command takes its nodes' leases (owned by the execution it is about to start, so no later tick and no other
   workflow takes them meanwhile) and starts the disruption workflow under its derived name; a start that fails
   gives its leases back and is reported, and the rest of the tick goes on.
6. Termination (`disruption.termination`): a NodeClaim or Node being deleted with no live lease gets a forceful
   `Deleted` workflow, a new attempt each tick until one holds it (drain, terminate, then the finalizer comes off);
   instances tagged as this cluster's nodewright capacity that no NodeClaim records 30 s after launch are
   terminated, with their Node, unless the NodeClaim their tag names records none: that claim adopts it.
7. Static NodePools (`disruption.static`, `service.static`): the NodeClaims a pool with `spec.replicas` is short
   of are launched through the provisioning path, those beyond its size are deleted (emptiest first), and a
   drifted one is replaced one for one within `limits.nodes`.
8. Events as Karpenter records them: `DisruptionBlocked` (a budget, a do-not-disrupt pod or node, a budget of the
   pods), `Unconsolidatable` (why consolidation found no move) and `NodeRepairBlocked` (a NodePool with too many
   unhealthy nodes), on the node and its NodeClaim, at most once per 15 minutes each.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from nodewright.catalog.catalog import CapacityReservation
from nodewright.catalog.types import InstanceTypeSource
from nodewright.disruption.candidates import last_pod_event
from nodewright.disruption.commands import DisruptionCommand
from nodewright.disruption.drift import (
    ClassFacts,
    InstanceFacts,
    drift_reason,
    nodeclass_hash,
    nodepool_hash,
    restamps,
)
from nodewright.disruption.fleet import CONSOLIDATABLE, DRIFTED, FleetNode
from nodewright.disruption.lease import lock_name
from nodewright.disruption.methods import Method
from nodewright.disruption.plan import DEFAULT_METHODS, Plan, plan
from nodewright.disruption.repair import REPAIR_BLOCKED, TERMINATION_TIMESTAMP_ANNOTATION
from nodewright.disruption.state import ClusterState, DisruptionSettings, PodFactsCache, cluster_state
from nodewright.disruption.termination import deletions, instance_gc
from nodewright.gcpause import paused_cycle_collector
from nodewright.interruption.ownership import parse_provider_id
from nodewright.model.conditions import TRUE, Condition, rfc3339
from nodewright.model.do_not_disrupt import DO_NOT_DISRUPT, invalid_reason
from nodewright.model.inputs import ClusterInputs
from nodewright.model.loader import ParsedPods, load_documents
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import Clock, Cloud, Cluster, Instance, NodeEvent, PodEvent, StateStore, Workflows
from nodewright.scheduling.templates import TemplateCache
from nodewright.service import leases
from nodewright.service import provision as provisioning
from nodewright.service.buffers import RequestCapacity, capacity_request, write_buffer_status
from nodewright.service.leases import live_leases
from nodewright.service.overlay_status import write_overlay_status
from nodewright.service.provision.adopt import adopt_instance
from nodewright.service.reconcile import reconcile
from nodewright.service.static import launch_static, remove_static
from nodewright.service.status import NodeClassState, resolve_node_classes, write_status

EVENT_WINDOW_SECONDS = 900  # Karpenter's dedupe timeout for Unconsolidatable events
_WRITERS = 8


@dataclass
class TickResult:
    """What a tick did: workflows started (or found started), decisions and why other nodes were left alone,
    registration decisions, status writes, per-method figures and problems (invalid objects, unreadable facts)."""

    started: list[dict[str, Any]] = field(default_factory=list)
    already_running: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    decisions: dict[str, Any] = field(default_factory=dict)
    methods: list[dict[str, Any]] = field(default_factory=list)
    collected: list[str] = field(default_factory=list)
    repaired: list[dict[str, Any]] = field(default_factory=list)
    conditions_written: int = 0
    blocked: int = 0
    unconsolidatable: int = 0
    status: dict[str, Any] = field(default_factory=dict)
    # Static NodePools: each pool's decision, the NodeClaims launched for them and those asked to be deleted.
    static: list[dict[str, Any]] = field(default_factory=list)
    static_launched: list[str] = field(default_factory=list)
    static_removed: list[str] = field(default_factory=list)
    buffers: dict[str, Any] = field(default_factory=dict)
    # Pods still bound to a deleted Node (the pod garbage collector removes them): counted, not decided on.
    orphaned_pods: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "already_running": self.already_running,
            "skipped": self.skipped,
            "registrations": self.registrations,
            "problems": self.problems,
            "decisions": self.decisions,
            "methods": self.methods,
            "collected": self.collected,
            "repaired": self.repaired,
            "conditions_written": self.conditions_written,
            "blocked": self.blocked,
            "unconsolidatable": self.unconsolidatable,
            "status": self.status,
            "static": self.static,
            "static_launched": self.static_launched,
            "static_removed": self.static_removed,
            "buffers": self.buffers,
            "orphaned_pods": self.orphaned_pods,
        }


@dataclass(frozen=True, slots=True)
class PlannerPorts:
    """What the tick talks to. `catalog`: instance types and prices (live or the shipped snapshot)."""

    cluster: Cluster
    cloud: Cloud
    workflows: Workflows
    clock: Clock
    state: StateStore
    catalog: InstanceTypeSource
    settings: DisruptionSettings = field(default_factory=DisruptionSettings)
    # Pods parsed by earlier ticks of this container, by (uid, resourceVersion) (see model.loader).
    parsed_pods: ParsedPods = field(default_factory=dict)
    # Asks the provisioner for a short CapacityBuffer's capacity (`service.buffers`); None: nobody to ask.
    request_capacity: RequestCapacity | None = None
    cluster_name: str = ""
    # Their disruption facts (owner kinds, deletion, tolerations), likewise.
    pod_facts: PodFactsCache = field(default_factory=dict)
    # The NodePools prepared against the catalog and the nodes' labels as requirements, kept tick after tick (about
    # 0.2 s of a 5,000-node warm tick was parsing the same labels again); keyed by content and identity
    # (`scheduling.templates`), so what changed gets its own entry.
    templates: TemplateCache = field(default_factory=TemplateCache)


def tick(
    ports: PlannerPorts,
    methods: Sequence[Method] = DEFAULT_METHODS,
    timer: Callable[[], float] = time.perf_counter,
) -> TickResult:
    """One planner tick; see the module docstring. Invalid objects are reported in `problems`, never skipped
    silently; NodeClaims still expire by what they carry themselves.

    The cycle collector is paused for the whole tick (reading, loading, registrations, deciding, drift,
    reconciliation and events): a warm container holds millions of parsed objects, and the
    collector's passes walk them to free nothing (about a third of a warm tick's CPU at 10,000 nodes, measured), as
    a tick's garbage forms no cycles (a unit test checks a cold and a warm tick). The caller's setting comes back."""
    with paused_cycle_collector():
        return _tick(ports, methods, timer)


def _tick(ports: PlannerPorts, methods: Sequence[Method], timer: Callable[[], float]) -> TickResult:
    now = ports.clock.now()
    out = TickResult()
    view = ports.cluster.read()
    documents = [*view.documents, *view.unbound_pods.values()]
    loaded = load_documents(
        documents,
        "cluster",
        summaries=False,
        parsed_pods=ports.parsed_pods,
        buffers=view.buffers,
        keep_only_loaded=True,
        omit_orphans=True,
    )
    inputs, errors = loaded
    out.problems.extend(f"{e.kind}/{e.name}: {e.path}: {e.message}" for e in errors)
    out.orphaned_pods = len(inputs.orphaned_pods)

    result = provisioning.ProvisionResult("planner")
    registered = provisioning.finish_registrations(inputs.nodeclaims, inputs.nodes, ports.cluster, now, result)
    provisioning.cleanup_unregistered(
        inputs.nodeclaims, registered, ports.cluster, ports.cloud, now, result, documents=view.documents
    )
    out.registrations = [d.to_json() for d in result.decisions]

    alive, dead = live_leases(ports.state, ports.workflows, now)
    locked = frozenset(lease.nodeclaim for lease in alive.values())
    unavailable = ports.state.unavailable_offerings(now)
    version = ports.cloud.cluster_info().version if inputs.nodeclasses else ""
    classes = resolve_node_classes(inputs.nodeclasses, ports.cloud, version)
    facts, zones = _class_facts(classes, out.problems)
    out.status = _write_status(ports.cluster, view.documents, classes, out.problems)
    state, _ = cluster_state(
        documents,
        ports.catalog.instance_types(),
        now,
        locked,
        ports.settings,
        class_zones=zones,
        loaded=loaded,
        known_facts=ports.pod_facts,
        reservations=class_reservations(ports.cloud, classes),
        unavailable=unavailable,
        templates=ports.templates,
    )
    out.problems.extend(f"nodeclaim/{m.nodeclaim}: {p}" for m in state.fleet for p in m.problems)
    _write_overlay_status(ports.cluster, view.documents, state, out)
    live = _live_instances(ports.cloud, out.problems)
    instances = _instances(ports.cloud, state.fleet, live)
    drift = _drift(state, facts, instances)
    out.conditions_written = _record_status(ports.cluster, state, drift)
    out.repaired, stopping, forgotten = reconcile(ports.cluster, state, dead, instances, out.problems)

    out.buffers = _buffers(ports, state, view.buffers, now, out.problems)
    decided = plan(state, drift, methods, timer)
    out.skipped = dict(decided.skipped)
    out.decisions = decided.to_json(state)
    out.methods = [
        {"method": m.method, "reason": m.reason, "eligible": m.eligible, "decisions": m.decisions, "seconds": m.seconds}
        for m in decided.methods
    ]
    for command in decided.repair_commands(now):
        if command.nodeclaim not in forgotten:
            _repair(ports, command, now, out)
    for command in [*stopping, *decided.commands(now), *deletions(state.fleet, locked, now)]:
        if not forgotten & {t.nodeclaim for t in command.targets}:
            _start(ports, command, now, out)
    out.collected = _collect_instances(ports, live, view.documents, now, out.problems, out.repaired)
    # After the instance garbage collection, which reads the NodeClaims as the tick began: these launches are new.
    _static(ports, inputs, decided, now, out)
    out.blocked, out.unconsolidatable = _record_events(ports.cluster, state, decided, now)
    return out


def _static(ports: PlannerPorts, inputs: ClusterInputs, decided: Plan, now: float, out: TickResult) -> None:
    """Act on the static NodePools' decisions: delete what is beyond a pool's size, launch what it is short of.
    A launch that fails is reported; the next tick finds the pool short again and launches anew."""
    if not decided.static:
        return
    out.static = [d.to_json() for d in decided.static]
    out.static_removed = remove_static(decided.static, ports.cluster, out.problems)
    try:
        launched = launch_static(decided.static, inputs, ports.cluster, ports.cloud, ports.state, ports.catalog, now)
    except Exception as error:  # a NodeClaim could not be created: the next tick launches what is still missing
        out.problems.append(f"static NodePools: {type(error).__name__}: {error}")
        return
    out.static_launched = [c.name for c in launched.launched]
    failed = ("launch-failed", "skipped", "invalid", "unavailable", "throttled")
    out.problems.extend(f"{d.subject}: {d.reason}" for d in launched.decisions if d.action in failed)


def _buffers(
    ports: PlannerPorts, state: ClusterState, documents: Sequence[Mapping[str, Any]], now: float, problems: list[str]
) -> dict[str, Any]:
    """CapacityBuffers: status written back, and the provisioner asked for the short ones' capacity."""
    if not state.inputs.buffers:
        return {}
    out: dict[str, Any] = {"status_written": write_buffer_status(ports.cluster, state, documents, problems)}
    placement = state.buffer_placement()
    out["short"] = {key: fit.short for key, fit in placement.fits.items() if fit.short}
    request = capacity_request(placement, f"buffers-{int(now)}", ports.cluster_name)
    if request is not None and ports.request_capacity is not None:
        try:
            ports.request_capacity(request)
            out["requested"] = {b["namespace"] + "/" + b["name"]: len(b["pods"]) for b in request["buffers"]}
        except Exception as error:  # asked again on the next tick
            problems.append(f"capacitybuffers: could not ask the provisioner for capacity: {error}")
    return out


def _class_facts(
    classes: Mapping[str, NodeClassState], problems: list[str]
) -> tuple[dict[str, ClassFacts], dict[str, tuple[str, ...]]]:
    """What each EC2NodeClass selects now, and the zones its subnets are in; a class that cannot be resolved is
    reported and its nodes are checked without the cloud's facts."""
    facts: dict[str, ClassFacts] = {}
    zones: dict[str, tuple[str, ...]] = {}
    for name, resolution in sorted(classes.items()):
        resolved = resolution.resolved
        if not resolution.ready or resolved is None:
            problems.append(f"ec2nodeclass/{name}: {resolution.problem}")
            continue
        facts[name] = ClassFacts(
            images={variant: image.id for variant, image in resolved.images.items()},
            subnet_ids=resolved.matching_subnet_ids or frozenset(s.id for s in resolved.subnets),
            security_group_ids=frozenset(resolved.security_group_ids),
        )
        zones[name] = resolved.zones
    return facts, zones


def node_class_bounds(
    cloud: Cloud, nodeclasses: Sequence[EC2NodeClass]
) -> tuple[dict[str, tuple[str, ...]], dict[str, list[CapacityReservation]]]:
    """For a `cluster_state` outside the tick (the workflow's validation): each usable EC2NodeClass's zones and
    the capacity reservations it selects, resolved as the tick resolves them. Classes that cannot be resolved are
    left out (their pools are not zone-bounded and select no reservation)."""
    version = cloud.cluster_info().version if nodeclasses else ""
    classes = resolve_node_classes(nodeclasses, cloud, version)
    zones = {name: s.resolved.zones for name, s in sorted(classes.items()) if s.ready and s.resolved is not None}
    return zones, class_reservations(cloud, classes)


def class_reservations(cloud: Cloud, classes: Mapping[str, NodeClassState]) -> dict[str, list[CapacityReservation]]:
    """The capacity reservations each usable EC2NodeClass's capacityReservationSelectorTerms select, with their
    free instance counts now, resolved as the provisioner resolves them (`service.provision.plan`), so the planner's
    catalog has the same `reserved` offerings as the provisioner's. Classes that are not usable select none here
    (their reserved nodes are still priced, see `disruption.state.cluster_state`)."""
    out: dict[str, list[CapacityReservation]] = {}
    for name, resolution in sorted(classes.items()):
        resolved = resolution.resolved
        if not resolution.ready or resolved is None or not resolved.node_class.capacity_reservation_selector_terms:
            continue
        out[name] = list(cloud.capacity_reservations(resolved))
    return out


def _write_status(
    cluster: Cluster,
    documents: Sequence[Mapping[str, Any]],
    classes: Mapping[str, NodeClassState],
    problems: list[str],
) -> dict[str, Any]:
    """NodePool and EC2NodeClass status (`service.status`), so a cluster without pending pods has it too."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for doc in documents:
        by_kind.setdefault(str(doc.get("kind", "")), []).append(doc)
    try:
        return write_status(
            cluster,
            by_kind.get("NodePool", []),
            by_kind.get("EC2NodeClass", []),
            by_kind.get("NodeClaim", []),
            by_kind.get("Node", []),
            classes,
        ).to_json()
    except Exception as error:  # status is for people: failing to write it must not stop disruption
        problems.append(f"status: {type(error).__name__}: {error}")
        return {}


def _write_overlay_status(
    cluster: Cluster, documents: Sequence[Mapping[str, Any]], state: ClusterState, out: TickResult
) -> None:
    """NodeOverlay conditions (`service.overlay_status`) from the catalog this tick's simulations read, added to
    the tick's status report."""
    overlays = [doc for doc in documents if doc.get("kind") == "NodeOverlay"]
    if not overlays:
        return
    try:
        report = write_overlay_status(cluster, overlays, state.overlays)
    except Exception as error:  # status is for people: failing to write it must not stop disruption
        out.problems.append(f"status: {type(error).__name__}: {error}")
        return
    out.status.setdefault("written", []).extend(report.written)
    out.status.setdefault("ready", {}).update(report.ready)


def _live_instances(cloud: Cloud, problems: list[str]) -> Sequence[Instance] | None:
    """The cluster's live nodewright instances, listed once a tick for the fleet's description and the garbage
    collection; None (and a problem) when EC2 would not list them, which must not stop disruption."""
    try:
        return cloud.capacity_instances()
    except Exception as error:  # a later tick tries again
        problems.append(f"instance garbage collection: {type(error).__name__}: {error}")
        return None


def _instances(cloud: Cloud, fleet: Sequence[FleetNode], live: Sequence[Instance] | None) -> dict[str, Instance]:
    """What EC2 says of the fleet's instances (drift and reconciliation read the same answer), by id.

    Most are in the tick's listing of live instances (`live`, read in pages of 1,000); only the others (shutting
    down, terminated, or not launched by nodewright) are described by id, in calls of 200: at 3,000 nodes a tick
    makes about 3 calls instead of 15 descriptions of 200 ids and the listing."""
    ids = {m.instance_id for m in fleet if m.instance_id}
    found = {i.id: i for i in live or () if i.id in ids}
    missing = ids - found.keys()
    if missing:
        found.update((i.id, i) for i in cloud.describe_instances(sorted(missing)))
    return found


def _drift(state: ClusterState, facts: Mapping[str, ClassFacts], instances: Mapping[str, Instance]) -> dict[str, str]:
    """NodeClaim -> drift reason ("" when not drifted) for every launched NodeClaim of a known pool."""
    classes = {c.name: c for c in state.inputs.nodeclasses}
    catalog = frozenset(it.name for it in state.catalog)  # for InstanceTypeNotFound drift
    out: dict[str, str] = {}
    # Each pool's and class's hash once, not once a NodeClaim (a JSON dump and a SHA-256 each).
    hashes: dict[str, tuple[str, str]] = {}
    for member in state.fleet:
        pool = state.pools.get(member.nodepool)
        if pool is None or not member.provider_id:
            continue
        node_class = classes.get(pool.node_class_ref.name)
        if pool.name not in hashes:
            hashes[pool.name] = (nodepool_hash(pool), nodeclass_hash(node_class) if node_class is not None else "")
        out[member.nodeclaim] = drift_reason(
            member,
            pool,
            node_class,
            state.listed_type(member),
            facts.get(pool.node_class_ref.name),
            _launched_with(instances.get(member.instance_id)),
            catalog=catalog,
            now=state.now,
            hashes=hashes[pool.name],
        )
    return out


def _launched_with(instance: Instance | None) -> InstanceFacts | None:
    if instance is None:
        return None
    return InstanceFacts(instance.image_id, instance.subnet_id, frozenset(instance.security_group_ids))


def _record_status(cluster: Cluster, state: ClusterState, drift: Mapping[str, str]) -> int:
    """Drifted and Consolidatable conditions, and re-stamped hashes, where they changed. Returns the writes."""
    from nodewright.disruption.candidates import consolidatable

    classes = {c.name: c for c in state.inputs.nodeclasses}
    writes: list[Callable[[], None]] = []
    for member in state.fleet:
        pool = state.pools.get(member.nodepool)
        if pool is None:
            continue
        conditions: list[Condition] = []
        clear: list[str] = []
        reason = drift.get(member.nodeclaim, "")
        if reason and reason != member.drifted:
            conditions.append(Condition(DRIFTED, TRUE, reason, reason))
        elif not reason and member.drifted:
            clear.append(DRIFTED)
        # A static pool's NodeClaims are never consolidated, so Karpenter neither sets nor clears the condition.
        if not pool.static:
            waiting = consolidatable(member, pool, last_pod_event(state, member), state.now)
            if not waiting and not member.consolidatable:
                conditions.append(Condition(CONSOLIDATABLE, TRUE, CONSOLIDATABLE))
            elif waiting and member.consolidatable:
                clear.append(CONSOLIDATABLE)
        if conditions or clear:
            writes.append(_conditions_write(cluster, member.nodeclaim, conditions, clear))
        stamps = restamps(member, pool, classes.get(pool.node_class_ref.name))
        if stamps:
            writes.append(_annotations_write(cluster, member.nodeclaim, stamps))
    if writes:
        with ThreadPoolExecutor(max_workers=min(_WRITERS, len(writes))) as pool_:
            for future in [pool_.submit(w) for w in writes]:
                future.result()
    return len(writes)


def _conditions_write(cluster: Cluster, name: str, conditions: list[Condition], clear: list[str]) -> Callable[[], None]:
    return lambda: cluster.set_nodeclaim_conditions(name, conditions, clear)


def _annotations_write(cluster: Cluster, name: str, stamps: Mapping[str, str]) -> Callable[[], None]:
    return lambda: cluster.update_nodeclaim(name, {}, stamps, {})


def _repair(ports: PlannerPorts, command: DisruptionCommand, now: float, out: TickResult) -> None:
    """Karpenter's repair: the termination timestamp on the NodeClaim (what the drain's deadline is), the workflow,
    then the NodeClaim's deletion, so `kubectl get nodeclaims` shows it going and a later attempt is the
    termination's. A write that fails is reported; the next tick finds the node again."""
    stamp = rfc3339(command.deadline if command.deadline is not None else now)
    try:
        ports.cluster.update_nodeclaim(command.nodeclaim, {}, {TERMINATION_TIMESTAMP_ANNOTATION: stamp}, {})
        if _start(ports, command, now, out):
            ports.cluster.request_nodeclaim_deletion(command.nodeclaim)
    except Exception as error:  # the API server refused a write: the next tick repairs again
        out.problems.append(f"nodeclaim/{command.nodeclaim}: repair: {type(error).__name__}: {error}")


def _start(ports: PlannerPorts, command: DisruptionCommand, now: float, out: TickResult) -> bool:
    """Take the command's leases for its execution, then start it. A node another live execution holds is left for a
    later tick; a start that fails gives the leases back and is reported, and the tick goes on. Returns whether the
    command's execution runs (started now or already)."""
    name = command.execution_name()
    taken: list[str] = []
    for target in command.targets:
        holder = leases.acquire(
            ports.state, ports.workflows, lock_name(target.nodeclaim), name, now, command.interruption
        )
        if holder:
            _give_back(ports, taken, name)
            out.skipped[command.nodeclaim] = f"{command.reason}: execution {holder} holds nodeclaim/{target.nodeclaim}"
            return False
        taken.append(target.nodeclaim)
    entry: dict[str, Any] = {
        "execution": name,
        "nodeclaim": command.nodeclaim,
        "reason": command.reason,
        "method": command.method,
    }
    if command.others:
        entry["others"] = [t.nodeclaim for t in command.others]
    try:
        started = ports.workflows.start(name, command.to_input())
    except Exception as error:  # Step Functions refused: the next tick decides again
        _give_back(ports, taken, name)
        out.problems.append(f"execution {name}: StartExecution failed: {type(error).__name__}: {error}")
        return False
    if started:
        out.started.append(entry)
    else:
        out.already_running.append(name)
    return True


def _give_back(ports: PlannerPorts, nodeclaims: Sequence[str], owner: str) -> None:
    for nodeclaim in nodeclaims:
        ports.state.release_lock(lock_name(nodeclaim), owner)


def _collect_instances(
    ports: PlannerPorts,
    live: Sequence[Instance] | None,
    documents: Sequence[Mapping[str, Any]],
    now: float,
    problems: list[str],
    repaired: list[dict[str, Any]],
) -> list[str]:
    """Instance garbage collection by providerID (`disruption.termination.instance_gc`): a NodeClaim that records no
    instance adopts the one tagged for it; the others are terminated, then the Node that names one is deleted.
    `live`: the tick's listing of the cluster's live instances, made after the NodeClaims were read (None: the
    listing failed and nothing is collected). Adoptions go to `repaired`. Returns the instance ids terminated."""
    claims = [d for d in documents if d.get("kind") == "NodeClaim"]
    if live is None:
        return []
    try:
        collected = instance_gc(live, claims, now)
        for nodeclaim, instance in sorted(collected.adopt.items()):
            adopt_instance(ports.cluster, nodeclaim, instance)
            reason = f"instance {instance.id} was launched for it but never recorded (its provisioner died)"
            repaired.append({"kind": "adopt", "nodeclaim": nodeclaim, "node": "", "reason": reason})
        found = collected.terminate
        if found:
            ports.cloud.terminate([i.id for i in found])
    except Exception as error:  # a later tick tries again; disruption must not stop for it
        problems.append(f"instance garbage collection: {type(error).__name__}: {error}")
        return []
    ids = {i.id for i in found}
    for doc in documents:
        parsed = parse_provider_id(str((doc.get("spec") or {}).get("providerID") or ""))
        if doc.get("kind") == "Node" and parsed is not None and parsed[1] in ids:
            ports.cluster.delete_node(str((doc.get("metadata") or {}).get("name")))
    return sorted(ids)


def _record_events(cluster: Cluster, state: ClusterState, decided: Plan, now: float) -> tuple[int, int]:
    """DisruptionBlocked and Unconsolidatable on the node and its NodeClaim, each message once per window; a budget
    that allows no disruption, once a minute on its NodePool (Karpenter's events and dedupe timeouts). A node a
    budget holds back gets no event of its own: at thousands of nodes that was thousands of events a tick, each
    new whenever the count of nodes being disrupted in its message changed."""
    window = math.floor(now / EVENT_WINDOW_SECONDS)
    members = {m.nodeclaim: m for m in state.fleet}
    minute = math.floor(now / 60)
    events = [
        NodeEvent(pool, "DisruptionBlocked", _blocking_budget(reason), "Normal", f"{reason}|{minute}", kind="NodePool")
        for pool, reason in decided.blocking_budgets
    ]
    own = {name: why for name, why in decided.blocked.items() if name not in decided.budget_held}
    for reason, found, severity in (
        ("DisruptionBlocked", own, "Normal"),
        ("Unconsolidatable", decided.unconsolidatable, "Normal"),
        (REPAIR_BLOCKED, decided.repairs.held, "Warning"),
    ):
        for nodeclaim, message in sorted(found.items()):
            member = members.get(nodeclaim)
            dedupe = f"{message}|{window}"
            if member is not None and member.node:
                events.append(NodeEvent(member.node, reason, message, severity, dedupe))
            events.append(NodeEvent(nodeclaim, reason, message, severity, dedupe, kind="NodeClaim"))
    if events:
        cluster.record_node_events(events)
    invalid = _invalid_do_not_disrupt(state, window)
    if invalid:
        cluster.record_events(invalid)
    return len(decided.blocked), len(decided.unconsolidatable)


def _blocking_budget(reason: str) -> str:
    return f"No allowed disruptions for disruption reason {reason} due to blocking budget"


def _invalid_do_not_disrupt(state: ClusterState, window: int) -> list[PodEvent]:
    """Karpenter's InvalidDoNotDisruptAnnotation warning on each pod of the fleet whose do-not-disrupt value is
    ignored (neither "true" nor a positive duration), so its owner learns the pod is not protected."""
    out = []
    for member in state.fleet:
        for pod in state.pods_on(member):
            value = pod.annotations.get(DO_NOT_DISRUPT)
            why = invalid_reason(value) if value is not None else ""
            if why:
                out.append(
                    PodEvent(pod.key, "InvalidDoNotDisruptAnnotation", why, "Warning", f"{pod.key}|{why}|{window}")
                )
    return out
