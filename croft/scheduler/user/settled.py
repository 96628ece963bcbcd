"""Whether the minute gate settled this minute: the one sequence both of its callers run.

The OS job's ``cli/minute.py`` (no ``site``) and ``cli/main.py`` (``python -m croft tick --all``) ask the
gate (``user.gate``) first; a minute it settled may owe its idle projects' pings, sent here through
``user.pingbeat``, loaded only then (it brings ``http.client``). Anything the gate or the pings could not
answer is the full tick's minute, never a crash: the full tick decides again and says what is wrong.
Only the standard library and croft: the OS job's process has no site-packages on its path yet.
"""

from croft.scheduler.user.gate import enter

__all__ = ["settled"]


def settled() -> bool:
    """True when the minute is done (settled by the gate, its owed pings sent); False hands it to the full
    tick, which beats and pings itself."""
    try:
        owed = enter()
    except Exception:  # the gate answers only what it is sure of: anything else is the full tick's
        return False
    if owed is None:
        return False
    if owed == "":  # settled, no ping owed
        return True
    try:
        from croft.scheduler.user.pingbeat import ping_owed  # the ping client: only a minute that owes one

        return ping_owed(owed)  # False: not what croft writes, none sent
    except Exception:  # it cannot be loaded here (a broken install, say): the full tick's minute
        return False
