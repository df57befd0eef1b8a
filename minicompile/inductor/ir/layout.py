"""Where a tensor's elements live in memory (mirrors ``Layout``/``FixedLayout`` in
torch/_inductor/ir.py).

A layout is size + stride + offset, all SymPy expressions, so one layout serves every value of
the size symbols. Its ``indexer`` turns a multi-dim index ``(i0, i1, ...)`` into the flat storage
offset ``offset + i0*stride0 + i1*stride1 + ...``: the formula every ``ops.load`` receives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import sympy
import torch

from ..sizevars import Expr, sympify


def contiguous_strides(size: Sequence[Expr]) -> list[Expr]:
    """Row-major strides: the last dim is contiguous (``[s1*4, 4, 1]`` for ``[s0, s1, 4]``)."""
    strides, running = [], sympy.Integer(1)
    for s in reversed(size):
        strides.append(running)
        running = running * sympify(s)
    return strides[::-1]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass
class Layout:
    """``size``/``stride`` per dim and a storage ``offset``, in elements (not bytes)."""

    device: torch.device
    dtype: torch.dtype
    size: list[Expr]
    stride: list[Expr] = field(default_factory=list)
    offset: Expr = sympy.Integer(0)

    def __post_init__(self) -> None:
        self.size = [sympify(s) for s in self.size]
        self.stride = [sympify(s) for s in self.stride] or contiguous_strides(self.size)
        self.offset = sympify(self.offset)

    def make_indexer(self) -> Callable[[Sequence[Expr]], Expr]:
        """``index -> offset + sum(index[d] * stride[d])``; size-1 dims contribute nothing."""

        def indexer(index: Sequence[Expr]) -> Expr:
            assert len(index) == len(self.size), f"index {index} for size {self.size}"
            return self.offset + sympy.Add(*[
                sympify(i) * st for i, st, sz in zip(index, self.stride, self.size) if sz != 1])

        return indexer

    def numel(self) -> Expr:
        return sympy.Mul(*self.size)

    def storage_size(self) -> Expr:
        """Elements of storage this layout touches: ``offset + sum((size-1)*stride) + 1``."""
        if any(s == 0 for s in self.size):
            return sympy.Integer(0)
        return self.offset + sympy.Add(*[(sz - 1) * st for sz, st in zip(self.size, self.stride)]) + 1

    def is_contiguous(self) -> bool:
        return self.offset == 0 and all(
            sz == 1 or sympy.expand(st - c) == 0
            for sz, st, c in zip(self.size, self.stride, contiguous_strides(self.size)))

    def is_dense(self) -> bool:
        """Each element has a storage location of its own and no location is skipped: the
        strides, smallest first, are those of a contiguous tensor of the sizes, in some order
        of the dims (size-1 dims may have any stride)."""
        dims = [(size, stride) for size, stride in zip(self.size, self.stride) if size != 1]
        expected = sympy.Integer(1)
        while dims:
            match = next((d for d in dims if sympy.expand(d[1] - expected) == 0), None)
            if match is None:
                return False
            dims.remove(match)
            expected = expected * match[0]
        return True

    def __str__(self) -> str:
        text = f"{dtype_name(self.dtype)}{list(self.size)}"
        if not self.is_contiguous():
            text += f" stride={list(self.stride)}"
            if self.offset != 0:
                text += f" offset={self.offset}"
        return text
