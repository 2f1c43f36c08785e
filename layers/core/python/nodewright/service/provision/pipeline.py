"""Each planned NodeClaim launches as soon as it exists, not once the whole batch's NodeClaims do.

Karpenter creates a batch's NodeClaims and its NodeClaim controller launches each one on its own creation
event; a batch of sixty claims does not wait for the sixtieth API write before the first CreateFleet. Here a
claim's launch is handed to the launching threads the moment its creation returns. The planner lock
(`serial`) is held until every claim of the batch exists, which is all it protects: whoever plans next then
counts them in flight. Launches that start before the last claim is created hold nothing back.

A claim that could not be created (the API server refused it) fails the batch as before, once the claims
already created have finished launching, so nothing outlives the call: those launches are recorded on their
NodeClaims, and the retried delivery finds them launched by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

from nodewright.scheduling import PlannedNodeClaim

# NodeClaims created side by side, and claims launched side by side (each launch: one CreateFleet, one
# NodeClaim update).
CREATE_CONCURRENCY = 16
LAUNCH_CONCURRENCY = 16

Created = tuple[str, PlannedNodeClaim, Mapping[str, Any] | None]


class Pipeline:
    """The batch's claims, each launched once its NodeClaim has been created.

    `create(item)` writes one NodeClaim and returns (name, plan, the object found when the name was taken);
    `launch(created)` launches it and returns its outcome. `wait_created()` returns once every claim exists
    (raising the first creation error, after the launches under way have ended); `outcomes()` waits for the
    launches and returns them in plan order.
    """

    def __init__(
        self,
        claims: Sequence[tuple[str, PlannedNodeClaim]],
        create: Callable[[tuple[str, PlannedNodeClaim]], Created],
        launch: Callable[[Created], Any],
        create_workers: int = CREATE_CONCURRENCY,
        launch_workers: int = LAUNCH_CONCURRENCY,
    ) -> None:
        self._left = len(claims)
        self._all_created = threading.Event()
        self._lock = threading.Lock()
        self._errors: list[BaseException] = []
        self._launch = launch
        self._creating = ThreadPoolExecutor(max_workers=max(1, min(create_workers, len(claims))))
        self._launching = ThreadPoolExecutor(max_workers=max(1, min(launch_workers, len(claims))))
        self._launches: list[Future[Any] | None] = [None] * len(claims)
        if not claims:
            self._all_created.set()
        for index, item in enumerate(claims):
            self._creating.submit(create, item).add_done_callback(partial(self._created, index))

    def _created(self, index: int, creation: Future[Created]) -> None:
        error = creation.exception()
        if error is None:
            self._launches[index] = self._launching.submit(self._launch, creation.result())
        with self._lock:
            if error is not None:
                self._errors.append(error)
            self._left -= 1
            if self._left == 0:
                self._all_created.set()

    def wait_created(self) -> None:
        """Block until every claim has been created; the first creation error is raised once no launch runs."""
        self._all_created.wait()
        self._creating.shutdown(wait=True)
        if self._errors:
            self._launching.shutdown(wait=True)
            raise self._errors[0]

    def outcomes(self) -> list[Any]:
        """Every claim's launch outcome, in plan order (after `wait_created`, which reported any creation error:
        the claims that were created launched all the same)."""
        self._all_created.wait()
        self._creating.shutdown(wait=True)
        try:
            return [launch.result() for launch in self._launches if launch is not None]
        finally:
            self._launching.shutdown(wait=True)
