"""Names in generated code: how a name that comes from user code or data (an attribute, a
parameter path, a class, a dict key) is written into the Python that minicompile generates --
guards, transformed functions, graph attributes -- so that it means what it meant and runs
nothing.

No single torch counterpart: real Dynamo writes ``getattr(x, 'a b')`` for an attribute that is
not an identifier (torch/_dynamo/source.py, ``AttrSource.name``), and FX gives every node a fresh
identifier of its own (torch/fx/graph.py, ``_Namespace.create_name``). Both ideas live here, one
function each, for every stage:

- :func:`is_identifier`: a name is written as it is only when it is an identifier that means
  itself -- not a keyword, and unchanged by the NFKC normalisation Python applies to the
  identifiers it reads (``obj.ﬁ`` in source reads the attribute ``fi``);
- :func:`attr`: any other attribute is read with its name as a ``repr`` literal,
  ``getattr(L['self'], "x'y")``, so a quote, a newline or a whole expression in the name
  stays a string;
- :class:`Namespace`: where a name must *become* an identifier (a graph input, an attribute of
  the output GraphModule, the alias of another module's globals), one name gets one
  identifier and no two names get the same one: its readable ASCII form
  (``L__self___fc_weight``) while that is free, else that form with the next free index
  (``L__self___a_b_1`` after ``L__self___a_b``); a name that had to be rewritten to be an
  identifier (``α``, ``x y``) always carries an index, so ``α`` and ``β`` never meet;
- :func:`readable`: the lossy ASCII form itself, used only beside something that makes the
  result unique (a Namespace, or a counter: ``__transformed_code_3__lambda_``,
  ``cpp_fused_add_0``);
- :func:`literal`: a value as Python source that evaluates to it, or None where its ``repr`` is
  not such source (an Enum member, a device): the caller binds it to a name instead;
- :func:`comment`: text after a ``#``, kept on one line and printable.
"""

from __future__ import annotations

import keyword
import math
import re
import unicodedata
from typing import Any, Iterable

_NOT_ASCII_WORD = re.compile(r"[^0-9a-zA-Z_]")


def is_identifier(name: Any) -> bool:
    """Whether ``name`` can be written as it is in Python source and mean itself."""
    return (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
            and unicodedata.normalize("NFKC", name) == name)


def attr(base: str, name: str) -> str:
    """``base.name``, or ``getattr(base, 'name')`` when the name can't be written as it is."""
    return f"{base}.{name}" if is_identifier(name) else f"getattr({base}, {name!r})"


def readable(name: str) -> str:
    """An ASCII identifier that looks like ``name``: each other character becomes ``_``
    (``L['x y']`` -> ``L__x_y__``). Lossy: unique only beside an index."""
    text = _NOT_ASCII_WORD.sub("_", name)
    if not text or text[0].isdigit() or keyword.iskeyword(text):
        text = f"_{text}"
    return text


def literal(value: Any) -> str | None:
    """``value`` as Python source that evaluates to an equal value of the same type, or None.
    Exact builtin types only: a subclass (a str-Enum member, an IntEnum) prints a ``repr``
    that is not Python."""
    if value is None or value is Ellipsis or type(value) in (bool, int, str, bytes):
        return repr(value)
    if type(value) in (float, complex) and all(map(math.isfinite, (value.real, value.imag))):
        return repr(value)
    if type(value) is tuple:
        items = [literal(v) for v in value]
        if None not in items:
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    return None


def comment(text: str) -> str:
    """``text`` as it may follow a ``#``: one line, each unprintable character escaped."""
    if text.isprintable():  # the usual case, in C
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class Namespace:
    """One identifier per name, never one identifier for two names (stable: asking again for a
    name gives its identifier again). ``reserved``: identifiers that are already taken."""

    def __init__(self, reserved: Iterable[str] = ()):
        self._ids: dict[str, str] = {}
        self._taken: set[str] = set(reserved)

    def __call__(self, name: str, hint: str | None = None) -> str:
        """The identifier of ``name``; ``hint`` is how it should look (default: ``name``)."""
        if name in self._ids:
            return self._ids[name]
        wanted = name if hint is None else hint
        base = readable(wanted)
        ident, index = (base if base == wanted else None), 1
        while ident is None or ident in self._taken:  # a rewritten name always has an index
            ident, index = f"{base}_{index}", index + 1
        self._ids[name] = ident
        self._taken.add(ident)
        return ident
