"""Drain rounds: what is evicted, what waits, what is deleted after the deadline, and what is never touched."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodewright.disruption.drain import drain_round


def pod(name: str, **kw: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "web", "annotations": dict(kw.get("annotations", {}))}
    if kw.get("owner"):
        metadata["ownerReferences"] = [{"kind": kw["owner"], "name": "x"}]
    if kw.get("terminating"):
        metadata["deletionTimestamp"] = "2026-12-02T10:00:00Z"
    spec: dict[str, Any] = {"nodeName": "n1", "tolerations": kw.get("tolerations", [])}
    if kw.get("critical"):
        spec["priorityClassName"] = "system-cluster-critical"
    return {"kind": "Pod", "metadata": metadata, "spec": spec}


DND = {"karpenter.sh/do-not-disrupt": "true"}


def test_daemonset_mirror_and_tolerating_pods_stay() -> None:
    pods = [
        pod("ds", owner="DaemonSet"),
        pod("static", annotations={"kubernetes.io/config.mirror": "x"}),
        pod("tough", tolerations=[{"operator": "Exists"}]),
        pod("app"),
    ]
    work = drain_round(pods, now=100.0, deadline=50.0)
    assert work.delete == ("web/app",)
    assert drain_round(pods[:3], 0.0, None).done


def test_critical_pods_go_last() -> None:
    pods = [pod("coredns", critical=True), pod("app-1"), pod("app-2")]
    first = drain_round(pods, 0.0, None)
    assert first.evict == ("web/app-1", "web/app-2")
    assert "critical" in first.waiting["web/coredns"]
    assert drain_round([pods[0]], 0.0, None).evict == ("web/coredns",)


def test_do_not_disrupt_waits_for_the_deadline_then_everything_left_is_deleted() -> None:
    pods = [pod("batch", annotations=DND), pod("app")]
    before = drain_round(pods, now=99.0, deadline=100.0)
    assert before.evict == ("web/app",)
    assert "do-not-disrupt" in before.waiting["web/batch"]
    assert before.delete == ()
    after = drain_round(pods, now=100.0, deadline=100.0)
    assert after.delete == ("web/app", "web/batch")
    assert after.evict == ()


def test_terminating_pods_are_waited_for_not_evicted_again() -> None:
    work = drain_round([pod("going", terminating=True)], 0.0, None)
    assert work.evict == () and not work.done
    assert work.waiting == {"web/going": "terminating"}


POD = st.builds(
    lambda i, owner, critical, dnd, terminating, tolerates: pod(
        f"p{i}",
        owner=owner,
        critical=critical,
        annotations=DND if dnd else {},
        terminating=terminating,
        tolerations=[{"operator": "Exists"}] if tolerates else [],
    ),
    st.integers(0, 30),
    st.sampled_from(["", "ReplicaSet", "DaemonSet", "Node"]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)


@given(st.lists(POD, max_size=12, unique_by=lambda p: p["metadata"]["name"]), st.floats(0, 200), st.booleans())
def test_invariants(pods: list[dict[str, Any]], now: float, has_deadline: bool) -> None:
    deadline = 100.0 if has_deadline else None
    work = drain_round(pods, now, deadline)
    by_key = {f"web/{p['metadata']['name']}": p for p in pods}
    touched = set(work.evict) | set(work.delete)
    for key in touched:
        p = by_key[key]
        assert (p["metadata"].get("ownerReferences") or [{}])[0].get("kind") not in ("DaemonSet", "Node")
        assert not p["spec"]["tolerations"]
    past = deadline is not None and now >= deadline
    if not past:
        assert work.delete == ()
        for key in work.evict:
            assert "karpenter.sh/do-not-disrupt" not in by_key[key]["metadata"]["annotations"]
        # A critical pod is evicted only when no other pod that must leave is left.
        if any(by_key[k]["spec"].get("priorityClassName") for k in work.evict):
            others = set(work.evict) | set(work.waiting)
            assert all(by_key[k]["spec"].get("priorityClassName") for k in others)
    assert work.done == (not touched and not work.waiting)
