"""The provisioner writes `status.lastPodEventTime` from the forwarder's pod events, trusting each report only as
far as the API server confirms it: the NodeClaim and node exist and belong together, the time is not ahead."""

from __future__ import annotations

from typing import Any

from nodewright.adapters.memory import InMemoryCluster
from nodewright.service.batch import PodEventHint
from nodewright.service.provision.podevents import (
    CLOCK_SKEW_SECONDS,
    FAILED,
    RECORDED,
    REFUSED,
    UNCHANGED,
    latest,
    record_pod_events,
)

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def claim(name: str, instance: str, pool: str = "general", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": pool}},
        "spec": {},
        "status": {"providerID": f"aws:///us-east-1a/{instance}", **status},
    }


def node(name: str, instance: str, pool: str | None = "general") -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": pool} if pool else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"aws:///us-east-1a/{instance}"},
        "status": {},
    }


def cluster(*docs: dict[str, Any]) -> InMemoryCluster:
    return InMemoryCluster(
        [claim("ours", "i-ours", nodeName="node-ours"), node("node-ours", "i-ours"), *docs], clock=lambda: NOW
    )


def recorded(c: InMemoryCluster, name: str) -> str:
    return str(c.objects[("NodeClaim", "", name)]["status"].get("lastPodEventTime", ""))


def test_a_confirmed_event_is_written_in_whole_seconds() -> None:
    c = cluster()
    [out] = record_pod_events([PodEventHint("ours", "node-ours", NOW - 60.7)], c, NOW)
    assert (out.outcome, out.nodeclaim, out.node) == (RECORDED, "ours", "node-ours")
    assert recorded(c, "ours") == "2027-01-15T07:58:59Z"
    # Both objects were read with GETs (consistent), not from a list.
    assert {"get nodeclaim/ours", "get node/node-ours"} <= set(c.reads)


def test_the_time_only_moves_forward_and_a_resend_writes_nothing() -> None:
    c = cluster()
    record_pod_events([PodEventHint("ours", "node-ours", NOW - 10)], c, NOW)
    writes = len(c.log)
    again = record_pod_events([PodEventHint("ours", "node-ours", NOW - 10)], c, NOW)
    older = record_pod_events([PodEventHint("ours", "node-ours", NOW - 100)], c, NOW)
    assert [o.outcome for o in again + older] == [UNCHANGED, UNCHANGED] and len(c.log) == writes
    assert recorded(c, "ours") == "2027-01-15T07:59:50Z"


def test_a_time_ahead_of_the_clock_is_refused_and_a_little_ahead_is_recorded_as_now() -> None:
    c = cluster()
    [far] = record_pod_events([PodEventHint("ours", "node-ours", NOW + CLOCK_SKEW_SECONDS + 1)], c, NOW)
    assert far.outcome == REFUSED and "ahead" in far.reason and recorded(c, "ours") == ""
    # A forged far-future time would have held the node out of consolidation for good; nothing was read for it.
    assert c.reads == []
    [near] = record_pod_events([PodEventHint("ours", "node-ours", NOW + 5)], c, NOW)
    assert near.outcome == RECORDED and recorded(c, "ours") == "2027-01-15T08:00:00Z"


def test_a_claim_or_node_the_api_server_does_not_know_is_refused() -> None:
    c = cluster()
    outcomes = record_pod_events(
        [PodEventHint("ghost", "node-ours", NOW), PodEventHint("ours", "node-gone", NOW)], c, NOW
    )
    assert [(o.outcome, o.reason) for o in outcomes] == [(REFUSED, "no such NodeClaim"), (REFUSED, "no such node")]
    assert recorded(c, "ours") == ""


def test_a_claim_and_a_node_that_do_not_belong_together_are_refused() -> None:
    # A managed node group's node (no karpenter.sh/nodepool label), even under the claim's own providerID; and
    # a node of ours that is another claim's.
    c = cluster(
        claim("pointed", "i-mng", nodeName="ip-10-0-0-9"),
        node("ip-10-0-0-9", "i-mng", pool=None),
        node("node-other", "i-other"),
    )
    outcomes = record_pod_events(
        [PodEventHint("pointed", "ip-10-0-0-9", NOW), PodEventHint("ours", "node-other", NOW)], c, NOW
    )
    assert [o.outcome for o in outcomes] == [REFUSED, REFUSED]
    assert "karpenter.sh/nodepool" in outcomes[0].reason and "providerID" in outcomes[1].reason
    assert recorded(c, "pointed") == "" and recorded(c, "ours") == ""


def test_a_failed_write_costs_only_its_own_claim() -> None:
    class Flaky(InMemoryCluster):
        def update_nodeclaim(self, name: str, labels: Any, annotations: Any, status: Any) -> None:
            if name == "ours":
                raise RuntimeError("429 Too Many Requests")
            super().update_nodeclaim(name, labels, annotations, status)

    c = Flaky(
        [
            claim("ours", "i-ours"),
            node("node-ours", "i-ours"),
            claim("second", "i-second"),
            node("node-second", "i-second"),
        ],
        clock=lambda: NOW,
    )
    outcomes = record_pod_events(
        [PodEventHint("ours", "node-ours", NOW), PodEventHint("second", "node-second", NOW)], c, NOW
    )
    assert [(o.nodeclaim, o.outcome) for o in outcomes] == [("ours", FAILED), ("second", RECORDED)]
    assert "429" in outcomes[0].reason and recorded(c, "second") == "2027-01-15T08:00:00Z"


def test_only_the_latest_report_per_claim_and_node_is_written() -> None:
    events = [
        PodEventHint("a", "n1", 10.0),
        PodEventHint("b", "n2", 5.0),
        PodEventHint("a", "n1", 30.0),
        PodEventHint("a", "n1", 20.0),
    ]
    assert latest(events) == [PodEventHint("a", "n1", 30.0), PodEventHint("b", "n2", 5.0)]
