"""The planner warns on a pod whose `karpenter.sh/do-not-disrupt` value it ignores (Karpenter's
InvalidDoNotDisruptAnnotation event): the pod's owner believes it protected, and it is not."""

from __future__ import annotations

from test_planner_reservations import running_on_demand, ticks


def test_an_invalid_do_not_disrupt_value_is_a_warning_on_its_pod() -> None:
    cluster, cloud, state, clock, _, _ = running_on_demand()
    cluster.objects[("Pod", "web", "web-0")]["metadata"].setdefault("annotations", {})[
        "karpenter.sh/do-not-disrupt"
    ] = "1d"
    ticks(cluster, cloud, state, clock)
    warnings = [e for e in cluster.events if e.reason == "InvalidDoNotDisruptAnnotation"]
    assert warnings and {(w.pod, w.type) for w in warnings} == {("web/web-0", "Warning")}
    assert all('"1d"' in w.message and "ignored" in w.message for w in warnings)
    assert len(warnings) <= 3  # three ticks: at most one warning per event window, not one per tick and node


def test_a_valid_duration_is_no_warning() -> None:
    cluster, cloud, state, clock, _, _ = running_on_demand()
    cluster.objects[("Pod", "web", "web-0")]["metadata"].setdefault("annotations", {})[
        "karpenter.sh/do-not-disrupt"
    ] = "90m"
    ticks(cluster, cloud, state, clock)
    assert not [e for e in cluster.events if e.reason == "InvalidDoNotDisruptAnnotation"]
