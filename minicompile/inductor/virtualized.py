"""Swappable globals: ``ops`` and ``V.graph`` (mini version of torch/_inductor/virtualized.py).

A loop body in the IR is a Python closure ``inner_fn(index)`` that calls ``ops.load``,
``ops.add``, ``ops.exp``, ... and never says what those calls *do*. ``ops`` forwards each call to
whatever handler is installed, so one body definition serves many readers:

    handler                          what ops.add(a, b) returns
    ------------------------------   ----------------------------------------------
    ir_printer.PrintHandler          a name ``tmp2``, after recording ``tmp2 = tmp0 + tmp1``
    read_writes.RecordReadWrites     a dummy; it records every ops.load / ops.store index
    executor.TorchHandler            a torch tensor evaluated over the whole index grid
    (later) Triton / C++ codegen     a line of kernel source

    with set_ops_handler(PrintHandler()):
        node.store_output(index_vars)          # the same closure, printed instead of run

The op vocabulary (what a handler must implement) is ``OPS`` below.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

# name -> how many value arguments it takes ("n" = see the docstring of the op).
# Handlers implement these; lowerings may call nothing else.
UNARY_OPS = [
    "abs", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos",
    "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sigmoid",
    "erf", "erfc", "floor", "ceil", "round", "trunc", "sign", "reciprocal", "relu",
    "logical_not", "bitwise_not", "isnan", "isinf", "signbit", "lgamma", "square",
]
BINARY_OPS = [
    "add", "sub", "mul", "truediv", "floordiv", "truncdiv", "mod", "remainder", "fmod", "pow",
    "maximum", "minimum", "atan2", "hypot", "copysign", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift",
]

# reduction type -> the value a reduction starts from (``ops.reduction``'s vocabulary)
REDUCTION_INIT = {
    "sum": 0, "prod": 1, "max": float("-inf"), "min": float("inf"), "any": False,
    "argmax": float("-inf"), "argmin": float("inf"), "welford_reduce": (0.0, 0.0, 0),
    "online_softmax_reduce": (float("-inf"), 0.0),
}

# scan type -> the running value a scan starts from (``ops.scan``'s vocabulary)
SCAN_INIT = {"sum": 0, "prod": 1, "logaddexp": float("-inf")}

# Special ops (explicit methods on every handler):
#   load(name, index)                 read buffer ``name`` at flat SymPy ``index``
#   store(name, index, value, mode)  write it; ``mode="atomic_add"`` adds it to what is there,
#                                     safe where several points write one element (a scatter
#                                     with accumulation: ``ir.Scatter``)
#   constant(value, dtype)            a scalar
#   index_expr(expr, dtype)           the value of a SymPy index expression (arange, masks)
#   to_dtype(x, dtype)                cast
#   where(cond, a, b)                 select
#   masked(mask, body, other)         ``body()`` where mask holds, ``other`` elsewhere; loads in
#                                     ``body`` must not touch memory outside the mask (cat, pad)
#   indirect_indexing(x, size, check) turn a loaded int value into a SymPy symbol usable inside
#                                     an index (gather, embedding), checked against ``size`` as
#                                     eager checks it (``checks.py``: x[-1] wraps, gather raises)
#   reduction(dtype, src_dtype, reduction_type, value)   combine ``value`` over the reduction
#                                     loops (the node decides which loops those are)
#   scan(dtype, scan_type, value)     the running combination of ``value`` along the reduction
#                                     loop, up to and including this point (``ir.Scan``)
OPS = UNARY_OPS + BINARY_OPS + [
    "load", "store", "constant", "index_expr", "to_dtype", "where", "masked",
    "indirect_indexing", "reduction", "scan",
]

_state = threading.local()


def _handler_stack() -> list[Any]:
    if not hasattr(_state, "ops"):
        _state.ops = []
    return _state.ops


@contextlib.contextmanager
def set_ops_handler(handler: Any) -> Iterator[Any]:
    """Install ``handler`` as the target of every ``ops.*`` call inside the ``with`` block."""
    stack = _handler_stack()
    stack.append(handler)
    try:
        yield handler
    finally:
        stack.pop()


def get_ops_handler() -> Any:
    """The handler ``ops.*`` calls currently go to."""
    return _handler_stack()[-1]


class _OpsProxy:
    """``ops.add(a, b)`` -> ``current_handler.add(a, b)``; the handler is looked up at call
    time, so ``ops.exp`` can be passed around as a function before any handler is installed."""

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            stack = _handler_stack()
            if not stack:
                raise RuntimeError(
                    f"ops.{name} called with no ops handler installed; "
                    "run the loop body under set_ops_handler(...)")
            return getattr(stack[-1], name)(*args, **kwargs)

        call.__name__ = name
        return call


ops = _OpsProxy()


class _V:
    """``V.graph``: the GraphLowering being built (lowerings register buffers on it)."""

    @property
    def graph(self) -> Any:
        graph = getattr(_state, "graph", None)
        if graph is None:
            raise RuntimeError("V.graph used outside GraphLowering.run()")
        return graph

    @property
    def graph_or_none(self) -> Any:
        """The GraphLowering being built, or None outside one."""
        return getattr(_state, "graph", None)

    @contextlib.contextmanager
    def set_graph_handler(self, graph: Any) -> Iterator[Any]:
        prev = getattr(_state, "graph", None)
        _state.graph = graph
        try:
            yield graph
        finally:
            _state.graph = prev

    @property
    def ops(self) -> _OpsProxy:
        return ops


V = _V()
