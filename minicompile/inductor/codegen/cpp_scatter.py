"""Where a scatter's adds may meet (``ops.store(..., mode="atomic_add")`` in the C++ backend; no
counterpart in torch/_inductor/codegen/cpp.py, which adds atomically wherever a store may
collide: ``atomic_add`` in its cpp_prefix.h).

Points that may add into one element at once need an atomic add, a locked instruction per
element, several times the add itself; lanes of one vector must never do so at all. Each test
here reads the scatter's index (in the row loop's variables: ``x0`` along a row, ``x1`` the row,
``indirect0`` a loaded index) and says which loop orders keep the adds apart:

- ``distinct_along_loop``: the points of one row reach distinct elements (a vector may add them);
- ``whole_rows_apart``: position ``x0`` of any row reaches only position ``x0`` of the output's
  rows, so threads owning different positions never meet (``cpp_loops.column_split_loops``);
- ``rows_keep_apart``: each row reaches elements no other row reaches, so threads owning whole
  rows never meet (the plain parallel loop over rows, with plain adds).
"""

from __future__ import annotations

import sympy

from ..sizevars import along


def distinct_along_loop(index: sympy.Expr, inner: tuple, hoisted_indirect: set) -> bool:
    """Whether the loop's points reach distinct elements through ``index``: a constant nonzero
    step along its variable (``inner``: the loop's one variable), the rest the same at every
    point (an index loaded once before the loop, ``512*indirect0 + x0``; one loaded at each
    point may repeat)."""
    split = along(index, inner[0]) if len(inner) == 1 else None
    return split is not None and all(
        s in hoisted_indirect for s in split[1].free_symbols if s.name.startswith("indirect"))


def whole_rows_apart(index: sympy.Expr, inner: tuple, var_ranges: dict) -> bool:
    """Whether points of different rows at different positions along the row never reach one
    element (``1024*indirect0 + x0`` over rows of 1024: whatever row ``indirect0`` names,
    position ``x0`` of it): every term but the step along the row moves by whole rows."""
    var = inner[0] if len(inner) == 1 else None
    split = along(index, var) if var in var_ranges else None
    if split is None:
        return False
    span = split[0] * var_ranges[var]
    return all(term == 1 or (sympy.sympify(c) / span).is_integer
               for term, c in split[1].as_coefficients_dict().items())


def rows_keep_apart(index: sympy.Expr, row_var: sympy.Symbol, var_ranges: dict,
                    indirect_ranges: dict) -> bool:
    """Whether each row (``row_var``) reaches elements that no other row reaches (``scatter_add``
    along a row: ``64*x1 + indirect0``, ``indirect0`` checked to lie in ``[0, 64)``): the
    other terms' range (from the variables' ranges and the loaded indices' checked
    ``indirect_ranges``) is narrower than the step from one row to the next."""
    split = along(index, row_var) if row_var in var_ranges else None
    if split is None or split[0] < 0:
        return False
    step, rest = split
    low = high = 0
    for term, c in rest.as_coefficients_dict().items():
        if term == 1:
            continue
        size = sympy.sympify(var_ranges.get(term, -1))
        bounds = indirect_ranges.get(term) or (
            (0, int(size) - 1) if size.is_number and size > 0 else None)
        if bounds is None or not sympy.sympify(c).is_number:
            return False
        low += min(c * bounds[0], c * bounds[1])
        high += max(c * bounds[0], c * bounds[1])
    return high - low < step
