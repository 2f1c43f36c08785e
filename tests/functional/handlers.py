"""Loading a Lambda handler as the runtime does, and the context object it is invoked with."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
REGION = "us-east-1"


def load_handler(function: str) -> Any:
    """A fresh copy of `functions/<function>/handler.py` (its container-level cache starts empty, as in a cold
    start)."""
    spec = importlib.util.spec_from_file_location(f"{function}_handler_under_test", FUNCTIONS / function / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Context:
    """The parts of the Lambda context Powertools reads."""

    function_name: str = "function"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:function"
    aws_request_id: str = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000
