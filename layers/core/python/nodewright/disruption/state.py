"""The cluster as disruption decisions see it: one immutable snapshot per planner tick or workflow check.

The planner, IdentifyCandidate and `nodewright disrupt` all build one of these from API documents (live, or a
snapshot written by `kubectl get -o yaml`) and hand it to the same pure methods, so what the dry run prints is what
the planner decides. Nothing here reads the network or the clock: the time and the locks come in as arguments.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.catalog.catalog import CapacityReservation, Catalog, OfferingKey
from nodewright.catalog.labels import CAPACITY_RESERVATION_ID, ZONE
from nodewright.catalog.overlay import OverlayResult, apply_overlays
from nodewright.catalog.pricing import reserved_price
from nodewright.catalog.types import ON_DEMAND, RESERVED, InstanceType, Offering
from nodewright.disruption.buffers import BufferPlacement, place_buffers
from nodewright.disruption.drain import MIRROR_ANNOTATION, tolerates_disrupted
from nodewright.disruption.fleet import FleetNode, epoch, fleet_nodes
from nodewright.disruption.pdb import PdbLimits, pdb_limits
from nodewright.disruption.registered import Registered, registered
from nodewright.model import resources as res
from nodewright.model.capacitybuffer import is_virtual
from nodewright.model.errors import ValidationError
from nodewright.model.inputs import ClusterInputs
from nodewright.model.loader import load_documents
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Node, Pod
from nodewright.model.requirements import Operator, Requirement
from nodewright.scheduling.templates import TemplateCache


@dataclass(frozen=True, slots=True)
class DisruptionSettings:
    """Cluster-wide switches. `spot_to_spot`: Karpenter's SpotToSpotConsolidation feature gate (off by default);
    `node_repair`: Karpenter's NodeRepair feature gate (on by default here, see `disruption.repair`)."""

    spot_to_spot: bool = False
    node_repair: bool = True


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What a pod's document says beyond its scheduling needs: who owns it and whether it is going already."""

    daemonset: bool = False
    mirror: bool = False
    statefulset: bool = False
    terminating: bool = False
    tolerates_disrupted: bool = False
    bound_at: float = 0.0
    started_at: float | None = None  # status.startTime: when a do-not-disrupt duration starts to count
    # False only when status.conditions says Ready is False (Karpenter's test for a pod an AlwaysAllow
    # PodDisruptionBudget lets go); a pod with no Ready condition counts as ready.
    ready: bool = True

    @property
    def reschedulable(self) -> bool:
        """Needs room elsewhere once its node goes (Karpenter's IsReschedulable): not a DaemonSet or mirror pod, and
        not already terminating (a terminating StatefulSet pod is recreated under its name, so it still counts)."""
        return not self.daemonset and not self.mirror and (not self.terminating or self.statefulset)


_NO_FACTS = PodFacts()
PodFactsCache = MutableMapping[tuple[str, str], PodFacts]


def pod_facts(doc: Mapping[str, Any]) -> PodFacts:
    """Read one pod document (camelCase, as the API server serves it)."""
    metadata = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    status = doc.get("status") or {}
    owners = {str(o.get("kind")) for o in metadata.get("ownerReferences") or []}
    conditions = {str(c.get("type")): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}
    scheduled = conditions.get("PodScheduled") or {}
    stamps = (scheduled.get("lastTransitionTime"), status.get("startTime"), metadata.get("creationTimestamp"))
    return PodFacts(
        daemonset="DaemonSet" in owners,
        mirror=MIRROR_ANNOTATION in (metadata.get("annotations") or {}) or "Node" in owners,
        statefulset="StatefulSet" in owners,
        terminating=bool(metadata.get("deletionTimestamp")),
        tolerates_disrupted=tolerates_disrupted(spec.get("tolerations") or []),
        bound_at=next((epoch(str(s)) for s in stamps if s), 0.0),
        started_at=epoch(str(status["startTime"])) if status.get("startTime") else None,
        ready=(conditions.get("Ready") or {}).get("status") != "False",
    )


@dataclass(frozen=True)
class ClusterState:
    """Everything a disruption decision reads.

    `inputs`: the loaded objects (NodePools, EC2NodeClasses, NodeClaims, Nodes with their bound pods, pending pods,
    DaemonSets, PodDisruptionBudgets, volumes). `fleet`: each NodeClaim joined to its Node. `pods`: facts per bound
    pod key. `catalog`: instance types with prices (offerings refused for capacity marked unavailable) and the
    `reserved` offerings of the capacity reservations the EC2NodeClasses select, as the provisioner's catalog has
    them (`cluster_state`). `locked`: NodeClaims a disruption workflow holds the lock of (being disrupted, whatever
    the node shows yet).
    """

    now: float
    inputs: ClusterInputs
    fleet: tuple[FleetNode, ...]
    pods: Mapping[str, PodFacts]
    catalog: Catalog
    pdbs: PdbLimits
    locked: frozenset[str] = frozenset()
    settings: DisruptionSettings = field(default_factory=DisruptionSettings)
    # EC2NodeClass name -> the zones its subnets are in (as the provisioner bounds its NodePools); a class not
    # listed is not bounded (a snapshot read without the cloud).
    class_zones: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # EC2NodeClass name -> the capacity reservations it selects (ids); a class not listed selects none. A NodePool
    # may launch into its own class's reservations only, as the provisioner bounds it (`bounded`).
    class_reservations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Reservations the catalog has only because a reserved node runs in them (no EC2NodeClass selects them).
    unlisted_reservations: frozenset[str] = frozenset()
    # Node name -> the bound pods whose documents did not load (reported as validation errors): the node is not
    # empty, and its pods cannot be simulated, so no voluntary disruption takes it.
    unreadable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # What the inputs' NodeOverlays did to `catalog` (applied, refused with why; `catalog.overlay`).
    overlays: OverlayResult | None = None
    # The NodePools prepared against the catalog, shared by every simulation of the tick (each one a solve()).
    templates: TemplateCache = field(default_factory=TemplateCache, repr=False, compare=False)

    _nodes: Mapping[str, Node] = field(init=False, repr=False, compare=False)
    _pools: Mapping[str, NodePool] = field(init=False, repr=False, compare=False)
    _used: dict[str, Mapping[str, int]] = field(init=False, repr=False, compare=False)
    _room: dict[str, Node] = field(init=False, repr=False, compare=False)
    _buffers: list[BufferPlacement] = field(init=False, repr=False, compare=False)
    _registered: list[Registered] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_nodes", {n.name: n for n in self.inputs.nodes})
        object.__setattr__(self, "_pools", {p.name: p for p in self.inputs.nodepools})
        object.__setattr__(self, "_used", {})
        object.__setattr__(self, "_room", {})
        object.__setattr__(self, "_buffers", [])
        object.__setattr__(self, "_registered", [])

    def buffer_placement(self) -> BufferPlacement:
        """Where the CapacityBuffers' virtual pods stand (`disruption.buffers`), computed once per snapshot."""
        if not self._buffers:
            self._buffers.append(place_buffers(self))
        return self._buffers[0]

    def registered(self) -> Registered:
        """What every scheduling simulation of this snapshot starts from (`disruption.registered`), worked out
        once per snapshot."""
        if not self._registered:
            self._registered.append(registered(self))
        return self._registered[0]

    @property
    def pools(self) -> Mapping[str, NodePool]:
        """NodePools by name."""
        return self._pools

    def node(self, name: str) -> Node | None:
        """The loaded Node called `name` (with its bound pods), if any."""
        return self._nodes.get(name)

    def pods_on(self, member: FleetNode) -> tuple[Pod, ...]:
        """The pods bound to the member's node (none before it registers)."""
        node = self.node(member.node) if member.node else None
        return node.pods if node is not None else ()

    def facts(self, pod: Pod) -> PodFacts:
        return self.pods.get(pod.key, _NO_FACTS)

    def used(self, node: Node) -> Mapping[str, int]:
        """The requests of the pods bound to `node`, summed (computed once per snapshot)."""
        found = self._used.get(node.name)
        if found is None:
            found = self._used[node.name] = res.total(p.requests for p in node.pods)
        return found

    def room(self, node: Node) -> Node:
        """`node` as its free room alone: allocatable less what its pods request, and no pods (memoized, so the
        simulations of one tick hand the solver the same node objects)."""
        found = self._room.get(node.name)
        if found is None:
            found = self._room[node.name] = replace(
                node, pods=(), allocatable=res.subtract(node.allocatable, self.used(node))
            )
        return found

    def disrupting(self, member: FleetNode) -> bool:
        """Being taken away already: a workflow holds its lock, its node carries karpenter.sh/disrupted, or the
        NodeClaim or Node is being deleted."""
        return member.nodeclaim in self.locked or member.disrupting or member.deleting

    def instance_type(self, member: FleetNode) -> InstanceType | None:
        return self.catalog.get(member.instance_type) if member.instance_type else None

    def listed_type(self, member: FleetNode) -> InstanceType | None:
        """The member's instance type as EC2 lists it: without the offerings added only because a reserved node runs
        in a reservation no EC2NodeClass selects (`unlisted_reservations`), which Karpenter's catalog would not
        have, so InstanceTypeNotFound drift sees what Karpenter sees."""
        it = self.instance_type(member)
        if it is None or not self.unlisted_reservations:
            return it
        kept = tuple(o for o in it.offerings if o.reservation_id not in self.unlisted_reservations)
        return replace(it, offerings=kept)

    def price(self, member: FleetNode) -> float | None:
        """The member's price per hour: its instance type's offering in its zone for its capacity type, and for a
        `reserved` node the offering of its own reservation when it names one (known even when that offering is out
        of capacity now); None when the catalog does not know it."""
        it = self.instance_type(member)
        if it is None:
            return None
        reservation = member.labels.get(CAPACITY_RESERVATION_ID, "") if member.capacity_type == RESERVED else ""
        prices = [
            o.price
            for o in it.offerings
            if o.zone == member.zone
            and o.capacity_type == member.capacity_type
            and (not reservation or o.reservation_id == reservation)
            and math.isfinite(o.price)  # a price EC2 could not give must not poison a pool's totals
        ]
        return min(prices) if prices else None

    def price_overlay(self, member: FleetNode) -> str | None:
        """The NodeOverlay that set the price `price(member)` reads, or None (the listed price)."""
        it = self.instance_type(member)
        if it is None:
            return None
        reservation = member.labels.get(CAPACITY_RESERVATION_ID, "") if member.capacity_type == RESERVED else ""
        matching = [
            o
            for o in it.offerings
            if o.zone == member.zone
            and o.capacity_type == member.capacity_type
            and (not reservation or o.reservation_id == reservation)
            and math.isfinite(o.price)
        ]
        chosen = min(matching, key=lambda o: o.price, default=None)  # the offering `price` reads
        return (chosen.price_overlay or None) if chosen is not None else None

    def bounded(self, pool: NodePool) -> NodePool:
        """The NodePool as the provisioner would launch for it: within the zones its EC2NodeClass has subnets in,
        and out of the capacity reservations only other EC2NodeClasses select (Karpenter offers a NodePool its own
        EC2NodeClass's reservations only). A class the state has no zones for is not zone-bounded."""
        ref = pool.node_class_ref.name
        bounds = []
        zones = self.class_zones.get(ref)
        if zones is not None:
            bounds.append(Requirement(ZONE, Operator.IN, tuple(zones)))
        own = set(self.class_reservations.get(ref, ()))
        foreign = sorted({r for ids in self.class_reservations.values() for r in ids} - own)
        if foreign:
            bounds.append(Requirement(CAPACITY_RESERVATION_ID, Operator.NOT_IN, tuple(foreign)))
        return replace(pool, requirements=(*pool.requirements, *bounds)) if bounds else pool


def cluster_state(
    documents: Sequence[Mapping[str, Any]],
    instance_types: Sequence[InstanceType],
    now: float,
    locked: frozenset[str] = frozenset(),
    settings: DisruptionSettings | None = None,
    source: str = "cluster",
    class_zones: Mapping[str, tuple[str, ...]] | None = None,
    loaded: tuple[ClusterInputs, list[ValidationError]] | None = None,
    known_facts: PodFactsCache | None = None,
    reservations: Mapping[str, Sequence[CapacityReservation]] | None = None,
    unavailable: Collection[OfferingKey] = (),
    templates: TemplateCache | None = None,
) -> tuple[ClusterState, list[ValidationError]]:
    """Load API documents (NodePools, EC2NodeClasses, NodeClaims, Nodes, Pods bound or pending, DaemonSets,
    PodDisruptionBudgets, volumes) into a `ClusterState`. Objects that do not validate are left out and returned as
    errors; the rest is decided on. `loaded`: the same documents already loaded (a caller that needed them first
    does not pay for a second load). `known_facts`: pod facts read by earlier ticks, by (uid, resourceVersion)
    (a warm planner reads the same pods every minute; a pod's facts change only with its version).

    `reservations`: EC2NodeClass name -> the capacity reservations its capacityReservationSelectorTerms select,
    with their free instance counts now (EC2's AvailableInstanceCount, which already excludes the instances
    running in them, reserved nodes included), as the provisioner resolves them. They become `reserved` offerings
    of the catalog (`Catalog.with_reservations`), so a reserved node is priced and may be consolidated, and a node
    may be replaced by a free reservation its NodePool's class selects. A reserved node whose reservation is not
    among them (not selected any more, or a snapshot read without the cloud) still gets its reservation's offering,
    priced as Karpenter prices reserved capacity and with no free instance, so it is known and never launched into.
    `unavailable`: the offerings EC2 refused lately, marked after the reservations are added (the provisioner's
    order, so a refused reserved offering stays refused). `templates`: NodePools prepared and nodes' labels parsed by
    earlier states (a warm planner's ticks; the cache keys them by content and identity, so a changed NodePool,
    class, DaemonSet, type or node gets its own entry); None: a new cache for this state's simulations."""
    inputs, errors = loaded if loaded is not None else load_documents(documents, source, summaries=False)
    pools = {p.name: p for p in inputs.nodepools}
    kinds: dict[str, list[Mapping[str, Any]]] = {}
    for doc in documents:
        kinds.setdefault(str(doc.get("kind", "")), []).append(doc)
    fleet = tuple(fleet_nodes(kinds.get("NodeClaim", []), kinds.get("Node", []), pools))
    facts = _bound_facts(kinds.get("Pod", []), known_facts)
    bound = [p for n in inputs.nodes for p in n.pods]
    refused = {e.name for e in errors if e.kind == "Pod"}
    unreadable: dict[str, list[str]] = {}
    for doc in kinds.get("Pod", []):
        node = (doc.get("spec") or {}).get("nodeName")
        if node and _key(doc) in refused:
            unreadable.setdefault(str(node), []).append(_key(doc))
    # Healthy as the disruption controller counts it: running and not reported not-Ready.
    healthy = {p.key for p in bound if (f := facts.get(p.key, _NO_FACTS)).ready and not f.terminating}
    # A buffer's virtual pods are no workload's pods: no PodDisruptionBudget counts them.
    real_pending = [p for p in inputs.pending_pods if not is_virtual(p)]
    limits = pdb_limits(inputs.pdbs, [*bound, *real_pending], healthy)
    selected = {name: list(found) for name, found in (reservations or {}).items()}
    listed = (
        Catalog(instance_types)
        .with_reservations([r for found in selected.values() for r in found])
        .with_unavailable(unavailable)
    )
    # NodeOverlays last, as Karpenter applies them to the instance types its cloud provider lists with reservations.
    overlays = apply_overlays(_running_reservations(listed, fleet), inputs.nodeoverlays)
    catalog = overlays.catalog
    state = ClusterState(
        now=now,
        inputs=inputs,
        fleet=fleet,
        pods=facts,
        catalog=catalog,
        unlisted_reservations=_unlisted(catalog, listed),
        unreadable={node: tuple(sorted(keys)) for node, keys in unreadable.items()},
        overlays=overlays,
        pdbs=limits,
        locked=locked,
        settings=settings or DisruptionSettings(),
        class_zones=dict(class_zones or {}),
        class_reservations={name: tuple(sorted({r.id for r in found})) for name, found in selected.items()},
        templates=templates if templates is not None else TemplateCache(),
    )
    return state, errors


def _running_reservations(catalog: Catalog, fleet: Sequence[FleetNode]) -> Catalog:
    """The catalog with a `reserved` offering, without free instances, for each reservation a reserved node runs
    in that the catalog does not have: the node is then priced (Karpenter's reserved price, on-demand / 10^7) and
    can be consolidated, and nothing is launched into a reservation nobody selects."""
    missing: dict[str, dict[tuple[str, str], None]] = {}
    for member in fleet:
        reservation = member.labels.get(CAPACITY_RESERVATION_ID, "")
        it = catalog.get(member.instance_type) if member.instance_type else None
        if member.capacity_type != RESERVED or not reservation or it is None or not member.zone:
            continue
        if not any(o.reservation_id == reservation for o in it.offerings):
            missing.setdefault(it.name, {})[(reservation, member.zone)] = None
    if not missing:
        return catalog
    out = []
    for it in catalog:
        found = missing.get(it.name)
        if found:
            zone_ids = {o.zone: o.zone_id for o in it.offerings}
            on_demand = next((o.price for o in it.offerings if o.capacity_type == ON_DEMAND), 0.0)
            added = tuple(
                Offering(zone, RESERVED, reserved_price(on_demand), False, reservation, 0, zone_ids.get(zone, ""))
                for reservation, zone in sorted(found)
            )
            it = replace(it, offerings=(*it.offerings, *added))
        out.append(it)
    return Catalog(out)


def _unlisted(catalog: Catalog, listed: Catalog) -> frozenset[str]:
    """The reservation ids `catalog` has that `listed` (EC2's answer) does not."""
    ids = {o.reservation_id for it in catalog for o in it.offerings if o.reservation_id}
    return frozenset(ids - {o.reservation_id for it in listed for o in it.offerings if o.reservation_id})


def _bound_facts(pods: Sequence[Mapping[str, Any]], known: PodFactsCache | None) -> dict[str, PodFacts]:
    """namespace/name -> facts of the bound pods. `known` (facts by uid and resourceVersion, from earlier ticks) is
    read, and afterwards holds exactly the facts of these pods' versions: it follows the cluster's size, so a warm
    tick computes facts only for the pods that changed, however many pods the cluster has."""
    out: dict[str, PodFacts] = {}
    kept: dict[tuple[str, str], PodFacts] = {}
    for doc in pods:
        if not (doc.get("spec") or {}).get("nodeName"):
            continue
        metadata = doc.get("metadata") or {}
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        if known is None or not isinstance(uid, str) or not isinstance(version, str) or not uid or not version:
            out[_key(doc)] = pod_facts(doc)
            continue
        found = known.get((uid, version))
        out[_key(doc)] = kept[uid, version] = found if found is not None else pod_facts(doc)
    if known is not None:
        known.clear()
        known.update(kept)
    return out


def _key(doc: Mapping[str, Any]) -> str:
    metadata = doc.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"
