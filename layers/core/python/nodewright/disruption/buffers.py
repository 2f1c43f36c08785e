"""Where CapacityBuffers' virtual pods stand now: the room they keep on nodes, and what each buffer lacks.

Karpenter's provisioner places a buffer's virtual pods with the pending pods on every pass, counts per node the
virtual pods it placed there, and its emptiness refuses a node with any (an empty node that holds buffer room is
the room, not waste). nodewright computes the same placement from the tick's snapshot, with the simulation every
disruption decision uses (`disruption.simulate` with no candidate: the pending pods, virtual ones included, onto
the Ready nodes' free room and the NodeClaims in flight). A virtual pod nominated to a NodeClaim in flight waits
for it, as a pending pod does. Pure: the cluster state in, the placement out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model import capacitybuffer as cb
from nodewright.model.capacitybuffer import BufferResolution
from nodewright.model.conditions import Condition


@dataclass(frozen=True, slots=True)
class BufferFit:
    """One buffer's virtual pods this tick: on existing capacity (nodes, NodeClaims in flight), on new NodeClaims
    the simulation would need, or nowhere (no NodePool can hold them)."""

    existing: int = 0
    new: int = 0
    failed: int = 0

    @property
    def short(self) -> int:
        """How many of the buffer's pods have no room yet."""
        return self.new + self.failed


@dataclass(frozen=True, slots=True)
class BufferPlacement:
    """`hosts`: node name -> virtual pods placed on its free room; `fits`: buffer `namespace/name` -> its fit;
    `wanting`: see the field."""

    hosts: Mapping[str, int] = field(default_factory=dict)
    fits: Mapping[str, BufferFit] = field(default_factory=dict)
    # Buffer `namespace/name` -> the keys of its virtual pods that only a new NodeClaim would hold.
    wanting: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def place_buffers(state: object) -> BufferPlacement:
    """The placement of the buffers' virtual pods in `state` (a `disruption.state.ClusterState`); empty when no
    buffer is ready. Real pending pods are placed with them, as Karpenter schedules both in one pass."""
    from nodewright.disruption.simulate import _inflight, simulate
    from nodewright.disruption.state import ClusterState

    assert isinstance(state, ClusterState)
    virtual = {p.key: cb.buffer_of(p) for p in state.inputs.pending_pods if cb.is_virtual(p)}
    if not virtual:
        return BufferPlacement()
    results = simulate(state, ()).results
    _, waiting = _inflight(state, state.registered(), ())
    nodes = {n.name for n in state.inputs.nodes}
    hosts: Counter[str] = Counter()
    existing: Counter[str] = Counter(virtual[k] for k in waiting if k in virtual)
    for target, keys in results.existing.items():
        for key in keys:
            if key in virtual:
                existing[virtual[key]] += 1
                if target in nodes:
                    hosts[target] += 1
    on_new = sorted(k for claim in results.nodeclaims for k in claim.pods if k in virtual)
    new = Counter(virtual[k] for k in on_new)
    failed = Counter(virtual[u.pod] for u in results.unschedulable if u.pod in virtual)
    buffers = set(virtual.values())
    fits = {b: BufferFit(existing[b], new[b], failed[b]) for b in sorted(buffers)}
    wanting: dict[str, list[str]] = {}
    for key in on_new:
        wanting.setdefault(virtual[key], []).append(key)
    return BufferPlacement(dict(hosts), fits, {b: tuple(keys) for b, keys in wanting.items()})


def provisioning_condition(resolution: BufferResolution, fit: BufferFit | None) -> Condition | None:
    """The `Provisioning` condition Karpenter's provisioner writes for the buffer (None: leave it as it is, when
    the buffer is ready but none of its pods was placed this time)."""
    if not resolution.ready:
        return Condition(cb.PROVISIONING, "False", cb.NOT_READY_FOR_PROVISIONING, "Buffer is not ReadyForProvisioning")
    if resolution.replicas == 0:
        return Condition(cb.PROVISIONING, "False", cb.BUFFER_EMPTY, "Buffer has zero desired replicas")
    if fit is None:
        return None
    if fit.short:
        message = f"{fit.new}/{resolution.replicas} virtual pods required new capacity, {fit.failed} failed"
        return Condition(cb.PROVISIONING, "False", cb.REQUIRES_NEW_CAPACITY, message)
    if fit.existing == resolution.replicas:
        message = f"All {resolution.replicas} virtual pods fit on existing capacity"
        return Condition(cb.PROVISIONING, "True", cb.FITS_EXISTING_CAPACITY, message)
    return None


def ready_condition(resolution: BufferResolution) -> Condition:
    """The `ReadyForProvisioning` condition Karpenter's capacitybuffer controller writes."""
    status = "True" if resolution.ready else "False"
    return Condition(cb.READY_FOR_PROVISIONING, status, resolution.reason, resolution.message)
