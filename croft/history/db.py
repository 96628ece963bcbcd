"""Opening runs.sqlite: the one module that makes connections, sets pragmas, applies migrations, opens
write transactions and turns sqlite3's exceptions into CroftErrors.

The history is shared by every croft process of a project (runs, ticks, `status`), so it runs in WAL
mode with a 5 s busy timeout, and every write goes through ``immediate`` (BEGIN IMMEDIATE takes the
write lock up front, so two writers queue instead of deadlocking on a lock upgrade). A database written
by a newer croft is refused before anything is written to it.
"""

from __future__ import annotations

import itertools
import shlex
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from croft.core import sqlitefile
from croft.core.clock import now, to_iso
from croft.core.private import create_file, make_dirs
from croft.core.problems import CroftError, Problem, problem
from croft.history.migrations import MIGRATIONS, SCHEMA_VERSION, Migration, pending, user_version

__all__ = [
    "BUSY_TIMEOUT_MS",
    "HISTORY_FILE",
    "SCHEMA_VERSION",
    "connect",
    "history_path",
    "immediate",
    "migrate",
    "open_history",
    "open_memory",
    "problem_for_sqlite_error",
    "refuse_newer",
    "translate_sqlite_errors",
]

HISTORY_FILE = "runs.sqlite"
BUSY_TIMEOUT_MS = 5000

# sqlite3's classes -> our code when the error carries no telling result code. The most specific class in
# the exception's MRO wins. A bare DatabaseError is what SQLite raises for a file it cannot read as a
# database; the other classes are croft's own mistakes or the machine's (disk, permissions).
SQLITE_CLASS_CODES: dict[type[BaseException], str] = {
    sqlite3.Warning: "INTERNAL_ERROR",
    sqlite3.Error: "INTERNAL_ERROR",
    sqlite3.InterfaceError: "INTERNAL_ERROR",
    sqlite3.DatabaseError: "HISTORY_CORRUPT",
    sqlite3.DataError: "INTERNAL_ERROR",
    sqlite3.OperationalError: "INTERNAL_ERROR",
    sqlite3.IntegrityError: "INTERNAL_ERROR",
    sqlite3.InternalError: "INTERNAL_ERROR",
    sqlite3.ProgrammingError: "INTERNAL_ERROR",
    sqlite3.NotSupportedError: "INTERNAL_ERROR",
}

# SQLite's primary result codes that decide the code whatever the class. Only "busy" is worth retrying:
# another croft holds the write lock and will let go.
SQLITE_RESULT_CODES: dict[int, tuple[str, bool]] = {
    sqlite3.SQLITE_BUSY: ("DB_BUSY", True),
    sqlite3.SQLITE_LOCKED: ("DB_BUSY", True),
    sqlite3.SQLITE_CORRUPT: ("HISTORY_CORRUPT", False),
    sqlite3.SQLITE_NOTADB: ("HISTORY_CORRUPT", False),
}

_savepoints = itertools.count(1)


def history_path(state_dir: Path) -> Path:
    return Path(state_dir) / HISTORY_FILE


def _move_aside_fix(path: Path) -> dict[str, object]:

    aside = path.with_name(path.name + ".broken")
    return {
        "kind": "command",
        "description": "move the damaged history aside; croft then starts a new, empty one",
        "command": f"mv {shlex.quote(str(path))} {shlex.quote(str(aside))}",
    }


def problem_for_sqlite_error(exc: BaseException, what: str, path: Path | None = None) -> Problem:
    """The Problem for one sqlite3 exception met while doing ``what`` (by class and result code, never by
    message; the machine's refusals, a full or read-only disk, are ``sqlitefile.machine_problem``'s)."""
    machine = sqlitefile.machine_problem(exc, what, path)
    if machine is not None:
        return machine
    classes = [k for k in type(exc).__mro__ if k in SQLITE_CLASS_CODES]
    code = SQLITE_CLASS_CODES[classes[0]] if classes else "INTERNAL_ERROR"
    retryable = False
    result_code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(result_code, int) and (result_code & 0xFF) in SQLITE_RESULT_CODES:
        code, retryable = SQLITE_RESULT_CODES[result_code & 0xFF]
    where = str(path) if path else "the run history (runs.sqlite)"
    if code == "DB_BUSY":
        return problem(
            "DB_BUSY",
            f"{what}: {where} stayed locked by another croft process"
            f" for more than {BUSY_TIMEOUT_MS // 1000} s",
            "Another croft command or run is writing its history; try again in a moment.",
            retryable=retryable,
            details={"sqlite": str(exc)},
        )
    if code == "HISTORY_CORRUPT":
        return problem(
            "HISTORY_CORRUPT",
            f"{what}: {where} is not a readable croft history database ({exc})",
            "Move the file aside; croft then starts an empty history (run records are lost, the data in"
            " the warehouse is not).",
            fix=_move_aside_fix(path) if path else None,
            details={"sqlite": str(exc)} | ({"file": str(path)} if path else {}),
        )
    return problem(
        "INTERNAL_ERROR",
        f"{what}: the run history failed with {type(exc).__name__}: {exc}",
        "Check that the state folder is writable and the disk is not full; if it keeps happening,"
        " it is a bug in croft: please report it with this message.",
        details={"sqlite": str(exc), "class": type(exc).__name__},
    )


@contextmanager
def translate_sqlite_errors(
    what: str, *, path: Path | None = None, conn: sqlite3.Connection | None = None
) -> Iterator[None]:
    """Turn any sqlite3 exception raised inside into a CroftError (raised ``from`` the original), naming
    ``path`` (or the file ``conn`` has open, asked only when something failed).

    Also usable as a decorator: ``@translate_sqlite_errors("reading runs")``.
    """
    try:
        yield
    except (sqlite3.Error, sqlite3.Warning) as exc:
        where = path if path is not None or conn is None else _file_of(conn)
        raise CroftError(problem_for_sqlite_error(exc, what, where)) from exc


def _file_of(conn: sqlite3.Connection) -> Path | None:
    """The file a connection has open (no page is read: it works on a full disk too), or None."""
    try:
        row = conn.execute("PRAGMA database_list").fetchone()
    except sqlite3.Error:
        return None
    return Path(row[2]) if row and row[2] else None


def connect(target: Path | str) -> sqlite3.Connection:
    """A connection in autocommit mode (we open transactions ourselves) with rows addressable by name."""
    conn = sqlitefile.connect(target, "create", timeout=BUSY_TIMEOUT_MS / 1000)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = OFF")
    return conn


def open_readonly(state_dir: Path) -> sqlite3.Connection | None:
    """runs.sqlite for reading only, never created or migrated (status views); None when there is none."""
    path = Path(state_dir) / "runs.sqlite"
    if not path.is_file():
        return None
    conn = sqlitefile.connect(path, "read", timeout=5.0)
    conn.row_factory = sqlite3.Row
    return conn


def refuse_newer(conn: sqlite3.Connection, path: Path | None, supported: int = SCHEMA_VERSION) -> None:
    """Raise HISTORY_TOO_NEW when the file's schema is newer than this croft knows; reads only."""
    found = user_version(conn)
    if found <= supported:
        return
    where = str(path) if path else "the run history"
    raise CroftError(
        "HISTORY_TOO_NEW",
        f"{where} has schema version {found}, but this croft understands only up to version {supported}",
        "A newer croft wrote this history: install that croft into this environment (`python -m pip install -U"
        " <the croft checkout it came from>`) or use the environment that has it. croft left the file untouched.",
        details={"file": where, "version": found, "supported": supported},
    )


@contextmanager
def immediate(
    conn: sqlite3.Connection, what: str = "writing the run history"
) -> Iterator[sqlite3.Connection]:
    """One write transaction: BEGIN IMMEDIATE ... COMMIT, or ROLLBACK when the body raises.

    Inside an open transaction it nests as a SAVEPOINT, so helpers that write can be combined by a
    caller into one atomic step (the tick records a fire, an attempt and a spawned note together).
    """
    if conn.in_transaction:
        name = f"croft_{next(_savepoints)}"
        with translate_sqlite_errors(what, conn=conn):
            conn.execute(f"SAVEPOINT {name}")
        try:
            with translate_sqlite_errors(what, conn=conn):
                yield conn
        except BaseException:
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
            raise
        with translate_sqlite_errors(what, conn=conn):
            conn.execute(f"RELEASE {name}")
        return
    with translate_sqlite_errors(what, conn=conn):
        conn.execute("BEGIN IMMEDIATE")
    try:
        with translate_sqlite_errors(what, conn=conn):
            yield conn
            conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite rolls some failures back by itself (busy, full disk); a second ROLLBACK would then fail
    # and hide the real error.
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def migrate(
    conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS, *, path: Path | None = None
) -> list[str]:
    """Apply the pending migrations, each in its own transaction with its record; return their names.

    The version is read again inside each transaction, so two processes opening a fresh file at once
    apply every migration exactly once.
    """
    with translate_sqlite_errors("upgrading the run history", path=path):
        refuse_newer(conn, path, len(migrations))
        if not pending(conn, migrations):
            return []
    done: list[str] = []
    for version, step in enumerate(migrations, start=1):
        with immediate(conn, f"applying history migration {step.__name__}"):
            current = user_version(conn)
            if current >= version:
                continue
            assert current == version - 1, f"migration {version} met schema version {current}"
            step(conn)
            conn.execute(
                "INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, step.__name__, to_iso(now())),
            )
            conn.execute(f"PRAGMA user_version = {int(version)}")
            done.append(step.__name__)
    return done


def open_history(state_dir: Path) -> sqlite3.Connection:
    """Open (creating if needed) ``state_dir/runs.sqlite``, current and ready for readers and writers."""
    state_dir = Path(state_dir)
    path = history_path(state_dir)
    try:
        make_dirs(state_dir)  # 0700: step logs, and settings naming webhook and ping URLs
        create_file(path)  # 0600 before SQLite makes it (its -wal and -shm then take the same mode)
    except OSError as exc:
        raise CroftError(
            "PATH_UNWRITABLE",
            f"cannot create the state folder {state_dir}: {exc.strerror or exc}",
            "Check the folder's permissions, or point croft.json's stateDir at a writable folder.",
        ) from exc
    with translate_sqlite_errors(f"opening {path}", path=path):
        conn = connect(path)
    try:
        with translate_sqlite_errors(f"opening {path}", path=path):
            # Check before the first write: switching to WAL rewrites the header of the file.
            refuse_newer(conn, path)
            conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn, path=path)
    except BaseException:
        conn.close()
        raise
    return conn


def open_memory(migrations: Sequence[Migration] = MIGRATIONS) -> sqlite3.Connection:
    """A migrated in-memory history, for tests and throwaway planning."""
    conn = connect(":memory:")
    try:
        migrate(conn, migrations)
    except BaseException:
        conn.close()
        raise
    return conn
