"""Proof 1: evictions, PodDisruptionBudgets, ReplicaSets and garbage collection are the real ones."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.client.exceptions import ApiException
from worldkit import World, wait_for

APP = {"app": "web"}
# KWOK's pod stages read these annotations: a replacement pod needs two seconds to become Ready, as a
# real container needs time to start, so two evictions issued at once cannot both pass the budget.
POD_TIMING = {
    "pod-create.stage.kwok.x-k8s.io/delay": "0s",
    "pod-create.stage.kwok.x-k8s.io/jitter-delay": "0s",
    "pod-ready.stage.kwok.x-k8s.io/delay": "2s",
    # KWOK's jitter is the upper bound of a random delay, not an addition: equal means exactly 2 s.
    "pod-ready.stage.kwok.x-k8s.io/jitter-delay": "2s",
}


def _ready_pods(world: World, namespace: str) -> list[Any]:
    pods = world.core.list_namespaced_pod(namespace, label_selector="app=web").items
    return [
        p
        for p in pods
        if p.metadata.deletion_timestamp is None
        and p.spec.node_name
        and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
    ]


def _evict(world: World, namespace: str, pod: str) -> int:
    """Issue a policy/v1 Eviction and return the HTTP status (201 created, 429 blocked)."""
    try:
        world.core.create_namespaced_pod_eviction(
            pod,
            namespace,
            {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": namespace}},
        )
    except ApiException as exc:
        return int(exc.status)
    return 201


def _disruptions_allowed(world: World, namespace: str) -> int | None:
    status = world.policy.read_namespaced_pod_disruption_budget("web", namespace).status
    if status is None or status.observed_generation is None:
        return None
    return int(status.disruptions_allowed)


def test_pdb_blocks_the_second_of_two_concurrent_evictions_then_allows_after_replacement(
    local_world: World, namespace: str
) -> None:
    world = local_world
    for _ in range(2):
        world.make_node()
    world.apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": APP},
                "template": {
                    "metadata": {"labels": APP, "annotations": POD_TIMING},
                    "spec": {
                        "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}],
                        "terminationGracePeriodSeconds": 1,
                        # Only the KWOK nodes of this world run pods; keep off any other node.
                        "nodeSelector": {"kwok.x-k8s.io/node": "fake"},
                    },
                },
            },
        },
    )
    world.policy.create_namespaced_pod_disruption_budget(
        namespace,
        {"metadata": {"name": "web"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": APP}}},
    )
    pods = wait_for(lambda: p if len(p := _ready_pods(world, namespace)) == 3 else None, 60, "3 ready pods")
    # The disruption controller (kube-controller-manager) computes the budget from the ready pods.
    wait_for(lambda: _disruptions_allowed(world, namespace) == 1, 60, "PDB to allow one disruption")

    first, second = pods[0].metadata.name, pods[1].metadata.name
    results: dict[str, int] = {}
    barrier = threading.Barrier(2)

    def evict(pod: str) -> None:
        barrier.wait()
        results[pod] = _evict(world, namespace, pod)

    threads = [threading.Thread(target=evict, args=(p,)) for p in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results.values()) == [201, 429], results
    blocked = first if results[first] == 429 else second
    evicted = second if blocked == first else first

    # The ReplicaSet replaces the evicted pod; KWOK runs it; the budget recovers.
    wait_for(
        lambda: len(r := _ready_pods(world, namespace)) == 3 and evicted not in {p.metadata.name for p in r},
        60,
        "a ready replacement pod",
    )
    wait_for(lambda: _disruptions_allowed(world, namespace) == 1, 60, "PDB to allow a disruption again")
    assert _evict(world, namespace, blocked) == 201

    # Deleting the Deployment garbage-collects its ReplicaSet and pods (background propagation).
    wait_for(lambda: len(_ready_pods(world, namespace)) == 3, 60, "3 ready pods before deleting")
    world.apps.delete_namespaced_deployment("web", namespace, propagation_policy="Background")
    wait_for(
        lambda: not world.core.list_namespaced_pod(namespace, label_selector="app=web").items,
        90,
        "garbage collection to remove every pod",
    )
    assert not world.apps.list_namespaced_replica_set(namespace).items
