"""A tiny local API for scripts/demo: paginated orders with an ``updated_since`` filter, on 127.0.0.1.

Usage: python scripts/demo_source.py PORTFILE   (writes the chosen port to PORTFILE, serves until killed)
A request to /advance adds a new order and updates an old one, so the next run has something new to
fetch; after a request to /break, /orders answers 403 (as an API does when its token is revoked), so the
next run fails the way a real one would (until /fix).
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

LOCK = threading.Lock()
ORDERS = [
    {
        "id": i,
        "customer": ["ada", "bo", "cy"][i % 3],
        "total": 10 * i,
        "updated_at": f"2026-01-0{i}T10:00:00Z",
    }
    for i in range(1, 6)
]
STATE = {"generation": 0, "broken": False}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/advance":
            with LOCK:
                STATE["generation"] += 1
                n = len(ORDERS) + 1
                ORDERS.append(
                    {"id": n, "customer": "di", "total": 99, "updated_at": f"2026-01-{10 + n}T10:00:00Z"}
                )
                ORDERS[0] = {**ORDERS[0], "total": 11, "updated_at": f"2026-01-{10 + n}T11:00:00Z"}
            return self._send({"ok": True})
        if url.path in ("/break", "/fix"):
            STATE["broken"] = url.path == "/break"
            return self._send({"ok": True})
        if url.path != "/orders":
            return self._send({"error": "not found"}, 404)
        if STATE["broken"]:
            return self._send({"error": "this token was revoked"}, 403)
        query = parse_qs(url.query)
        since = query.get("updated_since", [""])[0]
        page = int(query.get("page", ["1"])[0])
        with LOCK:
            rows = sorted((o for o in ORDERS if o["updated_at"] >= since), key=lambda o: o["updated_at"])
        chunk = rows[(page - 1) * 3 : page * 3]
        return self._send({"data": chunk, "has_more": page * 3 < len(rows)})

    def _send(self, body: object, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1], "w") as handle:
        handle.write(str(server.server_address[1]))
    server.serve_forever()
