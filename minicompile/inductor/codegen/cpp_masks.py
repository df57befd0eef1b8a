"""Rows cut where a mask changes value (no counterpart in torch/_inductor/codegen/cpp.py,
whose vectorised loops load masked vectors instead).

``torch.cat([a, b, c], 1)`` reads ``a`` where ``x0 < 128``, ``b`` where ``128 <= x0 < 256``;
``F.pad`` reads its input where ``x0 - 3 >= 0`` and ``x0 - 3 < 128``. Written as one loop over
the row, every point evaluates every comparison and calls the masked loads under ``?:``, which
the compiler does not turn into vector loads (27 us for a 128x384 cat). Cut at the points where
a comparison changes value, each piece is its own loop over a known range: the compiler folds
the comparisons, drops the dead loads and loads vectors (4.5 us; ``torch.cat`` takes 7).

Also the text of a masked block (``ops.masked``: a lambda called only where its mask holds):
two fused nodes reading one padded window make the same block twice, written once
(``local_names_numbered``), and the value it gives where the mask is off (``masked_fill``).
"""

from __future__ import annotations

import math
import re

import sympy


class MaskBounds:
    """Where comparisons of a loop variable with a constant change value: ``x0 < 128`` (cat),
    ``x0 - 3 >= 0`` (pad), ``2*x0 - 1 >= 0`` (a pooling window with stride 2). The ops handler reports each index temporary, integer literal and
    comparison it writes; ``at[x0]`` collects the first ``x0`` of each new value."""

    FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}  # c < x  is  x > c

    def __init__(self) -> None:
        self.at: dict[sympy.Symbol, set[int]] = {}
        self.index_values: dict[str, sympy.Expr] = {}  # temporary -> the index it holds
        self.constants: dict[str, object] = {}  # integer literal -> its value

    def compare(self, op: str, a: str, b: str) -> None:
        if a in self.constants:
            a, b, op = b, a, self.FLIPPED[op]
        value = self.constants.get(b)
        if a not in self.index_values or not isinstance(value, (int, sympy.Integer)) or \
                isinstance(value, bool):
            return
        offset, term = self.index_values[a].as_coeff_Add()  # ``2*x0 - 1``: offset -1
        scale, var = term.as_coeff_Mul()  # 2, x0 (a pooling window's stride)
        if not (isinstance(var, sympy.Symbol) and isinstance(offset, sympy.Integer)
                and isinstance(scale, sympy.Integer) and scale != 0):
            return
        # every comparison is ``scale*x0 >= t`` or its negation (a < v: not a >= v; a > v:
        # a >= v + 1; a <= v: not a >= v + 1), which changes value once, at the first x0 past t
        t = int(value) + (1 if op in ("le", "gt") else 0) - int(offset)
        scale = int(scale)
        first = -(-t // scale) if scale > 0 else t // scale + 1  # ceil(t / scale), floor + 1
        self.at.setdefault(var, set()).add(first)


MAX_SEGMENTS = 8  # more pieces of a row: one loop (the code would grow with each)


def row_segments(bounds, row: int) -> list[tuple[int, int]]:
    """A row cut where a comparison of ``x0`` with a constant changes value (cat's inputs,
    pad's edges: ``x0 < 128``): in each piece the compiler knows every such comparison, drops
    the masks and the loads they guard off, and loads vectors (a cat of three 128-column
    blocks: 27 us -> 4.5 us). One piece when there are no such bounds, or too many."""
    cuts = sorted({0, row, *(b for b in bounds if 0 < b < row)})
    if len(cuts) - 1 > MAX_SEGMENTS:
        return [(0, row)]
    return list(zip(cuts, cuts[1:]))


# --- masked blocks (``ops.masked``: a lambda called only where the mask holds) ----------------

_DEFINED = re.compile(r"\bauto (\w+) = ")


def local_names_numbered(code: str, result: str) -> str:
    """``code`` (and the ``result`` it returns) with the names it defines numbered in order of
    definition (``tmp37`` -> ``@0``): two blocks that differ only in those names read alike."""
    local = {name: f"@{i}" for i, name in enumerate(dict.fromkeys(_DEFINED.findall(code)))}
    rename = lambda m: local.get(m.group(0), m.group(0))  # noqa: E731
    return re.sub(r"\b\w+\b", rename, f"{code}\nreturn {result};")


def masked_fill(lam: str, other: object) -> str:
    """The value where the mask is off, in the type the lambda ``lam`` returns."""
    if isinstance(other, float) and math.isnan(other):
        return f"std::numeric_limits<decltype({lam}())>::quiet_NaN()"
    if isinstance(other, float) and math.isinf(other):
        return f"{'' if other > 0 else '-'}std::numeric_limits<decltype({lam}())>::infinity()"
    return f"static_cast<decltype({lam}())>({other!r})".replace("True", "true").replace(
        "False", "false")
