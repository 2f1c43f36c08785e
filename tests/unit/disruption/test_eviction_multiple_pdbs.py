"""An Eviction the API server refuses because two PodDisruptionBudgets select the pod (HTTP 500) is a refusal, as a
429 is (Karpenter's eviction queue: "eviction does not support multiple PDBs"), not an error that fails the drain."""

from __future__ import annotations

import pytest
from api_answers import Answers

from nodewright.adapters.apiserver import ApiError
from nodewright.adapters.kubernetes_cluster import MULTIPLE_PDBS_MESSAGE, KubernetesCluster
from nodewright.ports import BLOCKED


def test_two_budgets_refuse_the_eviction_and_other_server_errors_still_raise() -> None:
    assert KubernetesCluster(Answers(500, MULTIPLE_PDBS_MESSAGE)).evict_pod("web", "p") == BLOCKED
    with pytest.raises(ApiError):
        KubernetesCluster(Answers(500, "etcdserver: request timed out")).evict_pod("web", "p")
