"""`status.lastPodEventTime` of NodeClaims, from the pod events the forwarder reports.

Karpenter's pod-events controller stamps a NodeClaim with the time of the last pod event on its node (a pod bound
to it, finished, terminating or deleted); emptiness and consolidation wait `consolidateAfter` from it. The forwarder
watches those pods, but it may no longer write NodeClaim status: whoever may patch `nodeclaims/status` may also
move a claim's `providerID` onto a node nodewright did not launch. So it reports `(nodeclaim, node, time)` in its
payload and the provisioner writes the time, trusting the report no further than the API server confirms it:

- the NodeClaim and the node exist, read consistently (GET, not the watch cache);
- they belong together (`disruption.fleet.disowns`: same providerID, the node labelled with the claim's NodePool);
- the time is not in the future: ahead of this clock by up to `CLOCK_SKEW_SECONDS` (the forwarder's node and
  Lambda keep different clocks) it is recorded as now, further ahead it is refused;
- the time only moves forward (an older report, or a re-sent one, writes nothing).

A lying forwarder can then at most postpone consolidation of nodewright's own nodes, never reach another node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from nodewright.disruption.fleet import disowns, epoch
from nodewright.ports import Cluster
from nodewright.service.batch import PodEventHint, rfc3339

CLOCK_SKEW_SECONDS = 30.0
CONCURRENCY = 8  # reports are independent; each costs two GETs and at most one PATCH
RECORDED, UNCHANGED, REFUSED, FAILED = "recorded", "unchanged", "refused", "failed"


@dataclass(frozen=True, slots=True)
class PodEventOutcome:
    """What became of one report: `outcome` is recorded, unchanged (not later than what the claim has),
    refused (the API server does not confirm it) or failed (an API error); `reason` says why."""

    nodeclaim: str
    node: str
    outcome: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"nodeclaim": self.nodeclaim, "node": self.node, "outcome": self.outcome, "reason": self.reason}


def latest(events: Sequence[PodEventHint]) -> list[PodEventHint]:
    """The latest report per (NodeClaim, node), in the order first seen: one write each."""
    out: dict[tuple[str, str], PodEventHint] = {}
    for event in events:
        key = (event.nodeclaim, event.node)
        if key not in out or event.at > out[key].at:
            out[key] = event
    return list(out.values())


def record_pod_events(
    events: Sequence[PodEventHint], cluster: Cluster, now: float, skew: float = CLOCK_SKEW_SECONDS
) -> list[PodEventOutcome]:
    """Write `status.lastPodEventTime` for each report the API server confirms (module doc); never raises.

    `now`: this clock, epoch seconds. Returns one outcome per (NodeClaim, node), in the order first reported.
    """
    work = latest(events)
    if len(work) <= 1:
        return [_record(e, cluster, now, skew) for e in work]
    with ThreadPoolExecutor(max_workers=min(CONCURRENCY, len(work))) as executor:
        return list(executor.map(lambda e: _record(e, cluster, now, skew), work))


def _record(event: PodEventHint, cluster: Cluster, now: float, skew: float) -> PodEventOutcome:
    def outcome(kind: str, reason: str) -> PodEventOutcome:
        return PodEventOutcome(event.nodeclaim, event.node, kind, reason)

    if event.at > now + skew:
        return outcome(REFUSED, f"the event's time {rfc3339(event.at)} is ahead of this clock ({rfc3339(now)})")
    try:
        claim = cluster.get_nodeclaim(event.nodeclaim)
        if claim is None:
            return outcome(REFUSED, "no such NodeClaim")
        node = cluster.get_node(event.node)
        if node is None:
            return outcome(REFUSED, "no such node")
        wrong = disowns(claim, node)
        if wrong:
            return outcome(REFUSED, wrong)
        when = float(int(min(event.at, now)))  # whole seconds, as written: a re-send compares equal
        if when <= _recorded(claim):
            return outcome(UNCHANGED, "the NodeClaim records a pod event as late or later")
        cluster.update_nodeclaim(event.nodeclaim, {}, {}, {"lastPodEventTime": rfc3339(when)})
    except Exception as error:
        # One NodeClaim's write failing (deleted meanwhile, throttled) must not cost the others theirs; the
        # forwarder's next pod event on the node is written again.
        return outcome(FAILED, str(error) or type(error).__name__)
    return outcome(RECORDED, f"lastPodEventTime {rfc3339(when)}")


def _recorded(claim: Mapping[str, object]) -> float:
    status = claim.get("status")
    return epoch(str(status.get("lastPodEventTime") or "")) if isinstance(status, Mapping) else 0.0
