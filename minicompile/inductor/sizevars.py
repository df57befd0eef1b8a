"""Index arithmetic on SymPy (mini version of torch/_inductor/sizevars.py and the index functions
of torch/utils/_sympy/functions.py).

Every size, stride and memory index in the loop IR is a SymPy expression over

- loop variables ``i0, i1, ...`` (pointwise dims) and ``r0, r1, ...`` (reduction dims), each with
  a known range ``0 <= i < size``;
- size symbols (``s0``, ``s1``, ... from symbolic tracing), positive integers.

Views introduce integer division and modulo (``FloorDiv``, ``ModularIndexing``: defined in the
shared layer, minicompile/shapes/functions.py, and re-exported here); the rules here
simplify them away again whenever the loop ranges prove it safe. ``simplify_loops`` merges
contiguous dims and drops size-1 dims, so a contiguous 3-d add prints as a single loop.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import functools
import math

import sympy

from ..shapes.functions import FloorDiv, ModularIndexing, integer_fraction  # noqa: F401

Expr = sympy.Expr


def index_var(prefix: str, n: int) -> sympy.Symbol:
    """A loop variable: ``i3`` (pointwise) or ``r0`` (reduction); always a non-negative int."""
    return sympy.Symbol(f"{prefix}{n}", integer=True, nonnegative=True)


def size_var(name: str) -> sympy.Symbol:
    """A symbolic size (``s0``): a positive integer."""
    return sympy.Symbol(name, integer=True, positive=True)


def sympify(x) -> Expr:
    return x if isinstance(x, sympy.Basic) else sympy.Integer(x)


def same(a, b) -> bool:
    """Are two sizes or indices (expressions, or ints) equal for every value of their symbols?"""
    return sympy.expand(sympy.sympify(a) - sympy.sympify(b)) == 0


def as_ints(values) -> list[int] | None:
    """``values`` (sizes, strides) as Python ints where each is a number, else None."""
    values = list(values)
    if all(isinstance(v, (int, sympy.Integer)) for v in values):
        return [int(v) for v in values]
    return None


# --------------------------------------------------------------------------------------------
# Range-aware simplification: the loop ranges bound every variable, which decides // and %.
# --------------------------------------------------------------------------------------------


def upper_bound(expr: Expr, var_ranges: dict[sympy.Symbol, Expr]) -> Expr | None:
    """Largest value of ``expr`` over the loop ranges, if ``expr`` is monotone increasing in each
    loop variable (a sum of terms with non-negative coefficients, no ``//`` or ``%``); else None.

    Remembered per (expression, ranges), as ``simplify_index`` is: simplifying one index asks
    this of the same sub-expressions many times (each ``//`` and ``%`` in it, on each pass), and
    the indices of one kernel share their sub-expressions."""
    return _upper_bound(sympify(expr), tuple(var_ranges.items()))


@functools.lru_cache(maxsize=1 << 16)
def _upper_bound(expr: Expr, ranges: tuple[tuple[sympy.Symbol, Expr], ...]) -> Expr | None:
    expr = sympy.expand(expr)
    if expr.has(FloorDiv, ModularIndexing):  # not monotone in general: (x % 4) falls at x = 4
        return None
    subs = {}
    for v, size in ranges:
        if v in expr.free_symbols:
            if not expr.diff(v).is_nonnegative:
                return None
            subs[v] = size - 1
    return sympy.expand(expr.subs(subs))


def value_range(expr: Expr, var_ranges: dict[sympy.Symbol, Expr]) -> tuple[int, int] | None:
    """``(low, high)`` of an index expression over the loop ranges, when both are plain numbers
    (``xindex % 5``: ``(0, 4)``; ``x0 + 3`` over 8 points: ``(3, 10)``); else None."""
    expr = sympy.sympify(expr)
    if isinstance(expr, ModularIndexing) and expr.args[2].is_number:
        return 0, int(expr.args[2]) - 1
    if isinstance(expr, FloorDiv) and expr.args[1].is_number and expr.args[1] > 0:
        base = value_range(expr.args[0], var_ranges)
        return None if base is None else (base[0] // int(expr.args[1]),
                                          base[1] // int(expr.args[1]))
    high = upper_bound(expr, var_ranges)
    low = expr.subs({v: 0 for v in var_ranges}) if high is not None else None
    if high is None or not (high.is_number and low.is_number):
        return interval(expr, var_ranges)  # (through // and %: 2*((xindex / 8) % 8) is 0..14)
    return int(low), int(high)


def interval(expr: Expr, var_ranges: dict[sympy.Symbol, Expr]) -> tuple[int, int] | None:
    """``(low, high)`` of an index expression by interval arithmetic, through ``//`` and ``%``
    (which ``upper_bound`` gives up on): ``(x % 768) + 768*((x // 768) % 2)`` over any x is
    within ``(0, 1535)``, so dividing it by 1536 gives 0. Numeric loop ranges only; else None."""
    if expr.is_Integer:
        return int(expr), int(expr)
    if expr.is_Symbol:
        size = var_ranges.get(expr)
        return (0, int(size) - 1) if size is not None and size.is_Integer else None
    if expr.is_Add or expr.is_Mul:
        parts = [interval(a, var_ranges) for a in expr.args]
        if any(p is None for p in parts):
            return None
        low, high = parts[0]
        for lo, hi in parts[1:]:
            if expr.is_Add:
                low, high = low + lo, high + hi
            else:
                corners = (low * lo, low * hi, high * lo, high * hi)
                low, high = min(corners), max(corners)
        return low, high
    if isinstance(expr, FloorDiv | ModularIndexing) and all(a.is_Integer and a > 0
                                                           for a in expr.args[1:]):
        base = interval(expr.args[0], var_ranges)
        d = int(expr.args[1])
        if base is None or base[0] < 0:
            return None if isinstance(expr, FloorDiv) else (0, int(expr.args[2]) - 1)
        low, high = base[0] // d, base[1] // d
        if isinstance(expr, ModularIndexing) and high >= int(expr.args[2]):
            return 0, int(expr.args[2]) - 1
        return low, high
    return None


def below(expr: Expr, bound: Expr, var_ranges: dict[sympy.Symbol, Expr]) -> bool:
    """``0 <= expr < bound`` over the loop ranges, by ``upper_bound`` or else ``interval``.
    (Both ends: ``(i0 - 4) // 32`` is -1 at i0 = 0, a masked read's index before its mask.)
    Remembered, as ``upper_bound`` is."""
    return _below(sympify(expr), sympify(bound), tuple(var_ranges.items()))


@functools.lru_cache(maxsize=1 << 16)
def _below(expr: Expr, bound: Expr, ranges: tuple[tuple[sympy.Symbol, Expr], ...]) -> bool:
    var_ranges = dict(ranges)
    hi = upper_bound(expr, var_ranges)
    if hi is not None:  # monotone increasing: the least value is at the loops' start
        least = sympy.expand(expr.xreplace({v: sympy.Integer(0) for v in var_ranges}))
        return statically_less(hi, bound) and bool(least.is_nonnegative)
    span = interval(expr, var_ranges)
    return span is not None and bound.is_Integer and 0 <= span[0] and span[1] < int(bound)


def statically_less(a: Expr, b: Expr) -> bool:
    """True when ``a < b`` holds for every positive value of the size symbols."""
    diff = sympy.expand(b - a)
    return bool(diff.is_positive) or bool((diff - 1).is_nonnegative)


def _simplify_floordiv(base, divisor, var_ranges):
    if below(base, divisor, var_ranges):  # 0 <= base < d -> base // d = 0
        return sympy.Integer(0)
    return _without_small_terms(base, divisor, var_ranges) or FloorDiv(base, divisor)


def _without_small_terms(base, divisor, var_ranges):
    """``(g*q + r) // (g*m)`` is ``q // m`` when ``0 <= r < g``: the terms too small to carry
    into the quotient drop out. ``(rindex + 128*xindex) // 8192`` over rows of 128 is
    ``xindex // 64`` (a (2, 64, 128) tensor's batch, no longer a division of ``rindex``)."""
    for g, big, small in _carry_splits(base, divisor):
        hi = upper_bound(small, var_ranges)
        lo = small.subs({v: 0 for v in var_ranges})  # monotone (upper_bound checked): its least
        if hi is not None and statically_less(hi, g) and lo.is_nonnegative:
            return FloorDiv(sympy.expand(big / g), divisor // g)
    return None


def _carry_splits(base, divisor):
    """``(g, big, small)`` for each ``g > 1`` dividing ``divisor`` and a coefficient of
    ``base``, largest first: ``base = big + small`` with ``big`` the terms that are multiples
    of ``g``. Where ``0 <= small < g``, ``small`` never carries into a multiple of ``g``."""
    if not isinstance(divisor, sympy.Integer) or divisor <= 1:
        return
    terms = sympy.Add.make_args(base)
    coeffs = [t.as_coeff_Mul()[0] for t in terms]
    for g in sorted({math.gcd(int(c), int(divisor)) for c in coeffs if c.is_Integer}, reverse=True):
        if g == 1:
            return
        whole = [c.is_Integer and int(c) % g == 0 for c in coeffs]
        yield (g, sympy.Add(*[t for t, w in zip(terms, whole) if w]),
               sympy.Add(*[t for t, w in zip(terms, whole) if not w]))


def _simplify_modular(base, divisor, modulus, var_ranges):
    if below(base, divisor * modulus, var_ranges):  # base < d*m: no wrap-around
        return _simplify_floordiv(base, divisor, var_ranges)
    if divisor != 1:  # (a // d) % m, where a // d has no division left: (x0 + 1024*x1) // 1024 % 8
        quotient = simplify_index(FloorDiv(base, divisor), var_ranges)  # is x1 % 8
        if not quotient.has(FloorDiv, ModularIndexing):
            return ModularIndexing(quotient, 1, modulus)
        if isinstance(quotient, FloorDiv) and not quotient.args[0].has(FloorDiv, ModularIndexing) \
                and quotient.args[0] != base:  # small terms dropped: (x0 + 16*x1) // 80 % 3 is
            return ModularIndexing(*quotient.args, modulus)  # x1 // 5 % 3 for x0 < 16
    if divisor == 1:
        return _mod_without_small_terms(base, modulus, var_ranges) \
            or ModularIndexing(base, divisor, modulus)
    return ModularIndexing(base, divisor, modulus)


def _mod_without_small_terms(base, modulus, var_ranges):
    """``(r + g*q) % (g*k)`` is ``r + g*(q % k)`` when ``0 <= r < g``: the terms too small to
    carry leave the remainder (``_without_small_terms`` for ``%``). ``(x0 + 64*x1) % 128`` over
    rows of 64 is ``x0 + 64*(x1 % 2)``: no remainder of the inner loop's variable."""
    for g, big, small in _carry_splits(base, modulus):
        if below(small, sympy.Integer(g), var_ranges):
            return small + g * ModularIndexing(sympy.expand(big / g), 1, modulus // g)
    return None


def along(index: Expr, var: sympy.Symbol) -> tuple[Expr, Expr] | None:
    """``(step, rest)`` with ``index = step*var + rest``: ``step`` a nonzero number and ``rest``
    free of ``var`` (the index moves by ``step`` from one point of ``var``'s loop to the next);
    None where ``var`` is missing, under a division or a remainder, or multiplied by a size."""
    step = sympy.expand(index).coeff(var)
    rest = sympy.expand(index - step * var)
    if not step.is_number or step == 0 or var in rest.free_symbols:
        return None
    return step, rest


def _is_size(expr: Expr) -> bool:
    """Whether ``expr`` depends on size symbols only (positive integers: ``s1 // 2``), not on
    a loop variable or an indirect index."""
    return all(symbol.is_positive for symbol in expr.free_symbols)


def _digit(term: Expr):
    """``c * FloorDiv(a, d)`` -> (c, FloorDiv(a, d)); ``c * ModularIndexing(a, d, m)`` likewise;
    None for a term with no such factor over loop variables, or with two. A division of sizes
    alone (``(s1 - 3) // 2``, a convolution's output length) is part of the coefficient."""
    digits = [f for f in sympy.Mul.make_args(term)
              if isinstance(f, FloorDiv | ModularIndexing) and not _is_size(f)]
    if len(digits) != 1:
        return None
    return sympy.Mul(*[g for g in sympy.Mul.make_args(term) if g is not digits[0]]), digits[0]


def _collect_digits(expr: Expr) -> tuple[list[Expr], dict[Expr, Expr]]:
    """``expr``'s terms without a digit, and each digit with the sum of its coefficients: a
    symbolic size ``L = F + 1`` arrives expanded (``32*F*(a // (32*L)) + 32*(a // (32*L))``),
    and only the summed coefficient, ``32*F + 32``, is ``32*L``."""
    rest, digits = [], {}
    for term in sympy.Add.make_args(expr):
        parsed = _digit(term)
        if parsed is None:
            rest.append(term)
        else:
            digits[parsed[1]] = digits.get(parsed[1], sympy.Integer(0)) + parsed[0]
    return rest, digits


def _merged(c2: Expr, f2: Expr, c1: Expr, f1: Expr) -> Expr | None:
    """``c2*f2 + c1*f1`` as one digit, where ``f1 = (a // d) % m`` is the digit below ``f2``."""
    if not isinstance(f1, ModularIndexing) or f1.args[0] != f2.args[0]:
        return None
    a, d1, m1 = f1.args
    if sympy.expand(f2.args[1] - d1 * m1) != 0 or sympy.expand(c2 - c1 * m1) != 0:
        return None
    if isinstance(f2, FloorDiv):
        return c1 * FloorDiv(a, d1)
    return c1 * ModularIndexing(a, d1, m1 * f2.args[2])


def merge_digits(expr: Expr) -> Expr:
    """Join the "digits" a reshape splits an index into, back into one:

        m*c*(a // (d*m)) + c*((a // d) % m)  ->  c*(a // d)
        m*c*((a // (d*m)) % n) + c*((a // d) % m)  ->  c*((a // d) % (m*n))

    so ``6*(i0 // 6) + (i0 % 6)`` (a flattened then unflattened index) becomes ``i0``. With
    symbolic sizes the coefficients are compared after summing each digit's terms; an index
    that a chain of views leaves unmerged would be substituted into the next view whole,
    once per use of its variable, and grow exponentially with the chain's length."""
    changed = True
    while changed:
        changed = False
        rest, digits = _collect_digits(expr)
        for f2, c2 in digits.items():
            for f1, c1 in digits.items():
                merged = None if f1 == f2 else _merged(c2, f2, c1, f1)
                if merged is None:
                    continue
                others = [c * f for f, c in digits.items() if f not in (f1, f2)]
                expr = sympy.Add(*rest, *others) + merged
                changed = True
                break
            if changed:
                break
    return expr


def simplify_index(expr: Expr, var_ranges: dict[sympy.Symbol, Expr] | None = None) -> Expr:
    """Expand, then remove every ``//`` and ``%`` that the loop ranges make redundant.

    >>> i0, i1 = index_var("i", 0), index_var("i", 1)
    >>> simplify_index(FloorDiv(4*i0 + i1, 4), {i0: 3, i1: 4})
    i0

    Remembered per (expression, ranges): one body is read for its dependencies, its loop
    order, its bytes and its code, and a body with producers substituted into it is read again
    after each substitution, each time asking the same questions.
    """
    return _simplify_index(sympify(expr), tuple((var_ranges or {}).items()))


@functools.lru_cache(maxsize=1 << 16)
def _simplify_index(expr: Expr, ranges: tuple[tuple[sympy.Symbol, Expr], ...]) -> Expr:
    expr = merge_digits(sympy.expand(expr))
    if not ranges:
        return expr
    var_ranges = {k: sympify(v) for k, v in ranges}
    expr = expr.subs({v: 0 for v, size in var_ranges.items() if size == 1})  # range(1): v = 0
    for _ in range(4):  # rewriting inner terms can unlock outer ones; a few passes suffice
        new = expr.replace(
            lambda e: isinstance(e, ModularIndexing),
            lambda e: _simplify_modular(*[sympy.expand(a) for a in e.args], var_ranges))
        new = new.replace(
            lambda e: isinstance(e, FloorDiv),
            lambda e: _simplify_floordiv(*[sympy.expand(a) for a in e.args], var_ranges))
        new = merge_digits(sympy.expand(new))
        if new == expr:
            break
        expr = new
    return expr


# --------------------------------------------------------------------------------------------
# Loop simplification: drop size-1 dims, merge dims that every access walks contiguously.
# --------------------------------------------------------------------------------------------


def simplify_loops(
    index_vars: Sequence[sympy.Symbol],
    sizes: Sequence[Expr],
    index_exprs: Iterable[Expr],
) -> tuple[list[Expr], Callable[[Sequence[Expr]], list[Expr]]]:
    """Fewest loops that visit the same memory in the same order (Inductor's ``_simplify_loops``).

    Dims ``k`` and ``k+1`` merge when, in every index expression, the coefficient of ``i_k`` is
    ``size_{k+1}`` times the coefficient of ``i_{k+1}`` (so ``i_k, i_{k+1}`` only ever appear as
    ``size_{k+1}*i_k + i_{k+1}``). Returns the new sizes and ``reindex(new_vars) -> old_vars``.
    """
    sizes = [sympify(s) for s in sizes]
    exprs = [sympy.expand(e) for e in index_exprs]
    # groups[j] = the old dims merged into new dim j, outermost first
    groups: list[list[int]] = [[k] for k in range(len(sizes)) if sizes[k] != 1]

    def linear_coeff(e, v):
        c = e.coeff(v)
        rest = sympy.expand(e - c * v)
        ok = v not in rest.free_symbols and v not in c.free_symbols
        return c, ok

    j = len(groups) - 2
    while j >= 0:
        outer, inner = groups[j][-1], groups[j + 1][-1]
        inner_size = sympy.Mul(*[sizes[k] for k in groups[j + 1]])
        mergeable = True
        for e in exprs:
            co, ok_o = linear_coeff(e, index_vars[outer])
            ci, ok_i = linear_coeff(e, index_vars[inner])
            if not (ok_o and ok_i) or sympy.expand(co - ci * inner_size) != 0:
                mergeable = False
                break
        if mergeable:
            groups[j] = groups[j] + groups.pop(j + 1)
        j -= 1
    new_sizes = [sympy.Mul(*[sizes[k] for k in g]) for g in groups]

    def reindex(new_index: Sequence[Expr]) -> list[Expr]:
        old: list[Expr] = [sympy.Integer(0)] * len(sizes)
        for g, v in zip(groups, new_index):
            divisor = sympy.Integer(1)
            for k in reversed(g):  # innermost old dim varies fastest
                old[k] = ModularIndexing(v, divisor, sizes[k]) if k != g[0] else FloorDiv(v, divisor)
                divisor = divisor * sizes[k]
        return old

    return new_sizes, reindex
