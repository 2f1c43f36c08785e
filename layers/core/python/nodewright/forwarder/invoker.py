"""Sending a payload to the provisioner Lambda: boto3 `Invoke` (RequestResponse) with our own retries.

botocore's retries are switched off so that one policy, visible in logs and metrics, decides: throttling
(`TooManyRequestsException`, `RequestLimitExceeded`, ...), server errors (HTTP 5xx), connection failures
and function errors (the handler raised) are retried with jittered exponential back-off up to
`attempts` tries; anything else (a missing function, no permission, a malformed request) fails at once,
since retrying cannot fix it. Retrying a delivered payload is safe: the provisioner is idempotent on the
batch id.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, HTTPClientError

from nodewright.forwarder.backoff import Backoff
from nodewright.forwarder.batching import Payload
from nodewright.forwarder.outcome import InvokeResult, summarize

RETRYABLE_CODES = frozenset(
    {
        "TooManyRequestsException",
        "ThrottlingException",
        "Throttling",
        "RequestLimitExceeded",
        "ServiceException",
        "ServiceUnavailable",
        "ResourceConflictException",  # the function is being updated; it will be invocable shortly
        "EC2ThrottledException",
        "ENILimitReachedException",
    }
)


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        return code in RETRYABLE_CODES or status >= 500 or status == 429
    return isinstance(exc, ConnectionError | HTTPClientError)


@dataclass(slots=True)
class LambdaInvoker:
    """Invoke `function` with a payload, retrying as the module doc says. `client` and `sleep` are injectable."""

    function: str
    region: str
    attempts: int = 5
    timeout_seconds: float = 330.0
    backoff: Backoff = field(default_factory=lambda: Backoff(base=0.5, cap=20.0))
    sleep: Callable[[float], None] = time.sleep
    client: Any = None

    def __post_init__(self) -> None:
        if self.client is None:
            self.client = boto3.client(
                "lambda",
                region_name=self.region,
                config=Config(
                    retries={"total_max_attempts": 1},
                    connect_timeout=10,
                    read_timeout=self.timeout_seconds,
                    tcp_keepalive=True,
                ),
            )

    def invoke(self, payload: Payload) -> InvokeResult:
        started = time.monotonic()
        self.backoff.reset()
        error = ""
        for attempt in range(1, self.attempts + 1):
            try:
                response = self.client.invoke(
                    FunctionName=self.function, InvocationType="RequestResponse", Payload=payload.body
                )
                body = response["Payload"].read()
                decoded = json.loads(body) if body else None
                if response.get("FunctionError"):
                    error = f"function error {response['FunctionError']}: {summarize(decoded)}"
                else:
                    return InvokeResult(True, attempt, time.monotonic() - started, decoded)
            except (ClientError, BotoCoreError) as exc:
                if not _retryable(exc):
                    return InvokeResult(False, attempt, time.monotonic() - started, error=f"{exc}")
                error = str(exc)
            except ValueError as exc:  # the response was not JSON: report, do not retry a delivered payload
                return InvokeResult(False, attempt, time.monotonic() - started, error=f"unreadable response: {exc}")
            if attempt < self.attempts:
                self.sleep(self.backoff.next_delay())
        return InvokeResult(False, self.attempts, time.monotonic() - started, error=error)
