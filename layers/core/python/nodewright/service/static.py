"""Static NodePools on the planner's tick: launch the NodeClaims a pool is short of, remove those beyond its size.

`disruption.static` decides (in `disruption.plan`); this acts. Launches go through the provisioning path (the
EC2NodeClasses resolved and the catalog built as for a batch, each NodeClaim finished by the simulation's
finalizer, created, then launched with CreateFleet), named per tick, pool and index so a re-run of the same tick
finds the NodeClaims it created. A removal asks for the NodeClaim's deletion, as Karpenter's static deprovisioning
deletes it: the next tick's termination drains the node (PodDisruptionBudgets and the grace period respected) and
terminates its instance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from nodewright.catalog.types import InstanceTypeSource
from nodewright.disruption.static import StaticDecision
from nodewright.model.inputs import ClusterInputs
from nodewright.ports import Cloud, Cluster, StateStore
from nodewright.scheduling.results import PlannedNodeClaim, Results
from nodewright.scheduling.static_claims import static_claims
from nodewright.service.provision import ProvisionResult, nodeclaim_name, start_launches
from nodewright.service.provision.plan import Plan, prepare


def launch_static(
    decisions: Sequence[StaticDecision],
    inputs: ClusterInputs,
    cluster: Cluster,
    cloud: Cloud,
    state: StateStore,
    catalog_source: InstanceTypeSource,
    now: float,
    timer: Callable[[], float] = time.perf_counter,
) -> ProvisionResult:
    """Create and launch each decision's `launch` NodeClaims. Returns the provisioning result: every NodeClaim
    launched (or found launched by an earlier run of this tick) and a decision for each that could not be planned
    or launched, with its reason."""
    tick = f"static-{math.floor(now / 60)}"
    result = ProvisionResult(tick)
    wanted = {d.nodepool: d.launch for d in decisions if d.launch > 0}
    if not wanted:
        return result
    ready = prepare(inputs, cloud, state, catalog_source, now, result)
    pools = {p.name: p for p in ready.pools}
    claims: list[tuple[str, PlannedNodeClaim]] = []
    for name, count in sorted(wanted.items()):
        pool = pools.get(name)
        if pool is None:
            continue  # its EC2NodeClass is not usable: `prepare` decided why
        planned, why = static_claims(pool, count, inputs.nodeclasses, ready.catalog.instance_types, inputs.daemonsets)
        if why:
            result.decide("skipped", f"nodepool/{name}", f"static NodePool: {len(planned)} of {count} planned: {why}")
        claims.extend((nodeclaim_name(f"{tick}/{name}/{i}", claim), claim) for i, claim in enumerate(planned))
    if not claims:
        return result
    plan = Plan(
        Results(nodeclaims=tuple(c for _, c in claims)),
        claims,
        pools,
        ready.catalog,
        ready.resolved,
        ready.node_classes,
        ready.unavailable,
        ready.info,
    )
    pipeline = start_launches(tick, plan, cluster, cloud, state, now, result, timer)
    try:
        pipeline.wait_created()
    finally:
        for outcome in pipeline.outcomes():
            result.merge(outcome)
    return result


def remove_static(decisions: Sequence[StaticDecision], cluster: Cluster, problems: list[str]) -> list[str]:
    """Ask for the deletion of each NodeClaim the decisions remove; returns those asked. A refused request is
    reported in `problems`: the next tick decides again."""
    removed = []
    for decision in decisions:
        for name in decision.remove:
            try:
                cluster.request_nodeclaim_deletion(name)
            except Exception as error:  # refused: the next tick finds the pool beyond its size again
                problems.append(
                    f"nodeclaim/{name}: static NodePool {decision.nodepool}: {type(error).__name__}: {error}"
                )
                continue
            removed.append(name)
    return removed
