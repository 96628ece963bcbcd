"""``croft tick --all``: the full per-user minute, for every project of this user; the one per-user ticker.

Two processes start it, each as the same command: the OS job, and ``croft serve`` (``user.serve``) on a
machine without one. Its minute reaches this module only when the minute gate (``scheduler.user.gate``)
could not settle it from the wake file; at its end it writes that file again (``_leave_wake``): what it
learnt of each project, and the gate's part when the minute only beat. It reads the registry, prunes it, and ticks each project whose scheduling is on: an
``os-job`` one always, a ``--no-os-job`` one only while a croft serve is alive (``_ours``). A project
whose idle memo still holds (nothing changed, nothing can be due) only needs its heartbeat, so that is
written here, in-process, by the project tick's own idle check instead of a new interpreter. The
others get the real project tick, handed to a few workers (``scheduler.user.fulltick``), so a minute
with many of them (the first after an install or an upgrade) never starts a process per project, and
one broken project never stops the others. The dead-man's-switch pings of every completed tick, idle
or full, go out at the end, a few at a time (``user.pingbeat``).

A minute whose previous ``tick --all`` is still at work is skipped with a line in the tick log (an
OS-level lock, ``tick-all.lock``): two never tick the same projects at once, and they never pile up.
It runs 1,440 times a day, so it imports nothing it does not need (no click, no httpx, no asset code,
no pathlib: its folders are text; the CLI dispatches here before loading click) and does no work for a
project whose scheduling is off.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import traceback
from typing import TYPE_CHECKING

from croft.core import clock, knobs
from croft.core.disk import folder_problem
from croft.core.paths import home_text, path_text
from croft.core.problems import CroftError, Problem, problem
from croft.scheduler.heartbeat import write_user_beats
from croft.scheduler.setting import effective_state
from croft.scheduler.ticklog import TickLog, project_names
from croft.scheduler.user.registry import Entry, Registry, presence, project_state_dir
from croft.scheduler.user.servenote import serve_alive
from croft.scheduler.user.trusted import home_unsafe, project_unsafe, state_dir_unsafe, unsafe_error, words
from croft.scheduler.user.wakefile import Stamps
from croft.scheduler.user.wakestate import WakeState, look
from croft.scheduler.user.watch import absent, dropped, folder_trouble, lost_history, troubled, untroubled

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = ["minute", "tick_all", "ticked_lately"]

PRUNE_LOCK_S = 2.0
SOURCE = "tick-all"  # whose incidents these are (scheduler.incidents)
SERVED = "ticks from croft serve"  # a --no-os-job project while no croft serve is alive


def _ours(via: str | None, serving: bool) -> bool:
    """Whether a project turned on ``via`` the OS job or croft serve is this minute's to tick: an OS-job
    project always, a ``--no-os-job`` one only while a croft serve is alive, whichever process (the OS
    job or that serve) started the minute. The minute lock keeps two minutes from ticking it at once."""
    return via != "serve" or serving


def minute() -> tuple[dict[str, Any], list[Problem]]:
    """The minute as the command runs it: (what it did, its problems). Never raises: a bad knob or an
    unreadable registry is a problem, and a crash is a traceback in the tick log and INTERNAL_ERROR."""
    try:
        knobs.require_all()  # the knobs go on to every tick and run it starts: a bad one stops it here
        data = tick_all()
        return data, data.pop("problems", [])
    except CroftError as exc:
        return {}, [exc.problem, *exc.extra]
    except Exception as exc:  # the job must log and end, never hang or lose the reason
        trace = "".join(traceback.format_exception(exc)).rstrip()
        TickLog.of(home_text()).write(clock.to_iso(clock.now()), "tick failed: " + trace)
        message = f"croft tick --all failed: {type(exc).__name__}: {exc}"
        return {}, [problem("INTERNAL_ERROR", message, "The traceback is in the tick log; please report it.")]


def tick_all(home: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """One minute's work; returns what it did. Raises CroftError for an unreadable registry, and
    UNSAFE_PERMISSIONS, having written nothing, when CROFT_HOME or one of its files is not this user's
    alone (``user.trusted``); ``croft status`` and ``croft doctor`` show why."""
    home = home_text() if home is None else path_text(home)
    unsafe = home_unsafe(home)
    if unsafe is not None:
        raise unsafe_error(unsafe)
    now = clock.now()
    stamp = clock.to_iso(now)
    log = TickLog.of(home)
    log.rotate()
    registry = Registry(home)
    out: dict[str, Any] = {
        "at": stamp,
        "started": [],
        "beat": [],
        "skipped": [],
        "notes": [],
        "problems": [],  # Problem objects: what stops a project from ticking (the CLI puts them in the envelope)
    }

    def note(message: str) -> None:
        out["notes"].append(message)
        log.write(stamp, message)

    home_trouble = folder_problem(home, f"croft's home {home}") if os.path.isdir(home) else None
    if home_trouble is not None:  # the tick log, the slots and the incidents live there: say so, go on
        out["problems"].append(home_trouble)

    try:
        entries = registry.entries()
    except CroftError as exc:
        note(f"tick failed: {exc.problem.message}; {exc.problem.hint}")
        raise
    for message in registry.notes:  # a registry restored from its last good copy
        note(message)
    if not entries:
        return out
    lock = _minute_lock(home)
    if lock is None:
        out["exited"] = "busy"
        note("the previous croft tick --all is still at work; this minute is left to it")
        return out
    try:
        _minute(home, now, registry, entries, log, out, note)
    finally:
        os.close(lock)
    return out


def _minute(
    home: str,
    now: Any,
    registry: Registry,
    entries: list[Entry],
    log: TickLog,
    out: dict[str, Any],
    note: Any,
) -> None:
    state = WakeState(home)  # what the last full minute remembered of each project (the wake file)
    serving = serve_alive(home) if any(e.via == "serve" for e in entries) else False
    stamps = _stamps(home, registry, entries, state, serving)
    full: list[str] = []
    pings: list[tuple[str, str]] = []
    names: dict[str, str] = {}  # every line about a project names it, short: listed at the first line

    def name_of(root: str) -> str:
        if not names:
            names.update(project_names(e.root for e in entries))
        return names.get(root, root)

    for entry in entries:
        say = _naming(note, entry.root, name_of)
        try:
            _one(entry, now, state, out, say, full, pings, home, serving)
        except Exception as exc:  # one broken project never stops the others
            say(f"{entry.root}: tick not started: {type(exc).__name__}: {exc}")
            out["skipped"].append({"root": entry.root, "reason": f"error: {exc}"})
    _leave_wake(stamps, entries, state, out, full, pings)
    if out["beat"]:
        write_user_beats(home, out["at"], [b["root"] for b in out["beat"]])
    # Pruning looks only at the projects not beaten just now: a beaten one's croft.json was stat'ed.
    beaten = frozenset(b["root"] for b in out["beat"])
    try:
        for message in registry.prune(now, lock_timeout=PRUNE_LOCK_S, entries=entries, present=beaten):
            note(message)  # a gone project was skipped above (no croft.json): it is never in ``full``
        for root in registry.dropped:  # away too long: taken off, and told again
            dropped(root, now, SOURCE)
    except CroftError as exc:
        if exc.code != "DB_BUSY":
            raise
        note(f"{registry.path} is locked by another croft; pruning next minute")
    if full:
        for root, answer in _full(full, home, log, note, name_of, out).items():
            if answer.get("error"):
                note(f"{name_of(root)}: tick not finished: {answer['error']}")
            elif answer.get("ping"):
                pings.append((str(answer["ping"]), os.path.join(root, ".croft")))
    if pings:
        from croft.scheduler.user.pingbeat import ping_all  # lazy: only a minute with a ping loads http

        ping_all(pings)


def _full(
    full: list[str], home: str, log: TickLog, note: Any, name_of: Any, out: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The full ticks: a few here, in this process (``scheduler.tick.here``: a fire's run starts one
    interpreter sooner), more in workers (``scheduler.user.fulltick``). Lazy imports, all: an idle
    minute starts no worker, and is most minutes of most users."""
    from croft.scheduler.tick.here import HERE_AT_MOST, tick_here

    if len(full) <= HERE_AT_MOST:
        out["started"] += [{"root": root, "pid": os.getpid()} for root in full]
        return tick_here(full, name_of, note)
    from croft.core.children import croft_env
    from croft.scheduler.user.fulltick import full_ticks

    env = croft_env(croft_home=home)
    with log.open() as handle:

        def started(root: str, pid: int) -> None:
            note(f"{name_of(root)}: tick started (pid {pid})")
            out["started"].append({"root": root, "pid": pid})

        return full_ticks(full, home, handle, env, started, name_of=name_of)


def _stamps(home: str, registry: Registry, entries: list[Entry], state: WakeState, serving: bool) -> Stamps:
    """The stamps of the minute's start, for the wake file (``scheduler.user.wakefile``)."""
    known: dict[str, tuple[list[str], list[str]]] = {}
    for entry in entries:
        if not _ours(entry.via, serving):  # not this minute's: serve.json's stamp says when it becomes so
            continue
        memo = state.idle(entry.root)
        if memo is not None:
            known[entry.root] = (list(memo[5]), list(memo[6]))
        else:  # no memo (its scheduling is off, say): its folder, config and history
            known[entry.root] = ([], [])
    return Stamps(home, os.path.join(home, "projects.json"), known)


def _leave_wake(
    stamps: Stamps,
    entries: list[Entry],
    state: WakeState,
    out: dict[str, Any],
    full: list[str],
    pings: list[tuple[str, str]],
) -> None:
    """The wake file, every minute: each project's memory (``scheduler.user.wakestate``), and, when this
    minute only beat, or found scheduling off, or left a project to ``croft serve``, the minute gate's
    part (``scheduler.user.gate``): the earliest instant of any project's idle window end and next
    freshness look, what was stamped at the start, and the beaten projects' pings (each settled minute
    owes them: the gate's callers send them, ``user.pingbeat``). Any other minute leaves the gate no part."""
    beaten = [b["root"] for b in out["beat"]]
    served = {s["root"] for s in out["skipped"] if s.get("reason") == SERVED}
    off = [s["root"] for s in out["skipped"] if s.get("reason") == "scheduling is off"]
    instants: list[str] = []
    # the beaten projects' pings do not stop it: the gate hands them to its caller (user.pingbeat)
    ok = not (full or out["problems"] or out["notes"] or out["started"])
    ok = ok and len(beaten) + len(served) + len(off) == len(entries) == len({*beaten, *served, *off})
    for root in off if ok else ():  # its setting lives in its history, stamped: only freshness has a time
        ahead = state.fresh_next(root)
        if (
            root not in stamps.projects
            or str(project_state_dir(root)) != f"{root}/.croft"  # a relocated history is not stamped
            or ahead is None
        ):
            ok = False
            break
        instants.append(ahead)
    for root in beaten if ok else ():
        memo = state.idle(root)
        ahead = state.fresh_next(root)
        if (
            root not in stamps.projects
            or memo is None
            or list(memo[5]) != stamps.projects[root][0]
            or list(memo[6]) != stamps.projects[root][1]
            or ahead is None
        ):
            ok = False
            break
        instants += [str(memo[4]), ahead]
    gate = (
        (out["at"], min(instants), beaten, [f"{root}/.croft" for root in beaten], pings)
        if ok and instants
        else None
    )
    state.save(stamps, gate)


def _naming(note: Any, root: str, name_of: Any) -> Any:
    """``note`` for one project's lines: the ``<root>: `` they begin with becomes its tick log name."""
    prefix = f"{root}: "

    def say(message: str) -> None:
        note(f"{name_of(root)}: {message[len(prefix) :]}" if message.startswith(prefix) else message)

    return say


def _minute_lock(home: str) -> int | None:
    """This minute's claim on the per-user tick (a file lock the kernel drops when its holder ends), its
    modification time set to now (``ticked_lately``); None while another ``tick --all`` holds it."""
    fd = os.open(path_text(home, "tick-all.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    with contextlib.suppress(OSError):  # the minute's mark: `schedule on` sees the job tick, all paused
        os.utime(fd)
    return fd


def ticked_lately(home: str, within_s: float) -> bool:
    """Whether a ``croft tick --all`` of this home began within the last ``within_s`` seconds of the
    wall clock (the lock's modification time; the OS job runs on the wall clock, not CROFT_NOW)."""
    try:
        stamp = os.stat(path_text(home, "tick-all.lock")).st_mtime
    except OSError:
        return False
    return 0 <= time.time() - stamp <= within_s


def _one(
    entry: Entry,
    now: Any,
    state: WakeState,
    out: dict[str, Any],
    note: Any,
    full: list[str],
    pings: list[tuple[str, str]],
    home: str,
    serving: bool,
) -> None:
    stamp = out["at"]
    if not _ours(entry.via, serving):
        out["skipped"].append({"root": entry.root, "reason": SERVED})
        return
    # The idle stamp holds the owner and mode of every part the trust check reads, taken when it passed
    # (``check`` below runs only for a trusted project): unchanged, the project is as trusted as it was,
    # and its .croft/ is the folder it was. Able to take a write, too, before the idle beat: a full disk
    # is said every minute, never beaten over.
    held = state.still(entry.root, stamp)  # see _beat; no incident there either
    folder = f"{entry.root}/.croft"
    seen = state.stats.get(".croft") if held else None
    trouble = folder_trouble(folder, seen=seen, disks=state.disks)
    if held and trouble is None:
        look(state, entry.root, folder, now, note, stamp, state.stats)  # its freshness promises
        return _beat(entry, stamp, out, state, pings)
    unsafe = project_unsafe(entry.root)  # trusted first: nothing is read from it or written into it
    if unsafe is None:  # its freshness promises, whatever its setting (croft serve watches its own)
        look(state, entry.root, folder, now, note, stamp)
    state_dir = project_state_dir(entry.root)
    if unsafe is None:
        unsafe = state_dir_unsafe(entry.root, state_dir)  # a relocated state folder
    if unsafe is not None:
        note(f"{entry.root}: not ticked, croft does not trust {words(unsafe)}")
        out["skipped"].append({"root": entry.root, "reason": "unsafe permissions", "path": unsafe.path})
        return None
    reason = None
    if trouble is None:
        try:
            reason = _skip_reason(entry, now, state, state_dir, serving)
        except CroftError as exc:  # its runs.sqlite cannot be read: not "off", a problem with its fix
            trouble = exc.problem
    if trouble is not None:
        said = f"{trouble.code}: {trouble.message}"
        out["skipped"].append({"root": entry.root, "reason": said})
        out["problems"].append(trouble.with_(details={**(trouble.details or {}), "root": entry.root}))
        if troubled(entry.root, trouble, now, SOURCE):  # logged and told once per incident
            note(f"{entry.root}: not ticked: {said}")
        return
    if reason:
        out["skipped"].append({"root": entry.root, "reason": reason})
        if reason.startswith("cannot check"):
            note(f"{entry.root}: {reason}")
        if _told_skip(entry, reason, now, home, out, note):
            return  # its incident stays until it is back, or on again
    untroubled(entry.root, SOURCE)
    if reason:
        return
    if state.check(entry.root, stamp):
        return _beat(entry, stamp, out, state, pings)
    full.append(entry.root)


def _told_skip(entry: Entry, reason: str, now: Any, home: str, out: dict[str, Any], note: Any) -> bool:
    """A skip that is an incident, never a quiet "gone" or "off": the project's folder or croft.json away
    (PROJECT_GONE), or its history lost while the registry lists it (HISTORY_LOST). Recorded, logged and
    told once; whether it was one."""
    found = None
    if reason.startswith(("gone: ", "missing: ")):
        state, _, why = reason.partition(": ")
        if absent(entry.root, state, why, now, SOURCE):
            note(f"{entry.root}: not ticked: PROJECT_GONE: {state}, {why}; it ticks again once it is back")
        return True
    if reason == "scheduling is off":
        found = lost_history(entry.root, home)
    if found is None:
        return False
    out["problems"].append(found)
    if troubled(entry.root, found, now, SOURCE):
        note(f"{entry.root}: not ticked: {found.code}: {found.message}")
    return True


def _beat(
    entry: Entry, stamp: str, out: dict[str, Any], state: WakeState, pings: list[tuple[str, str]]
) -> None:
    """A project whose idle check holds (``scheduler.user.wakestate``: the project tick's own rule,
    remembered by the stat of what it read) only needs its heartbeat: written here, and no interpreter is started.
    While nothing moved, its croft.json, runs.sqlite (setting included) and asset files are as they were
    when it was on and present, so it still is. Its heartbeat is the minute's one file for the user
    (``heartbeat.write_user_beats``); its ping, if croft.json sets one, goes out with the minute's
    others: an idle tick is a completed tick."""
    out["beat"].append({"root": entry.root, "heartbeatAt": stamp})
    url = state.ping(entry.root)
    if url:
        pings.append((url, os.path.join(entry.root, ".croft")))


def _skip_reason(entry: Entry, now: Any, state: WakeState, state_dir: Path, serving: bool) -> str | None:
    """Why a present-or-not os-job project is not ticked this minute, or None; CroftError (with its fix)
    when its state folder (a relocated one) cannot take a write or its setting cannot be read."""
    where, why = presence(entry.root)
    if where != "present":
        return why if where == "unknown" else f"{where}: {why}"
    if str(state_dir) != f"{entry.root}/.croft":
        trouble = folder_trouble(str(state_dir))
        if trouble is not None:
            raise CroftError(trouble)

    setting = state.setting(entry.root, state_dir)
    if not _ours(setting.via, serving):
        return SERVED
    current = effective_state(setting, now)
    return None if current == "on" else f"scheduling is {current}"
