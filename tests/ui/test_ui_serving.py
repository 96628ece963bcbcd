"""``croft ui`` under load, as a real process: a flood of idle connections under a small descriptor
limit leaves the owner's requests answered and the CPU calm, a page that resets mid-answer leaves no
traceback, and SIGTERM ends it at once."""

from __future__ import annotations

import contextlib
import http.client
import os
import resource
import signal
import socket
import struct
from pathlib import Path

import pytest
from projectkit import one_ingest
from uikit import Ui, running_ui

pytestmark = pytest.mark.processes


def signed_in(ui: Ui) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=30)
    try:
        conn.request("GET", f"/?token={ui.token}", headers={"Host": f"127.0.0.1:{ui.port}"})
        answer = conn.getresponse()
        answer.read()
        return (answer.getheader("Set-Cookie") or "").split(";", 1)[0]
    finally:
        conn.close()


def get(ui: Ui, jar: str, path: str, timeout: float = 30) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{ui.port}", "Cookie": jar})
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def small_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def test_a_flood_of_idle_connections_leaves_the_owner_answered_and_the_cpu_calm(tmp_path: Path) -> None:
    root = one_ingest(tmp_path / "proj")
    with running_ui("--project", str(root), cwd=root, preexec_fn=small_limit) as ui:
        jar = signed_in(ui)
        assert get(ui, jar, "/") == 200
        idle = []
        try:
            for _ in range(300):  # more than the process may open: they say nothing, ever
                s = socket.socket()
                s.settimeout(0.5)
                with contextlib.suppress(OSError):  # a full backlog: the kernel keeps trying
                    s.connect(("127.0.0.1", ui.port))
                idle.append(s)
            held = len(os.listdir(f"/proc/{ui.process.pid}/fd"))
            assert held < 200, held  # bounded: far from the 256 it may open
            before = cpu_s(ui.process.pid)
            for _ in range(3):  # the owner, meanwhile: each request answered
                assert get(ui, jar, "/api/status", timeout=20) == 200
            # a listener spinning on "too many open files" would burn a whole core while the owner
            # waits; bounded, the server sleeps between the requests
            spent = cpu_s(ui.process.pid) - before
            assert spent < 5.0, spent
        finally:
            for s in idle:
                s.close()
        assert get(ui, jar, "/") == 200
    assert "Traceback" not in ui.stderr[0]


def test_a_page_that_resets_mid_answer_prints_no_traceback(tmp_path: Path) -> None:
    root = one_ingest(tmp_path / "proj")
    with running_ui("--project", str(root), cwd=root) as ui:
        jar = signed_in(ui)
        for path in ("/", "/api/status", "/events", "/lineage", "/timeline"):
            s = socket.create_connection(("127.0.0.1", ui.port))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\nCookie: {jar}\r\n\r\n".encode())
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # a reset, not a goodbye: the answer's writes fail
        assert get(ui, jar, "/") == 200  # and it still answers
    assert ui.stderr[0].strip() == ""


def test_sigterm_ends_it_at_once_even_mid_look(tmp_path: Path) -> None:
    root = one_ingest(tmp_path / "proj")
    with running_ui("--project", str(root), cwd=root) as ui:
        jar = signed_in(ui)
        s = socket.create_connection(("127.0.0.1", ui.port))
        s.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\nCookie: {jar}\r\n\r\n".encode())
        assert s.recv(100).startswith(b"HTTP/1.1 200")  # an open page holds its event stream
        ui.process.send_signal(signal.SIGTERM)
        ui.process.wait(10)  # raises when it did not end
        s.close()
        assert ui.process.returncode == 0
