"""Fusion as substitution: inline a producer's body into its consumer (the idea behind
Inductor's lowering-time inlining in torch/_inductor/ir.py and the scheduler's fused kernels).

A consumer reads a producer through ``ops.load(producer, flat_index)``. Inlining replaces that
load by the producer's own body evaluated at the same element: the flat index is turned back
into the producer's multi-dim index (``i_k = flat // stride_k % size_k``) and the index
simplifier removes the ``//`` and ``%`` again when the loop ranges allow:

    buf0[i0] = load(x, i0) * 2          buf1[i0] = load(buf0, i0) + 3
    inline buf0 into buf1:              buf1[i0] = load(x, i0) * 2 + 3   (buf0 never stored)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import sympy

from ..sizevars import Expr, FloorDiv, ModularIndexing
from ..virtualized import get_ops_handler, set_ops_handler
from .nodes import ComputedBuffer, Pointwise


def unflatten_index(flat: Expr, size: list[Expr], stride: list[Expr], offset: Expr) -> list[Expr]:
    """Invert a contiguous layout's indexer: the multi-dim index whose flat offset is ``flat``."""
    flat = flat - offset
    index = []
    for k, (sz, st) in enumerate(zip(size, stride)):
        if sz == 1:
            index.append(sympy.Integer(0))
        elif all(stride[j] == 0 or size[j] == 1 for j in range(k)):  # outermost used dim
            index.append(FloorDiv(flat, st))
        else:
            index.append(ModularIndexing(flat, st, sz))
    return index


class InlineLoads:
    """``ops`` handler forwarding everything to ``parent`` except loads from ``producers``,
    which evaluate the producer's body instead."""

    def __init__(self, parent: Any, producers: Mapping[str, ComputedBuffer]):
        self.parent = parent
        self.producers = producers

    def load(self, name: str, index: Expr) -> Any:
        producer = self.producers.get(name)
        if producer is None:
            return self.parent.load(name, index)
        layout = producer.layout
        sub_index = unflatten_index(index, layout.size, layout.stride, layout.offset)
        return producer.data.inner_fn(sub_index)  # ops inside go through this handler again

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parent, name)


def inline_producers(consumer: ComputedBuffer, producers: list[ComputedBuffer]) -> ComputedBuffer:
    """A copy of ``consumer`` whose loads from the (pointwise) ``producers`` are replaced by
    their bodies. The producers' buffers are then no longer read by it."""
    for p in producers:
        if not isinstance(p.data, Pointwise):
            raise TypeError(f"only a Pointwise producer can be inlined, not {p.describe()}")
        if not p.layout.is_contiguous():
            raise ValueError(f"{p.name} has a non-contiguous layout {p.layout}")
    table = {p.name: p for p in producers}
    inner = consumer.data.inner_fn

    def inner_fn(*args):
        with set_ops_handler(InlineLoads(get_ops_handler(), table)):
            return inner(*args)

    data = dataclasses.replace(consumer.data, inner_fn=inner_fn)
    inlined = dataclasses.replace(consumer, data=data)
    # the ATen ops it computes now include the producers' (they name its kernel)
    inlined.origins = set(getattr(consumer, "origins", ())).union(
        *(getattr(p, "origins", ()) for p in producers))
    return inlined


__all__ = ["inline_producers", "unflatten_index", "InlineLoads"]
