"""Helpers for scheduler tests: real ``croft tick`` / ``croft run --due`` processes on a moved clock.

A tick's run is a detached grandchild, so tests wait for it on what it leaves behind (the process noted
in ``schedule.spawned`` and its run row) with ``waiting.wait_for``, never by sleeping a fixed time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from enginekit import history
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.core.identity import ProcessIdentity, is_alive
from croft.history.db import open_history
from croft.scheduler.setting import write_scheduling

ISSUES = """
from croft import ingest


@ingest(schedule="{schedule}", key="id")
def rows(ctx):
    yield [{{"id": 1, "n": 1}}, {{"id": 2, "n": 2}}]
"""
SUMMARY = """
-- key: id
SELECT id, n * 10 AS m FROM {source}
"""


def env_at(now: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROFT_NOW")}
    return {**env, "CROFT_NOW": now, "CROFT_RETRY_DELAYS": "0,0", **extra}


def croft_json(root: Path, now: str, *args: str, **extra: str) -> tuple[int, dict[str, Any]]:
    """A real ``croft ARGS --json`` process at ``now``; (exit code, envelope)."""
    out = subprocess.run(
        [sys.executable, "-m", "croft", *args, "--json"],
        cwd=root,
        env=env_at(now, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        return out.returncode, json.loads(out.stdout)
    except ValueError:
        raise AssertionError(f"not one JSON envelope: {out.stdout!r} {out.stderr!r}") from None


def tick(root: Path, now: str, *, wait: bool = True, **extra: str) -> dict[str, Any]:
    """A real ``croft tick --json`` at ``now``; waits for the runs it started unless told not to."""
    code, envelope = croft_json(root, now, "tick", **extra)
    assert code == 0 and envelope["ok"], envelope
    if wait:
        wait_for_runs(root)
    return envelope["data"]


def query(root: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    return history(root, sql, *params)


def setting(root: Path, key: str) -> Any:
    rows = query(root, "SELECT value FROM settings WHERE key = ?", key)
    return json.loads(rows[0]["value"]) if rows else None


def wait_for_runs(root: Path, timeout: float = 90.0) -> None:
    """Until every child the ticks noted has ended and no run is recorded as running."""

    def still_going() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        notes = setting(root, "schedule.spawned") or []
        alive = [
            n
            for n in notes
            if n.get("pid") and is_alive(ProcessIdentity(n["pid"], n.get("procStart"), n.get("bootId")))
        ]
        return alive, query(root, "SELECT id FROM runs WHERE status = 'running'")

    wait_for(
        lambda: still_going() == ([], []),
        lambda: "the scheduled runs to end; still going (children, runs): {} {}".format(*still_going()),
        timeout=timeout,
    )


def schedule_on(root: Path, now: str) -> None:
    code, envelope = croft_json(root, now, "schedule", "on", "--no-os-job")
    assert code == 0, envelope


HANGING = """
from croft import ingest


@ingest(schedule="every hour", key="id", {options})
def rows(ctx):
    import os
    import time

    hang = os.environ.get("CROFT_TEST_HANG")
    waited = 0.0
    while hang and os.path.exists(hang) and waited < 120:
        time.sleep(0.05)
        waited += 0.05
    yield [{{"id": 1}}]
"""


def hanging_ingest(options: str) -> str:
    """An hourly ingest (``options`` added to its decorator) that hangs while the file named by
    CROFT_TEST_HANG (a CROFT_* knob every scheduled run inherits) exists, two minutes at most."""
    return HANGING.format(options=options)


def hanging_project(
    make_project: Any, tmp_path: Path, files: dict[str, str], **config: Any
) -> tuple[Path, Path]:
    """A project of ``files`` run by hand at 09:30 (so approved) with scheduling on, and the hang file."""
    root = make_project(files, **config)
    code, envelope = croft_json(root, "2026-06-01T09:30:00Z", "run")
    assert code == 0, envelope
    schedule_on(root, "2026-06-01T09:30:00Z")
    flag = tmp_path / "hang"
    flag.touch()
    return root, flag


def state_of(root: Path, asset: str) -> dict[str, Any]:
    rows = query(root, "SELECT * FROM schedule_state WHERE asset = ?", asset)
    return rows[0] if rows else {}


def runs_of(root: Path) -> list[dict[str, Any]]:
    return query(root, "SELECT id, trigger, human, status, argv FROM runs ORDER BY started_at, rowid")


def steps_of(root: Path, run_id: str) -> list[dict[str, Any]]:
    return query(
        root, "SELECT asset, attempt, status, reason FROM steps WHERE run_id = ? ORDER BY rowid", run_id
    )


def lease(root: Path, asset: str, run_id: str, pid: int) -> None:
    """Give ``asset``'s lease to run ``run_id`` held by the live process ``pid``."""
    from croft.core.identity import boot_id, start_time
    from croft.history import leases
    from croft.history.db import open_history

    conn = open_history(root / ".croft")
    try:
        assert leases.acquire(conn, [asset], run_id, ProcessIdentity(pid, start_time(pid), boot_id())) == []
    finally:
        conn.close()


def note(root: Path, run_id: str, assets: list[str], at: str, fires: dict[str, str]) -> None:
    """Record a spawned run as a tick does (fires, attempt and note in one transaction)."""
    from croft.core.clock import parse_instant
    from croft.history.db import open_history
    from croft.scheduler.tick.settle import note_spawn

    conn = open_history(root / ".croft")
    try:
        note_spawn(conn, run_id, assets, parse_instant(at), fires, assets)
    finally:
        conn.close()


def scheduled(
    root: Path, state: str, via: str = "os-job", until: str | None = None, state_dir: Path | None = None
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, str] = {"timezone": "UTC"}
    if state_dir is not None:
        config["stateDir"] = str(state_dir)
    (root / "croft.json").write_text(json.dumps(config))
    conn = open_history(state_dir or root / ".croft")
    try:
        write_scheduling(
            conn,
            state,  # type: ignore[arg-type]
            parse_instant("2026-03-01T11:00:00Z"),
            via=via,  # type: ignore[arg-type]
            paused_until=parse_instant(until) if until else None,
        )
    finally:
        conn.close()
    return root


# Holds the registry's lock until killed (a writer that died mid-change).
HOLDER = textwrap.dedent(
    """
    import sys, time
    from croft.scheduler.user.registry import Registry
    with Registry(sys.argv[1]).locked():
        print("locked", flush=True)
        time.sleep(600)
    """
)
