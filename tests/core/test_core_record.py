"""`core.record.NamedTuple` makes what `typing.NamedTuple` makes, without importing `typing` (a real
process checks the import)."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest

from croft.core import record


def _pair(base: type) -> type:
    class Fire(base):  # type: ignore[misc, valid-type]
        """A fire time."""

        at: str
        asset: str
        tries: int = 0
        why: str | None = None

        def late(self) -> bool:
            return self.tries > 0

    return Fire


def test_the_class_behaves_as_typing_makes_it() -> None:
    ours, theirs = _pair(record.NamedTuple), _pair(typing.NamedTuple)
    a, b = ours("10:00", "issues", 2), theirs("10:00", "issues", 2)
    assert ours._fields == theirs._fields == ("at", "asset", "tries", "why")
    assert ours._field_defaults == theirs._field_defaults == {"tries": 0, "why": None}
    assert tuple(a) == tuple(b) and a == b and hash(a) == hash(b)  # plain tuples underneath, as theirs
    assert repr(a) == repr(b) == "Fire(at='10:00', asset='issues', tries=2, why=None)"
    assert a._replace(tries=0) == ("10:00", "issues", 0, None) and not a._replace(tries=0).late()
    assert a._asdict() == b._asdict() and a.late() and b.late()
    assert ours.__doc__ == theirs.__doc__ == "A fire time."
    assert ours.__module__ == theirs.__module__ == __name__
    assert sorted([ours("b", "x"), ours("a", "y")])[0].at == "a"
    assert isinstance(a, tuple) and ours.__annotations__.keys() == theirs.__annotations__.keys()


def test_what_typing_refuses_is_refused() -> None:
    with pytest.raises(TypeError, match="Non-default namedtuple field asset cannot follow default fields"):

        class Bad(record.NamedTuple):
            at: str = ""
            asset: str

    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _fields"):

        class Worse(record.NamedTuple):
            at: str
            _fields = ("x",)  # type: ignore[assignment]


def test_typing_is_not_imported() -> None:
    probe = (
        "import sys; from croft.core.record import NamedTuple\n"
        "class P(NamedTuple):\n    x: int\n"
        "print(P(1), 'typing' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "P(x=1) False"
