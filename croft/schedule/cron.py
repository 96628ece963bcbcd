"""Cron text to an immutable CronSpec, and a CronSpec to fire instants in a zone, with croft's DST rules.

Pure: nothing here reads the clock, the environment or a file. ``parse_cron`` is the only function that
raises ``SCHEDULE_INVALID``; computing fires never raises for a parsed spec, and "no further fire" is an
empty list or None.

DST rules (one place, on purpose):
- a wall time that exists once fires at that instant;
- a wall time inside a spring-forward gap fires once, at the first minute after the gap (several gap
  times collapse into that one fire);
- a wall time that happens twice (fall-back) fires at its first pass only, unless the cron is an
  interval (its minute or hour field starts with ``*``): then both passes fire, so real-time spacing holds.
Days are walked one local date at a time (never minute by minute), so a yearly cron and "latest fire"
cost about what an hourly one does.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from croft.core.problems import CroftError, Problem, problem
from croft.core.suggest import closest
from croft.core.text import quoted
from croft.core.zones import zone
from croft.core.zones import zone_named as _zone_named

if TYPE_CHECKING:
    from typing import Literal

__all__ = [
    "CRON_FIELDS_HINT",
    "CronSpec",
    "DstNote",
    "Fire",
    "check_cron",
    "clear_caches",
    "closest",
    "fires_with_notes",
    "latest_fire_at_or_before",
    "next_fire",
    "next_fires",
    "parse_cron",
    "whole_number",
]

CRON_FIELDS_HINT = (
    "a cron is minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or jan-dec) "
    "day-of-week (0-7 or sun-sat; 0 and 7 are Sunday), each a number, name, *, range a-b, step /n or a list"
)

MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTH_WORDS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
DOW_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
DOW_WORDS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
# The longest each month can be; February counts 29 so that "0 0 29 2 *" (leap days) is a valid cron.
MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# Fires stop being searched for after this many days in a row without one (cron's own horizon is similar).
IDLE_DAYS = 41 * 366
LOOKBACK_DAYS = 400

_MINUTE = timedelta(minutes=1)
_DAY = timedelta(days=1)


@dataclass(frozen=True)
class _Field:
    name: str  # as used in messages: "day of month"
    low: int
    high: int  # the highest number that may be written (day of week: 7)
    top: int  # the highest value "*" covers (day of week: 6)
    names: tuple[str, ...] = ()  # symbolic names, in value order from `first_name_value`
    first_name_value: int = 0
    words: tuple[str, ...] = ()  # full words, for did-you-mean only
    what: str = ""  # 'is not a minute (0-59)'


_FIELDS = (
    _Field("minute", 0, 59, 59, what="a minute (0-59)"),
    _Field("hour", 0, 23, 23, what="an hour (0-23)"),
    _Field("day of month", 1, 31, 31, what="a day of month (1-31)"),
    _Field(
        "month", 1, 12, 12, MONTH_NAMES, 1, tuple(w.lower() for w in MONTH_WORDS), "a month (jan-dec or 1-12)"
    ),
    _Field("day of week", 0, 7, 6, DOW_NAMES, 0, DOW_WORDS, "a day of week (sun-sat or 0-7)"),
)
_DOM, _DOW = _FIELDS[2], _FIELDS[4]

# Compiled (and cached by re) when an expression is parsed: croft status imports this module and parses
# none when the tick's cache has its schedules.
_DIGITS = r"[0-9]+"
_WORD = r"[A-Za-z]+"
_QUARTZ_W = r"(?i)^([0-9]+|L)W$"
_QUARTZ_DOM_L = r"(?i)^(L(-[0-9]+)?|[0-9]+L)$"
_QUARTZ_DOW_L = r"(?i)^[0-9a-z]*L$"


@dataclass(frozen=True)
class CronSpec:
    """A parsed 5-field cron: the allowed values of each field and the flags cron's rules need.

    ``dom_star``/``dow_star`` say the day field starts with ``*`` (or ``?``); when both day fields are
    restricted a day matches if EITHER matches (Vixie cron's OR rule), otherwise both must.
    ``is_interval``: the minute or hour field starts with ``*``; such a cron fires in both passes of a
    repeated (fall-back) hour. Build one with ``CronSpec.of``, which derives ``times``.
    """

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    doms: frozenset[int]
    months: frozenset[int]
    dows: frozenset[int]  # 0-6, Sunday is 0
    dom_star: bool
    dow_star: bool
    is_interval: bool
    times: tuple[int, ...]  # minutes of the day, sorted: derived from hours and minutes by ``of``

    @classmethod
    def of(
        cls,
        text: str,
        minutes: frozenset[int],
        hours: frozenset[int],
        doms: frozenset[int],
        months: frozenset[int],
        dows: frozenset[int],
        dom_star: bool,
        dow_star: bool,
        is_interval: bool,
    ) -> CronSpec:
        times = tuple(sorted(h * 60 + m for h in hours for m in minutes))
        return cls(text, minutes, hours, doms, months, dows, dom_star, dow_star, is_interval, times)

    def matches_day(self, day: date) -> bool:
        """Whether cron runs on this local date (month, then the day-of-month/day-of-week rule)."""
        if day.month not in self.months:
            return False
        dom = day.day in self.doms
        dow = day.isoweekday() % 7 in self.dows
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow


# ----------------------------------------------------------------------------------------------------------
# Parsing


class _Bad(Exception):
    """One refusal while parsing; ``repair`` is the five tokens with this one thing fixed, when croft can."""

    def __init__(self, message: str, hint: str = CRON_FIELDS_HINT, repair: list[str] | None = None):
        super().__init__(message)
        self.message = message  # "{q}" stands for: schedule "<text>"
        self.hint = hint
        self.repair = repair


class _BadValue(Exception):
    def __init__(self, message: str, fixed: str | None = None):
        super().__init__(message)
        self.message = message
        self.fixed = fixed


def _quote(text: str) -> str:
    return quoted(text)  # a 1 MB schedule is echoed by its start (core.text)


def whole_number(digits: str) -> int:
    """ASCII digits as an int, capped at 10**9: huge numbers stay cheap (and within int's string limit)."""
    significant = digits.lstrip("0")
    return 10**9 if len(significant) > 9 else int(significant or "0")


def _value(f: _Field, text: str) -> int:
    if re.fullmatch(_DIGITS, text):
        number = whole_number(text)
        if not f.low <= number <= f.high:
            raise _BadValue(f"{f.name} {text.lstrip('0') or '0'} is out of range ({f.low}-{f.high})")
        return number
    lowered = text.lower()
    if f.names and lowered in f.names:
        return f.names.index(lowered) + f.first_name_value
    fixed = None
    if f.names and re.fullmatch(_WORD, text):
        guess = closest(lowered, f.names + f.words)
        if guess is not None:
            fixed = guess[:3]
    raise _BadValue(f"{_quote(text)} is not {f.what}", fixed)


def _item(f: _Field, item: str, tokens: list[str], position: int, items: list[str], index: int) -> range:
    """The values of one list item; `tokens`/`items` are only used to build a repaired cron."""

    def repaired(new_item: str) -> list[str]:
        new_items = [*items[:index], new_item, *items[index + 1 :]]
        return [*tokens[:position], ",".join(new_items), *tokens[position + 1 :]]

    malformed = f"{{q}}: {_quote(item)} in the {f.name} field is not a number, a name, * or a range"
    base, slash, step_text = item.partition("/")
    if "/" in step_text or not base:
        raise _Bad(malformed)
    step = 1
    if slash:
        if not re.fullmatch(_DIGITS, step_text) or whole_number(step_text) < 1:
            raise _Bad(
                f"{{q}}: the step in the {f.name} field must be a whole number of 1 or more, "
                f"got {_quote(step_text)}"
            )
        step = whole_number(step_text)
    suffix = f"/{step_text}" if slash else ""
    if base == "*" or (base == "?" and f in (_DOM, _DOW)):
        return range(f.low, f.top + 1, step)
    if "-" in base:
        first, _, last = base.partition("-")
        if not first or not last or "-" in last:
            raise _Bad(malformed)
        try:
            lo = _value(f, first)
        except _BadValue as bad:
            fix = repaired(f"{bad.fixed}-{last}{suffix}") if bad.fixed else None
            raise _Bad(f"{{q}}: {bad.message}", repair=fix) from None
        try:
            hi = _value(f, last)
        except _BadValue as bad:
            fix = repaired(f"{first}-{bad.fixed}{suffix}") if bad.fixed else None
            raise _Bad(f"{{q}}: {bad.message}", repair=fix) from None
        if f is _DOW and hi == 0:
            hi = 7  # "fri-sun" written as 5-0 means 5-7
        if hi < lo:
            raise _Bad(
                f"{{q}}: the range {base} in the {f.name} field runs backwards",
                "a range runs from low to high; to wrap around, list the two halves",
                repaired(_halves(f, lo, hi, suffix)),
            )
        return range(lo, hi + 1, step)
    try:
        lo = _value(f, base)
    except _BadValue as bad:
        fix = repaired(f"{bad.fixed}{suffix}") if bad.fixed else None
        raise _Bad(f"{{q}}: {bad.message}", repair=fix) from None
    # "a/n" runs from a to the end of the field, as in Vixie cron.
    return range(lo, max(lo, f.top) + 1 if slash else lo + 1, step)


def _halves(f: _Field, lo: int, hi: int, suffix: str) -> str:
    if f is _DOW and lo == 7:
        return _span(0, hi, suffix)  # 7 is Sunday, so "7-3" is simply 0-3
    return f"{_span(lo, f.top, suffix)},{_span(f.low, hi, suffix)}"


def _span(lo: int, hi: int, suffix: str) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}{suffix}"


def _field_values(f: _Field, tokens: list[str], position: int) -> frozenset[int]:
    token = tokens[position]
    items = token.split(",")
    if "" in items:
        kept = ",".join(i for i in items if i)
        fix = [*tokens[:position], kept, *tokens[position + 1 :]] if kept else None
        raise _Bad(f"{{q}}: the {f.name} field has an empty list item", repair=fix)
    if f is _DOW and "#" in token:
        raise _Bad('{q}: "#" (nth weekday) in the day of week field is not standard cron')
    for item in items:
        if f is _DOM and re.match(_QUARTZ_W, item):
            raise _Bad('{q}: "W" (nearest weekday) in the day of month field is not standard cron')
        if f is _DOM and re.match(_QUARTZ_DOM_L, item):
            raise _Bad('{q}: "L" (last day) in the day of month field is not standard cron')
        if f is _DOW and re.match(_QUARTZ_DOW_L, item) and item.lower() not in DOW_NAMES:
            raise _Bad('{q}: "L" (last weekday) in the day of week field is not standard cron')
    values: set[int] = set()
    for index, item in enumerate(items):
        values.update(_item(f, item, tokens, position, items, index))
    if f is _DOW and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values)


def _build(tokens: list[str]) -> CronSpec:
    """Five tokens to a CronSpec, or _Bad naming the first thing wrong."""
    assert len(tokens) == 5
    minutes, hours, doms, months, dows = (_field_values(f, tokens, i) for i, f in enumerate(_FIELDS))
    dom_star = tokens[2][:1] in ("*", "?")
    dow_star = tokens[4][:1] in ("*", "?")
    if (dom_star or dow_star) and not any(d <= MONTH_DAYS[m - 1] for m in months for d in doms):
        names = [MONTH_WORDS[m - 1] for m in sorted(months)]
        verb = "has" if len(names) == 1 else "have"
        days = _join([str(d) for d in sorted(doms)], "or")
        raise _Bad(
            f"{{q}} never fires: {_join(names, 'and')} {verb} no day {days}",
            f"check the day-of-month and month fields; {CRON_FIELDS_HINT}",
        )
    text = " ".join([*tokens[:2], tokens[2].replace("?", "*"), tokens[3], tokens[4].replace("?", "*")])
    return CronSpec.of(
        text=text,
        minutes=minutes,
        hours=hours,
        doms=doms,
        months=months,
        dows=dows,
        dom_star=dom_star,
        dow_star=dow_star,
        is_interval=tokens[0].startswith("*") or tokens[1].startswith("*"),
    )


def _join(words: list[str], last: str) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def _repaired(tokens: list[str] | None) -> list[str] | None:
    """Apply fixes one at a time (at most 12) until the cron parses; None when something cannot be fixed."""
    for _ in range(12):
        if tokens is None:
            return None
        try:
            _build(tokens)
            return tokens
        except _Bad as bad:
            tokens = bad.repair
    return None


def check_cron(text: str) -> CronSpec | Problem:
    """Parse a 5-field cron; a refusal is a SCHEDULE_INVALID Problem (with a `suggestion` that parses)."""
    trimmed = text.strip()
    quoted = _quote(trimmed)
    tokens = trimmed.split()
    if len(tokens) == 5:
        try:
            return _build(tokens)
        except _Bad as bad:
            fixed = _repaired(bad.repair)
            suggestion = _build(fixed).text if fixed else None
            hint = f'did you mean "{suggestion}"? ({bad.hint})' if suggestion else bad.hint
            return _problem(bad.message.replace("{q}", f"schedule {quoted}", 1), hint, suggestion)
    if len(tokens) in (6, 7):
        found = _without_extra_fields(quoted, tokens)
        if found is not None:
            return found
    noun = "field" if len(tokens) == 1 else "fields"
    return _problem(
        f"schedule {quoted} has {len(tokens)} {noun}; "
        "a cron has 5: minute hour day-of-month month day-of-week",
        CRON_FIELDS_HINT,
    )


def _without_extra_fields(quoted: str, tokens: list[str]) -> Problem | None:
    """A 6-field (seconds or year) or 7-field (Quartz) cron: refuse it, offering the 5 fields it means."""
    if len(tokens) == 6:
        options = [
            (tokens[1:], "croft schedules to the minute, so there is no seconds field",
             "drop the first (seconds) field"),
            (tokens[:-1], "a cron has 5 (minute hour day-of-month month day-of-week), with no year field",
             "drop the last field"),
        ]  # fmt: skip
    else:
        options = [
            (tokens[1:-1], "croft schedules to the minute and has no year field",
             "drop the first (seconds) and last (year) fields"),
        ]  # fmt: skip
    for candidate, why, how in options:
        fixed = _repaired(candidate)
        if fixed is None:
            continue
        suggestion = _build(fixed).text
        rest = ", and fix the rest" if fixed != candidate else ""
        return _problem(
            f"schedule {quoted} has {len(tokens)} fields; {why}", f"{how}: {suggestion}{rest}", suggestion
        )
    return None


def _problem(message: str, hint: str, suggestion: str | None = None) -> Problem:
    return problem("SCHEDULE_INVALID", message, hint, suggestion=suggestion)


@lru_cache(maxsize=1024)
def _parse_cached(text: str) -> CronSpec | Problem:
    return check_cron(text)


def parse_cron(text: str) -> CronSpec:
    """Parse a 5-field cron (Vixie semantics) or raise CroftError SCHEDULE_INVALID with a suggestion."""
    found = _parse_cached(text)
    if isinstance(found, Problem):
        raise CroftError(found)
    return found


def clear_caches() -> None:
    """Forget parsed crons and zones (benchmarks measure a zone's first use)."""
    _parse_cached.cache_clear()
    _zone_named.cache_clear()
    _irregular_day.cache_clear()
    ZoneInfo.clear_cache()


# ----------------------------------------------------------------------------------------------------------
# Fires


@dataclass(frozen=True)
class DstNote:
    """Why a fire is not simply its wall time: DST moved it out of a gap, or kept a repeated time single.

    kind: "gap" (the walls do not exist that day; the fire is the first minute after the gap),
    "repeat_first" (the walls happen twice; a fixed-time cron fires at the first pass only),
    "repeat_both" (an interval cron fires in both passes, keeping real-time spacing).
    """

    kind: Literal["gap", "repeat_first", "repeat_both"]
    day: date
    walls: tuple[str, ...]  # "02:30", in the order the cron lists them


@dataclass(frozen=True)
class Fire:
    at: datetime  # aware UTC
    note: DstNote | None = None


def _as_utc(moment: datetime) -> datetime:
    """Aware datetimes are converted; a naive one is taken as UTC (croft's stored-time convention)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _spec(cron: str | CronSpec) -> CronSpec:
    return cron if isinstance(cron, CronSpec) else parse_cron(cron)


def _day_offset(tz: tzinfo, day: date) -> timedelta | None:
    """The one UTC offset of a whole local day, or None when a DST change happens inside it."""
    start = datetime(day.year, day.month, day.day)
    end = start + _DAY
    offset = tz.utcoffset(start)
    if (
        offset is None
        or tz.utcoffset(start.replace(fold=1)) != offset
        or tz.utcoffset(end) != offset
        or tz.utcoffset(end.replace(fold=1)) != offset
    ):
        return None
    return offset


def _offset_at(tz: tzinfo, instant: datetime) -> timedelta | None:
    return instant.astimezone(tz).utcoffset()


def _gap_end(tz: tzinfo, before: datetime, after: datetime) -> datetime:
    """The first whole minute after a spring-forward gap: the transition lies in (before, after]."""
    lo, hi = before, after
    old = _offset_at(tz, lo)
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        mid = mid.replace(microsecond=0)
        if mid <= lo:
            mid = lo + timedelta(seconds=1)
        if _offset_at(tz, mid) == old:
            lo = mid
        else:
            hi = mid
    if hi.second or hi.microsecond:
        hi = hi.replace(second=0, microsecond=0) + _MINUTE
    return hi


def _wall(minute_of_day: int) -> str:
    return f"{minute_of_day // 60:02d}:{minute_of_day % 60:02d}"


@lru_cache(maxsize=512)
def _irregular_day(spec: CronSpec, tz: tzinfo, day: date) -> tuple[Fire, ...]:
    """A day with a DST change: resolve each wall time on its own, then merge fires at the same instant."""
    start = datetime(day.year, day.month, day.day)
    plain: set[datetime] = set()
    special: dict[datetime, dict[str, list[int]]] = {}
    gap_end: datetime | None = None
    for t in spec.times:
        wall = start + timedelta(minutes=t)
        offset, offset_fold = tz.utcoffset(wall), tz.utcoffset(wall.replace(fold=1))
        assert offset is not None and offset_fold is not None
        first = (wall - offset).replace(tzinfo=UTC)
        if offset == offset_fold:
            plain.add(first)
            continue
        second = (wall - offset_fold).replace(tzinfo=UTC)
        if first < second:  # repeated: fold=0 is the earlier pass
            kind = "repeat_both" if spec.is_interval else "repeat_first"
            special.setdefault(first, {}).setdefault(kind, []).append(t)
            if spec.is_interval:
                special.setdefault(second, {}).setdefault(kind, []).append(t)
        else:  # in a gap, fold=0 uses the old offset and lands after the gap
            if gap_end is None or not second < gap_end <= first:
                gap_end = _gap_end(tz, second, first)
            special.setdefault(gap_end, {}).setdefault("gap", []).append(t)
    fires = []
    for instant in sorted(plain | special.keys()):
        note = None
        kinds = special.get(instant)
        if kinds:
            kind = next(k for k in ("gap", "repeat_first", "repeat_both") if k in kinds)
            note = DstNote(kind, day, tuple(_wall(t) for t in kinds[kind]))
        fires.append(Fire(instant, note))
    return tuple(fires)


def _day_fires_after(spec: CronSpec, tz: tzinfo, day: date, after: datetime, limit: int) -> list[Fire]:
    offset = _day_offset(tz, day)
    if offset is None:
        return [f for f in _irregular_day(spec, tz, day) if f.at > after][:limit]
    base = datetime(day.year, day.month, day.day, tzinfo=UTC) - offset
    index = bisect_right(spec.times, (after - base) // _MINUTE)
    return [Fire(base + timedelta(minutes=t)) for t in spec.times[index : index + limit]]


def _day_latest(spec: CronSpec, tz: tzinfo, day: date, now: datetime) -> datetime | None:
    offset = _day_offset(tz, day)
    if offset is None:
        earlier = [f.at for f in _irregular_day(spec, tz, day) if f.at <= now]
        return max(earlier) if earlier else None
    base = datetime(day.year, day.month, day.day, tzinfo=UTC) - offset
    index = bisect_right(spec.times, (now - base) // _MINUTE) - 1
    return base + timedelta(minutes=spec.times[index]) if index >= 0 else None


def _next_month(day: date) -> date:
    return date(day.year + 1, 1, 1) if day.month == 12 else date(day.year, day.month + 1, 1)


def fires_with_notes(cron: str | CronSpec, tz: str | tzinfo, after: datetime, n: int) -> list[Fire]:
    """The first n fires strictly after `after`, each with a DstNote when a DST change shaped it."""
    spec, where = _spec(cron), zone(tz)
    if n <= 0:
        return []
    after = _as_utc(after)
    # Start a day early: a gap or repeat late on the previous local day may still land after `after`.
    day = after.astimezone(where).date() - _DAY
    found: dict[datetime, Fire] = {}
    idle, last_day = 0, False
    try:
        while idle <= IDLE_DAYS:
            if day.month not in spec.months:
                if last_day:
                    break
                following = _next_month(day)
                idle += (following - day).days
                day = following
                continue
            got = _day_fires_after(spec, where, day, after, n) if spec.matches_day(day) else []
            for fire in got:
                found.setdefault(fire.at, fire)
            idle = 0 if got else idle + 1
            if last_day:
                break
            # Fires of one day precede the next day's; one more day covers a DST change at midnight.
            last_day = len(found) >= n
            day += _DAY
    except (OverflowError, ValueError):  # walked past year 9999
        pass
    return [found[at] for at in sorted(found)][:n]


def next_fires(cron: str | CronSpec, tz: str | tzinfo, after: datetime, n: int = 3) -> list[datetime]:
    """The first n fire instants strictly after `after`: ascending, distinct, aware UTC ([] for n <= 0)."""
    return [fire.at for fire in fires_with_notes(cron, tz, after, n)]


def next_fire(cron: str | CronSpec, tz: str | tzinfo, after: datetime) -> datetime | None:
    """The first fire strictly after `after`, or None when the cron never fires again."""
    fires = next_fires(cron, tz, after, 1)
    return fires[0] if fires else None


def latest_fire_at_or_before(cron: str | CronSpec, tz: str | tzinfo, now: datetime) -> datetime | None:
    """The latest fire at or before `now` (aware UTC), looking back at most 400 local days; else None."""
    spec, where = _spec(cron), zone(tz)
    now = _as_utc(now)
    today = now.astimezone(where).date()
    try:
        stop = today - timedelta(days=LOOKBACK_DAYS)
        day = today + _DAY
    except OverflowError:
        return None
    best: datetime | None = None
    found_on: date | None = None
    try:
        while day >= stop:
            if found_on is not None and day < found_on - _DAY:
                break  # one day before the first day with a fire is enough (a DST change at midnight)
            if day.month not in spec.months:
                day = date(day.year, day.month, 1) - _DAY  # the last day of the previous month
                continue
            if spec.matches_day(day):
                latest = _day_latest(spec, where, day, now)
                if latest is not None:
                    best = latest if best is None else max(best, latest)
                    found_on = found_on or day
            day -= _DAY
    except (OverflowError, ValueError):  # walked back past year 1
        pass
    return best
