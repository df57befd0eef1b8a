"""Fusion as substitution: inline a producer's body into its consumer (the idea behind
Inductor's lowering-time inlining in torch/_inductor/ir.py and the scheduler's fused kernels).

A consumer reads a producer through ``ops.load(producer, flat_index)``. Inlining replaces that
load by the producer's own body evaluated at the same element: the flat index is turned back
into the producer's multi-dim index (``i_k = flat // stride_k % size_k``) and the index
simplifier removes the ``//`` and ``%`` again when the loop ranges allow:

    buf0[i0] = load(x, i0) * 2          buf1[i0] = load(buf0, i0) + 3
    inline buf0 into buf1:              buf1[i0] = load(x, i0) * 2 + 3   (buf0 never stored)

Three things keep an evaluation linear in the size of the substituted body, however deep the
substitutions nest (a recurrence's backward inlines producers into producers into producers):

- an inlined body is an :class:`Inlined`: the consumer's own body and a flat table of the
  producers substituted into it. One ``InlineLoads`` handler serves the whole evaluation; a
  producer that had producers of its own substituted brings its table along while its body runs
  (the tables are scoped as the bodies nest), instead of stacking one handler per substitution;
- a load of a substituted producer at an index is evaluated once per evaluation and then reused
  (Inductor's ``CSE`` of loads): ``a = p*p`` with ``p = q + q`` and ``q = r*r`` evaluates ``r``
  once, not four times. A value made under ``ops.masked`` stays inside the mask's body;
- every index is simplified over the body's own loop ranges before a producer's body is
  evaluated at it (Inductor simplifies a body's indexing once, ``LoopBody``): the index stays
  the size the views make it instead of nesting a level deeper per producer, and two loads of
  one element written differently (RoPE's ``cos`` and ``sin`` of one ``cat``) are one load.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
from typing import Any, Callable, Mapping

import sympy

from ..sizevars import Expr, FloorDiv, ModularIndexing, index_var, simplify_index, sympify
from ..virtualized import get_ops_handler, set_ops_handler
from .layout import Layout
from .nodes import ComputedBuffer, Pointwise


class IndexTooLarge(Exception):
    """A substituted load's index passed the bound :func:`index_size_limit` set."""


# Operations an index may hold when a producer's body is evaluated at it, while a substitution
# is being decided (None: no bound). With symbolic sizes the simplifier cannot always remove
# the ``//`` and ``%`` that unflattening a producer's flat index adds (it cannot prove a digit
# in range), so each producer substituted into the next nests the index one level deeper and
# its size, and the time ``sympy.expand`` takes on it, grows exponentially with the chain (a
# circular pad is six ``slice_scatter`` s, each over the previous).
_index_ops_limit: int | None = None


@contextlib.contextmanager
def index_size_limit(ops: int):
    """Raise :class:`IndexTooLarge` from a substituted load whose index holds more than
    ``ops`` operations, while the block runs (``inlining.py`` then keeps the producer a
    buffer)."""
    global _index_ops_limit
    outer, _index_ops_limit = _index_ops_limit, ops
    try:
        yield
    finally:
        _index_ops_limit = outer


def has_more_ops(expr: Expr, limit: int) -> bool:
    """Does ``expr`` hold more than ``limit`` operations (its tree's nodes that are not atoms)?
    A walk that stops at the limit: ``sympy.count_ops`` on every substituted load took a fifth
    of an unrolled LSTM's compile."""
    stack, ops = [expr], 0
    while stack:
        args = stack.pop().args
        if args:
            ops += 1
            if ops > limit:
                return True
            stack.extend(args)
    return False


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
    :class:`InlineLoads` that resolves the loads of every producer named in ``env``.

    The body runs over loop variables of its own (``q0, q1, ...``; ``qr0, ...`` for a
    reduction's) of the known sizes ``sizes`` (one list per argument): ``InlineLoads``
    simplifies each index over them, and hands it on in the caller's variables."""

    body: Callable[..., Any]
    env: Mapping[str, Substitute]
    sizes: tuple[tuple[Expr, ...], ...] = ()

    def __call__(self, *args: Any) -> Any:
        own = [[index_var(prefix, k) for k in range(len(size))]  # (index[, rindex])
               for prefix, size, _ in zip(("q", "qr"), self.sizes, args)]
        var_ranges = {v: n for vs, size in zip(own, self.sizes) for v, n in zip(vs, size)}
        caller = {v: sympify(a) for vs, arg in zip(own, args) for v, a in zip(vs, arg)}
        handler = InlineLoads(get_ops_handler(), self.env, var_ranges, caller)
        with set_ops_handler(handler):
            return self.body(*own, *args[len(own):])


def substitute(producer: ComputedBuffer) -> Substitute:
    fn = producer.data.inner_fn
    body, env = (fn.body, fn.env) if isinstance(fn, Inlined) else (fn, {})
    return Substitute(producer.layout, body, env)


class InlineLoads:
    """``ops`` handler forwarding everything to ``parent`` except loads from the producers in
    ``env``, which evaluate the producer's body instead (once per index). Indices arrive over
    the body's own loop variables (``var_ranges``), are simplified over their ranges, and reach
    ``parent`` in the caller's (``caller``: each variable's value there)."""

    def __init__(self, parent: Any, env: Mapping[str, Substitute],
                 var_ranges: Mapping[sympy.Symbol, Expr] | None = None,
                 caller: Mapping[sympy.Symbol, Expr] | None = None):
        self.parent = parent
        self.env = env
        self.var_ranges = dict(var_ranges or {})
        self.caller = dict(caller or {})
        self.memo: collections.ChainMap = collections.ChainMap()  # (name, index) -> value

    def load(self, name: str, index: Expr) -> Any:
        producer = self.env.get(name)
        if producer is not None and _index_ops_limit is not None \
                and has_more_ops(index, _index_ops_limit):  # before simplifying it
            raise IndexTooLarge(f"a load of {name} at an index of more than "
                                f"{_index_ops_limit} operations")
        index = simplify_index(index, self.var_ranges)
        if producer is None:
            return self.parent.load(name, self.in_caller(index))
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

    def in_caller(self, value: Any) -> Any:
        """``value`` (an index, or a list or tuple of them) over the caller's loop variables."""
        if isinstance(value, sympy.Basic):
            return value.xreplace(self.caller)
        if isinstance(value, (list, tuple)):
            return type(value)(self.in_caller(v) for v in value)
        return value

    def __getattr__(self, name: str) -> Any:
        op = getattr(self.parent, name)
        if not self.caller or not callable(op):
            return op

        def in_caller_index(*args: Any, **kwargs: Any) -> Any:  # index_expr(q0 + 1) and others
            return op(*map(self.in_caller, args),
                      **{k: self.in_caller(v) for k, v in kwargs.items()})
        return in_caller_index


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
    sizes = (tuple(consumer.data.get_pointwise_size()),
             tuple(consumer.data.get_reduction_size()))
    data = dataclasses.replace(consumer.data, inner_fn=Inlined(body, env, sizes))
    inlined = dataclasses.replace(consumer, data=data)
    # the ATen ops it computes now include the producers' (they name its kernel)
    inlined.origins = set(getattr(consumer, "origins", ())).union(
        *(getattr(p, "origins", ()) for p in producers))
    return inlined


__all__ = ["IndexTooLarge", "index_size_limit", "has_more_ops", "inline_producers",
           "unflatten_index", "InlineLoads", "Inlined", "Substitute",
           "substitutions"]
