"""disruption.volumes: which VolumeAttachments a drained node's termination waits for, and until when (Karpenter
v1.14.1 node termination controller's awaitVolumeDetachment / filterVolumeAttachments)."""

from __future__ import annotations

from typing import Any

from nodewright.disruption.volumes import (
    AWAITING,
    GRACE_ELAPSED,
    INSTANCE_GONE,
    pending_attachments,
    pod_claims,
    undrainable_claims,
    volume_wait,
)
from nodewright.model.conditions import FALSE, TRUE, UNKNOWN, rfc3339

NOW = 1_800_000_000.0


def attachment(name: str, volume: str | None, node: str = "node-a") -> dict[str, Any]:
    source = {"persistentVolumeName": volume} if volume else {"inlineVolumeSpec": {}}
    return {"metadata": {"name": name}, "spec": {"nodeName": node, "attacher": "ebs.csi.aws.com", "source": source}}


def claim(name: str, volume: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"volumeName": volume}}


def pod(
    name: str, *volumes: dict[str, Any], tolerates: bool = False, deleted_at: float | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "ownerReferences": [{"kind": "ReplicaSet"}]}
    if deleted_at is not None:
        metadata["deletionTimestamp"] = rfc3339(deleted_at)
    spec: dict[str, Any] = {"nodeName": "node-a", "volumes": list(volumes)}
    if tolerates:
        spec["tolerations"] = [{"key": "karpenter.sh/disrupted", "operator": "Exists"}]
    return {"metadata": metadata, "spec": spec, "status": {"phase": "Running"}}


def test_every_attachment_of_a_persistent_volume_on_the_node_is_waited_for() -> None:
    found = [attachment("va-1", "pv-foo"), attachment("va-2", "pv-bar"), attachment("va-3", "pv-x", node="other")]
    assert pending_attachments(found, "node-a", []) == ("va-1", "va-2")


def test_an_inline_volume_attachment_is_not_waited_for() -> None:
    assert pending_attachments([attachment("va-1", None)], "node-a", []) == ()


def test_the_volumes_of_pods_the_drain_leaves_are_not_waited_for() -> None:
    found = [attachment("va-foo", "pv-foo"), attachment("va-bar", "pv-bar")]
    assert pending_attachments(found, "node-a", [claim("data", "pv-bar")]) == ("va-foo",)


def test_undrainable_pods_are_those_tolerating_the_taint_and_those_stuck_terminating() -> None:
    data = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    scratch = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}
    pods = [
        pod("kept", data, tolerates=True),
        pod("stuck", scratch, deleted_at=NOW - 61),
        pod("leaving", {"name": "d", "persistentVolumeClaim": {"claimName": "other"}}, deleted_at=NOW - 10),
        pod("running", {"name": "e", "persistentVolumeClaim": {"claimName": "moving"}}),
    ]
    assert undrainable_claims(pods, NOW) == [("default", "data"), ("default", "stuck-scratch")]


def test_a_generic_ephemeral_volume_claim_is_named_from_the_pod_and_the_volume() -> None:
    assert pod_claims(pod("web-0", {"name": "cache", "ephemeral": {}})) == [("default", "web-0-cache")]


def test_the_wait_ends_when_nothing_is_left_or_the_deadline_passed() -> None:
    assert volume_wait((), NOW, None) == volume_wait((), NOW, NOW - 1)
    done = volume_wait((), NOW, None)
    assert done.done and done.status == TRUE
    waiting = volume_wait(("va-1",), NOW, NOW + 60)
    assert not waiting.done and (waiting.status, waiting.reason) == (UNKNOWN, AWAITING)
    assert not volume_wait(("va-1",), NOW, None).done  # no terminationGracePeriod: it waits as long as they exist
    elapsed = volume_wait(("va-1",), NOW, NOW - 1)
    assert elapsed.done and (elapsed.status, elapsed.reason) == (FALSE, GRACE_ELAPSED)
    assert elapsed.pending == ("va-1",)


def test_the_wait_ends_once_the_instance_is_gone_even_without_a_deadline() -> None:
    gone = volume_wait(("va-1",), NOW, None, instance_gone=True)
    assert gone.done and (gone.status, gone.reason) == (FALSE, INSTANCE_GONE)
