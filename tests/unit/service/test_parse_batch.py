"""The forwarder's payload at the provisioner's edge: what is accepted, and errors that name every bad field."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.service.batch import Batch, PayloadError, parse_batch

POD = {"metadata": {"name": "web-0", "namespace": "web"}, "spec": {"containers": []}}


def test_a_full_payload_becomes_a_batch_and_unknown_keys_are_ignored() -> None:
    payload = {"batch_id": "b1", "cluster": "prod", "sent_at": "2026-12-02T10:00:00Z", "pods": [POD], "new": 1}
    assert parse_batch(payload) == Batch("b1", "prod", [POD], "2026-12-02T10:00:00Z", ())


def test_a_registration_payload_has_no_pods_and_names_nodes() -> None:
    batch = parse_batch({"batch_id": "r1", "cluster": "prod", "pods": [], "nodes": ["ip-10-0-0-1"]})
    assert batch.pods == [] and batch.nodes == ("ip-10-0-0-1",) and batch.sent_at == ""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"batch_id": None}, "batch_id: missing or empty"),
        ({"batch_id": ""}, "batch_id: missing or empty"),
        ({"batch_id": 7}, "batch_id: must be a string"),
        ({"batch_id": "x" * 257}, "batch_id: 257 characters, at most 256 allowed"),
        ({"cluster": ""}, "cluster: missing or empty"),
        ({"sent_at": 5}, "sent_at: must be a string"),
        ({"pods": None}, "pods: must be a list of pod objects"),
        ({"pods": ["web-0"]}, "pods: must be a list of pod objects"),
        ({"nodes": "ip-1"}, "nodes: must be a list of node names"),
    ],
)
def test_each_bad_field_is_named(change: dict[str, Any], message: str) -> None:
    payload = {"batch_id": "b1", "cluster": "prod", "pods": [POD], **change}
    payload = {k: v for k, v in payload.items() if v is not None}
    with pytest.raises(PayloadError, match=message):
        parse_batch(payload)


def test_every_bad_field_is_reported_at_once() -> None:
    with pytest.raises(PayloadError) as raised:
        parse_batch({"cluster": 3, "pods": {}})
    assert str(raised.value) == (
        "payload: batch_id: missing or empty; cluster: must be a string; "
        "pods: must be a list of pod objects (an empty list for a registration payload)"
    )


def test_a_payload_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(PayloadError, match="expected a JSON object from the forwarder, got list"):
        parse_batch([])
