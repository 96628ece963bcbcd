"""A team's shared project: what a group member may write, and what the owner's scheduler then does.

A member drops a hostile ``json.py`` (and a ``sitecustomize.py``) in the project root, which a group may
write. Real ``croft tick`` processes start real scheduled ``croft run --due`` children in that folder;
the hostile files would write a marker file if any of them were imported. The asset itself imports
``json`` and its own ``lib`` helpers, which must still work.

The second half needs a second real unix user (useradd; root only, CI=true runs it): she looks at a
project that is not hers, whose state folder is private, and every view says UNSAFE_PERMISSIONS naming
the folder, not PATH_UNWRITABLE.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from enginekit import table
from schedulekit import croft_json, env_at, query, schedule_on, wait_for_runs
from userkit import User, cannot, python_for, throwaway_user, why_not_root

from croft.scheduler.user.trusted import project_unsafe

T0 = "2026-06-01T09:30:00Z"
T1 = "2026-06-01T10:05:00Z"

ASSET = """
import json

from lib.ids import next_id
from lib.shape import row
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield [row(next_id(), json.dumps({"ok": True}))]
"""
HOSTILE = """
with open({marker!r}, "a") as out:
    out.write("imported {name} from the project root\\n")
"""


def shared_project(make_project, marker: Path) -> Path:  # type: ignore[no-untyped-def]
    root = make_project(
        {
            "assets/orders.py": ASSET,
            "lib/__init__.py": "",
            "lib/ids.py": "def next_id():\n    return 7\n",
            "lib/shape.py": "def row(i, text):\n    return {'id': i, 'body': text}\n",
        },
        timezone="UTC",
    )
    for part in (root, root / "croft.json", root / "assets", root / "lib"):
        part.chmod(part.stat().st_mode | 0o020)  # the group may write these
    return root


@pytest.mark.processes
def test_a_json_py_in_a_shared_project_root_is_never_imported_by_a_scheduled_run(
    make_project, tmp_path: Path
) -> None:
    marker = tmp_path / "imported"
    root = shared_project(make_project, marker)
    code, envelope = croft_json(root, T0, "run")  # approved by the owner, by hand
    assert code == 0, envelope
    schedule_on(root, T0)
    # a group member drops these in the root, which the group may write
    for name in ("json", "sitecustomize", "croft"):
        (root / f"{name}.py").write_text(HOSTILE.format(marker=str(marker), name=name))
    assert project_unsafe(str(root)) is None  # the group may write the root: the project still ticks

    # the tick as the OS job's `croft tick --all` starts it (-P: the folder is not on its path either)
    done = subprocess.run(
        [sys.executable, "-P", "-m", "croft", "tick", "--json"],
        cwd=root,
        env=env_at(T1),
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(done.stdout)["data"]
    wait_for_runs(root)
    assert [s["assets"] for s in data["spawned"]] == [["orders"]]
    assert not marker.exists(), marker.read_text()
    run = query(root, "SELECT status FROM runs WHERE trigger = 'schedule'")
    assert run == [{"status": "succeeded"}]
    loaded = [(r["id"], r["body"]) for r in table(root, "orders")]
    assert loaded == [(7, '{"ok": true}')]  # json and lib both worked


def test_the_group_may_not_write_the_state_folder(make_project) -> None:
    root = make_project({}, timezone="UTC")
    state = root / ".croft"
    state.mkdir(mode=0o700)
    assert project_unsafe(str(root)) is None
    state.chmod(0o770)  # whoever writes runs.sqlite could approve code for the owner's scheduler
    found = project_unsafe(str(root))
    assert found is not None and found.path == str(state) and found.why == "its group can write it"
    assert found.fix is not None
    subprocess.run(found.fix, shell=True, check=True)  # the fix works as written
    assert project_unsafe(str(root)) is None


@pytest.fixture
def bob() -> Iterator[User]:
    reason = why_not_root()
    if reason:
        cannot(reason)
    with throwaway_user("croft-bob") as user:
        yield user


@pytest.fixture
def alice() -> Iterator[User]:
    reason = why_not_root()
    if reason:
        cannot(reason)
    with throwaway_user("croft-alice") as user:
        yield user


@pytest.mark.processes
def test_another_users_project_is_unsafe_permissions_in_every_view(alice: User, bob: User) -> None:
    shared = Path(tempfile.mkdtemp(prefix="croft-shared-"))
    shared.chmod(0o755)
    try:
        root = shared / "team"
        root.mkdir()
        (root / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
        (root / "assets").mkdir()
        (root / "assets" / "a.sql").write_text("-- key: id\nSELECT 1 AS id\n")
        for part in (root, root / "croft.json", root / "assets"):
            part.chmod(0o775 if part.is_dir() else 0o664)  # a team's folder: the group may write it
        code, envelope = croft_json(root, T0, "run")  # a run: its state folder is private, 0700
        assert code == 0, envelope
        alice.give(root)  # the project is hers (root's own files would be trusted, as ssh trusts root's)
        python = python_for(bob, bob.home)
        env = bob.env(CROFT_HOME=str(bob.home / ".croft"), CROFT_NOW=T0)
        for args in (["status"], ["schedule", "status"], ["doctor"]):
            done = bob.run([str(python), "-P", "-m", "croft", *args, "--json"], cwd=root, env=env)
            envelope = json.loads(done.stdout)
            codes = [p["code"] for p in envelope["problems"]]
            assert codes == ["UNSAFE_PERMISSIONS"], (args, envelope)
            (found,) = envelope["problems"]
            assert found["details"]["path"] == str(root), found
            assert "belongs to another user" in found["message"]
            assert found["fix"]["command"] == f"croft schedule off --project {root}"
            assert done.returncode == 2
            assert (
                not (bob.home / ".croft" / "projects.json").exists()
                or str(root) not in (bob.home / ".croft" / "projects.json").read_text()
            )
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)
        assert not os.path.exists(shared)
