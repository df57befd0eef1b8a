"""Views as index remapping, never copies (mirrors ``BaseView``, ``GenericView``,
``ReinterpretView`` in torch/_inductor/ir.py).

A ``View`` has its own ``size`` and a ``reindex`` function mapping an index into the view to an
index into the tensor underneath. Reading the view is reading the base at ``reindex(index)``;
chains of views compose into one SymPy formula:

    x: float32[4, 6]                 load(x, 6*i0 + i1)
    x.t():  reindex (i0, i1) -> (i1, i0)           load(x, i0 + 6*i1)
    x.view(24): reindex (i0,) -> (i0 // 6, i0 % 6)  load(x, 6*(i0 // 6) + (i0 % 6)) == load(x, i0)

``ReinterpretView`` is the special case a library call (extern kernel) can consume: a
buffer's storage seen through another strided layout. ``as_strided_layout`` finds that
layout for any chain of views whose final formula is affine in the loop variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import sympy
import torch

from ..sizevars import Expr, index_var, simplify_index, sympify
from ..virtualized import ops
from .layout import Layout
from .nodes import Buffer, Index, IRNode


@dataclass(eq=False)
class View(IRNode):
    """``view[index] = data[reindex(index)]``."""

    data: IRNode
    size: list[Expr]
    reindex: Callable[[Index], list[Expr]]

    def __post_init__(self) -> None:
        self.size = [sympify(s) for s in self.size]

    def get_size(self) -> list[Expr]:
        return list(self.size)

    def get_dtype(self) -> torch.dtype:
        return self.data.get_dtype()

    def get_device(self) -> torch.device:
        return self.data.get_device()

    def make_loader(self) -> Callable[[Index], Any]:
        inner = self.data.make_loader()
        return lambda index: inner(self.reindex(index))

    def unwrap(self) -> IRNode:
        """The first non-view underneath."""
        node = self.data
        while isinstance(node, View):
            node = node.data
        return node

    def __str__(self) -> str:
        v = [index_var("i", k) for k in range(len(self.size))]
        return f"View{self.size} of {_short(self.data)}: {tuple(v)} -> {tuple(self.reindex(v))}"


@dataclass(eq=False)
class ReinterpretView(IRNode):
    """The storage of buffer ``data`` read through ``layout`` (an ``as_strided`` view)."""

    data: Buffer
    layout: Layout

    def get_name(self) -> str:
        return self.data.get_name()

    def get_size(self) -> list[Expr]:
        return list(self.layout.size)

    def get_stride(self) -> list[Expr]:
        return list(self.layout.stride)

    def get_dtype(self) -> torch.dtype:
        return self.layout.dtype

    def get_device(self) -> torch.device:
        return self.layout.device

    def make_loader(self) -> Callable[[Index], Any]:
        indexer = self.layout.make_indexer()
        return lambda index: ops.load(self.data.name, indexer(index))

    def __str__(self) -> str:
        return f"ReinterpretView({self.data.name}, {self.layout})"


def _short(node: IRNode) -> str:
    return getattr(node, "name", type(node).__name__)


class _Flat:
    """``ops`` handler used by ``as_strided_layout``: a load returns its flat index."""

    def load(self, name: str, index: Expr) -> tuple[str, Expr]:
        return (name, index)


def as_strided_layout(node: IRNode) -> ReinterpretView | None:
    """``node`` as a strided view of one buffer, if its index formula is affine; else None.

    Strides are the coefficients of the loop variables in the simplified flat index, and the
    offset is its value at index 0: ``load(x, i0 + 6*i1)`` -> stride ``[1, 6]``, offset ``0``.
    """
    from ..virtualized import set_ops_handler

    if isinstance(node, ReinterpretView):
        return node
    if isinstance(node, Buffer):
        return ReinterpretView(node, node.layout)
    if not isinstance(node, View) or not isinstance(node.unwrap(), (Buffer, ReinterpretView)):
        return None
    size = node.get_size()
    index = [index_var("i", k) for k in range(len(size))]
    with set_ops_handler(_Flat()):
        name, flat = node.make_loader()(index)
    flat = simplify_index(flat, dict(zip(index, size)))
    strides = []
    for v in index:
        coeff = flat.coeff(v)
        if v in coeff.free_symbols or coeff.is_negative:  # torch strides are never negative
            return None
        strides.append(coeff)
    offset = sympy.expand(flat - sympy.Add(*[c * v for c, v in zip(strides, index)]))
    if offset.free_symbols & set(index):  # e.g. a // or % left over: not strided
        return None
    base = node.unwrap()
    buffer = base.data if isinstance(base, ReinterpretView) else base
    assert buffer.name == name
    layout = Layout(node.get_device(), node.get_dtype(), size, strides, offset)
    return ReinterpretView(buffer, layout)


def broadcast_reader(from_size: Sequence[Expr], to_size: Sequence[Expr]) -> Callable[[Index], list[Expr]]:
    """``index -> index`` into a tensor of ``from_size`` broadcast to ``to_size``: leading dims
    dropped, size-1 dims read at 0 (the formula of ``expand``). Which dims are stretched is
    decided now, while the graph is lowered (a symbolic size by the traced sizes), not when a
    loader built on it runs."""
    lead = len(to_size) - len(from_size)
    stretched = [s != t and _broadcasts(s) for s, t in zip(from_size, to_size[lead:])]

    def read(index: Index) -> list[Expr]:
        return [sympy.Integer(0) if z else i for i, z in zip(list(index)[lead:], stretched)]
    return read


def _broadcasts(size: Expr) -> bool:
    """Whether ``size``, met against another size, is a 1 stretched over it. A symbolic size can
    be 1 too: ``x[..., 1:]`` of a (2, s0) ``x`` against s0 elements traced with s0 = 2 (a guard
    pins s0 - 1 == 1 then); the traced sizes decide, as they decided the broadcast."""
    size = sympify(size)
    if size.is_number:
        return size == 1
    from ..virtualized import V  # (the graph being lowered knows the traced sizes)
    hints = getattr(V.graph_or_none, "size_hints", None)
    return bool(hints) and size.free_symbols <= set(hints) and size.xreplace(hints) == 1
