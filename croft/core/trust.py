"""Whether croft may act on a file or folder: the rule ssh and cron apply to their own files.

A path is trusted when it belongs to this user (or to root, who can change anything anyway) and no one
else can write it: not others, and for the per-user files not the group either. Anything else is
``Unsafe``, in words, with the one ``chmod`` that mends a mode; a path that belongs to another user has
no fix croft can offer that is safe to run blindly, so its fix says whose it is instead.
"""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass

__all__ = ["Unsafe", "check", "untrusted"]

_OTHERS = stat.S_IWOTH
_GROUP_OR_OTHERS = stat.S_IWOTH | stat.S_IWGRP


@dataclass(frozen=True)
class Unsafe:
    """One path croft refuses to act on: ``why`` in words, ``fix`` a command (None: none is safe to
    suggest), ``theirs`` when it belongs to another user (no mode of it is this user's to mend)."""

    path: str
    why: str
    fix: str | None
    theirs: bool


def untrusted(st: os.stat_result, *, group_may_write: bool, uid: int | None = None) -> str | None:
    """Why a file with this stat must not be trusted by the process of ``uid`` (this one by default), or
    None. Pure: the one rule, for the scheduler's checks and for croft's own private folders."""
    me = os.geteuid() if uid is None else uid
    if st.st_uid not in (me, 0):
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & stat.S_IWOTH:
        return "anyone on this machine can write it"
    if not group_may_write and st.st_mode & stat.S_IWGRP:
        return "its group can write it"
    return None


def check(path: str, *, group_may_write: bool = False) -> Unsafe | None:
    """``path`` as the rule sees it (symlinks followed: what is read is the file they name), or None when
    it is trusted or does not exist (nothing there to trust yet)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Unsafe(path, f"croft cannot look at it ({exc.strerror or exc})", None, False)
    if st.st_uid == os.geteuid() and not st.st_mode & (_OTHERS if group_may_write else _GROUP_OR_OTHERS):
        return None  # the usual answer, without the words
    why = untrusted(st, group_may_write=group_may_write)
    if why is None:
        return None
    if st.st_uid not in (os.geteuid(), 0):
        return Unsafe(path, why, None, True)

    bits = "o-w" if group_may_write else "go-w"
    return Unsafe(path, why, f"chmod {bits} {shlex.quote(path)}", False)
