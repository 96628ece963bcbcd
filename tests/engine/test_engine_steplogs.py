"""Step logs are rows of runs.sqlite once their attempt ended, and ``croft logs`` prints exactly what it
printed when each was a file: the same lines, the same tail, the same JSON."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from enginekit import croft, history, spawn

from croft.cli.group import build_group
from croft.history import steplogs
from croft.history.db import open_history

CHATTY = """
from croft import ingest


@ingest(key="id")
def rows(ctx):
    for i in range(250):
        ctx.log("line", i)
    yield [{"id": 1}]
"""
BROKEN = """
from croft import ingest


@ingest(key="id")
def broken(ctx):
    ctx.log("about to fail")
    raise ValueError("no rows today")
"""


def _human(root: Path, *args: str) -> str:
    old = Path.cwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(build_group(), list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.stdout


def _everything(root: Path, run_id: str) -> list[object]:
    """What every form of ``croft logs`` prints, in JSON and for a person."""
    out: list[object] = []
    for args in ([], ["rows"], ["broken", "--failed"], ["--runs"], [run_id]):
        out.append(croft(root, "logs", *args)[1])
        out.append(_human(root, "logs", *args))
    return out


def _as_files(root: Path) -> None:
    """The layout an older croft left: every step log a file at its log_path, no rows."""
    conn = sqlite3.connect(root / ".croft" / "runs.sqlite")
    try:
        for run_id, asset, attempt, text in conn.execute(
            "SELECT run_id, asset, attempt, text FROM step_logs"
        ):
            [(path,)] = conn.execute(
                "SELECT log_path FROM steps WHERE run_id = ? AND asset = ? AND attempt = ?",
                (run_id, asset, attempt),
            )
            Path(path).write_text(text, encoding="utf-8")
        conn.execute("DELETE FROM step_logs")
        conn.commit()
    finally:
        conn.close()


def test_croft_logs_prints_the_same_from_rows_as_it_did_from_files(make_project):
    root = make_project({"assets/rows.py": CHATTY, "assets/broken.py": BROKEN})
    croft(root, "run", env={"CROFT_NOW": "2026-06-01T09:00:00Z"})
    code, envelope = croft(root, "run", env={"CROFT_NOW": "2026-06-01T10:00:00Z"})
    assert code == 1, envelope
    run_id = envelope["data"]["runId"]
    assert list((root / ".croft" / "logs").iterdir()) == []  # no file per step once it ended
    kept = history(root, "SELECT asset, length(text) AS n FROM step_logs ORDER BY asset, run_id")
    assert [k["asset"] for k in kept] == ["broken", "broken", "rows", "rows"] and all(k["n"] for k in kept)
    now = _everything(root, run_id)
    steps = now[0]["data"]["steps"]  # type: ignore[index]
    rows = next(s for s in steps if s["asset"] == "rows")
    assert (
        rows["truncated"] is True
        and len(rows["lines"]) == 200
        and rows["lines"][-1].endswith("wrote: +0 ~0 -0 =1")
    )
    assert "about to fail" in "\n".join(next(s for s in steps if s["asset"] == "broken")["lines"])
    _as_files(root)
    assert now == _everything(root, run_id)


def test_a_step_that_crashed_keeps_its_file_and_croft_logs_reads_it(make_project):
    root = make_project({"assets/rows.py": CHATTY})
    child = spawn(root, "run", env={"CROFT_FAULT": "before_commit"})
    child.communicate(timeout=60)
    assert child.returncode != 0
    [step] = history(root, "SELECT log_path FROM steps")
    assert Path(step["log_path"]).is_file()  # the crash left the file: the evidence stays
    code, logs = croft(root, "logs", "rows")
    [shown] = logs["data"]["steps"]
    assert code == 0 and shown["status"] == "crashed" and shown["lines"][-1].endswith("line 249")
    assert history(root, "SELECT COUNT(*) AS n FROM step_logs") == [{"n": 0}]


def test_an_empty_log_leaves_no_row_and_a_failed_keep_leaves_the_file(tmp_path):
    conn = open_history(tmp_path / "state")
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert steplogs.keep(conn, "r_1", "a", 1, empty) and not empty.exists()
    assert conn.execute("SELECT COUNT(*) FROM step_logs").fetchone()[0] == 0
    said = tmp_path / "said.log"
    said.write_text("2026-06-01T09:00:00.000Z hello\n")
    conn.close()  # a write that fails (as a full disk would): the file is still the log
    assert steplogs.keep(conn, "r_1", "a", 2, said) is False and said.read_text().endswith("hello\n")
    conn = open_history(tmp_path / "state")
    assert steplogs.text(conn, "r_1", "a", 2, str(said)) == said.read_text()
    assert steplogs.keep(conn, "r_1", "a", 2, said) and not said.exists()
    assert steplogs.text(conn, "r_1", "a", 2, str(said)) == "2026-06-01T09:00:00.000Z hello\n"
    assert steplogs.text(conn, "r_1", "a", 3, None) is None
    conn.close()
