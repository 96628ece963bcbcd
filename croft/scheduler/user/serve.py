"""``croft serve``: the foreground ticker for servers, containers and WSL, where no OS job runs.

It ticks nothing itself. At start and at each boundary of the interval on the wall clock (each minute;
``CROFT_SERVE_INTERVAL_MS`` shortens it for tests, which fix the minutes' clock with ``CROFT_NOW``) it
starts ``croft tick --all`` as a process of its own, as the OS job does: the minute gate, then, when the
gate does not settle the minute, the one per-user ticker (``user.tick_all``), which ticks the
``--no-os-job`` projects while this serve is alive (``user.servenote``). A fresh process each minute
runs the croft installed now, so an upgrade is picked up the next minute. A minute whose previous one
is still at work is left to it, with a line; SIGTERM or Ctrl-C ends the loop cleanly (the minute and
the runs it started keep going: they are detached).

Everything the tick log gains while serve runs (its own lines and those of the minutes it starts,
which write there themselves) is also handed to ``echo`` as it comes (``LogFollower``), so a
container's ``docker logs`` shows what serve does. The minutes keep writing to the file, not to a pipe
of serve's: a serve that ends never breaks a tick still writing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from croft.core import clock, knobs
from croft.core.children import croft_argv, croft_env, detach
from croft.core.identity import current
from croft.core.jsonfile import read_object
from croft.core.paths import croft_home
from croft.scheduler.ticklog import TickLog
from croft.scheduler.user.servenote import serve_path, write_serve
from croft.scheduler.user.trusted import home_unsafe, unsafe_error, words

__all__ = ["LogFollower", "Server", "interval_s", "minute_argv", "next_boundary", "serve"]

FOLLOW_EVERY_S = 0.25  # how soon a line in the tick log reaches serve's standard output
FOLLOW_CHUNK = 64 * 1024  # read at a time; a line longer than the log keeps is cut by who wrote it


class LogFollower:
    """The lines a file gains from now on, as ``tail -F`` reads them: from where it ends at the start,
    whole lines only, from the start of a new file when it was rotated (another inode) or cut shorter."""

    def __init__(self, path: str):
        self.path = path
        self.inode, self.offset = self._where()
        self.rest = b""

    def _where(self) -> tuple[int | None, int]:
        try:
            st = os.stat(self.path)
        except OSError:
            return None, 0
        return st.st_ino, st.st_size

    def lines(self) -> list[str]:
        inode, size = self._where()
        if inode is None:
            return []
        if inode != self.inode or size < self.offset:  # rotated (tick.log.1) or cut: the new file, whole
            self.inode, self.offset, self.rest = inode, 0, b""
        if size == self.offset:
            return []
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(max(0, min(size - self.offset, 16 * FOLLOW_CHUNK)))
        except OSError:
            return []
        self.offset += len(data)
        *whole, self.rest = (self.rest + data).split(b"\n")
        if len(self.rest) > FOLLOW_CHUNK:  # no line end in sight: hand on what came
            whole.append(self.rest)
            self.rest = b""
        return [line.decode("utf-8", "replace") for line in whole]


def interval_s() -> float:
    """``CROFT_SERVE_INTERVAL_MS`` in seconds (its bounds are the knob's: ``core.knobs``)."""
    return float(knobs.value("CROFT_SERVE_INTERVAL_MS")) / 1000


def next_boundary(now_ns: int, every_ms: int) -> int:
    """The first boundary of ``every_ms`` on the wall clock after ``now_ns`` (nanoseconds since the epoch),
    in whole numbers, so no float rounding lands it on ``now``: each minute starts at :00, as the OS
    job's does."""
    every_ns = every_ms * 1_000_000
    return (now_ns // every_ns + 1) * every_ns


def minute_argv() -> list[str]:
    """What starts a minute: the OS job's command (``jobs.spec``), with this interpreter."""
    return croft_argv("tick", "--all")


class Server:
    def __init__(self, home: Path | None = None, echo: Callable[[str], None] | None = None):
        self.home = home or croft_home()
        self.log = TickLog.of(self.home)
        self.echo = echo
        self.follower = LogFollower(self.log.path) if echo is not None else None
        self.child: subprocess.Popen[bytes] | None = None
        self.ticks = 0  # minutes come
        self.started = 0  # minutes started (each a croft tick --all)
        self.noted = False  # the note (serve.json) is this server's once serve() wrote it

    def say(self, message: str) -> None:
        self.log.write(clock.to_iso(clock.now()), f"croft serve (pid {os.getpid()}): {message}")

    def minute(self) -> str:
        """Start this minute's ``croft tick --all``; what happened (started, previous_alive, refused: why,
        spawn_failed). Never raises."""
        self.ticks += 1
        unsafe = home_unsafe(self.home)
        if unsafe is not None:  # nothing is written into a CROFT_HOME someone else could change
            return f"refused: {words(unsafe)}"
        previous = self.child
        try:
            self._keep_note()
            if previous is not None and previous.poll() is None:
                self.say(f"the previous minute (pid {previous.pid}) is still at work; this one is left to it")
                return "previous_alive"
            with self.log.open() as handle:
                self.child = detach(minute_argv(), self.home, handle, croft_env(croft_home=str(self.home)))
        except OSError as exc:
            with contextlib.suppress(
                OSError
            ):  # the tick log itself cannot take it: the next minute tries again
                self.say(f"could not start this minute: {exc.strerror or exc}")
            return "spawn_failed"
        self.started += 1
        return "started"

    def _keep_note(self) -> None:
        """serve.json says which croft serve is alive (the minute and doctor read it): put it back if it is
        lost or garbled while this one runs."""
        if self.noted and read_object(serve_path(self.home)) != current().to_dict():
            write_serve(self.home)

    def follow(self) -> None:
        """Hand the tick log's new lines to ``echo`` (nothing without one)."""
        if self.follower is None or self.echo is None:
            return
        for line in self.follower.lines():
            self.echo(line)

    def run(self, stop: threading.Event, interval: float) -> None:
        while not stop.is_set():
            self.minute()
            until = next_boundary(time.time_ns(), round(interval * 1000)) / 1e9
            while not stop.is_set():
                self.follow()
                left = until - time.time()
                if left <= 0:
                    break
                stop.wait(min(left, FOLLOW_EVERY_S) if self.follower is not None else left)

    def close(self) -> None:
        """The last minute is left to finish on its own (detached: nobody waits for it here)."""
        child = self.child
        if child is not None and child.poll() is None:
            child.returncode = 0


def serve(
    on_start: Callable[[str], None] | None = None, echo: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run until SIGTERM or Ctrl-C; returns counts for the envelope. ``echo``: each line the tick log gains
    meanwhile (serve's own and its minutes')."""
    knobs.require_all()  # every minute serve starts gets its knobs: a bad one stops serve before it starts
    interval = interval_s()
    server = Server(echo=echo)
    unsafe = home_unsafe(server.home)
    if unsafe is not None:  # refused before serve.json or a log line is written there
        raise unsafe_error(unsafe)
    stop = threading.Event()

    def ask_stop(signum: int, _frame: Any) -> None:
        stop.set()

    old = {s: signal.signal(s, ask_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    write_serve(server.home)
    server.noted = True
    server.say(f"starts, ticking every {interval:g} s")
    if on_start:
        on_start(
            f"croft serve: ticking this user's projects every {interval:g} s (a croft tick --all each time);"
            " Ctrl-C stops."
        )
    try:
        server.run(stop, interval)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        serve_path(server.home).unlink(missing_ok=True)
        server.say("stops")
        server.follow()
        server.close()
    return {"ticks": server.ticks, "started": server.started, "intervalMs": int(interval * 1000)}
