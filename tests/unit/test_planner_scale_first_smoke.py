"""Smoke test for `tests.bench.planner_scale`'s new-container figure (`FIRST_CHILD`): the child imports what the
provisioner's handler imports, loads the catalog, builds a small cluster and runs its first batch, and prints
well-formed `first_*` and `batch_first_*` fields. No time is asserted (the machine is shared)."""

from __future__ import annotations

import importlib

from tests.bench import planner_scale


def test_every_handler_import_exists() -> None:
    for name in planner_scale.HANDLER_IMPORTS:
        importlib.import_module(name)


def test_a_new_container_first_batch_prints_its_figures() -> None:
    line = planner_scale._first_container(20)
    fields = dict(part.split("=", 1) for part in line.split())
    assert set(fields) == {
        "first_import_ms",
        "first_import_cpu_ms",
        "first_catalog_ms",
        "batch_first_ms",
        "batch_first_cpu_ms",
        "batch_first_fleet_ms",
        "batch_first_launched",
    }
    assert all(value.isdigit() for value in fields.values()), fields
    assert int(fields["batch_first_launched"]) > 0, "the first batch launched nothing: its plan did not run"
