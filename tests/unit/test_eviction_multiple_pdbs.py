"""An Eviction the API server refuses because two PodDisruptionBudgets select the pod (HTTP 500) is a refusal, as a
429 is (Karpenter's eviction queue: "eviction does not support multiple PDBs"), not an error that fails the drain."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest

from nodewright.adapters.kubernetes_cluster import MULTIPLE_PDBS_MESSAGE, ApiError, ApiServer, KubernetesCluster
from nodewright.ports import BLOCKED


class _Answers(ApiServer):
    """Answers every request with one status and message."""

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


def test_two_budgets_refuse_the_eviction_and_other_server_errors_still_raise() -> None:
    assert KubernetesCluster(_Answers(500, MULTIPLE_PDBS_MESSAGE)).evict_pod("web", "p") == BLOCKED
    with pytest.raises(ApiError):
        KubernetesCluster(_Answers(500, "etcdserver: request timed out")).evict_pod("web", "p")
