"""Registration events: which nodes are reported to the provisioner, when again, and under which batch id."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodewright.forwarder.batching import batch_id, hint_of
from nodewright.forwarder.registration import (
    RegistrationPolicy,
    Registrations,
    awaits_registration,
    registration_batch_id,
    registration_payload,
)
from nodewright.launch.userdata import UNREGISTERED_TAINT

TAINT = {"key": UNREGISTERED_TAINT.key, "effect": UNREGISTERED_TAINT.effect}


def node(name: str, rv: str = "1", tainted: bool = True, provider: str = "aws:///us-east-1a/i-1") -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": [TAINT] if tainted else []}
    if provider:
        spec["providerID"] = provider
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": rv}, "spec": spec}


def test_a_joined_node_still_carrying_the_unregistered_taint_or_ready_but_uninitialized_awaits() -> None:
    assert awaits_registration(node("n1"))
    assert not awaits_registration(node("n1", tainted=False))
    ready = node("n1", tainted=False)
    ready["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    assert awaits_registration(ready)
    ready["metadata"]["labels"] = {"karpenter.sh/initialized": "true"}
    assert not awaits_registration(ready)
    assert not awaits_registration(node("n1", provider=""))  # not yet joined with its instance id
    other = node("n1")
    other["spec"]["taints"] = [{"key": "example.com/other", "effect": "NoExecute"}]
    assert not awaits_registration(other)


def delivered(regs: Registrations, now: float) -> list[Any]:
    taken = regs.take(now)
    regs.delivered((n.name for n in taken), now)
    return taken


def test_a_new_node_is_due_at_once_and_again_only_after_a_backoff_doubling_per_delivery() -> None:
    regs = Registrations(RegistrationPolicy(resend_initial_seconds=5, resend_max_seconds=12))
    assert regs.observe(node("n1"))
    assert regs.due(100.0)
    [first] = delivered(regs, 100.0)
    assert (first.name, first.send) == ("n1", 1)
    # The node keeps changing (status updates) while it waits: no re-send before the back-off has passed.
    regs.observe(node("n1", rv="2"))
    assert not regs.due(104.9) and regs.take(104.9) == []
    assert regs.next_wakeup() == 105.0
    [second] = delivered(regs, 105.0)
    assert (second.resource_version, second.send) == ("2", 2)
    assert regs.next_wakeup() == 115.0  # 5 * 2 = 10 s
    [third] = delivered(regs, 115.0)
    assert regs.next_wakeup() == 127.0 and third.send == 3  # capped at 12 s
    # A failed Invoke counts nothing: the same delivery again after the initial delay.
    [fourth] = regs.take(127.0)
    assert regs.next_wakeup() == 132.0
    [retry] = regs.take(132.0)
    assert fourth.send == retry.send == 4


def test_a_node_that_lost_the_taint_or_was_deleted_is_forgotten() -> None:
    regs = Registrations()
    regs.observe(node("n1"))
    regs.observe(node("n2"))
    regs.observe(node("n1", rv="2", tainted=False))
    regs.forget("n2")
    assert regs.waiting_count == 0 and not regs.due(1e9) and regs.next_wakeup() is None


def test_a_relist_drops_nodes_missing_from_it_and_a_recreated_node_starts_afresh() -> None:
    regs = Registrations()
    regs.observe(node("n1"))
    regs.observe(node("n2"))
    delivered(regs, 0.0)
    gone_and_back = node("n2", rv="9")
    gone_and_back["metadata"]["uid"] = "uid-n2-again"
    regs.replace_all([gone_and_back])
    assert regs.waiting_count == 1
    [again] = regs.take(0.1)  # no back-off inherited from the old n2
    assert (again.name, again.uid, again.send) == ("n2", "uid-n2-again", 1)


def test_every_registration_event_gets_its_own_batch_id_and_the_payload_carries_no_pods() -> None:
    regs = Registrations(RegistrationPolicy(resend_initial_seconds=1, resend_max_seconds=1))
    regs.observe(node("n1"))
    first = delivered(regs, 0.0)
    second = delivered(regs, 1.0)  # the same node in the same version, sent again
    ids = {registration_batch_id(first), registration_batch_id(second)}
    assert len(ids) == 2
    # Never the id a pod batch of the same uid and version would get.
    assert batch_id([hint_of(node("n1"))]) not in ids
    payload = registration_payload(first, "demo", "2026-01-01T00:00:00.000000Z")
    body = json.loads(payload.body)
    assert body == {
        "batch_id": registration_batch_id(first),
        "cluster": "demo",
        "sent_at": "2026-01-01T00:00:00.000000Z",
        "pods": [],
        "nodes": ["n1"],
    }
    assert payload.batch_id == body["batch_id"] and payload.pod_count == 0


def test_the_policy_refuses_a_backoff_that_cannot_work() -> None:
    with pytest.raises(ValueError, match="registration back-off"):
        RegistrationPolicy(resend_initial_seconds=10, resend_max_seconds=5)
