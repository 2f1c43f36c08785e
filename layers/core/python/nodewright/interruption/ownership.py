"""Which instances this cluster owns: instance id -> its NodeClaim, Node and offering.

An instance belongs to the cluster when one of its NodeClaims records it (status.providerID
`aws:///<zone>/<instance-id>`, as the provisioner writes it). The Node is found through the NodeClaim's
status.nodeName or, before that is recorded, a Node whose spec.providerID names the same instance (nodes
are matched by providerID, never by DNS name). Offering facts come from the NodeClaim's labels, with the
Node's labels and the providerID's zone as fallbacks.

A NodeClaim whose launch is not recorded yet (the instance exists, the status update has not landed) is
found by the instance's tags instead (`owned_by_tags`): nodewright's own cluster and NodePool tags
(`nodewright.tags`, never Karpenter's or the shared `kubernetes.io/cluster/<name>`) and
`nodewright.io/nodeclaim=<name>` of a NodeClaim that exists, as the provisioner tags every launch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright import tags
from nodewright.ports import Instance

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"


@dataclass(frozen=True, slots=True)
class OwnedInstance:
    """An instance of this cluster: its NodeClaim, its Node ("" before it registered) and its offering
    ("" where the NodeClaim does not say)."""

    instance_id: str
    nodeclaim: str
    node: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""


def parse_provider_id(provider_id: str) -> tuple[str, str] | None:
    """`aws:///<zone>/<instance-id>` -> (zone, instance id); None for anything else."""
    prefix = "aws:///"
    if not provider_id.startswith(prefix):
        return None
    parts = provider_id[len(prefix) :].split("/")
    if len(parts) != 2 or not parts[1].startswith("i-"):
        return None
    return parts[0], parts[1]


def owned_instances(
    nodeclaims: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]
) -> dict[str, OwnedInstance]:
    """Instance id -> OwnedInstance for every NodeClaim that records an instance."""
    nodes_by_instance: dict[str, Mapping[str, Any]] = {}
    nodes_by_name: dict[str, Mapping[str, Any]] = {}
    for node in nodes:
        name = _str(node.get("metadata"), "name")
        if name:
            nodes_by_name[name] = node
        parsed = parse_provider_id(_str(node.get("spec"), "providerID"))
        if parsed is not None:
            nodes_by_instance[parsed[1]] = node
    owned: dict[str, OwnedInstance] = {}
    for claim in nodeclaims:
        metadata = claim.get("metadata") or {}
        status = claim.get("status") or {}
        name = _str(metadata, "name")
        parsed = parse_provider_id(_str(status, "providerID"))
        if not name or parsed is None:
            continue  # not launched yet (or not ours to read): no instance to match
        zone, instance_id = parsed
        matched = nodes_by_name.get(_str(status, "nodeName")) or nodes_by_instance.get(instance_id)
        labels = {**_labels(matched), **_labels(claim)}
        owned[instance_id] = OwnedInstance(
            instance_id=instance_id,
            nodeclaim=name,
            node=_str(matched.get("metadata"), "name") if matched is not None else "",
            instance_type=labels.get(INSTANCE_TYPE_LABEL, ""),
            zone=labels.get(ZONE_LABEL, "") or zone,
            capacity_type=labels.get(CAPACITY_TYPE_LABEL, ""),
        )
    return owned


def claimed_by_tags(instances: Sequence[Instance], cluster_name: str) -> dict[str, str]:
    """Instance id -> the NodeClaim named in its tags, for instances tagged as this cluster's nodewright capacity
    (`tags.is_owned` and a NodeClaim tag). Anything else is not this cluster's, whatever the cluster holds: a
    managed node group's instances carry `kubernetes.io/cluster/<name>=owned` too, Karpenter's carry its own keys."""
    out: dict[str, str] = {}
    for instance in instances:
        claim = instance.tags.get(tags.NODECLAIM, "")
        if claim and tags.is_owned(instance.tags, cluster_name):
            out[instance.id] = claim
    return out


def owned_by_tags(
    instances: Sequence[Instance],
    cluster_name: str,
    nodeclaims: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> dict[str, OwnedInstance]:
    """Instance id -> OwnedInstance for instances tagged for this cluster and for a NodeClaim that exists."""
    claims = {_str(c.get("metadata"), "name") for c in nodeclaims} - {""}
    nodes_by_instance: dict[str, str] = {}
    for node in nodes:
        parsed = parse_provider_id(_str(node.get("spec"), "providerID"))
        if parsed is not None:
            nodes_by_instance[parsed[1]] = _str(node.get("metadata"), "name")
    owned: dict[str, OwnedInstance] = {}
    for instance in instances:
        claim = instance.tags.get(tags.NODECLAIM, "")
        if not tags.is_owned(instance.tags, cluster_name) or claim not in claims:
            continue
        owned[instance.id] = OwnedInstance(
            instance_id=instance.id,
            nodeclaim=claim,
            node=nodes_by_instance.get(instance.id, ""),
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
        )
    return owned


def _str(parent: Any, key: str) -> str:
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, str) else ""


def _labels(document: Mapping[str, Any] | None) -> dict[str, str]:
    if document is None:
        return {}
    labels = (document.get("metadata") or {}).get("labels") or {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
