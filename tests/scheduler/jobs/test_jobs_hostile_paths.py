"""Hostile paths through every job renderer and back through the format's own parser.

A path may hold quotes, ``%``, ``\\``, ``$``, backticks, ``${...}`` (the templates' own field syntax),
``;``, ``#``, unicode, control characters, and be 600 characters long. Each renderer must either give
every path back exactly, read by the program that reads that format (python-crontab and a real ``sh``
after cron's ``%`` rule; ``plistlib``; ``systemd-analyze verify`` and a parse of the unit's words as
systemd splits them), or refuse it with INSTALL_FAILED before anything is written.

The models of cron's ``%`` rule and of systemd's word splitting are written here from the programs'
own rules, apart from croft's code; the real cron and systemd tests (tests/e2e) check them live.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jobskit import FakeOS

from croft.core.problems import CroftError
from croft.scheduler.jobs.crontab import Crontab, python_of, render_line
from croft.scheduler.jobs.launchd import Launchd, render_plist
from croft.scheduler.jobs.spec import JobSpec
from croft.scheduler.jobs.systemd import Systemd, _exec_python, render_units

pytestmark = pytest.mark.processes  # sh and systemd-analyze read what the renderers wrote

LABEL = "dev.croft.test"
ATOMS = [
    "'", '"', "%", "\\", "\\%", "%%", "$", "$$", "$HOME", "`id`", "$(id)", "${log}", "${croft_home}",
    "${python}", "${label}", "${...}", ";", "#", " # ", " ", "  ", "&", "|", ">", "<", "*", "?", "!",
    "é", "ß", "日本", "😀", "\u2028", "\u202e", "\ufeff", "\x85", "\x01", "\x1b", "\t", "\x7f", "\x1c",
    "\n", "\r", "\udcff", "a", "-", ".", "]]>", "&amp;",
]  # fmt: skip


def _component(parts: list[str]) -> str:
    text = "".join(parts).replace("/", "_").replace("\0", "_")
    while len(text.encode("utf-8", "surrogateescape")) > 255:  # one name of a file system
        text = text[:-1]
    return text if text.strip(".") else f"x{text}"


component = st.lists(st.sampled_from(ATOMS) | st.text(min_size=1, max_size=6), min_size=1, max_size=10).map(
    _component
)
short_path = st.lists(component, min_size=1, max_size=6).map("/".join)
long_path = st.lists(
    st.lists(st.sampled_from(ATOMS), min_size=60, max_size=80).map(_component), min_size=4, max_size=6
).map("/".join)
hostile = short_path | long_path


def _spec(base: str, home: str, python: str) -> JobSpec:
    croft_home = f"{base}/{home}"
    return JobSpec(
        LABEL, f"{base}/{python}/py", croft_home, f"{croft_home}/logs/tick.log", f"{base}/{python}/minute.py"
    )


def _fits(char: str, fmt: str) -> bool:
    if fmt == "plist":
        return (ord(char) >= 0x20 or char == "\t") and char not in "\ufffe\uffff"
    return char not in "\n\r"


def _first_unholdable(spec: JobSpec, fmt: str) -> str | None:
    for value in (spec.python, spec.croft_home, spec.log):
        if any("\ud800" <= c <= "\udfff" or not _fits(c, fmt) for c in value):
            return value
    return None


def _install_failed(call: object, path: str) -> None:
    with pytest.raises(CroftError) as err:
        call()  # type: ignore[operator]
    assert err.value.code == "INSTALL_FAILED"
    assert err.value.problem.details and err.value.problem.details["path"] == path
    assert repr(path) in err.value.problem.message


# -- crontab ------------------------------------------------------------------------------------------


def cron_hands_sh(command: str) -> str:
    """Vixie/Debian cron's do_command: ``\\%`` becomes ``%``, the first unescaped ``%`` ends the command
    (the rest is stdin), and a backslash escapes only the one character after it."""
    out: list[str] = []
    escaped = False
    for char in command:
        if escaped:
            if char == "%":
                out[-1] = "%"
            else:
                out.append(char)
            escaped = False
        elif char == "\\":
            out.append(char)
            escaped = True
        elif char == "%":
            break
        else:
            out.append(char)
    return "".join(out)


ECHO = '#!/bin/sh\nprintf \'%s\\0\' "$CROFT_HOME" "$0" "$@"\n'


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(home=hostile, python=hostile)
@example(home="back\\slash\\%", python="env")  # the cases, always tried
@example(home="${log}/${croft_home}", python="${python}/${log}")
@example(home="a\x01b", python="c\x1bd")
def test_a_crontab_line_gives_every_path_back_or_is_refused_before_writing(home: str, python: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = _spec(tmp, home, python)
        bad = _first_unholdable(spec, "crontab")
        fake = FakeOS()
        if bad is not None:
            _install_failed(lambda: Crontab(fake).install(spec), bad)
            assert not [c for c in fake.calls if c[0][:2] == ["crontab", "-"]]  # nothing written
            return
        line = render_line(spec)
        assert "\n" not in line
        # python-crontab reads the line back: one job, our tag, and the words we meant
        from crontab import CronTab

        (job,) = list(CronTab(tab=line + "\n"))
        assert job.comment == f"croft:{LABEL}"
        words = shlex.split(job.command)
        assert words == [
            f"CROFT_HOME={spec.croft_home}", spec.python, *spec.args(), ">>", spec.log, "2>&1"
        ]  # fmt: skip
        assert python_of(line) == spec.python
        # cron's own rule agrees with python-crontab, and a real sh runs what cron hands it: the
        # interpreter is a script at the hostile path that writes CROFT_HOME, $0 and its arguments to the log
        command = cron_hands_sh(line[len("* * * * * ") : line.rindex(" # croft:")])
        assert command == job.command
        script = Path(spec.python)
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(ECHO)
        script.chmod(0o755)
        Path(spec.log).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["/bin/sh", "-c", command], check=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
        said = Path(spec.log).read_bytes().decode("utf-8").split("\0")
        assert said == [spec.croft_home, spec.python, *spec.args(), ""]


# -- launchd ------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(home=hostile, python=hostile)
@example(home="back\\slash\\%", python="env")  # the cases, always tried
@example(home="${log}/${croft_home}", python="${python}/${log}")
@example(home="a\x01b", python="c\x1bd")
def test_a_plist_gives_every_path_back_or_is_refused_before_writing(home: str, python: str) -> None:
    spec = _spec("/tmp/base", home, python)
    bad = _first_unholdable(spec, "plist")
    with tempfile.TemporaryDirectory() as tmp:
        fake = FakeOS()
        agent = Launchd(fake, Path(tmp), uid=501, sleep=lambda s: None)
        if bad is not None:
            _install_failed(lambda: agent.install(spec), bad)
            assert os.listdir(tmp) == [] and fake.calls == []  # no plist, no launchctl
            return
    plist = plistlib.loads(render_plist(spec).encode("utf-8"))
    assert plist["Label"] == LABEL
    assert plist["ProgramArguments"] == spec.argv()
    assert plist["EnvironmentVariables"]["CROFT_HOME"] == spec.croft_home
    assert plist["StandardOutPath"] == plist["StandardErrorPath"] == spec.log


# -- systemd ------------------------------------------------------------------------------------------

C_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b",
             "f": "\f", "v": "\v", "s": " "}  # fmt: skip


def systemd_words(text: str) -> list[str]:
    """A unit setting's value split as systemd's extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE)
    splits it: words at whitespace, quotes removed, C escapes undone inside and outside quotes."""
    words: list[str] = []
    i = 0
    while i < len(text):
        while i < len(text) and text[i] in " \t":
            i += 1
        if i == len(text):
            break
        word: list[str] = []
        quote: str | None = None
        while i < len(text) and (quote or text[i] not in " \t"):
            char = text[i]
            if char == "\\":
                word.append(C_ESCAPES[text[i + 1]])
                i += 2
                continue
            if quote and char == quote:
                quote = None
            elif not quote and char in "'\"":
                quote = char
            else:
                word.append(char)
            i += 1
        assert quote is None, f"unclosed quote in {text!r}"
        words.append("".join(word))
    return words


def specifiers(text: str) -> str:
    assert "%" not in text.replace("%%", ""), f"an unescaped specifier in {text!r}"
    return text.replace("%%", "%")


def no_variables(word: str) -> str:
    """ExecStart's ``$$`` is a ``$``; a lone ``$`` would start a variable systemd expands."""
    parts = word.split("$$")
    assert not any("$" in part for part in parts), f"an unescaped $ in {word!r}"
    return "$".join(parts)


def setting(unit: str, key: str) -> str:
    (line,) = [x for x in unit.split("\n") if x.startswith(f"{key}=")]
    return line[len(key) + 1 :]


def _verify(folder: Path, names: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", "verify", *(str(folder / n) for n in names)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(home=hostile, python=hostile)
@example(home="back\\slash\\%", python="env")  # the cases, always tried
@example(home="${log}/${croft_home}", python="${python}/${log}")
@example(home="a\x01b", python="c\x1bd")
def test_systemd_units_give_every_path_back_or_are_refused_before_writing(home: str, python: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = _spec(tmp, home, python)
        bad = _first_unholdable(spec, "systemd")
        units = Path(tmp) / "units"
        if bad is not None:
            fake = FakeOS()
            _install_failed(lambda: Systemd(fake, units).install(spec), bad)
            assert not units.exists() and fake.calls == []  # no unit, no systemctl
            return
        rendered = render_units(spec)
        service = rendered[f"{LABEL}.service"]
        # our parse of what systemd reads: ExecStart's words, the one Environment, the log
        words = [no_variables(specifiers(w)) for w in systemd_words(setting(service, "ExecStart"))]
        if words[0] == "/usr/bin/env":
            words = words[1:]
        assert words == spec.argv()
        assert _exec_python(service) == spec.python
        envs = [x for x in service.split("\n") if x.startswith("Environment=") and "CROFT_HOME" in x]
        (env_line,) = envs
        assert [specifiers(w) for w in systemd_words(env_line[len("Environment=") :])] == [
            f"CROFT_HOME={spec.croft_home}"
        ]
        assert specifiers(setting(service, "StandardOutput")) == f"append:{spec.log}"
        assert specifiers(setting(service, "StandardError")) == f"append:{spec.log}"
        # and systemd itself accepts both units without a word of complaint
        Path(spec.python).parent.mkdir(parents=True, exist_ok=True)
        Path(spec.python).symlink_to(shutil.which("python3") or "/usr/bin/python3")
        folder = units
        folder.mkdir()
        for name, text in rendered.items():
            (folder / name).write_text(text, encoding="utf-8")
        done = _verify(folder, list(rendered))
        assert done.returncode == 0, done.stderr
        assert LABEL not in done.stderr, done.stderr
