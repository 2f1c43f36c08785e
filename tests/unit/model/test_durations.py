"""Go-style durations as Karpenter accepts them, and cron budget schedules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model.durations import DurationError, cron_problem, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("720h", 720 * 3600), ("1h30m", 5400), ("30s", 30), ("0s", 0), ("1h1m1s", 3661), ("90m", 5400)],
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


def test_never_only_where_allowed() -> None:
    assert parse_duration("Never", allow_never=True) is None
    with pytest.raises(DurationError, match="not allowed here"):
        parse_duration("Never")
    with pytest.raises(DurationError, match="capital N"):
        parse_duration("never", allow_never=True)


@pytest.mark.parametrize("text", ["", "1d", "1.5h", "h", "10", "1h 30m", "-1h", "30sec", "1ms"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_budget_units_exclude_seconds() -> None:
    assert parse_duration("8h", units="hm") == 8 * 3600
    with pytest.raises(DurationError, match='unit "s"'):
        parse_duration("30s", units="hm")


@given(st.integers(min_value=0, max_value=10**7))
def test_format_round_trip(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    "schedule",
    [
        "0 9 * * mon-fri",
        "*/15 * * * *",
        "0 0 1 jan,jul *",
        "30 2 * * 0",
        "0 22 * * 1-5",
        "0 0 ? * SUN",
        "5,10 1-3/2 1 12 6",
        "@daily",
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@midnight",
        "@hourly",
    ],
)
def test_valid_cron(schedule: str) -> None:
    assert cron_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("0 9 * *", "has 4 fields"),
        ("0 9 * * * *", "has 6 fields"),
        ("60 * * * *", "minute 60 is out of range 0-59"),
        ("0 24 * * *", "hour 24"),
        ("0 0 0 * *", "day of month 0"),
        ("0 0 * 13 *", "month 13"),
        ("0 0 * * 7", "day of week 7"),
        ("0 0 * * funday", "not a number"),
        ("*/0 * * * *", "step"),
        ("5-1 * * * *", "ends before it starts"),
        ("@sometimes", "not a known macro"),
        ("TZ=UTC 0 9 * * *", "time zones"),
    ],
)
def test_invalid_cron(schedule: str, fragment: str) -> None:
    problem = cron_problem(schedule)
    assert problem is not None and fragment in problem
