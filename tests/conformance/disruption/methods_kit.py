"""Helpers for the ports of Karpenter's emptiness, drift, expiration, NodeClaim-condition and consolidation Delete /
TTL suites: drive nodewright's planner core (`plan`, the methods, `drift_reason`, the planner's condition writer)
on clusters built by `cluster_builder.Cluster`.

Karpenter's fake CloudProvider says a NodeClaim is drifted when `cp.Drifted` is set; nodewright's cloud drift is
the EC2NodeClass resolving to another image than the instance runs (`CLOUD_DRIFTED`: AMIDrift), and no cloud drift
is `CLOUD_CURRENT`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster_builder import Cluster, iso

from nodewright.disruption.drift import ClassFacts, InstanceFacts, drift_reason
from nodewright.disruption.methods import Drift, Emptiness, Expiration, Method
from nodewright.disruption.plan import DEFAULT_METHODS, Plan, plan
from nodewright.disruption.state import ClusterState
from nodewright.model.conditions import Condition
from nodewright.service.plan import _record_status

CLOUD_CURRENT = ClassFacts({("amd64", "standard"): "ami-current"}, frozenset(), frozenset())
CLOUD_DRIFTED = ClassFacts({("amd64", "standard"): "ami-newer"}, frozenset(), frozenset())
LAUNCHED = InstanceFacts("ami-current", "", frozenset())


def drift_of(state: ClusterState, facts: ClassFacts = CLOUD_CURRENT) -> dict[str, str]:
    """NodeClaim -> drift reason as the planner finds it (service.plan._drift): every launched NodeClaim of a
    known pool, with the catalog and the time (InstanceTypeNotFound) and the cloud's facts."""
    catalog = frozenset(it.name for it in state.catalog)
    out: dict[str, str] = {}
    for member in state.fleet:
        pool = state.pools.get(member.nodepool)
        if pool is None or not member.provider_id:
            continue
        node_class = state.inputs.nodeclass(pool.node_class_ref.name)
        out[member.nodeclaim] = drift_reason(
            member, pool, node_class, state.listed_type(member), facts, LAUNCHED, catalog=catalog, now=state.now
        )
    return out


@dataclass
class ConditionWrites:
    """What the planner's condition writer (`service.plan._record_status`) did: NodeClaim -> conditions set, and
    NodeClaim -> condition types cleared."""

    set: dict[str, dict[str, Condition]] = field(default_factory=dict)
    cleared: dict[str, set[str]] = field(default_factory=dict)

    def set_nodeclaim_conditions(self, name: str, conditions: Sequence[Condition], clear: Sequence[str]) -> None:
        self.set.setdefault(name, {}).update({c.type: c for c in conditions})
        self.cleared.setdefault(name, set()).update(clear)

    def update_nodeclaim(self, name: str, labels: Mapping[str, str], annotations: Mapping[str, str], _: Any) -> None:
        pass


def conditions_after(state: ClusterState, drift: Mapping[str, str]) -> dict[str, dict[str, str | None]]:
    """NodeClaim -> {"Drifted": reason or None, "Consolidatable": "True" or None} once the planner's tick wrote its
    conditions (None: absent, as Karpenter's `Get(...)` is nil)."""
    writes = ConditionWrites()
    _record_status(writes, state, drift)  # type: ignore[arg-type]
    out: dict[str, dict[str, str | None]] = {}
    for member in state.fleet:
        now: dict[str, str | None] = {
            "Drifted": member.drifted or None,
            "Consolidatable": "True" if member.consolidatable else None,
        }
        for kind in writes.cleared.get(member.nodeclaim, set()):
            now[kind] = None
        for kind, condition in writes.set.get(member.nodeclaim, {}).items():
            now[kind] = condition.reason if kind == "Drifted" else condition.status
        out[member.nodeclaim] = now
    return out


def relabel(cluster: Cluster, node: str, labels: Mapping[str, str | None]) -> None:
    """Set (or, with None, remove) labels on the node and its NodeClaim (what the node is)."""
    for doc in (cluster.find("NodeClaim", f"claim-{node}"), cluster.find("Node", node)):
        found = doc["metadata"]["labels"]
        for key, value in labels.items():
            if value is None:
                found.pop(key, None)
            else:
                found[key] = value


def set_claim_condition(cluster: Cluster, node: str, kind: str, status: str, reason: str = "", at: float = 0.0) -> None:
    """Replace (or add) a condition of `claim-<node>`."""
    claim = cluster.find("NodeClaim", f"claim-{node}")
    conditions = [c for c in claim["status"]["conditions"] if c["type"] != kind]
    conditions.append(
        {"type": kind, "status": status, "reason": reason or kind, "lastTransitionTime": iso(at or cluster.now)}
    )
    claim["status"]["conditions"] = conditions


def unregister(cluster: Cluster, node: str) -> None:
    """Remove the Node of `claim-<node>` (launched, never registered)."""
    cluster.docs.remove(cluster.find("Node", node))
    cluster.find("NodeClaim", f"claim-{node}")["status"].pop("nodeName", None)


def decide(
    cluster: Cluster,
    drift: Mapping[str, str] | None = None,
    methods: Sequence[Method] = DEFAULT_METHODS,
    locked: Sequence[str] = (),
    facts: ClassFacts = CLOUD_CURRENT,
) -> Plan:
    """One planner tick on the cluster (drift as the planner finds it unless given)."""
    state = cluster.state(locked=locked)
    return plan(state, drift_of(state, facts) if drift is None else drift, methods)


def disrupted(decided: Plan) -> list[str]:
    """The NodeClaims the tick decided to disrupt, sorted."""
    return sorted(c.name for d in decided.decisions for c in d.candidates)


EXPIRATION_ONLY: tuple[Method, ...] = (Expiration(),)
EMPTINESS_ONLY: tuple[Method, ...] = (Emptiness(),)
DRIFT_ONLY: tuple[Method, ...] = (Drift(),)
