"""The examples in the guides are real: every asset shown in docs/assets.md reads without a problem."""

from __future__ import annotations

import re

import pytest

from croft.core.paths import data_path
from croft.project.facts import read_python_facts
from croft.project.sqlfacts import read_sql_facts

GUIDE = data_path("docs", "assets.md").read_text()
BLOCKS = re.findall(r"```(python|sql)\n(.*?)```", GUIDE, re.S)


def test_the_guide_has_examples_of_each_kind():
    assert {lang for lang, _ in BLOCKS} == {"python", "sql"} and len(BLOCKS) >= 3


@pytest.mark.parametrize(("lang", "text"), BLOCKS, ids=[f"{lang}-{i}" for i, (lang, _) in enumerate(BLOCKS)])
def test_every_example_asset_reads_cleanly(tmp_path, lang, text):
    path = tmp_path / f"example.{'py' if lang == 'python' else 'sql'}"
    path.write_text(text)
    reader = read_python_facts if lang == "python" else read_sql_facts
    facts = reader(path, "example", path.name)
    assert facts.problems == (), facts.problems
