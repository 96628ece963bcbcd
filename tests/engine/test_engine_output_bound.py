"""Unbounded output, bounded log: an asset printing without end once stored its every byte (200 MB of print
made a 216 MB step log). The log keeps the head and the tail and says how much it cut; a line that never
ends is cut too; writes straight to fd 1 are read back line by line, never whole."""

from __future__ import annotations

import json

import pytest
from enginekit import spawn

from croft.engine.logcap import HEAD_BYTES, LINE_CHARS, TAIL_BYTES, CappedLog, cut_line
from croft.history import steplogs
from croft.history.db import open_history

pytestmark = pytest.mark.processes

FLOOD = """
import os

from croft import ingest


@ingest(key="id")
def rows(ctx):
    print("first line of the flood")
    print("y" * {long_line})  # one line far longer than a log keeps
    chunk = "x" * 999
    for i in range({prints}):
        print(i, chunk)
    block = (("z" * 499) + "\\n").encode() * 2000
    for _ in range({fd_blocks}):
        os.write(1, block)  # C-level output, caught through the spill file, joins the log at the end
    os.write(1, b"last line of the flood\\n")
    yield {{"id": 1}}
"""


def test_a_step_that_prints_without_end_keeps_a_bounded_log(make_project):
    prints, fd_blocks = 12_000, 8  # ~12 MB through print, ~8 MB straight to fd 1: both far past the caps
    root = make_project(
        {"assets/flood.py": FLOOD.format(prints=prints, long_line=LINE_CHARS * 3, fd_blocks=fd_blocks)}
    )
    child = spawn(root, "run")
    out, err = child.communicate(timeout=300)
    envelope = json.loads(out)
    assert child.returncode == 0 and envelope["data"]["status"] == "succeeded", (out, err)
    assert not list((root / ".croft" / "logs").glob("*.flood.log"))  # the ended step's log is a row
    conn = open_history(root / ".croft")
    try:
        run_id, attempt, path = conn.execute(
            "SELECT run_id, attempt, log_path FROM steps WHERE asset = 'flood'"
        ).fetchone()
        text = steplogs.text(conn, run_id, "flood", attempt, path) or ""
    finally:
        conn.close()
    size = len(text.encode())
    assert size < HEAD_BYTES + TAIL_BYTES + 2 * LINE_CHARS + 4096, f"the log is {size} bytes"
    assert "stdout: first line of the flood" in "".join(text.splitlines()[:3])  # the head
    assert "output: last line of the flood" in text  # the tail
    [note] = [line for line in text.splitlines() if "of output cut here" in line]
    cut_lines = int(note.split(" … ")[1].split()[0])
    assert cut_lines > 10_000 and "its first 2.0 MiB and its last 2.0 MiB" in note
    assert "more characters cut" in text  # the endless line kept its start, said what it lost
    assert max(len(line) for line in text.splitlines()) < LINE_CHARS + 200


def test_the_cap_keeps_head_and_tail_and_counts_what_it_cut():
    written: list[str] = []
    log = CappedLog(written.append, lambda: "T", head=30, tail=20)
    for i in range(100):
        log.add(f"line {i:03d}\n")  # 9 bytes each
    log.close()
    assert written[:4] == ["line 000\n", "line 001\n", "line 002\n", "line 003\n"]  # 36 > 30: head ends
    assert written[-2:] == ["line 098\n", "line 099\n"]
    [note] = [w for w in written if "cut here" in w]
    kept = len(written) - 1
    assert note.startswith(f"T … {100 - kept} lines (") and "its first 30 bytes and its last 20 bytes" in note
    quiet: list[str] = []
    small = CappedLog(quiet.append, lambda: "T", head=100, tail=100)
    small.add("one\n")
    small.close()
    assert quiet == ["one\n"]  # nothing cut, nothing said
    assert cut_line("a" * 10, 4) == "aaaa … (6 more characters cut)" and cut_line("ab", 4) == "ab"
