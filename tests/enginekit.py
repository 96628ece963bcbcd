"""Helpers for engine tests: run croft in-process or as a real process, and read what a run left behind."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from croft.cli.group import build_group


def croft(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """``croft ARGS --json`` in-process, inside ``root``; returns (exit code, envelope)."""
    old = Path.cwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(build_group(), [*args, "--json"], env=env, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, json.loads(result.stdout)


def spawn(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A real ``croft ARGS --json`` process in ``root``."""
    return subprocess.Popen(
        [sys.executable, "-m", "croft", *args, "--json"],
        cwd=root,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def table(root: Path, name: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(root / "warehouse.sqlite")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f'SELECT * FROM "{name}" ORDER BY rowid')]
    finally:
        conn.close()


def history(root: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    conn = sqlite3.connect(root / ".croft" / "runs.sqlite")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def cursor(root: Path, asset: str) -> Any:
    conn = sqlite3.connect(root / "warehouse.sqlite")
    try:
        row = conn.execute("SELECT cursor_value FROM _croft_assets WHERE name = ?", (asset,)).fetchone()
        return json.loads(row[0]) if row and row[0] is not None else None
    finally:
        conn.close()


def step_log(root: Path, asset: str) -> str:
    """The log of ``asset``'s latest attempt, read the way ``croft logs`` reads it (its row in the history
    once the attempt ended, its file while it runs); "" when it has none yet."""
    from croft.history.steplogs import text

    conn = sqlite3.connect(root / ".croft" / "runs.sqlite")
    try:
        row = conn.execute(
            "SELECT run_id, attempt, log_path FROM steps WHERE asset = ?"
            " ORDER BY started_at DESC, attempt DESC, rowid DESC LIMIT 1",
            (asset,),
        ).fetchone()
        return (text(conn, row[0], asset, row[1], row[2]) or "") if row else ""
    finally:
        conn.close()
