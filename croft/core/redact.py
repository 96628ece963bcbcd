"""Redaction of secret values: every ``.env`` value of four or more characters becomes ``[redacted:NAME]``.

Applied wherever text leaves a run: log files, problem messages, JSON output, stored summaries,
notifications and webhooks. Longer values are replaced first so one secret that contains another is
still hidden whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MIN_SECRET_LENGTH", "Redactor"]

MIN_SECRET_LENGTH = 4


class Redactor:
    def __init__(self, secrets: Mapping[str, str] | None = None):
        pairs = [(value, name) for name, value in (secrets or {}).items() if len(value) >= MIN_SECRET_LENGTH]
        self._pairs = sorted(pairs, key=lambda pair: -len(pair[0]))

    def __bool__(self) -> bool:
        return bool(self._pairs)

    @property
    def names(self) -> list[str]:
        return sorted({name for _, name in self._pairs})

    def text(self, value: str) -> str:
        for secret, name in self._pairs:
            if secret in value:
                value = value.replace(secret, f"[redacted:{name}]")
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
