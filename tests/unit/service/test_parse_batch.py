"""The forwarder's payload at the provisioner's edge: what is accepted, and errors that name every bad field."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.service.batch import MAX_POD_EVENTS, Batch, PayloadError, PodEventHint, PodHint, parse_batch

POD = {"namespace": "web", "name": "web-0", "uid": "u-1", "resourceVersion": "7"}


def test_a_full_payload_becomes_a_batch_of_hints_and_unknown_keys_are_ignored() -> None:
    payload = {"batch_id": "b1", "cluster": "prod", "sent_at": "2026-12-02T10:00:00Z", "pods": [POD], "new": 1}
    hint = PodHint("web", "web-0", "u-1", "7")
    assert parse_batch(payload) == Batch("b1", "prod", (hint,), "2026-12-02T10:00:00Z", ())
    assert hint.key == "web/web-0"


def test_a_pod_object_from_an_older_forwarder_is_read_as_a_hint_and_its_spec_ignored() -> None:
    pod = {
        "metadata": {"name": "web-0", "namespace": "web", "uid": "u-1", "resourceVersion": "7"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "60"}}}]},
    }
    batch = parse_batch({"batch_id": "b1", "cluster": "prod", "pods": [pod]})
    assert batch.pods == (PodHint("web", "web-0", "u-1", "7"),)


def test_a_hint_is_confirmed_by_its_object_at_its_version_or_a_later_one_only() -> None:
    hint = PodHint("web", "web-0", "u-1", "7")
    assert hint.confirmed_by({"metadata": {"uid": "u-1", "resourceVersion": "7"}})
    # Written again since the forwarder saw it (the kube-scheduler's new condition message): read no earlier.
    assert hint.confirmed_by({"metadata": {"uid": "u-1", "resourceVersion": "12"}})
    assert not hint.confirmed_by({"metadata": {"uid": "u-1", "resourceVersion": "6"}})  # the cache is behind
    assert not hint.confirmed_by({"metadata": {"uid": "u-2", "resourceVersion": "12"}})  # another pod of that name
    assert not hint.confirmed_by({"metadata": {"uid": "u-1"}})
    assert not PodHint("web", "web-0", "u-1", "x7").confirmed_by({"metadata": {"uid": "u-1", "resourceVersion": "x8"}})
    assert PodHint("web", "web-0").confirmed_by({"metadata": {"uid": "anything", "resourceVersion": "1"}})


def test_a_registration_payload_has_no_pods_and_names_nodes() -> None:
    batch = parse_batch({"batch_id": "r1", "cluster": "prod", "pods": [], "nodes": ["ip-10-0-0-1"]})
    assert batch.pods == () and batch.nodes == ("ip-10-0-0-1",) and batch.sent_at == ""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"batch_id": None}, "batch_id: missing or empty"),
        ({"batch_id": ""}, "batch_id: missing or empty"),
        ({"batch_id": 7}, "batch_id: must be a string"),
        ({"batch_id": "x" * 257}, "batch_id: 257 characters, at most 256 allowed"),
        ({"cluster": ""}, "cluster: missing or empty"),
        ({"sent_at": 5}, "sent_at: must be a string"),
        ({"pods": None}, "pods: must be a list of pod hints"),
        ({"pods": ["web-0"]}, r"pods\[0\]: must be an object with a non-empty string `name`"),
        ({"pods": [{"namespace": "web"}]}, r"pods\[0\]: must be an object with a non-empty string `name`"),
        ({"pods": [{"name": "a", "resourceVersion": 7}]}, r"pods\[0\]: must be an object"),
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
        "pods: must be a list of pod hints (an empty list for a registration payload)"
    )


def test_a_payload_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(PayloadError, match="expected a JSON object from the forwarder, got list"):
        parse_batch([])


def test_pod_events_are_read_with_their_times_and_bad_ones_named() -> None:
    event = {"nodeclaim": "general-abc", "node": "ip-10-0-0-1", "at": "2027-01-15T08:00:00Z"}
    batch = parse_batch({"batch_id": "p1", "cluster": "prod", "pods": [], "pod_events": [event]})
    assert batch.pod_events == (PodEventHint("general-abc", "ip-10-0-0-1", 1_800_000_000.0),)
    assert batch.pod_events[0].to_json() == event
    assert parse_batch({"batch_id": "b1", "cluster": "prod", "pods": []}).pod_events == ()
    bad = [{**event, "at": "yesterday"}, {**event, "at": "2027-01-15T08:00:00"}, {"node": "n"}]
    with pytest.raises(PayloadError) as error:
        parse_batch({"batch_id": "p1", "cluster": "prod", "pods": [], "pod_events": bad})
    assert all(f"pod_events[{i}]" in str(error.value) for i in range(3))


def test_a_payload_cannot_make_the_provisioner_read_without_bound() -> None:
    event = {"nodeclaim": "c", "node": "n", "at": "2027-01-15T08:00:00Z"}
    with pytest.raises(PayloadError, match=f"at most {MAX_POD_EVENTS}"):
        parse_batch({"batch_id": "p1", "cluster": "prod", "pods": [], "pod_events": [event] * (MAX_POD_EVENTS + 1)})
