"""A warm container's solves fork the registration of the last solve's nodes (`scheduling.kept`): each must plan
what a solve from scratch plans on the same inputs, whatever changed since the registration was made (a pod bound
to a node, a node deleted or changed, a DaemonSet, the catalog, a NodePool's limits), and the registration is
reused only for the nodes that did not change."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from builders import by_name, daemonset, node, placement, pod, pods, pool, run, small_catalog, unschedulable

from nodewright.model.nodepool import NodePool
from nodewright.model.objects import DaemonSet, Node, Pod
from nodewright.scheduling import existing
from nodewright.scheduling.kept import REBASE_MIN, KeptRegistration
from nodewright.scheduling.results import Results
from nodewright.scheduling.templates import TemplateCache

TYPES = small_catalog()
LARGE = by_name(TYPES, "m5.large")  # 2 vCPU


def _both(
    kept: KeptRegistration,
    templates: TemplateCache,
    pending: Sequence[Pod],
    nodes: Sequence[Node],
    daemonsets: Sequence[DaemonSet] = (),
    pools: Sequence[NodePool] | None = None,
) -> Results:
    """The kept solve, checked against a solve from scratch of the same inputs (the oracle)."""
    inputs = {"nodes": list(nodes), "daemonsets": list(daemonsets), "pools": pools, "types": TYPES}
    got = run(pending, kept=kept, templates=templates, **inputs)  # type: ignore[arg-type]
    fresh = run(pending, templates=TemplateCache(), **inputs)  # type: ignore[arg-type]
    assert placement(got) == placement(fresh)
    assert unschedulable(got) == unschedulable(fresh)
    assert [(c.nodepool, c.instance_types[:1], c.pods) for c in got.nodeclaims] == [
        (c.nodepool, c.instance_types[:1], c.pods) for c in fresh.nodeclaims
    ]
    return got


def _fleet(count: int) -> list[Node]:
    return [node(f"node-{i:03d}", LARGE) for i in range(count)]


def test_unchanged_nodes_are_registered_once_across_solves(monkeypatch: object) -> None:
    kept, templates = KeptRegistration(), TemplateCache()
    nodes = _fleet(20)
    _both(kept, templates, pods("web", 2, cpu="500m"), nodes)
    registered: list[str] = []
    original = existing.Registration._entry

    def counting(self: existing.Registration, n: Node, *args: object) -> existing.Entry:
        registered.append(n.name)
        return original(self, n, *args)  # type: ignore[arg-type]

    setattr(existing.Registration, "_entry", counting)  # noqa: B010
    try:
        changed = dataclasses.replace(nodes[3], labels={**nodes[3].labels, "tier": "gold"})
        _both(kept, templates, pods("web", 2, cpu="500m"), [*nodes[:3], changed, *nodes[4:]])
    finally:
        setattr(existing.Registration, "_entry", original)  # noqa: B010
    # The kept solve registered the changed node alone (the oracle, from scratch, every node).
    assert registered.count("node-003") == 2
    assert registered.count("node-004") == 1


def test_a_pod_bound_to_a_node_since_the_last_solve_takes_its_room() -> None:
    kept, templates = KeptRegistration(), TemplateCache()
    nodes = _fleet(3)
    first = _both(kept, templates, [pod("web-0", cpu="1")], nodes)
    assert placement(first)["default/web-0"].startswith("node-")
    # Every node now holds a pod of 1.5 vCPU: the pending pod no longer fits on any and needs a NodeClaim.
    full = [node(n.name, LARGE, bound=[pod(f"big-{n.name}", cpu="1500m")]) for n in nodes]
    second = _both(kept, templates, [pod("web-0", cpu="1")], full)
    assert not placement(second)["default/web-0"].startswith("node-")
    assert len(second.nodeclaims) == 1


def test_a_deleted_node_takes_no_pod_and_no_longer_counts_against_its_limits() -> None:
    kept, templates = KeptRegistration(), TemplateCache()
    limited = [pool(limits={"cpu": "4"})]
    nodes = _fleet(2)  # 2 x 2 vCPU: the NodePool's limit is used up
    first = _both(kept, templates, [pod("web-0", cpu="1500m")], nodes[:1], pools=limited)
    assert placement(first)["default/web-0"] == "node-000"
    # Both nodes full of pods: nothing fits and the limit allows no NodeClaim.
    busy = [node(n.name, LARGE, bound=[pod(f"big-{n.name}", cpu="1500m")]) for n in nodes]
    second = _both(kept, templates, [pod("web-1", cpu="1500m")], busy, pools=limited)
    assert "default/web-1" in unschedulable(second)
    # One node deleted: it takes no pod, and its room under the limit allows a NodeClaim.
    third = _both(kept, templates, [pod("web-1", cpu="1500m")], busy[1:], pools=limited)
    assert "node-000" not in placement(third).values()
    assert len(third.nodeclaims) == 1


def test_a_new_daemonset_holds_back_room_on_every_kept_node() -> None:
    kept, templates = KeptRegistration(), TemplateCache()
    nodes = _fleet(2)
    first = _both(kept, templates, [pod("web-0", cpu="1500m")], nodes)
    assert placement(first)["default/web-0"].startswith("node-")
    # A DaemonSet of 1 vCPU whose pods are not bound yet: the nodes keep room for them.
    second = _both(kept, templates, [pod("web-0", cpu="1500m")], nodes, daemonsets=[daemonset("agent", cpu="1")])
    assert not placement(second)["default/web-0"].startswith("node-")


def test_many_changed_nodes_make_a_new_base() -> None:
    kept, templates = KeptRegistration(), TemplateCache()
    nodes = _fleet(REBASE_MIN + 10)
    _both(kept, templates, [pod("web-0")], nodes)
    first = kept.base
    _both(kept, templates, [pod("web-0")], nodes[1:])
    assert kept.base is first  # one node gone: forked
    changed = [dataclasses.replace(n, labels={**n.labels, "tier": "gold"}) for n in nodes]
    _both(kept, templates, [pod("web-0")], changed)
    assert kept.base is not first
