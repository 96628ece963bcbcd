"""The idle tick: prove nothing changed since the last full tick found nothing to do, and only beat.

Most ticks of most projects find nothing due. When a full tick (``scheduler.tick.project_tick``) ends having started
nothing, held nothing and reported nothing, it leaves a memo (settings ``schedule.idle``): the instant it
looked, the next instant anything could fire, and fingerprints of everything its decision read (the
scheduling setting and croft.json as text, the history's generation counter, the asset files and the
modules they import, by ``stat``). The next tick checks that memo with nothing but ``os``, ``json``,
``sqlite3`` and ``zlib``, reading one row of the history however long it is; if every fingerprint
still matches and the clock is between the two instants, the decision cannot have changed, so it takes the singleton, writes the heartbeat and stops. Anything
else (a fingerprint moved, a fire came, the clock went back, a run is going, a spawned run is not
settled, a relocated state folder) falls through to the full tick, which decides as always.
"""

from __future__ import annotations

import json
import os
import sqlite3
from hashlib import blake2b
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core import sqlitefile
from croft.core.identity import current
from croft.core.redact import Redactor
from croft.history import tickrow
from croft.notify.ping import ping_logged
from croft.project.env import project_env
from croft.scheduler.incidents import incident_path
from croft.scheduler.tick.filekeys import files_fingerprint
from croft.scheduler.tick.report import tick_data

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MEMO_KEY",
    "config_digest",
    "history_fingerprint",
    "idle_tick",
    "make_memo",
    "memo_holds",
    "project_redactor",
]

MEMO_KEY = "schedule.idle"
_NOT_SETTLED = ("schedule.spawned", "schedule.failedStarts")

_HISTORY_SQL = "SELECT n FROM generation WHERE id = 1"


def history_fingerprint(conn: sqlite3.Connection) -> str:
    """One value for what the due decision reads from runs.sqlite (runs, steps, schedule state, catalog,
    leases): the history's generation, which a trigger bumps in the same transaction as any write to
    those tables (``history.migrations.m004_bounded_reads``). One row read, whatever the history's
    length; a history without the counter (not migrated yet) raises, and the full tick decides."""
    row = conn.execute(_HISTORY_SQL).fetchone()
    if row is None:
        raise sqlite3.DatabaseError("the history has no generation row")
    return f"g{int(row[0])}"


def _raw_settings(conn: sqlite3.Connection) -> dict[str, str]:
    keys = ("scheduling", MEMO_KEY, *_NOT_SETTLED)
    rows = conn.execute(f"SELECT key, value FROM settings WHERE key IN ({','.join('?' for _ in keys)})", keys)
    return {str(r[0]): str(r[1]) for r in rows}


def make_memo(
    conn: sqlite3.Connection,
    root: str,
    config_text: str,
    at: str,
    until: str,
    deps: list[str],
    never: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The memo a full tick that found nothing to do leaves for the next one. croft.json is kept as a
    digest, never as text: it may hold a webhook URL's credentials and the ping token, and the memo is a
    row of runs.sqlite, which needs neither. ``never``: the tick's SCHEDULE_INVALID entries, which the
    idle ticks report as it did (nothing they read has changed)."""
    return {
        "never": list(never or []),
        "at": at,
        "until": until,
        "setting": _raw_settings(conn).get("scheduling"),
        "config": config_digest(config_text),
        "pings": _pings(json.loads(config_text)),
        "history": history_fingerprint(conn),
        "deps": deps,
        "files": files_fingerprint(root, deps),
    }


def config_digest(text: str) -> str:
    """A digest of croft.json's text: equal texts, equal digests; the text is not in it."""
    return "b2:" + blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _pings(config: Any) -> bool:
    """Whether croft.json sets ``notify.ping`` (the dead-man's switch goes out after each project tick)."""
    notify = config.get("notify") if isinstance(config, dict) else None
    return isinstance(notify, dict) and bool(notify.get("ping"))


def _find_root(start: str) -> str | None:
    here = os.path.realpath(start)
    while True:
        if os.path.isfile(os.path.join(here, "croft.json")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def idle_tick(start: str, now_iso: str) -> dict[str, Any] | None:
    """The tick's data when the memo still holds (or another tick is running); None: do the full tick.

    An idle tick that beat is a completed tick: it sends the dead-man's-switch ping too (``notify.ping``,
    read from the croft.json text the memo already matched), after runs.sqlite is closed.
    """
    try:
        found = _idle(start, now_iso, beat=True)
    except (OSError, ValueError, KeyError, TypeError, RecursionError, sqlite3.Error):
        return None  # anything odd (a croft.json nested too deep, say): the full tick says what
    if found is None:
        return None
    data, root, config = found
    if data["exited"] is None:
        _ping(root, config)
    return data


def _ping_url(config: dict[str, Any]) -> str | None:
    """The ``notify.ping`` URL croft.json sets, or None: the dead-man's switch of each completed tick."""
    notify = config.get("notify")
    url = notify.get("ping") if isinstance(notify, dict) else None
    return url if isinstance(url, str) and url else None


def _ping(root: str, config: dict[str, Any]) -> None:
    """The same ping the full tick sends (``notify_ping.ping_logged``); nothing is imported without one."""
    url = _ping_url(config)
    if url is None:
        return

    ping_logged(url, os.path.join(root, ".croft"), lambda: project_redactor(root))


def project_redactor(root: str) -> Any:
    """Only on a failed ping: the project's redactor, for the line in notify.log (``.env`` is read then,
    never on a ping that answered). From ``.env`` alone, as ``Project.redactor`` makes it: a croft.json
    that does not load, or a time zone the OS job's interpreter cannot find, never leaves the line
    unredacted."""

    return Redactor(project_env(Path(root))).text


def memo_holds(root: str, now_iso: str) -> dict[str, Any] | None:
    """The memo when it still holds at ``now_iso`` (the same check as ``idle_tick``), writing nothing,
    with ``pingUrl``: croft.json's ``notify.ping`` (the memo keeps only a digest of croft.json); None: a
    full tick must decide. For the per-user tick, which beats idle projects and sends their pings itself."""
    try:
        found = _idle(root, now_iso, beat=False)
    except (OSError, ValueError, KeyError, TypeError, RecursionError, sqlite3.Error):
        return None
    return {**found[0], "pingUrl": _ping_url(found[2])} if found else None


def _idle(start: str, now_iso: str, beat: bool) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
    """(the tick's data after a beat, or the memo itself when ``beat`` is false; the root; croft.json)."""
    root = _find_root(start)
    if root is None:
        return None
    with open(os.path.join(root, "croft.json"), encoding="utf-8") as handle:
        config_text = handle.read()
    config = json.loads(config_text)
    if not isinstance(config, dict) or config.get("stateDir"):
        return None  # a relocated state folder: the full tick resolves it
    path = os.path.join(root, ".croft", "runs.sqlite")
    if not os.path.isfile(path):
        return None
    if os.path.exists(incident_path(root)):
        return None  # a tick failed since: only a full tick that succeeds may say all is well again
    conn = sqlitefile.connect(path, "write", timeout=5.0)
    try:
        raw = _raw_settings(conn)
        memo = json.loads(raw.get(MEMO_KEY) or "null")
        if not isinstance(memo, dict):
            return None
        if any(raw.get(key) not in (None, "[]") for key in _NOT_SETTLED):
            return None
        if memo["setting"] != raw.get("scheduling") or memo["config"] != config_digest(config_text):
            return None
        if not (memo["at"] <= now_iso < memo["until"]):
            return None
        if memo["history"] != history_fingerprint(conn):
            return None
        if memo["files"] != files_fingerprint(root, memo["deps"]):
            return None
        if not beat:
            return memo, root, config
        data = _beat(conn, now_iso)
        data["held"] = list(memo.get("never") or [])
        return data, root, config
    finally:
        conn.close()


def _beat(conn: sqlite3.Connection, now_iso: str) -> dict[str, Any]:

    who = current()
    data = tick_data("idle")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if tickrow.claim(conn, who) is not None:
            data["exited"] = "busy"
        else:
            tickrow.heartbeat(conn, who, now_iso)
            tickrow.release(conn, who)
            data["heartbeatAt"] = now_iso
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return data
