"""Issue 24's static NodePool proof on the local world: `kubectl scale nodepool NAME --replicas=3` from 1 gives three
Ready nodes with no pod asking for them, and `--replicas=1` takes the pool back to one, through the CRD's scale
subresource (spec.replicas, status.nodes) and the planner's tick, as Karpenter v1.14's static capacity does."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubectl import kubectl
from test_disruption import Stack
from test_provisioning import Pool
from test_scale_down import launched, pool_nodes, ready_nodes, tick, types
from worldkit import World


@pytest.fixture
def static_pool(local_world: World, namespace: str, stack: Stack) -> Iterator[Callable[[int], Pool]]:
    """A static NodePool of this test (spec.replicas set at creation, as the CRD requires), torn down afterwards."""
    made: list[Pool] = []

    def make(replicas: int) -> Pool:
        pool = Pool(local_world, stack.provisioner.node_role, namespace, types("m5.large"), {"nodes": "5"}, None, False)
        pool.spec["replicas"] = replicas
        pool.create_nodepool()
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.teardown()


def tick_until(stack: Stack, pool: Pool, done: Callable[[], bool], what: str, timeout: float = 300) -> list[Any]:
    """Tick the planner (as its schedule would, faster) until `done()`; returns each tick's static decisions."""
    decisions: list[Any] = []
    deadline = time.monotonic() + timeout
    while not done():
        body = tick(stack)
        decisions.extend(d for d in body.get("static", []) if d.get("nodepool") == pool.name)
        problems = [p for p in body.get("problems", []) if pool.name in p or "static" in p]
        problems.append(f"launched {body.get('static_launched')} removed {body.get('static_removed')}")
        assert time.monotonic() < deadline, f"not {what} after {timeout}s; decisions {decisions[-3:]}; {problems}"
        time.sleep(2)
    return decisions


def test_kubectl_scale_nodepool_grows_a_static_pool_to_three_ready_nodes_and_back_to_one(
    local_world: World, namespace: str, stack: Stack, static_pool: Callable[[int], Pool]
) -> None:
    world = local_world
    pool = static_pool(1)

    def size(n: int) -> Callable[[], bool]:
        """n NodeClaims launched, n Nodes, all Ready."""
        return lambda: len(launched(world, pool)) == n == len(pool_nodes(world, pool)) == ready_nodes(world, pool)

    tick_until(stack, pool, size(1), "one Ready node")
    kubectl(world.state.kubeconfig, "scale", "nodepools.nodewright.io", pool.name, "--replicas=3")
    grown = tick_until(stack, pool, size(3), "three Ready nodes")
    assert any(d.get("launch") == 2 for d in grown), grown
    # No pod asked for them: nothing in the test's namespace, and only DaemonSet pods (none here) on the nodes.
    assert not world.core.list_namespaced_pod(namespace).items
    scale = json.loads(
        kubectl(world.state.kubeconfig, "get", "nodepools.nodewright.io", pool.name, "--subresource=scale", "-o=json")
    )
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 3, scale

    kubectl(world.state.kubeconfig, "scale", "nodepools.nodewright.io", pool.name, "--replicas=1")
    tick_until(stack, pool, size(1), "back to one node")
    assert len(pool.instances()) == 1
