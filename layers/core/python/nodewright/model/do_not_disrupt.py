"""`karpenter.sh/do-not-disrupt` on a pod: "true" protects it for ever, a Go duration ("5m", "1h30m") protects it
for that long after the pod started (Karpenter v1.14's IsDoNotDisruptActive, pkg/utils/pod/scheduling.go).

A value that is neither "true" nor a positive Go duration protects nothing (as in Karpenter, which reports it with an
event); `invalid_reason` says why, so callers can report it. A pod whose start time is unknown is protected while it
carries a duration (Karpenter fails safe the same way).
"""

from __future__ import annotations

import math
import re

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"

# Go's time.ParseDuration units, in seconds.
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration(text: str) -> float:
    """Seconds in a Go duration string ("90s", "1h30m", "1.5h", "-2m"); raises ValueError as time.ParseDuration
    would refuse it (no unit, an unknown unit, empty)."""
    body = text
    sign = 1.0
    if body[:1] in ("+", "-"):
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f'"{text}" is not a duration: write a number and a unit, such as 5m, 1h or 90s')
    position = 0
    total = 0.0
    for match in _PART.finditer(body):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(body):
        raise ValueError(f'"{text}" is not a duration: write a number and a unit (ns, us, ms, s, m, h), such as 5m')
    return sign * total


def invalid_reason(value: str) -> str:
    """Why `value` protects nothing ("" when it is "true" or a positive duration)."""
    if value == "true":
        return ""
    try:
        seconds = go_duration(value)
    except ValueError as error:
        return f"{DO_NOT_DISRUPT}: {error}; the annotation is ignored"
    if seconds <= 0:
        return f'{DO_NOT_DISRUPT}: duration "{value}" must be positive; the annotation is ignored'
    return ""


def protected_until(value: str | None, started_at: float | None) -> float | None:
    """When the protection a pod's annotation `value` gives ends: None when it gives none, math.inf when it has no
    end ("true", or a duration on a pod whose start time is unknown), else the epoch second it ends."""
    if value is None or invalid_reason(value):
        return None
    if value == "true":
        return math.inf
    if started_at is None:
        return math.inf
    return started_at + go_duration(value)


def is_active(value: str | None, started_at: float | None, now: float) -> bool:
    """True while the annotation still protects the pod at `now` (Karpenter's IsDoNotDisruptActive)."""
    until = protected_until(value, started_at)
    return until is not None and now < until
