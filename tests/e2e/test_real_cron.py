"""End to end against a real cron daemon: schedule on writes the line, cron runs `croft tick --all`
within the minute, the heartbeat arrives within 70 s, the due ingest (approved by a run by hand first,
since the scheduler never runs code nobody ran) runs as a scheduled run against a local HTTP API, and
schedule off removes the line while an unrelated line stays byte for byte. Every path (the interpreter,
CROFT_HOME, the project) lies under a folder named ``back\\slash\\%`` with spaces: cron cuts a command at
an unescaped ``%``, and its ``\\%`` escape fails right after a backslash, so a line that was not quoted
for cron would run a cut command and no tick would ever come.

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

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from httpserver import TestServer, serve
from userkit import User, add_user, cannot, python_for, remove_user
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


@pytest.fixture
def cron_user() -> Iterator[User]:
    """A fresh unix user, and a cron daemon running; both undone afterwards."""
    reason = _why_not()
    if reason:
        cannot(reason)
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
        user = add_user()
        yield user
    finally:
        if user is not None:
            remove_user(user)
        if started is not None:
            started.terminate()
            started.wait(timeout=10)
        turns.close()


def _history(project: Path, sql: str) -> list[tuple[str, ...]]:
    """Rows of the project's runs.sqlite, read-only ([] before it exists)."""
    path = project / ".croft" / "runs.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _scheduled_runs(project: Path) -> list[tuple[str, ...]]:
    return _history(project, "SELECT id, status FROM runs WHERE trigger = 'schedule' ORDER BY rowid")


def _crontab(user: User) -> str:
    """The user's crontab as `crontab -l` prints it ("" when it has none)."""
    listed = subprocess.run(["crontab", "-u", user.name, "-l"], capture_output=True, text=True)
    if listed.returncode != 0:
        assert "no crontab" in listed.stderr.lower(), listed.stderr
        return ""
    return listed.stdout


def test_real_cron_ticks_a_project_under_a_backslash_percent_path_and_off_keeps_the_other_lines(
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
    base = user.home / "e2e dir back\\slash\\%"
    base.mkdir()
    home = base / "croft home 100%"
    project = base / "my project"
    project.mkdir()
    (project / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    (project / "assets").mkdir()
    (project / "assets" / "orders.py").write_text(INGEST.format(url=http_server.url("/items")))
    user.give(base)
    python = python_for(user, base)
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
    ours = next(x for x in written.splitlines() if x.endswith(f"# croft:{label}"))
    assert "\\%" in ours and "\\\\%" not in ours  # every % escaped for cron, none right after a backslash
    log = home / "logs" / "tick.log"

    def logged() -> str:
        return log.read_text() if log.exists() else "(none)"

    # `schedule on` itself waited for the heartbeat (CROFT_HEARTBEAT_WAIT_MS default: 70 s)
    assert data["firstTick"]["ok"] and data["firstTick"]["waitedMs"] <= 70_000, (
        json.dumps(data["firstTick"]) + " tick log: " + logged()
    )
    assert (
        f"{project.name}: tick started (pid " in log.read_text()
    )  # cron ran croft tick --all, which ticked it

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

    # paused, then resumed while cron ticks: the resume waits for no tick (it once blocked ~50 s)
    assert croft("schedule", "pause", "--json").returncode == 0
    paused_at = time.time()
    wait_for(
        lambda: "tick-all.lock" in os.listdir(home) and os.stat(home / "tick-all.lock").st_mtime > paused_at,
        "cron's next croft tick --all while paused",
        timeout=90,
    )
    resumed = croft("schedule", "on", "--backend", "crontab", "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    tick = json.loads(resumed.stdout)["data"]["firstTick"]
    assert tick == {"ok": True, "alreadyTicking": True, "waitedMs": 0}, tick

    off = croft("schedule", "off", "--json")
    assert off.returncode == 0, off.stdout + off.stderr
    after = _crontab(user)
    assert after == table  # our line gone, every other line byte for byte


STAMPED = """\
from croft import ingest

@ingest(schedule="{schedule}", key="id")
def orders(ctx):
    yield [{{"id": i, "amount": i * 3}} for i in range(100)]
"""


def _runs_with_times(project: Path) -> list[tuple[str, ...]]:
    """(trigger, status, started_at, finished_at) of every run, oldest first."""
    sql = "SELECT trigger, status, started_at, COALESCE(finished_at, '') FROM runs ORDER BY rowid"
    return _history(project, sql)


def _into_minute(stamp: str) -> float:
    """Seconds from the start of its minute to the instant ``stamp``."""
    from croft.core.clock import parse_instant

    moment = parse_instant(stamp)
    return moment.second + moment.microsecond / 1e6


def test_under_real_cron_a_fire_after_idle_minutes_lands_in_its_minute_beside_a_plain_crontab_line(
    cron_user: User,
) -> None:
    """Two copies of one project, one scheduled by croft ("every 2 minutes": a minute of idling between
    fires), one run by a plain crontab line at the same fires. Each fire's row reaches croft's warehouse
    within the fire's minute, the fire after an idle minute is neither a wake-up nor a catch-up (no
    "woke after" line, no missed fires), and the seconds each took are printed beside the plain line's
    (``scripts/bench fire`` measures the difference; docs/benchmarks.md has it)."""
    user = cron_user
    base = user.home / "latency"
    base.mkdir()
    projects = {}
    for name in ("scheduled", "plain"):
        project = base / name
        (project / "assets").mkdir(parents=True)
        (project / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
        (project / "assets" / "orders.py").write_text(STAMPED.format(schedule="*/2 * * * *"))
        projects[name] = project
    user.give(base)
    python = python_for(user, base)
    home = base / "home"
    label = f"dev.croft.e2e{os.getpid()}l"
    env = user.env(CROFT_HOME=str(home), CROFT_JOB_LABEL=label, CROFT_NOTIFY_DRY="1")
    for project in projects.values():  # a person ran each once: the scheduler may run its code
        done = user.run([str(python), "-m", "croft", "run", "orders", "--json"], cwd=project, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    on = user.run(
        [str(python), "-m", "croft", "schedule", "on", "--backend", "crontab", "--json"],
        cwd=projects["scheduled"],
        env=env,
    )
    assert on.returncode == 0, on.stdout + on.stderr
    plain_home = base / "plain home"
    line = (
        f"*/2 * * * * cd '{projects['plain']}' && CROFT_HOME='{plain_home}' CROFT_NOTIFY_DRY=1"
        f" '{python}' -m croft run orders >/dev/null 2>&1 # croft e2e: the plain line\n"
    )
    table = _crontab(user) + line
    subprocess.run(["crontab", "-u", user.name, "-"], input=table, text=True, check=True)
    log = home / "logs" / "tick.log"

    def fires(project: Path, trigger: str) -> list[tuple[str, str, str, str]]:
        return [r for r in _runs_with_times(project) if r[0] == trigger and r[1] == "succeeded"]

    before = len(fires(projects["plain"], "manual"))
    wait_for(
        lambda: (
            len(fires(projects["scheduled"], "schedule")) >= 2
            and len(fires(projects["plain"], "manual")) >= before + 2
        ),
        lambda: (
            f"two fires of each: {_runs_with_times(projects['scheduled'])}; {log.read_text() if log.exists() else ''}"
        ),
        timeout=330,
    )
    scheduled = fires(projects["scheduled"], "schedule")[:2]
    plain = fires(projects["plain"], "manual")[before : before + 2]
    for (_, _, started, finished), (_, _, _, p_finished) in zip(scheduled, plain, strict=True):
        assert started[:16] == finished[:16], (started, finished)  # the row landed in the fire's minute
        print(
            f"fire {started[:16]}: croft {_into_minute(finished):.2f} s, plain line {_into_minute(p_finished):.2f} s"
        )
    said = log.read_text()
    assert "woke after" not in said, said  # idle minutes are the machine awake, not asleep
    assert "missed fires" not in said and "catch" not in said, said
    reasons = [
        r[0]
        for r in sqlite3.connect(projects["scheduled"] / ".croft" / "runs.sqlite").execute(
            "SELECT s.reason FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.trigger = 'schedule'"
        )
    ]
    assert reasons and all("missed" not in (r or "") for r in reasons), reasons
