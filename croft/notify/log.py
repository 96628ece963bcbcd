"""Where notifications leave a trace: ``notify.log`` for every miss and every message delivered,
``notifications.ndjson`` in dry mode.

Both writers swallow their own errors: a notification that cannot even be logged must still never fail
the run or the tick that sent it. Every line is redacted and shows URLs by host only, because a webhook
URL often carries a token in its path or query. A delivered message is one line too (``sent <channel>:
<event>``), so ``croft doctor`` can say when the last one went out and whether the last try failed; a
ping that answered is not (it goes every minute, and its receiver keeps that record). ``notify.log``
is bounded: past 1 MB it becomes ``notify.log.1`` and a new one starts, and ``last_outcomes`` reads the
two tails.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from croft.core import knobs
from croft.core.clock import now, to_iso
from croft.core.private import open_append

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DRY_ENV",
    "ROTATE_BYTES",
    "SENT",
    "Logged",
    "host_of",
    "is_dry",
    "last_outcomes",
    "log_miss",
    "log_sent",
    "record",
    "scrub_urls",
]

DRY_ENV = "CROFT_NOTIFY_DRY"
SENT = "sent "  # how a delivery's line begins after its run id; no miss croft writes begins so
ROTATE_BYTES = 1024 * 1024
TAIL_BYTES = 64 * 1024
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_TOKEN_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def is_dry() -> bool:
    """``CROFT_NOTIFY_DRY=1``: desktop notifications are recorded, not shown."""
    return bool(knobs.value(DRY_ENV))


def host_of(url: str) -> str:
    """The host (and port) of a URL, without credentials, path or query; ``?`` when there is none."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "?"
    if not host:
        return "?"
    return f"{host}:{port}" if port else host


def scrub_urls(text: str) -> str:
    """Every URL in ``text`` replaced by its host, so no path, query or password reaches a log."""
    return _URL.sub(lambda m: host_of(m.group(0)), text)


def _clean(text: str, redact: Any = None) -> str:
    if redact is not None:
        text = redact(text)
    return " ".join(scrub_urls(text).split())


def log_miss(state_dir: Path, run_id: str | None, message: str, redact: Any = None) -> None:
    """Append ``<ISO now> <runId> <message>`` to ``<state>/logs/notify.log`` (one line, redacted)."""
    _note(state_dir, run_id, _clean(message, redact))


def log_sent(state_dir: Path, run_id: str | None, channel: str, event: str, redact: Any = None) -> None:
    """Append ``<ISO now> <runId> sent <channel>: <event>``: a message that went out (one line, redacted)."""
    _note(state_dir, run_id, SENT + _clean(f"{channel}: {event}", redact))


def _note(state_dir: Path, run_id: str | None, text: str) -> None:
    token = _TOKEN_UNSAFE.sub("_", run_id or "") or "-"
    path = Path(state_dir) / "logs" / "notify.log"
    _rotate(path)
    _append(path, f"{_now_iso()} {token} {text}\n")


@dataclass(frozen=True, slots=True)
class Logged:
    """One line of notify.log: when (ISO UTC), the run it was about (None: no run), what it says, and
    ``order``, its place in the log (later lines are larger: two lines of one moment still have an order)."""

    at: str
    run_id: str | None
    text: str
    order: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "runId": self.run_id, "text": self.text}


def last_outcomes(state_dir: Path, keep: Any = None) -> tuple[Logged | None, Logged | None]:
    """(the last delivery, the last miss) in ``<state>/logs/notify.log`` and its rotated copy, from their
    last 64 KiB; ``keep(text)`` picks the lines that count (all when None). Never raises."""
    sent: Logged | None = None
    missed: Logged | None = None
    path = Path(state_dir) / "logs" / "notify.log"
    order = 0
    for name in (path.name + ".1", path.name):  # the older file first: the newer lines win
        for line in _tail(path.with_name(name)):
            order += 1
            at, _, rest = line.partition(" ")
            token, _, text = rest.partition(" ")
            if not text or (keep is not None and not keep(text)):
                continue
            run_id = None if token == "-" else token
            if text.startswith(SENT):
                sent = Logged(at, run_id, text[len(SENT) :], order)
            else:
                missed = Logged(at, run_id, text, order)
    return sent, missed


def _tail(path: Path) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    return lines[1:] if size > TAIL_BYTES else lines  # the first may be cut


def _rotate(path: Path) -> None:
    """Past 1 MB the log becomes ``notify.log.1`` (one stat per line written: lines are rare)."""
    try:
        if os.stat(path).st_size > ROTATE_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    except OSError:
        pass


def record(state_dir: Path, entry: dict[str, Any]) -> None:
    """Append one JSON object to ``<state>/logs/notifications.ndjson`` (dry mode's record)."""
    line = json.dumps({"at": _now_iso(), **entry}, ensure_ascii=False) + "\n"
    _append(Path(state_dir) / "logs" / "notifications.ndjson", line)


def _now_iso() -> str:
    try:
        return to_iso(now())
    except Exception:  # an invalid CROFT_NOW must not stop the log line
        return to_iso(datetime.now(UTC))


def _append(path: Path, line: str) -> None:
    try:
        with os.fdopen(open_append(path), "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass
