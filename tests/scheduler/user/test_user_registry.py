"""The per-user registry: lock, atomic writes, pruning of gone / missing / unreadable projects."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from schedulekit import HOLDER

from croft.core.paths import path_text
from croft.core.problems import CroftError
from croft.scheduler.user import registry as reg
from croft.scheduler.user.registry import Registry, presence, removable_mount

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "croft.json").write_text('{"timezone": "UTC"}\n')
    return folder


def test_missing_file_is_empty_and_add_creates_0600(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    assert r.entries() == []
    p = project(tmp_path / "a b")
    entry = r.add(p, "os-job", NOW)
    assert entry.root == str(p.resolve()) and entry.added_at == "2026-03-01T12:00:00.000Z"
    assert (r.path.stat().st_mode & 0o777) == 0o600
    assert sorted(x.name for x in r.home.iterdir()) == [
        "projects.json",
        "projects.json.bak",
        "projects.json.lock",
    ]
    assert (r.backup_path.stat().st_mode & 0o777) == 0o600 and r.backup() == [entry]
    data = json.loads(r.path.read_text())
    assert data == [{"root": str(p.resolve()), "addedAt": "2026-03-01T12:00:00.000Z", "via": "os-job"}]


def test_add_again_switches_via_keeps_added_at_and_order(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    a, b = project(tmp_path / "a"), project(tmp_path / "b")
    r.add(a, "os-job", NOW)
    r.add(b, "serve", NOW)
    r.add(a, "serve", NOW + timedelta(days=1))
    assert [(e.root, e.via, e.added_at[:10]) for e in r.entries()] == [
        (str(a), "serve", "2026-03-01"),
        (str(b), "serve", "2026-03-01"),
    ]


def test_unchanged_add_does_not_rewrite(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    a = project(tmp_path / "a")
    r.add(a, "os-job", NOW)
    before = r.path.stat().st_ino
    r.add(a, "os-job", NOW)
    assert r.path.stat().st_ino == before


def test_symlink_is_stored_as_real_folder_and_removed_by_either(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    real = project(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert r.add(link, "os-job", NOW).root == str(real)
    assert r.remove(link) is not None
    assert r.entries() == []


def test_remove_of_a_deleted_folder_by_path(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    a = project(tmp_path / "a")
    r.add(a, "os-job", NOW)
    (a / "croft.json").unlink()
    a.rmdir()
    assert r.remove(a) is not None and r.entries() == []


def test_remove_unknown_creates_no_file(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    assert r.remove(tmp_path / "nope") is None
    assert not r.path.exists()


@pytest.mark.parametrize(
    ("text", "why"),
    [("{not json", "invalid JSON"), ('{"root": "/x"}', "no list"), (b"\xff\xfe", "UTF-8")],
)
def test_corrupt_registry_is_config_invalid_with_a_working_fix(
    tmp_path: Path, text: str | bytes, why: str
) -> None:
    r = Registry(tmp_path / "home")
    r.home.mkdir()
    if isinstance(text, bytes):
        r.path.write_bytes(text)
    else:
        r.path.write_text(text)
    with pytest.raises(CroftError) as err:
        r.add(project(tmp_path / "a"), "os-job", NOW)
    assert err.value.code == "CONFIG_INVALID" and why in err.value.problem.message
    assert str(r.path) in err.value.problem.message
    # never silently replaced
    assert r.path.read_bytes() == (text if isinstance(text, bytes) else text.encode())
    subprocess.run(err.value.problem.fix["command"], shell=True, check=True)  # type: ignore[index]
    assert r.entries() == [] and r.path.with_name("projects.json.broken").exists()


def test_a_home_spelled_with_stray_slashes_is_named_as_a_path_names_it(tmp_path: Path) -> None:
    """The registry keeps its files as text (the per-minute read loads no pathlib), spelled as a Path
    spells them: whichever way CROFT_HOME is written, its messages name the same file."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "projects.json").write_text("garbage")
    for spelled in (f"{home}/", f"{tmp_path}//home", f"{tmp_path}/./home/."):
        r = Registry(spelled)
        assert (r.home, r.path, r.backup_path) == (home, home / "projects.json", home / "projects.json.bak")
        with pytest.raises(CroftError) as err:
            r.entries()
        assert err.value.problem.message.startswith(f"{home / 'projects.json'} is not a croft registry")
    for text in ("/", "//", "///a//b/", "//a/./b/..", "a/./", "./", ".", "~/x/"):
        assert path_text(text) == str(Path(text)) and path_text(text, "f") == str(Path(text, "f")), text


def test_malformed_entries_are_skipped(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    r.home.mkdir()
    r.path.write_text(json.dumps([1, {"root": "rel", "via": "os-job"}, {"root": "/x", "via": "os-job"}]))
    assert [e.root for e in r.entries()] == ["/x"]


def test_removable_mount_roots() -> None:
    assert removable_mount("/Volumes/Disk/p") == ["/Volumes/Disk"]
    assert removable_mount("/mnt/usb/p") == ["/mnt/usb"]
    assert removable_mount("/media/usb/p") == ["/media/usb", "/media/usb/p"]
    assert removable_mount("/run/media/me/usb/p") == ["/run/media/me/usb"]
    assert removable_mount("/home/me/p") == []


def test_presence_cases(tmp_path: Path) -> None:
    assert presence(str(project(tmp_path / "here"))) == ("present", "")
    (tmp_path / "empty").mkdir()
    assert presence(str(tmp_path / "empty"))[0] == "gone"
    state, why = presence(str(tmp_path / "gone-parent" / "p"))
    assert state == "missing" and "neither it nor" in why
    state, why = presence("/mnt/croft-test-unplugged-disk/p")
    assert state == "missing" and "/mnt/croft-test-unplugged-disk is not mounted" in why


NOBODY = 65534


def _unprivileged(work: Callable[[], object]) -> object:
    """``work()``'s JSON-able result, run as this user, or when this is root, in a forked child that
    dropped to nobody first (root reads every folder, so only another user meets a permission error)."""
    if os.geteuid() != 0:
        return json.loads(json.dumps(work()))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write, json.dumps({"ok": work()}).encode())
            code = 0
        except BaseException as exc:
            os.write(write, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as out:
        answer = json.loads(out.read() or b"{}")
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, answer
    return answer["ok"]


def test_unreadable_folder_is_unknown_and_kept(tmp_path: Path) -> None:
    # as root the check runs as nobody, which must be able to reach everything but the locked folder
    base = Path(tempfile.mkdtemp(prefix="croft-perm-")) if os.geteuid() == 0 else tmp_path
    try:
        base.chmod(0o755)
        locked = base / "locked"
        p = project(locked / "p")
        r = Registry(base / "home")
        r.add(p, "os-job", NOW)
        assert r.prune(NOW) == []  # readable: present (and prune's code is loaded before any fork)
        if os.geteuid() == 0:
            for path in (r.home, *r.home.iterdir()):
                os.chown(path, NOBODY, NOBODY)
        locked.chmod(0)
        got = _unprivileged(lambda: [presence(str(p)), r.prune(NOW), [e.root for e in r.entries()]])
        assert got == [["unknown", "cannot check the project: Permission denied"], [], [str(p)]]
    finally:
        locked.chmod(0o755)
        if base != tmp_path:
            shutil.rmtree(base)


def test_unreadable_folder_as_root_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root cannot be refused by the file system, so the permission error is made by os.stat itself."""
    p = project(tmp_path / "p")
    real_stat = os.stat

    def stat(path: object, *a: object, **k: object) -> os.stat_result:
        if str(path).startswith(str(p)):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *a, **k)  # type: ignore[arg-type]

    r = Registry(tmp_path / "home")
    r.add(p, "os-job", NOW)
    monkeypatch.setattr(reg.os, "stat", stat)
    assert presence(str(p)) == ("unknown", "cannot check the project: Permission denied")
    assert r.prune(NOW) == [] and len(r.entries()) == 1


def test_prune_gone_missing_back_and_30_days(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    keep = project(tmp_path / "keep")
    gone = project(tmp_path / "gone")
    away = project(tmp_path / "away" / "p")
    for p in (keep, gone, away):
        r.add(p, "os-job", NOW)
    (gone / "croft.json").unlink()
    os.rename(tmp_path / "away", tmp_path / "away-unplugged")
    notes = r.prune(NOW)
    # a croft.json gone for a minute (a checkout, a stash) no longer takes the project off for good
    assert notes[0] == (
        f"{gone} is gone: its folder or croft.json is gone; it stays on the schedule, ticks again once it"
        " is back, and is removed after 7 days gone"
    )
    assert notes[1].startswith(f"{away} is missing: neither it nor {away.parent} exists")
    assert [(e.root, e.missing_since) for e in r.entries()] == [
        (str(keep), None),
        (str(gone), "2026-03-01T12:00:00.000Z"),
        (str(away), "2026-03-01T12:00:00.000Z"),
    ]
    assert r.prune(NOW + timedelta(minutes=1)) == [] and r.dropped == []
    (gone / "croft.json").write_text("{}")
    assert r.prune(NOW + timedelta(minutes=2)) == [f"{gone} is back; it stays on the schedule"]
    (gone / "croft.json").unlink()
    r.prune(NOW + timedelta(minutes=3))
    assert r.prune(NOW + timedelta(days=7, minutes=3)) == [
        f"removed {gone} from the schedule: gone since 2026-03-01T12:03:00.000Z (7 days or more)"
    ]
    assert r.dropped == [str(gone)]
    ino = r.path.stat().st_ino
    assert r.prune(NOW + timedelta(days=29)) == []
    assert r.path.stat().st_ino == ino  # unchanged: not rewritten
    os.rename(tmp_path / "away-unplugged", tmp_path / "away")
    assert r.prune(NOW + timedelta(days=29)) == [f"{away} is back; it stays on the schedule"]
    assert r.find(away).missing_since is None  # type: ignore[union-attr]
    os.rename(tmp_path / "away", tmp_path / "away-unplugged")
    r.prune(NOW + timedelta(days=30))
    notes = r.prune(NOW + timedelta(days=60))
    assert notes == [
        f"removed {away} from the schedule: missing since 2026-03-31T12:00:00.000Z (30 days or more)"
    ]
    assert [e.root for e in r.entries()] == [str(keep)]


WRITER = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime
    from croft.scheduler.user.registry import Registry
    Registry(sys.argv[1]).add(sys.argv[2], "os-job", datetime.now(UTC))
    """
)


@pytest.mark.processes
def test_24_concurrent_writers_lose_no_entry(tmp_path: Path) -> None:
    home = tmp_path / "home"
    roots = [project(tmp_path / f"p{i}") for i in range(24)]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(home), str(p)]) for p in roots]
    assert [p.wait(timeout=120) for p in procs] == [0] * 24
    assert sorted(e.root for e in Registry(home).entries()) == sorted(str(p) for p in roots)


@pytest.mark.processes
def test_a_writer_killed_holding_the_lock_blocks_nobody(tmp_path: Path) -> None:
    home = tmp_path / "home"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        busy = Registry(home, lock_timeout=0.3)
        with pytest.raises(CroftError) as err:
            busy.add(project(tmp_path / "a"), "os-job", NOW)
        assert err.value.code == "DB_BUSY" and "for more than 300 ms" in err.value.problem.message
        assert "lsof" in err.value.problem.hint
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
    Registry(home, lock_timeout=0.3).add(project(tmp_path / "a"), "os-job", NOW)  # the lock died with it
    assert len(Registry(home).entries()) == 1


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (b"", "it is empty"),
        (bytes(range(256)) * 16, "not UTF-8"),
        (b"[{", "invalid JSON"),
        (b'{"root": "/x"}', "no list"),
        (b"[" * 100_000, "invalid JSON"),
        (None, "it is missing"),
    ],
    ids=["zero-bytes", "garbage", "truncated", "wrong-shape", "too-deep", "deleted"],
)
def test_a_damaged_registry_is_restored_from_its_last_good_copy(
    tmp_path: Path, damage: bytes | None, why: str
):
    """The registry is the one file whose loss silently stops everything: a 0-byte or garbage
    projects.json once meant "no projects". Each change keeps a last good copy; reading restores from it,
    says so, and keeps the damaged file."""
    r = Registry(tmp_path / "home")
    a, b = r.add(project(tmp_path / "a"), "os-job", NOW), r.add(project(tmp_path / "b"), "serve", NOW)
    assert r.backup() == [a, b]
    if damage is None:
        r.path.unlink()
    else:
        r.path.write_bytes(damage)
    fresh = Registry(r.home)
    assert fresh.entries() == [a, b]
    [note] = fresh.notes
    assert why in note and "restored 2 project(s)" in note and "projects.json.bak" in note
    assert json.loads(r.path.read_text()) == [a.to_json(), b.to_json()]
    if damage is not None:
        assert r.path.with_name("projects.json.broken").read_bytes() == damage
    again = Registry(r.home)
    assert again.entries() == [a, b] and again.notes == []  # repaired once, then read as usual


def test_a_damaged_registry_without_a_good_copy_is_config_invalid(tmp_path: Path) -> None:
    """No copy to restore from (or the copy is damaged too): the error with its fix, the file untouched."""
    r = Registry(tmp_path / "home")
    r.add(project(tmp_path / "a"), "os-job", NOW)
    r.path.write_bytes(b"")
    r.backup_path.write_bytes(b"\x00garbage")
    with pytest.raises(CroftError) as err:
        Registry(r.home).entries()
    assert err.value.code == "CONFIG_INVALID" and "it is empty" in err.value.problem.message
    assert r.path.read_bytes() == b""
    r.backup_path.unlink()
    with pytest.raises(CroftError):
        Registry(r.home).entries()


def test_a_lost_copy_is_rewritten_by_the_next_change_or_refresh(tmp_path: Path) -> None:
    r = Registry(tmp_path / "home")
    a = r.add(project(tmp_path / "a"), "os-job", NOW)
    r.backup_path.write_text("garbage")
    assert r.backup() is None
    assert r.refresh_backup() is True and r.backup() == [a]
    assert r.refresh_backup() is False
    r.backup_path.unlink()
    b = r.add(project(tmp_path / "b"), "os-job", NOW)
    assert r.backup() == [a, b]
