"""Invoke retries (botocore's Stubber on a real Lambda client, no network) and the forwarder's settings."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from nodewright.forwarder.backoff import Backoff
from nodewright.forwarder.batching import Payload
from nodewright.forwarder.config import ForwarderConfig
from nodewright.forwarder.invoker import LambdaInvoker
from nodewright.forwarder.outcome import summarize
from nodewright.settings import SettingsError

PAYLOAD = Payload("ab" * 32, b'{"batch_id":"x","pods":[]}', 0)


def _body(doc: Any) -> StreamingBody:
    raw = json.dumps(doc).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def _invoker(attempts: int = 4) -> tuple[LambdaInvoker, Stubber, list[float]]:
    client = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    slept: list[float] = []
    invoker = LambdaInvoker(
        "provisioner",
        "us-east-1",
        attempts=attempts,
        backoff=Backoff(base=1.0, cap=4.0, rng=random.Random(3)),
        sleep=slept.append,
        client=client,
    )
    return invoker, Stubber(client), slept


def _expected() -> dict[str, Any]:
    return {"FunctionName": "provisioner", "InvocationType": "RequestResponse", "Payload": PAYLOAD.body}


def test_throttles_and_server_errors_are_retried_with_backoff() -> None:
    invoker, stub, slept = _invoker()
    stub.add_client_error("invoke", "TooManyRequestsException", http_status_code=429, expected_params=_expected())
    stub.add_client_error("invoke", "ServiceException", http_status_code=500, expected_params=_expected())
    stub.add_response(
        "invoke", {"StatusCode": 200, "Payload": _body({"launched": [1, 2], "reason": "ok"})}, _expected()
    )
    with stub:
        result = invoker.invoke(PAYLOAD)
    stub.assert_no_pending_responses()
    assert result.ok and result.attempts == 3
    assert result.response == {"launched": [1, 2], "reason": "ok"}
    assert len(slept) == 2 and 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0


def test_a_function_error_is_retried_and_reported_when_it_persists() -> None:
    invoker, stub, slept = _invoker(attempts=2)
    for _ in range(2):
        stub.add_response(
            "invoke",
            {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": _body({"errorMessage": "boom"})},
            _expected(),
        )
    with stub:
        result = invoker.invoke(PAYLOAD)
    assert not result.ok and result.attempts == 2 and "Unhandled" in result.error and "boom" in result.error
    assert len(slept) == 1


def test_errors_retrying_cannot_fix_fail_at_once() -> None:
    invoker, stub, slept = _invoker()
    stub.add_client_error("invoke", "ResourceNotFoundException", http_status_code=404)
    with stub:
        result = invoker.invoke(PAYLOAD)
    assert not result.ok and result.attempts == 1 and slept == []
    assert "ResourceNotFoundException" in result.error


def test_summary_counts_lists() -> None:
    assert summarize({"decisions": [1, 2, 3], "batch_id": "b", "nested": {"a": [1], "b": 2}}) == {
        "decisions": 3,
        "batch_id": "b",
        "nested": {"a": 1, "b": 2},
    }
    assert summarize([1, 2]) == {"items": 2} and summarize(None) is None


# --------------------------------------------------------------------------------------------- config

REQUIRED = {"NODEWRIGHT_CLUSTER": "demo", "NODEWRIGHT_PROVISIONER_FUNCTION": "prov", "AWS_REGION": "eu-west-1"}


def test_defaults() -> None:
    config = ForwarderConfig.from_env({**REQUIRED, "POD_NAME": "fwd-0"})
    assert (config.settings.cluster, config.settings.provisioner_function, config.settings.region) == (
        "demo",
        "prov",
        "eu-west-1",
    )
    assert (config.batch.idle_seconds, config.batch.max_seconds) == (1.0, 10.0)
    assert config.payload_limit == 5 * 1024 * 1024
    assert (config.lease_namespace, config.lease_name, config.identity) == (
        "nodewright",
        "nodewright-forwarder",
        "fwd-0",
    )
    assert config.port == 8080


def test_overrides() -> None:
    env = {
        **REQUIRED,
        "NODEWRIGHT_FORWARDER_IDLE_SECONDS": "2.5",
        "NODEWRIGHT_FORWARDER_MAX_SECONDS": "20",
        "NODEWRIGHT_FORWARDER_PAYLOAD_LIMIT_BYTES": "1000000",
        "POD_NAMESPACE": "ops",
    }
    config = ForwarderConfig.from_env(env)
    assert (config.batch.idle_seconds, config.batch.max_seconds, config.payload_limit) == (2.5, 20.0, 1_000_000)
    assert config.lease_namespace == "ops"
    assert config.identity  # generated when POD_NAME is not set


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("NODEWRIGHT_FORWARDER_IDLE_SECONDS", "soon", "is not a number"),
        ("NODEWRIGHT_FORWARDER_MAX_SECONDS", "-1", "must be positive"),
        ("NODEWRIGHT_FORWARDER_IDLE_SECONDS", "30", "idle_seconds <= max_seconds"),
        ("NODEWRIGHT_FORWARDER_PAYLOAD_LIMIT_BYTES", "7000000", "6 MB"),
        ("NODEWRIGHT_FORWARDER_RENEW_DEADLINE_SECONDS", "20", "renew_deadline_seconds < lease_seconds"),
    ],
)
def test_bad_values_name_the_variable_or_rule(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        ForwarderConfig.from_env({**REQUIRED, name: value})


def test_missing_required_setting_is_named() -> None:
    with pytest.raises(SettingsError, match="NODEWRIGHT_PROVISIONER_FUNCTION"):
        ForwarderConfig.from_env({"NODEWRIGHT_CLUSTER": "demo", "AWS_REGION": "us-east-1"})
