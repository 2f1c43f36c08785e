"""Shared by every handler test in this folder: the moto account the provisioner's tests seed, and the
trimmed AWS service models the functions read in Lambda."""

import pytest
from test_provisioner_handler import account  # noqa: F401

from nodewright.adapters import aws_sdk
from nodewright.localworld.motoserver import complete_event_envelope, serialize_subnet_addresses

# moto's EventBridge drops the event's `account` on the way to an SQS target; EventBridge keeps it.
complete_event_envelope()
# moto's subnet address generator is not thread-safe; the provisioner launches in parallel threads.
serialize_subnet_addresses()


@pytest.fixture(autouse=True)
def trimmed_aws_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Handlers read only the services and operations in `aws_sdk.SERVICES`, as they do from the dependencies layer, so
    a call to a service or an operation left out of it fails here."""
    monkeypatch.setenv(aws_sdk.MODELS_ENV, str(aws_sdk.cached_models()))
