"""What a run asks of an ingest beyond its usual incremental load: a full refresh, or a backfill window cut
into chunks. The one reader of ``--from``, ``--to`` and ``--chunk`` and the rules of who may have them.

Everything here is pure: text and a clock in, windows out. A date means the start of that UTC day; a
``--to`` date includes that day (the window ends at the next midnight); a time without an offset is UTC.
A window is half open, ``[start, end)``, and so is every chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from croft.core.duration import parse_seconds
from croft.core.problems import CroftError
from croft.engine.cursor import parse_timestamp

__all__ = [
    "MAX_CHUNKS",
    "Refill",
    "Window",
    "chunks",
    "parse_refill",
    "refill_refusal",
    "since_at",
]

MAX_CHUNKS = 10_000  # a backfill is bounded: a year of hourly chunks fits, a typo of --chunk 1s does not
_MIN_CHUNK_S = 60.0


@dataclass(frozen=True)
class Window:
    """``ctx.window`` for asset code: the half-open range ``[start, end)`` of UTC instants to load."""

    start: datetime
    end: datetime

    def to_dict(self) -> dict[str, str]:
        return {"start": _iso(self.start), "end": _iso(self.end)}

    def __str__(self) -> str:
        return f"{_iso(self.start)}..{_iso(self.end)}"


@dataclass(frozen=True)
class Refill:
    """A full refresh, or a backfill of ``window`` in chunks of ``chunk_s`` seconds (None: one chunk)."""

    full_refresh: bool = False
    window: Window | None = None
    chunk_s: float | None = None
    to_given: bool = False  # the person named the end (else it is the run's now, see backfill resume)

    @property
    def kind(self) -> str:
        return "full refresh" if self.full_refresh else "backfill"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _usage(message: str, hint: str) -> CroftError:
    return CroftError("USAGE", message, hint)


def _instant(text: str, flag: str, *, end: bool) -> datetime:
    moment = parse_timestamp(text)
    if moment is None:
        raise _usage(
            f"{flag} {text!r} is not a date or time",
            f"Give {flag} as a date (2026-11-01) or an ISO time (2026-11-01T06:00:00Z); see croft run --help.",
        )
    if end and len(text.strip()) == 10:  # a date given as the end includes that day
        moment += timedelta(days=1)
    return moment.astimezone(UTC)


def parse_refill(
    full_refresh: bool, start: str | None, end: str | None, chunk: str | None, now: datetime
) -> Refill | None:
    """The refill the flags ask for, or None for a plain run; USAGE for flags that do not go together."""
    if full_refresh and (start or end or chunk):
        raise _usage(
            "--full-refresh loads everything again; it does not go with --from, --to or --chunk",
            "Use --full-refresh alone to reload the whole table, or --from (with --to, --chunk) to reload a"
            " range; `croft docs backfill` says which to use.",
        )
    if full_refresh:
        return Refill(full_refresh=True)
    if not start:
        if end or chunk:
            raise _usage(
                "--to and --chunk go with --from",
                "A backfill starts at --from: croft run ASSET --from 2026-11-01 [--to 2026-11-08] [--chunk 1d].",
            )
        return None
    begin = _instant(start, "--from", end=False)
    finish = _instant(end, "--to", end=True) if end else now.astimezone(UTC)
    if finish <= begin:
        raise _usage(
            f"the window {start} .. {end or 'now'} is empty: its end is not after its start",
            "Give --to after --from (a --to date includes that day).",
        )
    chunk_s = None
    if chunk:
        seconds = parse_seconds(chunk, bare_text=False)
        if seconds is None or seconds < _MIN_CHUNK_S:
            raise _usage(
                f"--chunk {chunk!r} is not a length of a minute or more",
                "Give --chunk as a duration such as 1d, 6h or 30 min.",
            )
        count = -(-(finish - begin).total_seconds() // seconds)
        if count > MAX_CHUNKS:
            raise _usage(
                f"--chunk {chunk} cuts the window into {int(count)} chunks, more than {MAX_CHUNKS}",
                "Give a longer --chunk or a shorter window.",
            )
        chunk_s = seconds
    return Refill(window=Window(begin, finish), chunk_s=chunk_s, to_given=bool(end))


def chunks(window: Window, chunk_s: float | None) -> list[Window]:
    """The window cut into consecutive chunks (the last one may be shorter); one chunk without a size."""
    if not chunk_s:
        return [window]
    out = []
    step = timedelta(seconds=chunk_s)
    at = window.start
    while at < window.end:
        out.append(Window(at, min(at + step, window.end)))
        at += step
    return out


def refill_refusal(
    asset: str,
    kind: str,
    key: tuple[str, ...],
    cursor_field: str | None,
    mode: str,
    refill: Refill,
    saved: tuple[str | None, str | None] = (None, None),
) -> CroftError | None:
    """Why this asset cannot have this refill, or None. A full refresh fits any ingest; a backfill needs a
    key to merge the window's rows by and a cursor field to start the window from, and that cursor (its
    saved ``(type, unit)``) must be a time: a window of dates means nothing to an id or a version text."""
    flag = "--full-refresh" if refill.full_refresh else "--from"
    if kind != "ingest":
        return CroftError(
            "USAGE",
            f"{asset} is a transform; {flag} is for ingests",
            f"A transform is rebuilt from its inputs on every run: `croft run {asset}`.",
            asset=asset,
        )
    if refill.full_refresh:
        return None
    missing = []
    if not key:
        missing.append("no key= (its rows could not be merged by key: a backfill would repeat them)")
    if not cursor_field:
        missing.append("no incremental= field (nothing says where a window starts)")
    if missing or mode != "merge":
        why = "; ".join(missing) or f'it writes with write="{mode}", not merge by key'
        return CroftError(
            "USAGE",
            f"{asset} cannot be backfilled: {why}",
            "A backfill merges a window's rows by key from an incremental ingest; "
            f"`croft run {asset} --full-refresh` loads it all again instead.",
            asset=asset,
            details={"key": list(key), "incremental": cursor_field, "write": mode},
        )
    cursor_type, unit = saved
    if cursor_type == "string" or (cursor_type == "number" and unit not in ("s", "ms")):
        what = "text" if cursor_type == "string" else "a number without a unit"
        return CroftError(
            "USAGE",
            f"{asset} cannot be backfilled: its cursor {cursor_field!r} is {what}, not a time, so a window"
            " of dates cannot say where to start",
            "A backfill needs a timestamp cursor, or an epoch number with a unit (incremental={"
            f'"field": "{cursor_field}", "unit": "s"}}); `croft run {asset} --full-refresh` loads it all'
            " again instead.",
            asset=asset,
            details={"incremental": cursor_field, "cursorType": cursor_type, "unit": unit},
        )
    return None


def since_at(start: datetime, cursor_type: str | None, unit: str | None) -> Any:
    """``ctx.since`` for a window starting at ``start``, in the form of the saved cursor: epoch seconds or
    milliseconds for an epoch cursor, else ISO UTC text."""
    if cursor_type == "number" and unit in ("s", "ms"):
        seconds = start.timestamp()
        return int(seconds * 1000) if unit == "ms" else int(seconds)
    return _iso(start)
