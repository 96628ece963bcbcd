"""The OS job's command: ``<python> -S -P <this file>``, every minute; the minute gate first, else ``croft
tick --all``.

Most minutes the gate (``scheduler.user.gate``) settles from the wake file, so what the interpreter does
before it is most of what an idle minute costs. ``python -m croft`` would first run ``site`` (every
``.pth`` file of the environment, an editable install's import hook among them), ``runpy`` and croft's
CLI module. Run as a file with ``-S`` (no ``site``) and ``-P`` (no folder of its own put first on
``sys.path``), this file puts only the folder croft is in on ``sys.path`` and imports the gate. When the
gate hands the minute on, ``site.main()`` (what ``-S`` left out, documented for that purpose) makes the
environment whole and the minute continues in this process as ``croft tick --all``: the gate is not
asked twice. A settled minute that owes its idle projects' pings sends them here
(``scheduler.user.settled``), still without ``site``: that path needs only the standard library. No ``-I``: a croft installed with ``pip install --user`` needs the user's site-packages.

Its path goes into the installed job, so it stays where it is: an upgrade in the same environment keeps
the job working. ``python -m croft tick --all`` (a person, a test) asks the gate too (``cli.main``).
"""

import os
import sys

FOLDER = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # croft's parent


def main() -> None:
    sys.path.insert(0, FOLDER)
    from croft.scheduler.user.settled import settled

    if settled():  # the gate's minute, its owed pings sent with the standard library and croft only
        return
    sys.path.remove(FOLDER)  # croft is loaded; its modules are found through the package from here on
    import site

    site.main()
    from croft.cli.group import run
    from croft.cli.lastresort import last_resort

    sys.argv[1:] = ["tick", "--all"]  # what this process is, for whoever reads its command line
    last_resort(run)(["tick", "--all"])


if __name__ == "__main__":
    main()
