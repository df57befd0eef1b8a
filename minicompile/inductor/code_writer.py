"""Writing code: lines with indentation, and one temporary per distinct expression (mirrors
``IndentedBuffer`` and ``CSE`` in torch/_inductor/codegen/common.py and torch/_inductor/utils.py).

Shared by everything that prints a loop body: the IR's loop-nest printer (``ir/printer.py``) and
the Triton and C++ kernel writers (``codegen/``).
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Protocol


class LineSink(Protocol):
    def writeline(self, line: str) -> None: ...


class IndentedBuffer:
    """Lines of generated code with an indentation level (Inductor's ``IndentedBuffer``)."""

    tabwidth = 4

    def __init__(self, initial_indent: int = 0):
        self.lines: list[str] = []
        self.level = initial_indent

    def writeline(self, line: str) -> None:
        self.lines.append(" " * (self.tabwidth * self.level) + line if line.strip() else "")

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.writeline(line)

    def splice(self, other: "IndentedBuffer") -> None:
        """Append ``other``'s lines at this buffer's indentation."""
        for line in other.lines:
            self.writeline(line)

    @contextlib.contextmanager
    def indent(self, offset: int = 1) -> Iterator[None]:
        self.level += offset
        try:
            yield
        finally:
            self.level -= offset

    def getvalue(self) -> str:
        return "\n".join(self.lines) + "\n"

    def __bool__(self) -> bool:
        return bool(self.lines)


class CSE:
    """One temporary per distinct expression: ``cse.generate(buf, "a + b")`` writes
    ``tmp3 = a + b`` into ``buf`` the first time and returns ``tmp3`` every time."""

    def __init__(self, prefix: str = "tmp", assign: str = "{name} = {expr}"):
        self.prefix, self.assign = prefix, assign
        self.cache: dict[str, str] = {}
        self.count = 0

    def newvar(self) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        return name

    def generate(self, buffer: LineSink, expr: str, **fmt: str) -> str:
        if expr in self.cache:
            return self.cache[expr]
        name = self.newvar()
        buffer.writeline(self.assign.format(name=name, expr=expr, **fmt))
        self.cache[expr] = name
        return name

    @contextlib.contextmanager
    def scoped(self) -> Iterator[None]:
        """Names made inside (a masked block, a loop) are forgotten after it."""
        saved = dict(self.cache)
        try:
            yield
        finally:
            self.cache = saved
