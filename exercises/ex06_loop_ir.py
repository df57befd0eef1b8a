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
    raise NotImplementedError('Exercise 6.1: the flat offset into x read by x.t().reshape(-1)[i] (roughly 1 lines)')


def lower_hardsigmoid(x: IRNode) -> Pointwise:
    """Lower ``F.hardsigmoid`` (``clamp(x + 3, 0, 6) / 6``) to a ``Pointwise`` over x's size,
    using ``x.make_loader()`` and ``ops.*`` calls (``ops.constant(value, dtype)`` for numbers)."""
    raise NotImplementedError('Exercise 6.2: a Pointwise whose inner_fn computes clamp(x + 3, 0, 6) / 6 (roughly 6 lines)')


def lower_sum_of_squares(x: IRNode, dim: int) -> Reduction:
    """Lower ``(x ** 2).sum(dim)`` (no keepdim) to a ``Reduction``: ``ranges`` are the kept dims,
    ``reduction_ranges`` is ``[size[dim]]``, and ``inner_fn(index, rindex)`` rebuilds x's full
    index from both."""
    raise NotImplementedError('Exercise 6.3: a Reduction summing x[...]^2 over dim (roughly 9 lines)')
