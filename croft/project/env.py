"""Reading a project's ``.env``: croft reads it itself, because a scheduled tick starts far from the project.

Values are secrets: nothing here prints, logs or puts a value into an error message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from croft.core.problems import CroftError, Problem, problem
from croft.core.redact import MAX_SECRET_BYTES

__all__ = ["MAX_ENV_FILE_BYTES", "checked_sizes", "parse_dotenv", "project_env", "read_dotenv", "shell_wins"]

MAX_ENV_FILE_BYTES = 1024 * 1024  # a .env is names and secrets; a larger file is not one

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # compiled (and cached by re) when a .env is read
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` pairs of ``path`` (missing file: none). Lines that are not assignments are skipped."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_ENV_FILE_BYTES + 1)
        if len(data) > MAX_ENV_FILE_BYTES:
            raise CroftError(_too_large(path, f"the file is larger than {MAX_ENV_FILE_BYTES:,} bytes"))
        text = data.decode("utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        # The value is a secret: say where the file broke, never what it holds.
        why = (
            f"byte {err.start} is not UTF-8"
            if isinstance(err, UnicodeDecodeError)
            else (err.strerror or type(err).__name__)
        )
        raise CroftError(
            "ENV_INVALID",
            f"{path} cannot be read as a text file of NAME=value lines ({why})",
            f"Make {path.name} a UTF-8 text file (not a folder) that this user can read, or remove it.",
            details={"file": str(path)},
        ) from None
    return parse_dotenv(text)


def parse_dotenv(text: str) -> dict[str, str]:
    """Pairs in dotenv text: ``export `` prefixes, quotes, ``#`` comments; a name's last assignment wins."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, sep, rest = line.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(_NAME, name):
            continue
        values[name] = _value(rest.strip())
    return values


def _value(rest: str) -> str:
    """One value: single quotes are literal, double quotes take escapes, bare values drop `` #...``."""
    if rest[:1] == "'":
        end = rest.find("'", 1)
        return rest[1:end] if end > 0 else rest[1:]
    if rest[:1] == '"':
        out: list[str] = []
        i = 1
        while i < len(rest):
            ch = rest[i]
            if ch == "\\" and i + 1 < len(rest):
                nxt = rest[i + 1]
                out.append(_ESCAPES.get(nxt, "\\" + nxt))
                i += 2
                continue
            if ch == '"':
                break
            out.append(ch)
            i += 1
        return "".join(out)
    comment = re.search(r"\s#", rest)
    if comment:
        rest = rest[: comment.start()]
    return rest.strip()


def shell_wins(dotenv: Mapping[str, str], path: Path) -> dict[str, str]:
    """The names ``.env`` (at ``path``) defines, each with the shell's value when it exports one, sizes
    checked (``checked_sizes``): what the project's code sees, so what croft hides."""
    return checked_sizes({name: os.environ.get(name, value) for name, value in dotenv.items()}, path)


def project_env(root: Path) -> dict[str, str]:
    """``shell_wins`` over ``<root>/.env``, read without loading the project: a line about a project whose
    croft.json does not load (or whose time zone this interpreter cannot find) is still redacted."""
    path = root / ".env"
    return shell_wins(read_dotenv(path), path)


def checked_sizes(env: Mapping[str, str], path: Path) -> dict[str, str]:
    """``env`` when every value is at most ``MAX_SECRET_BYTES`` (UTF-8), else ENV_INVALID naming each key
    that is larger (never its value). The one rule: ``Project.env`` applies it, so ``validate``, a run
    and the tick refuse the same values. Every value is a secret croft hides in everything it writes,
    and one of a megabyte is not a key or a token but a file pasted by mistake."""
    large = [
        name
        for name, value in env.items()
        if len(value) * 4 > MAX_SECRET_BYTES and _size(value) > MAX_SECRET_BYTES
    ]
    if not large:
        return dict(env)
    sizes = ", ".join(f"{name} ({_size(env[name]):,} bytes)" for name in large)
    raise CroftError(
        _too_large(path, f"the value of {sizes} is larger than {MAX_SECRET_BYTES:,} bytes", large)
    )


def _size(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _too_large(path: Path, why: str, keys: list[str] | None = None) -> Problem:
    return problem(
        "ENV_INVALID",
        f"{path}: {why}",
        f"Keep secrets (keys, tokens, passwords) of up to {MAX_SECRET_BYTES // 1024} KiB each in {path.name};"
        " keep a larger file elsewhere and put its path in .env instead. A value the shell exports counts too.",
        details={"file": str(path), **({"keys": keys} if keys else {})},
    )
