"""EventBridge Scheduler expressions and which schedules are due: the pure part of the local world's scheduler.

AWS runs a stack's schedules (`AWS::Scheduler::Schedule`, for nodewright the planner's `rate(1 minute)`) by
itself; moto only stores them. `schedule_runner` fires them in the moto server; this module decides when:

- `parse(expression)` reads `rate(value unit)`, `cron(minutes hours day-of-month month day-of-week year)` and
  `at(yyyy-mm-ddThh:mm:ss)` as EventBridge Scheduler defines them, and `next_fire` gives the first firing
  strictly after a moment, in the schedule's time zone.
- `Timetable` remembers each schedule's next firing. It never fires a missed tick twice: after a pause, or a
  tick that ran longer than the period, the next firing is the next one in the future, as a schedule whose
  target was unavailable does not queue up ticks in AWS (the planner's retry policy drops a tick after 60 s).

Not modelled: `L`/`W`/`#` in cron fields (refused with a clear error), flexible time windows (every
schedule fires on time, as with mode OFF, which is what the stack uses), and StartDate / EndDate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")
_CRON = re.compile(r"^cron\((.*)\)$")
_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, start=1)}
# EventBridge numbers days of the week 1-7 from Sunday.
_DAYS = {d: i for i, d in enumerate(_DAY_NAMES, start=1)}
# How far ahead a cron expression is searched; a year field can make the next firing years away.
_CRON_HORIZON_DAYS = 366 * 8


@dataclass(frozen=True)
class Rate:
    """`rate(value unit)`: every `seconds`, counted from when the schedule is first seen (or resumed)."""

    seconds: float


@dataclass(frozen=True)
class Cron:
    """`cron(...)`: the allowed values of each field; `None` for a day field given as `?`."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int] | None
    months: frozenset[int]
    days_of_week: frozenset[int] | None
    years: frozenset[int] | None
    last_day_of_month: bool = False


@dataclass(frozen=True)
class At:
    """`at(...)`: once, at a wall-clock time in the schedule's time zone."""

    when: datetime


Expression = Rate | Cron | At


def parse(expression: str) -> Expression:
    """Parse a schedule expression; ValueError names what is wrong."""
    text = expression.strip()
    m = _RATE.match(text)
    if m:
        value = int(m.group(1))
        if value < 1:
            raise ValueError(f"{expression!r}: a rate must be at least 1")
        unit = m.group(2).rstrip("s")
        if (value == 1) != (not m.group(2).endswith("s")):
            # AWS insists on the singular for 1 and the plural otherwise.
            raise ValueError(f"{expression!r}: use 'rate(1 {unit})' or 'rate(N {unit}s)'")
        return Rate(float(value * _UNIT_SECONDS[unit]))
    m = _AT.match(text)
    if m:
        return At(datetime.fromisoformat(m.group(1)))
    m = _CRON.match(text)
    if m:
        return _parse_cron(expression, m.group(1).split())
    raise ValueError(f"{expression!r} is not rate(...), cron(...) or at(...)")


def _parse_cron(expression: str, fields: list[str]) -> Cron:
    if len(fields) != 6:
        raise ValueError(f"{expression!r}: cron needs 6 fields (minutes hours day-of-month month day-of-week year)")
    minute, hour, dom, month, dow, year = fields
    if (dom == "?") == (dow == "?"):
        raise ValueError(f"{expression!r}: exactly one of day-of-month and day-of-week must be '?'")
    last = dom == "L"
    return Cron(
        minutes=_field(expression, minute, 0, 59),
        hours=_field(expression, hour, 0, 23),
        days_of_month=None if dom == "?" else (frozenset() if last else _field(expression, dom, 1, 31)),
        months=_field(expression, month, 1, 12, _MONTHS),
        days_of_week=None if dow == "?" else _field(expression, dow, 1, 7, _DAYS),
        years=None if year == "*" else _field(expression, year, 1970, 2199),
        last_day_of_month=last,
    )


def _value(expression: str, token: str, names: dict[str, int] | None) -> int:
    if names and token.upper() in names:
        return names[token.upper()]
    if not token.isdigit():
        raise ValueError(f"{expression!r}: {token!r} is not a number here (L, W and # are not supported locally)")
    return int(token)


def _field(expression: str, text: str, low: int, high: int, names: dict[str, int] | None = None) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"{expression!r}: step {step_text!r} must be at least 1")
        if base == "*":
            start, stop = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, stop = _value(expression, first, names), _value(expression, last, names)
        else:
            start = _value(expression, base, names)
            stop = high if step_text else start
        if not (low <= start <= high and low <= stop <= high and start <= stop):
            raise ValueError(f"{expression!r}: {part!r} is outside {low}-{high}")
        values.update(range(start, stop + 1, step))
    return frozenset(values)


def _day_matches(cron: Cron, day: datetime) -> bool:
    if cron.years is not None and day.year not in cron.years:
        return False
    if day.month not in cron.months:
        return False
    if cron.days_of_week is not None:
        # Python counts Monday as 0; EventBridge counts Sunday as 1.
        return (day.weekday() + 1) % 7 + 1 in cron.days_of_week
    if cron.last_day_of_month:
        return (day + timedelta(days=1)).month != day.month
    return cron.days_of_month is not None and day.day in cron.days_of_month


def next_fire(expression: Expression, after: datetime, timezone: str = "UTC") -> datetime | None:
    """The first firing strictly after `after` (aware, any zone), in UTC; None when there is none.

    A rate has no calendar: its next firing is `after` plus the rate (the Timetable anchors it)."""
    if isinstance(expression, Rate):
        return after + timedelta(seconds=expression.seconds)
    zone = ZoneInfo(timezone)
    local = after.astimezone(zone)
    if isinstance(expression, At):
        when = expression.when.replace(tzinfo=zone)
        return when.astimezone(UTC) if when > local else None
    start = local.replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    for _ in range(_CRON_HORIZON_DAYS):
        if _day_matches(expression, day):
            for hour in sorted(expression.hours):
                for minute in sorted(expression.minutes):
                    # Wall-clock times that a DST change skips come out shifted by zoneinfo; fine locally.
                    candidate = day.replace(hour=hour, minute=minute)
                    if candidate >= start:
                        return candidate.astimezone(UTC)
        day = (day + timedelta(days=1)).replace(hour=0, minute=0)
    return None


@dataclass(frozen=True)
class ScheduleSpec:
    """What the timetable needs of one schedule; `key` identifies it (account, region, group, name)."""

    key: str
    expression: str
    timezone: str = "UTC"
    enabled: bool = True


@dataclass
class Timetable:
    """Each schedule's next firing. `period` (seconds), when set, replaces every schedule's own expression
    with a rate of that many seconds: tests tick the planner faster than once a minute."""

    period: float | None = None
    next_due: dict[str, datetime] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def _expression(self, spec: ScheduleSpec) -> Expression:
        return Rate(self.period) if self.period is not None else parse(spec.expression)

    def restart(self, period: float | None = None) -> None:
        """Forget every anchor (a resume, or a new period): each schedule's first firing counts from the next
        `due()`; `period` replaces (or, None, restores) the schedules' own expressions."""
        self.period = period
        self.next_due.clear()
        self.errors.clear()

    def due(self, specs: list[ScheduleSpec], now: datetime) -> list[ScheduleSpec]:
        """The enabled schedules whose firing time has come, in the order given. Schedules seen for the first time
        are anchored at `now`; schedules no longer listed are forgotten."""
        keys = {s.key for s in specs}
        for gone in set(self.next_due) - keys:
            del self.next_due[gone]
        ready = []
        for spec in specs:
            if not spec.enabled:
                continue
            if spec.key not in self.next_due:
                try:
                    first = next_fire(self._expression(spec), now, spec.timezone)
                except ValueError as exc:
                    self.errors[spec.key] = str(exc)
                    continue
                if first is None:
                    continue
                self.next_due[spec.key] = first
            if self.next_due[spec.key] <= now:
                ready.append(spec)
        return ready

    def fired(self, spec: ScheduleSpec, now: datetime) -> None:
        """Record that `spec` fired; its next firing is the first one after `now` (missed ones are dropped)."""
        expression = self._expression(spec)
        previous = self.next_due.get(spec.key, now)
        if isinstance(expression, Rate):
            # Stay on the rate's grid from the anchor, skipping the slots that passed while the target ran.
            step = timedelta(seconds=expression.seconds)
            following = previous + step
            while following <= now:
                following += step
            self.next_due[spec.key] = following
            return
        upcoming = next_fire(expression, max(previous, now), spec.timezone)
        if upcoming is None:
            self.next_due[spec.key] = datetime.max.replace(tzinfo=UTC)  # a one-time schedule that has fired
        else:
            self.next_due[spec.key] = upcoming
