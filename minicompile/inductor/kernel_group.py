"""One scheduled kernel as an object: what every code generator starts from (mirrors the
``group`` of a scheduler node, ``(device, (numel, rnumel))``, in torch/_inductor/scheduler.py, and
the range splitting of ``SIMDKernel.split_and_set_ranges`` in torch/_inductor/codegen/simd.py).

The scheduler decides which loop nests share a kernel; a ``KernelGroup`` records that decision
once, so that no backend recomputes it:

- the **tile** ``(numel, rnumel)``: a pointwise kernel runs ``numel`` points; a reduction kernel
  runs ``numel`` rows of ``rnumel`` elements each;
- each **member** (a ``ComputedBuffer``) with its loop variables written in the kernel's own two
  variables ``xindex`` (which row, or which point) and ``rindex`` (which element of the row).
  A member over ``numel * rnumel`` points, in its (possibly reordered) loop order, is cut into
  rows: its flat position is ``xindex * rnumel + rindex``. A member over ``numel`` points runs
  once per row (``level == "row"``: an epilogue on reduced values);
- which buffers it **stores** (someone outside reads them) and which stay **local** (they exist
  only as values inside the kernel: fusion's saving), and which it **reads** from memory;
- for reduction kernels, its **phases**: a run of element-level members is one loop over the
  row (``for rindex``); a member that needs a reduction of the same run starts a new loop, after
  the reduction has finished (softmax with long rows: max, then sum of exp, then divide).

Code generators iterate over the members (or phases) and run each member's body under their ops
handler with ``member.emit()``; ``codegen/common.py`` forwards a local value from its producer to
its readers instead of going through memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sympy
import torch

from .ir import ComputedBuffer, ExternKernel, MultiOutput
from .sizevars import Expr, FloorDiv, ModularIndexing, same, simplify_index

if TYPE_CHECKING:
    from .scheduler import BaseSchedulerNode, Scheduler

XINDEX = sympy.Symbol("xindex", integer=True, nonnegative=True)
RINDEX = sympy.Symbol("rindex", integer=True, nonnegative=True)


def split_flat(flat: Expr, sizes: list[Expr], var_ranges: dict) -> list[Expr]:
    """The loop variables (outermost first) of a loop nest over ``sizes`` at flat, row-major
    position ``flat``: the innermost is ``flat % size``, the next ``flat // size % size'``..."""
    out: list[Expr] = []
    stride = sympy.Integer(1)
    for k, size in reversed(list(enumerate(sizes))):
        if size == 1:
            out.append(sympy.Integer(0))
        elif all(s == 1 for s in sizes[:k]):  # the outermost loop of size > 1: no modulo
            out.append(FloorDiv(flat, stride))
        else:
            out.append(ModularIndexing(flat, stride, size))
        stride = stride * size
    return [simplify_index(e, var_ranges) for e in reversed(out)]


@dataclass(eq=False)
class KernelMember:
    """A loop nest inside a kernel, its loop variables written in ``xindex``/``rindex``."""

    node: ComputedBuffer
    level: str  # "element": runs at every (xindex, rindex); "row": once per xindex
    index: list[Expr]  # the node's pointwise loop variables (i0, i1, ...), in kernel variables
    rindex: list[Expr]  # its reduction loop variables (r0, ...), in kernel variables

    def get_name(self) -> str:
        return self.node.get_name()

    def is_reduction(self) -> bool:
        return self.node.is_reduction()

    def emit(self) -> Any:
        """Run the body once under the installed ``ops`` handler, in kernel variables."""
        return self.node.store_output(self.index, self.rindex)

    def read_names(self) -> set[str]:
        return self.node.get_read_writes().read_names()

    def __repr__(self) -> str:
        loops = ", ".join(f"{v}={e}" for v, e in zip(self.node.index_vars()[0], self.index))
        return f"{self.get_name()} ({self.level}: {loops})"


@dataclass(eq=False)
class Phase:
    """``kind == "loop"``: members run inside one ``for rindex`` loop; ``"row"``: once per row."""

    kind: str
    members: list[KernelMember] = field(default_factory=list)


@dataclass(eq=False)
class KernelGroup:
    position: int  # place in the schedule
    kind: str  # "pointwise", "reduction", "extern" (a library call) or "nop" (names a part)
    device: torch.device
    numel: Expr
    rnumel: Expr
    members: list[KernelMember]
    stored: list[str]  # buffers written to memory
    local: list[str]  # buffers that exist only inside the kernel
    reads: list[str]  # buffers read from memory, first read first
    read_bytes: Expr
    write_bytes: Expr
    origins: list[str]  # the ATen ops fused here, for the kernel's name
    extern: ExternKernel | MultiOutput | None = None
    # members of a column kernel riding along this row kernel's rows (``codegen/cpp_riders.py``)
    riders: list[KernelMember] = field(default_factory=list)

    def var_ranges(self) -> dict[sympy.Symbol, Expr]:
        return {XINDEX: self.numel, RINDEX: self.rnumel}

    def is_loop_kernel(self) -> bool:
        return self.kind in ("pointwise", "reduction")

    def written_names(self) -> list[str]:
        return [m.get_name() for m in self.members]

    def member(self, name: str) -> KernelMember:
        return next(m for m in self.members if m.get_name() == name)

    def fused_name(self) -> str:
        """``fused_add_mul_sin`` (Inductor's ``get_fused_kernel_name`` with ``original_aten``)."""
        return "fused_" + "_".join(self.origins[:6]) if self.origins else "fused"

    def size_symbols(self) -> list[sympy.Symbol]:
        """Size symbols (``s0``) the kernel's loops or indices use: kernel arguments."""
        syms = set(sympy.sympify(self.numel).free_symbols) | set(
            sympy.sympify(self.rnumel).free_symbols)
        for m in self.members + self.riders:
            loop_vars = set(m.node.var_ranges())
            rw = m.node.get_read_writes()
            for dep in rw.reads + rw.writes:
                index = getattr(dep, "index", None)
                if index is not None:
                    syms |= sympy.sympify(index).free_symbols - loop_vars
            syms |= rw.symbols - loop_vars  # x * n: index_expr(s0)
            syms |= {s for size in m.node.var_ranges().values()
                     for s in sympy.sympify(size).free_symbols}
        syms = {s for s in syms if not str(s).startswith(("indirect", "tmp"))}
        return sorted(syms, key=str)

    def phases(self) -> list[Phase]:
        """Members grouped into loops over the row and per-row code. Each member joins the
        first phase of its kind that comes after what it reads: a loop after the loop whose
        reduction it reads (or the per-row code it reads), per-row code after the loop of the
        reductions it reads. So independent reductions of one row share one loop, wherever
        the program put them: ``x.mean(1) + x.amax(1)`` is one pass over the row, though the
        mean's division, per-row code, comes between the two in program order."""
        phases: list[Phase] = []
        placed: dict[str, int] = {}  # member -> its phase
        by_name = {m.get_name(): m for m in self.members}
        read, written = set(), set()  # by the members placed: buffers read, written in place
        for m in self.members:
            level = "loop" if m.level == "element" else "row"
            reads, writes = m.read_names(), set(m.node.get_mutation_names())
            # a write in place keeps its place in the program among what touches that buffer
            first = max(len(phases) - 1, 0) if writes & (read | written) or reads & written else 0
            read, written = read | reads, written | writes
            for name in reads & placed.keys():
                p, dep = placed[name], by_name[name]
                # a loop reads a row's reduction (not a scan: its values are per element) or
                # row code only after them; code in the same phase before it, in that phase
                after = phases[p].kind != level or (dep.is_reduction() and not dep.node.is_scan())
                first = max(first, p + after)
            k = next((k for k in range(first, len(phases)) if phases[k].kind == level), None)
            if k is None:
                k = len(phases)
                phases.append(Phase(level))
            phases[k].members.append(m)
            placed[m.get_name()] = k
        return phases

    def describe(self) -> str:
        head = f"kernel {self.position} ({self.kind}, {self.numel} x {self.rnumel})"
        return (f"{head}: stores {self.stored}, keeps {self.local}, reads {self.reads}\n"
                + "\n".join(f"  {m!r}" for m in self.members))


def _member(snode: "BaseSchedulerNode", numel: Expr, rnumel: Expr,
            in_reduction: bool) -> KernelMember:
    """``snode``'s loop variables in kernel variables, and whether it runs per element or per
    row. A member over ``numel`` points (or a reduction's own rows) indexes by ``xindex``; one over
    ``numel * rnumel`` points is cut into rows: flat position ``xindex * rnumel + rindex``."""
    node: ComputedBuffer = snode.node
    ranges = {XINDEX: numel, RINDEX: rnumel}
    index_vars, rvars = node.index_vars()
    var_size = node.var_ranges()
    order = snode.loop_order()  # pointwise loops, outermost first
    if node.is_reduction() or same(snode.numel, numel):
        flat = XINDEX
        level = "row" if in_reduction and not node.is_reduction() else "element"
    else:
        flat, level = XINDEX * rnumel + RINDEX, "element"
    by_var = dict(zip(order, split_flat(flat, [var_size[v] for v in order], ranges)))
    rindex = split_flat(RINDEX, [var_size[v] for v in rvars], ranges) if rvars else []
    return KernelMember(node, level, [by_var[v] for v in index_vars], rindex)


def _device(node: ExternKernel | MultiOutput) -> torch.device:
    """A library call's device: its output's, or (several outputs) its first input's."""
    if node.layout is not None:
        return node.get_device()
    inputs = node.inputs() if isinstance(node, ExternKernel) else [node.parent]
    return next((i.get_device() for i in inputs if getattr(i, "layout", None) is not None),
                torch.device("cpu"))


def build_kernel_group(scheduler: "Scheduler", snode: "BaseSchedulerNode",
                       position: int) -> KernelGroup:
    """The kernel object for one scheduled kernel (fused or not)."""
    read_bytes, write_bytes = scheduler.kernel_bytes(snode)
    stored = scheduler.stored_buffers(snode)
    nodes = snode.get_nodes()
    if snode.is_extern():
        node = snode.node
        kind = "nop" if isinstance(node, MultiOutput) else "extern"
        return KernelGroup(position, kind, _device(node), sympy.Integer(0), sympy.Integer(0),
                           [], stored, [], sorted(snode.read_names()), read_bytes, write_bytes,
                           sorted(getattr(node, "origins", ())), extern=node)
    reductions = [n for n in nodes if n.is_reduction()]
    numel = reductions[0].numel if reductions else nodes[0].numel
    rnumel = reductions[0].rnumel if reductions else sympy.Integer(1)
    members = [_member(n, numel, rnumel, bool(reductions)) for n in nodes]
    written = {m.get_name() for m in members}
    reads: list[str] = []
    for m in members:
        for dep in m.node.get_read_writes().reads:
            if dep.name not in written and dep.name not in reads:
                reads.append(dep.name)
    origins = sorted({o for n in nodes for o in getattr(n.node, "origins", ())})
    return KernelGroup(position, "reduction" if reductions else "pointwise",
                       nodes[0].node.get_device(), numel, rnumel, members, stored,
                       [m.get_name() for m in members if m.get_name() not in stored], reads,
                       read_bytes, write_bytes, origins)
