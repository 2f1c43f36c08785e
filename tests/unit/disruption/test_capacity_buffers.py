"""CapacityBuffers in disruption: where their virtual pods stand, what each lacks, the Provisioning condition, and
the emptiness rule (a node holding buffer room is not empty)."""

from __future__ import annotations

from cluster_builder import Cluster

from nodewright.disruption.buffers import BufferFit, provisioning_condition, ready_condition
from nodewright.disruption.plan import plan
from nodewright.model import capacitybuffer as cb

WHEN_EMPTY = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}


def _cluster(nodes: int = 1) -> Cluster:
    cluster = Cluster()
    cluster.pool(disruption=WHEN_EMPTY)
    for i in range(nodes):
        cluster.node(f"node-{i}", "m5.xlarge")
    return cluster


def test_buffer_pods_take_free_room_and_what_does_not_fit_is_short() -> None:
    cluster = _cluster()
    # m5.xlarge: under 4 CPU allocatable, so three 1-CPU pods fit and the fourth needs a new node.
    cluster.buffer("room", replicas=4, cpu="1")
    placement = cluster.state().buffer_placement()
    assert placement.hosts == {"node-0": 3}
    assert placement.fits == {"web/room": BufferFit(existing=3, new=1, failed=0)}


def test_real_pending_pods_compete_with_the_buffer_for_room() -> None:
    cluster = _cluster()
    cluster.pod("web-0", cpu="3")  # pending
    cluster.buffer("room", replicas=1, cpu="1")
    fit = cluster.state().buffer_placement().fits["web/room"]
    assert fit.existing + fit.short == 1


def test_emptiness_keeps_only_the_nodes_holding_buffer_room() -> None:
    cluster = _cluster(nodes=2)
    cluster.buffer("room", replicas=2, cpu="1", node="node-1")
    decided = plan(cluster.state(), {})
    assert sorted(c.name for d in decided.decisions for c in d.candidates) == ["claim-node-0"]
    assert decided.unconsolidatable == {"claim-node-1": 'Node "node-1" has buffer pods'}


def test_a_buffer_without_room_anywhere_protects_no_node() -> None:
    cluster = _cluster()
    cluster.buffer("room", replicas=1, cpu="1000")  # no instance type holds it
    state = cluster.state()
    assert state.buffer_placement().hosts == {}
    assert state.buffer_placement().fits["web/room"].failed == 1
    assert [c.name for d in plan(state, {}).decisions for c in d.candidates] == ["claim-node-0"]


def test_conditions_as_karpenter_writes_them() -> None:
    buffer = cb.CapacityBuffer("web", "room", pod_template_ref="t", replicas=2)
    ready = cb.BufferResolution(buffer, True, cb.RESOLVED, "Pod template resolved successfully", replicas=2)
    assert provisioning_condition(ready, BufferFit(existing=2)).reason == cb.FITS_EXISTING_CAPACITY  # type: ignore[union-attr]
    short = provisioning_condition(ready, BufferFit(existing=1, new=1))
    assert short is not None and (short.status, short.reason) == ("False", cb.REQUIRES_NEW_CAPACITY)
    assert short.message == "1/2 virtual pods required new capacity, 0 failed"
    assert provisioning_condition(ready, None) is None
    empty = cb.BufferResolution(buffer, True, cb.RESOLVED, "", replicas=0)
    assert provisioning_condition(empty, None).reason == cb.BUFFER_EMPTY  # type: ignore[union-attr]
    missing = cb.BufferResolution(buffer, False, cb.POD_TEMPLATE_NOT_FOUND, 'podtemplates "t" not found')
    assert provisioning_condition(missing, None).reason == cb.NOT_READY_FOR_PROVISIONING  # type: ignore[union-attr]
    assert (ready_condition(missing).type, ready_condition(missing).status) == (cb.READY_FOR_PROVISIONING, "False")


def test_a_node_being_disrupted_holds_no_buffer_room_so_the_buffer_asks_again() -> None:
    """Drift and expiration keep the buffer: once a workflow holds the node, its room no longer counts, and the
    tick asks for the buffer's pods again (beside the replacement for the node's own pods)."""
    cluster = _cluster()
    cluster.buffer("room", replicas=2, cpu="1", node="")
    assert cluster.state().buffer_placement().wanting == {}
    placement = cluster.state(locked=["claim-node-0"]).buffer_placement()
    assert placement.hosts == {}
    assert placement.wanting == {"web/room": ("web/capacity-buffer-room-1", "web/capacity-buffer-room-2")}
