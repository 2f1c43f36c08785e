"""Fixed sequences through the convergence world, for the cases the property's seeded search does not reach.

`test_convergence` runs 80 derandomized examples: whatever they reach, they reach every run, and what they miss they
miss every run. These replays pin down two crashes by hand, each with its preconditions asserted (so a change in the
services that moves the crash elsewhere fails loudly instead of passing vacuously), and the invariants of
`World.check` after every operation:

- a voluntary drain (a Drifted workflow) killed after it tainted and cordoned its node: reconciliation's restorations
  must give the node back at the very next planner tick;
- a provisioner killed after CreateFleet answered, before it recorded the instance on its NodeClaim, then the same
  delivery again and a new batch for the same pods: never two running instances for one NodeClaim, and once the
  claim is abandoned no instance is left that no NodeClaim records.

And one check of the checker: two running instances tagged with one NodeClaim are reported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
from convergence_world import TICK_SECONDS, World, instant_planner_lock

from nodewright.disruption.drain import DISRUPTED_TAINT_KEY
from nodewright.interruption.ownership import parse_provider_id
from nodewright.tags import CORDONED
from nodewright.tags import NODECLAIM as NODECLAIM_TAG


@pytest.fixture
def world() -> Iterator[World]:
    with instant_planner_lock():
        w = World()
        try:
            yield w
        finally:
            w.driver.close()


def advance(world: World, seconds: float) -> None:
    world.driver.run_until(world.clock.now() + seconds)
    world.settle()


def checked(world: World) -> None:
    world.check()
    assert not world.violations, "\n".join([*world.violations, "journal:", *world.journal])


def disrupted(node: Mapping[str, Any]) -> tuple[bool, bool]:
    """(carries nodewright's disrupted taint, is cordoned: unschedulable or nodewright's cordon mark)."""
    tainted = any(t.get("key") == DISRUPTED_TAINT_KEY for t in node["spec"].get("taints") or [])
    cordoned = bool(node["spec"].get("unschedulable")) or CORDONED in (node["metadata"].get("annotations") or {})
    return tainted, cordoned


def test_a_drift_drain_killed_after_cordoning_is_given_back_at_the_next_tick(world: World) -> None:
    world.add_pods(web=2, api=1)
    world.settle()
    world.batch()
    for _ in range(2):
        advance(world, TICK_SECONDS)
        world.planner_tick()
        checked(world)
    world.drift()
    world.planner_tick()
    world.driver.adopt_new()
    [run] = world.driver.running()
    assert run.name.startswith("Drifted-"), world.journal
    # The execution dies at its first port call after cordoning: in CordonAndDrain, with the taint and the cordon on.
    run.after = "set_unschedulable"
    nodeclaim = str(world.workflows.started[run.name]["nodeclaim"])
    claim = world.cluster.nodeclaim(nodeclaim) or {}
    node = str((claim.get("status") or {}).get("nodeName") or "")
    assert node, f"the drifted NodeClaim {nodeclaim} has no node: {claim}"
    for _ in range(TICK_SECONDS // 5 - 1):  # stops short of the next tick, on the world's clock
        advance(world, 5)
        if world.workflows.status(run.name) != "RUNNING":
            break
    assert world.workflows.status(run.name) == "ABORTED", world.journal
    assert any(f"killed {run.name} in drain" in line for line in world.journal), world.journal
    assert disrupted(world.cluster.get_node(node) or {}) == (True, True), "the drain died before cordoning"
    checked(world)  # tainted with no execution, but not yet for a whole tick

    world.planner_tick()

    assert disrupted(world.cluster.get_node(node) or {}) == (False, False), (
        f"node {node} still tainted/cordoned one tick after its drain died\n" + "\n".join(world.journal)
    )
    checked(world)
    for _ in range(4):
        advance(world, TICK_SECONDS)
        world.batch()
        world.planner_tick()
        checked(world)


def test_a_provisioner_killed_after_create_fleet_leaves_one_instance_per_nodeclaim_and_none_unrecorded(
    world: World,
) -> None:
    world.add_pods(web=1, api=0)
    world.settle()
    world.batch(after="create_fleet")
    assert "killed (after create_fleet" in world.journal[-1], world.journal
    [claim] = world.cluster.of_kind("NodeClaim")
    abandoned = claim["metadata"]["name"]
    assert not (claim.get("status") or {}).get("providerID"), "the provisioner recorded its instance before dying"
    [launched] = world.cloud.live()
    assert launched.tags.get(NODECLAIM_TAG) == abandoned
    checked(world)

    # The same delivery again once the dead run's planner lock has expired, then a new batch for the same pods, then
    # the forwarder's and the planner's minutes, past the abandoned claim's launch time-out.
    advance(world, 61)
    world.batch(again=True)
    checked(world)
    advance(world, 5)
    world.batch()
    checked(world)
    for _ in range(5):
        advance(world, TICK_SECONDS)
        world.batch()
        checked(world)
        world.planner_tick()
        checked(world)

    recorded = {
        parsed[1]
        for c in world.cluster.of_kind("NodeClaim")
        if (parsed := parse_provider_id(str((c.get("status") or {}).get("providerID") or ""))) is not None
    }
    unrecorded = [(i.id, i.tags.get(NODECLAIM_TAG)) for i in world.cloud.live() if i.id not in recorded]
    assert not unrecorded, f"instances no NodeClaim records: {unrecorded}\n" + "\n".join(world.journal)
    by_claim: dict[str, list[str]] = {}
    for instance in world.cloud.live():
        by_claim.setdefault(instance.tags.get(NODECLAIM_TAG, ""), []).append(instance.id)
    assert all(len(ids) == 1 for ids in by_claim.values()), by_claim
    assert world.cluster.of_kind("Pod")[0]["spec"].get("nodeName"), "the pod never got a node"
    assert not world.unconverged(), world.unconverged()


def test_two_running_instances_for_one_nodeclaim_are_reported(world: World) -> None:
    world.add_pods(web=1, api=0)
    world.settle()
    world.batch()
    checked(world)
    [first] = world.cloud.live()
    world.cloud.instances["i-twin"] = replace(first, id="i-twin")  # a second launch under the same claim
    world.check()
    assert any("has 2 running instances" in v for v in world.violations), world.violations
