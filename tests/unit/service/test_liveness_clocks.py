"""The launch and registration timeouts count from the NodeClaim's conditions, as Karpenter's liveness.go: the
registration timeout from the Registered condition's transition (written at launch), the launch timeout from a
Launched=False transition; creationTimestamp only when the conditions do not say."""

from __future__ import annotations

from typing import Any

from service_fakes import FakeCloud, FixedClock, SmallCatalog, nodeclass, nodepool, pod
from test_provision_service import batch_of

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.service.plan import PlannerPorts, tick
from nodewright.service.provision import cleanup, provision
from nodewright.service.provision.lifecycle import LAUNCH_TIMEOUT_SECONDS, REGISTRATION_TIMEOUT_SECONDS, liveness_clocks

CATALOG = SmallCatalog()
LATER = "2027-01-15T08:10:00Z"  # ten minutes after the claim's creation (FixedClock's start)


def launched() -> tuple[InMemoryCluster, FakeCloud, FixedClock, str]:
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(), nodeclass(), pod("web-0")], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    [claim] = provision(batch_of(cluster), cluster, cloud, InMemoryState(), clock, CATALOG).launched
    return cluster, cloud, clock, claim.name


def doc(cluster: InMemoryCluster, name: str) -> dict[str, Any]:
    found = cluster.nodeclaim(name)
    assert found is not None
    return found


def test_the_registration_timeout_counts_from_the_registered_conditions_transition() -> None:
    cluster, cloud, clock, name = launched()
    for condition in doc(cluster, name)["status"]["conditions"]:
        condition["lastTransitionTime"] = LATER
    clock.t += 600 + REGISTRATION_TIMEOUT_SECONDS - 60  # 24 min after creation, 14 after the transition
    cleanup(cluster, cloud, clock)
    assert cluster.nodeclaim(name) is not None
    clock.t += 60
    cleanup(cluster, cloud, clock)
    assert cluster.nodeclaim(name) is None


def test_the_planner_tick_times_registration_from_the_conditions_too() -> None:
    cluster, cloud, clock, name = launched()
    for condition in doc(cluster, name)["status"]["conditions"]:
        condition["lastTransitionTime"] = LATER
    clock.t += 600 + REGISTRATION_TIMEOUT_SECONDS - 60
    tick(PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, InMemoryState(), CATALOG))
    assert cluster.nodeclaim(name) is not None


def test_the_launch_timeout_counts_from_a_failed_launchs_transition() -> None:
    cluster, cloud, clock, name = launched()
    claim = doc(cluster, name)
    claim["status"].pop("providerID")
    cloud.instances.clear()
    claim["status"]["conditions"] = [
        {"type": "Launched", "status": "False", "reason": "LaunchFailed", "lastTransitionTime": LATER}
    ]
    clock.t += 600 + LAUNCH_TIMEOUT_SECONDS - 1
    cleanup(cluster, cloud, clock)
    assert cluster.nodeclaim(name) is not None
    clock.t += 1
    cleanup(cluster, cloud, clock)
    assert cluster.nodeclaim(name) is None


def test_the_clocks_fall_back_from_registered_to_launched_and_to_nothing() -> None:
    def claim(*conditions: dict[str, str]) -> dict[str, Any]:
        return {"kind": "NodeClaim", "metadata": {"name": "c"}, "status": {"conditions": list(conditions)}}

    launched_true = {"type": "Launched", "status": "True", "lastTransitionTime": "2027-01-15T08:00:00Z"}
    registered = {"type": "Registered", "status": "Unknown", "lastTransitionTime": LATER}
    assert liveness_clocks([claim(launched_true, registered)]) == {"c": (0.0, 1_800_000_600.0)}
    assert liveness_clocks([claim(launched_true)]) == {"c": (0.0, 1_800_000_000.0)}
    assert liveness_clocks([claim()]) == {"c": (0.0, 0.0)}
    assert liveness_clocks([{**claim(registered), "kind": "Node"}]) == {}
