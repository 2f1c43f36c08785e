"""The NodeClaim object: the document created before a launch, and what a launch records on it.

A NodeClaim is created before its CreateFleet, so a concurrent or later plan counts it (with the pods
nominated to it) as capacity in flight, and it is named after the batch and its content, so a re-run of the
same delivery finds it again. Once launched it records, as Karpenter's does, the instance's providerID,
type, zone, capacity type, price, `imageID`, and `status.capacity` / `status.allocatable` from the catalog and
the EC2NodeClass's kubelet settings (the figures the simulation packed it with), and the conditions
Launched=True, Registered, Initialized and Ready Unknown until the node comes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from nodewright.catalog.allocatable import allocatable as allocatable_of
from nodewright.catalog.allocatable import capacity, root_volume_bytes
from nodewright.catalog.labels import ZONE
from nodewright.catalog.types import InstanceType
from nodewright.disruption.drift import hash_annotations
from nodewright.disruption.fleet import NOMINATED_PODS_ANNOTATION
from nodewright.model.conditions import TRUE, UNKNOWN, Condition
from nodewright.model.durations import format_duration
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.quantity import format_canonical
from nodewright.model.requirements import Operator, Requirement
from nodewright.ports import Cluster
from nodewright.scheduling import PlannedNodeClaim
from nodewright.service.provision.result import LaunchedClaim
from nodewright.tags import FINALIZER

NODECLAIM_API_VERSION = "nodewright.io/v1"
PODS_ANNOTATION = NOMINATED_PODS_ANNOTATION
BATCH_ANNOTATION = "nodewright.io/batch-id"
PRICE_ANNOTATION = "nodewright.io/price-per-hour"
TEMPLATE_ANNOTATION = "nodewright.io/launch-template"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# Karpenter's NodeClaim conditions; Ready is True when the other three are.
LAUNCHED, REGISTERED, INITIALIZED, READY = "Launched", "Registered", "Initialized", "Ready"


def nodeclaim_name(batch_id: str, claim: PlannedNodeClaim) -> str:
    """Deterministic per (batch, claim content): a re-run of the batch finds the same name."""
    content = "\n".join((batch_id, claim.nodepool, *claim.pods, *claim.instance_types))
    return f"{claim.nodepool}-{hashlib.sha256(content.encode()).hexdigest()[:10]}"


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
    name: str,
    claim: PlannedNodeClaim,
    pool: NodePool,
    batch_id: str,
    node_class: EC2NodeClass | None = None,
    extra_annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The NodeClaim object created before launch (spec as Karpenter v1 writes it), stamped with the hashes of its
    NodePool and EC2NodeClass as they are now, so drift can be told later. `extra_annotations`: what the caller
    adds (a rebalance's early replacement: the end of its protection window)."""
    annotations = {
        **(extra_annotations or {}),
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
            # Deleting the claim (or, through the owner reference, its NodePool) drains and terminates through
            # nodewright before the object goes, as Karpenter's termination finalizer and owner reference do.
            "finalizers": [FINALIZER],
            **({"ownerReferences": [_owner(pool)]} if pool.uid else {}),
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


def _owner(pool: NodePool) -> dict[str, Any]:
    return {"apiVersion": pool.api_version, "kind": "NodePool", "name": pool.name, "uid": pool.uid}


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


def record_launch(
    cluster: Cluster,
    launched: LaunchedClaim,
    image_id: str,
    resources: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Write what launched onto the NodeClaim: labels, price and template annotations, status and conditions."""
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
    cluster.set_nodeclaim_conditions(
        launched.name,
        [
            Condition(LAUNCHED, TRUE, LAUNCHED, where),
            Condition(REGISTERED, UNKNOWN, "NodeNotFound", "Node not registered with cluster"),
            Condition(INITIALIZED, UNKNOWN, "NodeNotFound", "Node not registered with cluster"),
            Condition(READY, UNKNOWN, "ReconcilingDependents", f"{REGISTERED}=Unknown, {INITIALIZED}=Unknown"),
        ],
    )


def nodeclaim_creator(
    pools: Mapping[str, NodePool],
    node_classes: Mapping[str, EC2NodeClass],
    batch_id: str,
    cluster: Cluster,
    annotations: Mapping[str, str] | None = None,
) -> Callable[[tuple[str, PlannedNodeClaim]], tuple[str, PlannedNodeClaim, Mapping[str, Any] | None]]:
    """What creates one planned NodeClaim: (name, plan) -> (name, plan, the object already there when its name
    was taken by an earlier run of the same delivery, else None). `node_classes`: by name, for the hashes;
    `annotations`: added to every NodeClaim created."""

    def create(item: tuple[str, PlannedNodeClaim]) -> tuple[str, PlannedNodeClaim, Mapping[str, Any] | None]:
        name, claim = item
        pool = pools[claim.nodepool]
        node_class = node_classes.get(pool.node_class_ref.name)
        document = nodeclaim_document(name, claim, pool, batch_id, node_class, annotations)
        return name, claim, cluster.create_nodeclaim(document)

    return create
