"""Taking, renewing and reading leases on nodes, with Step Functions as the judge of who is alive.

The rules are `disruption.lease`'s; this module carries them out against the state store (the lease items) and the
workflows port (whether an execution still runs):

- `acquire`: the lease for an execution. A free or expired lease is taken with one conditional write; a lease whose
  execution no longer runs, or that an interruption outranks, is taken over with another (`owner = <the old
  holder>`, so two newcomers cannot both win).
- `renew`: a holder's renewal before it acts; False when another execution has the lease (it must stand down).
- `live_leases`: every lease that still holds, read once per planner tick; the dead ones are released on the way,
  so the budgets of the next reader count only what is really being disrupted.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from nodewright.disruption.lease import LEASE_SECONDS, Lease, keeps, live
from nodewright.ports import StateStore, Workflows

_STATUS_READS = 8  # DescribeExecution calls side by side when a tick resolves many leases
_RACES = 3  # a lease released or taken between our two writes is read again, at most this often


def acquire(
    state: StateStore,
    workflows: Workflows | None,
    name: str,
    owner: str,
    now: float,
    interruption: bool = False,
    ttl_seconds: int = LEASE_SECONDS,
) -> str:
    """Take the lease `name` for execution `owner`. Returns "" when `owner` holds it afterwards, otherwise the
    execution that keeps it. Without a workflows port (dry runs), every unexpired holder is taken as alive."""
    holder = ""
    for _ in range(_RACES):
        holder = state.acquire_lock(name, owner, now, ttl_seconds, interruption)
        if holder == owner:
            return ""
        held = state.lease(name, now)
        if held is None:
            continue  # released or expired in between: take it with the plain write again
        if held.owner == owner:
            return ""
        status = workflows.status(held.owner) if workflows is not None else "RUNNING"
        if keeps(held, status, interruption, now):
            return held.owner
        if state.take_over_lock(name, owner, held.owner, now, ttl_seconds, interruption):
            return ""
    return holder


def renew(state: StateStore, name: str, owner: str, now: float, interruption: bool = False) -> bool:
    """Renew `owner`'s lease (or take it again when it lapsed and nobody else took it). False when another
    execution holds it: the node is no longer this execution's."""
    return state.acquire_lock(name, owner, now, LEASE_SECONDS, interruption) == owner


def live_leases(
    state: StateStore, workflows: Workflows | None, now: float, release_dead: bool = True
) -> tuple[dict[str, Lease], dict[str, tuple[Lease, str]]]:
    """(the leases on nodes that hold at `now`, by name; the void ones with their execution's status). With
    `release_dead`, each void lease is released (conditionally on its owner, so a lease renewed meanwhile is kept)."""
    held = {name: lease for name, lease in state.leases(now).items() if lease.nodeclaim}  # not the planner lock
    statuses = _statuses(workflows, [lease.owner for lease in held.values()])
    alive: dict[str, Lease] = {}
    dead: dict[str, tuple[Lease, str]] = {}
    for name, lease in held.items():
        status = statuses.get(lease.owner, "RUNNING")
        if live(lease, status, now):
            alive[name] = lease
        else:
            dead[name] = (lease, status)
            if release_dead:
                state.release_lock(name, lease.owner)
    return alive, dead


def _statuses(workflows: Workflows | None, owners: list[str]) -> Mapping[str, str]:
    if workflows is None or not owners:
        return {}
    unique = sorted(set(owners))
    with ThreadPoolExecutor(max_workers=min(_STATUS_READS, len(unique))) as pool:
        return dict(zip(unique, pool.map(workflows.status, unique), strict=True))
