"""Test handler: always fails with a non-retryable error, to exercise Catch."""

from __future__ import annotations

from typing import Any


class PermanentError(Exception):
    """A failure the state machine catches instead of retrying."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise PermanentError(f"cannot handle {sorted(event)}")
