"""Capacity already on its way: NodeClaims in flight and the pods nominated to them.

A pod nominated to a NodeClaim in flight waits for it and is not planned again; the claim counts the pods
nominated to it that are still pending (one bound elsewhere or deleted frees its room). A pod nominated to a
claim whose node registered moments ago waits for the kube-scheduler to bind it there, and its requests are
reserved on that node: planning it afresh could pack the new nodes in another order and launch capacity
that is not needed. After `NOMINATION_GRACE_SECONDS` a pod still pending is planned like any other. A claim that
registered within that time but whose node the (cached) read of nodes does not hold yet is still in flight.

A pod of a node being drained (planned with every batch, see `read.being_disrupted`) is different: the NodeClaim
named for it (the workflow's replacement, or a claim an earlier batch launched for it) keeps room for it for as
long as the drain lasts, in flight or registered however long ago, while the room is still free. A drain that a
PodDisruptionBudget holds for hours must not get a new NodeClaim for its pods from every batch. Each pod that
waits is reported with the claim it waits on (`ProvisionResult.waiting`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from nodewright.launch.userdata import UNREGISTERED_TAINT
from nodewright.model import resources as res
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.objects import Node, Pod
from nodewright.service.provision.read import (
    NOMINATION_GRACE_SECONDS,
    Snapshot,
    full_nodes,
    nominated,
    registration_times,
)
from nodewright.service.provision.result import ProvisionResult


@dataclass(frozen=True, slots=True)
class Capacity:
    """What the simulation places pods on besides new NodeClaims, and the pods it must not plan."""

    nodes: tuple[Node, ...]
    inflight: tuple[NodeClaim, ...]
    pending: tuple[Pod, ...]


def capacity_in_flight(
    snapshot: Snapshot,
    registered: Mapping[str, str],
    registered_at: Mapping[str, float],
    removed: Collection[str],
    now: float,
    result: ProvisionResult,
    kept_full: dict[str, tuple[Node, Node]] | None = None,
) -> Capacity:
    """Existing nodes, NodeClaims in flight with their nominated pods, and the pods left to plan (module doc).

    `registered`: claim -> node for claims whose node exists; `registered_at`: node -> when its claim
    registered, for those within the grace period; `removed`: claims deleted by the registration timeout or being
    deleted; `kept_full`: a warm container's copies of the nodes without room (`read.full_nodes`).
    """
    inputs = snapshot.inputs
    pending_by_key = {p.key: p for p in inputs.pending_pods}
    known = {**snapshot.nominated, **pending_by_key}
    nodes_by_name = {n.name: n for n in inputs.nodes}
    # Room is counted only on nodes whose every pod was read: those whose claims registered within the grace period
    # and those whose claims name a pod of a node being drained (every other node is full as far as the
    # simulation goes, see `read.full_nodes`).
    node_used: dict[str, res.Resources] = {}
    inflight: list[NodeClaim] = []
    waiting: set[str] = set()
    reserved: dict[str, list[Pod]] = {}
    registered_since = registration_times(inputs.nodeclaims)
    for claim in inputs.nodeclaims:
        if claim.name in removed:
            continue
        mine = [known[k] for k in nominated(claim) if k in known]
        node_name = registered.get(claim.name)
        if node_name is not None and not mine:
            continue  # a registered claim none of whose pods is pending reserves nothing (most of ten thousand)
        if node_name is not None:
            node = nodes_by_name.get(node_name)
            if node is None:
                continue
            fresh = now - registered_at.get(node_name, now - NOMINATION_GRACE_SECONDS) < NOMINATION_GRACE_SECONDS
            # A pod of a node being drained keeps its room on the claim named for it until it is evicted, however
            # long a PodDisruptionBudget holds the drain: planned again, it would get a new NodeClaim every batch.
            for pod in [p for p in mine if fresh or p.key in snapshot.moving]:
                # Only while the node still has room for it: the kube-scheduler may have filled it with
                # other pods, and then this one must be planned now, not after the grace period.
                if node_name not in node_used:
                    node_used[node_name] = res.total(p.requests for p in node.pods)
                used = res.add(node_used[node_name], pod.requests)
                if not res.fits(used, node.allocatable):
                    continue
                node_used[node_name] = used
                reserved.setdefault(node_name, []).append(pod)
                if pod.key in pending_by_key:
                    waiting.add(pod.key)
                    result.waiting[pod.key] = claim.name
                    result.decide(
                        "waiting",
                        f"pod/{pod.key}",
                        f"nominated to nodeclaim/{claim.name}, whose node {node_name} has registered"
                        + (" and keeps room for it while its node drains" if pod.key in snapshot.moving else ""),
                    )
            continue
        if claim.registered and now - registered_since.get(claim.name, 0.0) >= NOMINATION_GRACE_SECONDS:
            continue
        # Registered moments ago but its node is not in this read: the NodeClaims are read consistently, the nodes
        # from the watch cache, which can be a moment behind. The claim is still capacity on its way; dropping it
        # would plan its pods again and launch a second node for them.
        where = "whose node is not in this read yet" if claim.registered else "which is in flight"
        for pod in mine:
            if pod.key in pending_by_key:
                waiting.add(pod.key)
                result.waiting[pod.key] = claim.name
                result.decide("waiting", f"pod/{pod.key}", f"nominated to nodeclaim/{claim.name}, {where}")
        inflight.append(replace(claim, nominated_pods=tuple(mine), requests=res.total(p.requests for p in mine)))
    # The nodes registered by this call have just lost karpenter.sh/unregistered; other nodes keep what they have.
    just_registered = {node for node, since in registered_at.items() if since >= now}
    nodes = tuple(
        n
        if n.name not in just_registered and n.name not in reserved
        else replace(
            n,
            taints=tuple(t for t in n.taints if n.name not in just_registered or t.key != UNREGISTERED_TAINT.key),
            pods=(*n.pods, *reserved.get(n.name, ())),
        )
        for n in full_nodes(inputs.nodes, snapshot.room_known, kept_full)
    )
    return Capacity(nodes, tuple(inflight), tuple(p for p in inputs.pending_pods if p.key not in waiting))
