"""Exercises for notebook 08: Triton code generation.

Grade with ``bash course.sh grade -k 08``. Each function is a piece of minicompile's Triton
backend (``minicompile/inductor/codegen/triton_ops.py`` and ``triton_kernel.py``); the checks plug
your piece into the real backend, generate Triton kernels and run them (on a GPU, or on CPU
tensors through Triton's interpreter, ``TRITON_INTERPRET=1``), comparing with eager PyTorch.
"""

from __future__ import annotations

import sympy
import torch

from minicompile.inductor.sizevars import FloorDiv, ModularIndexing


def triton_nan_ops() -> dict[str, str]:
    """Exercise 8.1: the Triton expression of ``maximum``, ``minimum`` and ``remainder``.

    Return ``{op name: template}``; ``{0}`` and ``{1}`` are the operands, Triton blocks of one
    dtype (``x = <your template>`` is written into the kernel). Use ``tl.where``, comparisons,
    arithmetic and ``tl.floor`` (no helpers of ``triton_helpers``). Torch's rules:

    - ``torch.maximum``/``minimum`` are NaN where either operand is NaN (Triton's comparisons with
      NaN are false, as in C);
    - ``torch.remainder(a, b)`` has the sign of ``b`` (Python's ``%``): ``remainder(-7., 3.)`` is
      ``2.``. The check uses floating-point operands for ``remainder``.
    """
    ### BEGIN SOLUTION 8.1: three tl.where / libdevice expressions
    return {
        "maximum": "tl.where(({0} != {0}) | ({0} > {1}), {0}, {1})",
        "minimum": "tl.where(({0} != {0}) | ({0} < {1}), {0}, {1})",
        "remainder": "{0} - tl.floor({0} / {1}) * {1}",
    }
    ### END SOLUTION


def triton_index(expr: sympy.Expr) -> str:
    """Exercise 8.2: a SymPy index expression as Triton integer arithmetic.

    As the C++ printer of exercise 9.2, for Triton: symbols (``xindex``, ``rindex``, ``s0``),
    integers, ``+``, ``*``, positive integer powers, ``FloorDiv(a, b)`` and
    ``ModularIndexing(a, b, m)`` (``(a // b) % m``), and ``sympy.Min``/``sympy.Max`` (as
    ``tl.minimum``/``tl.maximum``). Every value is non-negative where a kernel evaluates it, so
    Triton's ``//`` and ``%`` are floor division and remainder. The result is pasted into larger
    expressions (``in_ptr0 + (<yours>)``, ``<yours> * 8``): parenthesise what needs it.
    """
    ### BEGIN SOLUTION 8.2: recursive printer with // % tl.minimum tl.maximum
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Symbol:
        return expr.name
    args = [triton_index(a) for a in expr.args]
    if isinstance(expr, FloorDiv):
        return f"(({args[0]}) // ({args[1]}))"
    if isinstance(expr, ModularIndexing):
        return f"((({args[0]}) // ({args[1]})) % ({args[2]}))"
    if isinstance(expr, (sympy.Min, sympy.Max)):
        fn = "tl.minimum" if isinstance(expr, sympy.Min) else "tl.maximum"
        text = args[0]
        for a in args[1:]:
            text = f"{fn}({text}, {a})"
        return text
    if isinstance(expr, sympy.Add):
        return "(" + " + ".join(args) + ")"
    if isinstance(expr, sympy.Mul):
        return "(" + " * ".join(f"({a})" for a in args) + ")"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return "(" + " * ".join([f"({args[0]})"] * int(expr.exp)) + ")"
    raise NotImplementedError(f"cannot print {expr!r} as a Triton index")
    ### END SOLUTION


def persistent_reduction(reduction_type: str, dtype: torch.dtype) -> tuple[object, str]:
    """Exercise 8.3: how a persistent kernel reduces its ``[XBLOCK, RBLOCK]`` block of rows.

    A persistent reduction holds whole rows in one block: lane ``(x, r)`` has element ``r`` of
    row ``x``, and lanes past the row's end (``rmask`` false, when RBLOCK is the next power of two
    above the row length) hold garbage. The kernel first replaces those lanes by a *neutral*
    value, then reduces along axis 1::

        tmp5 = tl.where(xmask & rmask, tmp4, <neutral>)
        tmp6 = <reduce, with {0} = tmp5>

    Return ``(neutral, reduce)`` for ``reduction_type`` in ``sum``, ``prod``, ``max``, ``min``,
    ``any`` and the values' ``dtype`` (float32, int64 or bool): ``neutral`` a Python number (or
    bool) that leaves the result unchanged, ``reduce`` a template over ``{0}`` that yields an
    ``[XBLOCK, 1]`` block (``tl.sum(v, 1)`` gives ``[XBLOCK]``; ``[:, None]`` adds the axis back).
    ``tl.sum``, ``tl.max``, ``tl.min`` and ``tl.reduce`` exist; ``tl.max`` of a block with a NaN
    does not give NaN, torch's ``amax`` does: ``triton_helpers.max2(v, 1)`` and ``min2`` do too,
    and ``triton_helpers.prod(v, 1)`` multiplies. ``any`` of a bool block: its ``tl.max`` as int8
    is 1 when one element is true.
    """
    ### BEGIN SOLUTION 8.3: the neutral element by type and dtype, then the axis-1 reduction
    if reduction_type in ("max", "min"):
        if dtype.is_floating_point:
            neutral = float("-inf") if reduction_type == "max" else float("inf")
        elif dtype == torch.bool:
            neutral = reduction_type == "min"
        else:
            info = torch.iinfo(dtype)
            neutral = info.min if reduction_type == "max" else info.max
        return neutral, f"triton_helpers.{reduction_type}2({{0}}, 1)[:, None]"
    return {
        "sum": (0, "tl.sum({0}, 1)[:, None]"),
        "prod": (1, "triton_helpers.prod({0}, 1)[:, None]"),
        "any": (0, "tl.max({0}.to(tl.int8), 1)[:, None] != 0"),
    }[reduction_type]
    ### END SOLUTION
