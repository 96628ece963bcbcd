"""A stand-in for the OS programs the job backends run (crontab, launchctl, systemctl, loginctl)."""

from __future__ import annotations

from collections.abc import Sequence

from croft.scheduler.jobs.oscmd import Completed


class FakeOS:
    """Records every command; answers from a script of (argv prefix -> Completed fields)."""

    def __init__(self, answers: dict[tuple[str, ...], list[tuple[int | None, str, str]]] | None = None):
        self.calls: list[tuple[list[str], str | None]] = []
        self.answers = answers or {}
        self.crontab = ""

    def __call__(self, argv: Sequence[str], stdin: str | None) -> Completed:
        argv = list(argv)
        self.calls.append((argv, stdin))
        for prefix, replies in self.answers.items():
            if tuple(argv[: len(prefix)]) == prefix and replies:
                status, out, err = replies.pop(0) if len(replies) > 1 else replies[0]
                return Completed(tuple(argv), status, out, err)
        if argv[:2] == ["crontab", "-l"]:
            if not self.crontab:
                return Completed(tuple(argv), 1, "", "no crontab for root\n")
            return Completed(tuple(argv), 0, self.crontab, "")
        if argv[:2] == ["crontab", "-"]:
            self.crontab = stdin or ""
        return Completed(tuple(argv), 0, "", "")
