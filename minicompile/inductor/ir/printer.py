"""Print a node's body as a loop nest (mirrors ``LoopBody.debug_str`` in
torch/_inductor/loop_body.py and ``KernelFormatterHandler`` in torch/_inductor/ops_handler.py).

``PrintHandler`` is an ``ops`` handler whose values are names: each call appends one line
``tmp3 = tmp1 + tmp2`` and returns ``"tmp3"``. Running a node's body under it yields the
straight-line code of one loop iteration; ``format_loop_nest`` wraps that in ``for`` loops.
"""

from __future__ import annotations

from typing import Any, Callable

import sympy

from ..code_writer import CSE
from ..sizevars import simplify_index
from ..virtualized import BINARY_OPS, UNARY_OPS, set_ops_handler
from .layout import dtype_name

# op -> how it prints; ops not listed print as a call, ``exp(tmp0)``.
INFIX = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
    "bitwise_left_shift": "<<", "bitwise_right_shift": ">>",
}


class PrintHandler:
    """``ops`` handler that writes each op as a line of pseudo-Python."""

    def __init__(self, var_ranges: dict[sympy.Symbol, Any] | None = None):
        self.var_ranges = var_ranges or {}
        self.lines: list[tuple[int, str]] = []  # (extra indent, text)
        self.reduction_line: int | None = None  # lines up to here sit inside the reduction loop
        self.cse = CSE()  # the same expression twice is one temporary
        self._depth = 0

    def writeline(self, line: str) -> None:
        self.lines.append((self._depth, line))

    def _emit(self, expr: str) -> str:
        return self.cse.generate(self, expr)

    def _index(self, index) -> str:
        return str(simplify_index(index, self.var_ranges))

    # --- special ops ------------------------------------------------------------------------
    def load(self, name: str, index) -> str:
        return self._emit(f"load({name}, {self._index(index)})")

    def store(self, name: str, index, value: str, mode: str | None = None) -> None:
        how = f", {mode}" if mode else ""
        self.lines.append((self._depth, f"store({name}, {self._index(index)}, {value}{how})"))

    def constant(self, value, dtype) -> str:
        if isinstance(value, sympy.Basic) and not value.is_number:  # a size: s0, 3*s1
            return str(value)
        return repr(float(value) if dtype is not None and dtype.is_floating_point else value)

    def index_expr(self, expr, dtype) -> str:
        expr = simplify_index(expr, self.var_ranges)
        if expr.is_number:
            return self.constant(expr, dtype)
        return self._emit(f"index_expr({self._index(expr)}, {dtype_name(dtype)})")

    def to_dtype(self, x: str, dtype) -> str:
        return self._emit(f"to_dtype({x}, {dtype_name(dtype)})")

    def where(self, cond: str, a: str, b: str) -> str:
        return self._emit(f"{a} if {cond} else {b}")

    def masked(self, mask: str, body: Callable[[], str], other) -> str:
        self.lines.append((self._depth, f"if {mask}:  # masked: no load outside the mask"))
        self._depth += 1
        with self.cse.scoped():  # names made inside stay inside
            value = body()
        self._depth -= 1
        return self._emit(f"{value} if {mask} else {other!r}")

    def indirect_indexing(self, value: str, size, check=None) -> sympy.Symbol:
        return sympy.Symbol(f"indirect_{value}", integer=True, nonnegative=True)

    def reduction(self, dtype, src_dtype, reduction_type: str, value: str):
        line = f"acc = {reduction_type}(acc, {value})"
        self.lines.append((self._depth, line))
        self.reduction_line = len(self.lines)
        if reduction_type == "welford_reduce":
            return ("acc.mean", "acc.m2", "acc.weight")
        if reduction_type == "online_softmax_reduce":
            return ("acc.max", "acc.sum_exp")
        return "acc"

    def scan(self, dtype, scan_type: str, value: str) -> str:
        self.lines.append((self._depth, f"acc = {scan_type}(acc, {value})"))
        return "acc"  # (stored inside the loop: every running value is an output)


def _make_op(name: str):
    if name in INFIX:
        return lambda self, a, b: self._emit(f"{a} {INFIX[name]} {b}")
    return lambda self, *args: self._emit(f"{name}({', '.join(map(str, args))})")


for _name in UNARY_OPS + BINARY_OPS:
    setattr(PrintHandler, _name, _make_op(_name))


def format_body(node) -> PrintHandler:
    """Run ``node``'s body once under a ``PrintHandler`` and return it (lines inside)."""
    index, rindex = node.index_vars()
    handler = PrintHandler(node.var_ranges())
    with set_ops_handler(handler):
        node.store_output(index, rindex)
    return handler


def format_loop_nest(node) -> str:
    """``buf1: float32[10] = Reduction(sum)`` followed by its loops and body."""
    handler = format_body(node)
    (index, rindex), (sizes, rsizes) = node.index_vars(), node.get_ranges()
    out = [node.describe()]
    pad = "  "
    loops = [(v, size) for v, size in zip(index, sizes) if size != 1]  # range(1) loops: v = 0
    for depth, (v, size) in enumerate(loops):
        out.append(f"{pad * (depth + 1)}for {v} in range({size}):")
    depth = len(loops) + 1
    if rindex:
        out.append(f"{pad * depth}acc = {_init(node)}")
        loop = "scan" if node.is_scan() else "reduction"
        for k, (v, size) in enumerate(zip(rindex, rsizes)):
            out.append(f"{pad * (depth + k)}for {v} in range({size}):  # {loop}")
        # a reduction's read-out and store follow its loop; a scan stores inside it
        inner = len(handler.lines) if node.is_scan() else handler.reduction_line or 0
        for n, (extra, line) in enumerate(handler.lines):
            level = depth + len(rindex) + extra if n < inner else depth + extra
            out.append(f"{pad * level}{line}")
    else:
        out.extend(f"{pad * (depth + extra)}{line}" for extra, line in handler.lines)
    return "\n".join(out)


def _init(node) -> str:
    return repr(node.data.init())
