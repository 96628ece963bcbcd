"""The trust rule (whose a file is, who else may write it) and croft's private files (0700 / 0600)."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from croft.core.private import create_file, make_dirs, open_append, write_new
from croft.core.trust import check, untrusted

ME = os.geteuid()
OTHER = 65534 if ME != 65534 else 65533  # "nobody": a uid that is not this process's


def st(uid: int, mode: int) -> os.stat_result:
    return os.stat_result((stat.S_IFDIR | mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))


def test_the_rule_on_owner_and_mode() -> None:
    assert untrusted(st(ME, 0o755), group_may_write=False) is None
    assert untrusted(st(0, 0o755), group_may_write=False) is None  # root's: root can change anything anyway
    assert untrusted(st(OTHER, 0o700), group_may_write=False) == f"it belongs to another user (uid {OTHER})"
    assert untrusted(st(ME, 0o757), group_may_write=True) == "anyone on this machine can write it"
    assert (
        untrusted(st(ME, 0o1777), group_may_write=True) == "anyone on this machine can write it"
    )  # sticky too
    assert untrusted(st(ME, 0o775), group_may_write=False) == "its group can write it"
    assert untrusted(st(ME, 0o775), group_may_write=True) is None  # a team's project folder


def test_check_names_the_path_and_a_chmod_that_mends_it(tmp_path: Path) -> None:
    folder = tmp_path / "it's here"
    folder.mkdir()
    assert check(str(folder)) is None
    assert check(str(tmp_path / "missing")) is None  # nothing there to trust yet
    folder.chmod(0o777)
    found = check(str(folder))
    assert found is not None and found.path == str(folder) and not found.theirs
    assert found.fix == f"chmod go-w '{tmp_path}/it'\"'\"'s here'"
    subprocess.run(["sh", "-c", found.fix], check=True)  # the fix works as written
    assert check(str(folder)) is None and stat.S_IMODE(folder.stat().st_mode) == 0o755
    folder.chmod(0o775)
    assert check(str(folder), group_may_write=True) is None
    assert check(str(folder)).fix == f"chmod go-w '{tmp_path}/it'\"'\"'s here'"  # type: ignore[union-attr]
    folder.chmod(0o757)
    assert check(str(folder), group_may_write=True).fix.startswith("chmod o-w ")  # type: ignore[union-attr]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_another_users_file_is_theirs_and_has_no_chmod_fix(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER, OTHER)
    found = check(str(theirs))
    assert found is not None and found.theirs and found.fix is None
    link = tmp_path / "link"
    link.symlink_to(theirs)  # a link is judged by what it names
    assert check(str(link)) is not None and check(str(link)).theirs  # type: ignore[union-attr]


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_under_umask_000_every_level_croft_makes_is_0700_and_every_file_0600(
    tmp_path: Path, umask_000
) -> None:
    make_dirs(tmp_path / "a" / "b" / "c")
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    make_dirs(tmp_path / "a" / "b" / "c")  # there already: fine
    create_file(tmp_path / "a" / "db")
    os.close(open_append(tmp_path / "x" / "y" / "log"))
    assert mode(tmp_path / "a" / "db") == mode(tmp_path / "x" / "y" / "log") == 0o600
    assert mode(tmp_path / "x") == mode(tmp_path / "x" / "y") == 0o700
    (tmp_path / "mine").write_text("kept")
    (tmp_path / "mine").chmod(0o644)
    create_file(tmp_path / "mine")  # an existing file is left as it is
    assert (tmp_path / "mine").read_text() == "kept" and mode(tmp_path / "mine") == 0o644
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):  # named, so core.disk makes it STATE_DIR_INVALID
        make_dirs(tmp_path / "file")


def test_write_new_makes_a_private_file_and_never_follows_a_link(tmp_path: Path, umask_000) -> None:
    folder = tmp_path / "crashes"
    write_new(folder, "one.txt", b"traceback")
    assert (folder / "one.txt").read_bytes() == b"traceback"
    assert mode(folder) == 0o700 and mode(folder / "one.txt") == 0o600
    with pytest.raises(FileExistsError):  # a file already in its place is never opened
        write_new(folder, "one.txt", b"again")
    target = tmp_path / "target"
    target.write_text("theirs")
    (folder / "two.txt").symlink_to(target)
    with pytest.raises(FileExistsError):
        write_new(folder, "two.txt", b"mine")
    assert target.read_text() == "theirs"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "linked").symlink_to(elsewhere)
    with pytest.raises(OSError):  # the folder itself may not be a link
        write_new(tmp_path / "linked", "three.txt", b"x")
    assert list(elsewhere.iterdir()) == []
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(PermissionError, match="anyone on this machine can write it"):
        write_new(shared, "four.txt", b"x")
    assert list(shared.iterdir()) == []


def test_an_atomic_json_write_never_writes_through_a_link_at_its_temporary_name(tmp_path: Path) -> None:
    from croft.core.jsonfile import write_atomic

    target = tmp_path / "elsewhere"
    target.write_text("theirs")
    (tmp_path / f".job.json.{os.getpid()}.tmp").symlink_to(target)
    write_atomic(tmp_path / "job.json", {"backend": "crontab"})
    assert target.read_text() == "theirs"
    assert (tmp_path / "job.json").read_text() == '{\n  "backend": "crontab"\n}\n'
    assert mode(tmp_path / "job.json") == 0o600
