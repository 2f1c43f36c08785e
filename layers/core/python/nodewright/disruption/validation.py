"""IdentifyCandidate's second look at a voluntary decision, against the cluster as it is when the execution runs.

Karpenter waits 15 seconds after deciding an emptiness or consolidation command and checks it again (validation.go):
pods may have landed on the nodes, budgets may have been used by another command, the cheaper replacement may no
longer be enough. The workflow waits the same 15 seconds (`ValidationDelay`) and calls `validate()`; a decision
that no longer holds ends the execution as `invalidated`, before anything is tainted, launched or evicted.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.disruption.candidates import GRACEFUL, Candidate, candidate
from nodewright.disruption.commands import DisruptionCommand
from nodewright.disruption.consolidation import compute
from nodewright.disruption.decision import EMPTINESS, Decision
from nodewright.disruption.methods import PlanContext
from nodewright.disruption.plan import pool_budgets
from nodewright.disruption.state import ClusterState


def validate(command: DisruptionCommand, state: ClusterState, drift: Mapping[str, str] | None = None) -> str:
    """Inputs: the command, and the cluster now with the locks of *other* executions (this one's own locks must not
    make its nodes look taken). Output: why the decision no longer holds, or "" when it still does."""
    ctx = PlanContext(state, pool_budgets(state), dict(drift or {}))
    members = {m.nodeclaim: m for m in state.fleet}
    group: list[Candidate] = []
    for target in command.targets:
        member = members.get(target.nodeclaim)
        if member is None:
            return f"nodeclaim/{target.nodeclaim} no longer exists"
        found = candidate(state, member, GRACEFUL)
        if isinstance(found, str):
            return f"nodeclaim/{target.nodeclaim}: {found}"
        waiting = ctx.consolidatable(found)
        if waiting:
            return f"nodeclaim/{target.nodeclaim} is no longer Consolidatable: {waiting}"
        group.append(found)
    held = _budget(ctx, group, command.reason)
    if held:
        return held
    if command.method == EMPTINESS:
        busy = [c for c in group if not c.empty]
        if busy:
            pods = ", ".join(p.key for p in busy[0].reschedulable[:3])
            return f"node {busy[0].member.node} is no longer empty: {pods}"
        return ""
    return _still_consolidates(ctx, command, group)


def _budget(ctx: PlanContext, group: list[Candidate], reason: str) -> str:
    per_pool: dict[str, int] = {}
    for c in group:
        per_pool[c.member.nodepool] = per_pool.get(c.member.nodepool, 0) + 1
    for pool, count in sorted(per_pool.items()):
        allowance = ctx.budgets.allowance(pool, reason)
        if allowance.allowed < count:
            return f"NodePool {pool}: {allowance.reason}; this decision needs {count}"
    return ""


def _still_consolidates(ctx: PlanContext, command: DisruptionCommand, group: list[Candidate]) -> str:
    """Karpenter's validateCommand: the simulation still moves every pod, with no replacement when the decision
    launched none, and with a replacement whose instance types include every one the decision allowed."""
    found = compute(ctx, group, command.method)
    if not isinstance(found, Decision):
        return f"the consolidation no longer holds: {found}"
    if command.replacement is None:
        return "" if found.replacement is None else "the pods now need a replacement; the decision was to delete"
    if found.replacement is None:
        return "the simulation now deletes without a replacement; the decision will be made again"
    missing = set(command.replacement.instance_types) - set(found.replacement.instance_types)
    if missing:
        return f"the replacement can no longer be {', '.join(sorted(missing)[:5])}"
    return ""
