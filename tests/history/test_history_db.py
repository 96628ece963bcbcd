"""runs.sqlite: opening, pragmas, migrations, the newer-format refusal, transactions and error translation."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from croft.core.problems import CODES, CroftError
from croft.history import db, migrations
from croft.history.db import (
    SCHEMA_VERSION,
    SQLITE_CLASS_CODES,
    immediate,
    migrate,
    open_history,
    open_memory,
    problem_for_sqlite_error,
    translate_sqlite_errors,
)
from croft.history.migrations import MIGRATIONS, applied, pending, user_version


@pytest.fixture
def opened() -> Iterator[list[sqlite3.Connection]]:
    """Collects connections a test opens and closes every one of them afterwards."""
    conns: list[sqlite3.Connection] = []
    yield conns
    for conn in conns:
        conn.close()


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def raw_file(path: Path, version: int) -> None:
    """A SQLite file written by 'someone else' with the given user_version."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO runs VALUES ('r_0101_0000_abcd')")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()


# -- opening and migrating -------------------------------------------------------------------------------


def test_open_history_creates_the_state_folder_and_migrates_an_empty_file(tmp_path, opened, monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:00:00Z")
    state = tmp_path / "proj" / ".croft"
    conn = open_history(state)
    opened.append(conn)
    assert (state / "runs.sqlite").is_file()
    assert user_version(conn) == SCHEMA_VERSION == len(MIGRATIONS) >= 2
    assert {"runs", "steps", "leases", "catalog", "schedule_state", "tick", "settings"} <= tables(conn)
    names = [m["name"] for m in applied(conn)]
    assert names[:2] == ["m001_core_tables", "m002_settings"]
    assert names == [m.__name__ for m in MIGRATIONS]
    assert {m["applied_at"] for m in applied(conn)} == {"2026-03-08T09:00:00.000Z"}
    assert pending(conn) == []


def test_open_history_sets_wal_busy_timeout_autocommit_and_named_rows(tmp_path, opened):
    conn = open_history(tmp_path)
    opened.append(conn)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 0
    assert conn.isolation_level is None
    assert not conn.in_transaction
    assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1


def test_a_zero_byte_file_is_migrated_like_a_missing_one(tmp_path, opened):
    (tmp_path / "runs.sqlite").write_bytes(b"")
    conn = open_history(tmp_path)
    opened.append(conn)
    assert user_version(conn) == SCHEMA_VERSION


def test_reopening_applies_no_migration_twice(tmp_path, opened, monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:00:00Z")
    open_history(tmp_path).close()
    monkeypatch.setenv("CROFT_NOW", "2026-03-09T09:00:00Z")
    conn = open_history(tmp_path)
    opened.append(conn)
    assert migrate(conn) == []
    assert [(m["version"], m["applied_at"]) for m in applied(conn)] == [
        (version, "2026-03-08T09:00:00.000Z") for version in range(1, len(MIGRATIONS) + 1)
    ]


def test_an_older_file_gets_only_the_migrations_it_lacks(opened):
    conn = open_memory(MIGRATIONS[:1])
    opened.append(conn)
    assert "settings" not in tables(conn)
    assert pending(conn)[0] == migrations.m002_settings
    assert pending(conn) == list(MIGRATIONS[1:])
    assert migrate(conn) == [m.__name__ for m in MIGRATIONS[1:]]
    assert "settings" in tables(conn)
    assert [m["version"] for m in applied(conn)] == list(range(1, len(MIGRATIONS) + 1))


def test_a_migration_another_process_applied_meanwhile_is_not_applied_again(tmp_path, opened, monkeypatch):
    late = db.connect(tmp_path / "runs.sqlite")
    opened.append(late)
    open_history(tmp_path).close()  # the other process wins the race
    # `late` had already seen every migration as pending before it took the write lock.
    monkeypatch.setattr(db, "pending", lambda conn, steps: list(steps))
    assert migrate(late) == []
    assert [m["version"] for m in applied(late)] == list(range(1, len(MIGRATIONS) + 1))


def test_listing_migrations_only_reads(tmp_path, opened):
    open_history(tmp_path).close()
    conn = sqlite3.connect(f"file:{tmp_path / 'runs.sqlite'}?mode=ro", uri=True)
    opened.append(conn)
    assert pending(conn) == []
    names = [m["name"] for m in applied(conn)]
    assert names[:2] == ["m001_core_tables", "m002_settings"]
    assert names == [m.__name__ for m in MIGRATIONS]


def m003_broken(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE half_done (x)")
    conn.execute("INSERT INTO no_such_table VALUES (1)")


def m003_raises(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE half_done (x)")
    raise ValueError("migration bug")


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        pytest.param(m003_broken, CroftError, id="sql-error"),
        pytest.param(m003_raises, ValueError, id="python-error"),
    ],
)
def test_a_failing_migration_rolls_back_and_stays_pending(opened, broken, expected):
    conn = open_memory()
    opened.append(conn)
    steps = (*MIGRATIONS, broken)
    with pytest.raises(expected):
        migrate(conn, steps)
    assert user_version(conn) == len(MIGRATIONS)
    assert "half_done" not in tables(conn)
    assert pending(conn, steps) == [broken]
    names = [m["name"] for m in applied(conn)]
    assert names[:2] == ["m001_core_tables", "m002_settings"]
    assert names == [m.__name__ for m in MIGRATIONS]
    assert not conn.in_transaction

    def m003_fixed(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")

    assert migrate(conn, (*MIGRATIONS, m003_fixed)) == ["m003_fixed"]
    assert "half_done" in tables(conn)


def test_a_failing_first_migration_leaves_an_empty_file(tmp_path, opened):
    conn = db.connect(tmp_path / "runs.sqlite")
    opened.append(conn)

    def m001_broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE runs (id)")
        conn.execute("SELECT * FROM nowhere")

    with pytest.raises(CroftError):
        migrate(conn, (m001_broken,))
    assert user_version(conn) == 0
    assert tables(conn) == set()


# -- refusing what we cannot read ------------------------------------------------------------------------


def test_a_newer_format_is_refused_and_left_byte_for_byte_unchanged(tmp_path):
    path = tmp_path / "runs.sqlite"
    raw_file(path, SCHEMA_VERSION + 1)
    before = path.read_bytes()
    with pytest.raises(CroftError) as caught:
        open_history(tmp_path)
    problem = caught.value.problem
    assert problem.code == "HISTORY_TOO_NEW"
    assert str(path) in problem.message
    assert str(SCHEMA_VERSION + 1) in problem.message and str(SCHEMA_VERSION) in problem.message
    assert "pip install -U" in problem.hint
    assert (
        problem.fix is None
    )  # croft is installed from a checkout: no command it could name works everywhere
    assert problem.details == {"file": str(path), "version": SCHEMA_VERSION + 1, "supported": SCHEMA_VERSION}
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.sqlite"]


def test_a_file_at_the_current_version_is_opened_not_refused(tmp_path, opened):
    open_history(tmp_path).close()
    conn = open_history(tmp_path)
    opened.append(conn)
    assert user_version(conn) == SCHEMA_VERSION


def test_migrate_refuses_a_newer_format_too(opened):
    conn = open_memory()
    opened.append(conn)
    with pytest.raises(CroftError) as caught:
        migrate(conn, MIGRATIONS[:1])
    assert caught.value.code == "HISTORY_TOO_NEW"


def test_a_file_that_is_not_sqlite_is_refused_with_a_move_aside_fix(tmp_path):
    path = tmp_path / "runs.sqlite"
    path.write_text("these are my notes, not a database\n" * 200)
    before = path.read_bytes()
    with pytest.raises(CroftError) as caught:
        open_history(tmp_path)
    problem = caught.value.problem
    assert problem.code == "HISTORY_CORRUPT"
    assert str(path) in problem.message
    assert problem.fix is not None and problem.fix["kind"] == "command"
    assert problem.fix["command"] == f"mv {path} {path}.broken"
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    assert path.read_bytes() == before


def test_an_unwritable_state_folder_is_path_unwritable_naming_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CroftError) as caught:
        open_history(blocker / ".croft")
    assert caught.value.code == "PATH_UNWRITABLE"  # the user's path, not a bug in croft
    assert str(blocker / ".croft") in caught.value.problem.message


# -- transactions ----------------------------------------------------------------------------------------


def test_immediate_commits_when_the_body_ends(opened):
    conn = open_memory()
    opened.append(conn)
    with immediate(conn) as same:
        assert same is conn and conn.in_transaction
        conn.execute("INSERT INTO settings VALUES ('a', '1')")
    assert not conn.in_transaction
    assert conn.execute("SELECT value FROM settings").fetchone()[0] == "1"


def test_immediate_rolls_back_when_the_body_raises(opened):
    conn = open_memory()
    opened.append(conn)
    with pytest.raises(KeyError), immediate(conn):
        conn.execute("INSERT INTO settings VALUES ('a', '1')")
        raise KeyError("boom")
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM settings").fetchone()[0] == 0


def test_nested_immediate_undoes_only_the_inner_part(opened):
    conn = open_memory()
    opened.append(conn)
    with immediate(conn):
        conn.execute("INSERT INTO settings VALUES ('outer', '1')")
        with pytest.raises(KeyError), immediate(conn):
            conn.execute("INSERT INTO settings VALUES ('inner', '1')")
            raise KeyError("boom")
        with immediate(conn):
            conn.execute("INSERT INTO settings VALUES ('kept', '1')")
    assert [r[0] for r in conn.execute("SELECT key FROM settings ORDER BY key")] == ["kept", "outer"]


def test_immediate_takes_the_write_lock_up_front(tmp_path, opened):
    first = open_history(tmp_path)
    second = db.connect(tmp_path / "runs.sqlite")
    second.execute("PRAGMA busy_timeout = 0")
    opened += [first, second]
    with immediate(first):
        with pytest.raises(CroftError) as caught, immediate(second, "saving a test row"):
            pass  # pragma: no cover - BEGIN IMMEDIATE itself must fail
        assert caught.value.code == "DB_BUSY"
        assert caught.value.retryable is True
        assert caught.value.problem.message.startswith("saving a test row: ")
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert not second.in_transaction


# -- sqlite3 errors become CroftErrors at this one boundary ----------------------------------------------


def sqlite3_exception_classes() -> list[type[BaseException]]:
    return sorted(
        (v for v in vars(sqlite3).values() if isinstance(v, type) and issubclass(v, BaseException)),
        key=lambda c: c.__name__,
    )


def test_the_mapping_lists_exactly_sqlite3s_exception_classes():
    assert set(sqlite3_exception_classes()) == set(SQLITE_CLASS_CODES)


@pytest.mark.parametrize("cls", sqlite3_exception_classes(), ids=lambda c: c.__name__)
def test_every_sqlite3_exception_class_becomes_a_registered_croft_error(cls):
    original = cls("something went wrong")
    with pytest.raises(CroftError) as caught, translate_sqlite_errors("reading runs"):
        raise original
    assert caught.value.code == SQLITE_CLASS_CODES[cls]
    assert caught.value.code in CODES
    assert caught.value.__cause__ is original
    assert caught.value.problem.message.startswith("reading runs: ")


def with_result_code(exc: sqlite3.Error, code: int) -> sqlite3.Error:
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(
    ("exc", "code", "retryable"),
    [
        pytest.param(
            with_result_code(sqlite3.OperationalError("locked"), sqlite3.SQLITE_BUSY),
            "DB_BUSY",
            True,
            id="busy",
        ),
        pytest.param(
            with_result_code(sqlite3.OperationalError("x"), sqlite3.SQLITE_BUSY_SNAPSHOT),
            "DB_BUSY",
            True,
            id="busy-ext",
        ),
        pytest.param(
            with_result_code(sqlite3.OperationalError("x"), sqlite3.SQLITE_LOCKED),
            "DB_BUSY",
            True,
            id="locked",
        ),
        pytest.param(
            with_result_code(sqlite3.DatabaseError("malformed"), sqlite3.SQLITE_CORRUPT),
            "HISTORY_CORRUPT",
            False,
            id="corrupt",
        ),
        pytest.param(
            with_result_code(sqlite3.DatabaseError("x"), sqlite3.SQLITE_NOTADB),
            "HISTORY_CORRUPT",
            False,
            id="notadb",
        ),
        pytest.param(
            with_result_code(sqlite3.OperationalError("disk"), sqlite3.SQLITE_FULL),
            "DISK_FULL",
            False,
            id="full",
        ),
        pytest.param(
            with_result_code(sqlite3.IntegrityError("dup"), sqlite3.SQLITE_CONSTRAINT),
            "INTERNAL_ERROR",
            False,
            id="constraint",
        ),
        pytest.param(
            sqlite3.OperationalError("database is locked"), "INTERNAL_ERROR", False, id="text-is-not-read"
        ),
    ],
)
def test_the_result_code_picks_the_problem_and_whether_to_retry(exc, code, retryable):
    problem = problem_for_sqlite_error(exc, "doing a thing", Path("/p/.croft/runs.sqlite"))
    assert (problem.code, problem.retryable) == (code, retryable)


def test_non_sqlite_errors_pass_through_untouched():
    with pytest.raises(KeyError), translate_sqlite_errors("reading runs"):
        raise KeyError("x")
