"""Provisioning: from a batch of pending pods to launched, recorded NodeClaims, with a reason for everything.

`provision()` is the provisioner Lambda's one service call, and the disruption workflow's LaunchReplacement.
It reads, plans, launches and records; each concept lives in its own module:

- `read`: what the decision reads from the API server, the pods named by the payload's hints among them
  (the payload is a hint, never trusted for a pod's spec).
- `lifecycle`: launched NodeClaims whose node has appeared become Registered, then Initialized and Ready;
  claims whose node never came are terminated.
- `inflight`: NodeClaims in flight and the pods nominated to them, which wait instead of being planned again.
- `plan`: the EC2NodeClasses resolved, the catalog, and `solve()`.
- `serial`: one planner of new capacity at a time, so a batch and a replacement never plan the same pods.
- `nodeclaim`: the NodeClaim documents created before launching, and what a launch records on them.
- `pipeline`: each NodeClaim launches as soon as it exists, not once the whole batch's do.
- `launch`: CreateFleet attempts per NodeClaim, capacity errors, throttling, adoption of a launch that was
  not recorded.
- `explain`: events on pods, NodePools and NodeClaims under Karpenter's reasons, and log lines.
- `delivery`: a retried delivery that launched is answered from its record.
- `templates`: launch templates nobody needs any more.
NodePool and EC2NodeClass status is `nodewright.service.status`, shared with the planner.

A payload without pods (the forwarder's registration payload: nodes that joined or are ready) plans nothing:
it moves NodeClaims through their lifecycle and garbage-collects launch templates, without the planner lock.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from nodewright.catalog.types import InstanceTypeSource
from nodewright.gcpause import paused_cycle_collector
from nodewright.model.loader import ParsedPods, load_documents
from nodewright.ports import Clock, Cloud, Cluster, Instance, LaunchTemplateStore, StateStore
from nodewright.scheduling import PlannedNodeClaim, Results, TemplateCache
from nodewright.service.batch import Batch
from nodewright.service.provision import explain
from nodewright.service.provision.inflight import Capacity, capacity_in_flight
from nodewright.service.provision.launch import UNAVAILABLE_TTL_SECONDS, Launcher, kubelet_labels, launch_claim
from nodewright.service.provision.lifecycle import (
    LAUNCH_TIMEOUT_SECONDS,
    REGISTRATION_TIMEOUT_SECONDS,
    cleanup,
    cleanup_unregistered,
    finish_registrations,
    nodes_of,
)
from nodewright.service.provision.nodeclaim import (
    BATCH_ANNOTATION,
    PODS_ANNOTATION,
    TEMPLATE_ANNOTATION,
    node_resources,
    nodeclaim_creator,
    nodeclaim_document,
    nodeclaim_name,
)
from nodewright.service.provision.pipeline import Pipeline
from nodewright.service.provision.plan import Plan, Resolution, plan, resolve
from nodewright.service.provision.read import (
    NOMINATION_GRACE_SECONDS,
    Snapshot,
    deleting,
    pod_key,
    read_cluster,
    read_pods,
    recent_nodes,
)
from nodewright.service.provision.result import Decision, LaunchedClaim, ProvisionResult
from nodewright.service.provision.serial import PlannerLockLost, one_planner
from nodewright.service.provision.templates import (
    TEMPLATE_MIN_AGE_SECONDS,
    collect_launch_templates,
    stale_launch_templates,
)
from nodewright.service.provision.warm import WarmBatch
from nodewright.service.status import write_status

__all__ = [
    "BATCH_ANNOTATION",
    "LAUNCH_TIMEOUT_SECONDS",
    "NOMINATION_GRACE_SECONDS",
    "PODS_ANNOTATION",
    "REGISTRATION_TIMEOUT_SECONDS",
    "TEMPLATE_ANNOTATION",
    "TEMPLATE_MIN_AGE_SECONDS",
    "UNAVAILABLE_TTL_SECONDS",
    "Decision",
    "LaunchedClaim",
    "ProvisionResult",
    "WarmBatch",
    "cleanup",
    "cleanup_unregistered",
    "collect_launch_templates",
    "finish_registrations",
    "kubelet_labels",
    "node_resources",
    "nodeclaim_document",
    "nodeclaim_name",
    "pod_key",
    "provision",
    "stale_launch_templates",
    "start_launches",
]


def provision(
    batch: Batch,
    cluster: Cluster,
    cloud: Cloud,
    state: StateStore,
    clock: Clock,
    catalog_source: InstanceTypeSource,
    timer: Callable[[], float] = time.perf_counter,
    displaced_nodes: Sequence[str] = (),
    templates: LaunchTemplateStore | None = None,
    plan_filter: Callable[[Results], Results | str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    parsed_pods: ParsedPods | None = None,
    one_claim_in: str = "",
    nodepool_templates: TemplateCache | None = None,
    claim_annotations: Mapping[str, str] | None = None,
    warm: WarmBatch | None = None,
) -> ProvisionResult:
    """Turn a batch of pending pods into NodeClaims and instances; see the module docstring.

    Inputs: the batch (hints of pending pods), the ports, `clock` (epoch seconds, for timestamps, TTLs and
    the planner lock), the instance type source, `timer` (monotonic seconds, only for the timings reported),
    `templates` (when given, a batch without pods also garbage-collects launch templates: off the launch
    path, and run whenever nodes register, i.e. after launches, which is when templates are made) and `sleep`
    (waiting for the planner lock), and `parsed_pods` (a warm container's pods parsed by earlier calls, by
    uid and resourceVersion: pods sent again every window are parsed once). Output: every decision with its
    reason, the claims launched (or found launched), and timings. Raises nothing for expected failures (invalid
    objects, unusable node classes, capacity, throttling, a busy planner): they are decisions.

    `displaced_nodes`: the disruption workflow's replacement. The nodes, and every node `being_disrupted`, are
    left out of the capacity, and the pods that must leave them (not DaemonSet, mirror or disrupted-tolerating
    pods) are planned as pending; a batch displaces the nodes `being_disrupted` too. `plan_filter`: applied to
    the simulation's plan before any NodeClaim is created (a consolidation narrows its replacement to the
    cheaper offerings it decided); a string it returns refuses the plan: nothing launches and the new
    NodeClaims' pods are unschedulable for that reason. `one_claim_in`: at most one new NodeClaim, in this
    NodePool (a consolidation's replacement: the solver grows one claim rather than opening a second, exactly
    as the consolidation's own simulation did). `nodepool_templates`: the NodePools prepared against the catalog
    by earlier batches (a warm container keeps one cache; `solve()` then skips preparing them again).
    `claim_annotations`: added to every NodeClaim this call creates (a rebalance's early replacement carries the
    end of its protection window). `warm`: what a warm container keeps from batch to batch of the nodes that did
    not change (`warm.WarmBatch`; the same plan, less work at thousands of nodes). `ProvisionResult.waiting`: the
    pods not planned because a NodeClaim already has room for them, with that claim.
    """
    started = timer()
    now = clock.now()
    result = ProvisionResult(batch.batch_id)
    if not batch.pods and not displaced_nodes and not batch.buffers:
        with paused_cycle_collector():  # it reads and parses every NodeClaim and Node too (see below)
            return _lifecycle_only(batch, cluster, cloud, now, result, templates, started, timer)
    call = _Call(
        batch,
        cluster,
        cloud,
        state,
        catalog_source,
        now,
        result,
        started,
        timer,
        frozenset(displaced_nodes),
        plan_filter,
        parsed_pods,
        one_claim_in,
        nodepool_templates,
        claim_annotations,
        warm,
    )
    owner = f"{batch.batch_id}/{uuid.uuid4().hex[:8]}"
    # The cycle collector is paused from the read to the launches' end: a cold container's first read decodes and
    # parses tens of MB of JSON (3,000 Nodes and NodeClaims: millions of objects that live on in the informers and
    # parse caches and form no cycles), and the collector's repeated passes over them, full ones among them, were
    # 40 % of that batch's CPU. Resumed once the launches are done, it goes over them once, and not on the GIL
    # while the launch threads build and send their CreateFleet requests.
    with paused_cycle_collector():
        with one_planner(state, owner, clock, sleep) as lock:
            if isinstance(lock, str):
                result.decide("busy", "planner", f"{lock} is planning new capacity; evaluated again in the next window")
                result.timings["total"] = timer() - started
                return result
            decided = _decide(call, lock.fence)
        # The planner lock is released: the NodeClaims exist, so whoever plans next counts them in flight.
        if decided.pipeline is not None:
            for outcome in decided.pipeline.outcomes():
                result.merge(outcome)
            result.timings["launch"] = timer() - started
    snapshot = decided.snapshot
    live = [c for c in snapshot.base.nodeclaims if c.name not in decided.removed]
    finish_registrations(live, snapshot.base.nodes, cluster, now, result)
    if decided.planned is not None:
        if not displaced_nodes:  # the workflow's replacement leaves status to the provisioner and the planner
            _status(snapshot, decided.planned, cluster, result)
        explain.record(cluster, result, list(decided.planned.pools.values()), decided.planned.catalog, now)
    result.timings["total"] = timer() - started
    return result


@dataclass(frozen=True)
class _Call:
    """One `provision()` call's batch, ports and options, as the steps under the planner lock take them."""

    batch: Batch
    cluster: Cluster
    cloud: Cloud
    state: StateStore
    catalog_source: InstanceTypeSource
    now: float
    result: ProvisionResult
    started: float
    timer: Callable[[], float]
    displaced_nodes: frozenset[str]
    plan_filter: Callable[[Results], Results | str] | None
    parsed_pods: ParsedPods | None
    one_claim_in: str
    nodepool_templates: TemplateCache | None
    claim_annotations: Mapping[str, str] | None
    warm: WarmBatch | None


@dataclass
class _Decided:
    """What the planner lock's holder read and decided: the NodeClaims it removed (unregistered too long), and
    the plan and its launches when there were pods to plan."""

    snapshot: Snapshot
    removed: set[str]
    planned: Plan | None = None
    pipeline: Pipeline | None = None


def _decide(call: _Call, fence: Callable[[], None]) -> _Decided:
    """Under the planner lock: read, plan, and create the plan's NodeClaims, each launching as soon as it exists
    (`fence` raises when the lock is no longer certainly held). Returns once every NodeClaim exists."""
    batch, cluster, result = call.batch, call.cluster, call.result
    snapshot = read_cluster(batch, cluster, result, call.parsed_pods)
    result.timings["read_cluster"] = call.timer() - call.started
    # Which claims' nodes have joined decides the plan; writing their registration can wait until the launches
    # are under way (finish_registrations, after the lock).
    registered = nodes_of(snapshot.base.nodeclaims, snapshot.base.nodes)
    removed = cleanup_unregistered(
        snapshot.base.nodeclaims, registered, cluster, call.cloud, call.now, result, documents=snapshot.view.nodeclaims
    )
    recent = recent_nodes(snapshot, registered, call.now)
    # The EC2NodeClasses are resolved (AWS calls, no decision) while the pods are read from the cluster.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="resolve") as ahead:
        resolving = ahead.submit(resolve, snapshot.base.nodeclasses, call.cloud)
        if not read_pods(batch, snapshot, cluster, recent, set(call.displaced_nodes), result, registered):
            return _Decided(snapshot, removed)
        # A NodeClaim being deleted is not capacity on its way (Karpenter leaves deleting claims out too).
        gone = removed | deleting(snapshot.view.nodeclaims)
        kept = call.warm.full if call.warm is not None else None
        capacity = capacity_in_flight(snapshot, registered, recent, gone, call.now, result, kept)
        planned = _plan(call, snapshot, capacity, resolving.result())
    # What is created here is what launches: `plan_filter` has narrowed the plan already. Each claim launches as
    # soon as it exists; the lock is kept until they all do.
    pipeline = _start(
        batch.batch_id,
        planned,
        cluster,
        call.cloud,
        call.state,
        call.now,
        result,
        call.started,
        call.timer,
        fence,
        call.claim_annotations,
    )
    try:
        pipeline.wait_created()
    except PlannerLockLost as lost:
        # Another planner may be planning these pods now: what was not created is left to it, or to the next
        # window (a replacement's step is retried on `busy`).
        result.decide("busy", "planner", f"{lost}; the NodeClaims not created are planned again")
    return _Decided(snapshot, removed, planned, pipeline)


def _plan(call: _Call, snapshot: Snapshot, capacity: Capacity, resolution: Resolution) -> Plan:
    """`plan.plan` with the call's options; the time to the simulation's start is `prepare` in the timings."""
    planned = plan(
        call.batch.batch_id,
        snapshot.inputs,
        capacity,
        call.cloud,
        call.state,
        call.catalog_source,
        call.now,
        call.result,
        call.timer,
        call.plan_filter,
        call.one_claim_in,
        call.nodepool_templates,
        call.warm.registration if call.warm is not None else None,
        resolution,
    )
    call.result.timings["prepare"] = planned.prepared_at - call.started
    return planned


def _lifecycle_only(
    batch: Batch,
    cluster: Cluster,
    cloud: Cloud,
    now: float,
    result: ProvisionResult,
    templates: LaunchTemplateStore | None,
    started: float,
    timer: Callable[[], float],
) -> ProvisionResult:
    """A registration payload: lifecycle of NodeClaims, the registration timeout, launch template GC. It
    reads consistently (a node that has just joined must be seen) and only NodeClaims, Nodes and classes."""
    view = cluster.read_fleet()
    documents = [*view.nodepools, *view.nodeclasses, *view.nodeclaims, *view.nodes]
    result.timings["read_cluster"] = timer() - started
    inputs, _ = load_documents(documents, "cluster", summaries=False)
    registered = finish_registrations(inputs.nodeclaims, inputs.nodes, cluster, now, result)
    cleanup_unregistered(inputs.nodeclaims, registered, cluster, cloud, now, result, documents=view.nodeclaims)
    matched = set(registered.values())
    for reported in batch.nodes:
        if reported not in matched:
            result.decide(
                "skipped",
                f"node/{reported}",
                "no launched NodeClaim has this node's providerID (yet); the forwarder sends it again",
            )
    if templates is not None:
        collect_launch_templates(documents, templates, now, result)
    result.timings["total"] = timer() - started
    return result


def _start(
    batch_id: str,
    planned: Plan,
    cluster: Cluster,
    cloud: Cloud,
    state: StateStore,
    now: float,
    result: ProvisionResult,
    started: float,
    timer: Callable[[], float],
    fence: Callable[[], None],
    annotations: Mapping[str, str] | None = None,
) -> Pipeline:
    """Create the plan's NodeClaims and launch each one as soon as it exists (see `pipeline`); `fence` is asked
    before each creation and raises when the planner lock is no longer certainly held."""
    launcher = Launcher(
        cloud,
        state,
        planned.info,
        planned.catalog,
        planned.resolved,
        planned.unavailable,
        now,
        result,
        started,
        timer,
    )
    classes = {name: rc.node_class for name, rc in planned.resolved.items()}
    tagged = _TaggedLookup(cloud, [name for name, _ in planned.claims])

    def launch(created: tuple[str, PlannedNodeClaim, Mapping[str, Any] | None]) -> ProvisionResult:
        name, claim, existing = created
        pool = planned.pools[claim.nodepool]
        return launch_claim(name, claim, pool, existing, cluster, launcher, tagged.of)

    creator = nodeclaim_creator(planned.pools, classes, batch_id, cluster, annotations)

    def create(item: tuple[str, PlannedNodeClaim]) -> tuple[str, PlannedNodeClaim, Mapping[str, Any] | None]:
        fence()
        return creator(item)

    return Pipeline(planned.claims, create, launch)


def start_launches(
    batch_id: str,
    planned: Plan,
    cluster: Cluster,
    cloud: Cloud,
    state: StateStore,
    now: float,
    result: ProvisionResult,
    timer: Callable[[], float] = time.perf_counter,
) -> Pipeline:
    """Create and launch NodeClaims planned outside a batch of pods (a static NodePool's, by the planner), exactly
    as a batch's are: each launches as soon as it exists. No planner lock: they nominate no pods, so no batch plans
    around them, and the planner (one tick at a time) is the only one that launches for static pools."""
    return _start(batch_id, planned, cluster, cloud, state, now, result, timer(), timer, lambda: None)


class _TaggedLookup:
    """The instances tagged with each of the batch's NodeClaim names, looked up once, on first need.

    Only a claim whose name was already taken (an earlier run of this delivery created it, and may have
    launched it without recording the launch) asks (`launch_claim`); a claim this run created launches at once,
    with CreateFleet's ClientToken (from its name) as the guard, so the first CreateFleet waits for no lookup.
    """

    def __init__(self, cloud: Cloud, names: Sequence[str]) -> None:
        self._cloud = cloud
        self._names = list(names)
        self._lock = threading.Lock()
        self._found: Mapping[str, Sequence[Instance]] | None = None

    def of(self, name: str) -> Sequence[Instance]:
        with self._lock:
            if self._found is None:
                self._found = self._cloud.instances_of_nodeclaims(self._names)
        return self._found.get(name, ())


def _status(snapshot: Snapshot, planned: Plan, cluster: Cluster, result: ProvisionResult) -> None:
    """Status of NodePools and EC2NodeClasses, this batch's launches counted."""
    launched = [
        {"metadata": {"labels": {"karpenter.sh/nodepool": c.nodepool}}, "status": {"capacity": dict(c.capacity)}}
        for c in result.launched
        if not c.reused
    ]
    view = snapshot.view
    try:
        write_status(
            cluster, view.nodepools, view.nodeclasses, [*view.nodeclaims, *launched], view.nodes, planned.node_classes
        )
    except Exception as error:
        # Status is for people; failing the batch for it would leave its launches unanswered.
        result.decide("skipped", "status", f"could not write NodePool and EC2NodeClass status: {error}")
