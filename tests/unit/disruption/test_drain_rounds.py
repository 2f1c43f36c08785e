"""Drain rounds as Karpenter v1.14's terminator drains: what is evicted, in which group, what waits, what is deleted
as the deadline nears, and what is never touched."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodewright.disruption.drain import drain_pod, drain_round, tolerates_disrupted
from nodewright.model.conditions import rfc3339

T = 1_800_000_000.0  # the test's "now" when a time matters


def pod(name: str, **kw: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "web", "annotations": dict(kw.get("annotations", {}))}
    if kw.get("owner"):
        metadata["ownerReferences"] = [{"kind": kw["owner"], "name": "x"}]
    if kw.get("terminating"):
        metadata["deletionTimestamp"] = rfc3339(kw.get("deleted_at", T))
    spec: dict[str, Any] = {"nodeName": "n1", "tolerations": kw.get("tolerations", [])}
    if kw.get("critical"):
        spec["priorityClassName"] = "system-cluster-critical"
    if "grace" in kw:
        spec["terminationGracePeriodSeconds"] = kw["grace"]
    status: dict[str, Any] = {"phase": kw.get("phase", "Running")}
    if "started_at" in kw:
        status["startTime"] = rfc3339(kw["started_at"])
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


DND = {"karpenter.sh/do-not-disrupt": "true"}


def test_mirror_and_tolerating_pods_stay_daemonset_pods_are_drained() -> None:
    pods = [
        pod("ds", owner="DaemonSet"),
        pod("static", annotations={"kubernetes.io/config.mirror": "x"}),
        pod("tough", tolerations=[{"operator": "Exists"}]),
        pod("app"),
    ]
    work = drain_round(pods, now=100.0, deadline=50.0)
    assert work.delete == ("web/app", "web/ds")
    assert drain_round(pods[1:3], 0.0, None).done
    assert not drain_round(pods[:3], 0.0, None).done


def test_four_groups_each_once_the_ones_before_it_are_gone() -> None:
    """terminator.go groupPodsByPriority: non-critical, non-critical DaemonSet, critical, critical DaemonSet."""
    pods = [
        pod("coredns", critical=True),
        pod("app"),
        pod("agent", owner="DaemonSet"),
        pod("cni", owner="DaemonSet", critical=True),
    ]
    order = []
    while pods:
        work = drain_round(pods, 0.0, None)
        assert len(work.evict) == 1, work
        order.append(work.evict[0])
        pods = [p for p in pods if f"web/{p['metadata']['name']}" not in work.evict]
    assert order == ["web/app", "web/agent", "web/coredns", "web/cni"]


def test_a_do_not_disrupt_pod_holds_the_groups_after_it() -> None:
    work = drain_round([pod("batch", annotations=DND), pod("agent", owner="DaemonSet")], 0.0, None)
    assert work.evict == ()
    assert "evicted after" in work.waiting["web/agent"]


def test_do_not_disrupt_waits_then_each_pod_is_deleted_its_grace_period_before_the_deadline() -> None:
    pods = [pod("batch", annotations=DND, grace=30), pod("app", grace=60)]
    before = drain_round(pods, now=39.0, deadline=100.0)
    assert before.evict == ("web/app",)
    assert "do-not-disrupt" in before.waiting["web/batch"]
    assert before.delete == ()
    app_due = drain_round(pods, now=41.0, deadline=100.0)
    assert app_due.delete == ("web/app",) and app_due.grace == {"web/app": 59}
    both = drain_round(pods, now=71.0, deadline=100.0)
    assert both.delete == ("web/app", "web/batch")
    assert both.grace == {"web/app": 29, "web/batch": 29}
    late = drain_round(pods, now=150.0, deadline=100.0)
    assert late.grace == {"web/app": 1, "web/batch": 1}


def test_a_terminating_pod_is_deleted_again_only_when_it_would_outlive_the_deadline() -> None:
    fine = pod("fine", terminating=True, deleted_at=T + 50)
    late = pod("late", terminating=True, deleted_at=T + 500)
    work = drain_round([fine, late], now=T + 71, deadline=T + 100)
    assert work.delete == ("web/late",)
    assert work.waiting == {"web/fine": "terminating"}


def test_terminating_pods_are_waited_for_not_evicted_again_until_stuck() -> None:
    going = pod("going", terminating=True, deleted_at=T)
    work = drain_round([going], T + 60, None)
    assert work.evict == () and not work.done
    assert work.waiting == {"web/going": "terminating"}
    assert drain_round([going], T + 61, None).done


def test_finished_pods_do_not_hold_the_drain() -> None:
    assert drain_round([pod("job", phase="Succeeded"), pod("bad", phase="Failed")], 0.0, None).done


def test_a_do_not_disrupt_duration_protects_until_it_ends_then_the_pod_is_evicted() -> None:
    held = pod("batch", annotations={"karpenter.sh/do-not-disrupt": "5m"}, started_at=T)
    assert drain_round([held], T + 299, None).evict == ()
    assert drain_round([held], T + 300, None).evict == ("web/batch",)
    unknown_start = pod("batch", annotations={"karpenter.sh/do-not-disrupt": "5m"})
    assert drain_round([unknown_start], T + 10_000, None).evict == ()
    invalid = pod("batch", annotations={"karpenter.sh/do-not-disrupt": "soon"}, started_at=T)
    assert drain_round([invalid], T, None).evict == ("web/batch",)


def test_tolerations_of_the_disrupted_taint_match_as_kubernetes_matches_them() -> None:
    key = "karpenter.sh/disrupted"
    tolerating = [
        [{"operator": "Exists"}],
        [{"key": key, "operator": "Exists"}],
        [{"key": key, "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": key, "operator": "Equal"}],
        [{"key": key, "operator": "Equal", "value": "", "effect": "NoSchedule"}],
        [{"key": key}],
        [{"key": key, "effect": "NoSchedule"}],
    ]
    not_tolerating = [
        [{"key": key, "operator": "Equal", "value": "x"}],
        [{"key": key, "value": "true"}],
        [{"key": key, "operator": "Exists", "effect": "NoExecute"}],
        [{"key": "other", "operator": "Exists"}],
        [{"operator": "Equal"}],
        [],
    ]
    for tolerations in tolerating:
        assert tolerates_disrupted(tolerations), tolerations
        assert drain_pod(pod("p", tolerations=tolerations)).kept, tolerations
    for tolerations in not_tolerating:
        assert not tolerates_disrupted(tolerations), tolerations


POD = st.builds(
    lambda i, owner, critical, dnd, terminating, tolerates: pod(
        f"p{i}",
        owner=owner,
        critical=critical,
        annotations=DND if dnd else {},
        terminating=terminating,
        deleted_at=150.0,
        tolerations=[{"operator": "Exists"}] if tolerates else [],
        grace=30,
    ),
    st.integers(0, 30),
    st.sampled_from(["", "ReplicaSet", "DaemonSet", "Node"]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
GROUP = {(False, False): 0, (False, True): 1, (True, False): 2, (True, True): 3}


def _group(p: dict[str, Any]) -> int:
    daemon = (p["metadata"].get("ownerReferences") or [{}])[0].get("kind") == "DaemonSet"
    return GROUP[(bool(p["spec"].get("priorityClassName")), daemon)]


@given(st.lists(POD, max_size=12, unique_by=lambda p: p["metadata"]["name"]), st.floats(0, 200), st.booleans())
def test_invariants(pods: list[dict[str, Any]], now: float, has_deadline: bool) -> None:
    deadline = 100.0 if has_deadline else None
    work = drain_round(pods, now, deadline)
    by_key = {f"web/{p['metadata']['name']}": p for p in pods}
    touched = set(work.evict) | set(work.delete)
    for key in touched:
        p = by_key[key]
        assert (p["metadata"].get("ownerReferences") or [{}])[0].get("kind") != "Node"
        assert not p["spec"]["tolerations"]
    if deadline is None or now <= deadline - 30:
        assert work.delete == ()
    for key in work.evict:
        assert "karpenter.sh/do-not-disrupt" not in by_key[key]["metadata"]["annotations"]
        # Evicted only when no pod of an earlier group is left.
        earlier = [k for k in [*work.evict, *work.waiting] if _group(by_key[k]) < _group(by_key[key])]
        assert not earlier
    assert work.done == (not touched and not work.waiting)
