"""What asset code gets as ``ctx``: the HTTP client, the cursor, its declared secrets, a log, input rows."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from croft.core.clock import now, to_iso
from croft.core.private import open_append
from croft.core.problems import CroftError
from croft.core.redact import Redactor
from croft.engine.logcap import CappedLog, cut_line

__all__ = ["IngestContext", "LazyHttp", "StepLog", "TransformContext"]


class StepLog:
    """The step's log file; every line is redacted before it is written, and the log keeps the head and the
    tail of what the step says (``engine.logcap``): output without bound never fills the disk."""

    def __init__(self, path: Path, redactor: Redactor):
        self.path = path
        self._redactor = redactor
        self._handle = os.fdopen(open_append(path), "a", encoding="utf-8")
        self._capped = CappedLog(self._put, lambda: to_iso(now()))

    def __call__(self, *parts: Any) -> None:
        text = " ".join(str(p) for p in parts)
        for line in text.splitlines() or [""]:
            self._capped.add(f"{to_iso(now())} {self._redactor.text(cut_line(line))}\n")

    def _put(self, line: str) -> None:
        self._handle.write(line)
        self._handle.flush()

    def close(self) -> None:
        try:
            self._capped.close()
        finally:
            self._handle.close()


class LazyHttp:
    """The step's HTTP client, built on first use: an ingest that never touches ``ctx.http`` never imports
    httpx nor pays for a client."""

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._build()
            return self._client

    @property
    def requests(self) -> int:
        """Completed requests so far (0 when the client was never built)."""
        return int(self._client.requests) if self._client is not None else 0

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


class _Base:
    def __init__(self, *, asset: str, run_id: str, log: StepLog, preview: bool):
        self.asset = asset
        self.run_id = run_id
        self.preview = preview
        self._log = log

    def log(self, *parts: Any) -> None:
        """Write to this step's log (``croft logs ASSET``); secrets are redacted."""
        self._log(*parts)


class IngestContext(_Base):
    def __init__(
        self,
        *,
        asset: str,
        run_id: str,
        log: StepLog,
        preview: bool,
        http: Any,
        since: Any,
        declared: tuple[str, ...],
        env: Mapping[str, str],
        window: Any = None,
    ):
        super().__init__(asset=asset, run_id=run_id, log=log, preview=preview)
        self._http = http
        self.since = since
        # A backfill's range (engine.window.Window: ``start`` and ``end``, UTC datetimes, end excluded);
        # None in a usual run. ``since`` is then the window's start.
        self.window = window
        self._declared = declared
        self._env = env

    @property
    def http(self) -> Any:
        """The HTTP client (retries, redacted logs, progress marks); built the first time it is asked for."""
        return self._http.client() if isinstance(self._http, LazyHttp) else self._http

    def secret(self, name: str) -> str:
        """A secret the asset declared in ``secrets=[...]``; anything else is refused."""
        if name not in self._declared:
            raise CroftError(
                "SECRET_MISSING",
                f"{self.asset} asked for secret {name}, which it does not declare",
                f'Add it to the decorator: @ingest(secrets=["{name}"], ...), and put {name}=... in .env.',
                asset=self.asset,
            )
        value = self._env.get(name)
        if not value:
            raise CroftError(
                "SECRET_MISSING",
                f"{self.asset} needs secret {name}, which is neither in .env nor in the environment",
                f"Add a line {name}=... to the project's .env (it is git-ignored and never leaves this machine).",
                asset=self.asset,
            )
        return value


class TransformContext(_Base):
    def __init__(
        self,
        *,
        asset: str,
        run_id: str,
        log: StepLog,
        preview: bool,
        inputs: tuple[str, ...],
        read: Callable[[str], Iterator[dict[str, Any]]],
    ):
        super().__init__(asset=asset, run_id=run_id, log=log, preview=preview)
        self._inputs = inputs
        self._read = read

    def rows(self, name: str) -> Iterator[dict[str, Any]]:
        """Every row of a declared input, as dicts of its columns."""
        if name not in self._inputs:
            raise CroftError(
                "ASSET_INVALID",
                f"{self.asset} read {name}, which is not among its inputs {list(self._inputs)}",
                f'Declare it: @transform(inputs=[..., "{name}"]) so croft orders and refreshes it correctly.',
                asset=self.asset,
            )
        return self._read(name)
