"""Launching planned NodeClaims with CreateFleet, and what each launch records.

Each claim's attempts go reserved -> spot -> on-demand (`launch.fleet.plan_attempts`), every attempt one
`CreateFleet` of type instant over the claim's cheapest compatible (instance type x subnet) overrides.
Capacity errors mark offerings unavailable for 3 minutes in the shared state store and the claim tries what
is left; throttling stops launching for this invocation and the claims not launched are deleted, so their
pods are planned again in the next window. A claim created by an earlier run of the same delivery is not
launched twice: one already recorded as launched is reused, one found existing with an instance tagged with
its name is adopted, and CreateFleet's ClientToken (from the NodeClaim name) guards the rest (a claim this run
created launches without a lookup, as Karpenter's does; an instance no NodeClaim records is collected).
Claims launch side by side, each as soon as its NodeClaim exists (`pipeline`), so the first CreateFleet of a
large batch waits for no other claim.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright import tags
from nodewright.catalog.catalog import Catalog
from nodewright.catalog.labels import ZONE
from nodewright.launch.amis import variant_of
from nodewright.launch.fleet import FleetAttempt, classify_response, fleet_request, plan_attempts, resolution_gone
from nodewright.launch.instance_store import node_image_version
from nodewright.launch.template import LaunchTemplateSpec, ResolvedNodeClass, block_devices
from nodewright.launch.userdata import ClusterInfo, NodeBootstrap, UserDataError, user_data
from nodewright.model.nodepool import NodePool
from nodewright.ports import Cloud, Cluster, Instance, LaunchError, OfferingKey, StateStore, Throttled
from nodewright.scheduling import PlannedNodeClaim
from nodewright.service.provision.nodeclaim import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    PRICE_ANNOTATION,
    node_resources,
    record_launch,
)
from nodewright.service.provision.result import CAPACITY, LaunchedClaim, ProvisionResult

UNAVAILABLE_TTL_SECONDS = 180
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
# What the kubelet may register with in the kubernetes.io and k8s.io namespaces (k8s.io/kubelet's IsKubeletLabel;
# it refuses to start with any other there): these labels, and anything under kubelet.kubernetes.io or
# node.kubernetes.io. `node-role.kubernetes.io/*` is not among them.
_KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "beta.kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/arch",
    }
)
_KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _in_domain(domain: str, parent: str) -> bool:
    return domain == parent or domain.endswith("." + parent)


def kubelet_may_set(key: str) -> bool:
    """False for a label in the kubernetes.io / k8s.io namespaces that the kubelet may not register with."""
    domain = key.split("/", 1)[0] if "/" in key else ""
    if not (_in_domain(domain, "kubernetes.io") or _in_domain(domain, "k8s.io")):
        return True
    return key in _KUBELET_LABELS or any(_in_domain(domain, ns) for ns in _KUBELET_NAMESPACES)


def kubelet_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels a kubelet may register with: cloud-set labels and the kubernetes.io / k8s.io labels it may not
    set left out (registration copies those from the NodeClaim, see `lifecycle`)."""
    return {key: value for key, value in labels.items() if key not in _CLOUD_LABELS and kubelet_may_set(key)}


@dataclass
class Launcher:
    """Launch state for one invocation: resolved node classes, templates made, offerings refused."""

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
            instance_store_policy=node_class.instance_store_policy,
            image_version=node_image_version(node_class, resolved.images[variant]),
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

    def forget_if_gone(self, resolved: ResolvedNodeClass, errors: Sequence[str]) -> None:
        """A launch that found a resolved subnet, security group, image or instance profile gone drops the class's
        cached resolution, so the next batch resolves it afresh rather than failing until the cache expires."""
        if resolution_gone(errors):
            self.cloud.forget_node_class(resolved.node_class)

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
                self.forget_if_gone(resolved, [str(error)])
                out.decide("launch-failed", subject, f"CreateFleet refused the request: {error}")
                return None
            outcome = classify_response(attempt, response, lambda s: resolved_zone(resolved, s))
            if outcome.launched is None:
                self.forget_if_gone(resolved, outcome.errors)
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
        cause = {"cause": CAPACITY} if any(d.action == "unavailable" for d in out.decisions) else {}
        out.decide("launch-failed", subject, reason, options=len(claim.launch_options), **cause)
        return None


def _planned(claim: PlannedNodeClaim) -> tuple[str, str, str]:
    return (claim.cheapest.instance_type, claim.cheapest.zone, claim.cheapest.capacity_type)


def resolved_zone(resolved: ResolvedNodeClass, subnet_id: str) -> str | None:
    return next((s.zone for s in resolved.subnets if s.id == subnet_id), None)


def _found_launched(name: str, claim: PlannedNodeClaim, existing: Mapping[str, Any]) -> LaunchedClaim:
    provider_id = str(existing["status"]["providerID"])
    metadata = existing.get("metadata") or {}
    labels = metadata.get("labels") or {}
    return LaunchedClaim(
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


def _adopt(name: str, claim: PlannedNodeClaim, tagged: Sequence[Instance]) -> LaunchedClaim | None:
    """An instance already tagged with the claim's name (its launch was not recorded), as a launch. `tagged`:
    the instances tagged with its name."""
    adopted = [i for i in tagged if i.state in ("pending", "running")]
    if not adopted:
        return None
    i = adopted[0]
    offered = (
        o
        for o in claim.launch_options
        if (o.instance_type, o.zone, o.capacity_type) == (i.instance_type, i.zone, i.capacity_type)
    )
    price = next((o.price for o in offered), 0.0)
    return LaunchedClaim(name, claim.nodepool, i.id, i.instance_type, i.zone, i.capacity_type, price, claim.pods, True)


def launch_claim(
    name: str,
    claim: PlannedNodeClaim,
    pool: NodePool,
    existing: Mapping[str, Any] | None,
    cluster: Cluster,
    launcher: Launcher,
    tagged: Callable[[str], Sequence[Instance]],
) -> ProvisionResult:
    """Launch one created claim (or, when its name was already taken, adopt the instance tagged with it) and
    record it; its decisions go to its own result. `tagged(name)`: the instances tagged with a claim's name,
    looked up once for the whole batch."""
    out = ProvisionResult(launcher.result.batch_id)
    subject = f"nodeclaim/{name}"
    if existing is not None and (existing.get("status") or {}).get("providerID"):
        out.launched.append(_found_launched(name, claim, existing))
        out.decide("launched", subject, f"already launched as {existing['status']['providerID']} (same delivery)")
        return out
    launched: LaunchedClaim | None = None
    throttled = launcher.throttled
    if not throttled:
        try:
            # Only a claim found existing may have been launched, unrecorded, by an earlier run of this delivery.
            found = tagged(name) if existing is not None else ()
            launched = _adopt(name, claim, found) or launcher.launch(name, claim, pool, out)
        except Throttled as error:
            throttled = str(error) or "RequestLimitExceeded"
            with launcher.lock:
                launcher.throttled = launcher.throttled or throttled
    if throttled:
        # Back off: this claim (and every one not started yet) is dropped; its pods are planned again later.
        cluster.delete_nodeclaim(name)
        out.decide("throttled", subject, f"not launched: EC2 is throttling ({throttled}); retried in the next window")
        return out
    if launched is None:
        cluster.delete_nodeclaim(name)
        failed = next((d for d in out.decisions if d.action == "launch-failed"), None)
        cause = {"cause": CAPACITY} if failed is not None and failed.details.get("cause") == CAPACITY else {}
        why = f": {failed.reason}" if failed is not None else ""
        for key in claim.pods:
            out.decide(
                "unschedulable",
                f"pod/{key}",
                f"{subject} could not launch{why}; evaluated again in the next window",
                nodeclaim=name,
                **cause,
            )
        return out
    resolved = launcher.resolved[pool.node_class_ref.name]
    it = launcher.catalog.get(launched.instance_type)
    variant = launcher.variant(launched.instance_type, resolved)
    image_id = resolved.images[variant].id if variant is not None else ""
    resources = node_resources(it, resolved.node_class) if it is not None else None
    record_launch(cluster, launched, image_id, resources)
    launched = replace(launched, planned=_planned(claim), capacity=(resources or {}).get("capacity", {}))
    out.launched.append(launched)
    out.decide(
        "launched",
        subject,
        f"{launched.instance_type} {launched.capacity_type} in {launched.zone} at ${launched.price:.4f}/h "
        f"for {len(claim.pods)} pods (cheapest of {len(claim.launch_options)} options: "
        f"{claim.cheapest.instance_type} {claim.cheapest.capacity_type} {claim.cheapest.zone})",
        instance_id=launched.instance_id,
        reused=launched.reused,
        nodepool=claim.nodepool,
        pods=list(claim.pods),
    )
    return out
