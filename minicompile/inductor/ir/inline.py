"""Fusion as substitution: inline a producer's body into its consumer (the idea behind
Inductor's lowering-time inlining in torch/_inductor/ir.py and the scheduler's fused kernels).

A consumer reads a producer through ``ops.load(producer, flat_index)``. Inlining replaces that
load by the producer's own body evaluated at the same element: the flat index is turned back
into the producer's multi-dim index (``i_k = flat // stride_k % size_k``) and the index
simplifier removes the ``//`` and ``%`` again when the loop ranges allow:

    buf0[i0] = load(x, i0) * 2          buf1[i0] = load(buf0, i0) + 3
    inline buf0 into buf1:              buf1[i0] = load(x, i0) * 2 + 3   (buf0 never stored)

Two things keep an evaluation linear in the size of the substituted body, however deep the
substitutions nest (a recurrence's backward inlines producers into producers into producers):

- an inlined body is an :class:`Inlined`: the consumer's own body and a flat table of the
  producers substituted into it. One ``InlineLoads`` handler serves the whole evaluation; a
  producer that had producers of its own substituted brings its table along while its body runs
  (the tables are scoped as the bodies nest), instead of stacking one handler per substitution;
- a load of a substituted producer at an index is evaluated once per evaluation and then reused
  (Inductor's ``CSE`` of loads): ``a = p*p`` with ``p = q + q`` and ``q = r*r`` evaluates ``r``
  once, not four times. A value made under ``ops.masked`` stays inside the mask's body.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Mapping

import sympy

from ..sizevars import Expr, FloorDiv, ModularIndexing
from ..virtualized import get_ops_handler, set_ops_handler
from .layout import Layout
from .nodes import ComputedBuffer, Pointwise


def unflatten_index(flat: Expr, size: list[Expr], stride: list[Expr], offset: Expr) -> list[Expr]:
    """Invert a dense layout's indexer (row-major, channels-last, any order of the dims): the
    multi-dim index whose flat offset is ``flat``. Each dim is a digit of a mixed-radix number,
    ``flat // stride % size``; the outermost (its stride times its size is the whole) needs no
    ``%``."""
    flat = flat - offset
    numel = sympy.Mul(*size)
    index = []
    for sz, st in zip(size, stride):
        if sz == 1:
            index.append(sympy.Integer(0))
        elif sympy.expand(st * sz - numel) == 0:  # the outermost dim
            index.append(FloorDiv(flat, st))
        else:
            index.append(ModularIndexing(flat, st, sz))
    return index


@dataclasses.dataclass(frozen=True)
class Substitute:
    """What a load of one producer turns into: its body at the unflattened index, with the
    producers substituted into that body in turn (``env``)."""

    layout: Layout
    body: Callable[..., Any]
    env: Mapping[str, "Substitute"]


@dataclasses.dataclass(frozen=True)
class Inlined:
    """A loop body with some of its loads substituted: ``body(*index)`` run under one
    :class:`InlineLoads` that resolves the loads of every producer named in ``env``."""

    body: Callable[..., Any]
    env: Mapping[str, Substitute]

    def __call__(self, *args: Any) -> Any:
        with set_ops_handler(InlineLoads(get_ops_handler(), self.env)):
            return self.body(*args)


def substitute(producer: ComputedBuffer) -> Substitute:
    fn = producer.data.inner_fn
    body, env = (fn.body, fn.env) if isinstance(fn, Inlined) else (fn, {})
    return Substitute(producer.layout, body, env)


class InlineLoads:
    """``ops`` handler forwarding everything to ``parent`` except loads from the producers in
    ``env``, which evaluate the producer's body instead (once per index)."""

    def __init__(self, parent: Any, env: Mapping[str, Substitute]):
        self.parent = parent
        self.env = env
        self.memo: collections.ChainMap = collections.ChainMap()  # (name, index) -> value

    def load(self, name: str, index: Expr) -> Any:
        producer = self.env.get(name)
        if producer is None:
            return self.parent.load(name, index)
        key = (name, index)
        if key in self.memo:
            return self.memo[key]
        layout, outer = producer.layout, self.env
        if producer.env:  # the producer's own substitutions, while its body runs
            self.env = collections.ChainMap(producer.env, outer)
        try:  # ops inside the body come back to this handler
            value = producer.body(unflatten_index(index, layout.size, layout.stride,
                                                  layout.offset))
        finally:
            self.env = outer
        self.memo[key] = value
        return value

    def masked(self, mask: Any, body: Callable[[], Any], other: Any) -> Any:
        """Values computed inside the mask's body (a lambda in generated code) are not
        reused outside it; values from outside are."""
        def scoped() -> Any:
            outer = self.memo
            self.memo = outer.new_child()
            try:
                return body()
            finally:
                self.memo = outer
        return self.parent.masked(mask, scoped, other)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parent, name)


def substitutions(node: ComputedBuffer) -> int:
    """How many producers have been substituted into ``node``'s body: a bound on how deep its
    evaluation nests (each level a substituted load inside a substituted body)."""
    fn = node.data.inner_fn
    return len(fn.env) if isinstance(fn, Inlined) else 0


def inline_producers(consumer: ComputedBuffer, producers: list[ComputedBuffer]) -> ComputedBuffer:
    """A copy of ``consumer`` whose loads from the (pointwise) ``producers`` are replaced by
    their bodies. The producers' buffers are then no longer read by it."""
    for p in producers:
        if not isinstance(p.data, Pointwise):
            raise TypeError(f"only a Pointwise producer can be inlined, not {p.describe()}")
        if not p.layout.is_dense():
            raise ValueError(f"{p.name} has a layout with gaps or overlaps {p.layout}")
    fn = consumer.data.inner_fn
    body, env = (fn.body, dict(fn.env)) if isinstance(fn, Inlined) else (fn, {})
    env.update({p.name: substitute(p) for p in producers})
    data = dataclasses.replace(consumer.data, inner_fn=Inlined(body, env))
    inlined = dataclasses.replace(consumer, data=data)
    # the ATen ops it computes now include the producers' (they name its kernel)
    inlined.origins = set(getattr(consumer, "origins", ())).union(
        *(getattr(p, "origins", ()) for p in producers))
    return inlined


__all__ = ["inline_producers", "unflatten_index", "InlineLoads", "Inlined", "Substitute",
           "substitutions"]
