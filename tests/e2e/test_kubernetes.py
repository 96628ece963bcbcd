"""The Kubernetes manifests of docs/server/ are valid objects for the API (checked offline by
kubernetes-validate --strict, which a broken copy fails), and the CronJob's command, run as a pod runs it
(its own PID namespace, the command its PID 1), loses its runs with the pod, and the next pod's tick
records them as crashed."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from userkit import cannot
from waiting import wait_for

from croft.core.paths import data_path

SERVER = data_path("docs", "server")
MANIFESTS = sorted(SERVER.glob("*.yaml"))
VALIDATE = Path(sys.executable).parent / "kubernetes-validate"


def _validate(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VALIDATE), "--strict", *map(str, files)], capture_output=True, text=True, timeout=120
    )


def test_every_manifest_passes_kubernetes_validate_strict():
    assert {m.name for m in MANIFESTS} >= {"croft-tick-cronjob.yaml", "croft-serve-deployment.yaml"}
    done = _validate(*MANIFESTS)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = done.stdout.count(" passed for resource ")
    assert passed == sum(1 for m in MANIFESTS for doc in yaml.safe_load_all(m.read_text()) if doc)


@pytest.mark.parametrize(
    "breakage",
    [
        # a misspelled field: only --strict refuses what the API does not know
        ("concurrencyPolicy: Forbid", "concurencyPolicy: Forbid"),
        # a wrong type
        ("backoffLimit: 0", "backoffLimit: none"),
        # a missing required field: a CronJob without its schedule
        ('  schedule: "* * * * *"\n', ""),
    ],
    ids=["unknown-field", "wrong-type", "missing-schedule"],
)
def test_a_broken_copy_fails_the_check(tmp_path, breakage):
    good, bad = breakage
    text = (SERVER / "croft-tick-cronjob.yaml").read_text()
    assert good in text
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace(good, bad))
    done = _validate(broken)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "cronjob/croft-tick" in done.stdout + done.stderr or "job/croft-setup" in done.stdout + done.stderr


# -- the CronJob's pod, as a PID namespace ---------------------------------------------------------------

INGEST = """
import json
from pathlib import Path

from croft import ingest


@ingest(schedule="every 15 minutes", key="id")
def rows(ctx):
    # a named pipe while the test wants a run in progress: reading it waits until the pod is gone
    yield json.loads((Path(__file__).parent.parent / "gate").read_text())
"""


def _pod(kind: str) -> dict:
    doc = next(
        d
        for d in yaml.safe_load_all((SERVER / "croft-tick-cronjob.yaml").read_text())
        if d and d["kind"] == kind
    )
    spec = doc["spec"]
    (container,) = (spec["jobTemplate"]["spec"] if kind == "CronJob" else spec)["template"]["spec"][
        "containers"
    ]
    return container


def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _members(namespace: str) -> list[int]:
    """The processes (host pids) of one PID namespace: the pod's processes."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _pid_namespace(int(p)) == namespace]


def _history(project: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(project / ".croft" / "runs.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_when_the_pods_main_process_ends_its_runs_end_and_are_recorded_crashed(make_project, tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        cannot("the pod is a PID namespace of its own (unshare --pid), which needs root and util-linux")
    project = make_project({"assets/orders.py": INGEST})
    gate = project / "gate"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "CROFT_HOME": str(tmp_path / "home"), "CROFT_RETRY_DELAYS": "0,0"}

    # the setup Job, as written: the code is run by hand (approved) and scheduling turned on
    gate.write_text('[{"id": 1}]')
    setup = subprocess.run(
        _pod("Job")["command"],
        cwd=project,
        env={**env, "CROFT_NOW": "2026-01-20T09:05:00Z"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr

    # the CronJob's pod: its command is PID 1 of a PID namespace of its own, with its own /proc
    gate.unlink()
    os.mkfifo(gate)
    command = _pod("CronJob")["command"]
    said = (tmp_path / "pod.log").open("wb")
    pod = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", *command],
        cwd=project,
        env={**env, "CROFT_NOW": "2026-01-20T09:15:00Z"},
        stdout=said,
        stderr=subprocess.STDOUT,
    )
    try:
        main = wait_for(lambda: _children(pod.pid), "the pod's main process (unshare's child)")[0]
        namespace = _pid_namespace(main)
        assert namespace and namespace != _pid_namespace(os.getpid())
        wait_for(
            lambda: _running(project),
            lambda: "the tick's scheduled run in its step; pod said: " + (tmp_path / "pod.log").read_text(),
            ignoring=(sqlite3.Error,),
        )
        inside = _members(namespace)
        assert main in inside and len(inside) >= 2  # the shell and the run it waits for (and its group)
        os.kill(main, signal.SIGKILL)  # the pod ends: its deadline, an eviction, a node drained
        wait_for(lambda: not _members(namespace), "every process of the pod to end with its main one")
        pod.wait(timeout=60)
    finally:
        if pod.poll() is None:
            pod.kill()
            pod.wait(timeout=60)
        said.close()
    (crashed_before,) = _history(project, "SELECT status FROM runs WHERE trigger = 'schedule'")
    assert crashed_before == ("running",)  # killed: it could not say so itself

    # the next pod: its tick finds the run's process gone and records it crashed
    os.unlink(gate)
    gate.write_text('[{"id": 1}, {"id": 2}]')
    assert stat.S_ISREG(gate.stat().st_mode)
    again = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", *command],
        cwd=project,
        env={**env, "CROFT_NOW": "2026-01-20T09:16:00Z"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    runs = _history(project, "SELECT id, status FROM runs WHERE trigger = 'schedule' ORDER BY rowid")
    first = runs[0][0]
    assert runs[0][1] == "crashed", runs
    steps = _history(project, f"SELECT asset, status, error FROM steps WHERE run_id = '{first}'")
    assert [(a, s) for a, s, _ in steps] == [("orders", "crashed")]
    assert '"RUN_CRASHED"' in steps[0][2], steps


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def _running(project: Path) -> bool:
    if not (project / ".croft" / "runs.sqlite").exists():
        return False
    return bool(
        _history(
            project,
            "SELECT r.id FROM runs r JOIN steps s ON s.run_id = r.id"
            " WHERE r.trigger = 'schedule' AND r.status = 'running' AND s.status = 'running'",
        )
    )
