"""Which loop order a C++ kernel gets (``cpp.py`` writes the loops; in real Inductor the
tiling decisions of torch/_inductor/codegen/cpp.py, ``select_tiling`` and the outer-loop
fusion of column reductions).

- A pointwise kernel is one flat loop over ``xindex``, in blocks for the threads, unless a
  load's index cuts ``xindex`` into digits (``bias[xindex % 1024]``): then it loops over rows,
  ``xindex = x0 + 1024*x1`` (``row_length``), and the index simplifies to ``bias[x0]``.
- A reduction kernel gives each thread whole rows and loops along each row inside, unless every
  load is consecutive across rows and strided along them (a column sum, a bias gradient): then
  the loop over ``rindex`` goes outside and a tile of rows inside (``is_column_reduction``).

Either way the reason is the same: the innermost loop, the one ``#pragma omp simd`` vectorises,
should read consecutive elements (one vector load), not one element per lane (a gather).
"""

from __future__ import annotations

import math
import re

import sympy

from ..kernel_group import RINDEX, XINDEX
from ..sizevars import FloorDiv, ModularIndexing
from .cpp_keep import KeptValues

XTILE = 64  # rows of a column reduction summed side by side (``column_reductions``)
ACCUMULATOR = re.compile(r"^([\w:<>]+) (acc\d+) = (.+);$")  # float acc0 = 0;


def is_column_reduction(phases: list, indices: list[sympy.Expr], values: KeptValues) -> bool:
    """One loop over the row, then per-row code only; plain accumulators (a sum, a max: an
    OpenMP reduction, a scalar); every index of the loop consecutive across rows (``xindex``'s
    coefficient 1) and not along them (``rindex``'s not 1), without division: reductions down
    columns, which ``column_reductions`` loops over in the other order."""
    kinds = [kind for kind, _ in phases]
    if kinds[:1] != ["loop"] or "loop" in kinds[1:] or values.slots:
        return False
    loop = phases[0][1]
    if not loop.accumulators or any(a.kind.omp is None or not ACCUMULATOR.match(line.strip())
                                    for a, line in zip(loop.accumulators, loop.prefix.lines)):
        return False
    along = [e for e in indices if RINDEX in e.free_symbols]
    return bool(along) and all(
        not e.has(FloorDiv, ModularIndexing) and sympy.expand(e).coeff(XINDEX) == 1
        and sympy.expand(e).coeff(RINDEX) != 1 for e in along)


X0, X1 = (sympy.Symbol(n, integer=True, nonnegative=True) for n in ("x0", "x1"))
MIN_ROW = 16  # shorter rows: the inner loop is too short for vectors, keep the flat loop


def row_length(indices: list[sympy.Expr], numel: sympy.Expr) -> int | None:
    """The row length to split a pointwise loop by, if its indices cut ``xindex`` into digits:
    ``% 1024`` and ``// 1024`` (a broadcast bias, a per-row mean) at every multiple of one
    length that divides ``numel``; within a row those indices are then consecutive or fixed."""
    if not isinstance(sympy.sympify(numel), sympy.Integer):
        return None
    bounds = []
    for index in indices:
        for digit in index.atoms(FloorDiv, ModularIndexing):
            base, divisor = digit.args[0], digit.args[1]
            if XINDEX not in base.free_symbols:
                continue
            if base != XINDEX or not isinstance(divisor, sympy.Integer):
                return None  # (xindex + 3) // 4, or a symbolic size
            if divisor > 1:
                bounds.append(int(divisor))
            if isinstance(digit, ModularIndexing):
                bounds.append(int(divisor * digit.args[2]))
    row = math.gcd(*bounds) if bounds else 0
    return row if row >= MIN_ROW and int(numel) % row == 0 and row < int(numel) else None
