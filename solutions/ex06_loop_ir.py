"""Exercises for notebook 06: the loop-level IR.

Run ``bash course.sh grade -k 06`` to grade ``exercises/ex06_loop_ir.py``.
"""

from __future__ import annotations

import sympy
import torch

from minicompile.inductor.ir import IRNode, Pointwise, Reduction
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing
from minicompile.inductor.virtualized import ops


def transpose_reshape_index(i: sympy.Expr, n: sympy.Expr, m: sympy.Expr) -> sympy.Expr:
    """``x`` is a contiguous (n, m) tensor and ``y = x.t().reshape(n * m)``. Return the flat
    storage offset of ``x`` that ``y[i]`` reads, as a SymPy expression in ``i``, ``n``, ``m``
    (use ``FloorDiv`` and ``ModularIndexing``, which also work on plain ints)."""
    ### BEGIN SOLUTION 6.1: the flat offset into x read by x.t().reshape(-1)[i]
    # y viewed as (m, n): row = i // n (a column of x), col = i % n (a row of x)
    return ModularIndexing(i, 1, n) * m + FloorDiv(i, n)
    ### END SOLUTION


def lower_hardsigmoid(x: IRNode) -> Pointwise:
    """Lower ``F.hardsigmoid`` (``clamp(x + 3, 0, 6) / 6``) to a ``Pointwise`` over x's size,
    using ``x.make_loader()`` and ``ops.*`` calls (``ops.constant(value, dtype)`` for numbers)."""
    ### BEGIN SOLUTION 6.2: a Pointwise whose inner_fn computes clamp(x + 3, 0, 6) / 6
    load, dtype = x.make_loader(), x.get_dtype()

    def inner_fn(index):
        v = ops.add(load(index), ops.constant(3.0, dtype))
        v = ops.minimum(ops.maximum(v, ops.constant(0.0, dtype)), ops.constant(6.0, dtype))
        return ops.truediv(v, ops.constant(6.0, dtype))

    return Pointwise(x.get_device(), dtype, inner_fn, x.get_size())
    ### END SOLUTION


def lower_sum_of_squares(x: IRNode, dim: int) -> Reduction:
    """Lower ``(x ** 2).sum(dim)`` (no keepdim) to a ``Reduction``: ``ranges`` are the kept dims,
    ``reduction_ranges`` is ``[size[dim]]``, and ``inner_fn(index, rindex)`` rebuilds x's full
    index from both."""
    ### BEGIN SOLUTION 6.3: a Reduction summing x[...]^2 over dim
    size, load = x.get_size(), x.make_loader()
    dim = dim % len(size)

    def inner_fn(index, rindex):
        full = list(index[:dim]) + [rindex[0]] + list(index[dim:])
        v = load(full)
        return ops.mul(v, v)

    kept = size[:dim] + size[dim + 1:]
    return Reduction(x.get_device(), x.get_dtype(), inner_fn, kept, [size[dim]], "sum",
                     x.get_dtype())
    ### END SOLUTION
