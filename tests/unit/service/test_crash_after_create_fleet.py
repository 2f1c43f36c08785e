"""A provisioner that dies after CreateFleet, before recording the instance: the NodeClaim adopts its instance
(nothing healthy is terminated, nothing is launched twice), and garbage collection by providerID removes any other
instance tagged for a NodeClaim that records another."""

from __future__ import annotations

from typing import Any

import pytest
from service_fakes import SmallCatalog, pod
from test_provision_service import actions, run, world

from nodewright.adapters.memory import InMemoryCluster, InMemoryWorkflows
from nodewright.disruption.termination import GC_GRACE_SECONDS, instance_gc
from nodewright.ports import Instance
from nodewright.service.plan import PlannerPorts, tick
from nodewright.service.provision import LAUNCH_TIMEOUT_SECONDS
from nodewright.tags import NODECLAIM

CATALOG = SmallCatalog()


class Died(Exception):
    """The Lambda ended here (a time-out, an out-of-memory kill)."""


def crash_while_recording(cluster: InMemoryCluster) -> None:
    """The next write of a launch onto a NodeClaim never happens: the invocation dies after CreateFleet."""
    update = cluster.update_nodeclaim

    def dying(*args: Any, **kwargs: Any) -> None:
        cluster.update_nodeclaim = update  # type: ignore[method-assign]
        raise Died

    cluster.update_nodeclaim = dying  # type: ignore[method-assign]


def test_a_claim_whose_provisioner_died_after_create_fleet_adopts_its_instance_at_the_launch_timeout() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    crash_while_recording(cluster)
    with pytest.raises(Died):
        run(cluster, cloud, state, clock)
    [instance] = cloud.instances.values()
    [claim] = cluster.of_kind("NodeClaim")
    assert not (claim.get("status") or {}).get("providerID")
    clock.t += LAUNCH_TIMEOUT_SECONDS + 1
    # The pod, still pending, comes again in a later window.
    again = run(cluster, cloud, state, clock, batch_id="b2")
    assert [d.subject for d in actions(again, "adopted")] == [f"nodeclaim/{claim['metadata']['name']}"]
    assert cloud.instances[instance.id].state == "running" and not cloud.terminated
    recorded = cluster.nodeclaim(claim["metadata"]["name"])
    assert recorded is not None and recorded["status"]["providerID"] == f"aws:///{instance.zone}/{instance.id}"
    assert len(cloud.fleets) == 1 and not again.launched  # the pod waits on the adopted claim
    assert again.waiting == {"web/web-0": claim["metadata"]["name"]}


def test_the_planner_adopts_an_unrecorded_launch_after_the_gc_grace_instead_of_sparing_it() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    crash_while_recording(cluster)
    with pytest.raises(Died):
        run(cluster, cloud, state, clock)
    [instance] = cloud.instances.values()
    cloud.instances[instance.id] = Instance(**{**_fields(instance), "launch_time": clock.t})
    clock.t += GC_GRACE_SECONDS + 1
    tick(PlannerPorts(cluster, cloud, InMemoryWorkflows(), clock, state, CATALOG))
    [claim] = cluster.of_kind("NodeClaim")
    assert claim["status"]["providerID"].endswith(instance.id) and not cloud.terminated


def _fields(instance: Instance) -> dict[str, Any]:
    return {name: getattr(instance, name) for name in Instance.__slots__}


def claim(name: str, instance_id: str = "") -> dict[str, Any]:
    status = {"providerID": f"aws:///us-east-1a/{instance_id}"} if instance_id else {}
    return {"kind": "NodeClaim", "metadata": {"name": name}, "status": status}


def instance(instance_id: str, nodeclaim: str, launched: float, state: str = "running") -> Instance:
    return Instance(instance_id, "m5.large", "us-east-1a", state, "spot", launched, {NODECLAIM: nodeclaim})


def test_gc_by_provider_id_keeps_the_recorded_instance_adopts_the_oldest_unrecorded_one_and_terminates_the_rest() -> (
    None
):
    now = 10_000.0
    found = instance_gc(
        [
            instance("i-recorded", "a", now - 600),
            instance("i-second-for-a", "a", now - 500),  # a second launch for a claim that records the first
            instance("i-first-for-b", "b", now - 400),
            instance("i-second-for-b", "b", now - 300),
            instance("i-stopped-for-c", "c", now - 300, state="stopped"),
            instance("i-orphan", "gone", now - 300),
            instance("i-young", "b", now - GC_GRACE_SECONDS + 1),
        ],
        [claim("a", "i-recorded"), claim("b"), claim("c")],
        now,
    )
    assert {name: i.id for name, i in found.adopt.items()} == {"b": "i-first-for-b"}
    assert [i.id for i in found.terminate] == ["i-orphan", "i-second-for-a", "i-second-for-b", "i-stopped-for-c"]
