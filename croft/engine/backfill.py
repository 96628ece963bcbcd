"""A backfill: an ingest loaded again over a window, chunk by chunk, each chunk its own committed write.

The chunks done so far are kept in runs.sqlite (settings ``backfill.<asset>``) after each chunk commits,
so a backfill that failed or was stopped resumes at its first unfinished chunk when it is run again with
the same ``--from`` and ``--chunk`` (and the same ``--to``, or none: then it keeps the end it first had).
A chunk that committed but was killed before its note was written is loaded again on resume: its rows
merge by key, so that costs time, never rows. The saved cursor never moves back (the warehouse keeps the
greater of the saved cursor and what a chunk loaded).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from croft.core.clock import now, to_iso
from croft.engine.cursor import parse_timestamp
from croft.engine.window import Refill, Window, chunks
from croft.history import state

__all__ = ["Book", "Progress", "resumed", "run_chunks"]


def _key(asset: str) -> str:
    return f"backfill.{asset}"


def resumed(record: Any, refill: Refill) -> dict[str, Any] | None:
    """The unfinished backfill ``record`` when this refill asks for the same one (pure), else None."""
    if not isinstance(record, dict) or refill.window is None:
        return None
    window = refill.window.to_dict()
    same_start = record.get("start") == window["start"] and record.get("chunkSeconds") == refill.chunk_s
    same_end = record.get("end") == window["end"] or not refill.to_given
    if same_start and same_end and isinstance(record.get("done"), list):
        return record
    return None


class Book:
    """The chunks of one asset's backfill noted in runs.sqlite as they commit."""

    def __init__(self, conn: sqlite3.Connection, asset: str, refill: Refill, run_id: str):
        assert refill.window is not None
        self.conn = conn
        self.asset = asset
        earlier = resumed(state.get_setting(conn, _key(asset)), refill)
        if earlier is not None:
            start, end = _moment(earlier["start"]), _moment(earlier["end"])
            self.window = Window(start, end)
            self.record = earlier
            self.resumed = bool(earlier["done"])
        else:
            self.window = refill.window
            self.record = {
                **refill.window.to_dict(),
                "chunkSeconds": refill.chunk_s,
                "startedAt": to_iso(now()),
                "done": [],
                "runs": [],
            }
            self.resumed = False
        if run_id not in self.record["runs"]:
            self.record["runs"] = [*self.record["runs"], run_id]
        self.chunks = chunks(self.window, refill.chunk_s)
        state.put_setting(conn, _key(asset), self.record)

    @property
    def done(self) -> set[int]:
        return {int(i) for i in self.record["done"]}

    def mark(self, index: int) -> None:
        self.record["done"] = sorted(self.done | {index})
        state.put_setting(self.conn, _key(self.asset), self.record)

    def finish(self) -> None:
        """Every chunk is in: the next backfill of this window is a new one."""
        state.delete_setting(self.conn, _key(self.asset))


def _moment(text: str) -> datetime:
    found = parse_timestamp(text)
    assert found is not None, text
    return found


class Progress:
    """What the command's progress line shows after each chunk."""

    def __init__(self, asset: str, total: int, already: int):
        self.asset = asset
        self.total = total
        self.done = already
        self.rows = 0
        self.started = time.monotonic()
        self.ran = 0  # chunks this run loaded (the rate and the time left are from these)

    def to_dict(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self.started
        left = self.total - self.done
        per_chunk = elapsed / self.ran if self.ran else None
        return {
            "asset": self.asset,
            "chunksDone": self.done,
            "chunks": self.total,
            "rows": self.rows,
            "rowsPerSecond": round(self.rows / elapsed, 1) if elapsed > 0 else None,
            "secondsLeft": round(per_chunk * left, 1) if per_chunk is not None else None,
        }


def run_chunks(step: Any, ingest_one: Callable[[Window], dict[str, Any]]) -> dict[str, Any]:
    """Each unfinished chunk of the backfill: one ingest over it, committed, then noted; the step's result
    sums them (with the cursor before the first chunk and after the last)."""
    book: Book = step.book
    parts = book.chunks
    done = book.done
    total = len(parts)
    progress = Progress(step.facts.name, total, len(done))
    if done:
        step.log(
            f"{step.facts.name}: resuming the backfill of {book.window}: {len(done)} of {total} chunks"
            f" done earlier, starting at chunk {min(set(range(total)) - done) + 1}"
        )
    else:
        step.log(f"{step.facts.name}: backfill of {book.window} in {total} chunk(s)")
    sums = {"rowsIn": 0, "added": 0, "updated": 0, "unchanged": 0, "deleted": 0}
    first: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    requests = 0
    changed = False
    for index, window in enumerate(parts):
        if index in done:
            continue
        out = ingest_one(window)
        book.mark(index)
        progress.done += 1
        progress.ran += 1
        progress.rows += int(out["rowsIn"])
        step.log(
            f"chunk {index + 1}/{total} {window}: {out['rowsIn']} rows (+{out['added']} ~{out['updated']}"
            f" ={out['unchanged']}), committed"
        )
        for name in sums:
            sums[name] += int(out[name])
        requests += int(out.get("requests") or 0)
        changed = changed or bool(out.get("changed"))
        first = first or out
        last = out
        if step.on_chunk is not None:
            step.on_chunk(progress.to_dict())
    book.finish()
    return {
        **sums,
        "cursorBefore": first["cursorBefore"] if first else None,
        "cursorAfter": last["cursorAfter"] if last else None,
        "changed": changed,
        "requests": requests,
        "since": first.get("since") if first else None,
        "rows": [],
        "chunks": {"total": total, "loaded": progress.ran, "doneEarlier": len(done)},
        "window": book.window.to_dict(),
    }
