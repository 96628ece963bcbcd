"""The "scale" benchmarks behind ``scripts/bench scale`` (issue 20): a backlog after a long weekend, a
history a year of scheduling long, a hundred projects with a ping, a thousand small projects, and what
a command costs to start. Every cell is whole processes, ratios within one run.

Fixtures are built the fast way (copies of one project run by hand, SQL inserts in the shape croft
writes), never by running croft 100,000 times; the bench checks the shape where it matters (a real
scheduled run leaves the rows it copies). ``run()`` returns the section's body and whether every goal
was met.
"""

from __future__ import annotations

import http.server
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BASELINE = [sys.executable, "-c", "import sqlite3, zoneinfo, json"]
CROFT = [sys.executable, "-m", "croft"]
ROUNDS = 7

_INGEST = """from croft import ingest


@ingest(schedule="daily at 03:{minute:02d}", key="id")
def {name}(ctx):
{body}    yield {{"id": 1, "n": {n}}}
"""
_SQL = "-- key: id\nSELECT id, n * 2 AS m FROM {source}\n"


def _cpu(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    """User + system CPU seconds of one process and every child it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _croft(args: list[str], env: dict[str, str], cwd: Path | None = None) -> dict[str, Any]:
    out = subprocess.run([*CROFT, *args, "--json"], env=env, cwd=cwd, capture_output=True, text=True)
    try:
        return dict(json.loads(out.stdout))
    except ValueError:
        raise SystemExit(f"croft {' '.join(args)}: {out.stdout!r} {out.stderr!r}") from None


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _template(folder: Path, env: dict[str, str], ingests: int, transforms: int, body: str = "") -> Path:
    """A project of ``ingests`` daily ingests (03:00, 03:01, …) and SQL transforms over the first ones, run
    by hand (so approved and built) at ``env``'s clock."""
    folder.mkdir(parents=True)
    (folder / "assets").mkdir()
    (folder / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    for i in range(ingests):
        (folder / "assets" / f"source_{i:02d}.py").write_text(
            _INGEST.format(minute=i, n=i, name=f"source_{i:02d}", body=body)
        )
    for i in range(transforms):
        (folder / "assets" / f"report_{i:02d}.sql").write_text(_SQL.format(source=f"source_{i:02d}"))
    envelope = _croft(["run"], env, folder)
    if not envelope.get("ok"):
        raise SystemExit(f"the template's run failed: {envelope}")
    return folder


def _projects(template: Path, base: Path, home: Path, count: int, state: str = "on") -> list[Path]:
    """``count`` copies of the template (files, warehouse and history), scheduling ``state`` via the OS job,
    all in one registry."""
    from croft.core.clock import parse_instant
    from croft.history.db import open_history
    from croft.scheduler.setting import write_scheduling

    conn = open_history(template / ".croft")
    try:
        write_scheduling(conn, state, parse_instant("2026-03-01T09:31:00Z"), via="os-job")  # type: ignore[arg-type]
    finally:
        conn.close()
    base.mkdir(parents=True, exist_ok=True)
    roots = []
    for i in range(count):
        root = base / f"project {i:04d}"
        shutil.copytree(template, root, symlinks=True)
        roots.append(root)
    home.mkdir(parents=True, exist_ok=True)
    entries = [{"root": str(r.resolve()), "addedAt": "2026-03-01T09:31:00.000Z", "via": "os-job"} for r in roots]
    (home / "projects.json").write_text(json.dumps(entries))
    from croft.scheduler.user.registry import Registry

    assert len(Registry(home).entries()) == count, "the registry written is the one croft reads"
    return roots


def _memo_at(root: Path) -> str | None:
    try:
        conn = sqlite3.connect(f"file:{root / '.croft' / 'runs.sqlite'}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM settings WHERE key = 'schedule.idle'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return json.loads(row[0])["at"] if row else None


def _line(goal: str, measured: str, ok: bool) -> str:
    return f"| {goal} | {measured} | {'yes' if ok else '**no**'} |"


# ----------------------------------------------------------------------------------------------------------
# 1000 small projects: the first minute, two overlapping minutes, the idle minute

MANY = 1000
MANY_NOW = "2026-03-01T10:00:00Z"


def many_projects(tmp: Path) -> tuple[list[str], list[str]]:
    env0 = dict(os.environ) | {"CROFT_JOB_LABEL": "dev.croft.bench", "CROFT_NOTIFY_DRY": "1"}
    template = _template(
        tmp / "many-template", env0 | {"CROFT_HOME": str(tmp / "h0"), "CROFT_NOW": "2026-03-01T09:30:00Z"}, 3, 2
    )
    home = tmp / "many-home"
    roots = _projects(template, tmp / "many", home, MANY)
    env = env0 | {"CROFT_HOME": str(home), "CROFT_NOW": MANY_NOW}
    stamp = MANY_NOW.replace("Z", ".000Z")
    # The first minute: no memo anywhere. A second tick --all starts while the first is at work.
    began = time.monotonic()
    first = subprocess.Popen([*CROFT, "tick", "--all", "--json"], env=env, stdout=subprocess.PIPE, text=True)
    log = home / "logs" / "tick.log"
    deadline = time.monotonic() + 30
    while not (log.is_file() and "tick started" in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = _croft(["tick", "--all"], env)
    out, _ = first.communicate(timeout=600)
    first_wall = time.monotonic() - began
    memos = sum(1 for r in roots if _memo_at(r) == stamp)
    done = json.loads(out)["data"]
    text = log.read_text()
    twice = sum(1 for r in roots if text.count(f"{r.resolve()}: tick started") > 1)
    workers = len({s["pid"] for s in done["started"]})
    # The minutes after: every memo holds; tick --all beats all 1000 in-process.
    base, tick = [], []
    for _ in range(ROUNDS):
        base.append(_cpu(BASELINE, env))
        tick.append(_cpu([*CROFT, "tick", "--all"], env))
    b, t = _median_ms(base), _median_ms(tick)
    last = _croft(["tick", "--all"], env)["data"]
    goals = [
        _line(
            f"the first minute of {MANY} projects (no memo) ≤ 60 s of wall time",
            f"{first_wall:.1f} s ({memos} memos left, {workers} workers)",
            first_wall <= 60 and memos == MANY,
        ),
        _line(
            "two overlapping `tick --all` never run the same minute twice",
            f"the second: {second['data'].get('exited') or 'ticked'}; projects ticked twice: {twice}",
            second["data"].get("exited") == "busy" and twice == 0,
        ),
        _line(
            f"`tick --all` over {MANY} × 5 idle ≤ 3× the floor",
            f"{t:.1f} ms / {b:.1f} ms = {t / b:.2f}× ({len(last['beat'])} beaten, {len(last['started'])} ticked)",
            t / b <= 3 and len(last["beat"]) == MANY and not last["started"],
        ),
    ]
    notes = [
        f"- *{MANY} projects*: copies of one project (3 daily ingests, 2 SQL transforms) run by hand half an"
        f" hour before; the first `tick --all` finds no memo and gives every project a full tick; a second"
        f" `tick --all` is started as soon as the first has started its first project tick. Idle minutes:"
        f" CPU of the whole process, median of {ROUNDS}, alternating with the floor"
        ' (`python -c "import sqlite3, zoneinfo, json"`).',
    ]
    return goals, notes


# ----------------------------------------------------------------------------------------------------------
# 100 idle projects with a ping, beside 100 without


class _Pings(http.server.BaseHTTPRequestHandler):
    count = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        with _Pings.lock:
            _Pings.count += 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


PINGED = 100


def pings(tmp: Path) -> tuple[list[str], list[str]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/ping"
    env0 = dict(os.environ) | {"CROFT_JOB_LABEL": "dev.croft.bench", "CROFT_NOTIFY_DRY": "1"}
    envs = {}
    for kind in ("plain", "ping"):
        template = _template(
            tmp / f"{kind}-template",
            env0 | {"CROFT_HOME": str(tmp / f"{kind}-h0"), "CROFT_NOW": "2026-03-01T09:30:00Z"},
            3,
            2,
        )
        if kind == "ping":
            (template / "croft.json").write_text(json.dumps({"timezone": "UTC", "notify": {"ping": url}}))
        home = tmp / f"{kind}-home"
        _projects(template, tmp / kind, home, PINGED)
        envs[kind] = env0 | {"CROFT_HOME": str(home), "CROFT_NOW": MANY_NOW}
        _croft(["tick", "--all"], envs[kind])  # the first minute leaves the memos
        _croft(["tick", "--all"], envs[kind])  # and this one the idle cache's stamps
    cpu: dict[str, list[float]] = {"plain": [], "ping": []}
    arrived = []
    for _ in range(ROUNDS):
        cpu["plain"].append(_cpu([*CROFT, "tick", "--all"], envs["plain"]))
        before = _Pings.count
        cpu["ping"].append(_cpu([*CROFT, "tick", "--all"], envs["ping"]))
        arrived.append(_Pings.count - before)
    server.shutdown()
    plain, pinged = _median_ms(cpu["plain"]), _median_ms(cpu["ping"])
    goals = [
        _line(
            f"{PINGED} idle projects with a ping ≤ 1.5× {PINGED} without (CPU of `tick --all` and its children)",
            f"{pinged:.1f} ms / {plain:.1f} ms = {pinged / plain:.2f}×",
            pinged / plain <= 1.5,
        ),
        _line("… and every ping arrives", f"{min(arrived)}–{max(arrived)} of {PINGED} a minute", min(arrived) == PINGED),
    ]
    notes = [
        f"- *pings*: {PINGED} copies of one idle project with `notify.ping` at a local HTTP server, beside"
        f" {PINGED} without; each minute's CPU includes every process `tick --all` waited for; the server"
        " counts the GETs of each minute.",
    ]
    return goals, notes


# ----------------------------------------------------------------------------------------------------------
# A backlog: 50 projects x 10 due ingests, a cap of 2, runs of about 50 ms

DRAIN_PROJECTS = 50
DRAIN_INGESTS = 10
DRAIN_NOW = "2026-03-01T10:00:00Z"
DRAIN_LIMIT_S = 600


def _alive_slots(home: Path) -> int:
    from croft.core.identity import ProcessIdentity, is_alive

    try:
        conn = sqlite3.connect(f"file:{home / 'slots.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            rows = conn.execute("SELECT pid, proc_start, boot_id FROM slots").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
    return sum(1 for r in rows if is_alive(ProcessIdentity(*r)))


def _scheduled_runs(root: Path) -> list[tuple[str, str]]:
    """(asset, status) of each scheduled run's step of an asset (a run is one group: one ingest here)."""
    try:
        conn = sqlite3.connect(f"file:{root / '.croft' / 'runs.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute(
                "SELECT json_extract(r.argv, '$[#-1]'), r.status FROM runs r WHERE r.trigger = 'schedule'"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []


def drain(tmp: Path) -> tuple[list[str], list[str]]:
    env0 = dict(os.environ) | {
        "CROFT_JOB_LABEL": "dev.croft.bench",
        "CROFT_NOTIFY_DRY": "1",
        "CROFT_MAX_SCHEDULED_RUNS": "2",
    }
    body = "    import time\n\n    time.sleep(0.05)  # the run's own work\n"
    template = _template(
        tmp / "drain-template",
        env0 | {"CROFT_HOME": str(tmp / "d0"), "CROFT_NOW": "2026-03-01T02:30:00Z"},  # before the fires
        DRAIN_INGESTS,
        0,
        body,
    )
    home = tmp / "drain-home"
    roots = _projects(template, tmp / "drain", home, DRAIN_PROJECTS)
    total = DRAIN_PROJECTS * DRAIN_INGESTS
    most = {"slots": 0, "running": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            most["slots"] = max(most["slots"], _alive_slots(home))
            running = sum(1 for r in roots for _, status in _scheduled_runs(r) if status == "running")
            most["running"] = max(most["running"], running)
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    began = time.monotonic()
    sampler.start()
    minutes = 0
    finished = 0
    try:
        while time.monotonic() - began < DRAIN_LIMIT_S:
            if time.monotonic() - began >= minutes * 60:  # the OS job's minute, on the bench's clock
                from croft.core.clock import parse_instant, to_iso

                at = to_iso(parse_instant(DRAIN_NOW) + __import__("datetime").timedelta(minutes=minutes))
                subprocess.Popen([*CROFT, "tick", "--all"], env=env0 | {"CROFT_HOME": str(home), "CROFT_NOW": at},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
                minutes += 1
            finished = sum(1 for r in roots for _, status in _scheduled_runs(r) if status != "running")
            if finished >= total:
                break
            time.sleep(0.25)
    finally:
        wall = time.monotonic() - began
        stop.set()
        sampler.join(5)
    runs = [(r.name, asset) for r in roots for asset, _ in _scheduled_runs(r)]
    twice = len(runs) - len(set(runs))
    statuses = {status for r in roots for _, status in _scheduled_runs(r)}
    goals = [
        _line(
            f"{total} due groups over {DRAIN_PROJECTS} projects, cap 2, runs of ~50 ms drain in under 3 minutes",
            f"{wall:.0f} s ({finished} of {total} runs ended; {minutes} OS-job minutes began)",
            wall < 180 and finished == total,
        ),
        _line(
            "… never more than 2 scheduled runs alive (sampled every 50 ms)",
            f"at most {most['slots']} slots held, {most['running']} runs recorded running",
            most["slots"] <= 2 and most["running"] <= 2,
        ),
        _line(
            "… no group runs twice",
            f"{len(runs)} scheduled runs, {len(set(runs))} distinct groups, {twice} repeated; {sorted(statuses)}",
            twice == 0 and len(set(runs)) == total and statuses == {"succeeded"},
        ),
    ]
    notes = [
        f"- *backlog*: {DRAIN_PROJECTS} copies of a project of {DRAIN_INGESTS} daily ingests (03:00 to 03:09, each"
        " sleeping 50 ms), run by hand before the fires, found due at 10:00 with a cap of 2; `tick --all` runs"
        " once a minute of real time, as the OS job would. A sampler reads the cap's slots (by process"
        " liveness) and every project's running scheduled runs every 50 ms.",
    ]
    return goals, notes


def run(cells: list[Callable[[Path], tuple[list[str], list[str]]]] | None = None) -> tuple[str, bool]:
    import compileall

    compileall.compile_dir(str(ROOT / "croft"), quiet=1)
    goals: list[str] = []
    notes: list[str] = []
    for cell in cells or CELLS:
        with tempfile.TemporaryDirectory(prefix="croft-scale-") as tmp:
            g, n = cell(Path(tmp))
            print("\n".join(g), flush=True)
            goals += g
            notes += n
    body = "\n".join(
        [
            "Issue 20: what grows with a backlog, a long history or many projects. Whole processes, ratios"
            " within one run; the floor is `python -c \"import sqlite3, zoneinfo, json\"`.",
            "",
            "| goal | measured | met |",
            "|---|---|---|",
            *goals,
            "",
            *notes,
        ]
    )
    return body, not any("| **no** |" in g for g in goals)


CELLS: list[Callable[[Path], tuple[list[str], list[str]]]] = [drain, many_projects, pings]

if __name__ == "__main__":
    names = sys.argv[1:]
    chosen = [c for c in CELLS if not names or c.__name__ in names]
    text, ok = run(chosen)
    print(text)
    sys.exit(0 if ok else 1)
