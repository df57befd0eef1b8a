"""What every code generator shares (mirrors torch/_inductor/codegen/common.py: ``IndentedBuffer``,
``CSE``, ``Kernel``, and ``BaseScheduling`` in torch/_inductor/scheduler.py).

- ``BaseScheduling``: the interface a backend implements for one device type. The scheduler asks
  it whether two nodes may fuse (``can_fuse``: a backend may veto what the generic rules allow),
  hands it each loop kernel (``codegen_kernel``) and tells it when the graph is done (``flush``).
  Extern (library) calls are written by the wrapper itself: they are ATen calls on any device.
- ``KernelBodyHandler``: wraps a backend's ``ops`` handler while a kernel's members run. A value
  a member stores into a buffer that lives in the same kernel is *forwarded*: its readers get the
  value (a register, a tensor), not a load from memory. Fusion's promise that every such read is
  at the same point (or the same row) is what makes this right; a wrong fusion rule shows up as a
  wrong answer in the tests, whichever backend runs them.
- ``IndentedBuffer`` and ``CSE`` (``code_writer.py``): the kernel writer (lines, indentation,
  one temporary per distinct expression), shared by the loop-nest printer and the generators.
- ``KernelSignature``: the kernel's arguments, buffers first (inputs, then outputs), then sizes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sympy

from ..code_writer import CSE, IndentedBuffer  # noqa: F401  (the kernel writer, re-exported)
from ..kernel_group import KernelGroup, KernelMember
from ..sizevars import FloorDiv, ModularIndexing
from ..virtualized import set_ops_handler


class CodegenError(RuntimeError):
    """A backend could not produce a kernel (a construct it cannot write, a compiler that
    rejects the code); ``compile_fx`` then regenerates the graph with the reference backend."""


class BaseScheduling:
    """One backend for one device type (Inductor's ``BaseScheduling``)."""

    name = "base"
    max_parts = 1  # kernels one combo kernel may launch (``codegen_combo``)

    def __init__(self, options: Any) -> None:
        self.options = options  # the compile's InductorOptions (inductor/options.py)

    def can_fuse(self, a: Any, b: Any) -> tuple[bool, str]:
        """A backend's veto on a fusion the generic rules allow (``(True, "")``: no veto)."""
        return True, ""

    def codegen_kernel(self, group: KernelGroup, wrapper: Any) -> None:
        """Define a kernel for ``group`` and write the wrapper line that launches it."""
        raise NotImplementedError

    def combinable(self, group: KernelGroup, wrapper: Any) -> bool:
        """Whether ``group`` may be a part of a combo kernel (``codegen_combo``)."""
        return False

    def joins(self, run: list[KernelGroup], group: KernelGroup, wrapper: Any) -> bool:
        """Whether ``group`` may join ``run`` (each ``combinable``, all independent)."""
        return True

    def codegen_combo(self, groups: list[KernelGroup], wrapper: Any) -> None:
        """One kernel launching ``groups``, independent kernels each ``combinable``."""
        raise NotImplementedError

    def flush(self) -> None:
        """Called once after the last kernel of a graph (compile what was batched)."""


def same_code_key(source: str, name: str, comment: str, extra: str = "") -> str:
    """What makes two kernels of a graph the same, so that the second is a call of the first
    (Inductor's ``src_to_kernel``: an N-layer network compiles a few kernels, not N of each):
    their source without their names and the ``comment`` lines naming their buffers, and
    ``extra`` (what a kernel holds beside its source: its checks' error messages)."""
    code = [line for line in source.replace(name, "KERNEL").splitlines()
            if not line.lstrip().startswith(comment)]
    return "\n".join(code) + extra


@dataclass
class KernelSignature:
    """``kernel(in_ptr0, in_ptr1, out_ptr0, ks0)``: which buffers and sizes, in order."""

    inputs: list[str]
    outputs: list[str]
    sizes: list[sympy.Symbol]

    @classmethod
    def of(cls, group: KernelGroup) -> "KernelSignature":
        return cls(list(group.reads), list(group.stored), group.size_symbols())

    def buffers(self) -> list[str]:
        return self.inputs + self.outputs

    def call_args(self) -> list[str]:
        """Arguments as the wrapper passes them: buffer names, then size symbols."""
        return self.buffers() + [str(s) for s in self.sizes]


class KernelBodyHandler:
    """Forwards kernel-local values between members; everything else goes to ``inner``.

    ``scope`` holds the values stored so far in this kernel (by buffer name). A load of a buffer
    written in this kernel returns its value; when the value belongs to an earlier loop over the
    row (a looped reduction's phases), ``recompute`` re-emits the producer in the current loop.
    """

    def __init__(self, inner: Any, group: KernelGroup, scope: dict[str, Any],
                 member: KernelMember | None = None, store_to_memory: bool = True):
        self.inner, self.group, self.scope = inner, group, scope
        self.member, self.store_to_memory = member, store_to_memory
        self.written = set(group.written_names())
        self.stored = set(group.stored)

    def load(self, name: str, index: sympy.Expr) -> Any:
        if name not in self.written:
            return self.inner.load(name, index)
        if name not in self.scope:
            self.recompute(name)
        return self.scope[name]

    def store(self, name: str, index: sympy.Expr, value: Any, mode: str | None = None) -> None:
        self.scope[name] = value
        if name in self.stored and self.store_to_memory:
            self.inner.store(name, index, value, mode)

    def recompute(self, name: str) -> None:
        """Re-emit an element-level producer whose value lived in an earlier loop."""
        producer = self.group.member(name)
        if producer.level != "element" or producer.is_reduction():
            raise RuntimeError(f"{name} is read in kernel {self.group.position} before it is "
                               "computed: the fusion broke the kernel's order")
        handler = KernelBodyHandler(self.inner, self.group, self.scope, producer,
                                    store_to_memory=False)
        with set_ops_handler(handler):
            producer.emit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def emit_members(members: list[KernelMember], inner: Any, group: KernelGroup,
                 scope: dict[str, Any]) -> None:
    """Run each member's body under ``inner`` (a backend's handler), forwarding local values."""
    for member in members:
        with set_ops_handler(KernelBodyHandler(inner, group, scope, member)):
            member.emit()


# the loop variables of generated kernels (Triton's block indices, C++'s row loops); any other
# symbol in an index is a size
LOOP_VARIABLES = {"xindex", "rindex", "x0", "x1", "y0"}


def digit_sizes(indices: list[sympy.Expr], var: sympy.Symbol,
                strict: bool = True) -> list[int] | None:
    """The sizes at which the indices cut ``var`` into digits, sorted: ``var // 512`` and
    ``var % 512`` cut it at 512, ``ModularIndexing(var, 512, 7)`` at 512 and 3584. Across a
    stretch of ``var`` aligned on all of them every index moves by one fixed step (a loop
    boundary of the flat index: a row, a tile). ``strict``: None where ``var`` sits inside
    other arithmetic (``(var + 3) // 4``) or a size is symbolic; else such sizes are skipped."""
    sizes: set[int] = set()
    for index in indices:
        for digit in index.atoms(FloorDiv, ModularIndexing):
            if var not in digit.args[0].free_symbols:
                continue
            points = digit.args[1:2] if isinstance(digit, FloorDiv) else \
                (digit.args[1], digit.args[1] * digit.args[2])
            plain = digit.args[0] == var
            if strict and not (plain and all(p.is_Integer for p in points)):
                return None
            sizes.update(int(p) for p in points if plain and p.is_Integer and int(p) > 1)
    return sorted(sizes)


@functools.lru_cache(maxsize=1 << 14)
def local_stride(index: sympy.Expr, var: sympy.Symbol) -> int | None:
    """How far ``index`` moves when ``var`` steps from 0 to 1, the other kernel variables at 0
    (a modular index's stride at the start of its range); None if it is not a number.
    Remembered per (index, var): choosing a kernel's tile asks it of each access for each
    candidate split, and the kernel's reduction hint again."""
    zero, one = sympy.Integer(0), sympy.Integer(1)
    at = {s: zero for s in index.free_symbols if s.name in LOOP_VARIABLES
          or s.name.startswith("indirect")}
    step = index.xreplace({**at, var: one}) - index.xreplace(at)
    return int(step) if step.is_Integer else None  # (a size symbol's stride is not a number)


def nearer_along(index: sympy.Expr, outer: sympy.Symbol, inner: sympy.Symbol) -> bool:
    """Whether neighbouring ``outer`` positions are nearer in memory than neighbouring
    ``inner`` ones (``x.t()[::2]``: 2 elements apart against a row): an access that a loop
    nest reads better along its outer variable, the case for a 2-D tile."""
    so, si = local_stride(index, outer), local_stride(index, inner)
    return so is not None and so != 0 and (si is None or abs(so) < abs(si))
