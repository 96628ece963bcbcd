"""``croft preview ASSET --watch``: preview again each time the asset, a local module it imports or an input
table changes, so writing an ingest is save-and-look.

Each preview is a fresh ``croft preview`` process: an edited ``lib/`` module is never served from a module
cache, and whatever the asset leaves behind (threads, globals) ends with its process. Whether to preview
again is decided by a signature (file stat data and each input table's row count and newest stamp), so
watchdog's events only wake the loop early; a two-second poll catches anything they miss.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import click
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from croft.core.children import croft_argv
from croft.core.clock import now
from croft.core.result import Result
from croft.core.suggest import unknown_asset
from croft.engine.peek import table_versions
from croft.project.config import Project
from croft.project.discovery import discover
from croft.project.fingerprint import import_closure

__all__ = ["Targets", "signature", "targets", "watch"]

POLL_SECONDS = 2.0

Targets = tuple[tuple[Path, ...], tuple[str, ...]]


def targets(project: Project, asset: str) -> Targets | None:
    """(files whose change re-runs the preview, input tables), or None when the asset is not there now."""

    facts = discover(project)[0].get(asset)
    if facts is None:
        return None
    files = [facts.path]
    if facts.path.suffix == ".py":
        # a file mid-edit that does not parse: its own stat is enough until it parses again
        with suppress(OSError, SyntaxError, ValueError):
            files.extend(import_closure(project.root, facts.path).local)
    return tuple(dict.fromkeys(files)), tuple(facts.inputs)


def signature(project: Project, found: Targets | None) -> tuple[Any, ...]:
    """What, when it differs, means the preview's answer may have changed."""
    if found is None:
        return ("missing",)
    files, inputs = found
    stats: list[Any] = []
    for path in files:
        try:
            st = path.stat()
            stats.append((str(path), st.st_mtime_ns, st.st_size))
        except OSError:
            stats.append((str(path), None))
    return (tuple(stats), table_versions(project.config.database, inputs))


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a supervisor, `kill`) ends the watch the way Ctrl-C does."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _preview(project: Project, asset: str, as_json: bool) -> subprocess.Popen[bytes]:
    argv = croft_argv("preview", asset, "--project", str(project.root))
    return subprocess.Popen([*argv, "--json"] if as_json else argv)


def _stop(child: subprocess.Popen[bytes] | None) -> None:
    """Ctrl-C reaches a terminal's whole process group; a plain SIGINT to us is passed on."""
    if child is None or child.poll() is not None:
        return
    child.send_signal(signal.SIGINT)
    try:
        child.wait(timeout=15)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def watch(project: Project, asset: str, as_json: bool) -> Result:

    known = discover(project)[0]
    if asset not in known:
        raise unknown_asset(asset, known, "preview --watch")  # its fix watches the close name, never writes

    woken = threading.Event()
    state_dir = str(project.config.state_dir)

    class Wake(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if not str(event.src_path).startswith(state_dir):
                woken.set()

    observer = Observer()
    observer.schedule(Wake(), str(project.root), recursive=True)
    observer.daemon = True
    observer.start()
    child: subprocess.Popen[bytes] | None = None
    previews = 0
    seen: tuple[Any, ...] | None = None
    try:
        with _sigterm_as_interrupt():
            while True:
                current = signature(project, targets(project, asset))
                if current != seen:
                    seen = current
                    if not as_json:
                        at = now().astimezone(ZoneInfo(project.config.timezone)).strftime("%H:%M:%S")
                        click.echo(f"── {at} preview {previews + 1} of {asset}")
                    sys.stdout.flush()
                    child = _preview(project, asset, as_json)
                    code = child.wait()
                    child = None
                    previews += 1
                    if code == 130:
                        raise KeyboardInterrupt
                    if not as_json:
                        click.echo(f"── watching {asset} for changes (Ctrl-C ends)")
                    sys.stdout.flush()
                woken.wait(POLL_SECONDS)
                woken.clear()
    except KeyboardInterrupt:
        _stop(child)
    finally:
        observer.stop()
        observer.join(timeout=5)
    return Result(data={"asset": asset, "previews": previews, "stopped": "interrupted"}, exit=130)
