"""A warm provisioner keeps, from batch to batch, the copies of the nodes that get no room and the solver's
registration of them (`service.provision.warm`). What it keeps is keyed by the very Node objects, parsed once
per (uid, resourceVersion): a node deleted, changed or given pods since the last batch is never served from it."""

from __future__ import annotations

import dataclasses
from typing import Any

from service_fakes import SmallCatalog, nodepool, pod
from test_provision_service import actions, batch_of, world

from nodewright.model.objects import Node
from nodewright.scheduling import TemplateCache
from nodewright.service.provision import WarmBatch, provision
from nodewright.service.provision.read import full_nodes

CATALOG = SmallCatalog()


def node(name: str, version: str, pool: str = "general") -> dict[str, Any]:
    """A node of 16 vCPU of `pool`, as the API server serves it (uid and resourceVersion)."""
    labels = {
        "node.kubernetes.io/instance-type": "m5.4xlarge",
        "karpenter.sh/nodepool": pool,
        "topology.kubernetes.io/zone": "us-west-2a",
        "kubernetes.io/hostname": name,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": version, "labels": labels},
        "spec": {"providerID": f"aws:///us-west-2a/i-{name}"},
        "status": {
            "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
        },
    }


def test_a_copy_without_room_is_kept_for_the_same_node_only() -> None:
    a, b, c = (Node(name=n, allocatable={"cpu": 2000}) for n in ("a", "b", "c"))
    kept: dict[str, tuple[Node, Node]] = {}
    first = full_nodes([a, b, c], {"c"}, kept)
    assert [n.allocatable for n in first] == [{}, {}, {"cpu": 2000}]
    assert set(kept) == {"a", "b"}
    changed = dataclasses.replace(b, labels={"tier": "gold"})
    second = full_nodes([a, changed, c], {"c"}, kept)
    assert second[0] is first[0]  # the same node: its copy is reused
    assert second[1] is not first[1] and second[1].labels == {"tier": "gold"} and second[1].allocatable == {}
    # A node deleted is forgotten; a node whose pods were all read keeps its room.
    third = full_nodes([changed, a], {"a"}, kept)
    assert set(kept) == {"b"} and third[1] is a


def test_a_node_deleted_or_moved_to_another_pool_since_the_last_batch_frees_the_pools_limit() -> None:
    cluster, cloud, state, clock = world(pod("web-0", cpu="1"), node("n1", "5"))
    cluster.put(nodepool(limits={"cpu": "16"}))
    parsed: dict[Any, Any] = {}
    warm, templates = WarmBatch(), TemplateCache()

    def batch(batch_id: str) -> Any:
        return provision(
            batch_of(cluster, batch_id),
            cluster,
            cloud,
            state,
            clock,
            CATALOG,
            parsed_pods=parsed,
            nodepool_templates=templates,
            warm=warm,
        )

    first = batch("b1")
    # n1's 16 vCPU use up the limit (and n1 takes no pod: the kube-scheduler found it full).
    assert not first.launched and [d.subject for d in actions(first, "unschedulable")] == ["pod/web/web-0"]
    again = batch("b2")
    assert not again.launched and warm.full  # the same node: served from what the warm container kept
    base = warm.registration.base
    cluster.put(node("n1", "6", pool="other"))  # relabelled: a new resourceVersion
    assert base is not None
    moved = batch("b3")
    assert warm.registration.base is base  # forked: n1 registered again, not every node
    assert len(moved.launched) == 1
    cluster.delete_node("n1")
    cluster.put(node("n2", "7"))
    cluster.objects.pop(("NodeClaim", "", moved.launched[0].name))  # as if that claim's node had gone
    refused = batch("b4")
    assert not refused.launched  # n2 uses the limit up again
    cluster.delete_node("n2")
    freed = batch("b5")
    assert len(freed.launched) == 1 and "n2" not in warm.full
