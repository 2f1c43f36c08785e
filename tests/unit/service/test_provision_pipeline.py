"""Each claim launches once its own NodeClaim exists (service.provision.pipeline), and a refused creation still
fails the batch, after the launches under way have ended."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from nodewright.service.provision.pipeline import Created, Pipeline


def claims(n: int) -> list[tuple[str, Any]]:
    return [(f"claim-{i}", object()) for i in range(n)]


def test_a_claim_launches_while_the_others_are_still_being_created() -> None:
    last_may_finish = threading.Event()
    launched_first = threading.Event()

    def create(item: tuple[str, Any]) -> Created:
        if item[0] == "claim-2":
            # The last creation waits until the first claim has launched: no launch waits for every creation.
            assert last_may_finish.wait(5)
        return item[0], item[1], None

    def launch(created: Created) -> str:
        if created[0] == "claim-0":
            launched_first.set()
            last_may_finish.set()
        return f"launched {created[0]}"

    pipeline = Pipeline(claims(3), create, launch, create_workers=3, launch_workers=3)
    pipeline.wait_created()
    assert launched_first.is_set()
    assert pipeline.outcomes() == ["launched claim-0", "launched claim-1", "launched claim-2"]  # plan order


def test_wait_created_returns_only_once_every_claim_exists() -> None:
    created: list[str] = []
    lock = threading.Lock()

    def create(item: tuple[str, Any]) -> Created:
        with lock:
            created.append(item[0])
        return item[0], item[1], None

    pipeline = Pipeline(claims(20), create, lambda c: c[0], create_workers=4, launch_workers=2)
    pipeline.wait_created()
    assert sorted(created) == sorted(name for name, _ in claims(20))
    assert pipeline.outcomes() == [name for name, _ in claims(20)]


def test_a_refused_creation_fails_the_batch_after_the_launches_under_way_have_ended() -> None:
    finished: list[str] = []

    def create(item: tuple[str, Any]) -> Created:
        if item[0] == "claim-1":
            raise RuntimeError("the API server refused claim-1")
        return item[0], item[1], None

    def launch(created: Created) -> None:
        finished.append(created[0])

    pipeline = Pipeline(claims(3), create, launch)
    with pytest.raises(RuntimeError, match="claim-1"):
        pipeline.wait_created()
    assert sorted(finished) == ["claim-0", "claim-2"]  # nothing still running once the error is raised


def test_no_claims_is_nothing_to_wait_for() -> None:
    pipeline = Pipeline([], lambda item: (item[0], item[1], None), lambda c: c)
    pipeline.wait_created()
    assert pipeline.outcomes() == []
