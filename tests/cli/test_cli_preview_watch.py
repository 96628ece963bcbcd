"""`croft preview ASSET --watch` as a person uses it: a real process that previews again when the asset, a
module it imports or an input table changes, and ends on Ctrl-C with exit 130 and the warehouse untouched."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from waiting import wait_for

pytestmark = pytest.mark.processes

INGEST = """
from croft import ingest
from lib.extra import EXTRA


@ingest(key="id")
def rows(ctx):
    yield [{"id": 1, "name": "apples"}, {"id": 2, "name": "pears"}, *EXTRA]
"""


class Watch:
    """A running `croft preview --watch` whose output lines are read as they come."""

    def __init__(self, root: Path, asset: str):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "croft", "preview", asset, "--watch"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert self.proc.stdout is not None
        out = self.proc.stdout
        self.reader = threading.Thread(target=lambda: [self.lines.put(ln) for ln in out], daemon=True)
        self.reader.start()

    def until(self, pred: Callable[[list[str]], bool], timeout: float = 120.0) -> list[str]:
        """Read lines until ``pred`` holds for the output of the latest preview, and return that output.

        It waits on the output itself: each preview is a fresh process, which a loaded machine starts
        slowly, so the bound is generous; a watch that ends first fails at once, with what it printed."""

        def matched() -> list[str]:
            while True:
                try:
                    line = self.lines.get_nowait()
                except queue.Empty:
                    break
                self.seen.append(line.rstrip("\n"))
                latest = _latest_preview(self.seen)
                if latest and pred(latest):
                    return latest
            if not self.reader.is_alive() and self.lines.empty():  # its output ended: the watch did
                raise AssertionError(
                    f"the watch ended (exit {self.proc.wait(timeout=30)}) before such a preview; output:\n"
                    + "\n".join(self.seen)
                )
            return []

        return wait_for(matched, lambda: "such a preview; output:\n" + "\n".join(self.seen), timeout=timeout)

    def interrupt(self, sig: int = signal.SIGINT) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=120)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _latest_preview(lines: list[str]) -> list[str]:
    """The lines of the newest preview that has finished (it ends where the watch says it is waiting)."""
    ends = [i for i, ln in enumerate(lines) if ln.startswith("── watching")]
    if not ends:
        return []
    starts = [i for i, ln in enumerate(lines[: ends[-1]]) if " preview " in ln and ln.startswith("── ")]
    return lines[starts[-1] : ends[-1]]


def _warehouse_state(db: Path) -> tuple[str, list[tuple[object, ...]]]:
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, name FROM fruit ORDER BY id").fetchall()
    return digest, rows


@pytest.fixture
def fruit(make_project):
    root = make_project({"assets/fruit.py": INGEST, "lib/__init__.py": "", "lib/extra.py": "EXTRA = []\n"})
    subprocess.run([sys.executable, "-m", "croft", "run"], cwd=root, check=True, capture_output=True)
    return root


def test_an_edit_to_the_asset_or_its_module_shows_in_the_next_preview_and_ctrl_c_writes_nothing(fruit):
    db = fruit / "warehouse.sqlite"
    before = _warehouse_state(db)
    watch = Watch(fruit, "fruit")
    try:
        first = watch.until(lambda out: "nothing was written" in out)
        assert any('"apples"' in ln for ln in first) and not any("plums" in ln for ln in first)

        asset = fruit / "assets" / "fruit.py"
        asset.write_text(
            asset.read_text().replace('"name": "pears"}', '"name": "pears"}, {"id": 3, "name": "plums"}')
        )
        second = watch.until(lambda out: any('"plums"' in ln for ln in out))
        assert any("would add 1," in ln for ln in second)

        (fruit / "lib" / "extra.py").write_text('EXTRA = [{"id": 9, "name": "quince"}]\n')
        third = watch.until(lambda out: any('"quince"' in ln for ln in out))
        assert any("would add 2," in ln for ln in third)

        code = watch.interrupt()
    finally:
        watch.close()
    assert code == 130
    assert _warehouse_state(db) == before
    assert before[1] == [(1, "apples"), (2, "pears")]


SUMMARY = """
-- key: n
SELECT count(*) AS n FROM fruit
"""


def test_new_data_in_an_input_table_previews_the_transform_again(fruit):
    (fruit / "assets" / "summary.sql").write_text(SUMMARY.lstrip())
    watch = Watch(fruit, "summary")
    try:
        watch.until(lambda out: any('{"n": 2}' in ln for ln in out))
        (fruit / "lib" / "extra.py").write_text('EXTRA = [{"id": 9, "name": "quince"}]\n')
        subprocess.run(
            [sys.executable, "-m", "croft", "run", "fruit", "--only"],
            cwd=fruit,
            check=True,
            capture_output=True,
        )
        watch.until(lambda out: any('{"n": 3}' in ln for ln in out))
        assert watch.interrupt(signal.SIGTERM) == 130  # a supervisor's stop ends it like Ctrl-C
    finally:
        watch.close()


def test_an_unknown_asset_is_refused_at_once(fruit):
    done = subprocess.run(
        [sys.executable, "-m", "croft", "preview", "fruits", "--watch"],
        cwd=fruit,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "UNKNOWN_ASSET" in done.stderr and "fruit" in done.stderr


def test_a_misspelt_asset_gets_the_shared_did_you_mean_and_a_fix_that_watches(fruit):
    done = subprocess.run(
        [sys.executable, "-m", "croft", "preview", "fruits", "--watch", "--json"],
        cwd=fruit,
        capture_output=True,
        text=True,
        timeout=30,
    )
    (found,) = json.loads(done.stdout)["problems"]
    assert found["code"] == "UNKNOWN_ASSET" and found["suggestion"] == "fruit"
    assert found["fix"]["command"] == "croft preview --watch fruit"
