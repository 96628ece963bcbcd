"""`croft docs`: every topic lists and prints, the words a user would guess open the right page, unknown
words get a did-you-mean (exit 2, never a traceback), and every problem code has a page of its own."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from croft.cli.docs import ALIASES, error_pages, resolve, topics
from croft.cli.group import COMMANDS, build_group
from croft.core.problems import CODES, problem
from croft.core.result import Result

# Codes whose pages were written before the issue that registers them landed (issues 7, 8, 11, 13).
# Once a code here is registered, the last test below fails: delete it from this set.
AHEAD_OF_REGISTRATION: set[str] = set()

REQUIRED_TOPICS = {
    "getting-started",
    "assets",
    "running",
    "scheduling",
    "scheduler",
    "notifications",
    "configuration",
    "environment",
    "server",
    "design",
    "benchmarks",
    "errors",
    "commands",
}


def docs(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_group(), ["docs", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_the_listing_names_every_topic_with_a_line_from_its_page():
    code, out, _ = docs()
    assert code == 0
    listed = dict(re.findall(r"^  (\S+)\s+(.+)$", out, re.M))
    assert set(listed) == set(topics()) and set(listed) >= REQUIRED_TOPICS
    for name, path in topics().items():
        title = path.read_text().splitlines()[0].removeprefix("# ")
        assert listed[name].startswith(title), name
        assert len(listed[name]) > len(title) + 10, f"{name}: the listing has no summary sentence"


@pytest.mark.parametrize("name", sorted(REQUIRED_TOPICS))
def test_every_topic_prints_its_page(name):
    code, out, _ = docs(name)
    assert code == 0 and out.strip() == topics()[name].read_text().strip()


@pytest.mark.parametrize(
    ("word", "topic"),
    [
        ("ingest", "assets"),
        ("transform", "assets"),
        ("cron", "scheduling"),
        ("DST", "scheduling"),
        ("webhook", "notifications"),
        ("launchd", "scheduler"),
        ("systemd", "scheduler"),
        ("crontab", "scheduler"),
        ("serve", "server"),
        ("docker", "server"),
        ("kubernetes", "server"),
        ("env", "environment"),
        ("config", "configuration"),
        ("getting started", "getting-started"),
        ("Scheduling", "scheduling"),
    ],
)
def test_the_words_a_user_would_guess_open_the_page_that_covers_them(word, topic):
    code, out, _ = docs(*word.split())
    assert code == 0 and out.strip() == topics()[topic].read_text().strip()


def test_every_alias_points_at_a_page_and_shadows_none():
    assert not set(ALIASES) & set(topics())
    assert {target for target in ALIASES.values()} <= set(topics())


@pytest.mark.parametrize("word", ["ingst", "scheduel", "webhok", "SCHEDULE_HELDD", "zzzz-nothing"])
def test_an_unknown_topic_is_exit_2_with_the_nearest_topics(word):
    code, out, err = docs(word)
    assert code == 2 and out == "" and "Traceback" not in err
    assert "USAGE" in err and repr(word) in err
    envelope = json.loads(docs(word, "--json")[1])
    assert envelope["ok"] is False and envelope["problems"][0]["code"] == "USAGE"
    near = envelope["problems"][0]["details"]["nearest"]
    for name in near:
        assert resolve(name) is not None, f"suggested {name!r} does not open a page"
    if word != "zzzz-nothing":
        assert near, f"no suggestion for {word!r}"


def test_close_words_suggest_what_they_look_like():
    def near(word: str) -> list[str]:
        return json.loads(docs(word, "--json")[1])["problems"][0]["details"]["nearest"]

    assert near("ingst")[0] == "assets"
    assert near("webhok")[0] == "notifications"
    assert near("SCHEDULE_HELDD")[0] == "SCHEDULE_HELD"


# --- one page per problem code ---------------------------------------------------------------------

SECTIONS = ("What it means", "How to fix it", "Check the fix")


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def test_every_registered_code_has_a_page():
    missing = sorted(set(CODES) - set(error_pages()))
    assert not missing, f"codes without a page in docs/errors/: {missing}"


def test_every_page_names_a_registered_code_or_one_documented_ahead():
    stray = sorted(set(error_pages()) - set(CODES) - AHEAD_OF_REGISTRATION)
    assert not stray, f"pages for codes croft no longer has: {stray}"


def test_codes_documented_ahead_are_not_registered_yet():
    landed = sorted(AHEAD_OF_REGISTRATION & set(CODES))
    assert not landed, f"now registered: remove {landed} from AHEAD_OF_REGISTRATION"


@pytest.mark.parametrize("code", sorted(set(error_pages())))
def test_each_code_page_says_what_why_how_and_the_check(code):
    text = error_pages()[code].read_text()
    assert text.startswith(f"# {code}\n")
    sections = _sections(text)
    assert all(s in sections for s in SECTIONS), f"{code}: sections {list(sections)}"
    why = [s for s in sections if s.startswith("Why croft")]
    assert len(why) == 1, f"{code}: no 'Why croft …' section"
    for name in (*SECTIONS[:2], why[0]):
        assert len(sections[name].split()) >= 15, f"{code}: '{name}' is not a paragraph"
    assert len(text.split()) >= 110, f"{code}: the page is shorter than a full paragraph"
    check = re.fullmatch(r"```\n(croft [^\n]+)\n```", sections["Check the fix"])
    assert check, f"{code}: the check is not one croft command in a code block"
    if code in CODES:
        family, exit_code = CODES[code]
        assert f"Exit {exit_code}, {family} family." in text.split("\n\n")[1], code
        first = check.group(1).split()[1]
        assert first in COMMANDS or first == "--help", f"{code}: `{check.group(1)}` is no croft command"


@pytest.mark.parametrize("spelling", ["SCHEDULE_HELD", "schedule_held", "Schedule-Held"])
def test_a_code_opens_its_page_in_any_case(spelling):
    code, out, _ = docs(spelling)
    assert code == 0 and out.strip() == error_pages()["SCHEDULE_HELD"].read_text().strip()


def test_every_problem_points_at_its_page_in_json_and_in_text():
    from croft.cli.render import problem_lines

    p = problem("SCHEDULE_HELD", "orders is held", "croft run orders releases it", severity="warning")
    assert Result(problems=[p]).envelope()["problems"][0]["docs"] == "croft docs SCHEDULE_HELD"
    assert "  more: croft docs SCHEDULE_HELD" in problem_lines([p])
    code, out, _ = docs(*p.docs.split()[2:])
    assert code == 0 and out.startswith("# SCHEDULE_HELD")


# --- configuration and environment pages cover what the code reads --------------------------------


def test_the_configuration_page_has_every_croft_json_key():
    from croft.project.config import NOTIFY_KEYS, TOP_KEYS

    text = topics()["configuration"].read_text()
    keys = [*TOP_KEYS, *(f"notify.{k}" for k in NOTIFY_KEYS)]
    missing = [k for k in keys if f"| `{k}` |" not in text]
    assert not missing, f"docs/configuration.md has no row for {missing}"


def test_the_environment_page_has_every_croft_variable_the_code_reads():
    from pathlib import Path

    import croft

    source = Path(croft.__file__).parent
    names = {m for f in source.rglob("*.py") for m in re.findall(r"\bCROFT_[A-Z_]+\b", f.read_text())}
    assert names, "found no CROFT_ variable in the source"
    text = topics()["environment"].read_text()
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"docs/environment.md does not describe {missing}"


def test_the_environment_table_is_the_knobs_table():
    """One table of knobs in the code (``core.knobs``), one in the docs: same names, same order, and each
    row gives the range the code enforces."""
    from croft.core.knobs import KNOBS

    text = topics()["environment"].read_text()
    rows = re.findall(r"^\| `(CROFT_[A-Z_]+)` \| .+? \| (.+?) \| .+? \|$", text, re.M)
    assert [name for name, _ in rows] == list(KNOBS)
    for name, values in rows:
        assert values == KNOBS[name].rule(), name


def test_every_range_croft_enforces_is_in_the_docs_as_it_enforces_it():
    """bounds.BOUNDS is the one table of the numbers croft reads; each range is written in the page that
    documents its option, in the words the error uses."""
    from croft.project.bounds import BOUNDS

    pages = {
        "history.keepDays": "configuration",
        "maxRuntime": "configuration",
        "max_runtime": "assets",
        "timeout": "assets",
        "retries": "assets",
        "lookback": "assets",
        "pause": "commands",
        "pools": "configuration",
        "notify.after": "notifications",
        "notify.remind": "notifications",
        "fresh_within": "notifications",
        "slow_after": "notifications",
        "jitter": "configuration",
    }
    assert set(pages) == set(BOUNDS)
    for option, page in pages.items():
        assert BOUNDS[option].words() in topics()[page].read_text(), (option, page)
