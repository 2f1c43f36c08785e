"""Provisioning: from a batch of pending pods to launched, recorded NodeClaims, with a reason for everything.

`provision()` is the provisioner Lambda's one service call. In order:

1. Read the cluster (NodePools, EC2NodeClasses, NodeClaims, Nodes with their pods, DaemonSets, volumes)
   and drop batch pods that were bound or deleted since the forwarder sent them.
2. Finish registrations: a launched NodeClaim whose node has appeared (same providerID) is marked
   Registered and `karpenter.sh/unregistered` is removed from the node (its labels came from the user data).
   The forwarder sends a payload without pods as soon as such a node appears; for it, provisioning stops
   after step 3.
3. Clean up: a NodeClaim whose node has not registered 15 minutes after creation is terminated and deleted.
4. Pods nominated to a NodeClaim still in flight wait for it (they are not planned twice); the claim is
   handed to the simulation as capacity in flight.
5. Resolve each EC2NodeClass (subnets, security groups, AMIs, instance profile); its subnets' zones bound
   the NodePools that use it. Offerings marked unavailable in the state store are taken out of the
   catalog; matching capacity reservations are added.
6. `solve()` decides; NodePool limits are enforced there, whatever the batch holds.
7. Every planned NodeClaim is created first (so a concurrent or later batch counts it), then launched with
   CreateFleet attempts reserved -> spot -> on-demand. Capacity errors mark offerings unavailable for 3
   minutes and the claim retries with what is left; throttling stops launching for this invocation and
   the claims not launched are deleted, so the pods come back in a later batch.
8. Pods get a `Nominated` event naming their NodeClaim, or a `FailedScheduling` event with the reason.

Idempotency: a NodeClaim's name derives from the batch id and the claim's content, so a re-run of the same
batch finds the claims it created; a claim that already has an instance is not launched again, and one that
was created but not recorded as launched first looks for an instance tagged with its name. CreateFleet's
ClientToken (from the NodeClaim name) is the last guard.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from nodewright import tags
from nodewright.catalog.allocatable import allocatable as allocatable_of
from nodewright.catalog.allocatable import capacity, root_volume_bytes
from nodewright.catalog.catalog import CapacityReservation, Catalog
from nodewright.catalog.labels import ZONE
from nodewright.catalog.types import InstanceType, InstanceTypeSource
from nodewright.disruption.drain import DISRUPTED_TAINT_KEY, drain_pod
from nodewright.disruption.drift import hash_annotations
from nodewright.disruption.fleet import NOMINATED_PODS_ANNOTATION
from nodewright.disruption.simulate import one_new_node
from nodewright.launch.amis import variant_of
from nodewright.launch.fleet import FleetAttempt, classify_response, fleet_request, plan_attempts
from nodewright.launch.template import LaunchTemplateSpec, ResolvedNodeClass, block_devices
from nodewright.launch.userdata import UNREGISTERED_TAINT, ClusterInfo, NodeBootstrap, UserDataError, user_data
from nodewright.model import resources as res
from nodewright.model.conditions import TRUE, Condition
from nodewright.model.durations import format_duration
from nodewright.model.loader import load_documents
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Node, Pod
from nodewright.model.quantity import format_canonical
from nodewright.model.requirements import Operator, Requirement
from nodewright.ports import (
    Clock,
    Cloud,
    Cluster,
    ClusterView,
    LaunchError,
    LaunchTemplateRecord,
    LaunchTemplateStore,
    NodeClassError,
    OfferingKey,
    PodEvent,
    StateStore,
    Throttled,
)
from nodewright.scheduling import PlannedNodeClaim, Results, Unschedulable, solve
from nodewright.service.batch import Batch

UNAVAILABLE_TTL_SECONDS = 180
# Claims launched side by side (each one CreateFleet call, plus its NodeClaim update).
LAUNCH_CONCURRENCY = 16
REGISTRATION_TIMEOUT_SECONDS = 15 * 60
# A claim is created moments before its CreateFleet; one still without an instance after this was abandoned.
LAUNCH_TIMEOUT_SECONDS = 120
# How long pods nominated to a freshly registered node are left to the kube-scheduler before being planned again.
NOMINATION_GRACE_SECONDS = 120
NODECLAIM_API_VERSION = "nodewright.io/v1"
PODS_ANNOTATION = NOMINATED_PODS_ANNOTATION
BATCH_ANNOTATION = "nodewright.io/batch-id"
PRICE_ANNOTATION = "nodewright.io/price-per-hour"
TEMPLATE_ANNOTATION = "nodewright.io/launch-template"
# A launch template no NodeClaim names is deleted once it is this old: younger ones may be serving a launch
# in flight, or sit in a warm container's template cache (which keeps names for less than this).
TEMPLATE_MIN_AGE_SECONDS = 3600
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# Labels the cloud (or the kubelet) sets on a node itself; left out of user data so one launch template
# serves every zone and type of a NodePool.
_CLOUD_LABELS = frozenset(
    {
        ZONE,
        INSTANCE_TYPE_LABEL,
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "kubernetes.io/hostname",
        "topology.kubernetes.io/region",
        "topology.k8s.aws/zone-id",
        "karpenter.k8s.aws/capacity-reservation-id",
    }
)
# The kubelet may set only these labels in the kubernetes.io / k8s.io namespaces (NodeRestriction).
_KUBELET_ALLOWED_PREFIXES = ("node.kubernetes.io/", "kubelet.kubernetes.io/", "node-role.kubernetes.io/")


@dataclass(frozen=True, slots=True)
class Decision:
    """One thing the provisioner decided, about one subject, and why.

    `action` is one of: launched, launch-failed, nominated, waiting, existing, unschedulable, skipped,
    registered, terminated, invalid, unavailable, throttled, deleted.
    """

    action: str
    subject: str
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "subject": self.subject, "reason": self.reason}
        if self.details:
            out["details"] = dict(self.details)
        return out


@dataclass(frozen=True, slots=True)
class LaunchedClaim:
    """A NodeClaim the provisioner created or reused in this batch, and where it launched."""

    name: str
    nodepool: str
    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    pods: tuple[str, ...]
    reused: bool = False  # found already launched (a re-run), not launched by this call
    # The simulation's first choice (instance type, zone, capacity type); differs from what launched only
    # when EC2 refused it.
    planned: tuple[str, str, str] = ("", "", "")
    template: str = ""  # the launch template the instance came from ("" when adopted or unknown)


@dataclass
class ProvisionResult:
    """Every decision with its reason, the claims launched, and timings (seconds)."""

    batch_id: str
    decisions: list[Decision] = field(default_factory=list)
    launched: list[LaunchedClaim] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    fleet_requests: int = 0

    def decide(self, action: str, subject: str, reason: str, **details: Any) -> None:
        self.decisions.append(Decision(action, subject, reason, details))

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for d in self.decisions:
            counts[d.action] = counts.get(d.action, 0) + 1
        return {
            "batch_id": self.batch_id,
            "summary": dict(sorted(counts.items())),
            "nodeclaims": [
                {
                    "name": c.name,
                    "nodepool": c.nodepool,
                    "instance_id": c.instance_id,
                    "instance_type": c.instance_type,
                    "zone": c.zone,
                    "capacity_type": c.capacity_type,
                    "price_per_hour": c.price,
                    "pods": list(c.pods),
                    "reused": c.reused,
                    "planned": {"instance_type": c.planned[0], "zone": c.planned[1], "capacity_type": c.planned[2]},
                }
                for c in self.launched
            ],
            "decisions": [d.to_json() for d in self.decisions],
            "timings": {k: round(v, 4) for k, v in sorted(self.timings.items())},
            "fleet_requests": self.fleet_requests,
        }


# ---------------------------------------------------------------------------------------- helpers


def pod_key(doc: Mapping[str, Any]) -> str:
    metadata = doc.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


def nodeclaim_name(batch_id: str, claim: PlannedNodeClaim) -> str:
    """Deterministic per (batch, claim content): a re-run of the batch finds the same name."""
    content = "\n".join((batch_id, claim.nodepool, *claim.pods, *claim.instance_types))
    return f"{claim.nodepool}-{hashlib.sha256(content.encode()).hexdigest()[:10]}"


def _iso(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _requirement_json(r: Requirement) -> dict[str, Any]:
    out: dict[str, Any] = {"key": r.key, "operator": r.operator.value}
    if r.operator not in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        out["values"] = list(r.values)
    if r.min_values is not None:
        out["minValues"] = r.min_values
    return out


def _taint_json(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def nodeclaim_document(
    name: str, claim: PlannedNodeClaim, pool: NodePool, batch_id: str, node_class: EC2NodeClass | None = None
) -> dict[str, Any]:
    """The NodeClaim object created before launch (spec as Karpenter v1 writes it), stamped with the hashes of its
    NodePool and EC2NodeClass as they are now, so drift can be told later."""
    annotations = {
        BATCH_ANNOTATION: batch_id,
        PODS_ANNOTATION: json.dumps(list(claim.pods)),
        **hash_annotations(pool, node_class),
    }
    return {
        "apiVersion": NODECLAIM_API_VERSION,
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {**claim.labels, NODEPOOL_LABEL: claim.nodepool},
            "annotations": annotations,
        },
        "spec": {
            "requirements": [_requirement_json(r) for r in claim.requirements],
            "nodeClassRef": {
                "group": pool.node_class_ref.group,
                "kind": pool.node_class_ref.kind,
                "name": pool.node_class_ref.name,
            },
            "taints": [_taint_json(t.key, t.value, t.effect) for t in claim.taints],
            "startupTaints": [_taint_json(t.key, t.value, t.effect) for t in claim.startup_taints],
            "resources": {"requests": {k: format_canonical(k, v) for k, v in sorted(claim.requests.items())}},
            # Copied from the pool as Karpenter v1 does, so a later change to the pool does not move the
            # expiry or the grace period of nodes already running.
            "expireAfter": format_duration(pool.expire_after_seconds),
            **(
                {"terminationGracePeriod": format_duration(pool.termination_grace_period_seconds)}
                if pool.termination_grace_period_seconds is not None
                else {}
            ),
        },
    }


def kubelet_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels a kubelet may register with: cloud-set labels and restricted namespaces left out."""
    out = {}
    for key, value in labels.items():
        if key in _CLOUD_LABELS:
            continue
        domain = key.split("/", 1)[0] if "/" in key else ""
        restricted = domain.endswith(("kubernetes.io", "k8s.io"))
        if restricted and not key.startswith(_KUBELET_ALLOWED_PREFIXES):
            continue
        out[key] = value
    return out


def _nominated(claim: NodeClaim) -> tuple[str, ...]:
    raw = claim.annotations.get(PODS_ANNOTATION, "")
    try:
        pods = json.loads(raw) if raw else []
    except ValueError:
        return ()
    return tuple(str(p) for p in pods) if isinstance(pods, list) else ()


def _registration_times(documents: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """NodeClaim name -> when its Registered condition became True (seconds since the epoch)."""
    out: dict[str, float] = {}
    for doc in documents:
        if doc.get("kind") != "NodeClaim":
            continue
        for condition in (doc.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Registered" and condition.get("status") == "True":
                stamp = str(condition.get("lastTransitionTime") or "")
                try:
                    out[str((doc.get("metadata") or {}).get("name", ""))] = datetime.fromisoformat(
                        stamp.replace("Z", "+00:00")
                    ).timestamp()
                except ValueError:
                    continue
    return out


def _restricted_pool(pool: NodePool, zones: Sequence[str]) -> NodePool:
    """The pool bounded to the zones its EC2NodeClass has subnets in (Karpenter does the same)."""
    return replace(pool, requirements=(*pool.requirements, Requirement(ZONE, Operator.IN, tuple(zones))))


# -------------------------------------------------------------------------------- registrations


def finish_registrations(
    claims: Sequence[NodeClaim], nodes: Sequence[Node], cluster: Cluster, now: float, result: ProvisionResult
) -> dict[str, str]:
    """Mark launched NodeClaims whose node has appeared as Registered; returns claim name -> node name.

    The node loses `karpenter.sh/unregistered`; its labels came with it from the user data (not re-synced here).
    """
    by_provider = {n.provider_id: n for n in nodes if n.provider_id}
    done: dict[str, str] = {}
    for claim in claims:
        node = by_provider.get(claim.provider_id) if claim.provider_id else None
        if node is None:
            continue
        done[claim.name] = node.name
        has_taint = any(t.key == UNREGISTERED_TAINT.key for t in node.taints)
        if claim.registered and not has_taint:
            continue
        cluster.remove_node_taint(node.name, UNREGISTERED_TAINT.key)
        cluster.update_nodeclaim(claim.name, {}, {}, {"nodeName": node.name})
        cluster.set_nodeclaim_conditions(
            claim.name,
            [
                Condition("Launched", TRUE, "Launched"),
                Condition("Registered", TRUE, "Registered", f"node {node.name} registered"),
            ],
        )
        result.decide("registered", f"nodeclaim/{claim.name}", f"node {node.name} registered with {claim.provider_id}")
    return done


def cleanup_unregistered(
    claims: Sequence[NodeClaim],
    registered: Mapping[str, str],
    cluster: Cluster,
    cloud: Cloud,
    now: float,
    result: ProvisionResult,
    timeout: float = REGISTRATION_TIMEOUT_SECONDS,
) -> set[str]:
    """Terminate and delete NodeClaims whose node has not registered `timeout` seconds after creation, and
    claims never recorded as launched `LAUNCH_TIMEOUT_SECONDS` after creation (the invocation that created
    them died between creating and launching; their pods are planned again at once).

    Returns the names removed. The planner can call this too (see `cleanup`).
    """
    removed: set[str] = set()
    for claim in claims:
        if claim.name in registered or claim.registered or not claim.created_at:
            continue
        age = now - claim.created_at
        limit = timeout if claim.provider_id else min(timeout, LAUNCH_TIMEOUT_SECONDS)
        if age < limit:
            continue
        ids = [claim.instance_id] if claim.instance_id else [i.id for i in cloud.instances_of_nodeclaim(claim.name)]
        if ids:
            cloud.terminate(ids)
        cluster.delete_nodeclaim(claim.name)
        removed.add(claim.name)
        result.decide(
            "terminated",
            f"nodeclaim/{claim.name}",
            f"no node registered {int(age)}s after creation (limit {int(limit)}s)"
            if claim.provider_id
            else f"never recorded as launched {int(age)}s after creation (limit {int(limit)}s)",
            instances=ids,
        )
    return removed


def cleanup(
    cluster: Cluster, cloud: Cloud, clock: Clock, templates: LaunchTemplateStore | None = None
) -> ProvisionResult:
    """Registrations and the registration timeout on their own (for the planner's schedule), and launch
    template garbage collection when `templates` is given."""
    now = clock.now()
    result = ProvisionResult(batch_id="cleanup")
    view = cluster.read()
    inputs, _ = load_documents(list(view.documents), "cluster")
    registered = finish_registrations(inputs.nodeclaims, inputs.nodes, cluster, now, result)
    cleanup_unregistered(inputs.nodeclaims, registered, cluster, cloud, now, result)
    if templates is not None:
        collect_launch_templates(view.documents, templates, now, result)
    return result


# ---------------------------------------------------------------------------- launch templates


def stale_launch_templates(
    templates: Sequence[LaunchTemplateRecord],
    nodeclaim_documents: Sequence[Mapping[str, Any]],
    node_classes: Collection[str],
    now: float,
    min_age: float = TEMPLATE_MIN_AGE_SECONDS,
) -> list[tuple[str, str]]:
    """The templates to delete, each with the reason: older than `min_age` and named by no NodeClaim.

    A template's name is its content hash, so a template that the current EC2NodeClasses and NodePools still
    produce is simply created again (one API call) the next time a claim needs it; one that no claim names
    and nobody has needed for `min_age` is most likely outdated (a new AMI, changed user data or settings,
    a deleted EC2NodeClass). Karpenter drops its cached templates on a similar idle timer.
    """
    in_use = {
        str(((doc.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_ANNOTATION, ""))
        for doc in nodeclaim_documents
    }
    out = []
    for template in sorted(templates, key=lambda t: t.name):
        age = now - template.created_at
        if template.name in in_use or age < min_age:
            continue
        why = f"named by no NodeClaim and created {int(age // 60)} minutes ago"
        if template.node_class and template.node_class not in node_classes:
            why += f"; its EC2NodeClass {template.node_class} no longer exists"
        out.append((template.name, why))
    return out


def collect_launch_templates(
    documents: Sequence[Mapping[str, Any]],
    store: LaunchTemplateStore,
    now: float,
    result: ProvisionResult,
    min_age: float = TEMPLATE_MIN_AGE_SECONDS,
) -> None:
    """Delete the stale launch templates (see `stale_launch_templates`), each with a `deleted` decision."""
    claims = [d for d in documents if d.get("kind") == "NodeClaim"]
    node_classes = {
        str((d.get("metadata") or {}).get("name", "")) for d in documents if d.get("kind") == "EC2NodeClass"
    }
    for name, why in stale_launch_templates(store.launch_templates(), claims, node_classes, now, min_age):
        store.delete_launch_template(name)
        result.decide("deleted", f"launchtemplate/{name}", why)


# ------------------------------------------------------------------------------------- provision


@dataclass
class _Launcher:
    """Launch state for one invocation: resolved node classes, templates made, offerings refused."""

    cluster: Cluster
    cloud: Cloud
    state: StateStore
    info: ClusterInfo
    catalog: Catalog
    resolved: Mapping[str, ResolvedNodeClass]
    unavailable: set[OfferingKey]
    now: float
    result: ProvisionResult
    started: float
    clock_seconds: Callable[[], float]
    templates: dict[tuple[object, ...], str] = field(default_factory=dict)
    # Claims launch in parallel threads: shared state (templates, refused offerings, counters) under one lock.
    lock: threading.Lock = field(default_factory=threading.Lock)
    throttled: str = ""

    def variant(self, instance_type: str, resolved: ResolvedNodeClass) -> tuple[str, str] | None:
        it = self.catalog.get(instance_type)
        if it is None:
            return None
        variant = variant_of(it)
        return variant if variant in resolved.images else None

    def template(
        self,
        pool: NodePool,
        claim: PlannedNodeClaim,
        resolved: ResolvedNodeClass,
        attempt: FleetAttempt,
        variant: tuple[str, str],
    ) -> str:
        node_class = resolved.node_class
        labels = kubelet_labels({**claim.labels, NODEPOOL_LABEL: pool.name, CAPACITY_TYPE_LABEL: attempt.capacity_type})
        key = (node_class.name, pool.name, tuple(sorted(labels.items())), variant, attempt.reservation_id)
        if key in self.templates:
            return self.templates[key]
        boot = NodeBootstrap(
            cluster=self.info,
            labels=labels,
            taints=claim.taints,
            startup_taints=claim.startup_taints,
            kubelet=node_class.kubelet,
            user_data=node_class.user_data,
        )
        spec = LaunchTemplateSpec(
            node_class=node_class.name,
            image_id=resolved.images[variant].id,
            instance_profile=resolved.instance_profile,
            security_group_ids=resolved.security_group_ids,
            user_data=user_data(node_class.ami_family, boot),
            block_devices=block_devices(node_class),
            metadata_options=node_class.metadata_options,
            tags=self.tags(pool, node_class.tags, ""),
            detailed_monitoring=node_class.detailed_monitoring,
            associate_public_ip_address=node_class.associate_public_ip_address,
            reservation_id=attempt.reservation_id,
            spot=attempt.capacity_type == "spot",
        )
        name = self.cloud.ensure_launch_template(spec, self.tags(pool, node_class.tags, ""))
        self.templates[key] = name
        return name

    def tags(self, pool: NodePool, extra: Mapping[str, str], nodeclaim: str) -> dict[str, str]:
        return tags.launch_tags(self.info.name, pool.name, pool.node_class_ref.name, nodeclaim, extra)

    def refused(self) -> frozenset[OfferingKey]:
        with self.lock:
            return frozenset(self.unavailable)

    def launch(self, name: str, claim: PlannedNodeClaim, pool: NodePool, out: ProvisionResult) -> LaunchedClaim | None:
        """Try the claim's attempts in order; return the launch, or say in `out` why nothing launched."""
        resolved = self.resolved[pool.node_class_ref.name]
        subject = f"nodeclaim/{name}"
        plan = plan_attempts(
            claim.launch_options,
            lambda zone: s.id if (s := resolved.subnet_for(zone)) else None,
            lambda t: self.variant(t, resolved),
            self.refused(),
        )
        tried: list[str] = []
        for attempt in plan.attempts:
            # Offerings refused earlier in this invocation (by another claim's fleet) are not asked again.
            refused = self.refused()
            overrides = tuple(
                o
                for o in attempt.overrides
                if (o.option.instance_type, o.option.zone, attempt.capacity_type) not in refused
            )
            if not overrides:
                continue
            attempt = replace(attempt, overrides=overrides)
            try:
                with self.lock:
                    templates = {v: self.template(pool, claim, resolved, attempt, v) for v in attempt.variants}
            except (UserDataError, LaunchError) as error:
                out.decide("launch-failed", subject, f"EC2NodeClass {resolved.node_class.name}: {error}")
                return None
            request = fleet_request(name, attempt, templates, self.tags(pool, resolved.node_class.tags, name))
            with self.lock:
                if "first_create_fleet" not in self.result.timings:
                    self.result.timings["first_create_fleet"] = self.clock_seconds() - self.started
                self.result.fleet_requests += 1
            try:
                response = self.cloud.create_fleet(request)
            except LaunchError as error:
                out.decide("launch-failed", subject, f"CreateFleet refused the request: {error}")
                return None
            outcome = classify_response(attempt, response, lambda s: resolved_zone(resolved, s))
            if outcome.unavailable:
                marks = {offering: code for offering, code in outcome.unavailable}
                self.state.mark_unavailable(marks, self.now, UNAVAILABLE_TTL_SECONDS)
                with self.lock:
                    self.unavailable.update(marks)
                for (instance_type, zone, capacity_type), code in outcome.unavailable:
                    out.decide(
                        "unavailable",
                        f"offering/{instance_type}/{zone}/{capacity_type}",
                        f"{code} for {subject}; not offered again for {UNAVAILABLE_TTL_SECONDS}s",
                    )
            if outcome.throttled and outcome.launched is None:
                raise Throttled("; ".join(outcome.errors))
            tried.append(f"{attempt.capacity_type}: {', '.join(outcome.errors) or 'no instance'}")
            if outcome.launched is not None:
                option = outcome.launched.option
                variant = self.variant(option.instance_type, resolved)
                return LaunchedClaim(
                    name,
                    claim.nodepool,
                    outcome.launched.instance_id,
                    option.instance_type,
                    option.zone,
                    option.capacity_type,
                    option.price,
                    claim.pods,
                    template=templates.get(variant, "") if variant is not None else "",
                )
        skipped = "; ".join(sorted({why for _, why in plan.skipped}))
        reason = " | ".join(tried) if tried else "no launch option left"
        if skipped:
            reason += f" (options left out: {skipped})"
        out.decide("launch-failed", subject, reason, options=len(claim.launch_options))
        return None


def _planned(claim: PlannedNodeClaim) -> tuple[str, str, str]:
    return (claim.cheapest.instance_type, claim.cheapest.zone, claim.cheapest.capacity_type)


def resolved_zone(resolved: ResolvedNodeClass, subnet_id: str) -> str | None:
    return next((s.zone for s in resolved.subnets if s.id == subnet_id), None)


def node_resources(it: InstanceType, node_class: EC2NodeClass) -> dict[str, dict[str, str]]:
    """The capacity and allocatable a node of type `it` from `node_class` will report, as quantities.

    Karpenter records both on the NodeClaim when it launches, so `kubectl get nodeclaim -o yaml` (and the
    disruption code, before the node exists) sees what the claim holds; they come from the same
    computation the simulation packed the claim with (kubelet settings, root volume, AMI family).
    """
    args = (it, node_class.kubelet, root_volume_bytes(node_class), node_class.ami_family)
    raid0 = node_class.instance_store_policy == "RAID0"
    return {
        "capacity": {k: format_canonical(k, v) for k, v in sorted(capacity(*args, raid0).items())},
        "allocatable": {k: format_canonical(k, v) for k, v in sorted(allocatable_of(*args, raid0).items())},
    }


def _record_launch(
    cluster: Cluster,
    launched: LaunchedClaim,
    image_id: str,
    now: float,
    resources: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    labels = {
        INSTANCE_TYPE_LABEL: launched.instance_type,
        ZONE: launched.zone,
        CAPACITY_TYPE_LABEL: launched.capacity_type,
    }
    status: dict[str, Any] = {"providerID": f"aws:///{launched.zone}/{launched.instance_id}"}
    if image_id:
        status["imageID"] = image_id
    for key, values in (resources or {}).items():
        status[key] = dict(values)
    annotations = {PRICE_ANNOTATION: f"{launched.price:.6f}"}
    if launched.template:
        # What launch template garbage collection keeps while the claim exists.
        annotations[TEMPLATE_ANNOTATION] = launched.template
    cluster.update_nodeclaim(launched.name, labels, annotations, status)
    where = f"{launched.instance_type} {launched.capacity_type} in {launched.zone}"
    cluster.set_nodeclaim_conditions(launched.name, [Condition("Launched", TRUE, "Launched", where)])


def _filtered(results: Results, plan_filter: Callable[[Results], Results | str]) -> Results:
    """The plan as the filter narrows it; a refusal launches nothing and leaves the new claims' pods unplaced."""
    outcome = plan_filter(results)
    if not isinstance(outcome, str):
        return outcome
    refused = tuple(Unschedulable(key, outcome) for claim in results.nodeclaims for key in claim.pods)
    return Results(existing=results.existing, unschedulable=(*results.unschedulable, *refused))


def being_disrupted(view: ClusterView) -> set[str]:
    """Nodes a disruption is taking away: tainted karpenter.sh/disrupted:NoSchedule or deleting. As Karpenter's
    provisioner does with deleting nodes, their pods are planned as pending and their room is not counted, so a
    replacement in flight for one disruption is not taken by the pods of another, or by a new batch."""
    out = set()
    for doc in view.documents:
        if doc.get("kind") != "Node":
            continue
        metadata, spec = doc.get("metadata") or {}, doc.get("spec") or {}
        taints = spec.get("taints") or []
        tainted = any(t.get("key") == DISRUPTED_TAINT_KEY and t.get("effect") == "NoSchedule" for t in taints)
        if tainted or metadata.get("deletionTimestamp"):
            out.add(str(metadata.get("name")))
    return out


def _displace(view: ClusterView, nodes: Collection[str]) -> ClusterView:
    """The cluster as it will be once `nodes` are gone: their evictable pods wait for capacity, unbound."""
    kept: list[Mapping[str, Any]] = []
    unbound = dict(view.unbound_pods)
    for doc in view.documents:
        metadata = doc.get("metadata") or {}
        if doc.get("kind") == "Node" and metadata.get("name") in nodes:
            continue
        spec = doc.get("spec") or {}
        if doc.get("kind") == "Pod" and spec.get("nodeName") in nodes:
            if not drain_pod(doc).stays:
                unbound[pod_key(doc)] = {**doc, "spec": {k: v for k, v in spec.items() if k != "nodeName"}}
            continue
        kept.append(doc)
    return ClusterView([*kept, *(unbound[k] for k in sorted(set(unbound) - set(view.unbound_pods)))], unbound)


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
    one_claim_in: str = "",
) -> ProvisionResult:
    """Turn a batch of pending pods into NodeClaims and instances; see the module docstring.

    Inputs: the batch, the ports, `clock` (epoch seconds, for timestamps and TTLs), the instance type
    source, `timer` (monotonic seconds, only for the timings reported), and `templates` (when given, a
    batch without pods also garbage-collects launch templates: off the launch path, and run whenever
    nodes register, i.e. after launches, which is when templates are made). Output: every decision with
    its reason, the claims launched (or found launched), and timings. Raises nothing for expected
    failures (invalid objects, unusable node classes, capacity, throttling): they are decisions.

    `displaced_nodes`: the disruption workflow's replacement. The nodes, and every node `being_disrupted`, are
    left out of the capacity, and the pods that must leave them (not DaemonSet, mirror or disrupted-tolerating
    pods) are planned as pending, in addition to the batch's. `plan_filter`: applied to the simulation's plan
    before anything launches (a consolidation narrows its replacement to the cheaper offerings it decided); a
    string it returns refuses the plan: nothing launches and the new NodeClaims' pods are unschedulable for
    that reason. `one_claim_in`: at most one
    new NodeClaim, in this NodePool (a consolidation's replacement: the solver grows one claim rather than opening
    a second, exactly as the consolidation's own simulation did).
    """
    started = timer()
    now = clock.now()
    result = ProvisionResult(batch.batch_id)
    view = cluster.read()
    displaced = set(displaced_nodes) | being_disrupted(view)
    if displaced:
        view = _displace(view, displaced)
    result.timings["read_cluster"] = timer() - started

    batch_pods: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for doc in batch.pods:
        key = pod_key(doc)
        if key in seen:
            continue
        seen.add(key)
        if key not in view.unbound_pods:
            result.decide(
                "skipped", f"pod/{key}", "no longer pending: bound to a node or deleted since the batch was sent"
            )
            continue
        pod_doc = dict(doc)
        pod_doc.setdefault("apiVersion", "v1")
        pod_doc.setdefault("kind", "Pod")
        batch_pods.append(pod_doc)

    inputs, errors = load_documents([*view.documents, *batch_pods], "cluster")
    for error in errors:
        result.decide("invalid", f"{error.kind or 'object'}/{error.name}", f"{error.path}: {error.message}")

    # 2-3: registrations and the registration timeout.
    registered = finish_registrations(inputs.nodeclaims, inputs.nodes, cluster, now, result)
    removed = cleanup_unregistered(inputs.nodeclaims, registered, cluster, cloud, now, result)
    if not inputs.pending_pods:
        # A registration payload (no pods), or a batch whose pods were all bound meanwhile: nothing to plan,
        # so the node classes, catalog and simulation are skipped and a node's taint is off as fast as the
        # reads allow.
        matched = set(registered.values())
        for reported in batch.nodes:
            if reported not in matched:
                result.decide(
                    "skipped",
                    f"node/{reported}",
                    "no launched NodeClaim has this node's providerID (yet); the forwarder sends it again",
                )
        if templates is not None:
            collect_launch_templates(view.documents, templates, now, result)
        result.timings["total"] = timer() - started
        return result

    # 4: nominations. A pod nominated to a NodeClaim in flight waits for it and is not planned again; the
    # claim counts the pods nominated to it that are still pending (one bound elsewhere or deleted frees its
    # room). A pod nominated to a claim whose node registered moments ago waits for the kube-scheduler to
    # bind it there, and its requests are reserved on that node: planning it afresh could pack the new
    # nodes in another order and launch capacity that is not needed. After the grace period a pod still
    # pending is planned like any other.
    pending_by_key = {p.key: p for p in inputs.pending_pods}
    known = dict(pending_by_key)
    nominated_elsewhere = [
        view.unbound_pods[k]
        for c in inputs.nodeclaims
        for k in _nominated(c)
        if k not in known and k in view.unbound_pods
    ]
    if nominated_elsewhere:
        extra, _ = load_documents(nominated_elsewhere, "cluster")
        known.update({p.key: p for p in extra.pending_pods})
    registered_at = _registration_times(view.documents)
    inflight: list[NodeClaim] = []
    waiting: set[str] = set()
    reserved: dict[str, list[Pod]] = {}
    nodes_by_name = {n.name: n for n in inputs.nodes}
    node_used = {n.name: res.total(p.requests for p in n.pods) for n in inputs.nodes}
    for claim_ in inputs.nodeclaims:
        if claim_.name in removed:
            continue
        mine = [known[k] for k in _nominated(claim_) if k in known]
        node_name = registered.get(claim_.name)
        if node_name is not None:
            since = registered_at.get(claim_.name, now) if claim_.registered else now
            node = nodes_by_name.get(node_name)
            if node is None or now - since >= NOMINATION_GRACE_SECONDS:
                continue
            for pod in mine:
                # Only while the node still has room for it: the kube-scheduler may have filled it with
                # other pods, and then this one must be planned now, not after the grace period.
                used = res.add(node_used.get(node_name, {}), pod.requests)
                if not res.fits(used, node.allocatable):
                    continue
                node_used[node_name] = used
                reserved.setdefault(node_name, []).append(pod)
                if pod.key in pending_by_key:
                    waiting.add(pod.key)
                    result.decide(
                        "waiting",
                        f"pod/{pod.key}",
                        f"nominated to nodeclaim/{claim_.name}, whose node {node_name} has registered",
                    )
            continue
        if claim_.registered:
            continue
        for pod in mine:
            if pod.key in pending_by_key:
                waiting.add(pod.key)
                result.decide("waiting", f"pod/{pod.key}", f"nominated to nodeclaim/{claim_.name}, which is in flight")
        requests = res.total(p.requests for p in mine)
        inflight.append(replace(claim_, nominated_pods=tuple(mine), requests=requests))
    # The nodes registered above have just lost karpenter.sh/unregistered; other nodes keep what they have.
    just_registered = set(registered.values())
    nodes = tuple(
        replace(
            n,
            taints=tuple(t for t in n.taints if n.name not in just_registered or t.key != UNREGISTERED_TAINT.key),
            pods=(*n.pods, *reserved.get(n.name, ())),
        )
        for n in inputs.nodes
    )
    pending: list[Pod] = [p for p in inputs.pending_pods if p.key not in waiting]

    # 5: node classes, zones, catalog overlays.
    info = cloud.cluster_info()
    resolved: dict[str, ResolvedNodeClass] = {}
    unusable: dict[str, str] = {}
    for node_class in inputs.nodeclasses:
        try:
            resolved[node_class.name] = cloud.resolve_node_class(node_class, info.version)
        except NodeClassError as error:
            unusable[node_class.name] = str(error)
            result.decide("invalid", f"ec2nodeclass/{node_class.name}", str(error))
    pools: list[NodePool] = []
    for pool in inputs.nodepools:
        ref = pool.node_class_ref.name
        if ref in unusable:
            result.decide("skipped", f"nodepool/{pool.name}", f"EC2NodeClass {ref} is not usable: {unusable[ref]}")
            continue
        rc = resolved.get(ref)
        pools.append(_restricted_pool(pool, rc.zones) if rc is not None else pool)
    unavailable = set(state.unavailable_offerings(now))
    reservations: list[CapacityReservation] = []
    for rc in resolved.values():
        if rc.node_class.capacity_reservation_selector_terms:
            reservations.extend(cloud.capacity_reservations(rc))
    catalog = Catalog(catalog_source.instance_types()).with_reservations(reservations).with_unavailable(unavailable)
    result.timings["prepare"] = timer() - started

    # 6: the simulation.
    if one_claim_in:
        pools = one_new_node(pools, nodes, inflight, one_claim_in)
    solved_at = timer()
    results = solve(
        pending,
        nodes=nodes,
        nodeclaims=inflight,
        nodepools=pools,
        nodeclasses=inputs.nodeclasses,
        instance_types=catalog.instance_types,
        daemonsets=inputs.daemonsets,
        pvcs=inputs.pvcs,
        pvs=inputs.pvs,
        storage_classes=inputs.storage_classes,
    )
    result.timings["solve"] = timer() - solved_at
    if plan_filter is not None:
        results = _filtered(results, plan_filter)
    for target, pods in sorted(results.existing.items()):
        for key in pods:
            result.decide("existing", f"pod/{key}", f"fits on {target}, which exists or is in flight")
    for refusal in results.unschedulable:
        result.decide("unschedulable", f"pod/{refusal.pod}", refusal.reason)

    # 7: each NodeClaim is created (so a later batch counts it), then launched, then recorded. Claims go side
    # by side, so the first CreateFleet does not wait for hundreds of NodeClaims to be written.
    pools_by_name = {p.name: p for p in pools}
    to_launch = [(nodeclaim_name(batch.batch_id, claim), claim) for claim in results.nodeclaims]
    launcher = _Launcher(cluster, cloud, state, info, catalog, resolved, unavailable, now, result, started, timer)

    def launch_claim(name: str, claim: PlannedNodeClaim) -> ProvisionResult:
        """Create, launch (or adopt an instance already tagged with its name) and record one claim; its
        decisions go to its own result."""
        out = ProvisionResult(batch.batch_id)
        pool = pools_by_name[claim.nodepool]
        if launcher.throttled:
            out.decide(
                "throttled",
                f"nodeclaim/{name}",
                f"not launched: EC2 is throttling ({launcher.throttled}); retried later",
            )
            return out
        node_class = launcher.resolved[pool.node_class_ref.name].node_class
        existing = cluster.create_nodeclaim(nodeclaim_document(name, claim, pool, batch.batch_id, node_class))
        if existing is not None and (existing.get("status") or {}).get("providerID"):
            provider_id = str(existing["status"]["providerID"])
            metadata = existing.get("metadata") or {}
            labels = metadata.get("labels") or {}
            out.launched.append(
                LaunchedClaim(
                    name,
                    claim.nodepool,
                    provider_id.rsplit("/", 1)[-1],
                    str(labels.get(INSTANCE_TYPE_LABEL, "")),
                    str(labels.get(ZONE, "")),
                    str(labels.get(CAPACITY_TYPE_LABEL, "")),
                    float((metadata.get("annotations") or {}).get(PRICE_ANNOTATION, 0) or 0),
                    claim.pods,
                    reused=True,
                    planned=_planned(claim),
                )
            )
            out.decide("launched", f"nodeclaim/{name}", f"already launched as {provider_id} (same batch seen before)")
            return out
        throttled = ""
        launched: LaunchedClaim | None = None
        if not throttled:
            adopted = [i for i in cloud.instances_of_nodeclaim(name) if i.state in ("pending", "running")]
            try:
                if adopted:
                    i = adopted[0]
                    price = next(
                        (
                            o.price
                            for o in claim.launch_options
                            if (o.instance_type, o.zone, o.capacity_type) == (i.instance_type, i.zone, i.capacity_type)
                        ),
                        0.0,
                    )
                    launched = LaunchedClaim(
                        name, claim.nodepool, i.id, i.instance_type, i.zone, i.capacity_type, price, claim.pods, True
                    )
                else:
                    launched = launcher.launch(name, claim, pool, out)
            except Throttled as error:
                throttled = str(error) or "RequestLimitExceeded"
                with launcher.lock:
                    launcher.throttled = launcher.throttled or throttled
        if throttled:
            # Back off: this claim (and every one not started yet) is dropped; its pods come back in a later batch.
            cluster.delete_nodeclaim(name)
            out.decide(
                "throttled", f"nodeclaim/{name}", f"not launched: EC2 is throttling ({throttled}); retried later"
            )
            return out
        if launched is None:
            cluster.delete_nodeclaim(name)
            for key in claim.pods:
                out.decide(
                    "unschedulable", f"pod/{key}", f"nodeclaim/{name} could not launch; retried in a later batch"
                )
            return out
        resolved = launcher.resolved[pool.node_class_ref.name]
        it = catalog.get(launched.instance_type)
        variant = launcher.variant(launched.instance_type, resolved)
        image_id = resolved.images[variant].id if variant is not None else ""
        resources = node_resources(it, resolved.node_class) if it is not None else None
        _record_launch(cluster, launched, image_id, now, resources)
        launched = replace(launched, planned=_planned(claim))
        out.launched.append(launched)
        out.decide(
            "launched",
            f"nodeclaim/{name}",
            f"{launched.instance_type} {launched.capacity_type} in {launched.zone} at ${launched.price:.4f}/h "
            f"for {len(claim.pods)} pods (cheapest of {len(claim.launch_options)} options: "
            f"{claim.cheapest.instance_type} {claim.cheapest.capacity_type} {claim.cheapest.zone})",
            instance_id=launched.instance_id,
            reused=launched.reused,
        )
        return out

    # CreateFleet takes a second or two in AWS; a large batch's claims launch side by side. Results are merged
    # in plan order, so the response does not depend on which thread finished first.
    if len(to_launch) <= 1:
        outcomes = [launch_claim(name, claim) for name, claim in to_launch]
    else:
        with ThreadPoolExecutor(max_workers=min(LAUNCH_CONCURRENCY, len(to_launch))) as executor:
            outcomes = list(executor.map(lambda item: launch_claim(*item), to_launch))
    for outcome in outcomes:
        result.launched.extend(outcome.launched)
        result.decisions.extend(outcome.decisions)
    result.timings["launch"] = timer() - started

    # 8: events.
    events: list[PodEvent] = []
    for launched in result.launched:
        for key in launched.pods:
            result.decide("nominated", f"pod/{key}", f"should schedule on nodeclaim/{launched.name}")
            events.append(
                PodEvent(key, "Nominated", f"Pod should schedule on: nodeclaim/{launched.name}", dedupe=launched.name)
            )
    for refusal in results.unschedulable:
        events.append(
            PodEvent(
                refusal.pod, "FailedScheduling", f"Failed to schedule pod, {refusal.reason}", "Warning", batch.batch_id
            )
        )
    if events:
        try:
            cluster.record_events(events)
        except Exception as error:
            # An Event the API server refuses (say, in a namespace being deleted) must not fail the batch:
            # the invocation would raise, its idempotency record would be dropped, and a retry would plan again.
            result.decide("skipped", "events", f"could not record the pods' events: {error}")
    result.timings["total"] = timer() - started
    return result
