"""Hints the watch cache does not confirm cost one consistent LIST per namespace, at most NAMESPACE_REREADS per
batch: 20,000 forged hints in 20,000 namespaces must not buy 20,000 LISTs inside the planner lock."""

from __future__ import annotations

from service_fakes import FakeCloud, FixedClock, SmallCatalog, nodeclass, nodepool, pod
from test_provision_reads import LaggingCache
from test_provision_service import actions

from nodewright.adapters.memory import InMemoryState
from nodewright.service.batch import Batch, PodHint
from nodewright.service.provision import provision
from nodewright.service.provision.read import NAMESPACE_REREADS

CATALOG = SmallCatalog()


def test_forged_hints_in_many_namespaces_cost_at_most_the_cap_of_consistent_reads() -> None:
    clock = FixedClock()
    cluster = LaggingCache([nodepool(), nodeclass()], clock=clock.now, lagging={})
    forged = [PodHint(f"ns-{i}", "made-up", f"uid-{i}", "999") for i in range(500)]
    result = provision(Batch("forged", "demo", forged), cluster, FakeCloud(), InMemoryState(), clock, CATALOG)
    reads = [r for r in cluster.reads if r.startswith("pending_pods")]
    assert len(reads) == NAMESPACE_REREADS == 8
    [summary] = [d for d in actions(result, "skipped") if d.subject == "hints"]
    assert summary.details == {"namespaces": 500 - NAMESPACE_REREADS, "pods": 500 - NAMESPACE_REREADS}
    assert not result.launched


def test_a_real_pod_the_cache_is_behind_on_is_read_again_before_forged_namespaces() -> None:
    clock = FixedClock()
    real = pod("web-0")  # "web" sorts after every forged namespace
    cached = {**real, "metadata": {**real["metadata"], "resourceVersion": "0"}}  # the cache has an older version
    cluster = LaggingCache([nodepool(), nodeclass(), real], clock=clock.now, lagging={"web/web-0": cached})
    forged = [PodHint(f"ns-{i}", "made-up", f"uid-{i}", "999") for i in range(20)]
    hints = [*forged, PodHint("web", "web-0", real["metadata"]["uid"], "1")]
    result = provision(Batch("mixed", "demo", hints), cluster, FakeCloud(), InMemoryState(), clock, CATALOG)
    assert "pending_pods web" in cluster.reads
    assert [k for c in result.launched for k in c.pods] == ["web/web-0"]
    reasons = {d.subject: d.reason for d in actions(result, "skipped")}
    assert "re-read cap" in reasons["pod/ns-19/made-up"]
