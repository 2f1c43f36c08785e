"""Budget windows (cron), budget arithmetic and who they apply to."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from nodewright.disruption.budgets import allowed_disruptions, budget_limit, budget_open
from nodewright.model.durations import cron_matches
from nodewright.model.nodepool import Budget


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_weekday_mornings() -> None:
    schedule = "0 9 * * mon-fri"
    assert cron_matches(schedule, at("2026-11-30T09:00:30"))  # a Monday, within the minute
    assert not cron_matches(schedule, at("2026-11-30T09:01:00"))
    assert not cron_matches(schedule, at("2026-11-29T09:00:00"))  # Sunday


def test_steps_macros_and_names() -> None:
    assert cron_matches("*/15 * * * *", at("2026-12-02T10:30:00"))
    assert not cron_matches("*/15 * * * *", at("2026-12-02T10:31:00"))
    assert cron_matches("5/20 * * * *", at("2026-12-02T10:45:00"))
    assert not cron_matches("5/20 * * * *", at("2026-12-02T10:50:00"))
    assert cron_matches("@daily", at("2026-12-02T00:00:00"))
    assert not cron_matches("@daily", at("2026-12-02T01:00:00"))
    assert cron_matches("0 0 1 JAN *", at("2027-01-01T00:00:00"))


def test_day_of_month_or_day_of_week_when_both_are_restricted() -> None:
    # Standard cron: the 1st of the month OR any Monday.
    assert cron_matches("0 0 1 * mon", at("2026-12-01T00:00:00"))  # Tuesday the 1st
    assert cron_matches("0 0 1 * mon", at("2026-12-07T00:00:00"))  # Monday the 7th
    assert not cron_matches("0 0 1 * mon", at("2026-12-08T00:00:00"))
    # With a star in one of them, both must hold.
    assert not cron_matches("0 0 * * mon", at("2026-12-01T00:00:00"))


def test_a_scheduled_budget_is_open_for_its_duration_after_it_fires() -> None:
    budget = Budget(nodes="0", schedule="0 9 * * *", duration_seconds=8 * 3600)
    assert budget_open(budget, at("2026-12-02T09:00:00"))
    assert budget_open(budget, at("2026-12-02T16:59:00"))
    assert not budget_open(budget, at("2026-12-02T17:00:00"))
    assert not budget_open(budget, at("2026-12-02T08:59:00"))
    assert budget_open(Budget(nodes="1"), at("2026-12-02T03:00:00"))


def test_percentages_round_up_and_the_tightest_open_budget_wins() -> None:
    assert budget_limit(Budget(nodes="10%"), 25) == 3
    assert budget_limit(Budget(nodes="0%"), 25) == 0
    budgets = (Budget(nodes="10%"), Budget(nodes="1", reasons=("Drifted",)))
    now = at("2026-12-02T12:00:00")
    assert allowed_disruptions(budgets, "Underutilized", 25, 1, now).allowed == 2
    drifted = allowed_disruptions(budgets, "Drifted", 25, 1, now)
    assert drifted.allowed == 0
    assert "nodes=1" in drifted.reason


def test_a_closed_window_does_not_limit() -> None:
    budgets = (Budget(nodes="0", schedule="0 9 * * *", duration_seconds=3600), Budget(nodes="5"))
    assert allowed_disruptions(budgets, "Empty", 10, 0, at("2026-12-02T09:30:00")).allowed == 0
    assert allowed_disruptions(budgets, "Empty", 10, 0, at("2026-12-02T12:00:00")).allowed == 5


@given(
    st.integers(0, 200),
    st.integers(0, 200),
    st.lists(st.one_of(st.integers(0, 50).map(str), st.integers(0, 100).map(lambda p: f"{p}%")), max_size=4),
)
def test_never_negative_and_never_more_than_the_tightest_budget(nodes: int, disrupting: int, values: list[str]) -> None:
    budgets = tuple(Budget(nodes=v) for v in values)
    allowance = allowed_disruptions(budgets, "Drifted", nodes, disrupting, 0.0)
    assert allowance.allowed >= 0
    cap = min((budget_limit(b, nodes) for b in budgets), default=nodes)
    assert allowance.allowed <= max(cap - disrupting, 0)
