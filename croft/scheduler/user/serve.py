"""``croft serve``: the foreground ticker for servers, containers and WSL, where no OS job runs.

At start and every interval (60 s; ``CROFT_SERVE_INTERVAL_MS`` shortens it for tests) it starts the
project tick of every registered ``serve`` project whose scheduling is on, never a second one while the
project's previous tick is still alive. A tick that fails is logged and the loop goes on; SIGTERM or
Ctrl-C ends the loop cleanly (runs already started keep going: they are detached).

Everything the tick log gains while serve runs (its own lines and those of the ticks it starts, which
write there themselves) is also handed to ``echo`` as it comes (``LogFollower``), so a container's
``docker logs`` shows what serve does. The ticks keep writing to the file, not to a pipe of serve's:
a serve that ends never breaks a tick still writing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from croft.core import clock, knobs
from croft.core.children import croft_env
from croft.core.identity import ProcessIdentity, current, is_alive
from croft.core.jsonfile import read_object, write_atomic
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.scheduler.setting import effective_state, read_scheduling_file
from croft.scheduler.ticklog import TickLog, project_names
from croft.scheduler.user.freshcache import FreshCache, look
from croft.scheduler.user.launch import spawn_tick
from croft.scheduler.user.registry import Registry, presence, project_state_dir
from croft.scheduler.user.trusted import home_unsafe, project_unsafe, unsafe_error, words
from croft.scheduler.user.watch import absent, dropped, folder_trouble, lost_history, troubled, untroubled

__all__ = ["LogFollower", "Server", "interval_s", "serve", "serve_alive", "serve_path", "write_serve"]

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


SOURCE = "serve"  # whose incidents these are (scheduler.incidents)

Spawn = Callable[[str, IO[bytes], dict[str, str], str], "subprocess.Popen[bytes]"]


def interval_s() -> float:
    """``CROFT_SERVE_INTERVAL_MS`` in seconds (its bounds are the knob's: ``core.knobs``)."""
    return float(knobs.value("CROFT_SERVE_INTERVAL_MS")) / 1000


class Server:
    def __init__(
        self, home: Path | None = None, spawn: Spawn = spawn_tick, echo: Callable[[str], None] | None = None
    ):
        self.home = home or croft_home()
        self.log = TickLog.of(self.home)
        self.spawn = spawn
        self.echo = echo
        self.follower = LogFollower(self.log.path) if echo is not None else None
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.ticks = 0
        self.started = 0
        self.noted = False  # the note (serve.json) is this server's once serve() wrote it

    def say(self, message: str) -> None:
        self.log.write(clock.to_iso(clock.now()), f"croft serve (pid {os.getpid()}): {message}")

    def tick_once(self) -> list[dict[str, Any]]:
        """One round; returns ``[{root, action}]`` (started / skipped and why). Never raises."""
        self.ticks += 1
        events: list[dict[str, Any]] = []
        unsafe = home_unsafe(self.home)
        if unsafe is not None:  # nothing is written into a CROFT_HOME someone else could change
            return [{"root": None, "action": f"refused: {words(unsafe)}"}]
        try:
            self._keep_note()
            self.log.rotate()
            now = clock.now()
            registry = Registry(self.home)
            listed = registry.entries()
            names = project_names(e.root for e in listed)  # as tick --all names them: all registered
            entries = [e for e in listed if e.via == "serve"]
            for message in registry.notes:  # a registry restored from its last good copy
                self.say(message)
            env = croft_env(croft_home=str(self.home))
            fresh = FreshCache(self.home / "fresh-cache.json")
            with self.log.open() as handle:
                for entry in entries:
                    if project_unsafe(entry.root) is None:  # its promises, whatever its setting
                        look(fresh, entry.root, str(project_state_dir(entry.root)), now, self.say)
                    action = self._one(entry.root, names[entry.root], now, handle, env)
                    events.append({"root": entry.root, "action": action})
            fresh.save()
            self._prune(registry, listed, now)
        except Exception as exc:  # one bad round must not end the server
            self.say(f"tick failed: {type(exc).__name__}: {exc}")
            events.append({"root": None, "action": f"failed: {exc}"})
        return events

    def _one(self, root: str, name: str, now: Any, handle: IO[bytes], env: dict[str, str]) -> str:
        previous = self.children.get(root)
        if previous is not None and previous.poll() is None:
            self.say(f"{name}: previous tick (pid {previous.pid}) is still running; skipped")
            return "previous_alive"
        state, why = presence(root)
        if state in ("gone", "missing"):  # a checkout took croft.json away: told once, ticked once back
            if absent(root, state, why, now, SOURCE):
                self.say(f"{name}: not ticked: PROJECT_GONE: {state}, {why}; it ticks again once it is back")
            return state
        if state != "present":
            return state
        state_dir = project_state_dir(root)
        unsafe = project_unsafe(root, state_dir)
        if unsafe is not None:
            self.say(f"{name}: not ticked, croft does not trust {words(unsafe)}")
            return "unsafe_permissions"
        trouble = folder_trouble(str(state_dir))
        if trouble is None:
            try:
                setting = read_scheduling_file(state_dir)
            except CroftError as exc:  # its runs.sqlite cannot be read: not "off", a problem with its fix
                trouble = exc.problem
        if trouble is not None:
            if troubled(root, trouble, now, SOURCE):  # logged and told once per incident
                self.say(f"{name}: not ticked: {trouble.code}: {trouble.message}")
            return "troubled"
        current = effective_state(setting, now)
        lost = lost_history(root, str(self.home)) if current == "off" else None
        if lost is not None:  # registered, its history says off: emptied or moved aside, never a quiet "off"
            if troubled(root, lost, now, SOURCE):
                self.say(f"{name}: not ticked: {lost.code}: {lost.message}")
            return "troubled"
        untroubled(root, SOURCE)
        if current != "on" or setting.via != "serve":
            return "off" if current == "on" else current
        try:
            child = self.spawn(root, handle, env, name)
        except OSError as exc:
            self.say(f"{name}: could not start its tick: {exc.strerror or exc}")
            return "spawn_failed"
        self.children[root] = child
        self.started += 1
        self.say(f"{name}: tick started (pid {child.pid})")
        return "started"

    def _prune(self, registry: Registry, listed: list[Any], now: Any) -> None:
        """What ``croft tick --all`` does each minute, for a user with no OS job: a project away for long
        is taken off (told again), one back is unmarked. A registry another croft holds waits a round."""
        try:
            notes = registry.prune(now, lock_timeout=2.0, entries=listed)
        except CroftError as exc:
            if exc.code != "DB_BUSY":
                raise
            return
        for message in notes:
            self.say(message)
        for root in registry.dropped:
            dropped(root, now, SOURCE)

    def _keep_note(self) -> None:
        """serve.json says which croft serve is alive (doctor reads it): put it back if it is lost or
        garbled while this one runs."""
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
            self.tick_once()
            until = time.monotonic() + interval
            while not stop.is_set():
                self.follow()
                left = until - time.monotonic()
                if left <= 0:
                    break
                stop.wait(min(left, FOLLOW_EVERY_S) if self.follower is not None else left)


def serve(
    on_start: Callable[[str], None] | None = None, echo: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run until SIGTERM or Ctrl-C; returns counts for the envelope. ``echo``: each line the tick log gains
    meanwhile (serve's own and its ticks')."""
    knobs.require_all()  # every tick serve starts gets its knobs: a bad one stops serve before it starts
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
        on_start(f"croft serve: ticking this user's serve projects every {interval:g} s; Ctrl-C stops.")
    try:
        server.run(stop, interval)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        serve_path(server.home).unlink(missing_ok=True)
        server.say("stops")
        server.follow()
        for child in server.children.values():
            child.poll()
            if child.returncode is None:
                child.returncode = 0  # detached: it finishes on its own, nobody waits here
    return {"ticks": server.ticks, "started": server.started, "intervalMs": int(interval * 1000)}


def serve_path(home: Path | None = None) -> Path:
    """``<CROFT_HOME>/serve.json``: the live croft serve (pid + start time, so a recycled pid is not taken for it)."""
    return (home or croft_home()) / "serve.json"


def write_serve(home: Path | None = None) -> None:
    write_atomic(serve_path(home), current().to_dict())


def serve_alive(home: Path | None = None) -> bool:
    note = read_object(serve_path(home))
    if not note or not isinstance(note.get("pid"), int):
        return False
    who = ProcessIdentity(pid=note["pid"], start=note.get("procStart"), boot=note.get("bootId"))
    return is_alive(who)
