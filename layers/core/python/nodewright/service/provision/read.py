"""What one provisioning decision reads from the API server, and nothing more.

The payload is a hint: pod keys with the resourceVersion the forwarder saw. The pods themselves are read from
the API server, and only those that are pending there (`model.pending`: Unschedulable, unbound, not being
deleted, for the default scheduler, not DaemonSet or mirror pods) are planned, with the requests, selectors
and tolerations the API server holds. A forged or stale payload can at most make the provisioner look at
real pending pods sooner.

Reads, in order:

1. `Cluster.read_for_provisioning()`: NodePools, EC2NodeClasses, Nodes, DaemonSets, StorageClasses and the
   pending pods, from the watch cache, and beside it `Cluster.nodeclaims()`, consistently (the planner lock's
   previous holder may have created NodeClaims the cache does not hold yet). In a warm container the Kubernetes
   adapter keeps its Nodes and NodeClaims between batches and reads only their changes (`adapters.informer`).
   Why a launch still cannot be doubled: the NodeClaims are no older than a consistent read taken within the
   planner lock. The adapter takes the resourceVersion a consistent read is at (a one-object page) and uses its
   kept NodeClaims only when their watch delivered an event or bookmark at or past it; otherwise it lists them
   consistently, as it did before it kept them. A NodeClaim the previous lock holder created was written before
   that holder released the lock, so before this read, and is among them with the pods it was launched for
   (`nominated`): those pods wait for it instead of being planned again. When a hinted pod is missing there
   or at an older version, the cache may be behind the forwarder's watch, so the pending pods of those hints'
   namespaces are read again consistently, at most `NAMESPACE_REREADS` namespaces per batch (those with hinted pods
   the cache knows first); the others wait for the next window.
2. For the pods to plan and the pods nominated to NodeClaims in flight: the pods bound to nodes that their
   topology spread and pod (anti-)affinity terms select (label-selected lists, per namespace), the pods on
   nodes that registered in the last `NOMINATION_GRACE_SECONDS` (their room was planned for pods the
   kube-scheduler may not have bound yet), and the PersistentVolumeClaims they name with their volumes.

Not read: the pods on every other node. The pods to plan were found Unschedulable by the kube-scheduler,
which had tried every node there is; it looks at them again by itself when a node frees room. So existing
nodes enter the simulation with their labels (topology domains, NodePool limits) and the pods their terms
select, but without room, and only new and in-flight capacity is planned for them. Karpenter, whose informers
hold every pod anyway, simulates existing nodes too; here that read would cost the whole cluster per window
(50 MB for 20,000 pods). Pod anti-affinity terms of running pods that no pending pod's selector reaches are
not seen (a zonal anti-affinity of a running pod against a pending one); hostname terms cannot matter on a
new node.

The disruption workflow's replacement (`displace`) is different: the nodes' pods may fit on nodes with room,
so it reads every bound pod, once per disruption.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any

from nodewright.disruption.drain import DISRUPTED_TAINT_KEY, drain_pod
from nodewright.model.errors import ValidationError
from nodewright.model.inputs import ClusterInputs
from nodewright.model.loader import ParsedPods, load_documents
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.objects import LabelSelector, Node, Pod
from nodewright.model.pending import not_pending_reason
from nodewright.ports import Cluster, ProvisioningView
from nodewright.scheduling.classes import pod_terms
from nodewright.service.batch import Batch
from nodewright.service.provision.buffers import buffer_pods
from nodewright.service.provision.nodeclaim import PODS_ANNOTATION
from nodewright.service.provision.result import ProvisionResult

# How long pods nominated to a freshly registered node are left to the kube-scheduler before being planned again.
NOMINATION_GRACE_SECONDS = 120
READ_CONCURRENCY = 8
# Namespaces read again consistently per batch for hints the watch cache does not confirm (one LIST each, inside the
# planner lock): the cache is rarely behind by more than a few namespaces, and forged hints must not cost thousands.
NAMESPACE_REREADS = 8


def pod_key(doc: Mapping[str, Any]) -> str:
    metadata = doc.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


def nominated(claim: NodeClaim) -> tuple[str, ...]:
    """The pods (`ns/name`) the claim was launched for (its `nodewright.io/pods` annotation)."""
    raw = claim.annotations.get(PODS_ANNOTATION, "")
    return _pods_annotation(raw) if raw else ()


@lru_cache(maxsize=1 << 15)
def _pods_annotation(raw: str) -> tuple[str, ...]:
    # Read for every NodeClaim twice a batch, and a claim's annotation never changes: parsed once per text.
    try:
        pods = json.loads(raw)
    except ValueError:
        return ()
    return tuple(str(p) for p in pods) if isinstance(pods, list) else ()


def registration_times(claims: Iterable[NodeClaim]) -> dict[str, float]:
    """NodeClaim name -> when its Registered condition became True (seconds since the epoch), for the claims whose
    condition says (`NodeClaim.registered_at`)."""
    return {c.name: c.registered_at for c in claims if c.registered and c.registered_at}


@dataclass
class Snapshot:
    """The cluster as one decision sees it.

    `view`: what `Cluster.read_for_provisioning()` returned, with `pending` replaced by the consistent read when
    that was needed. `base`: its NodePools, EC2NodeClasses, NodeClaims and Nodes loaded (nodes without pods).
    After `assemble`: `inputs`, everything the simulation gets, the pods to plan as `pending_pods` and the
    nodes with the bound pods that were read; `nominated`, the pending pods nominated to NodeClaims in flight
    that are not planned here; `room_known`, the nodes whose every pod was read (the others are full as far
    as the simulation is concerned).
    """

    view: ProvisioningView
    base: ClusterInputs
    # Pods parsed once per (uid, resourceVersion), for every load of this decision (and of a warm container's).
    parsed_pods: ParsedPods = field(default_factory=dict)
    inputs: ClusterInputs = field(default_factory=ClusterInputs)
    nominated: dict[str, Pod] = field(default_factory=dict)
    room_known: set[str] = field(default_factory=set)
    # The pods that must leave nodes being disrupted (or displaced), planned as pending: a NodeClaim that names one
    # keeps room for it for as long as it drains, however long ago that claim's node registered.
    moving: set[str] = field(default_factory=set)
    # Namespaces of unconfirmed hints left unread past the re-read cap (`NAMESPACE_REREADS`).
    unread: set[str] = field(default_factory=set)


def read_cluster(
    batch: Batch, cluster: Cluster, result: ProvisionResult, parsed_pods: ParsedPods | None = None
) -> Snapshot:
    """Step 1 (see the module doc): the cached read, verified against the batch's hints. `parsed_pods`: a
    container's cache of parsed pods (see `model.loader`), kept across calls. NodeClaims are read consistently,
    beside the cached read: the watch cache may lag behind the NodeClaims the previous holder of the planner lock
    created, and a planner that missed them would launch for their pods again."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        claims = executor.submit(cluster.nodeclaims)
        view = cluster.read_for_provisioning()
        view = replace(view, nodeclaims=list(claims.result()))
    stale, unread = reread_namespaces(batch, view.pending)
    if unread:
        # Each namespace re-read is one consistent LIST inside the planner lock: forged hints must not buy thousands.
        hinted = sum(1 for h in batch.pods if h.namespace in unread)
        result.decide(
            "skipped",
            "hints",
            f"{len(unread)} namespace(s) with {hinted} hinted pod(s) the watch cache does not confirm were not read "
            f"again (at most {NAMESPACE_REREADS} per batch); the forwarder sends pods still pending again",
            namespaces=len(unread),
            pods=hinted,
        )
    if stale:
        # The watch cache is behind the forwarder (or the pod moved on): the consistent read of the stale hints'
        # namespaces decides for their pods; the other namespaces keep the cached read.
        fresh = cluster.pending_pods(stale)
        kept = {k: doc for k, doc in view.pending.items() if k.split("/", 1)[0] not in stale}
        view = replace(view, pending={**kept, **fresh})
    parsed = parsed_pods if parsed_pods is not None else {}
    base, errors = load_documents(view.documents, "cluster", False, parsed)
    for error in errors:
        result.decide("invalid", f"{error.kind or 'object'}/{error.name}", f"{error.path}: {error.message}")
    return Snapshot(view, base, parsed, unread=set(unread))


def reread_namespaces(batch: Batch, cached: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(the namespaces to read again consistently, those left unread past `NAMESPACE_REREADS`) for the hints the
    watch cache does not confirm (`PodHint.confirmed_by`: missing, or at an older version). A pod the cache holds at
    a later version was written since the forwarder saw it, as the kube-scheduler rewrites a pending pod's condition
    message whenever nodes come and go: the cache is not behind on it. Namespaces with a hinted pod the cache knows
    (same uid, an older version: a real pod the cache is behind on) go first, then those with the most hints: a
    forged hint names a pod the cache has never seen."""
    known: dict[str, int] = {}
    hints: dict[str, int] = {}
    for hint in batch.pods:
        found = cached.get(hint.key)
        if found is not None and hint.confirmed_by(found):
            continue
        hints[hint.namespace] = hints.get(hint.namespace, 0) + 1
        uid = (found.get("metadata") or {}).get("uid") if found is not None else None
        if found is not None and (not hint.uid or uid == hint.uid):
            known[hint.namespace] = known.get(hint.namespace, 0) + 1
    ranked = sorted(hints, key=lambda ns: (-known.get(ns, 0), -hints[ns], ns))
    return sorted(ranked[:NAMESPACE_REREADS]), sorted(ranked[NAMESPACE_REREADS:])


def pods_to_plan(batch: Batch, snapshot: Snapshot, result: ProvisionResult) -> list[Mapping[str, Any]]:
    """The hinted pods that are pending as read, each once; the others are `skipped` with the reason."""
    out: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for hint in batch.pods:
        if hint.key in seen:
            continue
        seen.add(hint.key)
        doc = snapshot.view.pending.get(hint.key)
        if doc is None and hint.namespace in snapshot.unread:
            why = "not in the watch cache, and its namespace was not read again this batch (the re-read cap)"
            result.decide("skipped", f"pod/{hint.key}", why)
            continue
        if doc is None:
            result.decide("skipped", f"pod/{hint.key}", "not pending: bound to a node or deleted since it was sent")
            continue
        why = not_pending_reason(doc)
        if why:
            result.decide("skipped", f"pod/{hint.key}", f"not pending as read from the API server: {why}")
            continue
        out.append(_pod(doc))
    return out


def _pod(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {**doc, "apiVersion": "v1", "kind": "Pod"}


def recent_nodes(snapshot: Snapshot, registered: Mapping[str, str], now: float) -> dict[str, float]:
    """Node name -> when its NodeClaim registered, for claims that registered within the nomination grace
    period (registered by this very call: now)."""
    times = registration_times(snapshot.base.nodeclaims)
    out: dict[str, float] = {}
    for claim in snapshot.base.nodeclaims:
        node = registered.get(claim.name)
        if node is None:
            continue
        since = times.get(claim.name, now) if claim.registered else now
        if now - since < NOMINATION_GRACE_SECONDS:
            out[node] = since
    return out


def selected_pods(cluster: Cluster, pods: Iterable[Pod]) -> list[Mapping[str, Any]]:
    """The bound pods the pods' topology spread and pod (anti-)affinity terms count, each list read once."""
    lists: dict[tuple[str, str], tuple[str | None, LabelSelector]] = {}
    for pod in pods:
        required, preferred = pod_terms(pod)
        for term in (*required, *preferred):
            for namespace in sorted(term.namespaces) if term.namespaces is not None else [None]:
                lists.setdefault((namespace or "", repr(term.selector)), (namespace, term.selector))
    reads = [partial(cluster.bound_pods, *lists[k]) for k in sorted(lists)]
    out: dict[str, Mapping[str, Any]] = {}
    for docs in side_by_side(reads):
        for doc in docs:
            out.setdefault(pod_key(doc), doc)
    return list(out.values())


def side_by_side(reads: Sequence[Callable[[], Sequence[Mapping[str, Any]]]]) -> list[Sequence[Mapping[str, Any]]]:
    """Independent reads of the API server at once (a provisioner that was away may find dozens of freshly
    registered nodes); results in the order of `reads`."""
    if len(reads) <= 1:
        return [read() for read in reads]
    with ThreadPoolExecutor(max_workers=min(READ_CONCURRENCY, len(reads))) as executor:
        return list(executor.map(lambda read: read(), reads))


def assemble(
    snapshot: Snapshot,
    cluster: Cluster,
    to_plan: Sequence[Mapping[str, Any]],
    bound: Iterable[Mapping[str, Any]],
    room_known: Iterable[str],
    result: ProvisionResult,
) -> None:
    """Load what the simulation gets into `snapshot`: the pods to plan (those a later read found bound are
    `skipped`), the bound pods read (on nodes that exist), the volumes the pods to plan name, and the pods
    nominated to NodeClaims in flight."""
    names = {n.name for n in snapshot.base.nodes}
    # A pod bound to a node that left since the nodes were read would be an error: it is simply not counted.
    placed = {pod_key(d): _pod(d) for d in bound if (d.get("spec") or {}).get("nodeName") in names}
    bound_since = [d for d in to_plan if pod_key(d) in placed]
    for doc in bound_since:
        # Read pending first, bound by a later read: the kube-scheduler placed it meanwhile.
        result.decide("skipped", f"pod/{pod_key(doc)}", "not pending: bound to a node since it was read")
    to_plan = [d for d in to_plan if pod_key(d) not in placed]
    planned = {pod_key(d) for d in to_plan}
    # Pods nominated to NodeClaims in flight and pending as read, unless a later read found them bound.
    elsewhere = [
        _pod(snapshot.view.pending[k])
        for k in sorted({k for c in snapshot.base.nodeclaims for k in nominated(c)})
        if k in snapshot.view.pending and k not in planned and k not in placed
    ]
    loaded, _ = load_documents([*to_plan, *elsewhere], "cluster", False, snapshot.parsed_pods)
    snapshot.nominated = {p.key: p for p in loaded.pending_pods if p.key not in planned}
    claims = sorted({(p.namespace, name) for p in loaded.pending_pods if p.key in planned for name in p.pvc_names})
    pvcs, pvs = cluster.volumes(claims) if claims else ((), ())
    inputs, errors = with_pods(snapshot, [*pvcs, *pvs, *placed.values(), *to_plan])
    for error in errors:
        if error.kind == "Pod" and error.name in planned:
            result.decide("invalid", f"pod/{error.name}", f"{error.path}: {error.message}")
    snapshot.inputs = inputs
    snapshot.room_known = set(room_known) & names


def with_pods(snapshot: Snapshot, extra: Sequence[Mapping[str, Any]]) -> tuple[ClusterInputs, list[ValidationError]]:
    """`snapshot.base` with the pods and volumes of `extra` loaded in: what loading the view's documents together
    with `extra` gives, without loading every Node and NodeClaim again (tens of thousands at scale). Only the
    storage classes (for the claims' default class) and the Nodes the pods are bound to are loaded with them;
    those Nodes, now with their pods, take their places in `base.nodes`."""
    wanted = {str((d.get("spec") or {}).get("nodeName") or "") for d in extra if d.get("kind") == "Pod"} - {""}
    nodes = [d for d in snapshot.view.nodes if (d.get("metadata") or {}).get("name") in wanted]
    documents = [*snapshot.view.storage_classes, *nodes, *extra]
    loaded, errors = load_documents(documents, "cluster", False, snapshot.parsed_pods)
    bound = {n.name: n for n in loaded.nodes}
    objects = tuple(o for o in loaded.objects if o.kind not in ("Node", "StorageClass"))
    inputs = replace(
        snapshot.base,
        nodes=tuple(bound.get(n.name, n) for n in snapshot.base.nodes),
        pending_pods=loaded.pending_pods,
        pvcs=loaded.pvcs,
        pvs=loaded.pvs,
        objects=(*snapshot.base.objects, *objects),
    )
    return inputs, errors


def deleting(docs: Iterable[Mapping[str, Any]]) -> set[str]:
    """The names of the objects among `docs` that are being deleted (held by a finalizer)."""
    out: set[str] = set()
    for doc in docs:  # a plain loop: run over every Node and NodeClaim of the cluster each batch
        metadata = doc.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            out.add(str(metadata.get("name")))
    return out


def being_disrupted(nodes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Nodes a disruption is taking away: tainted karpenter.sh/disrupted:NoSchedule or being deleted. As
    Karpenter's provisioner does with deleting nodes, their pods are planned as pending and their room is not
    counted, so a replacement in flight for one disruption is not taken by the pods of another, or by a batch."""
    nodes = list(nodes)
    tainted: set[str] = set()
    for doc in nodes:  # a plain loop: most nodes have no taint at all
        for t in (doc.get("spec") or {}).get("taints") or ():
            if t.get("key") == DISRUPTED_TAINT_KEY and t.get("effect") == "NoSchedule":
                tainted.add(str((doc.get("metadata") or {}).get("name")))
                break
    return tainted | deleting(nodes)


def read_pods(
    batch: Batch,
    snapshot: Snapshot,
    cluster: Cluster,
    recent: Mapping[str, float],
    displaced_nodes: Collection[str],
    result: ProvisionResult,
    registered: Mapping[str, str] | None = None,
) -> bool:
    """Step 2 (see the module doc): read the pods the decision needs and load everything into `snapshot`.
    `recent`: the nodes that registered within the nomination grace period; `displaced_nodes`: the workflow's
    replacement (see `displace`); `registered`: claim -> node for claims whose node exists. Nodes
    `being_disrupted` are displaced on every call: their pods that must move are planned with the batch's, and
    the pods on the nodes of the NodeClaims named for them are read, so that room is counted for them (see
    `inflight`). Returns False when there is nothing to plan."""
    disrupted = being_disrupted(snapshot.view.nodes)
    if displaced_nodes:
        to_plan, bound = displace(snapshot, cluster, {*displaced_nodes, *disrupted})
        room_known: set[str] = {n.name for n in snapshot.base.nodes}
        snapshot.moving = {pod_key(d) for d in to_plan}
    else:
        # A CapacityBuffer's virtual pods the planner asked for are planned like the hinted pods.
        to_plan = [*pods_to_plan(batch, snapshot, result), *buffer_pods(batch, cluster, result)]
        pods, _ = load_documents(to_plan, "cluster", False, snapshot.parsed_pods)
        leaving = sorted(disrupted)
        on_nodes = side_by_side([partial(cluster.pods_on_node, node) for node in (*sorted(recent), *leaving)])
        bound = [p for docs in on_nodes[: len(recent)] for p in docs]
        bound += selected_pods(cluster, pods.pending_pods)
        room_known = set(recent) - disrupted
        if leaving:
            _drop_nodes(snapshot, disrupted)
            moving, _ = split_moving([p for docs in on_nodes[len(recent) :] for p in docs], disrupted)
            planned = {pod_key(d) for d in to_plan}
            to_plan = [*to_plan, *(d for d in moving if pod_key(d) not in planned)]
            snapshot.moving = {pod_key(d) for d in moving}
            holders = sorted(_holders(snapshot, registered or {}, snapshot.moving) - disrupted - set(recent))
            bound += [p for docs in side_by_side([partial(cluster.pods_on_node, n) for n in holders]) for p in docs]
            room_known |= set(holders)
    if not to_plan:
        return False
    assemble(snapshot, cluster, to_plan, bound, room_known, result)
    return bool(snapshot.inputs.pending_pods)


def _holders(snapshot: Snapshot, registered: Mapping[str, str], moving: Collection[str]) -> set[str]:
    """The nodes of registered NodeClaims that name a pod of a node being drained: a replacement (or a claim an
    earlier batch launched for those pods), whose room is theirs until they are evicted."""
    keys = set(moving)
    return {
        registered[c.name] for c in snapshot.base.nodeclaims if c.name in registered and keys.intersection(nominated(c))
    }


def full_nodes(
    nodes: Sequence[Node], room_known: set[str], kept: dict[str, tuple[Node, Node]] | None = None
) -> tuple[Node, ...]:
    """Nodes whose pods were not all read get no room: the kube-scheduler has already found them full for
    the pods to plan (see the module doc). Their labels and the pods read for topology stay. `kept`: a warm
    container's copies from the last call, node name -> (the node given, its copy without room); a copy is reused
    only for the very same node object (see `warm`), and afterwards `kept` holds this call's nodes only."""
    if kept is None:
        return tuple(n if n.name in room_known else replace(n, allocatable={}) for n in nodes)
    out: list[Node] = []
    now: dict[str, tuple[Node, Node]] = {}
    for n in nodes:
        if n.name in room_known:
            out.append(n)
            continue
        found = kept.get(n.name)
        if found is None or found[0] is not n:
            found = (n, replace(n, allocatable={}))
        now[n.name] = found
        out.append(found[1])
    kept.clear()
    kept.update(now)
    return tuple(out)


def displace(
    snapshot: Snapshot, cluster: Cluster, nodes: Collection[str]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """For the disruption workflow's replacement: `nodes` leave the snapshot, their pods that must move are the
    pods to plan (unbound), and every other bound pod is read, since here existing room matters. Returns
    (pods to plan, bound pods)."""
    _drop_nodes(snapshot, nodes)
    return split_moving(cluster.bound_pods(None, None), nodes)


def _drop_nodes(snapshot: Snapshot, nodes: Collection[str]) -> None:
    snapshot.view = replace(
        snapshot.view, nodes=[d for d in snapshot.view.nodes if (d.get("metadata") or {}).get("name") not in nodes]
    )
    snapshot.base = replace(snapshot.base, nodes=tuple(n for n in snapshot.base.nodes if n.name not in nodes))


def split_moving(
    docs: Iterable[Mapping[str, Any]], nodes: Collection[str]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(the pods on `nodes` that must move, as they will be once evicted; the pods bound elsewhere). DaemonSet,
    mirror and disrupted-tolerating pods stay with their node and are in neither."""
    moving: list[Mapping[str, Any]] = []
    bound: list[Mapping[str, Any]] = []
    for doc in docs:
        spec = doc.get("spec") or {}
        if spec.get("nodeName") not in nodes:
            bound.append(doc)
        elif not drain_pod(doc).stays:
            # Unbound, and no longer the version parsed (and cached) as bound.
            metadata = {k: v for k, v in (doc.get("metadata") or {}).items() if k != "resourceVersion"}
            moving.append(
                _pod({**doc, "metadata": metadata, "spec": {k: v for k, v in spec.items() if k != "nodeName"}})
            )
    return moving, bound
