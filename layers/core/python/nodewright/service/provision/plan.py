"""Planning new capacity: the EC2NodeClasses resolved, the catalog as EC2 offers it now, and the simulation.

Each EC2NodeClass is resolved against the account (subnets, security groups, AMIs, instance profile); its
subnets' zones bound the NodePools that use it, as in Karpenter, and a NodePool whose class cannot be used
plans nothing (its pods say why). Offerings marked unavailable in the state store are taken out of the
catalog and matching capacity reservations are added. Then `solve()` decides, NodePool limits included, and
each planned NodeClaim gets its name (from the delivery and its content).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.catalog.catalog import Catalog
from nodewright.catalog.labels import CAPACITY_RESERVATION_ID, ZONE
from nodewright.catalog.overlay import overlaid_catalog
from nodewright.catalog.types import InstanceTypeSource
from nodewright.disruption.one_node import one_new_node
from nodewright.launch.template import ResolvedNodeClass
from nodewright.launch.userdata import ClusterInfo
from nodewright.model.inputs import ClusterInputs
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.requirements import Operator, Requirement
from nodewright.ports import Cloud, OfferingKey, StateStore
from nodewright.scheduling import PlannedNodeClaim, TemplateCache, solve
from nodewright.scheduling.kept import KeptRegistration
from nodewright.scheduling.results import Results, Unschedulable
from nodewright.service.provision.inflight import Capacity
from nodewright.service.provision.nodeclaim import nodeclaim_name
from nodewright.service.provision.result import ProvisionResult
from nodewright.service.status import NodeClassState, resolve_node_classes


@dataclass
class Plan:
    """What the simulation decided, and what launching it needs.

    `claims` are the NodeClaims to create and launch, named; a filter between planning and launching (the
    consolidation's "cheaper only") may drop or narrow them before they are created.
    """

    results: Results
    claims: list[tuple[str, PlannedNodeClaim]]
    pools: Mapping[str, NodePool]
    catalog: Catalog
    resolved: Mapping[str, ResolvedNodeClass]
    node_classes: Mapping[str, NodeClassState]
    unavailable: set[OfferingKey]
    info: ClusterInfo
    prepared_at: float = 0.0  # `timer()` when the catalog was ready and the simulation started


def filtered(results: Results, plan_filter: Callable[[Results], Results | str]) -> Results:
    """The plan as the filter narrows it (a consolidation's replacement: within the cheaper offerings it decided);
    a refusal launches nothing and leaves the new claims' pods unplaced for the reason it gives."""
    outcome = plan_filter(results)
    if not isinstance(outcome, str):
        return outcome
    refused = tuple(Unschedulable(key, outcome) for claim in results.nodeclaims for key in claim.pods)
    return Results(existing=results.existing, unschedulable=(*results.unschedulable, *refused))


def restricted_pool(pool: NodePool, zones: Sequence[str], foreign_reservations: Sequence[str] = ()) -> NodePool:
    """The pool bounded to the zones its EC2NodeClass has subnets in and kept out of the capacity reservations
    only other EC2NodeClasses select (Karpenter offers a NodePool its own EC2NodeClass's reservations only)."""
    bounds = [Requirement(ZONE, Operator.IN, tuple(zones))]
    if foreign_reservations:
        bounds.append(Requirement(CAPACITY_RESERVATION_ID, Operator.NOT_IN, tuple(foreign_reservations)))
    return replace(pool, requirements=(*pool.requirements, *bounds))


def plan(
    batch_id: str,
    inputs: ClusterInputs,
    capacity: Capacity,
    cloud: Cloud,
    state: StateStore,
    catalog_source: InstanceTypeSource,
    now: float,
    result: ProvisionResult,
    timer: Callable[[], float] = time.perf_counter,
    plan_filter: Callable[[Results], Results | str] | None = None,
    one_claim_in: str = "",
    nodepool_templates: TemplateCache | None = None,
    kept: KeptRegistration | None = None,
    resolution: Resolution | None = None,
) -> Plan:
    """Resolve, build the catalog, solve; every refusal and every skipped NodePool is a decision in `result`.
    The simulation's own time goes into `result.timings["solve"]`. `plan_filter` narrows the simulation's plan
    before anything is named or created (see `filtered`); `one_claim_in` allows at most one new NodeClaim, in
    that NodePool (see `disruption.one_node.one_new_node`). `nodepool_templates`: NodePools prepared against the
    catalog by earlier calls (see `scheduling.TemplateCache`); `kept`: the existing nodes as a warm container's
    earlier solve registered them (`scheduling.kept`); `resolution`: the EC2NodeClasses resolved already (`resolve`)."""
    ready = prepare(inputs, cloud, state, catalog_source, now, result, resolution)
    pools, catalog = ready.pools, ready.catalog
    if one_claim_in:
        pools = one_new_node(pools, capacity.nodes, capacity.inflight, one_claim_in)
    prepared_at = timer()
    results = solve(
        capacity.pending,
        nodes=capacity.nodes,
        nodeclaims=capacity.inflight,
        nodepools=pools,
        nodeclasses=inputs.nodeclasses,
        instance_types=catalog.instance_types,
        daemonsets=inputs.daemonsets,
        pvcs=inputs.pvcs,
        pvs=inputs.pvs,
        storage_classes=inputs.storage_classes,
        templates=nodepool_templates,
        kept=kept,
    )
    result.timings["solve"] = timer() - prepared_at
    if plan_filter is not None:
        results = filtered(results, plan_filter)
    for target, pods in sorted(results.existing.items()):
        for key in pods:
            result.decide("existing", f"pod/{key}", f"fits on {target}, which exists or is in flight")
    for refusal in results.unschedulable:
        result.decide("unschedulable", f"pod/{refusal.pod}", refusal.reason)
    return Plan(
        results,
        [(nodeclaim_name(batch_id, claim), claim) for claim in results.nodeclaims],
        {p.name: p for p in pools},
        catalog,
        ready.resolved,
        ready.node_classes,
        ready.unavailable,
        ready.info,
        prepared_at,
    )


@dataclass(frozen=True)
class Resolution:
    """The cluster's version and AMI facts (`info`) and each EC2NodeClass resolved against the account."""

    info: ClusterInfo
    node_classes: Mapping[str, NodeClassState]


def resolve(node_classes: Sequence[EC2NodeClass], cloud: Cloud) -> Resolution:
    """Resolve the EC2NodeClasses (subnets, security groups, AMIs, instance profile; see `resolve_node_classes`).
    Only AWS calls, no decision: a provisioner runs it beside its second read of the cluster."""
    info = cloud.cluster_info()
    return Resolution(info, resolve_node_classes(node_classes, cloud, info.version))


@dataclass
class Prepared:
    """What a plan of new capacity starts from: the cluster's version and AMI facts, each EC2NodeClass resolved
    (`resolved`: the usable ones), the NodePools bounded by their class's zones and reservations (those whose class
    is unusable left out) and the catalog as EC2 offers it now."""

    info: ClusterInfo
    node_classes: Mapping[str, NodeClassState]
    resolved: Mapping[str, ResolvedNodeClass]
    pools: list[NodePool]
    catalog: Catalog
    unavailable: set[OfferingKey]


def prepare(
    inputs: ClusterInputs,
    cloud: Cloud,
    state: StateStore,
    catalog_source: InstanceTypeSource,
    now: float,
    result: ProvisionResult,
    resolution: Resolution | None = None,
) -> Prepared:
    """Resolve the EC2NodeClasses (unless `resolution` has, see `resolve`), bound the NodePools and build the
    catalog (see `Prepared`); an unusable class and each NodePool left out for it are decisions in `result`. Shared
    by `plan` and static NodePools' launches."""
    resolution = resolution if resolution is not None else resolve(inputs.nodeclasses, cloud)
    info, node_classes = resolution.info, resolution.node_classes
    resolved = {name: s.resolved for name, s in node_classes.items() if s.ready and s.resolved is not None}
    for name, s in sorted(node_classes.items()):
        if not s.ready:
            result.decide("invalid", f"ec2nodeclass/{name}", s.problem)
    reservations_of = {
        name: list(cloud.capacity_reservations(rc)) if rc.node_class.capacity_reservation_selector_terms else []
        for name, rc in resolved.items()
    }
    reservations = [r for found in reservations_of.values() for r in found]
    pools: list[NodePool] = []
    for pool in inputs.nodepools:
        ref = pool.node_class_ref.name
        if ref in node_classes and not node_classes[ref].ready:
            result.decide(
                "skipped", f"nodepool/{pool.name}", f"EC2NodeClass {ref} is not usable: {node_classes[ref].problem}"
            )
            continue
        rc = resolved.get(ref)
        if rc is None:
            pools.append(pool)
            continue
        own = {r.id for r in reservations_of[ref]}
        pools.append(restricted_pool(pool, rc.zones, sorted({r.id for r in reservations} - own)))
    unavailable = set(state.unavailable_offerings(now))
    listed = Catalog(catalog_source.instance_types()).with_reservations(reservations).with_unavailable(unavailable)
    catalog = overlaid_catalog(listed, inputs.nodeoverlays)  # the cluster's NodeOverlays (catalog.overlay)
    return Prepared(info, node_classes, resolved, pools, catalog, unavailable)
