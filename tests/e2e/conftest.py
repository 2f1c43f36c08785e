"""End-to-end fixtures: one local world per test session, a namespace per test, faults reset, the stack's
schedules paused unless a test asks for them (`planner_schedule`).

The world is started by the same code as `nodewright localworld up`, in a temporary state directory
so a developer's own `.localworld/` is left alone, with short Step Functions waits (at most a second) and a short boot
delay. It is built first if the binary cache is cold (minutes), then starts in seconds.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from worldkit import World, wait_for

from nodewright.localworld import world


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder needs the local world; mark them so `-m 'not e2e'` skips them."""
    here = Path(__file__).parent
    ours = [item for item in items if Path(str(item.fspath)).is_relative_to(here)]
    for item in ours:
        item.add_marker(pytest.mark.e2e)
        # Bounded even if a wait inside misbehaves; the first one also pays for starting the world
        # and, on a cold cache, whichever runs first builds the binaries (about 6 minutes on 2 cores).
        cold = not (world.bin_dir() / ".recipe").is_file()
        first = item is ours[0] or cold
        own = item.get_closest_marker("timeout")  # a module that knows its tests take longer says so
        seconds = max(own.args[0] if own is not None else 0, 1500 if first else 300)
        item.add_marker(pytest.mark.timeout(seconds))


@pytest.fixture(scope="session")
def local_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A running local world for the whole session, torn down at the end."""
    state_dir = tmp_path_factory.mktemp("localworld")
    # Schedules paused: a planner ticking behind a test's back would take its nodes; `planner_schedule` resumes them.
    options = world.Options(
        cluster=f"e2e-{uuid.uuid4().hex[:6]}",
        short_waits=True,
        schedules_paused=True,
        boot_delay=1.0,
        startup_timeout=120,
    )
    state = world.up(state_dir, options)
    try:
        yield World(state)
    finally:
        world.down(state_dir)


@pytest.fixture
def namespace(local_world: World) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    local_world.core.create_namespace({"metadata": {"name": name}})
    wait_for(
        lambda: local_world.core.list_namespaced_service_account(name, field_selector="metadata.name=default").items,
        30,
        f"default ServiceAccount in {name}",
    )
    yield name
    local_world.core.delete_namespace(name)


# Seconds between planner ticks while `planner_schedule` runs; `@pytest.mark.tick_seconds(N)` changes it for a test.
TICK_SECONDS = 10.0


@pytest.fixture
def planner_schedule(local_world: World, stack: Any, request: pytest.FixtureRequest) -> Iterator[float]:
    """The stack's schedules firing on their own, every TICK_SECONDS (or the test's `tick_seconds` marker), as the
    planner runs in AWS; paused again afterwards (waiting for a tick in progress). Yields the period."""
    marker = request.node.get_closest_marker("tick_seconds")
    period = float(marker.args[0]) if marker is not None else TICK_SECONDS
    local_world.resume_schedules(period_seconds=period)
    try:
        yield period
    finally:
        local_world.pause_schedules()


@pytest.fixture(autouse=True)
def _clear_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fault rules never leak from one test into the next."""
    yield
    if "local_world" in request.fixturenames:
        request.getfixturevalue("local_world").set_faults({})


@pytest.fixture(scope="module")
def stack(local_world: World) -> Any:
    """The synthesized stack deployed into the world with the CRDs and the chart, whose RBAC is all the functions'
    access entries grant them (once per session; later modules find it installed)."""
    from test_disruption import Stack

    from nodewright.localworld import deploy

    return Stack(local_world, deploy.install(local_world.state))
