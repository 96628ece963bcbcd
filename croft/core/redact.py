"""Redaction of secret values: every ``.env`` value of four or more characters becomes ``[redacted:NAME]``.

Applied wherever text leaves a run: log files, problem messages, JSON output, stored summaries,
notifications and webhooks. Longer forms are replaced first so one secret that contains another is
still hidden whole.

Encoded forms are hidden too, every spelling croft can enumerate of a value an API may echo back: the
value percent-encoded (``quote`` with and without ``/`` kept, ``quote_plus``), HTML-escaped, in base64
(standard and URL-safe), and each of those JSON-escaped (``\\"``, ``\\u00e4`` or the character itself,
and ``\\/`` as PHP writes a slash). Base64 of a secret embedded in longer text, such as ``user:secret``
in a Basic ``Authorization`` header, depends on where the secret starts modulo 3, so for each of the
three alignments the characters that only the secret's bytes determine are hidden; at most a character
or two of the encoding at each edge stays, never enough to decode the secret.

Each form is found by ``str.replace`` (a linear search in C), never one regular expression over all of
them: compiling an alternation of long literals took 25 s for one 100 KB value. So redacting costs
(text length) x (number of forms), with no term in a secret's length squared; ``project.env`` refuses a
value above ``MAX_SECRET_BYTES`` in the first place.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MAX_SECRET_BYTES", "MIN_SECRET_LENGTH", "Redactor"]

MIN_SECRET_LENGTH = 4
MAX_SECRET_BYTES = 16 * 1024  # a PEM private key fits; a value past it is refused when .env is read


class Redactor:
    def __init__(self, secrets: Mapping[str, str] | None = None):
        pairs = [(value, name) for name, value in (secrets or {}).items() if len(value) >= MIN_SECRET_LENGTH]
        self._pairs = sorted(pairs, key=lambda pair: -len(pair[0]))
        forms: dict[str, str] = {}
        for value, name in self._pairs:
            for form in (value, *_encoded_forms(value)):
                if len(form) >= MIN_SECRET_LENGTH:
                    forms.setdefault(form, name)
        # longest first, so a form that contains another is hidden whole
        self._forms = sorted(forms.items(), key=lambda pair: -len(pair[0]))

    def __bool__(self) -> bool:
        return bool(self._pairs)

    @property
    def names(self) -> list[str]:
        return sorted({name for _, name in self._pairs})

    def text(self, value: str) -> str:
        for form, name in self._forms:
            if form in value:
                value = value.replace(form, f"[redacted:{name}]")
        return value

    def obj(self, value: Any) -> Any:
        """Redact every string inside JSON-like data (keys included)."""
        if not self._pairs:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.obj(k): self.obj(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.obj(v) for v in value]
        return value


def _encoded_forms(value: str) -> Iterator[str]:
    """The spellings of ``value`` that text may carry instead of the value itself."""
    plain = [
        value,
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        html.escape(value),
        html.escape(value, quote=False),
        *_base64_cores(value),
    ]
    for form in plain:
        yield form
        yield from _json_escaped(form)


def _json_escaped(form: str) -> Iterator[str]:
    """``form`` inside a JSON string: ASCII-only (``\\u00e4``) or not, with ``/`` as is or as ``\\/``."""
    for escaped in (json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1]):
        yield escaped
        yield escaped.replace("/", "\\/")


def _base64_cores(value: str) -> Iterator[str]:
    raw = value.encode("utf-8")
    for offset in range(3):
        whole = offset + len(raw)
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        # Keep the 4-character groups made only of the value's bytes: skip the first group when the value
        # does not start it, and the last when the value does not fill it.
        start = 4 if offset else 0
        core = encoded[start : 4 * (whole // 3)]
        if len(core) >= MIN_SECRET_LENGTH:
            yield core
            yield core.replace("+", "-").replace("/", "_")
