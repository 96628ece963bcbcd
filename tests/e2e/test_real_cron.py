"""End to end against a real cron daemon: schedule on writes the line, cron runs `croft tick --all`
within the minute, the heartbeat arrives within 70 s, the due ingest (approved by a run by hand first,
since the scheduler never runs code nobody ran) runs as a scheduled run against a local HTTP API, and
schedule off removes the line while an unrelated line stays byte for byte. Paths contain spaces (and a
%, which cron would otherwise eat).

CROFT_NOW cannot move the cron daemon's clock, so the ingest runs "every minute": due at real time at the
first tick after the run by hand.

The scenario runs as a throwaway unix user of its own (made with useradd, with its own home), so the
crontab it edits is that user's, never the crontab of whoever runs the suite, and nothing else editing a
crontab meanwhile can get in its way. The user is removed afterwards, its crontab and home with it, even
when the test fails. croft runs as that user on an interpreter it may run: the suite's own when it can,
else a venv of its own on the system's python of the same version that sees the suite's packages (the
croft under test among them), for when the suite's interpreter lives where only its owner can read.

Needs root (for useradd, and since cron daemons run as root) and the `cron` program; `scripts/test`
installs it when it can. Elsewhere the test skips saying so; with CI=true it fails instead. It starts
`cron -f` itself when no cron daemon runs, and stops only what it started; since a machine has one cron
daemon, runs of this test (from any checkout) take turns through a lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from httpserver import TestServer, serve
from waiting import wait_for

from croft.scheduler.jobs.crontab import cron_daemon_running

UNRELATED = "# croft e2e: an unrelated line  with  two spaces and 100% kept\n"
INGEST = """\
from croft import ingest

@ingest(schedule="every minute", key="id")
def rows(ctx):
    yield ctx.http.get("{url}").json()
"""
TURNS = Path("/tmp/croft-cron-e2e.lock")
PROGRAMS = ("cron", "crontab", "useradd", "usermod", "userdel")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
CRON_PIDFILE = Path("/run/crond.pid")


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return (
            "it runs as a throwaway user of its own (useradd) and may start a cron daemon, which needs root;"
            " it never touches the crontab of the user running the suite"
        )
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        return (
            f"{', '.join(missing)} not installed (scripts/test installs cron when run as root with apt-get)"
        )
    return None


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _cannot(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the real-cron test: {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class User:
    """The throwaway user: runs commands as itself, with its own minimal environment."""

    name: str
    uid: int
    gid: int
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        base = {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "PATH": SYSTEM_PATH}
        return base | {"LANG": os.environ.get("LANG", "C.UTF-8")} | extra

    def run(
        self,
        argv: list[str],
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 200,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=cwd or self.home,
            env=env or self.env(),
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def give(self, path: Path) -> None:
        """Make ``path`` and everything under it this user's."""
        for folder, dirs, files in os.walk(path):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.chown(name, self.uid, self.gid, follow_symlinks=False)

    def processes(self) -> list[int]:
        """The pids of this user's live processes (a zombie is only waiting for its parent to read it)."""
        mine = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = dict(
                        line.split(":", 1)
                        for line in (entry / "status").read_text().splitlines()
                        if ":" in line
                    )
                except OSError:
                    continue  # ended meanwhile
                if str(self.uid) in fields["Uid"].split() and not fields["State"].strip().startswith("Z"):
                    mine.append(int(entry.name))
        return mine


def _add_user() -> User:
    name = f"croft-e2e-{os.getpid()}-{secrets.token_hex(2)}"
    subprocess.run(
        ["useradd", "--create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
        text=True,
    )
    entry = pwd.getpwnam(name)
    return User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def _remove_user(user: User) -> None:
    """The user gone with all it left: no job cron could start, no process, no crontab, no home."""
    subprocess.run(["usermod", "--expiredate", "1", user.name], capture_output=True, check=False)
    subprocess.run(["crontab", "-u", user.name, "-r"], capture_output=True, check=False)

    def ended() -> bool:
        for pid in user.processes():  # a tick or scheduled run cron started as this user
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                os.kill(pid, signal.SIGKILL)
        return not user.processes()

    wait_for(ended, f"the processes of {user.name} to end", timeout=30)
    # --force: a zombie of the user's, not yet read by its parent, would otherwise keep the user
    gone = subprocess.run(["userdel", "--force", "--remove", user.name], capture_output=True, text=True)
    assert gone.returncode == 0, f"userdel {user.name}: {gone.stderr}"


@pytest.fixture
def cron_user() -> Iterator[User]:
    """A fresh unix user, and a cron daemon running; both undone afterwards."""
    reason = _why_not()
    if reason:
        _cannot(reason)
    turns = open(TURNS, "a")  # noqa: SIM115 (held for the whole test, closed below)
    fcntl.flock(turns, fcntl.LOCK_EX)
    started = None
    user = None
    try:
        if not cron_daemon_running():
            started = subprocess.Popen(["cron", "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            daemon = started
            # cron writes its pid file once it holds the daemon lock; it exits at once when it cannot
            wait_for(
                lambda: daemon.poll() is not None or _pid_in(CRON_PIDFILE) == daemon.pid,
                f"cron -f (pid {daemon.pid}) to write {CRON_PIDFILE}",
            )
            assert started.poll() is None, "cron -f exited at once"
        user = _add_user()
        yield user
    finally:
        if user is not None:
            _remove_user(user)
        if started is not None:
            started.terminate()
            started.wait(timeout=10)
        turns.close()


def _python_for(user: User, where: Path) -> Path:
    """An interpreter path with a space in it that ``user`` may run and that imports the croft under test."""
    link = where / "venv link"
    try:
        inside = Path(sys.executable).relative_to(sys.prefix)
    except ValueError:
        inside = None
    if inside is not None:
        link.symlink_to(sys.prefix)  # the suite's own interpreter, which still finds its venv through it
        try:
            usable = user.run([str(link / inside), "-c", "import croft"]).returncode == 0
        except PermissionError:  # the interpreter itself is out of the user's reach
            usable = False
        if usable:
            return link / inside
        link.unlink()
    # The suite's interpreter is out of the user's reach (a pyenv under /root, say): a venv of the user's
    # own on the system's python of the same version, with the suite's packages on its path.
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = shutil.which(version, path=SYSTEM_PATH)
    if base is None:
        _cannot(f"the user cannot run {sys.executable}, and there is no {version} in {SYSTEM_PATH}")
    made = user.run([str(base), "-m", "venv", "--without-pip", str(link)])
    if made.returncode != 0:
        _cannot(f"{base} -m venv failed for the throwaway user: {made.stderr.strip()}")
    python = link / "bin" / "python"
    asked = user.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    assert asked.returncode == 0, asked.stderr
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(asked.stdout.strip()) / "croft-under-test.pth").write_text(
        "".join(f"import site; site.addsitedir({folder!r})\n" for folder in ours)
    )
    imports = user.run([str(python), "-c", "import croft, crontab, httpx"])
    if imports.returncode != 0:
        _cannot(f"the throwaway user cannot import croft from {', '.join(ours)}: {imports.stderr.strip()}")
    return python


def _scheduled_runs(project: Path) -> list[tuple[str, str]]:
    path = project / ".croft" / "runs.sqlite"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(
            "SELECT id, status FROM runs WHERE trigger = 'schedule' ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def _crontab(user: User) -> str:
    """The user's crontab as `crontab -l` prints it ("" when it has none)."""
    listed = subprocess.run(["crontab", "-u", user.name, "-l"], capture_output=True, text=True)
    if listed.returncode != 0:
        assert "no crontab" in listed.stderr.lower(), listed.stderr
        return ""
    return listed.stdout


def test_real_cron_ticks_the_project_runs_the_due_ingest_and_off_keeps_the_other_lines(
    cron_user: User,
) -> None:
    with serve() as server:
        _journey(server, cron_user)


def _journey(http_server: TestServer, user: User) -> None:
    served: list[int] = []

    def items(*_: object) -> tuple[int, dict[str, str], object]:
        served.append(len(served) + 1)
        return 200, {}, [{"id": 1, "call": len(served)}, {"id": 2, "call": len(served)}]

    http_server.route("GET", "/items", items)
    base = user.home / "e2e dir"
    base.mkdir()
    home = base / "croft home 100%"
    project = base / "my project"
    project.mkdir()
    (project / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    (project / "assets").mkdir()
    (project / "assets" / "orders.py").write_text(INGEST.format(url=http_server.url("/items")))
    user.give(base)
    python = _python_for(user, base)
    label = f"dev.croft.e2e{os.getpid()}"
    env = user.env(CROFT_HOME=str(home), CROFT_JOB_LABEL=label, CROFT_NOTIFY_DRY="1")

    def croft(*args: str) -> subprocess.CompletedProcess[str]:
        return user.run([str(python), "-m", "croft", *args], cwd=project, env=env)

    by_hand = croft("run", "orders", "--json")  # a person ran it: not held
    assert by_hand.returncode == 0, by_hand.stdout + by_hand.stderr
    assert served == [1]
    # an unrelated line of the user's own, already in the table
    table = _crontab(user) + UNRELATED
    subprocess.run(["crontab", "-u", user.name, "-"], input=table, text=True, check=True)

    on = croft("schedule", "on", "--backend", "crontab", "--json")
    assert on.returncode == 0, on.stdout + on.stderr
    data = json.loads(on.stdout)["data"]
    assert data["job"]["backend"] == "crontab" and data["job"]["python"] == str(python)
    written = _crontab(user)
    assert written.startswith(table) and f"# croft:{label}" in written
    assert "\\%" in written  # the % in CROFT_HOME is escaped for cron
    log = home / "logs" / "tick.log"

    def logged() -> str:
        return log.read_text() if log.exists() else "(none)"

    # `schedule on` itself waited for the heartbeat (CROFT_HEARTBEAT_WAIT_MS default: 70 s)
    assert data["firstTick"]["ok"] and data["firstTick"]["waitedMs"] <= 70_000, (
        json.dumps(data["firstTick"]) + " tick log: " + logged()
    )
    assert f"{project}: tick started (pid " in log.read_text()  # cron ran croft tick --all, which ticked it

    runs = wait_for(
        lambda: [r for r in _scheduled_runs(project) if r[1] == "succeeded"],
        lambda: f"a scheduled run to succeed: {_scheduled_runs(project)}; tick log: {logged()}",
        timeout=90,
    )
    assert any(status == "succeeded" for _, status in runs), f"no scheduled run succeeded: {runs}; " + (
        log.read_text()
    )
    assert len(served) >= 2  # the scheduled run called the API itself
    wh = sqlite3.connect(project / "warehouse.sqlite")
    try:
        count, first_call = wh.execute("SELECT COUNT(*), MIN(call) FROM orders").fetchone()
    finally:
        wh.close()
    assert count == 2 and first_call >= 2  # the rows the scheduled run fetched replaced the first ones

    off = croft("schedule", "off", "--json")
    assert off.returncode == 0, off.stdout + off.stderr
    after = _crontab(user)
    assert after == table  # our line gone, every other line byte for byte
