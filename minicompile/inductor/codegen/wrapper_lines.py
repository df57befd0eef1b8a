"""The wrapper program as typed lines (mirrors the ``WrapperLine`` classes of
torch/_inductor/codegen/wrapper.py: ``AllocateLine``, ``ReuseLine``, ``FreeIfNotReusedLine``,
``KernelCallLine``, ``ExternKernelOutLine``).

``WrapperCodeGen`` appends one object per line; the program a person reads
(``MINICOMPILE_LOGS=output_code``) is their ``text()``, indented. A stage after code generation
can read what the program does without parsing it::

    [l.name for l in compiled.wrapper_lines if isinstance(l, AllocateLine)]   # buffers made
    [l.kernel for l in compiled.wrapper_lines if isinstance(l, KernelCallLine)]
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WrapperLine:
    """One line of ``def call(args)``; ``level``: its indentation (1 inside the function)."""

    level: int = field(default=1, init=False)

    def text(self) -> str:
        raise NotImplementedError


@dataclass
class CodeLine(WrapperLine):
    """Any other line: unpacking the inputs, a size read off one, a layout check, a region."""

    code: str

    def text(self) -> str:
        return self.code


@dataclass
class AllocateLine(WrapperLine):
    """``buf0 = empty_strided(size, stride, ...)``, or a flat ``empty`` for a buffer that
    starts inside its storage."""

    name: str
    call: str  # "empty_strided((8, 4), (4, 1), dtype=..., device=cuda0)"

    def text(self) -> str:
        return f"{self.name} = {self.call}"


@dataclass
class ReuseLine(WrapperLine):
    """``buf3 = buf1`` taking over a storage: a dead buffer's (``del`` it), a donor a kernel
    writes in place, or an input written in place."""

    name: str
    old: str
    why: str  # the comment: "reuse", "in place: this kernel reads buf1 last", ...
    delete_old: bool = False

    def text(self) -> str:
        delete = f"; del {self.old}" if self.delete_old else ""
        return f"{self.name} = {self.old}{delete}  # {self.why}"


@dataclass
class KernelCallLine(WrapperLine):
    """A generated kernel launched: ``triton_poi_fused_add_0(arg0_1, buf0, 1024)``."""

    kernel: str
    args: list[str]

    def text(self) -> str:
        return f"{self.kernel}({', '.join(self.args)})"


@dataclass
class ExternCallLine(WrapperLine):
    """A library call, or one output of a multi-output one: ``buf1 = torch.mm(...)``."""

    name: str
    value: str

    def text(self) -> str:
        return f"{self.name} = {self.value}"


@dataclass
class FreeLine(WrapperLine):
    """``del buf0``: its last reader has run (the storage goes back to the allocator, unless a
    later buffer took it over)."""

    name: str

    def text(self) -> str:
        return f"del {self.name}"


@dataclass
class ReturnLine(WrapperLine):
    values: list[str]

    def text(self) -> str:
        return f"return ({', '.join(self.values)}{',' if len(self.values) == 1 else ''})"


class WrapperBody:
    """The lines of ``call``, with the indentation a region (``try:``) opens."""

    def __init__(self) -> None:
        self.lines: list[WrapperLine] = []
        self.level = 1

    def append(self, line: WrapperLine) -> None:
        line.level = self.level
        self.lines.append(line)

    def writeline(self, code: str) -> None:
        self.append(CodeLine(code))

    def getvalue(self) -> str:
        return "".join(f"{'    ' * line.level}{line.text()}\n" for line in self.lines)
