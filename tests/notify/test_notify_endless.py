"""Receivers that answer with a body that never ends (``server.endless``, a real local HTTP server): the
webhook, Apprise, the ping and ``croft notify test`` end within their deadline having read almost
nothing of it, and ``ctx.http`` stops at its byte cap or its whole deadline with HTTP_ERROR."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from croft.core.problems import CroftError
from croft.engine.http import HttpClient
from croft.notify.channels import send_one
from croft.notify.ping import ping
from croft.notify.webhook import post
from croft.project.config import load_project

MiB = 1024 * 1024


def test_a_webhook_that_streams_forever_is_answered_by_its_status_alone(server) -> None:
    server.route("POST", "/hook", server.endless(200))
    delivery = post(server.url("/hook"), b"{}", {"Content-Type": "application/json"}, timeout=2)
    assert delivery.status == "sent" and delivery.http_status == 200
    assert server.streamed < 64 * MiB  # what the socket buffers took, not a body read to its end


def test_a_ping_target_that_streams_forever_is_answered_by_its_status_alone(server) -> None:
    server.route("GET", "/ping", server.endless(200))
    server.route("POST", "/ping", server.endless(200))
    assert ping(server.url("/ping"), timeout=2) is None  # answered
    assert ping(server.url("/ping"), timeout=2, body=b"log tail") is None
    assert server.streamed < 64 * MiB


def test_an_apprise_target_that_streams_forever_reads_a_few_kilobytes(make_project, server) -> None:
    pytest.importorskip("apprise", reason="Apprise is an optional extra (pip install croft[apprise])")
    server.route("POST", "/apprise", server.endless(200))
    root = make_project({}, notify={"desktop": False, "urls": [f"json://127.0.0.1:{server.port}/apprise"]})
    outcome = send_one(load_project(root), f"json://127.0.0.1:{server.port}/apprise", "title", "body")
    assert outcome.status == "sent", outcome
    assert server.streamed < 64 * MiB


# runs its arguments as a child and says the child's peak memory on stderr (kilobytes on Linux)
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
    "print('peak-rss-kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
    "sys.exit(done.returncode)"
)


@pytest.mark.processes
def test_croft_notify_test_ends_against_receivers_that_never_stop(make_project, server) -> None:
    for path in ("/hook", "/ping", "/apprise"):
        server.route("POST", path, server.endless(200))
        server.route("GET", path, server.endless(200))
    notify = {
        "desktop": False,
        "webhook": server.url("/hook"),
        "ping": server.url("/ping"),
        "urls": [f"json://127.0.0.1:{server.port}/apprise"],
    }
    root = make_project({}, notify=notify)
    done = subprocess.run(  # through a parent of its own, so the peak is croft's alone, not the suite's children's
        [
            sys.executable,
            "-c",
            _PEAK_OF_CHILD,
            sys.executable,
            "-P",
            "-m",
            "croft",
            "notify",
            "test",
            "--json",
        ],
        cwd=root,
        env={**os.environ, "CROFT_NOTIFY_TIMEOUT_MS": "2000"},
        capture_output=True,
        text=True,
        timeout=120,  # it used to run until killed, growing by a gigabyte every few seconds
    )
    envelope = json.loads(done.stdout)
    tried = {c["channel"]: c for c in envelope["data"]["channels"]}
    assert {"webhook", "ping"} <= set(tried), envelope
    peak = int(done.stderr.rsplit("peak-rss-kb ", 1)[1])
    assert peak < 512 * 1024, peak  # kilobytes: never a body held in memory


def test_ctx_http_stops_at_its_byte_cap(server) -> None:
    server.route("GET", "/feed", server.endless(200))
    with HttpClient(sleep=lambda s: None) as http, pytest.raises(CroftError) as raised:
        http.get(server.url("/feed"), max_bytes=4 * MiB, retries=0)
    assert raised.value.problem.code == "HTTP_ERROR"
    assert "larger than 4,194,304 bytes" in raised.value.problem.message
    assert not raised.value.retryable


def test_ctx_http_stops_at_its_whole_deadline(server) -> None:
    server.route("GET", "/feed", server.endless(200))
    with HttpClient(sleep=lambda s: None) as http, pytest.raises(CroftError) as raised:
        http.get(server.url("/feed"), deadline=0.2, max_bytes=1 << 40, retries=1)
    assert raised.value.problem.details["error"] == "DeadlineExceeded"
    assert "did not come within 0.2 s" in raised.value.problem.message
    assert len(server.requests_to("/feed")) == 2  # retried once, as a timeout is


def test_ctx_http_still_reads_an_ordinary_answer(server) -> None:
    server.route("GET", "/items", server.reply(200, [{"id": 1}]))
    with HttpClient(sleep=lambda s: None) as http:
        assert http.get(server.url("/items")).json() == [{"id": 1}]
