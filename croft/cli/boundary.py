"""The last-resort error boundary around every ``croft`` invocation.

Whatever escapes a command ends here: a ``CroftError`` becomes its envelope (or its problem lines), Ctrl-C
becomes ``INTERRUPTED`` (exit 130), and anything else is ``INTERNAL_ERROR`` with the traceback written to a
crash file whose path the message gives (``CROFT_DEBUG=1`` prints it inline too). Under ``--json`` stdout
holds exactly one envelope whatever happened.

The guard around every invocation (``cli.lastresort``) loads this module only when something escaped, so
a command that succeeds loads no crash-file writing (tempfile, traceback, the disk's problems). It
imports no click: it answers for the minute gate's ``tick --all`` too.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from croft.cli.problemtext import problem_lines
from croft.core import disk, knobs
from croft.core.envelope import dumps, envelope
from croft.core.paths import project_state_dir
from croft.core.private import write_new
from croft.core.problems import CroftError, Stopped, exit_code_for, problem
from croft.core.sqlitefile import machine_problem as sqlite_machine

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from croft.core.problems import Problem

__all__ = ["crash_folder", "fail", "failed", "temp_crash_folder", "wants_json"]


def wants_json(args: Sequence[str]) -> bool:
    """``--json`` anywhere before a ``--`` separator: the caller asked for one envelope on stdout."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def fail(
    problems: list[Problem], as_json: bool, exit_code: int | None = None, data: dict[str, Any] | None = None
) -> int:
    """Print a failure (envelope on stdout, or problem lines on stderr); return its exit code."""

    code = exit_code if exit_code is not None else (exit_code_for(problems) or 1)
    if as_json:
        _write(sys.stdout, dumps(envelope(False, data, [p.to_dict() for p in problems])))
    else:
        _write(sys.stderr, "\n".join(problem_lines(problems)))
    return code


def _write(stream: Any, text: str) -> None:
    """Write a line even when the text holds surrogates from a non-UTF-8 path (they are shown escaped)."""
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:
        stream.write(text.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")
    stream.flush()


def crash_folder(args: Sequence[str]) -> Path:
    """Where a crash file goes: the project's state folder when croft runs in one, else the user cache
    (``temp_crash_folder`` when neither can be written).

    The project is found cheaply (``--project`` or a ``croft.json`` at or above the working folder) and its
    ``stateDir`` is read only if croft.json still parses, since reading it may be what crashed.
    """

    root = _project_root(args)
    if root is not None:
        return project_state_dir(root) / "crashes"
    cache = os.environ.get("XDG_CACHE_HOME")
    if cache:
        base = Path(cache)
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path.home() / ".cache"
    return base / "croft" / "crashes"


def _project_root(args: Sequence[str]) -> Path | None:

    start: Path | None = None
    for i, arg in enumerate(args):
        if arg == "--project" and i + 1 < len(args):
            start = Path(args[i + 1])
        elif arg.startswith("--project="):
            start = Path(arg.split("=", 1)[1])
    try:
        here = (start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / "croft.json").is_file():
                return folder
    except (OSError, RuntimeError):
        return None
    return None


def _crash_file(exc: BaseException, args: Sequence[str], text: str) -> Path | None:
    """Write the traceback; on failure try this user's own temporary folder, and if that is taken (another
    user made it first, or a link stands there) a new one of a unique name; None when nothing could be
    written. Each file is new, 0600, in a folder of this user's that no one else can write, and no link is
    followed on the way (``core.private.write_new``): a crash of root's must not land where another user
    pointed it."""

    name = f"crash-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}.txt"
    header = f"croft {' '.join(args)}\n{type(exc).__name__}\n\n"
    data = (header + text).encode("utf-8", "backslashreplace")
    for folder in (crash_folder(args), temp_crash_folder(), None):
        try:
            if folder is None:  # made here, 0700, under a name no one could have prepared
                folder = Path(tempfile.mkdtemp(prefix=f"{temp_crash_folder().name}-"))
            write_new(folder, name, data)
            return folder / name
        except OSError:
            continue
    return None


def temp_crash_folder() -> Path:
    """The last resort: ``$TMPDIR/croft-crashes-<uid>``, one per user, since the temporary folder is shared."""

    return Path(tempfile.gettempdir()) / f"croft-crashes-{os.geteuid()}"


def _redact(args: Sequence[str]) -> Callable[[str], str]:
    """Hide the project's .env values from what a crash writes or prints (identity when there is none)."""
    root = _project_root(args)
    if root is None:
        return lambda text: text
    try:
        from croft.core.redact import Redactor
        from croft.project.env import read_dotenv

        env = read_dotenv(root / ".env")
        return Redactor({name: os.environ.get(name, value) for name, value in env.items()}).text
    except Exception:
        return lambda text: text


def internal_error(exc: BaseException, args: Sequence[str]) -> Problem:
    """The INTERNAL_ERROR for an exception croft did not expect, with its traceback saved (and shown)."""

    redact = _redact(args)
    text = redact("".join(traceback.format_exception(exc)))
    path = _crash_file(exc, [redact(a) for a in args], text)
    if _debug():
        _write(sys.stderr, text.rstrip())
    where = f"the traceback is in {path}" if path else "no crash file could be written"
    summary = redact(str(exc).splitlines()[0][:200]) if str(exc) else ""
    return problem(
        "INTERNAL_ERROR",
        f"croft failed unexpectedly ({type(exc).__name__}{': ' + summary if summary else ''}); {where}",
        "This is a bug in croft: please report it with that file. Set CROFT_DEBUG=1 to see the traceback here.",
        details={"exception": type(exc).__name__, **({"crashFile": str(path)} if path else {})},
    )


def _debug() -> bool:
    """``CROFT_DEBUG``; a bad value must not hide the error being reported, so it reads as off here."""

    try:
        return bool(knobs.value("CROFT_DEBUG"))
    except CroftError:
        return False


def interrupted() -> Problem:

    return problem(
        "INTERRUPTED",
        "croft was interrupted before it finished",
        "Nothing half-written was kept; run the command again when you are ready.",
    )


def failed(exc: BaseException, args: list[str]) -> int:
    """Say what escaped, in the shape the caller asked for; return the exit code."""

    as_json = wants_json(args)
    if isinstance(exc, CroftError):
        return fail([exc.problem, *exc.extra], as_json)
    if isinstance(exc, KeyboardInterrupt):
        return fail([interrupted()], as_json, 130)
    if isinstance(exc, Stopped):
        return fail([exc.problem], as_json, 130, exc.data)
    if isinstance(exc, BrokenPipeError):
        # The reader went away (``croft logs | head``): nothing left to tell it.
        _quiet_stdout()
        return 1
    machine = machine_problem(exc, args)
    if machine is not None:  # a full or read-only disk is the machine's, not a bug: no crash file
        return fail([machine], as_json)
    return fail([internal_error(exc, args)], as_json)


def machine_problem(exc: BaseException, args: Sequence[str]) -> Problem | None:
    """DISK_FULL or PATH_UNWRITABLE for an error of the machine that no command turned into a problem
    itself (an OSError of a full or read-only disk, or SQLite's word for one), naming the file when the
    error does, else the folder that is full or read-only."""

    state = crash_folder(args).parent if _project_root(args) is not None else None
    guess = disk.guess_folder([state] if state is not None else [])
    found = disk.os_problem(exc, path=guess)
    if found is not None:
        return found

    inner: BaseException | None = exc
    for _ in range(10):
        if inner is None:
            break
        if isinstance(inner, sqlite3.Error):
            return sqlite_machine(inner, "croft could not use a database", guess)
        inner = inner.__cause__ or inner.__context__
    return None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
