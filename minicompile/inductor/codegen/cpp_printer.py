"""SymPy index expressions and scalars as C++ (mirrors ``CppPrinter`` in
torch/_inductor/codegen/cpp_utils.py). ``FloorDiv`` prints as C's ``/`` (exact when the operands
are non-negative, as the IR's are), ``ModularIndexing`` as ``(x / d) % m``, ``Min``/``Max`` as
``std::min``/``std::max``."""

from __future__ import annotations

from typing import Any

import sympy
from sympy.printing.str import StrPrinter

from ..sizevars import FloorDiv, integer_fraction


class CppPrinter(StrPrinter):
    """SymPy index and size expressions as C++ ``int64_t`` arithmetic."""

    printmethod = "_cppcode"  # not ``_sympystr``: FloorDiv would print itself as Python's ``//``

    def _print_Integer(self, expr):
        return str(int(expr))

    def _print_Symbol(self, expr):
        return expr.name

    def _print_Pow(self, expr):
        base, exp = expr.args
        if exp.is_Integer and exp > 0:
            return "(" + " * ".join([self.paren(base)] * int(exp)) + ")"
        raise NotImplementedError(f"cannot print {expr} as C++ integer arithmetic")

    def paren(self, expr) -> str:
        text = self._print(expr)
        return text if expr.is_Atom or isinstance(expr, sympy.Function) else f"({text})"

    def _print_FloorDiv(self, expr):
        base, div = expr.args
        if base.is_nonnegative and div.is_positive:  # C's truncation is floor here
            return f"({self.paren(base)} / {self.paren(div)})"
        return f"mc::floordiv<int64_t>({self._print(base)}, {self._print(div)})"

    def _print_ModularIndexing(self, expr):
        base, div, mod = expr.args
        quotient = self._print(FloorDiv(base, div, evaluate=False)) if div != 1 else self.paren(base)
        if base.is_nonnegative:
            return f"({quotient} % {self.paren(mod)})"
        return f"mc::remainder<int64_t>({quotient}, {self._print(mod)})"

    def _print_Mod(self, expr):
        base, mod = expr.args
        if base.is_nonnegative:
            return f"({self.paren(base)} % {self.paren(mod)})"
        return f"mc::remainder<int64_t>({self._print(base)}, {self._print(mod)})"

    def _print_floor(self, expr):  # floor(s0/3): exact integer division
        if (fraction := integer_fraction(expr.args[0])) is None:  # int(1.7 * s2): in double
            return f"static_cast<int64_t>(std::floor({self._print(expr.args[0])}))"
        num, den = fraction
        return self._print(FloorDiv(num, den, evaluate=False))

    def _print_ceiling(self, expr):
        if (fraction := integer_fraction(expr.args[0])) is None:
            return f"static_cast<int64_t>(std::ceil({self._print(expr.args[0])}))"
        num, den = fraction
        return f"mc::floordiv<int64_t>({self._print(num)} + {self._print(den)} - 1, {self._print(den)})"

    def _print_Float(self, expr):  # a scale factor: every digit of the double
        return repr(float(expr))

    def _minmax(self, fn: str, args) -> str:
        # a float among them (a variance's divisor max(0, n - 1.3)): in double, not truncated
        ctype = "int64_t" if all(a.is_integer for a in args) else "double"
        out = self._print(args[0])
        for a in args[1:]:
            out = f"std::{fn}<{ctype}>({out}, {self._print(a)})"
        return out

    def _print_Min(self, expr):
        return self._minmax("min", expr.args)

    def _print_Max(self, expr):
        return self._minmax("max", expr.args)


def cexpr(expr: Any) -> str:
    return CppPrinter().doprint(sympy.sympify(expr))
