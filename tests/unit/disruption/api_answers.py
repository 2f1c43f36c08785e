"""An API server for the Kubernetes adapter's tests that answers every request with one status and message."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from nodewright.adapters.apiserver import ApiServer


class Answers(ApiServer):
    """Answers every request with `status` and a Kubernetes Status carrying `message`."""

    def __init__(self, status: int, message: str) -> None:
        self.answer = (status, json.dumps({"kind": "Status", "code": status, "message": message}).encode())

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        return self.answer
