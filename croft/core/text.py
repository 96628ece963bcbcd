"""How much of a person's input a message repeats: the one rule for echoing a value back.

A message names the value it refuses, but a 1 MB schedule string or a croft.json value the size of a
file would make the message (and the envelope, the history row, the webhook payload it travels in)
as big as the input. Every message that quotes input quotes it through ``clip``; ``Problem`` also
cuts any message past ``MESSAGE_LIMIT`` as a last resort (``cut``), keeping both ends.
"""

from __future__ import annotations

import json

__all__ = ["ECHO_LIMIT", "MESSAGE_LIMIT", "clip", "cut", "for_terminal", "quoted"]

ECHO_LIMIT = 200  # characters of a value a message repeats
MESSAGE_LIMIT = 4000  # characters of a whole message


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` whole when short, else its start and a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def quoted(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` as a JSON string (how messages quote a schedule or a key), its start only when long."""

    if len(text) <= limit:
        return json.dumps(text, ensure_ascii=False)
    return f"{json.dumps(text[:limit], ensure_ascii=False)}… ({len(text) - limit} more characters)"


def cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message past ``limit`` keeps its head and its tail (where the hint-like end usually is)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} … ({len(text) - 2 * half} characters cut) … {text[-half:]}"


# What a terminal would act on instead of showing: C0 controls but the line feed and tab (ESC starts the
# sequences that clear the screen or write the clipboard, CR overwrites a line), DEL, the C1 controls
# (0x9B is a one-byte CSI to some terminals) and the bidirectional overrides that reorder what is seen.
_CONTROLS = [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]
_CONTROLS += [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPED: dict[int, str] = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _CONTROLS}


def for_terminal(text: str) -> str:
    """``text`` as a terminal may show it: every control character written as its escape (``\\x1b``), so
    an API's answer, an asset's output or a file name shown by a human renderer can neither clear the
    screen, write the clipboard nor hide a line. The one rule for every text croft prints for a person;
    JSON output is escaped by JSON itself. Linear: one ``str.translate``."""
    return text.translate(_ESCAPED)
