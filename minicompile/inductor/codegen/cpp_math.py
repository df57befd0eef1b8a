"""The C++ spelling of each elementwise op (``C_OPS``, read by ``cpp_ops.CppOpsHandler``, which
the course's exercise 9 swaps rows of), and glibc's vector math functions the kernels call
(torch/_inductor/codegen/cpp_utils.py and cpp.py's ``CppOverrides`` spell Inductor's)."""

from __future__ import annotations

import re


# --- elementwise ops: one C++ expression each -------------------------------------------------

STD_UNARY = ["exp2", "expm1", "log", "log1p", "log2", "sqrt", "sin", "cos", "tan", "tanh",
             "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erfc", "lgamma",
             "signbit"]
MC_UNARY = ["abs", "floor", "ceil", "round", "trunc", "sign", "relu", "sigmoid", "rsqrt",
            "reciprocal", "bitwise_not", "isnan", "isinf", "exp", "erf"]  # a float's: our own
MC_BINARY = ["floordiv", "truncdiv", "fmod", "remainder", "pow", "maximum", "minimum",
             "bitwise_and", "bitwise_or", "bitwise_xor",  # (a bool stays a bool)
             "bitwise_left_shift", "bitwise_right_shift"]  # (amounts past the width: ATen's)
STD_BINARY = ["atan2", "hypot", "copysign"]
# glibc's vector math (cpp_prefix.h), by the glibc version that has each function (2.22, 2.35):
# one implementation at every vector width, so that a value recomputed in another loop or
# kernel is the same to the last bit. A kernel defines the ones it calls (vector_math_lines).
VECTOR_MATH = {**dict.fromkeys(["sin", "cos", "exp", "log", "pow"], 222),
               **dict.fromkeys(["tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "asinh",
                                "acosh", "atanh", "exp2", "expm1", "log2", "log1p", "erf", "erfc",
                                "atan2", "hypot"], 235)}
VECTOR_MATH_BINARY = {"pow", "atan2", "hypot"}
# mc:: helpers calling one (exp and erf: for a double)
VECTOR_MATH_CALLED_BY = {"sigmoid": "exp", "exp": "exp", "erf": "erf"}
LIBRARY_CALL = "mc::vm::"  # a call into glibc's vector math library (``log``, ``sin``, ...)
# a line calling a math function, glibc's or our own (tens of instructions per element)
MATH_CALL = re.compile(r"\b(?:%s\w+|mc::(?:%s))\(" % (
    re.escape(LIBRARY_CALL), "|".join(sorted(VECTOR_MATH_CALLED_BY))))


INFIX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "eq": "==", "ne": "!=", "lt": "<",
         "le": "<=", "gt": ">", "ge": ">=", "logical_and": "&&", "logical_or": "||"}

# ops name -> C++ format string over the operands {0}, {1}
C_OPS: dict[str, str] = {
    **{op: f"{'mc::vm' if op in VECTOR_MATH else 'std'}::{op}({{0}})" for op in STD_UNARY},
    **{op: f"mc::{op}({{0}})" for op in MC_UNARY},
    **{op: f"mc::{op}({{0}}, {{1}})" for op in MC_BINARY},
    **{op: f"{'mc::vm' if op in VECTOR_MATH else 'std'}::{op}({{0}}, {{1}})"
       for op in STD_BINARY},
    **{op: f"{{0}} {sym} {{1}}" for op, sym in INFIX.items()},
    "neg": "-{0}",
    "square": "{0} * {0}",
    "logical_not": "!{0}",
    "logical_xor": "static_cast<bool>({0}) != static_cast<bool>({1})",
    "mod": "mc::remainder({0}, {1})",  # Python's %: the sign of the divisor
}


FLOAT_TYPES = {"float", "double"}
# ops whose result is a bool, whatever their operands' type
BOOL_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
            "logical_xor", "isnan", "isinf", "signbit"}

# C++ computes an operator on a type narrower than int in int (integral promotion): ``a * b`` of
# two int8_t 7 and 40 is 280, ``true + true`` is 2. torch computes in the operands' own dtype and
# wraps around at its width (24; a bool's ``+`` is a logical or). So an op whose result has one
# of these types is cast back to it (``narrowed``), and every value has its dtype's value when it
# is widened, compared, reduced (eager sums int8 in int64, the wrapped values) or stored. Casts
# inside a ``#pragma omp simd`` loop vectorise: a truncation is a pack, or nothing at all.
# C++ type -> its [low, high]
NARROW_TYPES: dict[str, tuple[int, int]] = {
    "bool": (0, 1), "uint8_t": (0, 2 ** 8 - 1),
    "int8_t": (-2 ** 7, 2 ** 7 - 1), "int16_t": (-2 ** 15, 2 ** 15 - 1)}


def narrowed(op: str, spelling: str, ctype: str | None) -> str:
    """``op``'s C++ ``spelling`` (a format string over its operands), cast back to its result's
    C++ type ``ctype`` where C++ would promote it (an mc:: helper of two int8_t returns int8_t
    already, but ``mc::bitwise_and``'s does not: every op is cast alike). A comparison's bool
    needs no cast."""
    if ctype not in NARROW_TYPES or op in BOOL_OPS:
        return spelling
    return f"static_cast<{ctype}>({spelling})"


def fits(bounds: tuple[int, int], ctype: str | None) -> bool:
    """Do values in ``bounds`` fit in ``ctype`` unwrapped (an integer type no narrower than
    int32 is taken to hold them: value ranges are of indices)?"""
    low, high = NARROW_TYPES.get(ctype, bounds)
    return low <= bounds[0] and bounds[1] <= high


def vector_math_lines(source: str, libmvec_level: int) -> list[str]:
    """The ``MC_VM_FUNCTION`` lines defining the vector math functions ``source`` calls."""
    called = {VECTOR_MATH_CALLED_BY.get(f, f) for f in re.findall(r"\bmc::(?:vm::)?(\w+)\(", source)}
    return [f'MC_VM_FUNCTION({2 if f in VECTOR_MATH_BINARY else 1}, '
            f'"{"vv" if f in VECTOR_MATH_BINARY else "v"}", {f})'
            for f in sorted(called) if VECTOR_MATH.get(f, libmvec_level + 1) <= libmvec_level]
