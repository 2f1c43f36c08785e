"""Static NodePools through the planner's tick: the NodeClaims it is short of are created and launched, those
beyond its size deleted (emptiest first), and a pod never opens a NodeClaim in it."""

from __future__ import annotations

from typing import Any

from service_fakes import FakeCloud, FixedClock, node_for, nodeclass, nodepool, pod
from test_provision_service import batch_of
from test_termination_service import CATALOG

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.service.plan import PlannerPorts, TickResult, tick
from nodewright.service.provision import provision


def static_pool(replicas: int, **spec: Any) -> dict[str, Any]:
    doc = nodepool("static")
    doc["metadata"]["uid"] = "uid-static"
    doc["spec"]["replicas"] = replicas
    doc["spec"].update(spec)
    return doc


def world(replicas: int, *extra: dict[str, Any]) -> tuple[InMemoryCluster, FakeCloud, PlannerPorts]:
    clock = FixedClock()
    cluster = InMemoryCluster([static_pool(replicas), nodeclass(), *extra], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    return cluster, cloud, PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, InMemoryState(), CATALOG)


def claims(cluster: InMemoryCluster, pool: str = "static") -> list[dict[str, Any]]:
    return [
        c
        for (kind, _, _), c in sorted(cluster.objects.items())
        if kind == "NodeClaim" and c["metadata"]["labels"].get("karpenter.sh/nodepool") == pool
    ]


def live(cluster: InMemoryCluster) -> list[str]:
    return [c["metadata"]["name"] for c in claims(cluster) if not c["metadata"].get("deletionTimestamp")]


def join_all(cluster: InMemoryCluster, cloud: FakeCloud, ports: PlannerPorts) -> None:
    """Every launched static NodeClaim's node registers; a tick marks them Registered and Initialized."""
    for i, claim in enumerate(claims(cluster)):
        provider = str((claim.get("status") or {}).get("providerID") or "")
        node = f"ip-10-0-1-{i}.ec2.internal"
        if provider and ("Node", "", node) not in cluster.objects:
            document = node_for(cloud.instances[provider.rsplit("/", 1)[-1]], node, "static")
            document["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            cluster.put(document)
    tick(ports)


def test_the_tick_launches_the_replicas_of_a_static_pool_with_no_pods() -> None:
    cluster, cloud, ports = world(3)
    result: TickResult = tick(ports)
    assert len(result.static_launched) == 3 and len(live(cluster)) == 3
    assert [d["launch"] for d in result.static] == [3]
    assert len(cloud.instances) == 3
    # The next tick finds the pool at its size: nothing more launches.
    again = tick(ports)
    assert again.static_launched == [] and len(live(cluster)) == 3
    assert len(cloud.instances) == 3


def test_scaling_a_static_pool_down_deletes_the_emptiest_nodeclaims() -> None:
    cluster, cloud, ports = world(3, pod("web-0"))
    tick(ports)
    join_all(cluster, cloud, ports)
    busy = claims(cluster)[0]
    node = busy["status"]["nodeName"]
    bound = cluster.objects[("Pod", "web", "web-0")]
    bound["spec"]["nodeName"] = node
    bound["status"] = {"phase": "Running"}
    bound["metadata"]["resourceVersion"] = "2"  # the planner keeps pods parsed by uid and resourceVersion
    cluster.objects[("NodePool", "", "static")]["spec"]["replicas"] = 1
    result = tick(ports)
    assert len(result.static_removed) == 2 and busy["metadata"]["name"] not in result.static_removed
    assert live(cluster) == [busy["metadata"]["name"]]


def test_a_pending_pod_opens_no_nodeclaim_in_a_static_pool() -> None:
    clock = FixedClock()
    cluster = InMemoryCluster([static_pool(0), nodeclass(), pod("web-0")], clock=clock.now)
    cloud, state = FakeCloud(cluster_log=cluster.log), InMemoryState()
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    assert result.launched == [] and cloud.instances == {}
    assert any(d.action == "unschedulable" for d in result.decisions)


def test_limits_nodes_caps_the_launches() -> None:
    clock = FixedClock()
    cluster = InMemoryCluster([static_pool(5, limits={"nodes": "2"}), nodeclass()], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    ports = PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, InMemoryState(), CATALOG)
    result = tick(ports)
    assert len(result.static_launched) == 2
    assert "limits.nodes 2" in result.static[0]["reason"]


def test_a_tick_that_dies_after_create_fleet_has_its_instance_adopted_by_the_next_and_launches_once() -> None:
    # The planner is killed after EC2 accepted the fleet and before the NodeClaim recorded it. The next tick must
    # adopt the instance tagged for the claim, not launch a second one.
    cluster, cloud, ports = world(1)
    accepted = cloud.create_fleet

    def dies_after(request: Any) -> Any:
        accepted(request)
        raise RuntimeError("the planner's Lambda ended here")

    cloud.create_fleet = dies_after  # type: ignore[method-assign]
    tick(ports)
    assert len(cloud.instances) == 1 and len(live(cluster)) == 1
    assert not (claims(cluster)[0].get("status") or {}).get("providerID")
    cloud.create_fleet = accepted  # type: ignore[method-assign]
    again = tick(ports)
    assert len(cloud.instances) == 1, again.static_launched
    [instance] = cloud.instances
    [claim] = claims(cluster)
    assert str(claim["status"]["providerID"]).endswith(instance) and len(live(cluster)) == 1
