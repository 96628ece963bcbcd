"""Every command over a table of bad inputs, as real processes: one envelope, registered codes, no traceback.

Each case lays out its own folder, then runs ``croft ARGS`` twice: with ``--json`` (stdout is exactly one
envelope with ``ok`` false, each problem's code is registered, the exit code is the one the case means,
stderr holds no traceback) and without (no traceback anywhere, the code on stderr).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from croft.core.problems import CODES

pytestmark = pytest.mark.processes

GOOD_INGEST = """\
from croft import ingest


@ingest(key="id")
def rows(ctx):
    yield {"id": 1}
"""


def project(tmp: Path, **files: str | bytes) -> Path:
    root = tmp / "proj"
    (root / "assets").mkdir(parents=True)
    (root / "croft.json").write_text('{"timezone": "UTC"}\n')
    (root / "assets" / "items.py").write_text(GOOD_INGEST)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def plain(tmp: Path) -> Path:
    folder = tmp / "empty"
    folder.mkdir()
    return folder


def with_config(content: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        return project(tmp, **{"croft.json": content})

    return make


def database_folder(tmp: Path) -> Path:
    root = project(tmp, **{"croft.json": b'{"timezone": "UTC", "database": "data"}'})
    (root / "data").mkdir()
    return root


def env_folder(tmp: Path) -> Path:
    root = project(tmp)
    (root / ".env").mkdir()
    return root


def assets_is_a_file(tmp: Path) -> Path:
    folder = tmp / "new"
    folder.mkdir()
    (folder / "assets").write_text("not a folder")
    return folder


def non_utf8_path(tmp: Path) -> Path:
    folder = Path(os.fsdecode(os.fsencode(str(tmp)) + b"/caf\xe9"))
    folder.mkdir()
    (folder / "croft.json").write_text('{"timezone": "UTC"}\n')
    return folder


def two_runs(tmp: Path) -> Path:
    root = project(tmp)
    for _ in range(2):
        subprocess.run([sys.executable, "-m", "croft", "run"], cwd=root, capture_output=True, check=True)
    return root


@dataclass
class Case:
    id: str
    argv: list[str]
    setup: Callable[[Path], Path]
    codes: set[str]
    exit: int = 2
    env: dict[str, str] = field(default_factory=dict)


FAR = "99999999999999999"  # epoch ms far past the year 9999
CASES = [
    *(
        Case(f"{cmd[0]}-outside-a-project", cmd, plain, {"NOT_A_PROJECT"})
        for cmd in (["validate"], ["run"], ["preview", "items"], ["status"], ["logs"])
    ),
    *(
        Case(
            f"{cmd[0]}-non-utf8-config", cmd, with_config(b'\xff\xfe{"timezone": "UTC"}'), {"CONFIG_INVALID"}
        )
        for cmd in (["validate"], ["run"], ["status"], ["logs"])
    ),
    *(
        Case(
            f"{cmd[0]}-state-dir-unwritable",
            cmd,
            with_config(b'{"timezone": "UTC", "stateDir": "/proc/croft-state"}'),
            {"PATH_UNWRITABLE"},
        )
        for cmd in (["run"], ["status"], ["logs"])
    ),
    Case("run-database-is-a-folder", ["run"], database_folder, {"PATH_UNWRITABLE"}),
    *(  # a 100k-deep croft.json once ended the (idle) tick in a RecursionError
        Case(f"{'-'.join(cmd)}-nested-config", cmd, with_config(b"[" * 100_000), {"CONFIG_INVALID"})
        for cmd in (["validate"], ["tick"], ["status"], ["schedule", "status"], ["run"], ["logs"])
    ),
    # every knob is read by one rule: a bad one is an error naming it, the same from every command
    *(
        Case(f"{cmd[0]}-bad-retry-delays", cmd, project, {"KNOB_INVALID"}, env={"CROFT_RETRY_DELAYS": "soon"})
        for cmd in (["run"], ["tick"], ["tick", "--all"])
    ),
    Case("tick-interval-zero", ["tick"], project, {"KNOB_INVALID"}, env={"CROFT_SERVE_INTERVAL_MS": "0"}),
    Case("run-lease-wait-huge", ["run"], project, {"KNOB_INVALID"}, env={"CROFT_LEASE_WAIT_MS": "1e99"}),
    Case("tick-all-croft-now-bad", ["tick", "--all"], plain, {"CLOCK_INVALID"}, env={"CROFT_NOW": "soonish"}),
    Case("tick-croft-now-bad", ["tick"], project, {"CLOCK_INVALID"}, env={"CROFT_NOW": "soonish"}),
    Case("doctor-croft-home-relative", ["doctor"], plain, {"KNOB_INVALID"}, env={"CROFT_HOME": "rel/home"}),
    Case("run-due-unknown-asset", ["run", "--due", "nosuch"], project, {"UNKNOWN_ASSET"}),
    Case("run-non-utf8-env", ["run"], lambda t: project(t, **{".env": b"KEY=\xff\xfe\n"}), {"ENV_INVALID"}),
    Case("run-env-is-a-folder", ["run"], env_folder, {"ENV_INVALID"}),
    Case("logs-env-is-a-folder", ["logs"], env_folder, {"ENV_INVALID"}),
    Case("init-twice", ["init", "proj"], lambda t: (project(t), t)[1], {"PROJECT_EXISTS"}),
    Case("init-assets-is-a-file", ["init"], assets_is_a_file, {"PATH_UNWRITABLE"}),
    # /proc takes no new folders, for root too: a place where nothing can be written.
    Case("init-unwritable-place", ["init", f"/proc/croft-{os.getpid()}"], plain, {"PATH_UNWRITABLE"}),
    Case("init-bad-zone", ["init", "x", "--timezone", "Mars/Olympus"], plain, {"CONFIG_INVALID"}),
    *(
        Case(f"{cmd[0]}-croft-now-past-9999", cmd, project, {"CLOCK_INVALID"}, env={"CROFT_NOW": FAR})
        for cmd in (["run"], ["status"], ["schedule", "explain", "hourly"])
    ),
    Case(
        "validate-croft-now-past-9999",
        ["validate"],
        lambda t: project(t, **{"assets/hourly.py": GOOD_INGEST.replace('key="id"', 'schedule="hourly"')}),
        {"CLOCK_INVALID"},
        env={"CROFT_NOW": FAR},
    ),
    Case(
        "explain-croft-now-in-year-1",
        ["schedule", "explain", "hourly"],
        plain,
        {"CLOCK_INVALID"},
        env={"CROFT_NOW": "0001-01-01T00:00:00Z"},
    ),
    Case("explain-after-past-9999", ["schedule", "explain", "hourly", "--after", FAR], plain, {"USAGE"}),
    Case("logs-since-past-9999", ["logs", "--since", "99999-01-01"], project, {"USAGE"}),
    Case("run-in-non-utf8-folder", ["run"], non_utf8_path, {"PATH_UNWRITABLE"}),
    Case("run-unknown-option", ["run", "--bogus"], project, {"USAGE"}),
    Case("explain-n-not-a-number", ["schedule", "explain", "hourly", "-n", "abc"], plain, {"USAGE"}),
    Case("status-missing-project-folder", ["status", "--project", "/no/such/folder"], plain, {"USAGE"}),
    Case("unknown-command", ["frobnicate"], plain, {"USAGE"}),
    Case("run-unknown-asset", ["run", "itemz"], project, {"UNKNOWN_ASSET"}),
    Case("preview-unknown-asset", ["preview", "itemz"], project, {"UNKNOWN_ASSET"}),
    Case("logs-unknown-asset", ["logs", "itemz"], project, {"UNKNOWN_ASSET"}),
    Case("logs-unknown-run", ["logs", "r_zzzz"], project, {"USAGE"}),
    Case("logs-ambiguous-run-id", ["logs", "r_"], two_runs, {"USAGE"}),
    Case("docs-unknown-topic", ["docs", "schedulng"], plain, {"USAGE"}),
    Case("explain-bad-schedule", ["schedule", "explain", "every", "5", "dayz"], plain, {"SCHEDULE_INVALID"}),
    Case(
        "validate-bare-transform",
        ["validate"],
        lambda t: project(
            t, **{"assets/t.py": "from croft import transform\n\n@transform\ndef rows(ctx):\n    yield {}\n"}
        ),
        {"ASSET_INVALID"},
    ),
    *(
        Case(
            f"{cmd[0]}-sqlite-name",
            cmd,
            lambda t: project(t, **{"assets/sqlite_x.py": GOOD_INGEST}),
            {"NAME_INVALID"},
        )
        for cmd in (["validate"], ["run"])
    ),
]


def croft(cwd: Path, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "croft", *argv],
        cwd=cwd,
        env={**os.environ, "CROFT_RETRY_DELAYS": "0", **env},
        capture_output=True,
        timeout=60,
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_json_mode_prints_one_envelope_with_registered_codes_and_no_traceback(case: Case, tmp_path: Path):
    cwd = case.setup(tmp_path)
    done = croft(cwd, [*case.argv, "--json"], case.env)
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    envelope = json.loads(done.stdout)  # exactly one JSON document: json.loads refuses trailing text
    assert set(envelope) == {"ok", "data", "problems", "next"}
    assert envelope["ok"] is False
    codes = {p["code"] for p in envelope["problems"]}
    assert codes and codes <= set(CODES), codes
    assert case.codes <= codes, codes
    assert done.returncode == case.exit, (done.returncode, envelope)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_human_mode_names_the_code_on_stderr_and_never_shows_a_traceback(case: Case, tmp_path: Path):
    cwd = case.setup(tmp_path)
    done = croft(cwd, case.argv, case.env)
    assert b"Traceback" not in done.stderr and b"Traceback" not in done.stdout
    stderr = done.stderr.decode(errors="replace")
    assert any(code in stderr for code in case.codes), stderr
    assert done.returncode == case.exit


def test_init_on_a_folder_where_assets_is_a_file_leaves_nothing_behind(tmp_path: Path):
    folder = assets_is_a_file(tmp_path)
    done = croft(folder, ["init", "--json"], {})
    assert done.returncode == 2
    assert sorted(p.name for p in folder.iterdir()) == ["assets"]
    assert (folder / "assets").read_text() == "not a folder"


def test_init_with_a_bad_zone_writes_nothing_and_suggests_a_real_zone(tmp_path: Path):
    done = croft(tmp_path, ["init", "x", "--timezone", "europe/london", "--json"], {})
    envelope = json.loads(done.stdout)
    assert envelope["problems"][0]["suggestion"] == "Europe/London"
    assert not (tmp_path / "x").exists()


def _explode(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug in croft")


def test_an_unexpected_exception_is_internal_error_with_a_crash_file_in_the_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from croft.cli.main import main

    root = project(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.delenv("CROFT_DEBUG", raising=False)
    monkeypatch.setattr("croft.engine.status.project_status", _explode)
    with pytest.raises(SystemExit) as stop:
        main(["status", "--json"])
    out, err = capsys.readouterr()
    envelope = json.loads(out)
    assert stop.value.code == 1 and envelope["ok"] is False
    [problem] = envelope["problems"]
    assert problem["code"] == "INTERNAL_ERROR" and "RuntimeError" in problem["message"]
    crash = Path(problem["details"]["crashFile"])
    assert crash.parent == root / ".croft" / "crashes" and str(crash) in problem["message"]
    assert "a bug in croft" in crash.read_text() and "Traceback" in crash.read_text()
    assert "Traceback" not in err

    monkeypatch.setenv("CROFT_DEBUG", "1")
    with pytest.raises(SystemExit):
        main(["status"])
    out, err = capsys.readouterr()
    assert "Traceback" in err and "INTERNAL_ERROR" in err and out == ""


def test_outside_a_project_the_crash_file_goes_to_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from croft.cli.main import main

    monkeypatch.chdir(plain(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    import croft.cli.schedule_explain  # the command's own name for it: replacing the module's would outlive the test

    monkeypatch.setattr(croft.cli.schedule_explain, "explain_schedule", _explode)
    with pytest.raises(SystemExit):
        main(["schedule", "explain", "hourly"])
    err = capsys.readouterr().err
    assert err.startswith("error: INTERNAL_ERROR") and "Traceback" not in err
    [crash] = (tmp_path / "cache" / "croft" / "crashes").iterdir()
    assert str(crash) in err


def _crash_where_nothing_else_is_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Path:  # type: ignore[no-untyped-def]
    """Crash ``croft status`` in a project whose state folder and user cache cannot be made (each is a
    file, which stops root too); returns the crash file the message names."""
    import tempfile

    from croft.cli.main import main

    root = project(tmp_path)
    (root / ".croft").write_text("not a folder")
    (tmp_path / "cache").write_text("not a folder either")
    monkeypatch.chdir(root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr("croft.engine.status.project_status", _explode)
    with pytest.raises(SystemExit):
        main(["status", "--json"])
    [problem] = json.loads(capsys.readouterr().out)["problems"]
    assert problem["code"] == "INTERNAL_ERROR"
    crash = Path(problem["details"]["crashFile"])
    assert str(crash) in problem["message"] and "a bug in croft" in crash.read_text()
    assert crash.stat().st_mode & 0o777 == 0o600 and crash.parent.stat().st_mode & 0o777 == 0o700
    assert crash.parent.stat().st_uid == os.geteuid()
    return crash


def test_the_last_resort_crash_folder_is_this_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "tmp").mkdir(mode=0o777)
    (tmp_path / "tmp").chmod(0o1777)  # shared, like /tmp
    crash = _crash_where_nothing_else_is_writable(tmp_path, monkeypatch, capsys)
    assert crash.parent == tmp_path / "tmp" / f"croft-crashes-{os.geteuid()}"


def test_a_crash_folder_someone_prepared_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    """A link (or a folder anyone can write) where the per-user crash folder goes: the crash file goes to a
    new folder of a unique name instead, and nothing lands where the link points."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    lure = tmp_path / "lure"
    lure.mkdir(mode=0o777)
    (shared / f"croft-crashes-{os.geteuid()}").symlink_to(lure)
    crash = _crash_where_nothing_else_is_writable(tmp_path, monkeypatch, capsys)
    assert list(lure.iterdir()) == []
    assert crash.parent.parent == shared and crash.parent.name.startswith(f"croft-crashes-{os.geteuid()}-")


def test_the_recorded_argv_is_the_real_command_line(tmp_path: Path):
    root = project(tmp_path)
    done = croft(root, ["run", "items", "--only", "--json"], {})
    assert done.returncode == 0, done.stdout
    import sqlite3

    conn = sqlite3.connect(root / ".croft" / "runs.sqlite")
    [(argv,)] = conn.execute("SELECT argv FROM runs").fetchall()
    conn.close()
    assert json.loads(argv) == ["run", "items", "--only", "--json"]


def test_a_full_disk_while_writing_names_the_cause_with_the_run_id_and_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import errno

    from enginekit import croft as croft_in_process

    def no_space(step: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "warehouse.sqlite"))

    root = project(tmp_path)
    monkeypatch.setattr("croft.engine.runner.execute", no_space)
    code, envelope = croft_in_process(root, "run")
    assert code == 1 and envelope["data"]["runId"]
    [step] = envelope["data"]["steps"]
    assert step["status"] == "failed" and step["error"]["code"] == "DISK_FULL"
    assert envelope["problems"][0]["code"] == "DISK_FULL"


def test_a_bookkeeping_write_that_fails_keeps_the_run_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from enginekit import croft as croft_in_process

    from croft.core.disk import disk_full
    from croft.core.problems import CroftError

    def full(*args: object, **kwargs: object) -> None:
        raise CroftError(disk_full("releasing the leases", "runs.sqlite", "database or disk is full"))

    root = project(tmp_path)
    monkeypatch.setattr("croft.history.leases.release", full)
    code, envelope = croft_in_process(root, "run")
    assert code == 1 and envelope["ok"] is False
    assert envelope["data"]["runId"] and envelope["data"]["steps"][0]["asset"] == "items"
    problem = envelope["problems"][-1]
    assert problem["code"] == "DISK_FULL" and problem["details"]["runId"] == envelope["data"]["runId"]


def test_a_crash_file_never_holds_a_secret_from_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from croft.cli.main import main

    secret = "hunter2-very-secret"
    root = project(tmp_path, **{".env": f"API_KEY={secret}\n"})
    monkeypatch.chdir(root)

    def leaky(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"failed with key {secret}")

    monkeypatch.setattr("croft.engine.status.project_status", leaky)
    with pytest.raises(SystemExit):
        main(["status", "--json"])
    out = capsys.readouterr().out
    assert secret not in out and "[redacted:API_KEY]" in out
    [crash] = (root / ".croft" / "crashes").iterdir()
    assert secret not in crash.read_text() and "[redacted:API_KEY]" in crash.read_text()


def test_an_input_echoed_in_a_message_is_cut_to_its_start(tmp_path: Path) -> None:
    """A 1 MB schedule once came back whole in its error; every message quotes input by its start (at most
    a few hundred characters) and says how much it left out, from validate, croft.json and the CLI alike."""
    huge = "every " + "x" * 1_000_000
    root = project(
        tmp_path, **{"assets/odd.py": GOOD_INGEST.replace('key="id"', f'key="id", schedule="{huge}"')}
    )
    (root / "croft.json").write_text(json.dumps({"timezone": "Mars/" + "y" * 100_000}))
    done = croft(root, ["validate", "--json"], {})
    problems = json.loads(done.stdout)["problems"]
    assert done.returncode == 2 and {p["code"] for p in problems} == {"CONFIG_INVALID"}
    assert all(len(p["message"]) < 1000 for p in problems) and "more characters" in problems[0]["message"]
    (root / "croft.json").write_text('{"timezone": "UTC"}\n')
    done = croft(root, ["validate", "--json"], {})
    [bad] = [p for p in json.loads(done.stdout)["problems"] if p["code"] == "SCHEDULE_INVALID"]
    assert len(bad["message"]) < 1000 and "more characters" in bad["message"], bad["message"][:300]
    done = croft(root, ["run", "x" * 100_000, "--json"], {})
    [unknown] = json.loads(done.stdout)["problems"]
    assert unknown["code"] == "UNKNOWN_ASSET" and len(unknown["message"]) < 1000
    assert len(done.stdout) < 10_000
