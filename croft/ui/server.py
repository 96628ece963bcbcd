"""The status page's HTTP server: the standard library's threading server on 127.0.0.1, every request
through the gate (``guard``), its connections bounded (``conns``), the page and its JSON from the
shared look (``looks`` over ``snapshot``), the buttons through ``actions``, and one event stream per
open page fed by ``watch``.

Ctrl-C or SIGTERM (or ``close``) stops it; runs it started go on, as runs a person starts in a
terminal do. A page that goes away mid-answer ends its thread quietly: no traceback, ever.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from croft.core.envelope import dumps
from croft.core.paths import croft_home
from croft.core.problems import CroftError, problem
from croft.core.result import Result
from croft.project.config import load_project
from croft.scheduler.heartbeat import USER_BEATS
from croft.ui import actions, assetpage, lineage, page, snapshot, timeline
from croft.ui.conns import HEADER_S, Connections
from croft.ui.guard import HEADERS, Gate, new_gate
from croft.ui.looks import Looks
from croft.ui.watch import Watcher

__all__ = ["UiServer", "start"]

STATIC = Path(__file__).with_name("static")
SHIPPED = {"/static/ui.js": "text/javascript; charset=utf-8", "/static/ui.css": "text/css; charset=utf-8"}
MAX_BODY = 64 * 1024
NOTICE_AGE_S = 120.0
ACTIONS = {"/api/run": "run", "/api/pause": "pause", "/api/resume": "resume"}
_STARVED = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


@dataclass
class _Notices:
    """What a button did, for the page it was pressed on (a form's way back names it): never shown to
    another page or session, and gone after two minutes."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    found: dict[str, dict[str, Any]] = field(default_factory=dict)
    ids: Any = field(default_factory=lambda: itertools.count(1))


class UiServer(ThreadingHTTPServer):
    daemon_threads = True  # an open event stream must not keep Ctrl-C waiting
    block_on_close = False
    request_queue_size = 64

    def __init__(self, port: int, targets: snapshot.Targets) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.gate: Gate = new_gate(self.server_address[1])
        self.targets = targets
        self.conns = Connections()
        self._rendered: tuple[tuple[Any, ...], str] | None = None
        self._rendered_lock = threading.Lock()
        self.notes = _Notices()
        self.running: list[str] = []
        # the user's idle heartbeats (one file, written once a minute while the OS job ticks): the
        # strip's "last tick" and whether the scheduler is stale follow it
        beats = [croft_home() / USER_BEATS]
        self.watcher = Watcher(
            self._folders, lambda: list(self.running), self.targets.roots, lambda: beats
        ).start()
        self.looks = Looks(
            self._take, snapshot.doctor_envelope, lambda: self.watcher.files, self.watcher.poke
        )

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.gate.token}"

    def _folders(self) -> list[Path]:
        out = []
        for root in self.targets.roots():
            try:
                out.append(load_project(root).config.state_dir)
            except CroftError:
                out.append(root / ".croft")
        return out

    def close(self) -> None:
        self.watcher.stop()
        self.shutdown()
        self.server_close()
        self.conns.hang_up_all()

    # -- connections --------------------------------------------------------------------------------
    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno in _STARVED:
                self.conns.starved()  # room for the next one, and no spinning on a listener we cannot serve
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        self.conns.admit(request)
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no thread to be had: this one is closed, the others go on
            self.shutdown_request(request)

    def shutdown_request(self, request: Any) -> None:
        self.conns.gone(request)
        super().shutdown_request(request)

    def service_actions(self) -> None:
        self.conns.reap()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A page that went away is no error; anything else is one line, never a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (OSError, ValueError)):
            return
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"croft ui: a request failed: {type(exc).__name__}: {exc}\n")

    # -- what the page shows ------------------------------------------------------------------------
    def _take(self) -> dict[str, Any]:
        snap = snapshot.overview(self.targets, None, self.watcher.poke)
        self.running = [
            r["runId"]
            for p in snap["projects"]
            for r in ((p["status"].get("data") or {}).get("running") or [])
        ]
        return snap

    def overview(self) -> dict[str, Any]:
        return self.looks.current()

    def overview_page(self, notices: list[dict[str, Any]]) -> str:
        """The overview's HTML, rendered once per look (and doctor answer, and minute) for every tab:
        twenty tabs refetching after a change cost one rendering, not twenty."""
        snap = self.overview()
        if notices:  # a page's own notice: its own rendering
            return page.overview_html(snap, self.gate.csrf, notices)
        same = (
            snap["projects"],
            snap.get("doctor"),
            tuple(bool(p.get("stripsPending")) for p in snap["projects"]),
            int(time.monotonic() // 60),
        )
        with self._rendered_lock:
            kept = self._rendered
        if kept is not None and kept[0][0] is same[0] and kept[0][1] is same[1] and kept[0][2:] == same[2:]:
            return kept[1]
        html = page.overview_html(snap, self.gate.csrf, notices)
        with self._rendered_lock:
            self._rendered = (same, html)
        return html

    def project_look(self, root: Path) -> dict[str, Any] | None:
        """The project's part of the last look, without waiting for one (None: none taken yet)."""
        last = self.looks.latest()
        if last is None:
            return None
        return next((p for p in last["projects"] if p["root"] == str(root)), None)

    def notice(self, wanted: str | None) -> list[dict[str, Any]]:
        if not wanted:
            return []
        cut = time.monotonic() - NOTICE_AGE_S
        with self.notes.lock:
            self.notes.found = {k: n for k, n in self.notes.found.items() if n["at"] >= cut}
            found = self.notes.found.get(wanted)
        return [found] if found else []

    def tell(self, kind: str, text: str) -> str:
        with self.notes.lock:
            key = str(next(self.notes.ids))
            self.notes.found[key] = {"kind": kind, "text": text, "at": time.monotonic()}
        return key

    # -- the buttons --------------------------------------------------------------------------------
    def act(self, action: str, fields: dict[str, str]) -> tuple[dict[str, Any], str]:
        """The action's envelope, and the notice that says what it did."""
        root = self.targets.find(fields.get("project", ""))
        try:
            if root is None:
                raise CroftError(
                    "USAGE",
                    f"this page does not show the project {fields.get('project')!r}",
                    "Act on a project the page lists, or start `croft ui --project DIR` for it.",
                )
            project = load_project(root)
            if action == "run":
                result = actions.run_now(project, fields.get("asset", ""))
            elif action == "pause":
                result = actions.pause(project, fields.get("asset") or None)
            else:
                result = actions.resume(project, fields.get("asset") or None)
        except CroftError as exc:
            result = Result(problems=[exc.problem, *exc.extra])
        self.looks.forget()
        self.watcher.poke()
        return result.envelope(), self.tell(*_words(action, fields, result))


def _words(action: str, fields: dict[str, str], result: Result) -> tuple[str, str]:
    errors = [p for p in result.problems if p.severity == "error"]
    if not result.is_ok or errors:
        first = (errors or result.problems)[0]
        return "bad", first.message
    if action == "run":
        run_id = result.data.get("runId")
        return "good", f"croft run {fields.get('asset')}: run {run_id} " + (
            "started" if result.data.get("status") is None else str(result.data["status"])
        )
    what = f"{fields['asset']}'s schedule" if fields.get("asset") else "scheduling"
    return "good", f"{what} paused for 2 h" if action == "pause" else f"{what} resumed"


def start(port: int, targets: snapshot.Targets) -> UiServer:
    """Bind (raising PORT_IN_USE when the port is taken) and serve on a thread; ``close`` stops it."""
    try:
        server = UiServer(port, targets)
    except OSError as exc:
        raise CroftError(
            "PORT_IN_USE",
            f"croft ui cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}",
            "Another program (or another croft ui) holds that port: pick another with --port, or --port 0"
            " for any free one.",
            fix={"kind": "command", "command": "croft ui --port 0", "description": "serve on any free port"},
            details={"port": port},
        ) from None
    threading.Thread(target=server.serve_forever, args=(0.2,), name="croft-ui", daemon=True).start()
    # the first look is taken while the browser opens: the first page joins it instead of starting it
    threading.Thread(target=_warm, args=(server,), name="croft-ui-warm", daemon=True).start()
    return server


def _warm(server: UiServer) -> None:
    with contextlib.suppress(Exception):  # a look that fails now fails again for the page, which says why
        server.looks.current()


def _safe_back(value: str | None) -> str:
    """Where a form goes back to: a path of this page only, never another site."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


class _Handler(BaseHTTPRequestHandler):
    server: UiServer
    protocol_version = "HTTP/1.1"
    server_version = "croft-ui"
    sys_version = ""
    timeout = HEADER_S  # a socket silent this long (mid-header, or between requests) is closed

    def handle_one_request(self) -> None:
        self.server.conns.waiting(self.request)
        super().handle_one_request()

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok:
            self.server.conns.answering(self.request)
        return ok

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: a request line carries the token, and no log may."""

    # -- answers ------------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {**HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _html(self, text: str, status: int = 200) -> None:
        self._send(status, text.encode("utf-8"), "text/html; charset=utf-8")

    def _json(self, value: Any, status: int = 200) -> None:
        self._send(status, (dumps(value) + "\n").encode("utf-8"), "application/json")

    def _refuse(self, status: int, why: str) -> None:
        self.close_connection = True
        if "json" in (self.headers.get("Accept") or "") or self.path.startswith("/api/"):
            body = Result(problems=[problem("USAGE", why, _REFUSAL_HINTS[status])]).envelope()
            self._json(body, status)
        else:
            self._html(page.refused_html(status, f"{why}. {_REFUSAL_HINTS[status]}"), status)

    def _redirect(self, to: str, extra: dict[str, str] | None = None) -> None:
        self._send(HTTPStatus.SEE_OTHER, b"", "text/plain", {"Location": to, **(extra or {})})

    # -- the gate -----------------------------------------------------------------------------------
    def _admitted(self) -> bool:
        gate = self.server.gate
        if not gate.host_ok(self.headers.get("Host")):
            self._refuse(HTTPStatus.MISDIRECTED_REQUEST, f"this page answers only to 127.0.0.1:{gate.port}")
            return False
        if not gate.signed_in(self.headers.get("Cookie")):
            self._refuse(HTTPStatus.FORBIDDEN, "this page needs the address croft ui printed")
            return False
        return True

    def _token_visit(self, parts: Any, query: dict[str, list[str]]) -> bool:
        """A visit with ``?token=``: swapped for the cookie, and the address bar loses it (303)."""
        if "token" not in query:
            return False
        gate = self.server.gate
        if not gate.host_ok(self.headers.get("Host")):
            self._refuse(HTTPStatus.MISDIRECTED_REQUEST, f"this page answers only to 127.0.0.1:{gate.port}")
        elif not gate.token_ok(query["token"][0]):
            self._refuse(HTTPStatus.FORBIDDEN, "this token is not the one croft ui printed")
        else:
            rest = {k: v for k, v in query.items() if k != "token"}
            to = parts.path + (f"?{urlencode(rest, doseq=True)}" if rest else "")
            self._redirect(_safe_back(to), {"Set-Cookie": gate.set_cookie()})
        return True

    # -- GET ----------------------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if self._token_visit(parts, query) or not self._admitted():
            return
        one = {k: v[0] for k, v in query.items()}
        route = parts.path
        notices = self.server.notice(one.get("notice"))
        if route in SHIPPED:
            self._send(200, (STATIC / route.rsplit("/", 1)[1]).read_bytes(), SHIPPED[route])
        elif route == "/":
            self._html(self.server.overview_page(notices))
        elif route == "/api/status":
            self._json(self.server.overview())
        elif route in ("/lineage", "/timeline", "/api/timeline"):
            self._picture_route(route)
        elif route in ("/asset", "/api/asset", "/confirm"):
            self._asset_route(route, one, notices)
        elif route == "/events":
            self._events()
        else:
            self._refuse(HTTPStatus.NOT_FOUND, f"there is no {route} here")

    def _picture_route(self, route: str) -> None:
        snap = self.server.overview()
        if route == "/lineage":
            projects = [{**p, "inputs": snapshot.inputs_of(Path(p["root"]))} for p in snap["projects"]]
            self._html(lineage.lineage_html({**snap, "projects": projects}, self.server.gate.csrf))
            return
        lines = [snapshot.timeline(p) for p in snap["projects"]]
        if route == "/api/timeline":
            self._json({"at": snap["at"], "projects": lines})
        else:
            self._html(timeline.timeline_html(snap, lines, self.server.gate.csrf))

    def _asset_route(self, route: str, one: dict[str, str], notices: list[dict[str, Any]]) -> None:
        root = self.server.targets.find(one.get("project", ""))
        asset = one.get("asset", "")
        if root is None or not asset:
            self._refuse(HTTPStatus.NOT_FOUND, "no such project or asset on this page")
            return
        if route == "/confirm":
            self._html(page.confirm_html(str(root), asset, self.server.gate.csrf))
            return
        run = one.get("run")
        found = snapshot.asset_page(
            root,
            asset,
            self.server.project_look(root),
            run_id=run if run and run.startswith("r_") else None,
            result=one.get("result") if one.get("result") in ("failed", "ok", "skipped") else None,
            trigger=one.get("trigger")
            if one.get("trigger") in ("schedule", "manual", "agent", "dagster")
            else None,
        )
        if route == "/api/asset":
            self._json(found)
        else:
            self._html(assetpage.asset_html(found, self.server.gate.csrf, notices))

    def _events(self) -> None:
        """Server-sent events: ``change`` with the watcher's generation whenever it moves (a comment
        every half minute otherwise, which tells a page that is gone), until the page goes away or the
        server stops. At most ``conns.STREAMS`` at once: beyond, 503 and the page refreshes itself."""
        conns = self.server.conns
        if not conns.open_stream():
            self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, "too many pages are open on this croft ui")
            return
        try:
            self._stream()
        finally:
            conns.close_stream()

    def _stream(self) -> None:
        self.send_response(200)
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        watcher = self.server.watcher
        seen = watcher.generation
        try:
            self.wfile.write(f"retry: 2000\nevent: hello\ndata: {seen}\n\n".encode())
            self.wfile.flush()
            while not watcher.stopped:
                now = watcher.wait(seen)
                if now == seen:
                    self.wfile.write(b": still here\n\n")
                else:
                    seen = now
                    self.wfile.write(f"event: change\ndata: {seen}\n\n".encode())
                self.wfile.flush()
        except OSError:
            return  # the page went away

    # -- POST ---------------------------------------------------------------------------------------
    def do_POST(self) -> None:
        if not self._admitted():
            return
        route = urlsplit(self.path).path
        if route not in ACTIONS:
            self._refuse(HTTPStatus.NOT_FOUND, f"there is no {route} here")
            return
        fields, is_form = self._body()
        if fields is None:
            return
        why = self.server.gate.post_refusal(
            self.headers.get("Origin"), self.headers.get("X-CSRF-Token") or fields.get("csrf")
        )
        if why:
            self._refuse(HTTPStatus.FORBIDDEN, why)
            return
        answer, notice = self.server.act(ACTIONS[route], fields)
        if is_form:  # a page without JavaScript: back to where it was, the notice says what happened
            back = _safe_back(fields.get("back"))
            self._redirect(back + ("&" if "?" in back else "?") + urlencode({"notice": notice}))
        else:
            self._json(answer)

    def _body(self) -> tuple[dict[str, str] | None, bool]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a request body of at most {MAX_BODY} bytes")
            return None, False
        raw = self.rfile.read(length).decode("utf-8", "replace")
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype == "application/json":
            try:
                value = json.loads(raw or "{}")
            except ValueError:
                value = None
            if not isinstance(value, dict):
                self._refuse(HTTPStatus.BAD_REQUEST, "the body must be one JSON object")
                return None, False
            return {str(k): str(v) for k, v in value.items()}, False
        return {k: v[0] for k, v in parse_qs(raw).items()}, True


_REFUSAL_HINTS: dict[int, str] = {
    HTTPStatus.FORBIDDEN: "Open the address `croft ui` printed (it carries the token), from this machine",
    HTTPStatus.MISDIRECTED_REQUEST: "Open http://127.0.0.1:<port>/ or http://localhost:<port>/ as croft ui printed it",
    HTTPStatus.NOT_FOUND: "The overview at / links to every asset",
    HTTPStatus.BAD_REQUEST: "The page's own buttons send what it needs",
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: "The page's own buttons send a few fields only",
    HTTPStatus.SERVICE_UNAVAILABLE: "Close some of the page's tabs; the others still update",
}
