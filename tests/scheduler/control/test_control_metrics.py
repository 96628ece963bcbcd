"""`croft metrics` is Prometheus text a real parser reads, and its numbers are the ones `croft status
--json` and `croft schedule status --json` show for every registered project; `croft serve --metrics`
serves the same text over HTTP, bounded."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from enginekit import croft
from prometheus_client.parser import text_string_to_metric_families
from waiting import wait_for

from croft.cli.group import build_group
from croft.core.clock import parse_instant
from croft.core.problems import CODES
from croft.scheduler.control import metricserver
from croft.scheduler.control.metrics import FAMILIES, Look, render, samples

NOW = "2026-03-02T09:05:00Z"
LATER = "2026-03-02T11:40:00Z"  # the promise of one hour is broken by then

GOOD = """
from croft import ingest


@ingest(schedule="every 15 minutes", key="id", fresh_within="1 hour")
def rows(ctx):
    yield [{"id": 1}, {"id": 2}, {"id": 3}]
"""
BAD = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    raise RuntimeError("the API moved")
"""


def _values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample the official parser finds: (name, sorted labels) -> value."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _key(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted(labels.items()))


def _seconds(instant: str) -> float:
    return parse_instant(instant).timestamp()


@pytest.fixture
def two_projects(make_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two registered projects: one loaded with a promise, one whose ingest fails twice in a row."""
    monkeypatch.setenv("CROFT_RETRY_DELAYS", "0,0")
    monkeypatch.setenv("CROFT_NOW", NOW)
    good = make_project({"assets/orders.py": GOOD, "assets/big.sql": "SELECT id FROM orders WHERE id > 1\n"})
    bad = make_project({"assets/feed.py": BAD}, root=tmp_path / "bad")
    for root in (good, bad):
        assert croft(root, "schedule", "on", "--no-os-job")[0] == 0
    assert croft(good, "run")[0] == 0
    assert croft(bad, "run")[0] == 1
    assert croft(bad, "run")[0] == 1
    monkeypatch.setenv("CROFT_NOW", LATER)
    return good, bad


def test_metrics_parse_and_match_status_for_every_registered_project(two_projects):
    code, envelope = croft(two_projects[0], "metrics")
    assert code == 0 and envelope["ok"], envelope
    values = _values(envelope["data"]["text"])
    assert {p["name"] for p in envelope["data"]["projects"]} == {"proj", "bad"}
    checked = 0
    for root in two_projects:
        status = croft(root, "status")[1]["data"]
        project = {"project": root.name, "root": str(root)}
        assert values[_key("croft_project_readable", **project)] == 1
        assert values[_key("croft_project_scheduling_on", **project)] == 1
        assert values[_key("croft_project_runs_running", **project)] == len(status["running"])
        assert status["scheduling"]["heartbeatAt"] is None  # nothing ticked: no made-up last tick
        assert _key("croft_project_last_tick_timestamp_seconds", **project) not in values
        for asset in status["assets"]:
            labels = {**project, "asset": asset["asset"]}
            last = asset["lastRun"]
            failing = asset["failing"]["count"] if asset["failing"] else 0
            assert values[_key("croft_asset_failures_in_a_row", **labels)] == failing
            assert values[_key("croft_asset_last_run_timestamp_seconds", **labels)] == _seconds(last["at"])
            assert (
                values[_key("croft_asset_last_run_duration_seconds", **labels)] == last["durationMs"] / 1000
            )
            assert values[_key("croft_asset_stale", **labels)] == int(asset["stale"])
            if asset["lastLoadedAt"]:
                got = values[_key("croft_asset_last_success_timestamp_seconds", **labels)]
                assert got == _seconds(asset["lastLoadedAt"])
                assert values[_key("croft_asset_rows", **labels)] == asset["rows"]
            else:
                assert _key("croft_asset_last_success_timestamp_seconds", **labels) not in values
            promise = status.get("freshness", {}).get(asset["asset"])
            if promise:
                assert values[_key("croft_asset_data_age_seconds", **labels)] == promise["ageSeconds"]
                assert values[_key("croft_asset_fresh_within_seconds", **labels)] == promise["withinSeconds"]
                assert values[_key("croft_asset_freshness_breached", **labels)] == int(promise["breached"])
            checked += 1
    assert checked == 3
    # the story itself, so a match of two wrong numbers cannot pass: failed twice, promise broken
    assert (
        values[_key("croft_asset_failures_in_a_row", project="bad", root=str(two_projects[1]), asset="feed")]
        >= 2
    )
    orders = {"project": "proj", "root": str(two_projects[0]), "asset": "orders"}
    assert values[_key("croft_asset_freshness_breached", **orders)] == 1
    assert values[_key("croft_asset_data_age_seconds", **orders)] == _seconds(LATER) - _seconds(NOW)
    assert values[_key("croft_asset_fresh_within_seconds", **orders)] == 3600
    # the queue: what `croft schedule status` says of this user's scheduled runs
    queue = croft(two_projects[0], "schedule", "status")[1]["data"]["queue"]
    assert values[_key("croft_scheduled_runs_cap")] == queue["cap"]
    assert values[_key("croft_scheduled_runs_running")] == queue["running"]
    assert values[_key("croft_scheduled_runs_waiting")] == queue["waitingCount"]


def test_the_human_output_is_the_text_alone_and_a_broken_project_is_a_zero_and_a_warning(two_projects):
    good, bad = two_projects
    (bad / "croft.json").write_text("{ not json")
    old = Path.cwd()
    os.chdir(good)
    try:
        result = CliRunner().invoke(build_group(), ["metrics"], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code == 0
    values = _values(result.stdout)  # stdout is nothing but Prometheus text
    assert values[_key("croft_project_readable", project="bad", root=str(bad))] == 0
    assert values[_key("croft_project_readable", project="proj", root=str(good))] == 1
    assert "warning: CONFIG_INVALID" in result.stderr


def test_the_last_tick_is_the_heartbeat_status_shows(two_projects):
    good = two_projects[0]
    subprocess.run(
        [sys.executable, "-m", "croft", "tick"], cwd=good, env={**os.environ}, check=True, capture_output=True
    )
    beat = croft(good, "status")[1]["data"]["scheduling"]["heartbeatAt"]
    values = _values(croft(good, "metrics")[1]["data"]["text"])
    assert beat and values[
        _key("croft_project_last_tick_timestamp_seconds", project="proj", root=str(good))
    ] == (_seconds(beat))


def test_labels_are_escaped_so_any_folder_name_reads_back():
    odd = 'we"ird\\name\nline'
    text = render(samples([Look(f"/data/{odd}", odd, None)], {"cap": 2, "running": 0, "waiting": []}))
    values = _values(text)
    assert values[_key("croft_project_readable", project=odd, root=f"/data/{odd}")] == 0
    assert {f.name for f in text_string_to_metric_families(text)} == set(FAMILIES)


# -- over HTTP -----------------------------------------------------------------------------------------


def _get(address: str, path: str) -> tuple[int, str, str]:
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        conn.close()


def test_the_metric_server_answers_metrics_only_and_bounds_its_connections(two_projects):
    server = metricserver.start(("127.0.0.1", 0))
    try:
        status, ctype, body = _get(server.address, "/metrics")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
        values = _values(body)
        assert values[_key("croft_project_readable", project="proj", root=str(two_projects[0]))] == 1
        assert _get(server.address, "/")[0] == 404
        # as many silent clients as the bound: the next one is refused at once with 503
        host, port = server.address.rsplit(":", 1)
        bound = metricserver.MAX_CONNECTIONS
        idle = [socket.create_connection((host, int(port)), timeout=30) for _ in range(bound)]
        try:
            wait_for(lambda: server.active == bound, "every slot taken by a silent client")
            extra = socket.create_connection((host, int(port)), timeout=30)
            assert extra.recv(100).startswith(b"HTTP/1.1 503")
            extra.close()
        finally:
            for sock in idle:
                sock.close()
        wait_for(lambda: server.active == 0, "the slots given back")
        assert _get(server.address, "/metrics")[0] == 200
    finally:
        server.close()


def test_a_client_that_never_ends_its_headers_is_cut_off_unanswered(two_projects, monkeypatch):
    monkeypatch.setattr(metricserver, "HEADER_TIMEOUT_S", 0.3)
    server = metricserver.start(("127.0.0.1", 0))
    try:
        host, port = server.address.rsplit(":", 1)
        slow = socket.create_connection((host, int(port)), timeout=30)
        try:
            slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            assert slow.recv(100) == b""  # closed by the server, with no answer to a half request
        finally:
            slow.close()
        wait_for(lambda: server.active == 0, "the slot given back")
    finally:
        server.close()


@pytest.mark.parametrize("bad", ["9464", "localhost:", ":9464", "127.0.0.1:70000", "127.0.0.1:http"])
def test_a_bad_metrics_address_is_a_usage_error(bad):
    result = CliRunner().invoke(build_group(), ["serve", "--metrics", bad, "--json"], catch_exceptions=False)
    envelope = json.loads(result.stdout)
    assert result.exit_code == 2 and envelope["problems"][0]["code"] == "USAGE", envelope
    assert bad in envelope["problems"][0]["message"]


def test_a_taken_metrics_port_is_port_in_use():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            build_group(), ["serve", "--metrics", f"127.0.0.1:{port}", "--json"], catch_exceptions=False
        )
    finally:
        taken.close()
    envelope = json.loads(result.stdout)
    assert result.exit_code == 2 and envelope["problems"][0]["code"] == "PORT_IN_USE", envelope


@pytest.mark.processes
def test_croft_serve_with_metrics_serves_them_beside_its_ticks(two_projects):
    env = {**os.environ, "CROFT_SERVE_INTERVAL_MS": "400"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "croft", "serve", "--metrics", "127.0.0.1:0", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = ""
        while "metrics at" not in line:
            line = proc.stderr.readline()  # type: ignore[union-attr]
            assert line, "croft serve ended before saying where its metrics are"
        address = line.split("http://", 1)[1].split("/", 1)[0]
        status, _, body = _get(address, "/metrics")
        assert status == 200
        values = _values(body)
        for root in two_projects:
            assert values[_key("croft_project_readable", project=root.name, root=str(root))] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert json.loads(out)["data"]["metrics"] == address
    host, port = address.rsplit(":", 1)
    with pytest.raises(OSError):  # stopped with serve
        socket.create_connection((host, int(port)), timeout=5)


def test_a_registry_croft_cannot_read_is_a_failed_scrape_that_says_why(_croft_home):
    (_croft_home / "projects.json").write_text("[{")
    server = metricserver.start(("127.0.0.1", 0))
    try:
        status, _, body = _get(server.address, "/metrics")
        assert status == 500 and body.split(":", 1)[0] in CODES, body
        assert _get(server.address, "/metrics")[0] == 500  # and the server answers on
    finally:
        server.close()
