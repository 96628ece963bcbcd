"""`core.jsontext` reads and writes what the `json` package does, to the character and to the error, without
importing it (a real process checks the import)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from croft.core import jsontext

VALUES = [
    {},
    [],
    "",
    0,
    -1.5,
    1e300,
    10**30,
    True,
    None,
    'é ✓ \x00 \u2028 "quoted" \\ /',
    {"a": [1, 2.0, {"b": None}], "ü": "ß", "1": False},
    [float("inf"), float("-inf")],
    {"roots": [f"/home/u/project {i:04d}" for i in range(50)], "at": "2026-03-01T10:00:00.000Z"},
]


@pytest.mark.parametrize("value", VALUES)
def test_the_text_and_the_value_are_the_packages(value: object) -> None:
    assert jsontext.dumps(value) == json.dumps(value)
    text = json.dumps(value, indent=1, ensure_ascii=False)
    assert jsontext.loads(text) == json.loads(text)
    assert jsontext.loads(f" \n\t{text}\r\n ") == json.loads(text)


@pytest.mark.parametrize(
    "text", ["", " ", "{", '{"a": 1,}', "[1] [2]", "nul", '"\\x"', "\ufeff{}", '{"a": 1} x', "[" * 100_000]
)
def test_what_does_not_parse_raises_the_packages_own_error(text: str) -> None:
    with pytest.raises((ValueError, RecursionError)) as expected:
        json.loads(text)
    with pytest.raises(type(expected.value)) as got:
        jsontext.loads(text)
    assert str(got.value) == str(expected.value)


def test_nan_and_the_constants_read_as_the_package_reads_them() -> None:
    value = jsontext.loads("[NaN, Infinity, -Infinity, 1.0, 2]")
    assert value[0] != value[0] and value[1:] == [float("inf"), float("-inf"), 1.0, 2]
    assert [type(v) for v in value[3:]] == [float, int]


def test_what_json_cannot_write_is_refused_as_the_package_refuses_it() -> None:
    for bad in ({1, 2}, object(), b"bytes"):
        with pytest.raises(TypeError) as expected:
            json.dumps(bad)
        with pytest.raises(TypeError) as got:
            jsontext.dumps(bad)
        assert str(got.value) == str(expected.value)
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        jsontext.dumps(loop)
    assert jsontext.dumps([[], []]) == "[[], []]"  # the same list twice is no circle, after a refusal too


PROBE = """
import sys
from croft.core import jsontext
jsontext.loads(jsontext.dumps({"a": [1, "b"]}))
print(sorted(m for m in ("json", "re", "enum") if m in sys.modules))
try:
    jsontext.loads(sys.argv[1])
except ValueError as exc:
    print(type(exc).__module__, type(exc).__name__, exc)
"""


def test_neither_the_package_nor_re_is_imported_until_text_does_not_parse() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, "[{"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "[]",
        "json.decoder JSONDecodeError Expecting property name enclosed in double quotes: line 1 column 3 (char 2)",
    ]
