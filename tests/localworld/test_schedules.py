"""EventBridge Scheduler expressions and the local world's timetable (the pure part of its scheduler)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nodewright.localworld.schedule_runner import Found, ScheduleRunner
from nodewright.localworld.schedules import At, Cron, Rate, ScheduleSpec, Timetable, next_fire, parse

T0 = datetime(2025, 3, 4, 10, 0, 30, tzinfo=UTC)  # a Tuesday


def test_rates_in_every_unit_and_their_grammar() -> None:
    assert parse("rate(1 minute)") == Rate(60)
    assert parse("rate(5 minutes)") == Rate(300)
    assert parse("rate(2 hours)") == Rate(7200)
    assert parse("rate(1 day)") == Rate(86400)
    for bad in ("rate(1 minutes)", "rate(5 minute)", "rate(0 minutes)", "rate(minute)", "every minute"):
        with pytest.raises(ValueError):
            parse(bad)


def test_cron_fields_steps_ranges_names_and_question_mark() -> None:
    cron = parse("cron(0/15 8-10 ? MAR-APR MON,WED *)")
    assert isinstance(cron, Cron)
    assert cron.minutes == frozenset({0, 15, 30, 45})
    assert cron.hours == frozenset({8, 9, 10})
    assert cron.months == frozenset({3, 4})
    assert cron.days_of_week == frozenset({2, 4})  # EventBridge counts Sunday as 1
    assert cron.days_of_month is None and cron.years is None
    for bad in (
        "cron(* * * * * *)",
        "cron(* * ? * ? *)",
        "cron(0 12 * *)",
        "cron(0 25 * * ? *)",
        "cron(0 1 ? * 2#1 *)",
    ):
        with pytest.raises(ValueError):
            parse(bad)


def test_next_cron_firing_respects_day_of_week_last_day_and_time_zone() -> None:
    # Every 15 minutes on Mondays and Wednesdays: from Tuesday 10:00 the next is Wednesday 00:00.
    assert next_fire(parse("cron(0/15 * ? * MON,WED *)"), T0) == datetime(2025, 3, 5, 0, 0, tzinfo=UTC)
    # Strictly after: at 10:00:30, "every minute" is 10:01.
    assert next_fire(parse("cron(* * * * ? *)"), T0) == datetime(2025, 3, 4, 10, 1, tzinfo=UTC)
    assert next_fire(parse("cron(0 12 L * ? *)"), T0) == datetime(2025, 3, 31, 12, 0, tzinfo=UTC)
    # 09:00 in New York (EST, UTC-5, in early March) is 14:00 UTC.
    assert next_fire(parse("cron(0 9 * * ? *)"), T0, "America/New_York") == datetime(2025, 3, 4, 14, 0, tzinfo=UTC)
    assert next_fire(parse("cron(0 9 * * ? 2020)"), T0) is None


def test_at_fires_once() -> None:
    once = parse("at(2025-03-04T11:00:00)")
    assert once == At(datetime(2025, 3, 4, 11, 0))
    assert next_fire(once, T0) == datetime(2025, 3, 4, 11, 0, tzinfo=UTC)
    assert next_fire(once, T0 + timedelta(hours=2)) is None


def test_timetable_anchors_a_rate_when_first_seen_and_drops_missed_ticks() -> None:
    spec = ScheduleSpec("a/r/default/planner", "rate(1 minute)")
    table = Timetable()
    assert table.due([spec], T0) == []
    assert table.due([spec], T0 + timedelta(seconds=59)) == []
    assert table.due([spec], T0 + timedelta(seconds=60)) == [spec]
    # The runner was busy (or paused) for three and a half minutes: one firing, then back on the grid.
    late = T0 + timedelta(seconds=270)
    table.fired(spec, late)
    assert table.next_due[spec.key] == T0 + timedelta(seconds=300)
    assert table.due([spec], late) == []


def test_timetable_period_override_disabled_schedules_and_bad_expressions() -> None:
    planner = ScheduleSpec("k/planner", "rate(1 minute)")
    off = ScheduleSpec("k/off", "rate(1 minute)", enabled=False)
    broken = ScheduleSpec("k/broken", "rate(often)")
    table = Timetable()
    table.restart(period=10)  # the period replaces every expression, even one the world cannot read
    assert table.due([planner, off, broken], T0) == []
    assert table.due([planner, off, broken], T0 + timedelta(seconds=10)) == [planner, broken]
    table.restart(None)  # back to the expressions, anchored afresh
    assert table.due([planner, broken], T0 + timedelta(seconds=20)) == []
    assert "rate(often)" in table.errors["k/broken"]
    assert table.due([planner, broken], T0 + timedelta(seconds=80)) == [planner]
    # A schedule that is gone is forgotten.
    table.due([], T0)
    assert table.next_due == {}


class FakeClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _runner(paused: bool) -> tuple[ScheduleRunner, FakeClock, list[str]]:
    clock = FakeClock()
    fired: list[str] = []
    schedule = Found(
        "123456789012",
        "us-east-1",
        "default",
        "stack-Planner-Schedule",
        "rate(1 minute)",
        "UTC",
        True,
        {"Arn": "arn:aws:lambda:us-east-1:123456789012:function:planner", "Input": '{"x": 1}'},
    )

    def fire(found: Found) -> dict[str, Any]:
        fired.append(found.target["Input"])
        return {"ok": True, "result": {"started": []}, "error": None, "dead_lettered": False}

    return ScheduleRunner(paused=paused, find=lambda: [schedule], fire=fire, clock=clock), clock, fired


def test_runner_fires_due_schedules_with_their_input_and_pauses() -> None:
    runner, clock, fired = _runner(paused=False)
    assert runner.run_due() == []  # anchored now
    clock.now += timedelta(seconds=60)
    [record] = runner.run_due()
    assert record["schedule"] == "default/stack-Planner-Schedule" and record["ok"] and fired == ['{"x": 1}']
    runner.pause()
    clock.now += timedelta(minutes=5)
    assert runner.run_due() == []
    described = runner.describe()
    assert described["paused"] is True
    assert described["schedules"][0]["last"]["result"] == {"started": []}
    # Resuming with a period: the first firing comes one period after the resume, not as a burst of missed ones.
    runner.resume(period_seconds=10)
    assert runner.run_due() == []
    clock.now += timedelta(seconds=10)
    assert len(runner.run_due()) == 1
    assert runner.describe()["period_seconds"] == 10


def test_tick_fires_now_even_when_paused_and_due_only_fires_nothing_early() -> None:
    runner, clock, fired = _runner(paused=True)
    [record] = runner.tick()
    assert record["ok"] and len(fired) == 1
    assert runner.tick(due_only=True) == []
    assert runner.tick(name="no-such-schedule") == []
    clock.now += timedelta(seconds=60)
    assert len(runner.tick(due_only=True)) == 1
    assert len(fired) == 2
