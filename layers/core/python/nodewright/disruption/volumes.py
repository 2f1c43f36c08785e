"""Which VolumeAttachments a drained node's termination waits for (Karpenter v1.14.1's node termination
controller: `awaitVolumeDetachment`, `pendingVolumeAttachments`, `filterVolumeAttachments`).

Once the drain is done, the instance is terminated only when the attach-detach controller has detached the
volumes of the pods that left, so a StatefulSet's pod can attach its volume on another node at once instead of
waiting for EC2 to detach it as the instance goes. Karpenter's rule, kept here:

- the VolumeAttachments waited for are those whose `spec.nodeName` is the node and whose source names a
  PersistentVolume (`spec.source.persistentVolumeName`; an inline volume is not waited for);
- except the PersistentVolumes of the pods the drain does not move (not drainable: they tolerate
  `karpenter.sh/disrupted:NoSchedule`, are static (mirror) pods, or are stuck terminating more than a minute),
  found through their PersistentVolumeClaims (`persistentVolumeClaim.claimName`, or `<pod>-<volume>` for a
  generic ephemeral volume) and the claims' `spec.volumeName`; a claim that does not exist is skipped;
- the wait ends when none is left (the NodeClaim's `VolumesDetached` condition True), or once the deadline (the
  NodeClaim's terminationGracePeriod, as IdentifyCandidate set it) has passed (False,
  TerminationGracePeriodElapsed); meanwhile the condition is Unknown, AwaitingVolumeDetachment.

Inputs are API documents (dicts) and epoch seconds; nothing here reads the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.disruption.drain import drain_pod
from nodewright.model.conditions import FALSE, TRUE, UNKNOWN

VOLUMES_DETACHED = "VolumesDetached"  # the NodeClaim condition Karpenter's termination sets
AWAITING = "AwaitingVolumeDetachment"
GRACE_ELAPSED = "TerminationGracePeriodElapsed"
INSTANCE_GONE = "InstanceGone"


@dataclass(frozen=True, slots=True)
class VolumeWait:
    """What a volume-detachment check decided.

    `pending`: the VolumeAttachment names still waited for, sorted. `done`: the instance may be terminated
    (nothing is pending, or the deadline passed). `status`/`reason`: the NodeClaim's VolumesDetached condition
    (True ""; Unknown AwaitingVolumeDetachment; False TerminationGracePeriodElapsed).
    """

    pending: tuple[str, ...]
    done: bool
    status: str
    reason: str


def pod_claims(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (namespace, name) of each PersistentVolumeClaim a pod's volumes use: a persistentVolumeClaim volume's
    claimName, or `<pod>-<volume>` for a generic ephemeral volume (the name Kubernetes gives its claim)."""
    metadata = pod.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "default")
    out = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            out.append((namespace, str(claim)))
        elif volume.get("ephemeral") is not None:
            out.append((namespace, f"{metadata.get('name', '')}-{volume.get('name', '')}"))
    return out


def undrainable_claims(pods: Iterable[Mapping[str, Any]], now: float) -> list[tuple[str, str]]:
    """The claims of the pods on the node the drain does not move (Karpenter's `!pod.IsDrainable`): tolerating
    the disrupted taint, static (mirror) pods, or stuck terminating."""
    out: list[tuple[str, str]] = []
    for doc in pods:
        pod = drain_pod(doc)
        if pod.kept or pod.stuck(now):
            out.extend(pod_claims(doc))
    return out


def pending_attachments(
    attachments: Iterable[Mapping[str, Any]], node: str, claims: Iterable[Mapping[str, Any]]
) -> tuple[str, ...]:
    """The names of the VolumeAttachments on `node` the termination waits for: each naming a PersistentVolume that
    is not bound to one of `claims` (the undrainable pods' PersistentVolumeClaims, as read)."""
    kept = {str((c.get("spec") or {}).get("volumeName") or "") for c in claims} - {""}
    out = []
    for attachment in attachments:
        spec = attachment.get("spec") or {}
        if spec.get("nodeName") != node:
            continue
        volume = (spec.get("source") or {}).get("persistentVolumeName")
        if not volume or volume in kept:
            continue
        out.append(str((attachment.get("metadata") or {}).get("name") or volume))
    return tuple(sorted(out))


def volume_wait(pending: Sequence[str], now: float, deadline: float | None, instance_gone: bool = False) -> VolumeWait:
    """Whether the termination goes on: nothing `pending`, the `deadline` has passed (None: none is set), or the
    instance is gone already (`instance_gone`: nothing is left to detach from, and Karpenter's termination skips
    its waits for a NodeClaim whose instance the cloud no longer has), so no wait lasts for ever."""
    if not pending:
        return VolumeWait((), True, TRUE, "")
    if instance_gone:
        return VolumeWait(tuple(pending), True, FALSE, INSTANCE_GONE)
    if deadline is not None and now > deadline:
        return VolumeWait(tuple(pending), True, FALSE, GRACE_ELAPSED)
    return VolumeWait(tuple(pending), False, UNKNOWN, AWAITING)
