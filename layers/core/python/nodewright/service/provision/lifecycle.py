"""A NodeClaim's life after launch: Registered, Initialized and Ready as in Karpenter, and the claims whose node
never came.

Karpenter's lifecycle controller (v1.9.1 `pkg/controllers/nodeclaim/lifecycle`), reproduced:

- Registered: a node with the claim's providerID exists. It gets the termination finalizer (`model.nodeclaim`),
  the NodeClaim's labels, taints and startup taints (v1.14.1 `registration.go` syncNode: labels assigned over
  the node's, taints merged by key and effect, taints skipped when the node is labelled
  `karpenter.sh/do-not-sync-taints=true`), is labelled `karpenter.sh/registered=true`, its
  `karpenter.sh/unregistered` taint comes off last, and the claim records `status.nodeName`. Copying the
  labels is what lets a NodePool set labels in the kubernetes.io and k8s.io domains that the kubelet may not
  register with (`model.label_rules`). Karpenter also copies the claim's annotations; nodewright's NodeClaim
  annotations are its own bookkeeping (price, launch template), so they stay on the claim.
- Initialized (`initialization.go`): the node is registered and Ready, none of the claim's startup taints is
  left on it, none of the known ephemeral taints (not-ready, unreachable, the cloud provider's
  uninitialized, `karpenter.sh/unregistered`), and every resource the claim requested is in the node's
  allocatable (a device plugin has registered its GPUs). The node is then labelled
  `karpenter.sh/initialized=true`. Until then the condition is Unknown with Karpenter's reason
  (NodeNotReady, StartupTaintsExist, KnownEphemeralTaintsExist, ResourceNotRegistered).
- Ready: True when Launched, Registered and Initialized are; otherwise Unknown, naming what is not yet True.

Who runs it: every provisioner invocation (registration payloads from the forwarder's node watch arrive as a
node joins, is Ready, or loses a startup taint; a batch of pods does it after launching, off the path to its
first CreateFleet), the planner's one-minute tick, and the disruption workflow's replacement check. Each writes
only the condition types it owns, merged by type (`set_nodeclaim_conditions`), and only when something changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from nodewright.launch.userdata import UNREGISTERED_TAINT
from nodewright.model.conditions import TRUE, UNKNOWN, Condition, condition_of, parse_rfc3339
from nodewright.model.loader import load_documents
from nodewright.model.nodeclaim import INITIALIZED_LABEL, REGISTERED_LABEL, NodeClaim
from nodewright.model.objects import Node
from nodewright.model.taints import Taint
from nodewright.ports import Clock, Cloud, Cluster, LaunchTemplateStore
from nodewright.service.provision.adopt import ADOPTABLE_STATES, adopt_instance
from nodewright.service.provision.nodeclaim import INITIALIZED, LAUNCHED, READY, REGISTERED
from nodewright.service.provision.result import Decision, ProvisionResult
from nodewright.service.provision.templates import collect_launch_templates

REGISTRATION_TIMEOUT_SECONDS = 15 * 60
# Karpenter's NodeDoNotSyncTaintsLabelKey: a node so labelled keeps its own taints at registration.
DO_NOT_SYNC_TAINTS_LABEL = "karpenter.sh/do-not-sync-taints"
# A claim is created moments before its CreateFleet; one still without an instance after this was abandoned.
LAUNCH_TIMEOUT_SECONDS = 120
# Claims whose lifecycle writes go side by side.
LIFECYCLE_CONCURRENCY = 8
# (key, effect) of the taints a node carries while it starts (Karpenter's scheduling.KnownEphemeralTaints).
KNOWN_EPHEMERAL_TAINTS = (
    ("node.kubernetes.io/not-ready", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
    (UNREGISTERED_TAINT.key, UNREGISTERED_TAINT.effect),
)


@dataclass(frozen=True, slots=True)
class Initialization:
    """Whether a registered node is initialized, and if not Karpenter's reason and message."""

    done: bool
    reason: str = INITIALIZED
    message: str = ""


def _taint_text(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def initialization(claim: NodeClaim, node: Node) -> Initialization:
    """Karpenter's initialization check of a registered claim's node (see the module doc)."""
    if not node.ready:
        return Initialization(False, "NodeNotReady", "Node status is NotReady")
    for startup in claim.startup_taints:
        for taint in node.taints:
            if (taint.key, taint.effect) == (startup.key, startup.effect):
                return Initialization(False, "StartupTaintsExist", f'StartupTaint "{_taint_text(taint)}" still exists')
    for taint in node.taints:
        if (taint.key, taint.effect) in KNOWN_EPHEMERAL_TAINTS:
            return Initialization(
                False, "KnownEphemeralTaintsExist", f'KnownEphemeralTaint "{_taint_text(taint)}" still exists'
            )
    for name, quantity in sorted(claim.requests.items()):
        # The kubelet reports an extended resource as zero until its device plugin registers it.
        if quantity > 0 and node.allocatable.get(name, 0) <= 0:
            return Initialization(False, "ResourceNotRegistered", f'Resource "{name}" was requested but not registered')
    return Initialization(True)


def ready_condition(statuses: Mapping[str, str]) -> Condition:
    """The root condition over Launched, Registered and Initialized (operatorpkg's ready condition set)."""
    waiting = [f"{kind}={statuses.get(kind) or UNKNOWN}" for kind in (LAUNCHED, REGISTERED, INITIALIZED)]
    waiting = [w for w in waiting if not w.endswith(f"={TRUE}")]
    if not waiting:
        return Condition(READY, TRUE, READY)
    return Condition(READY, UNKNOWN, "ReconcilingDependents", ", ".join(waiting))


def _current(claim: NodeClaim, kind: str) -> tuple[str, str]:
    return claim.conditions.get(kind, ("", ""))


def nodes_of(claims: Sequence[NodeClaim], nodes: Sequence[Node]) -> dict[str, str]:
    """Claim name -> node name, for every launched claim whose node exists (matched by providerID). Pure."""
    by_provider = {n.provider_id: n.name for n in nodes if n.provider_id}
    return {c.name: by_provider[c.provider_id] for c in claims if c.provider_id and c.provider_id in by_provider}


def finish_registrations(
    claims: Sequence[NodeClaim], nodes: Sequence[Node], cluster: Cluster, now: float, result: ProvisionResult
) -> dict[str, str]:
    """Move launched NodeClaims whose node has appeared through Registered and Initialized (module doc);
    returns claim name -> node name for every claim whose node exists.

    Writes only what changed: a registered, initialized claim costs nothing. Claims are independent, so their
    writes go side by side (a provisioner that was away finds dozens of nodes to register); decisions come
    back in claim order. `now` is kept for the callers' signature; the conditions' times come from the
    cluster port's clock.
    """
    del now
    done = nodes_of(claims, nodes)
    by_name = {n.name: n for n in nodes}
    # Only the claims with a step left go to the pool: at ten thousand registered, initialized claims, a task
    # each cost more than the batch's whole decision.
    work = [(c, by_name[done[c.name]]) for c in claims if c.name in done and _has_work(c, by_name[done[c.name]])]
    if len(work) <= 1:
        outcomes = [_advance(claim, node, cluster) for claim, node in work]
    else:
        with ThreadPoolExecutor(max_workers=min(LIFECYCLE_CONCURRENCY, len(work))) as executor:
            outcomes = list(executor.map(lambda item: _advance(item[0], item[1], cluster), work))
    for decisions in outcomes:
        result.decisions.extend(decisions)
    return done


def _has_work(claim: NodeClaim, node: Node) -> bool:
    """Whether `_advance` has anything to do for the claim: not yet Registered or Initialized, or its node still
    carries the unregistered taint."""
    unregistered = any(t.key == UNREGISTERED_TAINT.key for t in node.taints)
    return not claim.registered or not claim.initialized or unregistered


def _advance(claim: NodeClaim, node: Node, cluster: Cluster) -> list[Decision]:
    """The lifecycle writes of one claim whose node exists; returns its decisions."""
    decisions: list[Decision] = []
    statuses = {kind: status for kind, (status, _) in claim.conditions.items()}
    updates: list[Condition] = []
    if not claim.registered or any(t.key == UNREGISTERED_TAINT.key for t in node.taints):
        # As Karpenter's registration: the node is nodewright's to terminate before any pod can land on it.
        cluster.add_node_finalizer(node.name)
        # The claim's labels and taints go on before the unregistered taint comes off, so no pod can land on
        # the node without them.
        cluster.label_node(node.name, {**sync_labels(claim, node), REGISTERED_LABEL: "true"})
        for taint in sync_taints(claim, node):
            cluster.add_node_taint(node.name, taint.key, taint.value, taint.effect)
        cluster.remove_node_taint(node.name, UNREGISTERED_TAINT.key)
        cluster.update_nodeclaim(claim.name, {}, {}, {"nodeName": node.name})
        updates.append(Condition(REGISTERED, TRUE, REGISTERED, f"node {node.name} registered"))
        if statuses.get(LAUNCHED) != TRUE:
            updates.append(Condition(LAUNCHED, TRUE, LAUNCHED))
        node = _without_taint(node, UNREGISTERED_TAINT.key)
        reason = f"node {node.name} registered with {claim.provider_id}"
        decisions.append(Decision("registered", f"nodeclaim/{claim.name}", reason))
    if not claim.initialized:
        check = initialization(claim, node)
        if check.done:
            cluster.label_node(node.name, {INITIALIZED_LABEL: "true"})
            updates.append(Condition(INITIALIZED, TRUE, INITIALIZED))
            decisions.append(Decision("initialized", f"nodeclaim/{claim.name}", f"node {node.name} is initialized"))
        elif updates or _current(claim, INITIALIZED) != (UNKNOWN, check.reason):
            updates.append(Condition(INITIALIZED, UNKNOWN, check.reason, check.message))
    if not updates:
        return decisions
    statuses.update({c.type: c.status for c in updates})
    ready = ready_condition(statuses)
    if _current(claim, READY) != (ready.status, ready.reason) or ready.status == TRUE:
        updates.append(ready)
    cluster.set_nodeclaim_conditions(claim.name, updates)
    return decisions


def sync_labels(claim: NodeClaim, node: Node) -> dict[str, str]:
    """The claim's labels the node lacks or has with another value (Karpenter assigns the claim's labels over
    the node's at registration). Pure."""
    return {key: value for key, value in claim.labels.items() if node.labels.get(key) != value}


def sync_taints(claim: NodeClaim, node: Node) -> list[Taint]:
    """The claim's taints, then its startup taints, that the node lacks by key and effect (Karpenter's
    `Taints.Merge` at registration); none when the node is labelled `karpenter.sh/do-not-sync-taints=true`,
    Karpenter's sign that something else manages its taints. Pure.

    The kubelet normally registers with all of them already (nodewright's user data lists them); this covers
    user data that replaced them, as Karpenter's registration does."""
    if node.labels.get(DO_NOT_SYNC_TAINTS_LABEL) == "true":
        return []
    have = {(t.key, t.effect) for t in node.taints}
    out = []
    for taint in (*claim.taints, *claim.startup_taints):
        if (taint.key, taint.effect) not in have:
            have.add((taint.key, taint.effect))
            out.append(taint)
    return out


def _without_taint(node: Node, key: str) -> Node:
    return replace(node, taints=tuple(t for t in node.taints if t.key != key))


def _stamp(condition: Mapping[str, Any] | None) -> float:
    """A condition's lastTransitionTime in epoch seconds; 0.0 when absent or malformed."""
    return parse_rfc3339((condition or {}).get("lastTransitionTime")) or 0.0


def liveness_clocks(documents: Sequence[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """NodeClaim name -> (when its launch timeout starts, when its registration timeout starts), read from the
    NodeClaim documents among `documents` (other kinds are ignored); 0.0 where its conditions do not say.

    As Karpenter's liveness.go: the launch timeout counts from the transition of a Launched condition that is not
    True (a failed launch), the registration timeout from the Registered condition's transition (written Unknown
    when the instance launched), or the Launched one's when Registered is absent. Not from creationTimestamp:
    a claim whose launch was retried, or whose conditions were written late, is not cut short.
    """
    out: dict[str, tuple[float, float]] = {}
    for doc in documents:
        if doc.get("kind", "NodeClaim") != "NodeClaim":  # list items may come without their kind
            continue
        launched = condition_of(doc, LAUNCHED)
        registered = condition_of(doc, REGISTERED)
        launch = _stamp(launched) if launched is not None and launched.get("status") != TRUE else 0.0
        launched_at = _stamp(launched) if launched is not None and launched.get("status") == TRUE else 0.0
        out[str((doc.get("metadata") or {}).get("name") or "")] = (launch, _stamp(registered) or launched_at)
    return out


def cleanup_unregistered(
    claims: Sequence[NodeClaim],
    registered: Mapping[str, str],
    cluster: Cluster,
    cloud: Cloud,
    now: float,
    result: ProvisionResult,
    timeout: float = REGISTRATION_TIMEOUT_SECONDS,
    documents: Sequence[Mapping[str, Any]] = (),
) -> set[str]:
    """Terminate and delete NodeClaims whose node has not registered `timeout` seconds after launch, and
    claims never recorded as launched `LAUNCH_TIMEOUT_SECONDS` after creation (the invocation that created
    them died between creating and launching; their pods are planned again at once). A claim never recorded as
    launched whose instance is found by its tag (the invocation died after CreateFleet) adopts that instance
    instead (`adopt`): terminating it would throw a healthy launch away and launch again for the same pods.

    `documents`: the NodeClaim documents `claims` were read from; their conditions' transition times start the
    clocks (`liveness_clocks`, as Karpenter's liveness does); a claim whose conditions do not say (or when no
    documents are given) is timed from its creationTimestamp.

    Returns the names removed. The planner calls this too (see `cleanup`).
    """
    removed: set[str] = set()
    # Only the claims that can time out need their clocks: at ten thousand registered claims, reading every
    # claim's conditions cost more than the batch's decision.
    timed = {c.name for c in claims if not (c.name in registered or c.registered or not c.created_at)}
    clocks = liveness_clocks([d for d in documents if (d.get("metadata") or {}).get("name") in timed]) if timed else {}
    for claim in claims:
        if claim.name in registered or claim.registered or not claim.created_at:
            continue
        launch_since, registration_since = clocks.get(claim.name, (0.0, 0.0))
        if claim.provider_id:
            age = now - (registration_since or claim.created_at)
            limit = timeout
        else:
            age = now - (launch_since or claim.created_at)
            limit = min(timeout, LAUNCH_TIMEOUT_SECONDS)
        if age < limit:
            continue
        tagged = [] if claim.instance_id else list(cloud.instances_of_nodeclaim(claim.name))
        live = sorted((i for i in tagged if i.state in ADOPTABLE_STATES), key=lambda i: (i.launch_time, i.id))
        if not claim.provider_id and live:
            # The oldest is kept; any other tagged for this claim is collected by providerID once this is recorded.
            adopt_instance(cluster, claim.name, live[0])
            result.decide(
                "adopted",
                f"nodeclaim/{claim.name}",
                f"instance {live[0].id} was launched for it but never recorded ({int(age)}s after creation)",
            )
            continue
        ids = [claim.instance_id] if claim.instance_id else [i.id for i in tagged]
        if ids:
            cloud.terminate(ids)
        cluster.delete_nodeclaim(claim.name)
        removed.add(claim.name)
        result.decide(
            "terminated",
            f"nodeclaim/{claim.name}",
            f"no node registered {int(age)}s after launch (limit {int(limit)}s)"
            if claim.provider_id
            else f"never recorded as launched {int(age)}s after {'its failed launch' if launch_since else 'creation'} "
            f"(limit {int(limit)}s)",
            instances=ids,
        )
    return removed


def cleanup(
    cluster: Cluster, cloud: Cloud, clock: Clock, templates: LaunchTemplateStore | None = None
) -> ProvisionResult:
    """Registrations, initialization and the registration timeout on their own (for a schedule), and launch
    template garbage collection when `templates` is given."""
    now = clock.now()
    result = ProvisionResult(batch_id="cleanup")
    view = cluster.read_fleet()
    documents = [*view.nodepools, *view.nodeclasses, *view.nodeclaims, *view.nodes]
    inputs, _ = load_documents(documents, "cluster")
    registered = finish_registrations(inputs.nodeclaims, inputs.nodes, cluster, now, result)
    cleanup_unregistered(inputs.nodeclaims, registered, cluster, cloud, now, result, documents=view.nodeclaims)
    if templates is not None:
        collect_launch_templates(documents, templates, now, result)
    return result
