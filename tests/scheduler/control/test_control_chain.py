"""The scheduler chain decided by value (control/chain.py): which links doctor shows, in which order, and
what each says when it breaks. The stale warning's pick of the first broken link is test_control_commands's
``test_each_cause_is_named``; that the three commands agree on real states is test_control_agreement's."""

from __future__ import annotations

from croft.scheduler.control.chain import (
    Chain,
    Interpreter,
    Place,
    diagnose,
    links,
    protected_folder,
)
from croft.scheduler.jobs.base import JobState
from croft.scheduler.jobs.crontab import cron_daemon_link
from croft.scheduler.jobs.systemd import linger_link

JOB = JobState("systemd", "dev.croft.test", True, True, python="/venv/bin/python", location="/u/t.timer")
PYTHON = Interpreter("/venv/bin/python", said="/venv/bin/python runs and imports croft")


def osjob(root: str = "/p", **kw) -> Place:  # type: ignore[no-untyped-def]
    return Place(**({"root": root, "via": "os-job", "registered_via": "os-job"} | kw))


def serve(root: str = "/s", **kw) -> Place:  # type: ignore[no-untyped-def]
    return Place(**({"root": root, "via": "serve", "registered_via": "serve"} | kw))


def healthy(*places: Place, **kw) -> Chain:  # type: ignore[no-untyped-def]
    base = {
        "registry": "/h/projects.json",
        "entries": len(places),
        "job": JOB,
        "interpreter": PYTHON,
        "log_file": "/h/logs/tick.log",
        "backend_links": (linger_link(None),),
        "serve_alive": any(p.via == "serve" for p in places),
        "platform": "linux",
    }
    return Chain(places=places, **(base | kw))


def by_name(chain: Chain) -> dict[str, tuple[bool, str, str | None, str | None]]:
    return {x.check: (x.ok, x.detail, x.cause, x.fix) for x in links(chain)}


def broken(chain: Chain, check: str) -> tuple[str, str | None, str | None]:
    """The broken link ``check``: (what doctor says, the cause code, the fix)."""
    ok, detail, cause, fix = by_name(chain)[check]
    assert not ok, detail
    return detail, cause, fix


def test_doctor_shows_every_link_in_the_order_a_person_checks_them() -> None:
    chain = healthy(osjob(last_tick="2026-03-01T11:59:00.000Z"), serve())
    assert [x.check for x in links(chain)] == [
        "registry",
        "permissions",
        "croft home",
        "OS job",
        "job loaded",
        "interpreter",
        "tick log",
        "linger",
        "croft serve",
        "project /p",
        "project /s",
    ]
    assert all(x.ok for x in links(chain))
    seen = by_name(chain)
    assert seen["registry"][1] == "/h/projects.json: 2 project(s)"
    assert seen["OS job"][1] == "systemd job dev.croft.test at /u/t.timer"
    assert seen["project /p"][1] == "on via os-job, last tick 2026-03-01T11:59:00.000Z"


def test_links_of_the_job_are_shown_only_when_a_project_ticks_through_it() -> None:
    chain = healthy(serve(), job=None, interpreter=None)
    assert [x.check for x in links(chain)] == [
        "registry",
        "permissions",
        "croft home",
        "OS job",
        "croft serve",
        "project /s",
    ]
    assert by_name(chain)["OS job"][:2] == (
        True,
        "no registered project ticks through an OS job, so none is needed",
    )
    assert "croft serve" not in by_name(healthy(osjob()))


def test_a_quiet_project_below_a_broken_link_points_up_to_it() -> None:
    chain = healthy(osjob(quiet=True), backend_links=(cron_daemon_link(False),))
    assert broken(chain, "project /p") == (
        "not ticking (last tick never) because the cron daemon check above fails",
        "cron_not_running",
        "sudo service cron start",
    )
    assert diagnose(chain).check == "cron daemon"  # the stale warning names the link itself


def test_a_quiet_project_whose_chain_holds_takes_its_cause_from_the_tick_log() -> None:
    chain = healthy(osjob(quiet=True), log=("Traceback ...", "ModuleNotFoundError: No module named croft"))
    assert broken(chain, "project /p") == (
        "the job's interpreter /venv/bin/python has no croft installed (the tick log says so)",
        "croft_missing",
        "croft schedule on",
    )
    quiet_serve = healthy(serve(quiet=True))
    assert by_name(quiet_serve)["project /s"][2] == "serve_not_ticking"


def test_registry_links() -> None:
    unreadable = healthy(
        osjob(quiet=True), registry_error=("projects.json is not a croft registry", "mv a b")
    )
    assert broken(unreadable, "registry") == (
        "projects.json is not a croft registry",
        "registry_unreadable",
        "mv a b",
    )
    assert diagnose(unreadable).cause == "registry_unreadable"
    wrong = healthy(osjob(registered_via="serve", quiet=True))
    assert broken(wrong, "registry") == (
        "/p is registered to tick from croft serve, so the OS job never ticks it",
        "not_registered",
        "croft schedule on",
    )
    missing_serve = healthy(serve(registered_via=None))
    assert by_name(missing_serve)["registry"][1:] == (
        "/s is not in the per-user registry /h/projects.json, so croft serve never ticks it",
        "not_registered",
        "croft schedule on --no-os-job",
    )
    assert by_name(healthy(osjob(registered_via=None, state="off")))["registry"][0]  # off needs no entry


def test_job_and_interpreter_links() -> None:
    assert broken(healthy(osjob(), job=None), "OS job") == (
        "the per-user scheduler job is not installed: croft has no record of one",
        "job_missing",
        "croft schedule on",
    )
    unread = JobState("crontab", "dev.croft.test", False, None, notes=["croft could not read the crontab"])
    assert by_name(healthy(osjob(), job=unread))["OS job"][1] == (
        "the crontab job dev.croft.test is missing (croft could not read the crontab)"
    )
    cron = JobState("crontab", "dev.croft.test", True, None, python="/venv/bin/python")
    assert "job loaded" not in by_name(healthy(osjob(), job=cron))  # cron cannot tell
    no_croft = Interpreter("/usr/bin/python3", imports=False, said="/usr/bin/python3 cannot import croft: x")
    assert broken(healthy(osjob(), interpreter=no_croft), "interpreter") == (
        "/usr/bin/python3 cannot import croft: x",
        "croft_missing",
        "croft schedule on",
    )
    assert by_name(healthy(osjob(), interpreter=Interpreter(None)))["interpreter"][:2] == (
        True,
        "croft cannot tell which interpreter the job runs",
    )


def test_project_links() -> None:
    gone = by_name(healthy(osjob(presence="missing", presence_why="its disk /Volumes/x is not mounted")))
    assert gone["project /p"] == (
        False,
        "missing: its disk /Volumes/x is not mounted; it stays on the schedule and ticks again once it is back",
        "project_missing",
        None,
    )
    unknown = by_name(healthy(osjob(presence="unknown", presence_why="cannot check the project: denied")))
    assert unknown["project /p"][:2] == (True, "unknown: cannot check the project: denied")
    docs = osjob("/Users/me/Documents/p", last_tick="2026-03-01T11:59:00.000Z")
    on_mac = by_name(healthy(docs, platform="darwin"))["project /Users/me/Documents/p"]
    assert (
        on_mac[0] is False
        and on_mac[2] == "privacy"
        and "reading ~/Documents: give /venv/bin/python" in on_mac[1]
    )
    assert by_name(healthy(docs))["project /Users/me/Documents/p"][0]  # only macOS hides it
    in_serve = serve("/Users/me/Desktop/s")
    assert by_name(healthy(in_serve, platform="darwin"))["project /Users/me/Desktop/s"][
        0
    ]  # not a background job


def test_protected_folders_are_found_in_paths_and_log_lines() -> None:
    assert protected_folder("/Users/me/Documents/p/") == "Documents"
    assert (
        protected_folder("PermissionError: [Errno 1] Operation not permitted: '/users/me/desktop'")
        == "Desktop"
    )
    assert protected_folder("/Users/me/Documentsy/p/") is None


# -- never silent: what stops a project is a broken link, never a green line ------------------------


def test_what_stops_a_project_comes_before_whether_it_is_quiet() -> None:
    """A heartbeat that is fresh says nothing when the project's folder is full or its tick fails: the
    trouble the look found (control.troubles) is its link, with its own code for doctor's problem."""
    from croft.core.disk import disk_full
    from croft.core.problems import problem

    full = disk_full("the scheduler's state folder /p/.croft", "/p/.croft", "12 KiB free")
    full = full.with_(details={**(full.details or {}), "cause": "disk_full"})
    ticking = osjob(last_tick="2026-03-01T11:59:00.000Z", troubles=(full,))
    [link] = [x for x in links(healthy(ticking)) if x.check == "project /p"]
    assert (link.ok, link.cause, link.code) == (False, "disk_full", "DISK_FULL")
    assert "/p/.croft is full" in link.detail
    failing = problem(
        "SCHEDULER_BROKEN",
        "the scheduler's tick of /p fails since X: INTERNAL_ERROR: boom",
        "report it",
        details={"cause": "tick_failing", "problem": {"code": "HISTORY_CORRUPT"}},
    )
    [link] = [x for x in links(healthy(osjob(troubles=(failing,)))) if x.check == "project /p"]
    assert (link.ok, link.cause, link.code) == (False, "tick_failing", "HISTORY_CORRUPT")  # the tick's own


def test_the_registry_is_checked_in_both_directions() -> None:
    """On but not registered was already a broken link; registered while its own setting says off (its
    history replaced or reset) is one too, in the registry's line and in the project's."""
    from croft.core.problems import problem

    lost = problem(
        "SCHEDULER_BROKEN",
        "/p is in the per-user registry to tick from the OS job, but its own setting says scheduling is off",
        "turn it on again",
        fix={"kind": "command", "command": "croft schedule on --project /p"},
        details={"cause": "setting_lost"},
    )
    chain = healthy(osjob(state="off", troubles=(lost,)))
    assert broken(chain, "registry") == (lost.message, "setting_lost", "croft schedule on --project /p")
    assert broken(chain, "project /p")[1:] == ("setting_lost", "croft schedule on --project /p")
    assert by_name(healthy(osjob(registered_via=None, state="off")))["registry"][
        0
    ]  # off and not listed: fine


def test_croft_home_that_cannot_take_a_write_is_a_link_and_a_registry_repair_is_said() -> None:
    from croft.core.disk import unwritable

    ro = unwritable("croft's home /h", "/h", "read-only file system", read_only=True)
    chain = healthy(osjob(), home="/h", home_trouble=ro)
    detail, cause, _fix = broken(chain, "croft home")
    assert cause == "home_unwritable" and "read-only" in detail
    assert next(x for x in links(chain) if x.check == "croft home").code == "PATH_UNWRITABLE"
    assert by_name(healthy(osjob(), home="/h"))["croft home"][:2] == (True, "/h can take writes")
    noted = healthy(osjob(), registry_notes=("restored 1 project(s) from its last good copy",))
    ok, detail, _, _ = by_name(noted)["registry"]
    assert ok and detail.endswith("; restored 1 project(s) from its last good copy")


def test_a_last_tick_ahead_of_the_clock_is_its_own_cause() -> None:
    """A heartbeat stamped in the future once hid a stopped scheduler forever."""
    ahead = osjob(quiet=True, last_tick="2026-03-02T12:00:00.000Z", ahead="2026-03-02T12:00:00.000Z")
    detail, cause, _ = broken(healthy(ahead), "project /p")
    assert cause == "clock_backwards" and "ahead of the clock" in detail and "2026-03-02T12:00" in detail
    assert diagnose(healthy(ahead)).cause == "clock_backwards"


def test_a_job_record_that_could_not_be_read_is_said() -> None:
    noted = healthy(
        osjob(), job_note="/h/job.json could not be read; found the systemd job and wrote it again"
    )
    assert by_name(noted)["OS job"][1].endswith(
        "(/h/job.json could not be read; found the systemd job and wrote it again)"
    )
    lost = healthy(osjob(), job=None, job_note="/h/job.json could not be read, and no backend holds a job x")
    assert broken(lost, "OS job")[0] == (
        "the per-user scheduler job is not installed: /h/job.json could not be read, and no backend holds a job x"
    )


def test_a_broken_os_job_while_croft_serve_runs_is_a_warning_since_serve_ticks_its_projects() -> None:
    """croft serve ticks every project of its home, the OS job's too (one ticker): while it runs, a missing
    job stops nothing, so doctor warns with the fix; once serve ends the job is broken again."""
    served = healthy(osjob(), job=None, serve_alive=True)
    found = {x.check: x for x in links(served)}["OS job"]
    assert (found.ok, found.warn, found.cause, found.fix) == (True, True, "job_missing", "croft schedule on")
    assert found.detail.endswith("croft has no record of one; croft serve ticks these projects while it runs")
    assert "stop ticking when croft serve stops" in (found.hint or "")
    assert all(x.ok for x in links(served))
    assert broken(healthy(osjob(), job=None, serve_alive=False), "OS job")[1] == "job_missing"
    assert diagnose(healthy(osjob(), job=None, serve_alive=False)).cause == "job_missing"
