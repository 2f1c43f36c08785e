"""Go-style durations (`720h`, `1h30m`, `30s`, `Never`) and cron schedules, as Karpenter v1 accepts them.

Karpenter's CRDs restrict durations to whole numbers of hours, minutes and seconds (`^([0-9]+(s|m|h))+$`),
and budget durations to hours and minutes only, because cron has no seconds. Schedules follow the standard
five-field cron syntax (robfig/cron's standard parser) or one of its `@` macros; time zones are not allowed.
"""

from __future__ import annotations

import re

NEVER = "Never"

_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([a-zµ]+)")


class DurationError(ValueError):
    """A string that is not a duration of the accepted form."""


def parse_duration(text: str, units: str = "hms", allow_never: bool = False) -> int | None:
    """Parse `720h`, `1h30m`, `90s` (whole numbers, units from `units`) into seconds.

    Returns None for `Never` when `allow_never` is set. Raises DurationError with a message that shows
    the accepted forms.
    """
    examples = "720h, 1h30m or 30s" if "s" in units else "10m, 8h or 1h30m"
    unit_list = ", ".join(u for u in "hms" if u in units)
    never = ", or Never" if allow_never else ""
    if allow_never and text == NEVER:
        return None
    if text.lower() == "never":
        if allow_never:
            raise DurationError(f'"{text}" is not a duration; write Never with a capital N')
        raise DurationError(f'"{text}" is not allowed here; use a duration such as {examples}')
    position = 0
    total = 0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        number, unit = match.groups()
        if unit not in _UNIT_SECONDS or unit not in units:
            raise DurationError(
                f'"{text}" uses the unit "{unit}"; use whole numbers of {unit_list} such as {examples}{never}'
            )
        total += int(number) * _UNIT_SECONDS[unit]
        position = match.end()
    if not text or position != len(text):
        raise DurationError(f'"{text}" is not a duration; use whole numbers of {unit_list} such as {examples}{never}')
    return total


def format_duration(seconds: int | None) -> str:
    """Render seconds back as a short Go-style duration (`720h`, `1h30m`, `45s`), or Never."""
    if seconds is None:
        return NEVER
    if seconds == 0:
        return "0s"
    out = []
    for unit, size in _UNIT_SECONDS.items():
        if seconds >= size:
            out.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(out)


_MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# (name, low, high, names) for minute, hour, day of month, month, day of week.
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)


def _cron_value(token: str, low: int, high: int, names: tuple[str, ...], field: str) -> int:
    upper = token.upper()
    if upper in names:
        return names.index(upper) + low
    if not token.isdigit():
        raise ValueError(f'{field} "{token}" is not a number')
    value = int(token)
    if not low <= value <= high:
        raise ValueError(f"{field} {value} is out of range {low}-{high}")
    return value


def _check_cron_field(text: str, low: int, high: int, names: tuple[str, ...], field: str) -> None:
    for item in text.split(","):
        if not item:
            raise ValueError(f'{field} "{text}" has an empty list item')
        base, slash, step = item.partition("/")
        if slash and (not step.isdigit() or int(step) == 0):
            raise ValueError(f'{field} step "{step}" must be a positive integer')
        if base in ("*", "?"):
            continue
        start, dash, end = base.partition("-")
        first = _cron_value(start, low, high, names, field)
        if dash:
            last = _cron_value(end, low, high, names, field)
            if last < first:
                raise ValueError(f'{field} range "{base}" ends before it starts')


def cron_problem(schedule: str) -> str | None:
    """Why `schedule` is not a valid budget schedule, or None when it is.

    Accepts five space-separated fields (minute hour day-of-month month day-of-week) with `*`, `?`, lists,
    ranges, steps and month/day names, or a macro such as `@daily`.
    """
    text = schedule.strip()
    if text.startswith("@"):
        if text in _MACROS:
            return None
        return f'"{schedule}" is not a known macro; use one of {", ".join(sorted(_MACROS))} or five cron fields'
    if text.startswith(("TZ=", "CRON_TZ=")):
        return f'"{schedule}": time zones are not supported in budget schedules (Karpenter uses UTC)'
    fields = text.split()
    if len(fields) != 5:
        return (
            f'"{schedule}" has {len(fields)} fields; a cron schedule has 5 (minute hour day-of-month month '
            'day-of-week), e.g. "0 9 * * mon-fri"'
        )
    for value, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        try:
            _check_cron_field(value, low, high, names, name)
        except ValueError as exc:
            return f'"{schedule}": {exc}'
    return None


_MACRO_FIELDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _cron_set(text: str, low: int, high: int, names: tuple[str, ...], field: str) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        base, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if base in ("*", "?"):
            first, last = low, high
        else:
            start, dash, end = base.partition("-")
            first = _cron_value(start, low, high, names, field)
            # "5/15" means from 5 to the end of the range, as robfig/cron reads it.
            last = _cron_value(end, low, high, names, field) if dash else (high if step_text else first)
        values.update(range(first, last + 1, step))
    return frozenset(values)


def cron_matches(schedule: str, epoch_seconds: float) -> bool:
    """Whether the (valid) schedule fires in the UTC minute containing `epoch_seconds`.

    Day of month and day of week follow cron: when both are restricted (neither starts with `*` or `?`), a
    day matching either one fires; otherwise both must match.
    """
    from datetime import UTC, datetime

    text = _MACRO_FIELDS.get(schedule.strip(), schedule.strip())
    fields = text.split()
    sets = [_cron_set(v, low, high, names, name) for v, (name, low, high, names) in zip(fields, _FIELDS, strict=True)]
    at = datetime.fromtimestamp(epoch_seconds, UTC)
    if at.minute not in sets[0] or at.hour not in sets[1] or at.month not in sets[3]:
        return False
    dom, dow = at.day in sets[2], (at.isoweekday() % 7) in sets[4]
    if fields[2][0] in "*?" or fields[4][0] in "*?":
        return dom and dow
    return dom or dow
