"""The sums over a node's bound pods (`nodepods`), and their cache in `TemplateCache`: kept while the node's
pods are equal, summed again the moment one changes."""

from __future__ import annotations

import dataclasses

from builders import affinity_term, by_name, host_port, node, pod, small_catalog

from nodewright.catalog.labels import HOSTNAME
from nodewright.model.objects import Pod
from nodewright.scheduling.nodepods import node_pods, selection_key
from nodewright.scheduling.templates import TemplateCache


def _daemon(name: str, cpu: str, owner: str = "agent") -> Pod:
    return pod(name, cpu, "128Mi", ns="kube-system", owner_kind="DaemonSet", owner_name=owner, labels={"app": owner})


def test_the_sums_are_those_of_the_pods() -> None:
    web = {"app": "web"}
    bound = [
        pod("web-0", "1", "2Gi", labels=web),
        pod("web-1", "1", "2Gi", labels=web, host_ports=(host_port(8080),)),
        pod("solo", "500m", "1Gi", labels={"app": "solo"}, pod_anti_affinity=(affinity_term(HOSTNAME, app="solo"),)),
        pod("db", "250m", "1Gi", pvc_names=("data",)),
        _daemon("agent-a", "100m"),
        _daemon("agent-b", "300m"),  # a rollout: two pods of one DaemonSet with other requests
    ]
    sums = node_pods(bound)
    assert sums.used == {"cpu": 3150, "memory": (6 << 30) + (256 << 20), "pods": 6}
    assert sums.daemon_used == {"cpu": 400, "memory": 256 << 20, "pods": 2}
    assert sums.daemon_requests == {("kube-system", "agent"): {"cpu": 300, "memory": 128 << 20, "pods": 1}}
    counted = {key: count for key, _, count in sums.selected}
    assert counted[selection_key(bound[0])] == 2  # the two web pods count together
    assert sum(counted.values()) == 6
    assert [p.name for p in sums.carriers] == ["solo"]
    assert sums.ports == {("TCP", 8080)}
    assert sums.selector_keys == {"app"}
    assert sums.keys == {f"default/{n}" for n in ("web-0", "web-1", "solo", "db")} | {
        "kube-system/agent-a",
        "kube-system/agent-b",
    }
    assert [p.name for p in sums.with_volumes] == ["db"]


def test_a_node_rebuilt_with_the_same_pods_reads_the_kept_sums() -> None:
    cache = TemplateCache()
    n1 = node("n1", by_name(small_catalog(), "m5.xlarge"), bound=[pod("a", "1"), pod("b", "1")])
    first = cache.node_pods(n1)
    # A warm provisioner's next batch: a new Node object (and pods tuple) around the same parsed pods.
    assert cache.node_pods(dataclasses.replace(n1, pods=tuple(n1.pods))) is first


def test_a_changed_pod_is_summed_again() -> None:
    cache = TemplateCache()
    n1 = node("n1", by_name(small_catalog(), "m5.xlarge"), bound=[pod("a", "1"), pod("b", "1")])
    assert cache.node_pods(n1).used["cpu"] == 2000
    resized = dataclasses.replace(n1, pods=(n1.pods[0], dataclasses.replace(n1.pods[1], requests={"cpu": 3000})))
    assert cache.node_pods(resized).used["cpu"] == 4000
    assert cache.node_pods(dataclasses.replace(n1, pods=n1.pods[:1])).used["cpu"] == 1000


def test_nodes_of_other_names_never_share_sums() -> None:
    cache = TemplateCache()
    m5 = by_name(small_catalog(), "m5.xlarge")
    cache.node_pods(node("n1", m5, bound=[pod("a", "1")]))
    assert cache.node_pods(node("n2", m5, bound=[pod("a", "2")])).used["cpu"] == 2000


def test_the_sums_of_nodes_gone_are_dropped_once_they_outnumber_the_nodes_of_a_solve() -> None:
    cache = TemplateCache()
    m5 = by_name(small_catalog(), "m5.xlarge")
    churned = [node(f"old-{i}", m5, bound=[pod(f"p-{i}", "1")]) for i in range(150)]
    cache.node_pods_of(churned)
    now = [node("n1", m5, bound=[pod("a", "1")]), churned[0]]
    sums = cache.node_pods_of(now)
    assert [s.used["cpu"] for s in sums] == [1000, 1000]
    assert set(cache._node_pods) == {"n1", "old-0"}  # 151 kept > 2 x 2 + 100: the 149 gone are dropped
    assert cache.node_pods(churned[0]) is sums[1]
