"""What ``croft run --full-refresh`` asks first, and the progress line of a backfill: the terminal's side
of a refill (the work is the engine's: ``engine.window``, ``engine.backfill``)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

import click

from croft.core.duration import words

__all__ = ["ChunkProgress", "confirm_full_refresh"]

_BAR = 24


def confirm_full_refresh(asset: str, rows: int | None, *, ask: Any = None) -> bool:
    """Ask before a table is replaced, saying how many rows it holds; True to go on."""
    if ask is None:
        ask = click.confirm
    if rows is None:
        question = f"{asset} has no table now: load it from the source's beginning?"
    else:
        noun = "row" if rows == 1 else "rows"
        question = (
            f"Replace the {rows} {noun} of {asset} with everything loaded again from the source's"
            " beginning? (the old table stays until the new one is complete and its checks pass)"
        )
    return bool(ask(question, default=False))


class ChunkProgress:
    """A bar redrawn in place on a terminal; one plain line per chunk anywhere else."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None):
        # a copy of the process's stderr taken now: while a step runs, fd 2 and sys.stderr are routed
        # into the step's log (engine.sandbox), where a progress line does not belong
        self._own = False
        if stream is None:
            try:
                stream = os.fdopen(os.dup(sys.stderr.fileno()), "w", encoding="utf-8")
                self._own = True
            except (OSError, ValueError):  # a stderr with no descriptor (embedded): written as it is
                stream = sys.stderr
        self.stream = stream
        self.tty = self.stream.isatty() if tty is None else tty
        self.started = time.monotonic()

    def close(self) -> None:
        if self._own:
            self.stream.close()

    def __call__(self, seen: dict[str, Any]) -> None:
        done, total = int(seen["chunksDone"]), int(seen["chunks"])
        rate = seen.get("rowsPerSecond")
        left = seen.get("secondsLeft")
        parts = [f"{done}/{total} chunks", f"{seen['rows']} rows"]
        if rate is not None:
            parts.append(f"{rate:g} rows/s")
        if left is not None and done < total:
            parts.append(f"about {words(left)} left")
        text = ", ".join(parts)
        if self.tty:
            filled = int(_BAR * done / total) if total else _BAR
            bar = "#" * filled + "-" * (_BAR - filled)
            end = "\n" if done >= total else ""
            self.stream.write(f"\r{seen['asset']} [{bar}] {text}\x1b[K{end}")
        else:
            self.stream.write(f"{seen['asset']}: backfill {text}\n")
        self.stream.flush()
