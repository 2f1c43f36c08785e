"""X-Ray tracing for the Lambda handlers, through Powertools' Tracer, built on first use.

Every function runs with active tracing, so Lambda opens a segment per invocation; `subsegment()` adds one
for the handler's work, annotated so traces can be searched (batch id, NodeClaim, step), with the AWS SDK
(botocore) and the Kubernetes API (http.client, under urllib3) calls inside it as their own subsegments.

The Tracer is built on the first traced call, not at import: constructing one imports the X-Ray SDK (about a
quarter of a second) even when tracing is disabled, and a cold start is mostly imports. With
POWERTOOLS_TRACE_DISABLED=true (tests, local runs) nothing is imported and `subsegment()` does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Only the SDKs the functions call through; Powertools' default patches every library X-Ray knows, which
# costs about twice the time at set-up.
PATCHED_MODULES = ["botocore", "httplib"]

_TRACERS: dict[str, Any] = {}


def disabled() -> bool:
    """True when POWERTOOLS_TRACE_DISABLED turns tracing off."""
    return os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() in ("true", "1")


def tracer(service: str) -> Any:
    """The Powertools Tracer of `service` (one per process), or None when tracing is disabled."""
    if disabled():
        return None
    if service not in _TRACERS:
        from aws_lambda_powertools import Tracer

        _TRACERS[service] = Tracer(service=service, patch_modules=PATCHED_MODULES)
    return _TRACERS[service]


@contextmanager
def subsegment(service: str, name: str, **annotations: str | int | float | bool) -> Iterator[Any]:
    """A subsegment `name` of the invocation's trace, with `annotations`; yields it (None when disabled)."""
    current = tracer(service)
    if current is None:
        yield None
        return
    with current.provider.in_subsegment(name) as segment:
        for key, value in annotations.items():
            segment.put_annotation(key, value)
        yield segment
