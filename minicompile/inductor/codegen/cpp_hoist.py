"""Values the same at every point of the loop being written, so that a check of one can go
before that loop (no counterpart in torch/_inductor/codegen/cpp.py, whose ``CppKernel`` keeps
separate ``loads``/``compute``/``stores`` buffers per loop level and lets the C++ compiler
hoist the rest).

An embedding's ``in_ptr1[768*indirect0 + x0]`` reads a row chosen by the token id
``in_ptr0[x1]``: the id is the same for every ``x0``. Checked inside the loop over ``x0``, the
check (a compare, and a call on the never-taken branch) stops the compiler from vectorising the
loop; checked once before it, the loop is as fast as without a check. The ops handler reports
each value it writes; ``LoopInvariants`` keeps, for each one that does not depend on the loop's
variable, the whole value as one C++ expression (``in_ptr0[x1]``, ``static_cast<int64_t>(...)``),
which the check repeats before the loop.

The same goes for the part of a load's index that does not move along the loop: where it
divides or takes a remainder of the outer loop's variable (a ``cat``'s second input,
``in_ptr0[x0 + 256*(x1 / 2) + 256*(x1 % 2) - 256]`` inside the mask that selects it), g++
cannot analyse the load once it is masked, and the whole loop stays scalar (a Phi-3 SwiGLU
backward's kernel: 268 us); read from a row pointer made before the loop,
``in_ptr0_row0[x0]``, it vectorises (69 us). The pointer may lie outside the buffer for rows
the mask excludes: no element is read through it there.
"""

from __future__ import annotations

import re
from typing import Callable

import sympy

from ..sizevars import FloorDiv, ModularIndexing, along
from .cpp_printer import cexpr

NAME = re.compile(r"[A-Za-z_]\w*")  # a temporary's name (anything else is a literal)


class LoopInvariants:
    """The invariant values of the loop nest over ``inner`` (none: per-row code, no loop)."""

    def __init__(self, *inner: sympy.Symbol) -> None:
        self.inner = inner
        self.values: dict[str, str] = {}  # temporary -> its value as one C++ expression
        self.masked = 0  # inside a masked lambda: its values exist only where the mask holds
        self.rows: dict[tuple[str, sympy.Expr], str] = {}  # (pointer, row offset) -> row pointer

    def note(self, var: str, template: str, operands: tuple[str, ...] = ()) -> None:
        """``var = template.format(*operands)`` is invariant if each operand is (or a literal)."""
        if not self.inner or self.masked:
            return
        inline = []
        for a in operands:
            if a in self.values:
                inline.append(f"({self.values[a]})")
            elif not NAME.fullmatch(a) or a in ("true", "false"):
                inline.append(a)
            else:
                return
        self.values[var] = template.format(*inline)

    def index(self, index: sympy.Expr) -> bool:
        """Whether an (already simplified) index is the same at every point of the loop."""
        return bool(self.inner) and not self.masked and not any(
            s in self.inner or s.name.startswith("indirect") for s in index.free_symbols)

    def row_pointer(self, pointer: str, index: sympy.Expr, before_loop,
                    fresh: Callable[[str], str]) -> str | None:
        """``pointer[index]`` read through a row pointer made before the loop (numbered by
        ``fresh``, written into ``before_loop``), where the loop is over one variable, the
        index moves along it by a constant step, and its other part divides or takes a
        remainder (module docstring)."""
        split = along(index, self.inner[0]) if len(self.inner) == 1 else None
        if split is None or not split[1].has(FloorDiv, ModularIndexing) or any(
                s.name.startswith("indirect") for s in index.free_symbols):
            return None
        step, offset = split
        if (pointer, offset) not in self.rows:
            row = self.rows[(pointer, offset)] = f"{pointer}_{fresh('row')}"
            before_loop.writeline(f"const auto {row} = {pointer} + ({cexpr(offset)});")
        return f"{self.rows[(pointer, offset)]}[{cexpr(step * self.inner[0])}]"
