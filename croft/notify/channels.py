"""Every other channel (Slack, Discord, ntfy, Pushover, e-mail, ...) through Apprise, an optional extra.

``notify.urls`` lists Apprise URLs; one written ``$NAME`` is the value of ``NAME`` in ``.env``, so a
channel's token stays there and is redacted like any secret. Apprise is an optional extra, imported
here only, when something is sent. The signed webhook, the desktop and the pings stay croft's own.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from croft.notify.deadline import ANSWER_BYTES, Late, within
from croft.notify.policy import resolve_env_value

if TYPE_CHECKING:
    from croft.project.config import Project

__all__ = ["INSTALL", "Outcome", "scheme_of", "send_one"]

INSTALL = "pip install 'croft[apprise]'"


@dataclass(frozen=True)
class Outcome:
    """``via`` names the channel by its scheme (a URL carries its token); ``error`` a one-line reason."""

    via: str
    status: str  # sent | failed | missing
    error: str | None = None


def scheme_of(url: str) -> str:
    """``ntfy://`` for ``ntfy://ntfy.sh/topic``: all a log may say about a channel URL."""
    head, sep, _ = url.partition("://")
    return f"{head}://" if sep and head.replace("+", "").replace("-", "").isalnum() else "?"


def send_one(project: Project, configured: str, title: str, body: str) -> Outcome:
    """Send one (already redacted) message to one ``notify.urls`` entry; never raises."""
    url, refusal = resolve_env_value(project, configured)
    via = configured if configured.startswith("$") else scheme_of(configured)
    if url is None:
        return Outcome(via, "failed", refusal or "no URL")
    if not configured.startswith("$"):
        via = scheme_of(url)
    with warnings.catch_warnings():  # a plugin's deprecation notice is not a reason to stay silent
        warnings.simplefilter("ignore")
        try:
            import apprise  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            return Outcome(via, "missing", f"notify.urls needs Apprise, which is not installed: {INSTALL}")
        try:
            sender = apprise.Apprise()
            if not sender.add(url):
                return Outcome(
                    via, "failed", "Apprise does not understand this URL (see its list of services)"
                )
            _cap_answers()
            sent = within(DEADLINE_S, lambda: sender.notify(title=title, body=body))
        except Late as exc:
            return Outcome(via, "failed", str(exc))
        except Exception as exc:  # a plugin's own error: logged, never raised
            return Outcome(via, "failed", f"{type(exc).__name__}")
    return Outcome(via, "sent") if sent else Outcome(via, "failed", "Apprise could not deliver it")


DEADLINE_S = 30.0  # one Apprise send, whole: its plugins' own socket timeouts bound each wait only


def _cap_answers() -> None:
    """Make every answer Apprise's plugins get through ``requests`` a stream of which at most
    ``ANSWER_BYTES`` are read (``requests`` otherwise reads a whole body into memory, and one that never
    ends grows the process until it dies). Installed once per process and left in place, so a send
    still going past its deadline stays capped too; in croft's processes only Apprise uses requests."""
    from requests.adapters import HTTPAdapter  # Apprise's client, there only with the optional extra

    if getattr(HTTPAdapter.send, "croft_capped", False):
        return
    plain = HTTPAdapter.send

    def send(self: HTTPAdapter, request: object, stream: bool = False, **kwargs: object) -> object:
        response = plain(self, request, stream=True, **kwargs)  # type: ignore[arg-type]
        try:
            head = response.raw.read(ANSWER_BYTES, decode_content=True) or b""
        except Exception:  # a broken body: the status is what counts
            head = b""
        response._content = head  # what .content / .text give the plugin
        response._content_consumed = True
        response.close()
        return response

    send.croft_capped = True  # type: ignore[attr-defined]
    HTTPAdapter.send = send  # type: ignore[method-assign, assignment]
