"""Test handler: squares one Map item."""

from __future__ import annotations

from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    value = int(event["value"])
    return {"value": value, "square": value * value, "function": context.function_name}
