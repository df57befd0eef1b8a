"""Integer functions for size and index expressions (mini version of
torch/utils/_sympy/functions.py), shared by every stage.

Views introduce integer division and modulo into index expressions: ``FloorDiv(a, d)`` is
``a // d`` and ``ModularIndexing(a, d, m)`` is ``(a // d) % m``, both on non-negative integers.
Each simplifies itself on construction where the algebra is exact (rules in trailing comments);
range-aware simplification lives in inductor/sizevars.py.

``sym_to_sympy`` turns an int or a ``torch.SymInt`` (whose expression may use torch's own
``FloorDiv``, ``ModularIndexing``, ...) into a SymPy expression over ours.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch

Expr = sympy.Expr


def _monomial(e: Expr) -> tuple[int, dict[Expr, int]] | None:
    """``6*x**2*y`` -> (6, {x: 2, y: 1}); None unless an integer times positive integer powers."""
    coeff, rest = e.as_coeff_Mul()
    if not coeff.is_Integer:
        return None
    powers: dict[Expr, int] = {}
    for factor in sympy.Mul.make_args(rest):
        if factor == 1:
            continue
        base, exp = factor.as_base_exp()
        if base.is_Add or not (exp.is_Integer and exp > 0):
            return None
        powers[base] = powers.get(base, 0) + int(exp)
    return int(coeff), powers


def exact_quotient(term: Expr, divisor: Expr) -> Expr | None:
    """``term / divisor`` when it is an integer for every value of the symbols, else None:
    ``exact_quotient(6*x*s0, 2*s0)`` is ``3*x``; ``exact_quotient(3*x, 2)`` is None.

    Index terms are monomials (an integer times symbols and ``//``/``%`` factors), whose
    quotient is read off their coefficients and exponents; anything else goes to
    ``sympy.cancel``, a hundred times slower."""
    term, divisor = sympy.sympify(term), sympy.sympify(divisor)
    t, d = _monomial(term), _monomial(divisor)
    if t is None or d is None:
        q = sympy.cancel(term / divisor)
        return q if q.is_integer else None
    (c_t, p_t), (c_d, p_d) = t, d
    if c_d == 0 or c_t % c_d or any(p_t.get(b, 0) < k for b, k in p_d.items()):
        return None
    left = [b**(k - p_d.get(b, 0)) for b, k in p_t.items() if k > p_d.get(b, 0)]
    if not all(b.is_integer for b in left):
        return None
    return sympy.Integer(c_t // c_d) * sympy.Mul(*left)


def _is_multiple(term: Expr, divisor: Expr) -> bool:
    return exact_quotient(term, divisor) is not None


def _paren(printer, e: Expr) -> str:
    text = printer.doprint(e)
    return text if e.is_Atom or isinstance(e, sympy.Function) else f"({text})"


class FloorDiv(sympy.Function):
    """``base // divisor`` on non-negative integers (prints like Python)."""

    nargs = (2,)
    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, base, divisor):
        if divisor == 1:  # x // 1 -> x
            return base
        if base == 0 or divisor == 0:  # 0 // d -> 0; and x // 0 only indexes an empty tensor
            return sympy.Integer(0)  # (a view of a size-0 dim), whose loads never run
        if base.is_Integer and divisor.is_Integer:
            return sympy.Integer(int(base) // int(divisor))
        if isinstance(base, FloorDiv):  # (x // a) // b -> x // (a*b)
            return FloorDiv(base.args[0], base.args[1] * divisor)
        if isinstance(base, ModularIndexing) and _is_multiple(base.args[2], divisor):
            a, d, m = base.args  # ((a // d) % (k*b)) // b -> (a // (d*b)) % k
            return ModularIndexing(a, d * divisor, exact_quotient(m, divisor))
        parts = [(t, exact_quotient(t, divisor)) for t in sympy.Add.make_args(base)]
        whole = [q for _, q in parts if q is not None]
        if whole:  # (a*d + b) // d -> a + b // d
            rest = sympy.Add(*[t for t, q in parts if q is None])
            return sympy.Add(*whole) + FloorDiv(rest, divisor)
        return None

    def _sympystr(self, printer) -> str:
        base, divisor = (_paren(printer, a) for a in self.args)
        return f"({base} // {divisor})"  # parenthesised: Python's // binds like *


class ModularIndexing(sympy.Function):
    """``(base // divisor) % modulus``: the coordinate a flat index has in one dim of a view."""

    nargs = (3,)
    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, base, divisor, modulus):
        if modulus == 1 or base == 0 or divisor == 0 or modulus == 0:  # anything % 1 -> 0
            return sympy.Integer(0)  # (and a 0 divisor or modulus: an empty tensor's index)
        if base.is_Integer and divisor.is_Integer and modulus.is_Integer:
            return sympy.Integer((int(base) // int(divisor)) % int(modulus))
        if isinstance(base, ModularIndexing) and _is_multiple(base.args[2], divisor * modulus):
            a, d, _ = base.args  # ((a // d) % (k*b*m)) // b % m -> (a // (d*b)) % m
            return ModularIndexing(a, d * divisor, modulus)
        if isinstance(base, FloorDiv):  # ((a // d) // b) % m -> (a // (d*b)) % m
            return ModularIndexing(base.args[0], base.args[1] * divisor, modulus)
        terms = sympy.Add.make_args(base)
        period = divisor * modulus
        dropped = [t for t in terms if _is_multiple(t, period)]
        if dropped:  # (a*d*m + b) // d % m -> b // d % m
            return ModularIndexing(sympy.Add(*[t for t in terms if t not in dropped]), divisor,
                                   modulus)
        return None

    def _sympystr(self, printer) -> str:
        base, divisor, modulus = (_paren(printer, a) for a in self.args)
        if divisor == "1":
            return f"({base} % {modulus})"
        return f"({base} // {divisor} % {modulus})"


# torch's own SymPy functions (in size expressions of symbolic traces) -> ours, by name
_TORCH_SYMPY = {
    "FloorDiv": FloorDiv, "CleanDiv": FloorDiv, "ModularIndexing": ModularIndexing,
    "PythonMod": sympy.Mod, "Mod": sympy.Mod, "Max": sympy.Max, "Min": sympy.Min,
}


def sym_to_sympy(x: Any) -> Expr:
    """An int or SymInt as a SymPy expression over the size symbols."""
    if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        expr = x.node.expr
        expr = expr.replace(
            lambda e: isinstance(e, sympy.Function) and type(e).__name__ in _TORCH_SYMPY,
            lambda e: _TORCH_SYMPY[type(e).__name__](*e.args))
        return expr.replace(lambda e: isinstance(e, (sympy.floor, sympy.ceiling)), _integer_division)
    return sympy.sympify(x)


def integer_fraction(x: Expr) -> tuple[Expr, Expr] | None:
    """``x`` as ``(p, q)``, integer expressions with ``x == p / q`` (``s0/2 - 1/2`` ->
    ``(s0 - 1, 2)``), whose floor is the integer division ``p // q``. None where ``x`` is a
    float (``1.7*s2``: a size from a scale factor, eager's ``int(1.7 * s2)``): its floor is a
    float floor, and printed as integer division it would be a float (``1.7*s2 // 1``) or, with
    the ``/ 1`` dropped, no floor at all (a buffer of 1.7*s2 elements)."""
    num, den = sympy.fraction(sympy.together(x))
    return (num, den) if num.is_integer and den.is_integer else None


def _integer_division(e: Expr) -> Expr:
    """``floor(s0/2 - 1/2)`` (a pooling's output size, as torch's meta functions write it) as
    ``(s0 - 1) // 2``, which every printer of kernel code knows; ``ceiling`` likewise. Left as
    it is where the argument is not a fraction of integers with a number below."""
    fraction = integer_fraction(e.args[0])
    if fraction is None or not (fraction[1].is_Integer and fraction[1] > 0):
        return e
    num, den = fraction
    return FloorDiv(num if isinstance(e, sympy.floor) else num + den - 1, den)
