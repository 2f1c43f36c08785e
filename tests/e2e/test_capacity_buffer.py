"""A CapacityBuffer end to end on the local world: room for its pods is launched before any pod asks for it, and a
Deployment of the same pods scheduled afterwards starts at once, on that room, without a new node.

The planner Lambda (invoked as its schedule would) reads the buffer, finds its four virtual pods without room, writes
the buffer's status and asks the provisioner Lambda for the room (an asynchronous Invoke, as in AWS); the provisioner
launches a NodeClaim naming the virtual pods, the registrar turns its instance into a node, and the next ticks see the
buffer's pods fit (`Provisioning: True`). The Deployment's pods are then placed by the real kube-scheduler, which
finds the room already there: no provisioning is asked for them.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client
from test_provisioning import (  # noqa: F401 (make_pool and provisioner are pytest fixtures)
    deployment,
    diagnose,
    make_pool,
    provisioner,
    running,
)
from worldkit import World, wait_for

GROUP, VERSION, PLURAL = "autoscaling.x-k8s.io", "v1beta1", "capacitybuffers"
CPU, MEMORY = "500m", "256Mi"


def _tick(world: World, planner: str) -> dict[str, Any]:
    response = world.aws("lambda").invoke(FunctionName=planner, Payload=b"{}")
    body: dict[str, Any] = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, body
    return body


def _buffer_status(custom: client.CustomObjectsApi, namespace: str) -> dict[str, Any]:
    found = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "burst")
    return dict(found.get("status") or {})


def _condition(status: dict[str, Any], kind: str) -> tuple[str, str]:
    found = next((c for c in status.get("conditions") or [] if c["type"] == kind), {})
    return found.get("status", ""), found.get("reason", "")


def test_a_buffer_of_four_pods_keeps_room_that_a_deployment_of_four_then_uses_without_a_new_node(
    local_world: World,
    namespace: str,
    stack: Any,
    make_pool: Any,  # noqa: F811 (a fixture)
) -> None:
    world = local_world
    planner = stack.outputs["PlannerFunctionName"]
    pool = make_pool([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])
    pod_spec = {
        "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": CPU, "memory": MEMORY}}}],
        "nodeSelector": {"karpenter.sh/nodepool": pool.name},
        "tolerations": [{**pool.taint, "operator": "Equal"}],
    }
    world.core.create_namespaced_pod_template(
        namespace,
        {"metadata": {"name": "burst"}, "template": {"metadata": {"labels": {"app": "burst"}}, "spec": pod_spec}},
    )
    custom = client.CustomObjectsApi(world.api_client)
    custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "CapacityBuffer",
            "metadata": {"name": "burst"},
            "spec": {"podTemplateRef": {"name": "burst"}, "replicas": 4},
        },
    )

    # The first tick finds no room for the buffer and asks the provisioner for it.
    first = _tick(world, planner)
    key = f"{namespace}/burst"
    assert first["buffers"]["short"][key] == 4, first["buffers"]
    assert first["buffers"]["requested"][key] == 4, first["buffers"]
    status = _buffer_status(custom, namespace)
    assert status["replicas"] == 4 and status["podTemplateRef"] == {"name": "burst"}
    assert _condition(status, "ReadyForProvisioning") == ("True", "Resolved")

    # The provisioner's NodeClaims register as nodes; ticks go on until the buffer's pods fit on them. A NodeClaim
    # still in flight is room for the buffer already (as in Karpenter's scheduler), but the Deployment below needs
    # nodes the kube-scheduler can bind to: Ready, and without `karpenter.sh/unregistered`, which a tick takes off.
    # A node that turned Ready after the last tick's snapshot still carries it, and no tick follows the Deployment.
    def pool_claims() -> list[dict[str, Any]]:
        selector = f"karpenter.sh/nodepool={pool.name}"
        found: list[dict[str, Any]] = custom.list_cluster_custom_object(
            "nodewright.io", "v1", "nodeclaims", label_selector=selector
        )["items"]
        return found

    def pool_nodes() -> list[Any]:
        return list(world.core.list_node(label_selector=f"karpenter.sh/nodepool={pool.name}").items)

    def bindable(node: Any) -> bool:
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        others = [t for t in node.spec.taints or [] if (t.key, t.value) != (pool.taint["key"], pool.taint["value"])]
        return ready and not others

    def fits_on_bindable_nodes() -> bool:
        _tick(world, planner)
        fits = _condition(_buffer_status(custom, namespace), "Provisioning") == ("True", "FitsExistingCapacity")
        claims = pool_claims()
        return fits and bool(claims) and sum(map(bindable, pool_nodes())) == len(claims)

    wait_for(fits_on_bindable_nodes, 150, "the buffer's four pods to fit on nodes the kube-scheduler can bind to", 3)
    claims = pool_claims()
    assert claims and all(
        any("capacity-buffer-burst" in p for p in json.loads(c["metadata"]["annotations"]["nodewright.io/pods"]))
        for c in claims
    )
    before = {n.metadata.name for n in pool_nodes()}
    assert before

    # Four real pods of the same shape: the kube-scheduler binds them to the buffer's room at once.
    deployment(world, namespace, pool, "burst", 4, CPU, MEMORY)
    try:
        wait_for(lambda: len(running(world, namespace)) == 4, 60, "the Deployment's four pods running")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{diagnose(world, namespace, [])}") from None
    assert {p.spec.node_name for p in running(world, namespace)} <= before
    # None of them waited for capacity: no NodeClaim names them.
    names = {f"{namespace}/{p.metadata.name}" for p in running(world, namespace)}
    claims = custom.list_cluster_custom_object("nodewright.io", "v1", "nodeclaims")["items"]
    named = {
        p for c in claims for p in json.loads(c["metadata"].get("annotations", {}).get("nodewright.io/pods", "[]"))
    }
    assert not names & named
