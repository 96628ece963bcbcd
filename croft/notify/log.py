"""Where notifications leave a trace: ``notify.log`` for every miss, ``notifications.ndjson`` in dry mode.

Both writers swallow their own errors: a notification that cannot even be logged must still never fail
the run or the tick that sent it. Every line is redacted and shows URLs by host only, because a webhook
URL often carries a token in its path or query.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from croft.core import knobs
from croft.core.clock import now, to_iso
from croft.core.private import open_append

TYPE_CHECKING = False  # loaded by the per-user tick for a failed ping: nothing of typing at run time
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DRY_ENV", "host_of", "is_dry", "log_miss", "record", "scrub_urls"]

DRY_ENV = "CROFT_NOTIFY_DRY"
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
    token = _TOKEN_UNSAFE.sub("_", run_id or "") or "-"
    line = f"{_now_iso()} {token} {_clean(message, redact)}\n"
    _append(Path(state_dir) / "logs" / "notify.log", line)


def record(state_dir: Path, entry: dict[str, Any]) -> None:
    """Append one JSON object to ``<state>/logs/notifications.ndjson`` (dry mode's record)."""
    line = json.dumps({"at": _now_iso(), **entry}, ensure_ascii=False) + "\n"
    _append(Path(state_dir) / "logs" / "notifications.ndjson", line)


def _now_iso() -> str:
    try:
        return to_iso(now())
    except Exception:  # an invalid CROFT_NOW must not stop the log line
        from datetime import UTC, datetime

        return to_iso(datetime.now(UTC))


def _append(path: Path, line: str) -> None:
    try:
        with os.fdopen(open_append(path), "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass
