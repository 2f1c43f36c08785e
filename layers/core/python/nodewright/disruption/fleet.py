"""The fleet as disruption sees it: one `FleetNode` per NodeClaim, joined to its Node by providerID.

Read from camelCase API documents (NodeClaims, Nodes), so the planner and the workflow decide on exactly what
the API server holds. A NodeClaim carries its own `expireAfter` and `terminationGracePeriod` (copied from its
NodePool's template when it was created, as Karpenter v1 does). A claim without `expireAfter` falls back to its
pool's; a claim without `terminationGracePeriod` has none, whatever its pool says now (Karpenter reads the grace
period from the NodeClaim only: a pool given one later does not bound the drain of claims launched before).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.disruption.drain import DISRUPTED_TAINT_KEY
from nodewright.model.conditions import condition_of, parse_rfc3339
from nodewright.model.do_not_disrupt import DO_NOT_DISRUPT
from nodewright.model.durations import DurationError, parse_duration
from nodewright.model.nodepool import NodePool
from nodewright.model.parse import NODECLASS_GROUPS
from nodewright.tags import CORDONED

NODEPOOL_LABEL = "karpenter.sh/nodepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"
INITIALIZED = "Initialized"
DRIFTED = "Drifted"
CONSOLIDATABLE = "Consolidatable"
# Set on a NodeClaim once its node is drained and EC2 accepted the termination of its instance.
INSTANCE_TERMINATING = "InstanceTerminating"
# The pods the provisioner nominated to a NodeClaim (a JSON list of namespace/name), written at creation.
NOMINATED_PODS_ANNOTATION = "nodewright.io/pods"
# On a rebalance's early replacement (RFC 3339): emptiness and consolidation leave it alone until then, while the
# recommendation may still turn into a Spot warning whose pods it is there for.
PROTECTED_UNTIL_ANNOTATION = "nodewright.io/protected-until"


@dataclass(frozen=True, slots=True)
class NodeCondition:
    """One of the Node's status conditions: its type, status and last transition (epoch seconds, 0 when absent)."""

    type: str
    status: str
    since: float


@dataclass(frozen=True, slots=True)
class FleetNode:
    """A NodeClaim and (once registered) its Node.

    `expire_after` / `termination_grace_period`: seconds, None for Never / unset. `disrupting`: the node carries
    karpenter.sh/disrupted:NoSchedule (a workflow is draining it). `tainted`: it carries a karpenter.sh/disrupted taint
    of any effect (a rebalance's PreferNoSchedule too); `cordoned`: nodewright cordoned it (`tags.CORDONED`): both are
    undone when no live lease is behind them. `deleting`: the NodeClaim or Node has a deletion
    timestamp. `labels`: the Node's labels over the NodeClaim's (what the node is: instance type, zone, capacity
    type, pool). `initialized`: the NodeClaim says Initialized, or (until a writer sets that condition) its node is
    registered, Ready and without startup or registration taints; `initialized_at` is when. `last_pod_event`:
    `status.lastPodEventTime` (a pod bound to or removed from the node), 0 when unknown. `drifted`: the reason of
    a True `Drifted` condition ("" when not drifted). `nominated`: pods the provisioner sized the claim for.
    `instance_terminating`: the NodeClaim's `InstanceTerminating` condition is True (its instance is being
    terminated: the node no longer counts toward its pool's disruption budget).
    `node_conditions`: the Node's status conditions (what node repair reads).
    `problems`: fields that could not be read, by path.
    """

    nodeclaim: str
    nodepool: str
    node: str
    instance_id: str
    provider_id: str
    created_at: float
    registered: bool
    ready: bool
    expire_after: int | None
    termination_grace_period: int | None
    disrupting: bool
    do_not_disrupt: bool
    problems: tuple[str, ...] = ()
    tainted: bool = False
    cordoned: bool = False
    deleting: bool = False
    deleted_at: float = 0.0  # the earlier deletionTimestamp of the NodeClaim and its Node, when deleting
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    initialized: bool = False
    initialized_at: float = 0.0
    last_pod_event: float = 0.0
    image_id: str = ""
    drifted: str = ""
    drifted_at: float = 0.0
    consolidatable: bool = False
    nominated: tuple[str, ...] = ()
    instance_terminating: bool = False
    node_conditions: tuple[NodeCondition, ...] = ()

    @property
    def instance_type(self) -> str:
        return self.labels.get(INSTANCE_TYPE_LABEL, "")

    @property
    def zone(self) -> str:
        return self.labels.get(ZONE_LABEL, "")

    @property
    def capacity_type(self) -> str:
        return self.labels.get(CAPACITY_TYPE_LABEL, "")


def epoch(stamp: str) -> float:
    """RFC 3339 (as the API server writes timestamps) to epoch seconds; 0.0 when empty or malformed."""
    return parse_rfc3339(stamp) or 0.0


def _condition(doc: Mapping[str, Any], kind: str) -> bool:
    found = condition_of(doc, kind)
    return found is not None and found.get("status") == "True"


def _since(doc: Mapping[str, Any], kind: str) -> float:
    found = condition_of(doc, kind)
    return epoch(str(found.get("lastTransitionTime") or "")) if found is not None else 0.0


def _duration(
    spec: Mapping[str, Any], field_name: str, fallback: int | None, problems: list[str], allow_never: bool
) -> int | None:
    if field_name not in spec or spec[field_name] is None:
        return fallback
    try:
        return parse_duration(str(spec[field_name]), allow_never=allow_never)
    except DurationError as error:
        problems.append(f"spec.{field_name}: {error}")
        return fallback


def _initialized(claim: Mapping[str, Any], node: Mapping[str, Any] | None, ready: bool) -> tuple[bool, float]:
    """Karpenter's Initialized: the condition when a writer set it; otherwise derived from the node as Karpenter's
    initialization controller does (Ready, registration and startup taints gone)."""
    if condition_of(claim, INITIALIZED) is not None:
        return _condition(claim, INITIALIZED), _since(claim, INITIALIZED)
    if node is None or not ready:
        return False, 0.0
    startup = {str(t.get("key")) for t in (claim.get("spec") or {}).get("startupTaints") or []}
    taints = {str(t.get("key")) for t in (node.get("spec") or {}).get("taints") or []}
    if UNREGISTERED_TAINT_KEY in taints or startup & taints:
        return False, 0.0
    registered_at = _since(claim, "Registered") or epoch(str((node.get("metadata") or {}).get("creationTimestamp")))
    return True, registered_at


def disowns(claim: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """Why `node` is not `claim`'s node ("" when it is): their providerIDs must agree and the node must carry the
    claim's `karpenter.sh/nodepool` label.

    A NodeClaim's status is only as trustworthy as whoever may write it. The label is the node's own (the kubelet
    registers with it from nodewright's user data), so a claim pointed at a node nodewright did not launch (a
    managed node group's, whose nodes carry no such label) joins nothing, and that node is never drained, expired
    or consolidated through it.
    """
    claim_provider = str((claim.get("status") or {}).get("providerID") or "")
    node_provider = str((node.get("spec") or {}).get("providerID") or "")
    if not claim_provider or claim_provider != node_provider:
        return f"the node's providerID {node_provider or '(none)'} is not the NodeClaim's {claim_provider or '(none)'}"
    pool = str(((claim.get("metadata") or {}).get("labels") or {}).get(NODEPOOL_LABEL) or "")
    node_pool = str(((node.get("metadata") or {}).get("labels") or {}).get(NODEPOOL_LABEL) or "")
    if not pool or node_pool != pool:
        return f"the node's {NODEPOOL_LABEL} label {node_pool or '(none)'} is not the NodeClaim's {pool or '(none)'}"
    return ""


NODECLASS_KIND = "EC2NodeClass"


def manages(claim: Mapping[str, Any]) -> bool:
    """Whether nodewright manages `claim`: its `spec.nodeClassRef` names an EC2NodeClass of a group nodewright
    launches (Karpenter's nodeclaimutils.IsManaged: the ref's group and kind are among the cloud provider's node
    classes). A NodeClaim of another cloud provider's node class (another Karpenter in the same cluster) is not
    ours: it is never expired, drifted, consolidated, drained or garbage collected. A claim without a ref (the
    CRD requires one; only hand-written snapshots lack it) is taken as ours."""
    ref = (claim.get("spec") or {}).get("nodeClassRef")
    if not isinstance(ref, Mapping):
        return True
    return ref.get("group") in NODECLASS_GROUPS and ref.get("kind") == NODECLASS_KIND


def fleet_nodes(
    nodeclaims: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]], pools: Mapping[str, NodePool]
) -> list[FleetNode]:
    """Join NodeClaims to Nodes (by providerID, then by status.nodeName), only where `disowns` finds nothing to
    object to; sorted by NodeClaim name. NodeClaims nodewright does not manage (`manages`) are left out: nothing
    downstream (planner, reconciliation, workflows) ever sees them."""
    by_provider: dict[str, Mapping[str, Any]] = {}
    by_name: dict[str, Mapping[str, Any]] = {}
    for doc in nodes:
        by_name[str((doc.get("metadata") or {}).get("name", ""))] = doc
        provider = str((doc.get("spec") or {}).get("providerID") or "")
        if provider:
            by_provider[provider] = doc
    return sorted(
        (_fleet_node(c, by_provider, by_name, pools) for c in nodeclaims if manages(c)), key=lambda n: n.nodeclaim
    )


def _fleet_node(
    claim: Mapping[str, Any],
    by_provider: Mapping[str, Mapping[str, Any]],
    by_name: Mapping[str, Mapping[str, Any]],
    pools: Mapping[str, NodePool],
) -> FleetNode:
    metadata = claim.get("metadata") or {}
    spec = claim.get("spec") or {}
    status = claim.get("status") or {}
    claim_labels = metadata.get("labels") or {}
    pool_name = str(claim_labels.get(NODEPOOL_LABEL, ""))
    pool = pools.get(pool_name)
    provider = str(status.get("providerID") or "")
    node: Mapping[str, Any] | None = by_provider.get(provider) if provider else None
    if node is None and status.get("nodeName"):
        node = by_name.get(str(status["nodeName"]))
    if node is not None and disowns(claim, node):
        # Not ours to act on: the claim stays unregistered (the registration timeout or instance garbage
        # collection deals with it), and the node is never a candidate through it.
        node = None
    node_meta = (node or {}).get("metadata") or {}
    taints = ((node or {}).get("spec") or {}).get("taints") or []
    ready = node is not None and _condition(node, "Ready")
    initialized, initialized_at = _initialized(claim, node, ready)
    drifted = condition_of(claim, DRIFTED)
    problems: list[str] = []
    return FleetNode(
        nodeclaim=str(metadata.get("name", "")),
        nodepool=pool_name,
        node=str(node_meta.get("name", "")),
        instance_id=provider.rsplit("/", 1)[-1] if provider else "",
        provider_id=provider,
        created_at=epoch(str(metadata.get("creationTimestamp") or "")),
        registered=node is not None,
        ready=ready,
        expire_after=_duration(
            spec, "expireAfter", pool.expire_after_seconds if pool else None, problems, allow_never=True
        ),
        # The claim's own, written at launch; never its pool's (Karpenter reads only the NodeClaim's): a claim
        # launched before its pool had one is drained without a deadline.
        termination_grace_period=_duration(spec, "terminationGracePeriod", None, problems, allow_never=False),
        disrupting=any(t.get("key") == DISRUPTED_TAINT_KEY and t.get("effect") == "NoSchedule" for t in taints),
        do_not_disrupt=str((node_meta.get("annotations") or {}).get(DO_NOT_DISRUPT, "")) == "true",
        problems=tuple(problems),
        tainted=any(t.get("key") == DISRUPTED_TAINT_KEY for t in taints),
        cordoned=CORDONED in (node_meta.get("annotations") or {}),
        deleting=bool(metadata.get("deletionTimestamp") or node_meta.get("deletionTimestamp")),
        deleted_at=min(
            (epoch(str(m["deletionTimestamp"])) for m in (metadata, node_meta) if m.get("deletionTimestamp")),
            default=0.0,
        ),
        labels={**claim_labels, **(node_meta.get("labels") or {})},
        annotations=dict(metadata.get("annotations") or {}),
        initialized=initialized,
        initialized_at=initialized_at,
        last_pod_event=epoch(str(status.get("lastPodEventTime") or "")),
        image_id=str(status.get("imageID") or ""),
        drifted=str(drifted.get("reason") or DRIFTED) if drifted and drifted.get("status") == "True" else "",
        drifted_at=_since(claim, DRIFTED),
        consolidatable=_condition(claim, CONSOLIDATABLE),
        nominated=_nominated(metadata.get("annotations") or {}),
        instance_terminating=_condition(claim, INSTANCE_TERMINATING),
        node_conditions=_node_conditions(node),
    )


def _node_conditions(node: Mapping[str, Any] | None) -> tuple[NodeCondition, ...]:
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return tuple(
        NodeCondition(str(c["type"]), str(c.get("status") or ""), epoch(str(c.get("lastTransitionTime") or "")))
        for c in conditions
        if isinstance(c, Mapping) and c.get("type")
    )


def _nominated(annotations: Mapping[str, Any]) -> tuple[str, ...]:
    try:
        pods = json.loads(str(annotations.get(NOMINATED_PODS_ANNOTATION) or "[]"))
    except ValueError:
        return ()
    return tuple(str(p) for p in pods) if isinstance(pods, list) else ()
