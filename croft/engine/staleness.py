"""Is an asset stale, and why: the one rule ``croft run``, ``croft status`` and the scheduler share.

An ingest is stale only when it was never built (its data changes only when it is fetched). A transform is
stale when never built, when its code fingerprint differs from the one it was built with, or when an input's
data version moved past what the transform last read. Unknowns (an input never built, a missing hash) never
make an asset stale on their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Reason", "data_version", "stale_reasons"]


@dataclass(frozen=True)
class Reason:
    code: str  # never_built | code_changed | input_changed
    input: str | None = None

    def text(self) -> str:
        if self.code == "never_built":
            return "never built"
        if self.code == "code_changed":
            return "its code changed since it was built"
        return f"input {self.input} has new data"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "text": self.text()}
        if self.input:
            out["input"] = self.input
        return out


def data_version(entry: Mapping[str, Any] | None) -> str | None:
    """The later of when the data last changed and when it was last replaced out of band."""
    if not entry:
        return None
    stamps = [s for s in (entry.get("lastLoadedAt"), entry.get("lastReplacedAt")) if s]
    return max(stamps) if stamps else None


def stale_reasons(
    kind: str,
    entry: Mapping[str, Any] | None,
    code_hash: str | None,
    inputs: Mapping[str, Mapping[str, Any] | None],
) -> list[Reason]:
    if entry is None:
        return [Reason("never_built")]
    if kind == "ingest":
        return []
    reasons = []
    built_with = entry.get("codeHash")
    if code_hash and built_with and code_hash != built_with:
        reasons.append(Reason("code_changed"))
    seen = entry.get("inputsSeen") or {}
    for name in sorted(inputs):
        version = data_version(inputs[name])
        if version is None:
            continue
        was = (seen.get(name) or {}).get("inputLastLoadedAt")
        if was is None or version > was:
            reasons.append(Reason("input_changed", name))
    return reasons
