"""What one Invoke came to, and a short view of the provisioner's answer for logs. Pure (no boto3), so the
run loop can depend on it without importing the AWS SDK."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class InvokeResult:
    """The outcome of sending one payload: `ok`, the attempts used, and what came back (or went wrong)."""

    ok: bool
    attempts: int
    seconds: float
    response: Any = None  # the provisioner's decoded JSON response
    error: str = ""


def summarize(response: Any, limit: int = 20) -> Any:
    """A short view of the provisioner's response for a log line: scalars as they are, lists as counts."""
    if not isinstance(response, dict):
        return response if not isinstance(response, list) else {"items": len(response)}
    out: dict[str, Any] = {}
    for key, value in list(response.items())[:limit]:
        if isinstance(value, list):
            out[key] = len(value)
        elif isinstance(value, dict):
            out[key] = {k: (len(v) if isinstance(v, list | dict) else v) for k, v in list(value.items())[:limit]}
        else:
            out[key] = value
    return out
