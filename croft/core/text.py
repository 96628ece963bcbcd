"""How much of a person's input a message repeats: the one rule for echoing a value back.

A message names the value it refuses, but a 1 MB schedule string or a croft.json value the size of a
file would make the message (and the envelope, the history row, the webhook payload it travels in)
as big as the input. Every message that quotes input quotes it through ``clip``; ``Problem`` also
cuts any message past ``MESSAGE_LIMIT`` as a last resort (``cut``), keeping both ends.
"""

from __future__ import annotations

__all__ = ["ECHO_LIMIT", "MESSAGE_LIMIT", "clip", "cut", "quoted"]

ECHO_LIMIT = 200  # characters of a value a message repeats
MESSAGE_LIMIT = 4000  # characters of a whole message


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` whole when short, else its start and a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def quoted(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` as a JSON string (how messages quote a schedule or a key), its start only when long."""
    import json

    if len(text) <= limit:
        return json.dumps(text, ensure_ascii=False)
    return f"{json.dumps(text[:limit], ensure_ascii=False)}… ({len(text) - limit} more characters)"


def cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message past ``limit`` keeps its head and its tail (where the hint-like end usually is)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} … ({len(text) - 2 * half} characters cut) … {text[-half:]}"
