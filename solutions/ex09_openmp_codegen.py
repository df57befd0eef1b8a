"""Exercises for notebook 09: C++/OpenMP code generation.

Grade with ``bash course.sh grade -k 09``. Each function is a piece of minicompile's C++
backend (``minicompile/inductor/codegen/cpp_ops.py``); the checks plug your piece into the real
backend, compile the generated C++ with g++, run it on tensors with NaNs, negative numbers and
odd sizes, and compare with eager PyTorch.
"""

from __future__ import annotations

import sympy

from minicompile.inductor.sizevars import FloorDiv, ModularIndexing


def nan_aware_ops() -> dict[str, str]:
    """Exercise 9.1: the C++ template of four ops whose torch meaning C++ does not give you.

    Return ``{op name: C++ expression}`` for ``"maximum"``, ``"minimum"`` (two operands, ``{0}``
    and ``{1}``), ``"relu"`` and ``"sigmoid"`` (one operand, ``{0}``). The template is filled
    with the names of C++ variables (``auto tmp3 = <your expression>;``) whose type is the
    tensor's: ``float``, ``double`` or ``int64_t``. Torch's rules:

    - ``torch.maximum``/``minimum`` return NaN where either operand is NaN;
    - ``relu(NaN)`` is NaN, ``relu(-0.0)`` may be either zero;
    - ``sigmoid(x) = 1 / (1 + exp(-x))``, also for very negative ``x``.

    Use only operators and ``std::`` functions (no helpers of minicompile's ``cpp_prefix.h``).
    """
    ### BEGIN SOLUTION 9.1: four C++ expressions, NaN-propagating like torch
    return {
        # x != x is true only for NaN (and always false for integers)
        "maximum": "(({0} != {0}) || ({0} > {1}) ? {0} : {1})",
        "minimum": "(({0} != {0}) || ({0} < {1}) ? {0} : {1})",
        "relu": "({0} < 0 ? static_cast<decltype({0})>(0) : {0})",
        "sigmoid": "(1 / (1 + std::exp(-{0})))",
    }
    ### END SOLUTION


def print_index(expr: sympy.Expr) -> str:
    """Exercise 9.2: a SymPy index expression as C++ ``int64_t`` arithmetic.

    The kernels index memory with expressions built from loop variables and sizes (symbols such
    as ``xindex``, ``r0``, ``s0``), integers, ``+``, ``*``, positive integer powers, and two
    index functions: ``FloorDiv(a, b)`` (floor of a / b) and ``ModularIndexing(a, b, m)``
    (``(a // b) % m``). Every argument is non-negative where a kernel evaluates it, so C's ``/``
    and ``%`` give the floor division and the remainder. Examples::

        print_index(3*x + y)                       ->  "3*x + y"   (any correct C++ will do)
        print_index(FloorDiv(x, 4))                ->  "(x / 4)"
        print_index(ModularIndexing(x + 1, 3, 5))  ->  "(((x + 1) / 3) % 5)"

    The result is pasted into larger expressions (``in_ptr0[<yours>]``, ``<yours> * 8``):
    parenthesise what needs it. ``sympy.Add``/``sympy.Mul`` keep their terms in ``expr.args``;
    test ``isinstance(expr, FloorDiv)`` before the general cases.
    """
    ### BEGIN SOLUTION 9.2: recursive printer: atoms, Add, Mul, Pow, FloorDiv, ModularIndexing
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Symbol:
        return expr.name
    args = [print_index(a) for a in expr.args]
    if isinstance(expr, FloorDiv):
        return f"(({args[0]}) / ({args[1]}))"
    if isinstance(expr, ModularIndexing):
        return f"((({args[0]}) / ({args[1]})) % ({args[2]}))"
    if isinstance(expr, sympy.Add):
        return "(" + " + ".join(args) + ")"
    if isinstance(expr, sympy.Mul):
        return "(" + " * ".join(f"({a})" for a in args) + ")"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return "(" + " * ".join([f"({args[0]})"] * int(expr.exp)) + ")"
    raise NotImplementedError(f"cannot print {expr!r} as a C++ index")
    ### END SOLUTION


def reduction_rows() -> dict[str, tuple[str, str, str]]:
    """Exercise 9.3: how the C++ kernels write ``sum``, ``prod``, ``max``, ``min`` and ``any``.

    A reduction over a row becomes an accumulator declared before the loop, updated in it, and,
    when the row is long, split over the OpenMP threads::

        float acc0 = <init>;
        #pragma omp parallel for reduction(<omp>: acc0)
        for (int64_t rindex = 0; rindex < rnumel; rindex++) {
            auto tmp0 = in_ptr0[rindex];
            acc0 = <update>;
        }

    Return ``{reduction type: (init, update, omp)}``. In ``init``, ``{t}`` is the accumulator's
    C++ type (``float``, ``double``, ``int64_t``, ``bool``); in ``update``, ``{acc}`` is the
    accumulator and ``{value}`` the new element. ``omp`` names how OpenMP combines the threads'
    partial accumulators: one of C++'s ``+ * || &&``, or ``mc_max`` / ``mc_min``, two reductions
    minicompile declares with ``#pragma omp declare reduction`` (NaN-propagating maximum and
    minimum). Torch's max and min of a row with a NaN are NaN; of an all-negative row, negative.
    ``std::numeric_limits<{t}>`` has ``lowest()``, ``max()`` and ``infinity()``;
    ``std::numeric_limits<{t}>::has_infinity`` says whether ``{t}`` has one.
    """
    ### BEGIN SOLUTION 9.3: (init, update, omp) for sum, prod, max, min, any
    lowest = ("(std::numeric_limits<{t}>::has_infinity ? -std::numeric_limits<{t}>::infinity()"
              " : std::numeric_limits<{t}>::lowest())")
    highest = ("(std::numeric_limits<{t}>::has_infinity ? std::numeric_limits<{t}>::infinity()"
               " : std::numeric_limits<{t}>::max())")
    return {
        "sum": ("0", "{acc} + {value}", "+"),
        "prod": ("1", "{acc} * {value}", "*"),
        "max": (lowest, "(({acc} != {acc}) || ({acc} > {value}) ? {acc} : {value})", "mc_max"),
        "min": (highest, "(({acc} != {acc}) || ({acc} < {value}) ? {acc} : {value})", "mc_min"),
        "any": ("false", "{acc} || {value}", "||"),
    }
    ### END SOLUTION
