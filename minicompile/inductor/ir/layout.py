"""Where a tensor's elements live in memory (mirrors ``Layout``/``FixedLayout`` in
torch/_inductor/ir.py).

A layout is size + stride + offset, all SymPy expressions, so one layout serves every value of
the size symbols. Its ``indexer`` turns a multi-dim index ``(i0, i1, ...)`` into the flat storage
offset ``offset + i0*stride0 + i1*stride1 + ...``: the formula every ``ops.load`` receives.

A dense layout is described by its **fill order**: the dims from the one whose stride is 1 to
the outermost (Inductor's ``FlexibleLayout.fill_ordered``). Row-major ``[N, C, H, W]`` fills
``W, H, C, N``; channels-last fills ``C, W, H, N`` (strides ``[HWC, 1, WC, C]``). A computed
buffer takes the fill order eager gives its tensor (:func:`fill_order`), so a pointwise op over
channels-last inputs writes channels-last, as ATen's TensorIterator does.
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


# What a size symbol stands for when strides are compared: any size > 1 gives the same order of
# the strides of a dense layout (each is a product of sizes of the dims filled before it);
# Inductor's ``unbacked_symint_fallback``
GENERIC_SIZE = 8192


def stride_hint(stride: Expr) -> int:
    """A stride as a number, every size symbol taken as :data:`GENERIC_SIZE` (ordering only)."""
    value = sympify(stride).subs({s: GENERIC_SIZE for s in sympify(stride).free_symbols})
    return int(value) if value.is_number else GENERIC_SIZE


def fill_order(stride: Sequence[Expr | int]) -> list[int]:
    """The dims from the smallest stride to the largest (``[1, 3, 2, 0]`` for channels-last
    ``[HWC, 1, WC, C]``); of equal strides (size-1 dims) the later dim is filled first, as in
    a row-major layout. Numbers are used as they are, SymPy strides through :func:`stride_hint`."""
    hints = [s if isinstance(s, int) else stride_hint(s) for s in stride]
    return sorted(range(len(hints)), key=lambda d: (hints[d], -d))


def fill_ordered_strides(size: Sequence[Expr], order: Sequence[int]) -> list[Expr]:
    """Dense strides filling dims in ``order`` (Inductor's ``FlexibleLayout.fill_ordered``):
    ``order[0]`` gets stride 1, the next the size of the first, and so on."""
    strides: list[Expr] = [sympy.Integer(0)] * len(size)
    running = sympy.Integer(1)
    for d in order:
        strides[d] = running
        running = running * sympify(size[d])
    return strides


def channels_last_order(rank: int) -> list[int]:
    """The fill order of channels-last: channels first, then the spatial dims from the last,
    then the batch (``[1, 3, 2, 0]`` for ``[N, C, H, W]``: strides ``[HWC, 1, WC, C]``)."""
    return [1, *range(rank - 1, 1, -1), 0]


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


def _hint(s: int | torch.SymInt) -> int | None:
    """A size or stride of a FakeTensor as a number (a SymInt's value when it was traced)."""
    return int(s) if isinstance(s, int) else getattr(s.node, "hint", None)


def eager_fill_order(val: torch.Tensor) -> list[int] | None:
    """The fill order of eager's tensor ``val`` (a FakeTensor) when its layout is dense: no
    element shares a location, no location is skipped (``is_non_overlapping_and_dense``).
    None otherwise: an expanded or sliced result, which a fresh buffer does not copy."""
    sizes, strides = [_hint(s) for s in val.shape], [_hint(s) for s in val.stride()]
    if None in sizes or None in strides:
        return None
    order = fill_order(strides)
    dense = fill_ordered_strides(sizes, order)
    if any(sz != 1 and st != want for sz, st, want in zip(sizes, strides, dense)):
        return None
    return order
