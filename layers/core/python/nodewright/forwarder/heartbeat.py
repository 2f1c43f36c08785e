"""The forwarder's two CloudWatch metrics: a heartbeat, and how long the oldest pending pod has waited.

The leader publishes both every `heartbeat_seconds` (60 by default). The stack alarms when the heartbeat stops
(no forwarder sends pending pods; missing data counts as breaching) and when the oldest pending pod has waited
more than ten minutes (pods are not getting capacity). A pod's wait counts from its `PodScheduled` condition's
last transition, when the scheduler marked it unschedulable, so a restarted forwarder reports the same age.
Both metrics carry the dimensions `service=forwarder` and `cluster=<name>`, so two clusters in one account
never mask each other. The forwarder's role may call PutMetricData in the `nodewright` namespace only.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.settings import FORWARDER_HEARTBEAT_METRIC, METRICS_NAMESPACE, OLDEST_PENDING_POD_METRIC


def _since(projection: Mapping[str, Any]) -> datetime.datetime | None:
    for condition in (projection.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("lastTransitionTime"):
            try:
                return datetime.datetime.fromisoformat(str(condition["lastTransitionTime"]).replace("Z", "+00:00"))
            except ValueError:
                return None
    return None


def oldest_pending_seconds(projections: Iterable[Mapping[str, Any]], now: datetime.datetime) -> float:
    """Seconds since the longest-waiting of `projections` (pending pods) was marked unschedulable; 0 for none."""
    ages = [(now - since).total_seconds() for p in projections if (since := _since(p)) is not None]
    return max([0.0, *ages])


def metric_data(cluster: str, oldest_seconds: float) -> list[dict[str, Any]]:
    """The PutMetricData entries of one heartbeat."""
    dimensions = [{"Name": "service", "Value": "forwarder"}, {"Name": "cluster", "Value": cluster}]
    return [
        {"MetricName": FORWARDER_HEARTBEAT_METRIC, "Dimensions": dimensions, "Value": 1.0, "Unit": "Count"},
        {"MetricName": OLDEST_PENDING_POD_METRIC, "Dimensions": dimensions, "Value": oldest_seconds, "Unit": "Seconds"},
    ]


@dataclass(slots=True)
class CloudWatchPublisher:
    """Publishes a heartbeat with boto3 (botocore's standard retries); `client` is injectable."""

    cluster: str
    region: str
    client: Any = None

    def __post_init__(self) -> None:
        if self.client is None:
            import boto3
            from botocore.config import Config

            config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=10)
            self.client = boto3.client("cloudwatch", region_name=self.region, config=config)

    def publish(self, oldest_seconds: float) -> None:
        self.client.put_metric_data(Namespace=METRICS_NAMESPACE, MetricData=metric_data(self.cluster, oldest_seconds))
