"""The status page's benchmark behind ``scripts/bench ui``: a project of 100 and of 1000 assets (half
hourly ingests, half SQL transforms over them) with 100,000 runs in its last week, served by a real
``croft ui`` process. Measured: the overview's first byte and full load against ``croft status --json``
on the same project, the JSON's size, the server's memory, and its CPU while tabs stay open and nothing
changes (``--idle S`` sets that span; the default is two minutes).

Fixtures are built the fast way: the project is run once for real (so its tables, catalog and approvals
are croft's own), and the older runs are inserted in the shape croft writes them.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CROFT = [sys.executable, "-m", "croft"]
NOW = "2026-03-10T12:00:00Z"
RUNS = 100_000

_INGEST = """from croft import ingest


@ingest(schedule="every hour", key="id", description="Source number {i}")
def {name}(ctx):
    yield {{"id": 1, "n": {i}}}
"""
_SQL = "-- key: id\n-- description: Report over {source}\nSELECT id, n * 2 AS m FROM {source}\n"


def build(folder: Path, assets: int, runs: int, env: dict[str, str]) -> Path:
    """A project of ``assets`` assets run once at ``NOW`` minus a minute, then ``runs`` older runs."""
    folder.mkdir(parents=True)
    (folder / "assets").mkdir()
    (folder / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    half = assets // 2
    for i in range(half):
        name = f"source_{i:04d}"
        (folder / "assets" / f"{name}.py").write_text(_INGEST.format(i=i, name=name))
        (folder / "assets" / f"report_{i:04d}.sql").write_text(_SQL.format(source=name))
    out = subprocess.run(
        [*CROFT, "run", "--json"],
        cwd=folder,
        env=env | {"CROFT_NOW": "2026-03-10T11:00:00Z"},
        capture_output=True,
        text=True,
    )
    if not json.loads(out.stdout).get("ok"):
        raise SystemExit(f"the fixture's run failed: {out.stdout[:2000]} {out.stderr[-2000:]}")
    _old_runs(folder / ".croft", runs, half)
    return folder


def _old_runs(state: Path, count: int, half: int) -> None:
    """``count`` scheduled runs over the week before the real one: an ingest step and its report, one in
    twenty failed (its report skipped)."""
    from croft.history.db import open_history

    conn = open_history(state)
    try:
        conn.execute("BEGIN")
        start = dt.datetime(2026, 3, 3, 11, tzinfo=dt.UTC).timestamp()
        gap = 7 * 86400 / count
        runs, steps = [], []
        for i in range(count):
            at = dt.datetime.fromtimestamp(start + i * gap, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            end = dt.datetime.fromtimestamp(start + i * gap + 2, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            run = f"r_{at[5:7]}{at[8:10]}_{at[11:13]}{at[14:16]}_{i:06x}"
            n = i % half
            failed = i % 20 == 0
            runs.append((run, at, end, "failed" if failed else "succeeded"))
            error = json.dumps({"code": "HTTP_ERROR", "message": "HTTP 503 from the API"}) if failed else None
            steps.append((run, f"source_{n:04d}", "failed" if failed else "ok", at, end, error))
            steps.append((run, f"report_{n:04d}", "skipped" if failed else "ok", end, end, None))
        conn.executemany(
            "INSERT INTO runs (id, trigger, human, argv, pid, proc_start, boot_id, started_at, finished_at,"
            " status) VALUES (?, 'schedule', 0, '[]', 4242, '1', 'boot', ?, ?, ?)",
            runs,
        )
        conn.executemany(
            "INSERT INTO steps (run_id, asset, attempt, status, reason, started_at, finished_at, error)"
            " VALUES (?, ?, 1, ?, 'requested', ?, ?, ?)",
            steps,
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


# ----------------------------------------------------------------------------------------------------------
# measuring a real croft ui


def _croft_status_s(root: Path, env: dict[str, str], rounds: int = 3) -> float:
    """Wall seconds of a whole ``croft status --json`` process (its answer is its last byte)."""
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([*CROFT, "status", "--json"], cwd=root, env=env, capture_output=True, check=False)
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


class _Server:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*CROFT, "ui", "--no-open"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("croft ui: "):
            raise SystemExit(f"croft ui printed {line!r}")
        url = line.split(": ", 1)[1].strip()
        self.port = int(url.split(":")[2].split("/")[0])
        self.host = f"127.0.0.1:{self.port}"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        conn.request("GET", "/?token=" + url.split("token=", 1)[1], headers={"Host": self.host})
        answer = conn.getresponse()
        answer.read()
        self.cookie = (answer.getheader("Set-Cookie") or "").split(";", 1)[0]
        conn.close()

    def get(self, path: str) -> tuple[float, float, int]:
        """(seconds to the first byte of the answer, seconds to its last, its size)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        t0 = time.perf_counter()
        conn.request("GET", path, headers={"Host": self.host, "Cookie": self.cookie})
        answer = conn.getresponse()
        first = time.perf_counter() - t0
        body = answer.read()
        full = time.perf_counter() - t0
        conn.close()
        return first, full, len(body)

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> float:
        t0 = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.communicate(timeout=60)
        return time.perf_counter() - t0


class _Tab(threading.Thread):
    """An open page as the shipped script behaves: the page, then its event stream, and the page again
    at each ``change`` (the browser's own work is not the server's, so a plain client stands for it)."""

    def __init__(self, server: _Server, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.server, self.stop_ = server, stop
        self.refetches = 0
        self.ready = threading.Event()  # its page loaded and its stream open: the idle span may start
        self.sock: Any = None

    def run(self) -> None:
        import socket

        self.server.get("/")
        s = socket.create_connection(("127.0.0.1", self.server.port))
        self.sock = s
        s.sendall(
            f"GET /events HTTP/1.1\r\nHost: {self.server.host}\r\nCookie: {self.server.cookie}\r\n\r\n".encode()
        )
        s.settimeout(1.0)
        buf = b""
        while not self.stop_.is_set():
            try:
                chunk = s.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                if b"event: hello" in event:
                    self.ready.set()
                if b"event: change" in event:
                    self.refetches += 1
                    self.server.get("/")
        s.close()


def _change(root: Path) -> None:
    """A write to runs.sqlite as a run's end makes one (a row of its own in settings)."""
    import sqlite3

    conn = sqlite3.connect(root / ".croft" / "runs.sqlite")
    conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES ('bench.ui', ?)", (str(time.time()),))
    conn.commit()
    conn.close()


def _idle(server: _Server, tabs: int, seconds: float) -> tuple[float, int, float, float]:
    """(CPU % of one core over ``seconds`` with ``tabs`` open and nothing changing, refetches, RSS before, after)."""
    stop = threading.Event()
    open_ = [_Tab(server, stop) for _ in range(tabs)]
    for t in open_:
        t.start()
    for t in open_:
        t.ready.wait(600)  # every tab has loaded and listens
    time.sleep(1)
    before, rss0 = server.cpu_s(), server.rss_mb()
    t0 = time.perf_counter()
    time.sleep(seconds)
    spent, wall = server.cpu_s() - before, time.perf_counter() - t0
    rss1 = server.rss_mb()
    stop.set()
    for t in open_:
        t.join(5)
    return 100 * spent / wall, sum(t.refetches for t in open_), rss0, rss1


from typing import Any  # noqa: E402


def measure(assets: int, runs: int, idle_s: float, tmp: Path) -> dict[str, Any]:
    root = tmp / f"p{assets}"
    env = dict(os.environ) | {"CROFT_HOME": str(tmp / f"home{assets}"), "CROFT_NOTIFY_DRY": "1"}
    build(root, assets, runs, env)
    env["CROFT_NOW"] = NOW
    status_s = _croft_status_s(root, env)
    server = _Server(root, env)
    try:
        cold, _, _ = server.get("/")  # the process's first look (joined as the server took it at start)
        fresh = []
        for _ in range(3):  # a write to the history: the next page needs a fresh look (median of 3)
            _change(root)
            time.sleep(1.5)
            fresh.append(server.get("/"))
        first, full, html = sorted(fresh)[1]
        _, _, size = server.get("/api/status")
        warm_first, warm_full, _ = server.get("/")
        asset_first, _, _ = server.get(f"/asset?project={root}&asset=source_0001")
        rss = server.rss_mb()
        cpu1, re1, _, _ = _idle(server, 1, idle_s)
        cpu20, re20, rss20a, rss20b = _idle(server, 20, idle_s)
        stop_s = server.stop()
    except BaseException:
        server.proc.kill()
        raise
    return {
        "assets": assets,
        "status_s": status_s,
        "cold_s": cold,
        "first_s": first,
        "full_s": full,
        "html": html,
        "json": size,
        "warm_first_s": warm_first,
        "warm_full_s": warm_full,
        "asset_s": asset_first,
        "rss": rss,
        "cpu1": cpu1,
        "refetch1": re1,
        "cpu20": cpu20,
        "refetch20": re20,
        "rss20": (rss20a, rss20b),
        "stop_s": stop_s,
    }


def run(idle_s: float = 120.0, sizes: tuple[int, ...] = (100, 1000), runs: int = RUNS) -> tuple[str, bool]:
    with tempfile.TemporaryDirectory(prefix="croft-bench-ui-") as tmp:
        found = [measure(n, runs, idle_s, Path(tmp)) for n in sizes]
    ok = True
    rows = []
    for m in found:
        ratio = m["first_s"] / m["status_s"]
        goals = ratio <= 1.5 and m["json"] < 1_000_000 and m["cpu20"] < 2.0 and m["stop_s"] < 1.0
        ok = ok and goals
        rows.append(
            f"| {m['assets']} | {m['status_s']:.2f} s | {m['cold_s']:.2f} s | {m['first_s']:.2f} s ({ratio:.2f}×)"
            f" | {m['full_s']:.2f} s"
            f" | {m['warm_first_s'] * 1000:.0f} ms | {m['asset_s'] * 1000:.0f} ms | {m['json'] / 1024:.0f} KiB"
            f" | {m['html'] / 1024:.0f} KiB | {m['rss']:.0f} MB | {m['cpu1']:.2f} % ({m['refetch1']})"
            f" | {m['cpu20']:.2f} % ({m['refetch20']}) | {m['rss20'][0]:.0f} → {m['rss20'][1]:.0f} MB"
            f" | {m['stop_s'] * 1000:.0f} ms | {'yes' if goals else '**no**'} |"
        )
    small, big = found[0], found[-1]
    growth = big["first_s"] / small["first_s"] if small["first_s"] else 0.0
    status_growth = big["status_s"] / small["status_s"] if small["status_s"] else 0.0
    scale = big["assets"] / small["assets"]
    # linear: no faster than the assets, or (on a machine whose load moves between the sizes) no faster
    # than croft status --json grew in the same run
    linear = growth <= scale * 1.2 or growth <= status_growth * 1.1
    ok = ok and linear
    idle_words = f"{idle_s:.0f} s" if idle_s != 120 else "two minutes"
    body = "\n".join(
        [
            f"A project of 100 and of 1000 assets (half hourly ingests, half SQL transforms over them) with"
            f" {runs:,} runs in its last week, one in twenty failed; a real `croft ui` process, the clock held"
            " at the last run (`CROFT_NOW`). **first look**: the first byte of the process's first page"
            " (the look it takes at start, cold caches); **first byte**: a page after a write to the"
            " history (a fresh look; median of 3), against a whole `croft status --json` process on the same project"
            " (median of 3); **full load**: its last byte; **again**:"
            " the next load, the look shared; **asset page**: an asset's page meanwhile. **idle**: the"
            f" server's CPU over {idle_words} while 1 and then 20 tabs stay open and nothing changes (in"
            " brackets, how often the tabs were told to refetch), and its memory before and after the 20."
            " Targets: first byte within 1.5× of `croft status --json`, JSON under 1 MB, idle CPU near zero"
            " (under 2 % of a core), SIGTERM within a second, and first byte growing no faster than the"
            " assets (linear or better).",
            "",
            "| assets | croft status --json | first look | first byte | full load | again | asset page | JSON | HTML"
            " | memory | idle, 1 tab | idle, 20 tabs | memory, 20 tabs | SIGTERM | meets |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"First byte from {small['assets']} to {big['assets']} assets: {growth:.1f}× for {scale:.0f}× the"
            f" assets, while `croft status --json` grew {status_growth:.1f}× in the same run"
            f" ({'linear or better, in step with croft status' if linear else '**worse than linear**'}).",
        ]
    )
    return body, ok


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--idle", type=float, default=120.0, help="seconds of each idle measurement")
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    text, met = run(args.idle, tuple(int(x) for x in args.sizes.split(",")), args.runs)
    print(text)
    sys.exit(0 if met else 1)
