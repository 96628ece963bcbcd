"""Schedule text (a phrase, an @macro or a 5-field cron) to a Schedule, or a Problem that says what is wrong.

``parse_schedule`` never raises, whatever it is given. Every refusal is a SCHEDULE_INVALID Problem whose
message names the schedule and the trouble, whose hint says how to write it, and whose ``suggestion``,
when croft can offer one, itself parses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from croft.core.problems import Problem, problem
from croft.core.text import quoted
from croft.schedule.cron import CronSpec, check_cron, closest, parse_cron, whole_number

__all__ = ["PHRASES_HINT", "TIMES_HINT", "Schedule", "parse_schedule"]

PHRASES_HINT = (
    'write it as "every 15 minutes", "every hour", "daily at 06:00", "weekdays at 9am", '
    '"every monday at 08:30", "monthly", or a 5-field cron such as "0 6 * * 1-5"'
)
TIMES_HINT = "write the time as 06:00, 18:30, 9am or 6:30pm"

MINUTE_STEPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)
HOUR_STEPS = (1, 2, 3, 4, 6, 8, 12, 24)

MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}

DAY_WORDS = {
    "sunday": 0, "sun": 0,
    "monday": 1, "mon": 1,
    "tuesday": 2, "tue": 2, "tues": 2,
    "wednesday": 3, "wed": 3,
    "thursday": 4, "thu": 4, "thur": 4, "thurs": 4,
    "friday": 5, "fri": 5,
    "saturday": 6, "sat": 6,
}  # fmt: skip

# Phrases people write that croft does not read as such, and what they most likely mean.
KNOWN_MEANINGS = {
    "weekly": "every monday at 00:00",
    "once a week": "every monday at 00:00",
    "once a month": "monthly",
    "yearly": "0 0 1 1 *",
    "annually": "0 0 1 1 *",
    "every year": "0 0 1 1 *",
    "once a year": "0 0 1 1 *",
    "twice a day": "0 0,12 * * *",
    "twice daily": "0 0,12 * * *",
    "once a day": "daily at 00:00",
    "nightly": "daily at 00:00",
    "every night": "daily at 00:00",
    "every hours": "every hour",
    "every minutes": "every minute",
    "every other day": "0 0 */2 * *",
}

VOCABULARY = (
    "every", "minutes", "minute", "mins", "min", "hours", "hour", "hrs", "hr", "hourly", "daily", "day",
    "at", "and", "on", "to", "through", "thru", "weekdays", "weekday", "weekends", "weekend", "monthly",
    "noon", "midnight", "am", "pm",
    *DAY_WORDS, *(f"{w}s" for w in DAY_WORDS if len(w) > 4),
)  # fmt: skip
_VOCABULARY_SET = frozenset(VOCABULARY)


@dataclass(frozen=True)
class Schedule:
    """A schedule croft can run: the text as written (trimmed), its normalized cron, and the parsed spec."""

    text: str
    cron: str
    spec: CronSpec


class _TimeBad(Exception):
    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix


def parse_schedule(text: object) -> Schedule | Problem:
    """Read a schedule; never raises. A Problem's `suggestion`, when set, is a schedule that parses."""
    try:
        found = _parse(text, search=True)
        suggestion = found.suggestion if isinstance(found, Problem) else None
        if suggestion is not None and not isinstance(_parse(suggestion, search=False), Schedule):
            assert isinstance(found, Problem)
            found = found.with_(suggestion=None, hint=PHRASES_HINT)
        return found
    except Exception as exc:  # a bug here must not take down validate or the tick
        return problem(
            "SCHEDULE_INVALID",
            f"schedule {_quote(str(text))} could not be read",
            PHRASES_HINT,
            details={"internal": repr(exc)[:300]},
        )


def _quote(text: str) -> str:
    return quoted(text)  # a 1 MB schedule is echoed by its start (core.text)


def _bad(message: str, hint: str, suggestion: str | None = None) -> Problem:
    return problem("SCHEDULE_INVALID", message, hint, suggestion=suggestion)


def _did_you_mean(message: str, suggestion: str, more: str = "") -> Problem:
    return _bad(message, f'did you mean "{suggestion}"?{more}', suggestion)


def _parse(text: object, search: bool) -> Schedule | Problem:
    if not isinstance(text, str):
        kind = "null" if text is None else type(text).__name__
        return _bad(f"schedule must be a string, got {kind}", PHRASES_HINT)
    trimmed = text.strip()
    if not trimmed:
        return _bad("schedule is empty", PHRASES_HINT)
    spaced = " ".join(trimmed.split())
    if spaced.startswith("@"):
        return _macro(trimmed)
    if _looks_like_cron(spaced):
        found = check_cron(trimmed)
        return Schedule(trimmed, found.text, found) if isinstance(found, CronSpec) else found
    phrase = _normalize(spaced)
    for reader in _PHRASES:
        result = reader(phrase, trimmed)
        if isinstance(result, str):
            return Schedule(trimmed, result, parse_cron(result))
        if result is not None:
            return result
    return _unknown(trimmed, phrase, search)


_CRON_HEAD = re.compile(r"[0-9*?/,-]+")
_CRON_TOKEN = re.compile(r"[A-Za-z0-9_*?/,#-]+")


def _looks_like_cron(spaced: str) -> bool:
    tokens = spaced.split(" ")
    return (
        len(tokens) >= 3
        and all(_CRON_HEAD.fullmatch(t) for t in tokens[:2])
        and all(_CRON_TOKEN.fullmatch(t) for t in tokens)
    )


def _normalize(spaced: str) -> str:
    text = spaced.lower()
    text = re.sub(r"\b([ap])\.m\b\.?", r"\1m", text)
    text = re.sub(r"\s*\.$", "", text)
    return " ".join(text.split())


def _macro(trimmed: str) -> Schedule | Problem:
    name = trimmed.lower()
    if name in MACROS:
        return Schedule(trimmed, MACROS[name], parse_cron(MACROS[name]))
    quoted = _quote(trimmed)
    if name == "@reboot":
        return _bad(f"schedule {quoted}: croft schedules times of day, not startup", PHRASES_HINT)
    message = f"schedule {quoted} is not a cron macro (@hourly, @daily, @weekly, @monthly, @yearly)"
    guess = closest(name, tuple(MACROS))
    return _did_you_mean(message, guess) if guess else _bad(message, PHRASES_HINT)


# ----------------------------------------------------------------------------------------------------------
# Phrases: each reader returns None (not this phrase), a cron string, or a Problem.

_Reader = Callable[[str, str], "str | Problem | None"]


def _every_minutes(phrase: str, trimmed: str) -> str | Problem | None:
    match = re.fullmatch(r"every (?:([0-9]+) (?:minutes|minute|mins|min)|minute|min)", phrase)
    if not match:
        return None
    n = whole_number(match.group(1) or "1")
    shown = (match.group(1) or "1").lstrip("0") or "0"
    if n == 60:
        return "0 * * * *"
    if n == 1:
        return "* * * * *"
    if n in MINUTE_STEPS:
        return f"*/{n} * * * *"
    quoted = _quote(trimmed)
    if n == 0:
        return _did_you_mean(f"schedule {quoted}: the interval must be at least a minute", "every minute")
    if n % 60 == 0 and n // 60 in HOUR_STEPS:
        suggestion = _hours_phrase(n // 60)
    else:
        suggestion = _minutes_phrase(_nearest(n, MINUTE_STEPS))
    return _did_you_mean(
        f"schedule {quoted}: {shown} does not divide 60, so cron cannot fire every {shown} minutes "
        "(its minutes restart at :00 each hour)",
        suggestion,
        " Minutes must divide 60: 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60",
    )


def _hourly(phrase: str, trimmed: str) -> str | None:
    return "0 * * * *" if phrase in ("hourly", "every hour") else None


def _hourly_at(phrase: str, trimmed: str) -> str | Problem | None:
    match = re.fullmatch(r"(?:hourly|every hour) at :([0-9]{2})", phrase)
    if not match:
        return None
    minute = int(match.group(1))
    if minute > 59:
        return _bad(
            f"schedule {_quote(trimmed)}: :{match.group(1)} is not a minute of the hour (:00 to :59)",
            'for example "every hour at :15"',
        )
    return f"{minute} * * * *"


def _every_hours(phrase: str, trimmed: str) -> str | Problem | None:
    match = re.fullmatch(r"every ([0-9]+) (?:hours|hour|hrs|hr)", phrase)
    if not match:
        return None
    n = whole_number(match.group(1))
    shown = match.group(1).lstrip("0") or "0"
    if n == 1:
        return "0 * * * *"
    if n == 24:
        return "0 0 * * *"
    if n in HOUR_STEPS:
        return f"0 */{n} * * *"
    quoted = _quote(trimmed)
    if n == 0:
        return _did_you_mean(f"schedule {quoted}: the interval must be at least an hour", "every hour")
    return _did_you_mean(
        f"schedule {quoted}: {shown} does not divide 24, so cron cannot fire every {shown} hours "
        "(its hours restart at 00:00 each day)",
        _hours_phrase(_nearest(n, HOUR_STEPS)),
        " Hours must divide 24: 1, 2, 3, 4, 6, 8, 12 or 24",
    )


def _at_reader(pattern: str, rest: str) -> _Reader:
    """A phrase "<words>( at T)?" that fires at T (midnight when no T) on the days `rest` names."""
    compiled = re.compile(pattern + r"(?: at (.+))?")

    def read(phrase: str, trimmed: str) -> str | Problem | None:
        match = compiled.fullmatch(phrase)
        return _at(match.group(1), rest, phrase, trimmed) if match else None

    return read


def _on_days(phrase: str, trimmed: str) -> str | Problem | None:
    match = re.fullmatch(r"(?:every |on )?([a-z][a-z, -]*?)(?: at (.+))?", phrase)
    if not match:
        return None
    days = _day_list(match.group(1))
    if days is None:
        return None
    return _at(match.group(2), f"* * {days}", phrase, trimmed)


def _at(time_text: str | None, rest: str, phrase: str, trimmed: str) -> str | Problem:
    if time_text is None:
        return f"0 0 {rest}"
    try:
        hour, minute = _time(time_text)
    except _TimeBad as bad:
        message = f"schedule {_quote(trimmed)}: {bad.message}"
        if bad.fix is None:
            return _bad(message, TIMES_HINT)
        return _did_you_mean(message, phrase[: len(phrase) - len(time_text)] + bad.fix)
    return f"{minute} {hour} {rest}"


_PHRASES: tuple[_Reader, ...] = (
    _every_minutes,
    _hourly,
    _hourly_at,
    _every_hours,
    _at_reader(r"(?:daily|every day)", "* * *"),
    _at_reader(r"(?:weekdays|every weekday|every weekdays|on weekdays)", "* * 1-5"),
    _at_reader(r"(?:weekends|every weekend|every weekends|on weekends)", "* * 0,6"),
    _at_reader(r"monthly", "1 * *"),
    _on_days,
)


def _nearest(n: int, steps: tuple[int, ...]) -> int:
    """The allowed step nearest to n; a tie goes to the smaller (more frequent) step."""
    return min(steps, key=lambda s: (abs(s - n), s))


def _minutes_phrase(n: int) -> str:
    return {1: "every minute", 60: "every hour"}.get(n, f"every {n} minutes")


def _hours_phrase(n: int) -> str:
    return {1: "every hour", 24: "daily at 00:00"}.get(n, f"every {n} hours")


# ----------------------------------------------------------------------------------------------------------
# Times and day lists


def _time(text: str) -> tuple[int, int]:
    """A time of day as (hour, minute), or _TimeBad with a fix when croft can guess the intended time."""
    if text == "noon":
        return 12, 0
    if text == "midnight":
        return 0, 0
    match = re.fullmatch(r"([0-9]{1,2}):([0-9]{2})", text)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2))
        if (hour, minute) == (24, 0):
            raise _TimeBad("24:00 is not a time of day; days start at 00:00", "00:00")
        if hour > 23 or minute > 59:
            raise _TimeBad(f"{text} is not a time of day (00:00 to 23:59)")
        return hour, minute
    match = re.fullmatch(r"([0-9]{1,2})(?::([0-9]{2}))? ?(am|pm)", text)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if minute > 59:
            raise _TimeBad(f"{text} is not a time of day")
        if hour == 0 or hour > 12:
            if hour <= 23:
                raise _TimeBad(f"{text} mixes a 24-hour time with am/pm", f"{hour:02d}:{minute:02d}")
            raise _TimeBad(f"{text} is not a time of day")
        return hour % 12 + (12 if match.group(3) == "pm" else 0), minute
    if re.fullmatch(r"[0-9]{1,2}", text):
        hour = int(text)
        if 1 <= hour <= 11:
            raise _TimeBad(f"{hour} could be {hour:02d}:00 or {hour + 12}:00", f"{hour:02d}:00")
        if hour <= 23:
            raise _TimeBad(f"write the time with minutes: {hour:02d}:00", f"{hour:02d}:00")
    raise _TimeBad(f"{_quote(text)} is not a time croft reads")


def _day(word: str) -> int | None:
    word = word.strip()
    if word in DAY_WORDS:
        return DAY_WORDS[word]
    if word.endswith("s") and word[:-1] in DAY_WORDS:
        return DAY_WORDS[word[:-1]]
    return None


def _day_list(text: str) -> str | None:
    """ "monday and thursday" / "mon-fri" / "fri to mon" as a day-of-week field, or None if not days."""
    days: set[int] = set()
    for part in re.split(r",\s*(?:and\s+)?|\s+and\s+", text.strip()):
        span = re.fullmatch(r"(.+?)\s*(?:-|\s+to\s+|\s+through\s+|\s+thru\s+)\s*(.+)", part)
        if span:
            first, last = _day(span.group(1)), _day(span.group(2))
            if first is None or last is None:
                return None
            days.update((first + i) % 7 for i in range((last - first) % 7 + 1))  # wraps: fri-mon
        else:
            single = _day(part)
            if single is None:
                return None
            days.add(single)
    return _compact(sorted(days))


def _compact(values: list[int]) -> str:
    """Sorted day numbers as cron text: runs of three or more become a-b, the rest are listed."""
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{values[i]}-{values[j]}")
        else:
            parts.extend(str(v) for v in values[i : j + 1])
        i = j + 1
    return ",".join(parts)


# ----------------------------------------------------------------------------------------------------------
# Unknown text: say why, and find the nearest schedule croft can run.

_UNITS = re.compile(
    r"every(?: ([0-9]+))? (seconds|second|secs|sec|days|day|weeks|week|months|month)(?: at (.+))?"
)
_TIME_WORD = re.compile(r"[0-9]{1,2}(?::[0-9]{2})?(?:am|pm)?|noon|midnight")


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _unknown(trimmed: str, phrase: str, search: bool) -> Problem:
    quoted = _quote(trimmed)
    not_a_phrase = f"schedule {quoted} is not a phrase croft knows, nor a 5-field cron"
    units = _UNITS.fullmatch(phrase)
    if units:
        found = _units(quoted, not_a_phrase, units)
        if found is not None:
            return found
    if phrase in KNOWN_MEANINGS:
        return _did_you_mean(not_a_phrase, KNOWN_MEANINGS[phrase])
    guess = _closest_schedule(trimmed, phrase) if search else None
    return _did_you_mean(not_a_phrase, guess) if guess else _bad(not_a_phrase, PHRASES_HINT)


def _units(quoted: str, not_a_phrase: str, units: re.Match[str]) -> Problem | None:
    """Every N seconds/days/weeks/months": say why cron cannot count them; offer the nearest cron."""
    n = whole_number(units.group(1) or "1")
    unit, at = units.group(2), units.group(3)
    hour, minute = 0, 0
    if at is not None:
        try:
            hour, minute = _time(at)
        except _TimeBad:
            return None
    clock = f"{hour:02d}:{minute:02d}"
    if unit.startswith("sec"):
        return _did_you_mean(
            f"schedule {quoted}: croft schedules to the minute, so every minute is the most often",
            "every minute",
        )
    if unit.startswith("day"):
        if n == 1:
            return _did_you_mean(not_a_phrase, f"daily at {clock}" if at else "daily")
        why = f"schedule {quoted}: cron cannot count days across months (they restart on the 1st)"
        if 2 <= n <= 31:
            cron = f"{minute} {hour} */{n} * *"
            days = [_ordinal(d) for d in range(1, 32, n)]
            listed = ", ".join(days[:3]) + (", …" if len(days) > 3 else "")
            return _did_you_mean(why, cron, f" It fires on the {listed} of each month; or use daily")
        return _bad(why, 'use "daily"')
    if unit.startswith("week"):
        if n == 1:
            return _did_you_mean(not_a_phrase, f"every monday at {clock}")
        return _bad(
            f"schedule {quoted}: cron cannot count weeks", 'name a day instead, like "every monday at 09:00"'
        )
    if n == 1:
        return _did_you_mean(not_a_phrase, f"monthly at {clock}" if at else "monthly")
    why = f"schedule {quoted}: cron counts months only when they divide the year (2, 3, 4 or 6)"
    if n in (2, 3, 4, 6, 12):
        return _did_you_mean(why, f"{minute} {hour} 1 */{n} *", " It fires on the 1st, counting from January")
    return _bad(why, 'use "monthly" or a cron such as "0 0 1 */3 *"')


def _closest_schedule(trimmed: str, phrase: str) -> str | None:
    """Try the small repairs people most often need (a typo, a missing "at", a missing "every")."""

    def fix_word(match: re.Match[str]) -> str:
        word = match.group(0)
        if word in _VOCABULARY_SET:
            return word
        return closest(word, VOCABULARY) or word

    corrected = re.sub(r"[a-z]+", fix_word, phrase)
    candidates: list[str] = []
    for text in dict.fromkeys((phrase, corrected)):
        candidates.append(text)  # the corrected text as it is (the original is known not to parse)
        words = text.split(" ")
        if " at " not in f" {text} " and len(words) > 1 and _TIME_WORD.fullmatch(words[-1]):
            candidates.append(" ".join(words[:-1]) + " at " + words[-1])
        minute = re.fullmatch(r"(hourly|every hour) at :?([0-9]{1,2})", text)
        if minute:
            candidates.append(f"{minute.group(1)} at :{int(minute.group(2)):02d}")
        candidates.append("daily at " + (text[3:] if text.startswith("at ") else text))
        if not text.startswith("every"):
            candidates.append("every " + text)
    for candidate in candidates:
        found = _parse(candidate, search=False)
        offer = candidate if isinstance(found, Schedule) else found.suggestion
        if offer and offer not in (trimmed, phrase):
            return offer
    return None
