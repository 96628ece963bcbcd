"""Redaction of secret values: every ``.env`` value of four or more characters becomes ``[redacted:NAME]``.

Applied wherever text leaves a run: log files, problem messages, JSON output, stored summaries,
notifications and webhooks. Longer values are replaced first so one secret that contains another is
still hidden whole.

Encoded forms are hidden too: the value percent-encoded (``quote`` and ``quote_plus``) and in base64
(standard and URL-safe). Base64 of a secret embedded in longer text, such as ``user:secret`` in a Basic
``Authorization`` header, depends on where the secret starts modulo 3, so for each of the three alignments
the characters that only the secret's bytes determine are hidden; at most a character or two of the
encoding at each edge stays, never enough to decode the secret.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MIN_SECRET_LENGTH", "Redactor"]

MIN_SECRET_LENGTH = 4


class Redactor:
    def __init__(self, secrets: Mapping[str, str] | None = None):
        pairs = [(value, name) for name, value in (secrets or {}).items() if len(value) >= MIN_SECRET_LENGTH]
        self._pairs = sorted(pairs, key=lambda pair: -len(pair[0]))
        forms: dict[str, str] = {}
        for value, name in self._pairs:
            for form in _encoded_forms(value):
                if len(form) >= MIN_SECRET_LENGTH and form != value:
                    forms.setdefault(form, name)
        ordered = sorted(forms, key=len, reverse=True)
        self._encoded = forms
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __bool__(self) -> bool:
        return bool(self._pairs)

    @property
    def names(self) -> list[str]:
        return sorted({name for _, name in self._pairs})

    def text(self, value: str) -> str:
        for secret, name in self._pairs:
            if secret in value:
                value = value.replace(secret, f"[redacted:{name}]")
        if self._pattern is not None:
            value = self._pattern.sub(lambda m: f"[redacted:{self._encoded[m.group(0)]}]", value)
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
    """The percent-encoded and base64 spellings of ``value`` that text may carry instead of the value."""
    yield quote(value, safe="")
    yield quote_plus(value)
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
