"""``NamedTuple`` for croft's records, without loading ``typing``: the same classes, made for less.

``class Fire(NamedTuple): ...`` here makes what ``typing.NamedTuple`` makes (a ``collections.namedtuple``
with the class body's methods, docstring and defaults on it: the same equality, hashing, ordering,
``_replace`` and ``_asdict``), but it does not check each annotation as a type. That check is most of
what a ``typing.NamedTuple`` costs to make, and importing ``typing`` costs as much again: ``croft status``
makes about twenty such classes, and neither is any of a status's work. Type checkers see
``typing.NamedTuple`` itself, so the fields are typed as before.

The annotations stay what ``from __future__ import annotations`` leaves them, strings; nothing in croft
reads them at run time.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import namedtuple

    # what typing.NamedTupleMeta keeps for the namedtuple itself (CPython 3.11's typing)
    _PROHIBITED = frozenset({
        "__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults", "_make",
        "_replace", "_asdict", "_source",
    })  # fmt: skip
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _Maker(type):
        """Makes each subclass of ``NamedTuple`` a named tuple, as ``typing.NamedTupleMeta`` does."""

        def __new__(mcls, typename, bases, ns):
            if not bases:  # NamedTuple itself
                return super().__new__(mcls, typename, bases, ns)
            if bases != (NamedTuple,):
                raise TypeError("can only inherit from a NamedTuple type")
            fields = ns.get("__annotations__", {})
            defaults = []
            for name in fields:
                if name in ns:
                    defaults.append(name)
                elif defaults:
                    raise TypeError(f"Non-default namedtuple field {name} cannot follow default fields")
            made = namedtuple(typename, fields, defaults=[ns[n] for n in defaults], module=ns["__module__"])
            made.__annotations__ = dict(fields)
            for key in ns:
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in made._fields:
                    setattr(made, key, ns[key])
            return made

    class NamedTuple(metaclass=_Maker):
        """Subclass it with annotated fields, as ``typing.NamedTuple``."""


__all__ = ["NamedTuple"]
