"""What asset code may not do to croft's own process while its step runs: write to croft's stdout, or exit.

Inside :func:`step_guard`:

- ``print()`` and writes to ``sys.stdout`` / ``sys.stderr`` go to the step log, line by line and redacted
  (the log redacts), never to croft's stdout, which carries the one JSON envelope. Writes straight to file
  descriptors 1 and 2 (C code, a subprocess) are caught too: both point at a temporary file whose lines
  join the step log when the step ends.
- ``os._exit()`` raises :class:`AssetExit` instead of ending the process (``sys.exit()`` already raises
  ``SystemExit``), so the step fails as ``ASSET_CODE_ERROR`` and croft still prints and records the run.

Everything is restored when the step ends, so each step (and each later run in a long-lived process)
starts from croft's real streams. Around a whole run, :func:`output_routing` also covers a thread that an
ended step left behind (a generator still running after its TIMEOUT): between steps its writes are
dropped instead of reaching croft's stdout before the envelope; only the thread that started the run
writes to the real streams.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

from croft.engine.logcap import LINE_CHARS

__all__ = ["AssetExit", "output_routing", "step_guard"]


class AssetExit(Exception):
    """Asset code called ``os._exit(code)`` during its step."""

    def __init__(self, code: int):
        super().__init__(f"os._exit({code}) was called; an asset cannot end croft's process")
        self.code = code


class _LogStream(io.TextIOBase):
    """A text stream whose complete lines go to the step log."""

    def __init__(self, log: Callable[[str], None], label: str):
        self._log = log
        self._label = label
        self._pending = ""
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += str(text)
            *lines, self._pending = self._pending.split("\n")
            if len(self._pending) > LINE_CHARS:  # a line that never ends is still a bounded one
                lines.append(self._pending)
                self._pending = ""
        for line in lines:
            self._log(f"{self._label}: {line}")
        return len(text)

    def flush(self) -> None:
        with self._lock:
            rest, self._pending = self._pending, ""
        if rest:
            self._log(f"{self._label}: {rest}")

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


class _Router(io.TextIOBase):
    """sys.stdout/sys.stderr for a run: the step's log while a step runs, else the real stream for the
    run's own thread and nothing for any other (a thread an ended step left behind)."""

    def __init__(self, real: Any):
        self.real = real
        self.owner = threading.current_thread()
        self.target: _LogStream | None = None

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        target = self.target
        if target is not None:
            return target.write(text)
        if threading.current_thread() is self.owner:
            return int(self.real.write(text))
        return len(text)

    def flush(self) -> None:
        target = self.target
        if target is not None:
            target.flush()
        elif threading.current_thread() is self.owner:
            self.real.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.real, "encoding", "utf-8"))


@contextlib.contextmanager
def output_routing() -> Iterator[None]:
    """Route sys.stdout/sys.stderr through :class:`_Router` for a whole run; restored at its end."""
    real = (sys.stdout, sys.stderr)
    sys.stdout, sys.stderr = _Router(real[0]), _Router(real[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = real


def _raise_exit(code: int = 0) -> None:
    raise AssetExit(code)


@contextlib.contextmanager
def _descriptors(log: Callable[[str], None]) -> Iterator[None]:
    """Point fds 1 and 2 at a temporary file for the block; its lines go to the log afterwards."""
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no such descriptors (a detached process may have none): nothing to catch
        yield
        return
    with tempfile.TemporaryFile() as spill:
        os.dup2(spill.fileno(), 1)
        os.dup2(spill.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            spill.seek(0)
            while True:  # line by line, each at most LINE_CHARS: a huge spill never sits in memory
                raw = spill.readline(LINE_CHARS)
                if not raw:
                    break
                log(f"output: {raw.decode('utf-8', 'replace').rstrip(chr(13) + chr(10))}")


@contextlib.contextmanager
def step_guard(log: Callable[[str], None]) -> Iterator[None]:
    """Run a step with asset output in ``log`` and ``os._exit`` turned into :class:`AssetExit`."""
    real: dict[str, Any] = {"stdout": sys.stdout, "stderr": sys.stderr, "_exit": os._exit}
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    out, err = _LogStream(log, "stdout"), _LogStream(log, "stderr")
    routers = [r for r in (real["stdout"], real["stderr"]) if isinstance(r, _Router)]
    with _descriptors(log):
        if len(routers) == 2:  # inside output_routing: point the routers at this step's log
            routers[0].target, routers[1].target = out, err
        else:
            sys.stdout, sys.stderr = out, err
        os._exit = _raise_exit  # type: ignore[assignment]
        try:
            yield
        finally:
            os._exit = real["_exit"]
            for router in routers:
                router.target = None
            sys.stdout, sys.stderr = real["stdout"], real["stderr"]
            out.flush()
            err.flush()
