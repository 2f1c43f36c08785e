"""A small Prometheus text exposition (format 0.0.4): counters, gauges and histograms with fixed labels.

Written here rather than taken from prometheus-client because the forwarder needs five metrics and no
process collectors or multiprocess mode; one dependency fewer in the image and in the core package.
Thread-safe: the watch thread, the main loop and the HTTP server all touch it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

LabelValues = tuple[str, ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format_value(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _labels(names: Sequence[str], values: LabelValues, extra: str = "") -> str:
    parts = [f'{name}="{_escape(value)}"' for name, value in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


@dataclass
class _Metric:
    name: str
    help: str
    label_names: tuple[str, ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _key(self, labels: Sequence[str]) -> LabelValues:
        if len(labels) != len(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}, got {tuple(labels)}")
        return tuple(labels)


@dataclass
class Counter(_Metric):
    _values: dict[LabelValues, float] = field(default_factory=dict, repr=False)

    def inc(self, amount: float = 1.0, labels: Sequence[str] = ()) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, labels: Sequence[str] = ()) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            items = sorted(self._values.items()) or ([((), 0.0)] if not self.label_names else [])
        lines += [f"{self.name}{_labels(self.label_names, k)} {_format_value(v)}" for k, v in items]
        return lines


@dataclass
class Gauge(_Metric):
    _values: dict[LabelValues, float] = field(default_factory=dict, repr=False)

    def set(self, value: float, labels: Sequence[str] = ()) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = value

    def value(self, labels: Sequence[str] = ()) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} gauge"]
        with self._lock:
            items = sorted(self._values.items()) or ([((), 0.0)] if not self.label_names else [])
        lines += [f"{self.name}{_labels(self.label_names, k)} {_format_value(v)}" for k, v in items]
        return lines


@dataclass
class Histogram(_Metric):
    buckets: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
    _counts: list[int] = field(default_factory=list, repr=False)
    _sum: float = 0.0
    _count: int = 0

    def __post_init__(self) -> None:
        if list(self.buckets) != sorted(self.buckets) or self.label_names:
            raise ValueError("histogram buckets must be increasing (and this histogram takes no labels)")
        self._counts = [0] * len(self.buckets)

    def observe(self, value: float) -> None:
        with self._lock:
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    self._counts[i] += 1
            self._sum += value
            self._count += 1

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self._lock:
            for bound, count in zip(self.buckets, self._counts, strict=True):
                lines.append(f'{self.name}_bucket{{le="{_format_value(bound)}"}} {count}')
            lines.append(f'{self.name}_bucket{{le="+Inf"}} {self._count}')
            lines.append(f"{self.name}_sum {_format_value(self._sum)}")
            lines.append(f"{self.name}_count {self._count}")
        return lines


@dataclass
class ForwarderMetrics:
    """Every metric the forwarder exports (names prefixed `nodewright_forwarder_`)."""

    pending_pods_seen: Counter = field(
        default_factory=lambda: Counter("nodewright_forwarder_pending_pods_seen_total", "Pods seen becoming pending.")
    )
    pending_pods: Gauge = field(
        default_factory=lambda: Gauge("nodewright_forwarder_pending_pods", "Pods pending right now.")
    )
    batches: Counter = field(
        default_factory=lambda: Counter(
            "nodewright_forwarder_batches_total", "Payloads sent to the provisioner, by outcome.", ("outcome",)
        )
    )
    batch_size: Histogram = field(
        default_factory=lambda: Histogram(
            "nodewright_forwarder_batch_size_pods",
            "Pods per payload sent.",
            buckets=(1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000),
        )
    )
    invoke_latency: Histogram = field(
        default_factory=lambda: Histogram(
            "nodewright_forwarder_invoke_seconds", "Duration of one Invoke call, retries included."
        )
    )
    errors: Counter = field(
        default_factory=lambda: Counter("nodewright_forwarder_errors_total", "Errors, by kind.", ("kind",))
    )
    leader: Gauge = field(
        default_factory=lambda: Gauge("nodewright_forwarder_leader", "1 while this replica holds the Lease.")
    )
    registrations: Counter = field(
        default_factory=lambda: Counter(
            "nodewright_forwarder_registrations_total",
            "Registration payloads (nodes that joined with karpenter.sh/unregistered) sent, by outcome.",
            ("outcome",),
        )
    )
    nodes_awaiting_registration: Gauge = field(
        default_factory=lambda: Gauge(
            "nodewright_forwarder_nodes_awaiting_registration",
            "Nodes that joined and still carry karpenter.sh/unregistered.",
        )
    )

    def render(self) -> str:
        """The whole exposition, ending with a newline."""
        lines: list[str] = []
        for metric in (
            self.pending_pods_seen,
            self.pending_pods,
            self.batches,
            self.batch_size,
            self.invoke_latency,
            self.errors,
            self.leader,
            self.registrations,
            self.nodes_awaiting_registration,
        ):
            lines.extend(metric.render())
        return "\n".join(lines) + "\n"
