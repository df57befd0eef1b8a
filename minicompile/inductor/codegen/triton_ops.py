"""How each ``ops`` call reads in Triton (mirrors ``TritonOverrides`` and ``TritonPrinter`` in
torch/_inductor/codegen/triton.py).

- ``TritonPrinter``: SymPy index expressions as Triton integer arithmetic. Triton's ``//`` and
  ``%`` truncate, as C's do; they agree with Python's floor semantics (which the IR's
  ``FloorDiv`` and ``ModularIndexing`` have) when the dividend is non-negative, as an index
  usually is: ``FloorDiv(a, b)`` prints ``(a // b)``, ``ModularIndexing(a, b, m)``
  ``((a // b) % m)``. A dividend SymPy cannot prove non-negative (``FloorDiv(-r0, 3)``, from a
  flipped and shifted view) goes through ``triton_helpers.index_floordiv`` / ``index_remainder``.
  ``Min``/``Max`` print ``tl.minimum``/``tl.maximum``.
- ``TRITON_OPS``: op name -> expression template, one row per op of the vocabulary
  (``virtualized.UNARY_OPS``/``BINARY_OPS``). Ops Triton lacks go through ``triton_helpers``
  (NaN-propagating ``maximum``, Python's ``floordiv``) or ``libdevice`` (``tanh``, ``expm1``).
- ``result_dtype``: the dtype of an op's result, which the kernel writer tracks per temporary
  (it decides a reduction's neutral element and where a cast is needed).
"""

from __future__ import annotations

import math

import sympy
import torch
from sympy.printing.str import StrPrinter

from ..sizevars import FloorDiv, integer_fraction

# torch dtype -> Triton dtype, as written in kernel source
TRITON_DTYPES = {
    torch.float32: "tl.float32", torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16",
    torch.float64: "tl.float64", torch.int64: "tl.int64", torch.int32: "tl.int32",
    torch.int16: "tl.int16", torch.int8: "tl.int8", torch.uint8: "tl.uint8",
    torch.uint32: "tl.uint32", torch.uint64: "tl.uint64", torch.bool: "tl.int1",
}

# half-precision values are computed in float32: upcast after a load, downcast at a store
COMPUTE_DTYPES = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return COMPUTE_DTYPES.get(dtype, dtype)


def triton_dtype(dtype: torch.dtype) -> str:
    return TRITON_DTYPES[dtype]


# float dtype -> (the integer type of its width, the integer whose bits are the sign bit alone)
SIGN_BIT = {torch.float32: ("tl.int32", -2 ** 31), torch.float64: ("tl.int64", -2 ** 63)}


def is_negative_zero(value) -> bool:
    return isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) < 0


def triton_constant(value, dtype: torch.dtype | None = None) -> str:
    """A Python scalar as a Triton literal (``float("inf")`` has no literal of its own). For a
    value of ``dtype`` bool it is ``True``/``False``: an integer literal beside an int1 (as in
    ``tl.where(mask, b, 0)``) makes the result an int32, and ``~`` of an int32 1 is -2: true."""
    if isinstance(value, bool) or dtype == torch.bool:
        return repr(bool(value))
    if isinstance(value, float) and dtype is not None and not dtype.is_floating_point \
            and not dtype.is_complex and value == value and abs(value) != float("inf"):
        # an int tensor's value (F.pad(labels, value=-100) passes -100.0): an int literal, or
        # the float would turn the tensor float (an index of float type is no index)
        return repr(int(value))
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f'float("{value}")'
    return repr(value)


class TritonPrinter(StrPrinter):
    """Index expressions as Triton source; symbols print as their names (``xindex``, ``s0``).
    SymPy dispatches ``_print_<ClassName>``, so ``sizevars.FloorDiv`` lands in
    ``_print_FloorDiv`` (``printmethod`` is not ``_sympystr``: FloorDiv would print itself as
    Python's ``//`` whatever the sign of its dividend)."""

    printmethod = "_tritoncode"

    def paren(self, expr) -> str:
        text = self._print(expr)
        return text if expr.is_Atom or isinstance(expr, sympy.Function) else f"({text})"

    def _print_FloorDiv(self, expr):
        base, divisor = expr.args
        if base.is_nonnegative and divisor.is_positive:  # truncation is floor here
            return f"({self.paren(base)} // {self.paren(divisor)})"
        return f"triton_helpers.index_floordiv({self._print(base)}, {self._print(divisor)})"

    def _print_ModularIndexing(self, expr):
        base, divisor, modulus = expr.args
        if not (base.is_nonnegative and divisor.is_positive and modulus.is_positive):
            quotient = base if divisor == 1 else FloorDiv(base, divisor, evaluate=False)
            return (f"triton_helpers.index_remainder({self._print(quotient)}, "
                    f"{self._print(modulus)})")
        if divisor == 1:
            return f"({self.paren(base)} % {self.paren(modulus)})"
        return f"({self.paren(base)} // {self.paren(divisor)} % {self.paren(modulus)})"

    def _print_Mod(self, expr):
        base, modulus = expr.args
        if base.is_nonnegative and modulus.is_positive:
            return f"(({self._print(base)}) % ({self._print(modulus)}))"
        return f"triton_helpers.index_remainder({self._print(base)}, {self._print(modulus)})"

    def _print_floor(self, expr):  # floor(s2/s4), a cropped size: exact integer division
        if (fraction := integer_fraction(expr.args[0])) is None:  # int(1.7 * s2)
            return f"libdevice.floor({self._print(expr.args[0])}).to(tl.int64)"
        num, den = fraction
        return self._print(FloorDiv(num, den, evaluate=False))

    def _print_ceiling(self, expr):  # ceiling(s0/4) = -((-s0) // 4)
        if (fraction := integer_fraction(expr.args[0])) is None:
            return f"libdevice.ceil({self._print(expr.args[0])}).to(tl.int64)"
        num, den = fraction
        return f"(-{self.paren(FloorDiv(-num, den, evaluate=False))})"

    def _print_Float(self, expr):  # a scale factor, in double as eager computes it (a Python
        return f"tl.full([], {float(expr)!r}, tl.float64)"  # float would make int * it fp32

    def _print_Min(self, expr):
        return self._nest("tl.minimum", expr.args)

    def _print_Max(self, expr):
        return self._nest("tl.maximum", expr.args)

    def _nest(self, fn: str, args) -> str:
        text = self._print(args[0])
        for a in args[1:]:
            text = f"{fn}({text}, {self._print(a)})"
        return text

    def _print_Pow(self, expr):  # x**2 -> (x * x): integer powers only occur in indices
        base, exp = expr.args  # ((s1 - 1) * (s1 - 1)): a sum as the base is parenthesised
        if exp.is_Integer and int(exp) > 0:
            return "(" + " * ".join([self.paren(base)] * int(exp)) + ")"
        raise NotImplementedError(f"index power {expr}")


def texpr(expr) -> str:
    return TritonPrinter().doprint(sympy.sympify(expr))


# op name -> Triton expression of its operands {0}, {1}
TRITON_OPS = {
    # arithmetic
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "truediv": "{0} / {1}",
    "floordiv": "triton_helpers.floordiv({0}, {1})",
    "truncdiv": "triton_helpers.truncdiv({0}, {1})",
    "mod": "triton_helpers.remainder({0}, {1})",
    "remainder": "triton_helpers.remainder({0}, {1})",
    "fmod": "triton_helpers.fmod({0}, {1})", "pow": "triton_helpers.pow({0}, {1})",
    "neg": "-{0}", "abs": "tl.abs({0})", "reciprocal": "1 / {0}", "square": "{0} * {0}",
    "sign": "triton_helpers.sign({0})",
    "maximum": "triton_helpers.maximum({0}, {1})",  # NaN wins, as in torch
    "minimum": "triton_helpers.minimum({0}, {1})",
    "relu": "tl.where({0} < 0, 0, {0})",  # relu(nan) is nan
    # transcendental: tl where Triton has it, libdevice otherwise
    "exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "log": "tl.log({0})", "log2": "tl.log2({0})",
    "sqrt": "tl.sqrt({0})", "rsqrt": "tl.rsqrt({0})", "sin": "tl.sin({0})",
    "cos": "tl.cos({0})", "erf": "tl.erf({0})", "sigmoid": "tl.sigmoid({0})",
    "floor": "tl.floor({0})", "ceil": "tl.ceil({0})",
    "expm1": "libdevice.expm1({0})", "log1p": "libdevice.log1p({0})",
    "tan": "libdevice.tan({0})", "tanh": "libdevice.tanh({0})", "sinh": "libdevice.sinh({0})",
    "cosh": "libdevice.cosh({0})", "asin": "libdevice.asin({0})",
    "acos": "libdevice.acos({0})", "atan": "libdevice.atan({0})",
    "asinh": "libdevice.asinh({0})", "acosh": "libdevice.acosh({0})",
    "atanh": "libdevice.atanh({0})", "erfc": "libdevice.erfc({0})",
    "lgamma": "libdevice.lgamma({0})", "round": "libdevice.nearbyint({0})",  # half to even
    "trunc": "libdevice.trunc({0})", "atan2": "libdevice.atan2({0}, {1})",
    "hypot": "libdevice.hypot({0}, {1})", "copysign": "libdevice.copysign({0}, {1})",
    # tests
    "isnan": "{0} != {0}", "isinf": "tl.abs({0}) == float(\"inf\")",
    "signbit": "libdevice.signbit({0}) != 0",
    "eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}",
    "gt": "{0} > {1}", "ge": "{0} >= {1}",
    # logic and bits
    "logical_not": "{0} == 0", "logical_and": "({0} != 0) & ({1} != 0)",
    "logical_or": "({0} != 0) | ({1} != 0)", "logical_xor": "({0} != 0) ^ ({1} != 0)",
    "bitwise_not": "~{0}", "bitwise_and": "{0} & {1}", "bitwise_or": "{0} | {1}",
    "bitwise_xor": "{0} ^ {1}", "bitwise_left_shift": "{0} << {1}",
    "bitwise_right_shift": "{0} >> {1}",
}


def shift_template(name: str, dtype: torch.dtype) -> str:
    """ATen's shifts of ``dtype`` (PTX and the interpreter leave an amount outside [0, bits) to
    the hardware): such a left shift is 0, such a right shift the sign (0 for an unsigned type).
    The amount is clamped inside the range before it is used."""
    bits = torch.iinfo(dtype).bits
    ok = f"(({{1}} >= 0) & ({{1}} < {bits}))"
    if name == "bitwise_right_shift" and dtype.is_signed:
        return f"{{0}} >> tl.where({ok}, {{1}}, {bits - 1})"
    shift = "<<" if name == "bitwise_left_shift" else ">>"
    return f"tl.where({ok}, {{0}} {shift} tl.where({ok}, {{1}}, 0), 0)"


BOOL_RESULT = {"isnan", "isinf", "signbit", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
               "logical_and", "logical_or", "logical_xor"}
FLOAT_RESULT = {"truediv", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf",
                "sigmoid", "expm1", "log1p", "tan", "tanh", "sinh", "cosh", "asin", "acos",
                "atan", "asinh", "acosh", "atanh", "erfc", "lgamma", "atan2", "hypot",
                "reciprocal"}


def result_dtype(op: str, dtypes: list[torch.dtype]) -> torch.dtype:
    """The dtype of ``op`` applied to operands of ``dtypes`` (torch's promotion rules)."""
    if op in BOOL_RESULT:
        return torch.bool
    promoted = dtypes[0]
    for d in dtypes[1:]:
        promoted = torch.promote_types(promoted, d)
    if op in FLOAT_RESULT and not promoted.is_floating_point:
        return torch.float32
    return promoted


def paren(expr: str) -> str:
    """``expr`` as an operand: parenthesised unless it is a name."""
    return expr if expr.isidentifier() else f"({expr})"
