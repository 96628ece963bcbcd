"""Helpers for "never silent" tests: break a real file, look with the real commands, repair, look again.

- ``looks(root)``: ``croft status``, ``croft schedule status`` and ``croft doctor`` as real processes in
  the project, at the real clock (a running ``croft serve`` ticks at the real clock too);
- ``claims_health`` / ``says``: whether a look is all green, or names a problem code;
- ``Served``: a real ``croft serve`` in the background, ticking the test's serve projects every 300 ms;
- ``owner_only()``: the argv prefix that makes a root process meet file permissions as any user does
  (``setpriv`` without the capabilities that let root read and write past them), so ``chmod 000``
  means something when the suite runs as root; empty otherwise;
- ``small_disk``: a tmpfs of a few hundred KiB mounted (as root) over a folder, to fill up or make
  read-only, unmounted afterwards; the test is skipped with the reason elsewhere, and fails under CI.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_for

VIEWS = {"status": ["status"], "schedule status": ["schedule", "status"], "doctor": ["doctor"]}


def owner_only() -> list[str]:
    """``setpriv`` dropping CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH when root (else nothing)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]


def cannot(reason: str) -> None:
    """Skip with the reason, or fail under CI, where every real part must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k != "CROFT_NOW"}  # the real clock: serve ticks on it
    return {**base, "CROFT_RETRY_DELAYS": "0,0", **extra}


def croft(cwd: Path, *args: str, prefix: list[str] | None = None, **extra: str) -> tuple[int, dict[str, Any]]:
    """A real ``croft ARGS --json``; (exit code, envelope). Fails the test on a traceback or a crash file's
    INTERNAL_ERROR: broken state is a problem with a code, never a bug."""
    done = subprocess.run(
        [*(prefix or []), sys.executable, "-m", "croft", *args, "--json"],
        cwd=cwd,
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    try:
        envelope = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(
            f"croft {' '.join(args)}: not one envelope: {done.stdout!r} {done.stderr!r}"
        ) from None
    codes = [p["code"] for p in envelope["problems"]]
    assert "INTERNAL_ERROR" not in codes, (args, envelope["problems"])
    if done.returncode != 0:
        assert [p for p in envelope["problems"] if p["severity"] == "error"], (
            args,
            done.returncode,
            envelope,
        )
    return done.returncode, envelope


def looks(root: Path, prefix: list[str] | None = None) -> dict[str, tuple[int, dict[str, Any]]]:
    return {name: croft(root, *argv, prefix=prefix) for name, argv in VIEWS.items()}


def claims_health(seen: dict[str, tuple[int, dict[str, Any]]]) -> bool:
    """Every view green: exit 0, ok, and no problem about the scheduler (notes like held assets aside)."""
    quiet = {"SCHEDULE_HELD"}
    return all(
        code == 0 and envelope["ok"] and not [p for p in envelope["problems"] if p["code"] not in quiet]
        for code, envelope in seen.values()
    )


def says(seen: dict[str, tuple[int, dict[str, Any]]], code: str, *, status_fails: bool = False) -> bool:
    """Every view names ``code``; schedule status and doctor exit non-zero for it (status too, when asked:
    a history it cannot read fails status itself)."""
    for name, (exit_code, envelope) in seen.items():
        if code not in {p["code"] for p in envelope["problems"]}:
            return False
        if (name != "status" or status_fails) and exit_code == 0:
            return False
    return True


def until_said(
    root: Path, code: str, *, status_fails: bool = False, prefix: list[str] | None = None
) -> dict[str, tuple[int, dict[str, Any]]]:
    """Look until every view names ``code`` (``says``); the looks then, or a failure showing the last."""
    last: list[Any] = []

    def named() -> Any:
        last[:] = [looks(root, prefix)]
        return last[0] if says(last[0], code, status_fails=status_fails) else None

    return wait_for(named, lambda: f"{code} in every view; the views said {last}")  # type: ignore[no-any-return]


def until_green(root: Path, prefix: list[str] | None = None) -> dict[str, tuple[int, dict[str, Any]]]:
    last: list[Any] = []

    def green() -> Any:
        last[:] = [looks(root, prefix)]
        return last[0] if claims_health(last[0]) else None

    return wait_for(green, lambda: f"every view green; the views said {last}")  # type: ignore[no-any-return]


def every_view_names(seen: dict[str, tuple[int, dict[str, Any]]], code: str) -> bool:
    return all(any(p["code"] == code for p in e["problems"]) for _, e in seen.values())


def problem_of(seen: dict[str, tuple[int, dict[str, Any]]], view: str, code: str) -> dict[str, Any]:
    return next(p for p in seen[view][1]["problems"] if p["code"] == code)


class Served:
    """A real ``croft serve`` starting this user's minute (``croft tick --all``) every 300 ms, at the real clock."""

    def __init__(self, home: Path, prefix: list[str] | None = None):
        self.home = home
        self.proc = subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "croft", "serve", "--json"],
            env=env(CROFT_SERVE_INTERVAL_MS="300"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(
            lambda: (home / "serve.json").exists() or self.proc.poll() is not None, "croft serve to start"
        )
        assert self.proc.poll() is None, self.proc.communicate()

    def _mark(self) -> int:
        """The minute lock's modification time: every minute serve starts marks it (the gate or the full
        per-user tick), as the OS job's do."""
        try:
            return (self.home / "tick-all.lock").stat().st_mtime_ns
        except OSError:
            return 0

    def next_ticks(self, count: int = 2) -> None:
        """Wait until ``count`` more minutes of croft serve have begun (the next one, and the one after)."""
        for _ in range(count):
            seen = self._mark()
            wait_for(lambda seen=seen: self._mark() != seen, "the next minute of croft serve")  # type: ignore[misc]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.communicate(timeout=30)


@contextlib.contextmanager
def served(home: Path, prefix: list[str] | None = None) -> Iterator[Served]:
    server = Served(home, prefix)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "512k") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on ``folder`` (root only), unmounted afterwards whatever happened."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        cannot("a full or read-only disk is a small tmpfs this test mounts, which needs root and mount")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        cannot(f"mount -t tmpfs failed: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def fill(folder: Path) -> Path:
    """Fill the disk holding ``folder`` to the last byte; the file that did it (remove it to free the space)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 16, 4096, 512, 1):  # big writes first, then what is left, to the last byte
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def remount(folder: Path, mode: str) -> None:
    done = subprocess.run(["mount", "-o", f"remount,{mode}", str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
