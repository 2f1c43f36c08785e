"""Drift: a node that no longer matches what its NodePool and EC2NodeClass would launch today.

Karpenter v1's reasons, checked in its order (kubernetes-sigs/karpenter nodeclaim/disruption/drift.go, then
aws/karpenter-provider-aws cloudprovider/drift.go):

- `NodePoolDrifted`: the hash of the NodePool's template (labels, annotations, taints, startup taints, nodeClassRef,
  expireAfter, terminationGracePeriod; requirements are left out, as Karpenter's `hash:"ignore"`) differs from the
  hash stamped on the NodeClaim at launch.
- `RequirementsDrifted`: the node's labels no longer satisfy the NodePool's requirements.
- `InstanceTypeNotFound`: from an hour after the NodeClaim's creation, its instance type label is missing, the
  catalog no longer has that type, or none of the type's offerings (available or not) is in the node's zone and
  capacity type (a `reserved` node also matches `on-demand`: a reservation may be demoted). Only with a catalog:
  an empty catalog (not loaded) drifts nothing.
- `NodeClassDrift`: the same hash comparison for the EC2NodeClass spec (selector terms left out: what they select is
  checked through the three facts below).
- `AMIDrift`: the node's image is not the one its EC2NodeClass resolves to now for its architecture and variant (an
  alias whose SSM parameter moved, selector terms that match a newer image).
- `SecurityGroupDrift`: the instance's security groups are not exactly the ones the class selects now.
- `SubnetDrift`: the instance's subnet is not among the ones the class selects now.

A stamp whose hash *version* differs from this release's (nodewright changed how it hashes) is not drift: the
planner re-stamps such a NodeClaim with today's hash instead of rolling the fleet, as Karpenter's hash controllers do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.catalog.labels import well_known_labels
from nodewright.catalog.types import ON_DEMAND, RESERVED, InstanceType
from nodewright.disruption.fleet import FleetNode
from nodewright.launch.amis import variant_of
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool

NODEPOOL_HASH = "nodewright.io/nodepool-hash"
NODEPOOL_HASH_VERSION = "nodewright.io/nodepool-hash-version"
NODECLASS_HASH = "nodewright.io/ec2nodeclass-hash"
NODECLASS_HASH_VERSION = "nodewright.io/ec2nodeclass-hash-version"
# Bump when a hashed field is added, removed, changes its default or its type: stamps of the old version are then
# re-stamped, not treated as drift.
POOL_HASH_VERSION = "v1"
CLASS_HASH_VERSION = "v1"

NODEPOOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"
NODECLASS_DRIFT = "NodeClassDrift"
AMI_DRIFT = "AMIDrift"
SECURITY_GROUP_DRIFT = "SecurityGroupDrift"
SUBNET_DRIFT = "SubnetDrift"
INSTANCE_TYPE_NOT_FOUND = "InstanceTypeNotFound"
# Karpenter starts checking a NodeClaim's instance type an hour after its creation.
INSTANCE_TYPE_CHECK_AFTER_SECONDS = 3600
# Reasons only the cloud can tell: a snapshot without cloud facts keeps what the planner last found.
CLOUD_REASONS = frozenset({AMI_DRIFT, SECURITY_GROUP_DRIFT, SUBNET_DRIFT})


@dataclass(frozen=True, slots=True)
class ClassFacts:
    """What an EC2NodeClass selects in the account now: the image per (architecture, variant) a launch would use,
    every subnet its terms match, and its security groups."""

    images: Mapping[tuple[str, str], str]
    subnet_ids: frozenset[str]
    security_group_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class InstanceFacts:
    """What an instance was launched with: its image, subnet and security groups."""

    image_id: str
    subnet_id: str
    security_group_ids: frozenset[str]


def _canonical(value: Any) -> Any:
    """A JSON-able form in which zero values are absent and collections compare as sets (Karpenter hashes with
    IgnoreZeroValue and SlicesAsSets), so a new field left at its default, or a reordered list, changes nothing."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        out = {str(k): _canonical(v) for k, v in value.items()}
        return {k: v for k, v in sorted(out.items()) if v not in (None, "", 0, False, [], {})}
    if isinstance(value, list | tuple | set | frozenset):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _digest(value: Any) -> str:
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def nodepool_hash(pool: NodePool) -> str:
    """The hash of what a NodePool's template puts on its nodes, requirements left out."""
    return _digest(
        {
            "labels": pool.labels,
            "annotations": pool.annotations,
            "taints": pool.taints,
            "startupTaints": pool.startup_taints,
            "nodeClassRef": pool.node_class_ref,
            "expireAfter": pool.expire_after_seconds if pool.expire_after_seconds is not None else "Never",
            "terminationGracePeriod": pool.termination_grace_period_seconds,
        }
    )


def nodeclass_hash(node_class: EC2NodeClass) -> str:
    """The hash of an EC2NodeClass's launch settings; selector terms left out, the AMI family as resolved."""
    ignored = {
        "name",
        "source",
        "api_version",
        "ami_selector_terms",
        "subnet_selector_terms",
        "security_group_selector_terms",
        "capacity_reservation_selector_terms",
        "ami_family_setting",
    }
    fields = {f.name: getattr(node_class, f.name) for f in dataclasses.fields(node_class) if f.name not in ignored}
    return _digest({**fields, "amiFamily": node_class.ami_family})


def hash_annotations(pool: NodePool, node_class: EC2NodeClass | None) -> dict[str, str]:
    """The stamps a NodeClaim gets at launch."""
    out = {NODEPOOL_HASH: nodepool_hash(pool), NODEPOOL_HASH_VERSION: POOL_HASH_VERSION}
    if node_class is not None:
        out.update({NODECLASS_HASH: nodeclass_hash(node_class), NODECLASS_HASH_VERSION: CLASS_HASH_VERSION})
    return out


def restamps(member: FleetNode, pool: NodePool, node_class: EC2NodeClass | None) -> dict[str, str]:
    """Stamps of an older hash version, replaced by today's (empty when none is stale or the node has drifted)."""
    if member.drifted:
        return {}
    out: dict[str, str] = {}
    stamped = member.annotations
    if NODEPOOL_HASH_VERSION in stamped and stamped[NODEPOOL_HASH_VERSION] != POOL_HASH_VERSION:
        out.update({NODEPOOL_HASH: nodepool_hash(pool), NODEPOOL_HASH_VERSION: POOL_HASH_VERSION})
    if (
        node_class is not None
        and NODECLASS_HASH_VERSION in stamped
        and stamped[NODECLASS_HASH_VERSION] != CLASS_HASH_VERSION
    ):
        out.update({NODECLASS_HASH: nodeclass_hash(node_class), NODECLASS_HASH_VERSION: CLASS_HASH_VERSION})
    return out


def _stamp_differs(member: FleetNode, key: str, version_key: str, version: str, current: str) -> bool:
    stamped = member.annotations
    if key not in stamped or stamped.get(version_key) != version:
        return False  # unstamped (launched before stamping) or another version: not drift
    return stamped[key] != current


def node_labels(member: FleetNode, instance_type: InstanceType | None) -> dict[str, str]:
    """What the node is: the well-known labels of its instance type under the labels it carries."""
    known = well_known_labels(instance_type) if instance_type is not None else {}
    return {**known, **member.labels}


def requirements_drifted(member: FleetNode, pool: NodePool, instance_type: InstanceType | None) -> bool:
    """The node's labels fail a requirement of its pool (a label a requirement needs that the node lacks fails it)."""
    labels = node_labels(member, instance_type)
    return any(not r.to_value_set().matches(labels.get(r.key)) for r in pool.requirements)


def instance_type_not_found(
    member: FleetNode, instance_type: InstanceType | None, catalog: Collection[str], now: float
) -> bool:
    """Karpenter's InstanceTypeNotFound drift. Inputs: the NodeClaim, its instance type as the catalog has it (None
    when the label is missing or the catalog lacks it), the catalog's type names, the time. True from an hour after
    creation when the type is gone or none of its offerings matches the node's zone and capacity type; never with
    an empty catalog (one that failed to load must not drift the fleet)."""
    if not catalog or now - member.created_at <= INSTANCE_TYPE_CHECK_AFTER_SECONDS:
        return False
    if not member.instance_type or instance_type is None or member.instance_type not in catalog:
        return True
    capacity = {member.capacity_type} if member.capacity_type else set()
    if RESERVED in capacity:
        capacity.add(ON_DEMAND)  # a reserved node may be demoted to on-demand when its reservation ends
    return not any(
        (not member.zone or o.zone == member.zone) and (not capacity or o.capacity_type in capacity)
        for o in instance_type.offerings
    )


def drift_reason(
    member: FleetNode,
    pool: NodePool,
    node_class: EC2NodeClass | None,
    instance_type: InstanceType | None,
    class_facts: ClassFacts | None = None,
    instance: InstanceFacts | None = None,
    catalog: Collection[str] = (),
    now: float = 0.0,
    hashes: tuple[str, str] | None = None,
) -> str:
    """The first drift reason that holds ("" when the node has not drifted), in Karpenter's order. Without
    `class_facts` and `instance` (a snapshot, or the cloud not answering) the cloud reasons keep what the NodeClaim's
    condition says; without `catalog` (the names of every instance type the catalog has) and `now`, instance types
    are not checked. `hashes`: `nodepool_hash(pool)` and `nodeclass_hash(node_class)` ("" without a class) when the
    caller worked them out once for many NodeClaims of the same pool."""
    if not member.provider_id:
        return ""  # not launched: nothing to drift from yet
    pool_hash, class_hash = hashes if hashes is not None else (nodepool_hash(pool), "")
    if _stamp_differs(member, NODEPOOL_HASH, NODEPOOL_HASH_VERSION, POOL_HASH_VERSION, pool_hash):
        return NODEPOOL_DRIFTED
    if requirements_drifted(member, pool, instance_type):
        return REQUIREMENTS_DRIFTED
    if instance_type_not_found(member, instance_type, catalog, now):
        return INSTANCE_TYPE_NOT_FOUND
    if node_class is None:
        return ""
    class_hash = class_hash if hashes is not None else nodeclass_hash(node_class)
    if _stamp_differs(member, NODECLASS_HASH, NODECLASS_HASH_VERSION, CLASS_HASH_VERSION, class_hash):
        return NODECLASS_DRIFT
    if class_facts is None or instance is None:
        return member.drifted if member.drifted in CLOUD_REASONS else ""
    return _cloud_drift(member, instance_type, class_facts, instance)


def _cloud_drift(
    member: FleetNode, instance_type: InstanceType | None, facts: ClassFacts, instance: InstanceFacts
) -> str:
    image = member.image_id or instance.image_id
    if instance_type is not None and image:
        wanted = facts.images.get(variant_of(instance_type))
        if wanted is not None and wanted != image:
            return AMI_DRIFT
    groups = instance.security_group_ids
    if facts.security_group_ids and groups and groups != facts.security_group_ids:
        return SECURITY_GROUP_DRIFT
    if facts.subnet_ids and instance.subnet_id and instance.subnet_id not in facts.subnet_ids:
        return SUBNET_DRIFT
    return ""
