"""The incremental cursor: which value is the greatest, and what ``since`` an ingest gets next time.

A cursor is typed so that comparisons mean what the data means: numbers compare numerically, ISO
timestamps compare as instants (so ``+02:00`` and ``Z`` values order correctly), and any other text
compares lexically. The original value is kept verbatim and handed back as ``since``, in the same form
the API gave it. Everything here is pure: values in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from croft.core.duration import parse_seconds
from croft.core.problems import CroftError
from croft.core.text import clip
from croft.project.rules import lookback_problem

__all__ = [
    "Cursor",
    "CursorTracker",
    "CursorType",
    "classify",
    "default_lookback",
    "greatest",
    "parse_lookback",
    "parse_timestamp",
    "since_for",
    "since_value",
    "sort_key",
    "track",
]

CursorType = Literal["number", "timestamp", "string"]
Unit = Literal["s", "ms"]

# A date, or a date and time with optional seconds, fraction and offset. Stricter than
# datetime.fromisoformat, which would also take "20260624" (an id is not a timestamp).
_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|z|[+-]\d{2}(?::?\d{2})?)?)?$"
)


@dataclass(frozen=True)
class Cursor:
    """A saved cursor: the original value, its type, and for epoch numbers the unit (s or ms)."""

    value: Any
    type: CursorType
    unit: Unit | None = None


def parse_timestamp(text: str) -> datetime | None:
    """The instant an ISO date/time denotes (naive and date-only mean UTC), or None if it is not one."""
    raw = text.strip()
    if not _TIMESTAMP.match(raw):
        return None
    try:  # the common forms parse as they are
        moment = datetime.fromisoformat(raw)
    except ValueError:
        parsed = _parse_unusual(raw)
        if parsed is None:
            return None
        moment = parsed
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _parse_unusual(raw: str) -> datetime | None:
    """Comma fractions, lower-case z, more than six fraction digits."""
    cleaned = raw.replace(",", ".").replace("z", "Z")
    cleaned = re.sub(r"\.(\d{6})\d+", r".\1", cleaned)  # fromisoformat takes at most microseconds
    if cleaned.endswith("Z"):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(cleaned)
    except ValueError:
        return None


def classify(value: Any) -> tuple[str, Any]:
    """``(kind, what to compare)``: number, timestamp or string; or the Python type name for a value no
    cursor can hold. Timestamps are parsed once here."""
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int | float):
        return "number", value
    if isinstance(value, str):
        moment = parse_timestamp(value)
        return ("timestamp", moment) if moment is not None else ("string", value)
    return type(value).__name__, value


def _kind_of(value: Any) -> str:
    return classify(value)[0]


def sort_key(value: Any, cursor_type: CursorType) -> Any:
    """What to compare for ``value`` under ``cursor_type``; assumes the value was checked to fit it."""
    if cursor_type == "timestamp":
        moment = parse_timestamp(value)
        assert moment is not None, f"{value!r} is not a timestamp"
        return moment
    return value


def greatest(saved: Cursor | None, loaded: Cursor | None) -> Cursor | None:
    """The later of two cursors of the same type; the saved one wins ties, so a cursor never moves back."""
    if saved is None:
        return loaded
    if loaded is None:
        return saved
    _require_same_type(saved, loaded.type, loaded.value)
    if sort_key(loaded.value, loaded.type) > sort_key(saved.value, saved.type):
        return Cursor(loaded.value, saved.type, saved.unit or loaded.unit)
    return saved


def _require_same_type(saved: Cursor, kind: str, value: Any) -> None:
    fits = kind == saved.type or (saved.type == "string" and kind in ("string", "timestamp"))
    if not fits:
        raise CroftError(
            "CURSOR_INVALID",
            f"The cursor value {value!r} is a {kind}, but the saved cursor {saved.value!r} "
            f"is a {saved.type}.",
            "A cursor keeps the type of its first load: yield the same type as before, or start the table"
            " and its cursor over with `croft run ASSET --full-refresh`.",
            details={"saved": saved.value, "saved_type": saved.type, "value": value, "value_type": kind},
        )


class CursorTracker:
    """Watches the cursor column as rows stream past, and gives the loaded maximum at the end.

    The type is decided for the whole load, not by the first value: a load of ISO strings is a timestamp
    cursor only if every one of them is a timestamp. With a saved cursor, every value must fit its type.
    """

    def __init__(self, field: str, saved: Cursor | None = None, unit: Unit | None = None):
        self.field = field
        self.saved = saved
        self.unit = unit or (saved.unit if saved else None)
        self.seen = 0
        self._best: dict[str, tuple[Any, Any]] = {}  # kind -> (sort key, original value)
        self._best_text: tuple[str, str] | None = None  # lexical max over every string value

    def add(self, value: Any) -> tuple[str, Any] | None:
        """Note one row's cursor value (None is ignored: a row without a cursor moves nothing).

        Returns the value's ``(kind, comparable)``, which callers reuse to rank duplicate rows.
        """
        if value is None:
            return None
        kind, key = classify(value)
        if kind not in ("number", "timestamp", "string"):
            raise CroftError(
                "CURSOR_INVALID",
                f"The cursor field {self.field!r} holds a {kind} ({value!r}); a cursor must be a number, "
                "an ISO timestamp or a string.",
                f"Yield {self.field!r} as a number or text, or pick another incremental field.",
                details={"field": self.field, "value": repr(value)},
            )
        if self.saved is not None:
            _require_same_type(self.saved, kind, value)
        self.seen += 1
        best = self._best.get(kind)
        if best is None or key > best[0]:
            self._best[kind] = (key, value)
        if isinstance(value, str) and (self._best_text is None or value > self._best_text[0]):
            self._best_text = (value, value)
        return kind, key

    def loaded(self) -> Cursor | None:
        """The greatest value loaded, typed; None when no row carried a cursor value."""
        if not self._best:
            return None
        kinds = set(self._best)
        if self.saved is not None:
            cursor_type = self.saved.type
        elif kinds == {"number"}:
            cursor_type = "number"
        elif kinds == {"timestamp"}:
            cursor_type = "timestamp"
        elif "number" not in kinds:
            cursor_type = "string"
        else:
            raise CroftError(
                "CURSOR_INVALID",
                f"The cursor field {self.field!r} mixes numbers and text in one load.",
                f"Yield {self.field!r} as one type (all numbers, or all ISO timestamps, or all text).",
                details={"field": self.field, "types": sorted(kinds)},
            )
        if cursor_type == "string":
            assert self._best_text is not None
            value = self._best_text[1]
        else:
            value = self._best[cursor_type][1]
        if self.unit is not None and cursor_type != "number":
            raise CroftError(
                "CURSOR_INVALID",
                f"The cursor field {self.field!r} has unit {self.unit!r} but holds {cursor_type} values "
                f"such as {value!r}.",
                "A unit (s or ms) is for epoch numbers only; drop it for ISO timestamps.",
                details={"field": self.field, "unit": self.unit, "value": value},
            )
        return Cursor(value, cursor_type, self.unit)

    def result(self) -> Cursor | None:
        """The cursor to save: the greater of the saved one and what this load brought."""
        return greatest(self.saved, self.loaded())


def track(
    field: str, values: Iterable[Any], saved: Cursor | None = None, unit: Unit | None = None
) -> Cursor | None:
    """Convenience for tests and small callers: the cursor after loading ``values``."""
    tracker = CursorTracker(field, saved, unit)
    for value in values:
        tracker.add(value)
    return tracker.result()


def parse_lookback(text: str | int | float | timedelta | None) -> timedelta:
    """``"30 days"``, ``"1s"``, ``"2h"``, ``"90 min"`` (or a number of seconds) as a timedelta."""
    if text is None:
        return timedelta(0)
    if isinstance(text, timedelta):
        return text
    why = lookback_problem(text)  # the static rule validate applies, range included
    if why is not None:
        raise CroftError(
            "ASSET_INVALID",
            f"The {why}.",
            'Write a lookback as a number and a unit, such as "30 days", "2h", "90 min" or "1s".',
            details={"lookback": clip(str(text))},
        )
    if isinstance(text, int | float) and not isinstance(text, bool):
        return timedelta(seconds=text)
    return timedelta(seconds=parse_seconds(text, bare_text=False) or 0.0)


def default_lookback(cursor: Cursor, *, keyed: bool) -> timedelta:
    """One second for a keyed time cursor (the key dedupes re-read rows), nothing otherwise.

    An epoch number with a unit is a time cursor too, so it gets the same second.
    """
    is_time = cursor.type == "timestamp" or (cursor.type == "number" and cursor.unit is not None)
    return timedelta(seconds=1) if keyed and is_time else timedelta(0)


def since_value(
    saved: Cursor | None, lookback: str | int | float | timedelta | None = None, *, keyed: bool = False
) -> Any:
    """What ``ctx.since`` is: the saved cursor minus the lookback, in the saved value's own form.

    ``lookback=None`` means the default (see ``default_lookback``). A lookback on a plain number or text
    cursor cannot be subtracted, so it is a configuration error.
    """
    if saved is None:
        return None
    window = default_lookback(saved, keyed=keyed) if lookback is None else parse_lookback(lookback)
    if not window:
        return saved.value
    if saved.type == "timestamp":
        return _minus_timestamp(saved.value, window)
    if saved.type == "number" and saved.unit is not None:
        amount = window.total_seconds() * (1000 if saved.unit == "ms" else 1)
        result = saved.value - amount
        if isinstance(saved.value, int):
            return int(result // 1)
        return result
    raise CroftError(
        "ASSET_INVALID",
        f"A lookback cannot be taken from the {saved.type} cursor {saved.value!r}.",
        'Lookback works on ISO timestamps and on epoch numbers with a unit ({"unit": "s"} or "ms"); '
        "drop the lookback, or add the unit.",
        details={"cursor": saved.value, "cursor_type": saved.type},
    )


def _minus_timestamp(text: str, window: timedelta) -> str:
    """Subtract and write the result the way ``text`` was written: date-only, separator, offset, fraction."""
    moment = parse_timestamp(text)
    assert moment is not None
    earlier = moment - window
    raw = text.strip()
    if len(raw) == 10:  # a plain date stays a date: the day the earlier instant falls on
        return earlier.date().isoformat()
    separator = " " if raw[10] == " " else "T"
    fraction = re.search(r"[.,](\d+)", raw[19:]) if len(raw) > 19 else None
    seconds = len(raw) >= 19 and raw[16] == ":"
    if fraction:
        digits = min(len(fraction.group(1)), 6)
        body = earlier.strftime(f"%Y-%m-%d{separator}%H:%M:%S") + "." + f"{earlier.microsecond:06d}"[:digits]
    elif seconds:
        body = earlier.strftime(f"%Y-%m-%d{separator}%H:%M:%S")
    else:
        body = earlier.strftime(f"%Y-%m-%d{separator}%H:%M")
    offset = re.search(r"(Z|z|[+-]\d{2}(?::?\d{2})?)$", raw)
    # ``earlier`` is still in the zone the value was written in, so its offset text is kept as given;
    # a naive value meant UTC and stays naive.
    return body + offset.group(1) if offset else body


def since_for(
    saved_value: Any,
    incremental: str | dict[str, Any] | None,
    *,
    keyed: bool,
    cursor_type: CursorType | None = None,
) -> Any:
    """``ctx.since`` from what the warehouse saved and the asset's ``incremental=`` option.

    ``cursor_type`` is the saved type (the warehouse's ``cursor_type``); without it the type is read
    from the value itself, which is right unless a text cursor happens to look like a timestamp.
    """
    if saved_value is None:
        return None
    options = {"field": incremental} if isinstance(incremental, str) else dict(incremental or {})
    kind = cursor_type or _kind_of(saved_value)
    if kind not in ("number", "timestamp", "string"):
        return saved_value
    cursor = Cursor(saved_value, kind, options.get("unit"))  # type: ignore[arg-type]
    return since_value(cursor, options.get("lookback"), keyed=keyed)
