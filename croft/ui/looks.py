"""The server's last look at its projects, shared by every page and taken once per change.

A look is taken when a page asks and the watcher's generation moved since the last one (or it is
older than ``MAX_AGE_S``, as states such as "stale" follow the clock). Pages asking while a look is
being taken wait for that one (single flight: twenty tabs cost one look), and nothing else waits for
it: an asset's page reads the last finished look, and doctor runs on a thread of its own, its answer
shown when it comes. There is no lock around a computation, so one slow look never queues the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Looks"]

MAX_AGE_S = 60.0
DOCTOR_AGE_S = 60.0  # doctor asks the OS job's backend (a process or two): at most this often


class Looks:
    def __init__(
        self,
        take: Callable[[], dict[str, Any]],
        doctor: Callable[[], dict[str, Any]],
        generation: Callable[[], int],
        changed: Callable[[], None],
    ) -> None:
        self._take, self._doctor, self._generation, self._changed = take, doctor, generation, changed
        self._guard = threading.Lock()  # held for bookkeeping only, never while a look is taken
        self._last: dict[str, Any] | None = None
        self._key: tuple[int, float] = (-1, 0.0)
        self._flight: threading.Event | None = None
        self._doctor_json: dict[str, Any] | None = None
        self._doctor_at = -DOCTOR_AGE_S
        self._doctor_going = False

    def latest(self) -> dict[str, Any] | None:
        """The last finished look, however old, without waiting."""
        return self._last

    def forget(self) -> None:
        """After an action: the next look is taken afresh, and doctor asked again."""
        with self._guard:
            self._key = (-1, 0.0)
            self._doctor_at = -DOCTOR_AGE_S

    def current(self) -> dict[str, Any]:
        """A look as of the current generation, with doctor's latest answer: the cached one, the one
        being taken, or a new one."""
        look = self._current()
        return {**look, "doctor": self._doctor_json}

    def _current(self) -> dict[str, Any]:
        while True:
            gen, now = self._generation(), time.monotonic()
            with self._guard:
                if self._last is not None and self._key[0] == gen and now - self._key[1] < MAX_AGE_S:
                    return self._last
                flight = self._flight
                if flight is None:
                    flight = self._flight = threading.Event()
                    mine = True
                else:
                    mine = False
            if not mine:
                flight.wait()
                with self._guard:
                    if self._last is not None and self._key[0] >= gen:
                        return self._last
                continue  # that look failed or is older than the change: take one
            try:
                look = self._take()
                with self._guard:
                    self._last, self._key = look, (gen, time.monotonic())
                self._ask_doctor()  # after the look, not beside it: the first page waits for no doctor
                return look
            finally:
                with self._guard:
                    self._flight = None
                flight.set()

    def _ask_doctor(self) -> None:
        with self._guard:
            if self._doctor_going or time.monotonic() - self._doctor_at < DOCTOR_AGE_S:
                return
            self._doctor_going = True
        threading.Thread(target=self._run_doctor, name="croft-ui-doctor", daemon=True).start()

    def _run_doctor(self) -> None:
        try:
            found = self._doctor()
        except Exception as exc:  # doctor's own failure is shown as its line, never a traceback
            found = {"ok": False, "data": None, "problems": [{"code": "INTERNAL_ERROR", "message": str(exc)}]}
        with self._guard:
            changed = _verdict(found) != _verdict(self._doctor_json)
            self._doctor_json, self._doctor_at, self._doctor_going = found, time.monotonic(), False
        if changed:
            self._changed()  # pages show doctor's line: tell them (the look itself stays)


def _verdict(doctor: dict[str, Any] | None) -> object:
    """What doctor's line shows: which checks hold (its details carry ages that move every minute)."""
    if doctor is None:
        return None
    checks = (doctor.get("data") or {}).get("checks") or []
    return [(c.get("check"), c.get("ok"), bool(c.get("warning"))) for c in checks] or doctor.get("problems")
