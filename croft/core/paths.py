"""Where croft keeps things: the per-user home, a project's state folder, packaged data, the job label."""

from __future__ import annotations

import errno
import os
from json import loads
from pathlib import Path

from croft.core import knobs
from croft.core.problems import CroftError

__all__ = [
    "croft_home",
    "data_path",
    "home_text",
    "job_label",
    "path_text",
    "project_state_dir",
    "require_utf8_path",
    "stat_of",
    "state_dir",
]

DEFAULT_LABEL = knobs.KNOBS["CROFT_JOB_LABEL"].default


def croft_home() -> Path:
    """``CROFT_HOME`` or ``~/.croft``: the registry and the per-user tick log live here."""

    return Path(home_text())


def home_text() -> str:
    """``str(croft_home())``: the folder as the per-user tick names it in its messages (and in the ticks it
    starts), in the words the other commands use."""
    override: str | None = knobs.value("CROFT_HOME")
    return path_text(override or os.path.join(os.path.expanduser("~"), ".croft"))


def stat_of(path: str | os.PathLike[str]) -> os.stat_result | None:
    """``os.stat``, or None where pathlib's ``exists`` and ``is_file`` answer False (nothing there, a file
    where a folder is named, a link loop, a bad name); what they raise (no permission) raises."""
    try:
        return os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return None
        raise
    except ValueError:
        return None


def path_text(*parts: str | os.PathLike[str]) -> str:
    """``str(Path(*parts))`` (no doubled or trailing slash, no ``.`` part; ``..`` kept), for the callers
    that keep their folders and files as text."""
    text = os.path.join(*parts)
    root = "//" if text[:2] == "//" and text[2:3] != "/" else "/" if text[:1] == "/" else ""
    return root + "/".join(part for part in text.split("/") if part and part != ".") or "."


def job_label() -> str:
    """The OS job's label; tests set CROFT_JOB_LABEL so they never touch a real user's job."""
    label: str = knobs.value("CROFT_JOB_LABEL")
    return label


def state_dir(root: Path, configured: str | None = None) -> Path:
    """The project's state folder (``.croft`` unless croft.json's ``stateDir`` moves it)."""

    if not configured:
        return root / ".croft"
    path = Path(configured).expanduser()
    return path if path.is_absolute() else root / path


def project_state_dir(root: str | os.PathLike[str]) -> Path:
    """The state folder croft.json's ``stateDir`` names, read leniently (as plain JSON, nothing validated):
    for the callers that must find it whatever shape croft.json is in (the per-user tick, a crash file, the
    incident of a project whose croft.json no longer loads). Anything unreadable means ``.croft``."""
    configured = None
    try:
        with open(os.path.join(root, "croft.json"), encoding="utf-8") as f:
            raw = loads(f.read())
        if isinstance(raw, dict) and isinstance(raw.get("stateDir"), str) and raw["stateDir"].strip():
            configured = raw["stateDir"]
    except (OSError, ValueError, RecursionError):  # RecursionError: a croft.json nested too deep
        pass

    return state_dir(Path(root), configured)


def data_path(*parts: str) -> Path:
    """A file shipped with croft (docs/, launchd/, systemd/): inside the wheel, or the source checkout."""

    packaged = Path(__file__).resolve().parent.parent / "_data"
    if packaged.is_dir():
        return packaged.joinpath(*parts)
    return Path(__file__).resolve().parents[2].joinpath(*parts)


def require_utf8_path(path: Path) -> None:
    """Refuse a folder whose name is not UTF-8: SQLite cannot open files under it, and it cannot be shown.

    Raises PATH_UNWRITABLE; the name is shown with the bad bytes escaped.
    """
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise CroftError(
            "PATH_UNWRITABLE",
            f"the folder {shown} has a name that is not UTF-8; croft's SQLite files cannot live there",
            "Rename the folder (or the one above it) to a UTF-8 name, then run the command again.",
            details={"path": shown},
        ) from None
