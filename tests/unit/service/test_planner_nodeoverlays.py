"""NodeOverlays in the services: the provisioner's plan and the planner's tick read the overlaid catalog, and the
tick writes the overlays' status."""

from __future__ import annotations

from typing import Any

from service_fakes import FakeCloud, FixedClock, nodeclass, nodepool, pod
from test_planner_reservations import CAPACITY_TYPES, running_on_demand, ticks
from test_provision_service import batch_of
from test_termination_service import CATALOG

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.service.provision import provision


def half_price(family: str, name: str = "half") -> dict[str, Any]:
    return {
        "apiVersion": "nodewright.io/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {
            "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": [family]}],
            "priceAdjustment": "-90%",
        },
    }


def launched_type(*extra: dict[str, Any]) -> tuple[str, float]:
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(requirements=[CAPACITY_TYPES], taints=[]), nodeclass(), pod("web-0"), *extra])
    [launched] = provision(
        batch_of(cluster), cluster, FakeCloud(cluster_log=cluster.log), InMemoryState(), clock, CATALOG
    ).launched
    return launched.instance_type, launched.price


def test_the_provisioner_plans_on_the_overlaid_catalog() -> None:
    plain, plain_price = launched_type()
    family = "r5" if not plain.startswith("r5.") else "m5"
    overlaid, price = launched_type(half_price(family))
    assert overlaid.startswith(f"{family}.") and overlaid != plain
    assert price < plain_price  # the plan's price is the overlaid one


def test_the_planner_tick_prices_nodes_with_the_overlays_and_writes_their_status() -> None:
    cluster, cloud, state, clock, instance_type, _zone = running_on_demand()
    family = instance_type.split(".")[0]
    cluster.put(half_price(family, "node-family"))
    result = ticks(cluster, cloud, state, clock)
    assert result.decisions["nodeoverlays"] == {"applied": ["node-family"], "refused": []}
    assert result.status["ready"]["nodeoverlay/node-family"] == "True"
    doc = cluster.objects[("NodeOverlay", "", "node-family")]
    assert {c["type"]: c["status"] for c in doc["status"]["conditions"]} == {
        "ValidationSucceeded": "True",
        "Ready": "True",
    }
