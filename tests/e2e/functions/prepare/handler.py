"""Test handler: fails once per request key with a retryable error, then returns work items.

Module state survives between invocations exactly as in a warm Lambda container, which is how the
first attempt is told apart from the retry.
"""

from __future__ import annotations

from typing import Any

import boto3

_attempts: dict[str, int] = {}


class TransientError(Exception):
    """A failure the state machine retries."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    key = str(event["key"])
    _attempts[key] = _attempts.get(key, 0) + 1
    if _attempts[key] == 1:
        raise TransientError(f"first attempt for {key} fails")
    items = list(range(1, int(event["size"]) + 1))
    # The caller identity proves the handler's boto3 reaches moto with its execution role.
    caller = boto3.client("sts").get_caller_identity()["Arn"]
    return {"items": items, "count": len(items), "attempts": _attempts[key], "caller": caller}
