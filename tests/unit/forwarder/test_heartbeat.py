"""The leader's heartbeat: published every minute with the oldest pending pod's wait, by the leader only."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from nodewright.forwarder.heartbeat import CloudWatchPublisher, metric_data, oldest_pending_seconds

from .test_app import Clock, Leases, Sink, pod, replica

NOW = datetime.datetime(2026, 1, 1, 0, 10, tzinfo=datetime.UTC)


def waiting_since(name: str, when: str) -> dict[str, Any]:
    doc = pod(name)
    doc["status"]["conditions"] = [{**doc["status"]["conditions"][0], "lastTransitionTime": when}]
    return doc


@dataclass
class Published:
    values: list[float] = field(default_factory=list)
    fail: bool = False

    def publish(self, oldest_seconds: float) -> None:
        if self.fail:
            raise RuntimeError("AccessDenied")
        self.values.append(oldest_seconds)


def test_the_oldest_wait_counts_from_when_the_scheduler_marked_the_pod_unschedulable() -> None:
    pods = [waiting_since("a", "2026-01-01T00:08:00Z"), waiting_since("b", "2026-01-01T00:00:30Z"), pod("c")]
    assert oldest_pending_seconds(pods, NOW) == 570.0
    assert oldest_pending_seconds([], NOW) == 0.0


def test_only_the_leader_publishes_once_per_interval_and_a_failure_is_counted_not_fatal() -> None:
    clock, leases, sink = Clock(), Leases(), Sink()
    leader, standby = replica("a", leases, sink, clock), replica("b", leases, sink, clock)
    leader.publisher, standby.publisher = Published(), Published()
    leader.elect_once()
    standby.elect_once()
    for forwarder in (leader, standby):
        forwarder.apply("RESET", [waiting_since("p", "2025-12-31T23:59:00Z")])
        forwarder.step(0)
    # The replicas' wall clock stands at 2026-01-01T00:00:00Z.
    assert leader.publisher.values == [60.0] and standby.publisher.values == []

    def later(seconds: float) -> None:
        clock.now += seconds
        leader.elect_once()  # renew the Lease, as the elector thread does every few seconds
        leader.step(0)

    later(30)
    assert leader.publisher.values == [60.0]
    leader.publisher.fail = True
    later(31)
    assert leader.metrics.errors.value(("heartbeat",)) == 1
    leader.publisher.fail = False
    later(60)
    assert len(leader.publisher.values) == 2


class _CloudWatch:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def put_metric_data(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)


def test_what_goes_to_cloudwatch_is_what_the_stack_alarms_on() -> None:
    client = _CloudWatch()
    CloudWatchPublisher("prod", "us-east-1", client=client).publish(42.0)
    assert client.calls == [{"Namespace": "nodewright", "MetricData": metric_data("prod", 42.0)}]
    heartbeat, oldest = metric_data("prod", 42.0)
    assert (heartbeat["MetricName"], heartbeat["Value"]) == ("ForwarderHeartbeat", 1.0)
    assert (oldest["MetricName"], oldest["Value"], oldest["Unit"]) == ("OldestPendingPodSeconds", 42.0, "Seconds")
    assert heartbeat["Dimensions"] == [{"Name": "service", "Value": "forwarder"}, {"Name": "cluster", "Value": "prod"}]
