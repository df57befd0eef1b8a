"""Column reductions riding along a row kernel (C++ only; no counterpart in torch/_inductor,
whose C++ kernels keep the two apart: ATen's CPU layer-norm backward,
aten/src/ATen/native/cpu/layer_norm_kernel.cpp, does the same by hand).

A layer norm's backward is two kernels: along the rows, the input's gradient (it reads ``grad``
and ``x`` row by row); down the columns, the weight's and the bias's gradients (``sum(grad *
xhat, 0)``, ``sum(grad, 0)``: they read ``grad`` and ``x`` again). The scheduler keeps them
apart, because one loop nest runs one way (``fusion._reductions_run_one_way``). But on a CPU a
sum down the columns can run along the rows too, if each thread keeps a whole row of partial
sums: while its rows go by, it adds each element into the partial of its column, and after the
parallel loop the threads' partials are added up, column by column. The second kernel's reads
(two full matrices) are gone:

    std::unique_ptr<double[]> acc2_part(new double[num_threads * rnumel]);  // a row a thread
    std::fill_n(acc2_part.get(), num_threads * rnumel, double(0));
    #pragma omp parallel num_threads(num_threads) if(...)
    {
        double* acc2_col = acc2_part.get() + omp_get_thread_num() * rnumel;
        #pragma omp for
        for (int64_t xindex = 0; xindex < xnumel; xindex++)
        {
            ...                                           // the row kernel's phases, and in its
            for (int64_t rindex = 0; rindex < rnumel; rindex++)  // last loop over the row:
                acc2_col[rindex] = acc2_col[rindex] + tmp9;      // grad * xhat, already loaded
        }
    }
    for (int64_t rindex = 0; rindex < rnumel; rindex++)          // then, column by column:
    {
        double acc2 = 0;
        for (int64_t t = 0; t < num_threads; t++) acc2 = acc2 + acc2_part[t * rnumel + rindex];
        out_ptr1[rindex] = static_cast<float>(acc2);
    }

``Scheduler.kernel_runs`` offers consecutive independent kernels to the backend as a run
(``joins``); here a run is a row kernel and a column kernel over the same points, transposed,
whose every full read the row kernel also makes (``ridden_by``). The column kernel's members are
written in the row kernel's variables (``xindex`` and ``rindex`` swapped) and emitted in its
last loop over the row, under the same common-subexpression scope: their loads are the row
kernel's own. A float32 sum keeps double partials, as the column strategy of ``cpp.py`` does.
Where the row kernel takes another strategy (a column or scan loop order, split rows, float16
blocks), the two kernels are written apart, as before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import sympy
import torch

from ..kernel_group import RINDEX, XINDEX, KernelGroup, KernelMember
from ..sizevars import same, simplify_index
from .common import CodegenError, IndentedBuffer, emit_members
from .cpp_loops import renamed_accumulators

RIDING_REDUCTIONS = ("sum", "prod", "max", "min", "any")  # partials combine by their own update
HALF = (torch.float16, torch.bfloat16)


def _swap(e: sympy.Expr) -> sympy.Expr:
    return sympy.sympify(e).subs({XINDEX: RINDEX, RINDEX: XINDEX}, simultaneous=True)


def transposed(m: KernelMember) -> KernelMember:
    """``m`` of a column kernel, written in a row kernel's variables (its row is the row
    kernel's ``rindex``, its element within the column the row kernel's ``xindex``)."""
    return KernelMember(m.node, "element", [_swap(e) for e in m.index],
                        [_swap(e) for e in m.rindex])


def full_reads(group: KernelGroup, members: list[KernelMember]) -> dict[str, set]:
    """Buffer -> the indices (in kernel variables) at which ``members`` read it at every point
    (the index moves with both ``xindex`` and ``rindex``), buffers written in the kernel aside."""
    written = set(group.written_names())
    ranges = group.var_ranges()
    reads: dict[str, set] = {}
    for m in members:
        index_vars, rvars = m.node.index_vars()
        subs = {**dict(zip(index_vars, m.index)), **dict(zip(rvars, m.rindex))}
        for dep in m.node.get_read_writes().reads:
            index = getattr(dep, "index", None)
            if dep.name in written or index is None:
                continue
            index = simplify_index(sympy.sympify(index).subs(subs, simultaneous=True), ranges)
            if {XINDEX, RINDEX} <= index.free_symbols:
                reads.setdefault(dep.name, set()).add(index)
    return reads


def ridden_by(row: KernelGroup, column: KernelGroup, dtypes: dict) -> list[KernelMember] | None:
    """The column kernel's members in the row kernel's variables, where they may ride along
    it; else None. The row kernel must run along rows that are the column kernel's columns
    (its tile transposed), neither may scan or write in place, the column kernel be one loop of
    plain reductions (and the values they reduce), every buffer it reads in full be read by the
    row kernel at the same elements, consecutive along the row, and no buffer be 16-bit."""
    if not (row.kind == column.kind == "reduction" and same(row.numel, column.rnumel)
            and same(row.rnumel, column.numel) and not same(row.numel, 1)
            and not same(column.numel, 1)):
        return None
    members = row.members + column.members
    if any(m.node.is_scan() or m.node.get_mutation_names() for m in members) or \
            any(d in HALF for d in dtypes.values()):
        return None
    if len(column.phases()) != 1 or any(
            m.is_reduction() and m.node.data.reduction_type not in RIDING_REDUCTIONS
            for m in column.members):
        return None
    riders = [transposed(m) for m in column.members]
    theirs, ours = full_reads(row, riders), full_reads(row, row.members)
    if not theirs or any(not indices <= ours.get(name, set()) for name, indices in theirs.items()):
        return None
    along_rows = all(sympy.diff(i, RINDEX) == 1 for indices in theirs.values() for i in indices)
    return riders if along_rows else None


def riding_group(row: KernelGroup, column: KernelGroup, riders: list[KernelMember]) -> KernelGroup:
    """One kernel: the row kernel, with the column kernel's members riding along it."""
    extra = [n for n in column.reads if n not in row.reads]
    # the column kernel's full reads are the row kernel's; other reads (per row) it may add
    return dataclasses.replace(
        row, riders=riders, stored=row.stored + column.stored, local=row.local + column.local,
        reads=row.reads + extra, read_bytes=row.read_bytes + (column.read_bytes if extra else 0),
        write_bytes=row.write_bytes + column.write_bytes,
        origins=sorted(set(row.origins) | set(column.origins)))


@dataclass
class Riders:
    """The riders' code, cut out of the loop they were emitted in: their accumulators become
    per-thread rows of partials (``{acc}_col[rindex]`` in the loop), and what their kernel did
    after its loop (read-outs, stores) runs per column once the partials are combined."""

    accumulators: list  # cpp_ops.Accumulator
    after: list[str]  # per column, with ``rindex`` the column and each ``{acc}`` its total

    def partial_type(self, acc) -> str:
        return "double" if acc.ctype == "float" and acc.kind.omp == "+" else acc.ctype


def emit(kernel: Any, scope: dict) -> Riders:
    """Emit the riders into the loop ``kernel.ops`` is writing (the row kernel's last loop over
    the row, its values in ``scope``), and take their accumulators' code out of it again."""
    ops, code = kernel.ops, kernel.ops.code
    marks = len(code.accumulators), len(code.prefix.lines), len(code.suffix.lines)
    reductions, ops.reductions = ops.reductions, {}  # (never the row kernel's own sums)
    emit_members(kernel.group.riders, ops, kernel.group, scope)
    ops.reductions = reductions
    accs = code.accumulators[marks[0]:]
    del code.accumulators[marks[0]:], code.prefix.lines[marks[1]:]
    after = code.suffix.lines[marks[2]:]
    del code.suffix.lines[marks[2]:]
    if not accs:
        raise CodegenError("the column kernel's members made no accumulator")
    code.body.lines = renamed_accumulators(code.body, accs, "{}_col[rindex]")
    return Riders(accs, after)


def write_rows(code: IndentedBuffer, riders: Riders, condition: str, rows: IndentedBuffer) -> None:
    """The loop over the rows (``rows``, without its ``omp parallel for``) as a parallel region
    whose threads each add into their own row of partials (zeroed first), sharing the loop with
    ``omp for``; then per column the threads' partials combined, in thread order (the same
    total for the same number of threads), and the column kernel's read-outs and stores."""
    for a in riders.accumulators:
        t = riders.partial_type(a)
        code.writeline(f"std::unique_ptr<{t}[]> {a.name}_part(new {t}[num_threads * rnumel]);")
        code.writeline(f"std::fill_n({a.name}_part.get(), num_threads * rnumel, "
                       f"{t}({a.kind.init.format(t=t)}));")
    code.writeline(f"#pragma omp parallel num_threads(num_threads) if({condition})")
    code.writeline("{")
    with code.indent():
        for a in riders.accumulators:
            code.writeline(f"{riders.partial_type(a)}* {a.name}_col = {a.name}_part.get() + "
                           "omp_get_thread_num() * rnumel;  // this thread's partials")
        code.writeline("#pragma omp for")
        code.splice(rows)
    code.writeline("}")
    code.writeline("// the column reductions: each thread's partials, combined in thread order")
    code.writeline("for (int64_t rindex = 0; rindex < rnumel; rindex++)")
    code.writeline("{")
    with code.indent():
        for a in riders.accumulators:
            t = riders.partial_type(a)
            code.writeline(f"{t} {a.name} = {a.name}_part[rindex];")
            update = a.kind.update.format(acc=a.name, value=f"{a.name}_part[t * rnumel + rindex]",
                                          t=t, rindex="rindex")
            code.writeline(f"for (int64_t t = 1; t < num_threads; t++) {a.name} = {update};")
        code.writelines(riders.after)
    code.writeline("}")
