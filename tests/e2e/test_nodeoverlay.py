"""NodeOverlay end to end on the local world: an overlay's price changes what the next provisioning plan chooses.

The pool may launch on-demand m5 or r5, large only; each pod asks for 1.5 vCPU, so each needs a node of its own.
Without an overlay the provisioner chooses m5.large (the cheaper listed price); after a NodeOverlay with
`priceAdjustment: "-50%"` on the r5 family (r5.large then costs less than m5.large) the next plan, for a pod of the
same shape, chooses r5.large. The provisioner reads the NodeOverlay from the API server as it reads NodePools
(the stack's function, with the chart's RBAC), and its plan names the overlaid price. A planner tick then writes
the overlay's conditions through its status subresource (the chart's nodeoverlays/status grant).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from test_provisioning import (  # noqa: F401 (make_pool and provisioner are pytest fixtures)
    Provisioner,
    all_pending,
    converge,
    deployment,
    make_pool,
    provisioner,
    running,
)
from worldkit import World, wait_for

from nodewright.catalog.snapshot import SnapshotSource
from nodewright.localworld import deploy

FAMILY = "karpenter.k8s.aws/instance-family"
REQUIREMENTS = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": FAMILY, "operator": "In", "values": ["m5", "r5"]},
    {"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["large"]},
]


def on_demand_price(name: str) -> float:
    """The shipped catalog's on-demand price of a type (the local world's provisioner reads the same catalog)."""
    it = next(t for t in SnapshotSource().instance_types() if t.name == name)
    return min(o.price for o in it.offerings if o.capacity_type == "on-demand")


@pytest.fixture
def half_price_r5(local_world: World) -> Iterator[dict[str, Any]]:
    """The NodeOverlay, deleted after the test (it would change every later test's plans)."""
    custom = client.CustomObjectsApi(local_world.api_client)
    name = f"half-r5-{id(custom) % 100000}"
    body = {
        "apiVersion": "nodewright.io/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [{"key": FAMILY, "operator": "In", "values": ["r5"]}], "priceAdjustment": "-50%"},
    }
    yield body
    try:
        custom.delete_cluster_custom_object("nodewright.io", "v1alpha1", "nodeoverlays", name)
    except client.ApiException as error:
        if error.status != 404:
            raise


def planner_tick(world: World) -> dict[str, Any]:
    """One tick of the stack's planner function, as its schedule invokes it."""
    [stack] = world.aws("cloudformation").describe_stacks(StackName=deploy.STACK)["Stacks"]
    name = next(o["OutputValue"] for o in stack["Outputs"] if o["OutputKey"] == "PlannerFunctionName")
    response = world.aws("lambda").invoke(FunctionName=name, Payload=b"{}")
    body: dict[str, Any] = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, body
    return body


def node_type(world: World, namespace: str, app: str) -> str:
    [pod] = [p for p in running(world, namespace) if p.metadata.labels.get("app") == app]
    return str(world.core.read_node(pod.spec.node_name).metadata.labels["node.kubernetes.io/instance-type"])


def test_a_half_price_overlay_on_a_family_makes_the_next_plan_choose_it(
    local_world: World,
    namespace: str,
    provisioner: Provisioner,  # noqa: F811 (a fixture)
    make_pool: Any,  # noqa: F811 (a fixture)
    half_price_r5: dict[str, Any],
) -> None:
    world = local_world
    # The premise: r5.large lists dearer than m5.large, and cheaper at half price.
    assert on_demand_price("r5.large") > on_demand_price("m5.large") > on_demand_price("r5.large") / 2
    pool = make_pool(REQUIREMENTS)

    # Without an overlay: m5.large.
    deployment(world, namespace, pool, "before", 1, "1500m", "1Gi")
    wait_for(lambda: all_pending(world, namespace, 1), 60, "the first pod marked Unschedulable")
    [before] = [c for r in converge(provisioner, namespace, 1) for c in r["nodeclaims"]]
    assert before["planned"]["instance_type"] == "m5.large", before
    assert node_type(world, namespace, "before") == "m5.large"

    # The overlay halves r5's price: the next plan, for a pod of the same shape, takes r5.large.
    custom = client.CustomObjectsApi(world.api_client)
    custom.create_cluster_custom_object("nodewright.io", "v1alpha1", "nodeoverlays", half_price_r5)
    deployment(world, namespace, pool, "after", 1, "1500m", "1Gi")
    wait_for(
        lambda: len([p for p in world.core.list_namespaced_pod(namespace).items if not p.spec.node_name]) == 1,
        60,
        "the second pod pending",
    )
    [after] = [c for r in converge(provisioner, namespace, 2) for c in r["nodeclaims"]]
    assert after["planned"]["instance_type"] == "r5.large", after
    assert after["price_per_hour"] == pytest.approx(on_demand_price("r5.large") / 2), after
    assert node_type(world, namespace, "after") == "r5.large"

    # The planner's tick reads the overlay too, counts the r5 node at the overlaid price, and writes its status.
    name = half_price_r5["metadata"]["name"]
    body = planner_tick(world)
    assert name in body["decisions"]["nodeoverlays"]["applied"], body["decisions"]["nodeoverlays"]
    assert body["status"]["ready"][f"nodeoverlay/{name}"] == "True", body["status"]
    stored = custom.get_cluster_custom_object("nodewright.io", "v1alpha1", "nodeoverlays", name)
    assert {c["type"]: c["status"] for c in stored["status"]["conditions"]} == {
        "ValidationSucceeded": "True",
        "Ready": "True",
    }
