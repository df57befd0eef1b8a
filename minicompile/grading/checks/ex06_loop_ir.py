"""Checks for exercises/ex06_loop_ir.py (notebook 06: the loop-level IR)."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from minicompile.grading import exercise
from minicompile.inductor.executor import execute
from minicompile.inductor.ir import InputBuffer, Layout, Pointwise, Reduction


def _input(name: str, x: torch.Tensor) -> InputBuffer:
    """An IR input with the shape, dtype and device of the example tensor ``x``."""
    return InputBuffer(name, Layout(x.device, x.dtype, list(x.shape)))


F32, F64 = torch.float32, torch.float64  # a lowering keeps its input's dtype


@exercise("6.1", points=10, hints=(
    "Draw y for a small case (n=2, m=3) and write next to each y[i] the offset of x it "
    "holds.",
    "y is x.t() flattened: view it as an (m, n) tensor and find which row and column of "
    "x.t() y[i] is.",
    "Then turn that element of x.t() into an element of x, and that into a flat offset of"
    " the contiguous x.",
))
def check_transpose_reshape_index(sol):
    """Index formula of a transpose-then-reshape"""
    rng = random.Random(0)
    for _ in range(6):
        n, m = rng.randint(1, 9), rng.randint(1, 9)
        x = torch.randn(n, m)
        y = x.t().reshape(-1)
        flat = x.reshape(-1)
        for i in range(n * m):
            offset = int(sol.transpose_reshape_index(i, n, m))
            assert flat[offset] == y[i], f"n={n}, m={m}: y[{i}] is x.flat[{offset}]?"


@exercise("6.2", points=10, hints=(
    "inner_fn computes one element: load it, then apply the formula with ops.* calls.",
    "Numbers enter the IR as ops.constant(value, dtype): use the input's dtype, not a "
    "fixed one.",
    "Mind the order: the clamp applies to x + 3.",
))
def check_lower_hardsigmoid(sol):
    """Lower a pointwise op (hardsigmoid)"""
    for shape, dtype in [((7,), F32), ((5, 13), F32), ((2, 3, 4), F32), ((5, 13), F64)]:
        x = torch.randn(shape, dtype=dtype) * 5
        node = sol.lower_hardsigmoid(_input("x", x))
        assert isinstance(node, Pointwise), "return a Pointwise"
        torch.testing.assert_close(execute(node, {"x": x}), F.hardsigmoid(x), msg=lambda m: (
            f"hardsigmoid of a {x.dtype} input of {tuple(x.shape)}\n{m}"))


@exercise("6.3", points=10, hints=(
    "ranges are the kept dims; reduction_ranges the reduced one; inner_fn gets an index "
    "into each.",
    "x's full index is rebuilt from both: where does the reduced position go among the "
    "kept ones?",
    "dim may be negative, and the result keeps the input's dtype.",
))
def check_lower_sum_of_squares(sol):
    """Write a reduction's inner_fn (sum of squares over a dim)"""
    for shape, dim, dtype in [((5, 7), 1, F32), ((5, 7), 0, F32), ((3, 4, 6), 1, F32),
                              ((3, 4, 6), -1, F32), ((4, 3), 0, F64)]:
        x = torch.randn(shape, dtype=dtype)
        node = sol.lower_sum_of_squares(_input("x", x), dim)
        assert isinstance(node, Reduction), "return a Reduction"
        torch.testing.assert_close(execute(node, {"x": x}), (x ** 2).sum(dim), msg=lambda m: (
            f"(x ** 2).sum({dim}) of a {x.dtype} x of {tuple(x.shape)}\n{m}"))
