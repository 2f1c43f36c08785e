"""The fleet as disruption sees it: one `FleetNode` per NodeClaim, joined to its Node by providerID.

Read from camelCase API documents (NodeClaims, Nodes), so the planner and the workflow decide on exactly what
the API server holds. A NodeClaim carries its own `expireAfter` and `terminationGracePeriod` (copied from its
NodePool's template when it was created, as Karpenter v1 does); a claim without them falls back to its pool's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nodewright.disruption.drain import DISRUPTED_TAINT_KEY
from nodewright.model.durations import DurationError, parse_duration
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import DO_NOT_DISRUPT

NODEPOOL_LABEL = "karpenter.sh/nodepool"


@dataclass(frozen=True, slots=True)
class FleetNode:
    """A NodeClaim and (once registered) its Node.

    `expire_after` / `termination_grace_period`: seconds, None for Never / unset. `disrupting`: the node carries
    karpenter.sh/disrupted (a workflow is taking it away). `problems`: fields that could not be read, by path.
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


def epoch(stamp: str) -> float:
    """RFC 3339 (as the API server writes timestamps) to epoch seconds; 0.0 when empty or malformed."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0
    except ValueError:
        return 0.0


def _condition(doc: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in (doc.get("status") or {}).get("conditions") or []
    )


def _duration(
    spec: Mapping[str, Any], field: str, fallback: int | None, problems: list[str], allow_never: bool
) -> int | None:
    if field not in spec or spec[field] is None:
        return fallback
    try:
        return parse_duration(str(spec[field]), allow_never=allow_never)
    except DurationError as error:
        problems.append(f"spec.{field}: {error}")
        return fallback


def fleet_nodes(
    nodeclaims: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]], pools: Mapping[str, NodePool]
) -> list[FleetNode]:
    """Join NodeClaims to Nodes (by providerID, then by status.nodeName); sorted by NodeClaim name."""
    by_provider: dict[str, Mapping[str, Any]] = {}
    by_name: dict[str, Mapping[str, Any]] = {}
    for doc in nodes:
        by_name[str((doc.get("metadata") or {}).get("name", ""))] = doc
        provider = str((doc.get("spec") or {}).get("providerID") or "")
        if provider:
            by_provider[provider] = doc
    out: list[FleetNode] = []
    for claim in nodeclaims:
        metadata = claim.get("metadata") or {}
        spec = claim.get("spec") or {}
        status = claim.get("status") or {}
        name = str(metadata.get("name", ""))
        pool_name = str((metadata.get("labels") or {}).get(NODEPOOL_LABEL, ""))
        pool = pools.get(pool_name)
        provider = str(status.get("providerID") or "")
        node: Mapping[str, Any] | None = by_provider.get(provider) if provider else None
        if node is None and status.get("nodeName"):
            node = by_name.get(str(status["nodeName"]))
        node_meta = (node or {}).get("metadata") or {}
        taints = ((node or {}).get("spec") or {}).get("taints") or []
        problems: list[str] = []
        out.append(
            FleetNode(
                nodeclaim=name,
                nodepool=pool_name,
                node=str(node_meta.get("name", "")),
                instance_id=provider.rsplit("/", 1)[-1] if provider else "",
                provider_id=provider,
                created_at=epoch(str(metadata.get("creationTimestamp") or "")),
                registered=node is not None,
                ready=node is not None and _condition(node, "Ready"),
                expire_after=_duration(
                    spec, "expireAfter", pool.expire_after_seconds if pool else None, problems, allow_never=True
                ),
                termination_grace_period=_duration(
                    spec,
                    "terminationGracePeriod",
                    pool.termination_grace_period_seconds if pool else None,
                    problems,
                    allow_never=False,
                ),
                disrupting=any(t.get("key") == DISRUPTED_TAINT_KEY for t in taints),
                do_not_disrupt=str((node_meta.get("annotations") or {}).get(DO_NOT_DISRUPT, "")) == "true",
                problems=tuple(problems),
            )
        )
    return sorted(out, key=lambda n: n.nodeclaim)
