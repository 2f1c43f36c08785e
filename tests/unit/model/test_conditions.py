"""Conditions merge by type: each writer owns its types and leaves the others alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nodewright.adapters.memory import InMemoryCluster
from nodewright.model.conditions import FALSE, TRUE, Condition, is_true, merge_conditions, rfc3339


def test_a_write_replaces_its_own_type_and_keeps_the_others() -> None:
    existing = [
        {"type": "Launched", "status": TRUE, "reason": "Launched", "message": "", "lastTransitionTime": rfc3339(10)},
        {"type": "Drifted", "status": TRUE, "reason": "AMIDrift", "message": "", "lastTransitionTime": rfc3339(20)},
    ]
    merged = merge_conditions(existing, [Condition("Registered", TRUE, "Registered")], (), 30)
    assert [c["type"] for c in merged] == ["Drifted", "Launched", "Registered"]
    assert merged[0]["reason"] == "AMIDrift" and merged[2]["lastTransitionTime"] == rfc3339(30)


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    first = merge_conditions([], [Condition("Consolidatable", TRUE, "Consolidatable")], (), 100)
    same = merge_conditions(first, [Condition("Consolidatable", TRUE, "Consolidatable", "again")], (), 200)
    flipped = merge_conditions(same, [Condition("Consolidatable", FALSE, "PodsChanged")], (), 300)
    assert same[0]["lastTransitionTime"] == rfc3339(100) and same[0]["message"] == "again"
    assert flipped[0]["lastTransitionTime"] == rfc3339(300)


def test_clear_removes_a_type() -> None:
    first = merge_conditions([], [Condition("Drifted", TRUE, "NodePoolDrifted")], (), 1)
    assert merge_conditions(first, [], ["Drifted"], 2) == []


@given(st.lists(st.sampled_from(["A", "B", "C"]), max_size=6), st.sampled_from(["A", "B", "C"]))
def test_types_not_written_are_returned_unchanged(types: list[str], written: str) -> None:
    existing = merge_conditions([], [Condition(t, TRUE, t) for t in types], (), 5)
    merged = merge_conditions(existing, [Condition(written, FALSE, "x")], (), 9)
    assert [c for c in merged if c["type"] != written] == [c for c in existing if c["type"] != written]
    assert len({c["type"] for c in merged}) == len(merged)


def test_the_in_memory_cluster_merges_like_the_api_adapter() -> None:
    cluster = InMemoryCluster([{"kind": "NodeClaim", "metadata": {"name": "a"}}], clock=lambda: 50.0)
    cluster.set_nodeclaim_conditions("a", [Condition("Launched", TRUE, "Launched")])
    cluster.set_nodeclaim_conditions("a", [Condition("Drifted", TRUE, "AMIDrift")])
    claim = cluster.nodeclaim("a")
    assert claim is not None and is_true(claim, "Launched") and is_true(claim, "Drifted")
    cluster.set_nodeclaim_conditions("missing", [Condition("Drifted", TRUE, "AMIDrift")])  # not an error
