"""The ``ops`` protocol: what every handler of a loop body implements (mirrors
torch/_inductor/ops_handler.py, where ``OpsHandler[T]`` is a typed Protocol and each handler, the
Triton and C++ kernel writers included, is checked against it).

A loop body calls ``ops.load``, ``ops.add``, ``ops.reduction`` ... (``virtualized.py``); a
handler decides what the calls *mean*. ``T`` is the handler's value type: ``str`` for the code
generators (each op returns the name of a temporary), ``torch.Tensor`` for the reference backend.

The vocabulary comes from ``virtualized.OPS``; ``missing_ops(handler_class)`` lists the ops a
handler class lacks, and ``tests/test_codegen_seam.py`` checks that every handler implements every
op. The elementwise ops share one signature each (``UnaryOp``/``BinaryOp``), so a handler can
build them from a table instead of writing sixty methods.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, TypeVar

import sympy
import torch

from .checks import Check
from .virtualized import BINARY_OPS, OPS, UNARY_OPS

T = TypeVar("T")


class OpsHandler(Protocol[T]):
    """The special ops; every name in ``UNARY_OPS`` is ``(x: T) -> T`` and every name in
    ``BINARY_OPS`` is ``(a: T, b: T) -> T``."""

    def load(self, name: str, index: sympy.Expr) -> T: ...

    def store(self, name: str, index: sympy.Expr, value: T, mode: str | None = None) -> None: ...

    def constant(self, value: Any, dtype: torch.dtype) -> T: ...

    def index_expr(self, expr: sympy.Expr, dtype: torch.dtype) -> T: ...

    def to_dtype(self, x: T, dtype: torch.dtype) -> T: ...

    def where(self, cond: T, a: T, b: T) -> T: ...

    def masked(self, mask: T, body: Callable[[], T], other: Any) -> T: ...

    def indirect_indexing(self, value: T, size: sympy.Expr, check: Check = Check()) -> sympy.Symbol: ...

    def reduction(self, dtype: torch.dtype, src_dtype: torch.dtype, reduction_type: str,
                  value: T) -> T | tuple[T, ...]: ...

    def scan(self, dtype: torch.dtype, scan_type: str, value: T) -> T: ...


def missing_ops(handler: Any) -> list[str]:
    """The ops of the vocabulary that ``handler`` (a class, or an instance for handlers that
    answer any op through ``__getattr__``) does not implement."""
    return [op for op in OPS if not callable(getattr(handler, op, None))]


def add_elementwise_ops(handler_class: type, make: Callable[[str], Callable]) -> type:
    """Give ``handler_class`` every unary and binary op, each built by ``make(op_name)``, unless
    the class defines it itself (a special case, such as ``relu`` or ``pow`` in C++)."""
    for name in UNARY_OPS + BINARY_OPS:
        if name not in vars(handler_class):
            setattr(handler_class, name, make(name))
    return handler_class
