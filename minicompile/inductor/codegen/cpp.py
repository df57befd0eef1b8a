"""The C++/OpenMP backend: one loop nest per kernel, compiled with ``g++ -fopenmp`` (mini
version of torch/_inductor/codegen/cpp.py, ``CppScheduling`` and ``CppKernel``).

A pointwise kernel splits its ``xnumel`` points into blocks: the blocks are shared among threads
(``#pragma omp parallel for``) and each block is one vectorisable inner loop (``#pragma omp
simd``), short enough to stay in cache, long enough to amortise the loop overhead:

    #pragma omp parallel for num_threads(num_threads) if(xnumel >= 5958)
    for (int64_t xblock = 0; xblock < xnumel; xblock += 1024)
        #pragma omp simd
        for (int64_t xindex = xblock; xindex < std::min(xblock + 1024, xnumel); xindex++)
            out_ptr0[xindex] = std::sin(in_ptr0[xindex]) * 2;

Where a load's index cuts ``xindex`` into digits (``bias[xindex % 1024]``, a broadcast over
rows; ``mean[xindex / 1024]``, one value per row) the points are looped over as rows instead,
``xindex = x0 + 1024*x1``: the index simplifies to ``bias[x0]``, consecutive (one vector load;
in the flat loop it is a gather, element by element) or ``mean[x1]``, fixed along the row:

    #pragma omp parallel for num_threads(num_threads) if(xnumel >= 16384)
    for (int64_t x1 = 0; x1 < 64; x1++)
        #pragma omp simd
        for (int64_t x0 = 0; x0 < 1024; x0++)
            out_ptr0[x0 + 1024*x1] = in_ptr0[x0 + 1024*x1] + in_ptr1[x0];

(``cpp_loops.py`` decides which loop order a kernel gets; reductions down columns, a bias
gradient, loop over ``rindex`` outside and a tile of rows inside, for the same reason.)

A reduction kernel gives each thread whole rows (``omp parallel for`` over ``xindex``), so every
accumulator is a local variable of one thread: no atomics, no locks. Within a row the kernel's
phases (``KernelGroup.phases``) run in order: a loop over the row (``for rindex``) for each run
of element-level members, per-row code between (the epilogue that stores a reduced value):

    for (int64_t xindex ...)                     // rows, in parallel
        float acc0 = -inf;                        // the max of the row
        #pragma omp simd reduction(mc_max:acc0)
        for (int64_t rindex ...)  acc0 = mc::maximum(acc0, in_ptr0[...]);
        float acc1 = 0;                           // then the sum of exp(x - max)
        #pragma omp simd reduction(+:acc1)
        for (int64_t rindex ...)  acc1 = acc1 + mc::exp(in_ptr0[...] - acc0);
        for (int64_t rindex ...)  out_ptr0[...] = mc::exp(in_ptr0[...] - acc0) / acc1;

A later loop recomputes the element values it needs, except the math library calls an earlier
loop made: that loop keeps them in an output row, and the later one loads them back (softmax
computes each exp once: ``cpp_keep.py``; a 16-bit softmax, whose output would round the exp,
in a float row of the kernel's own).

Where a load's index cuts ``rindex`` into digits (``x.sum((0, 2))`` reads
``x[rindex / 512, xindex, rindex % 512]``) each loop over the row is a loop over runs ``r1`` of
consecutive elements ``r0`` (``cpp_loops.split_row_loop``), as a pointwise kernel loops over rows.

A float16 row the loop reads or writes at consecutive points is converted to float before the
loop and back after it, a vector at a time (``cpp_blocks.py``: g++ vectorises no float16
conversion of its own; x86's F16C converts 8 lanes an instruction).

Vectorisation is asked of the compiler with ``#pragma omp simd`` (not written with intrinsics,
as Inductor's ``CppVecKernel`` does): the loop stays one readable scalar body, and an explicit
``reduction(op:acc)`` clause is what lets ``g++`` keep one partial sum per vector lane (it may
not reorder a float sum on its own, and without the clause the row loop stays scalar). max/min
use NaN-propagating reductions declared in ``cpp_prefix.h`` (the built-in ``max`` drops NaNs).
argmax/argmin have no clause either: they keep a value and a position per vector lane
(``cpp_loops.lanes_loop``); Welford's loops are plain loops.

A single-row reduction (``xnumel == 1``: ``x.sum()``) has no rows to share, so its loops are
parallel over ``rindex`` instead: one partial accumulator per thread, combined after the loop by
OpenMP's ``reduction`` clause (sum, prod, any, max, min) or, for argmax and Welford, by hand
from an array of per-thread partials, in thread order (the first maximum still wins).

Sizes are ``int64_t`` arguments (one compiled kernel serves every size of a dynamic graph) and
the thread count is the last argument, read from ``torch.get_num_threads()`` at every call.
The ``if(...)`` of each ``parallel for`` wakes the threads only for enough work: the number is
``PARALLEL_MIN_WORK`` operations over the kernel's operations a point (``parallel_threshold``:
5958 points of ``sin(x) * 2``, whose ``sin`` is a library call; 16384 of ``x + bias``).
"""

from __future__ import annotations

from typing import Any

import sympy
import torch

from ..checks import Check
from ..dependencies import reduction_direction, runs_along_rows
from ..kernel_group import RINDEX, XINDEX, KernelGroup, KernelMember
from ..sizevars import FloorDiv, ModularIndexing
from . import cpp_build, cpp_loops, cpp_riders
from .common import (BaseScheduling, CodegenError, IndentedBuffer, KernelSignature,
                     emit_members, same_code_key)
from .cpp_blocks import MAX_BLOCK, STORE_BLOCK_DTYPES, VectorBlock
from .cpp_hoist import LoopInvariants
from .cpp_keep import KeptValues, drop_unused_temporaries
from .cpp_loops import (R0, R1, SCAN_ROWS, TILE, X0, X1, XTILE, column_tile,
                        is_column_reduction, is_row_scan, lanes_loop, parallel_threshold,
                        row_length, simd_clauses, split_row_loop, transposed_read)
from .cpp_masks import row_segments
from .cpp_math import vector_math_lines
from .cpp_ops import DTYPES, CppOpsHandler, LoopCode, cexpr, storage_type

XBLOCK = 1024  # points per inner (vectorised) loop of a pointwise kernel
XBLOCK_START = sympy.Symbol("xblock", integer=True, nonnegative=True)  # its first point


class CppKernel:
    """One generated kernel: its C++ source, and once built, ``kernel(*buffers, *sizes)``."""

    def __init__(self, group: KernelGroup, name: str, dtypes: dict[str, torch.dtype],
                 options: Any):
        self.group, self.name, self.options = group, name, options  # InductorOptions
        self.signature = KernelSignature.of(group)
        unsupported = {n: d for n, d in dtypes.items() if d not in DTYPES}
        if unsupported:
            raise CodegenError(f"kernel {name}: no C++ type for {unsupported}")
        self.dtypes = dtypes
        self.pointers = {n: f"in_ptr{i}" for i, n in enumerate(self.signature.inputs)}
        self.pointers.update({n: f"out_ptr{i}" for i, n in enumerate(self.signature.outputs)})
        self.values = KeptValues(group)
        self.checks: list[Check] = []  # the run-time checks the body makes (checks.py)
        self.riders: cpp_riders.Riders | None = None  # column reductions along the rows
        self.ops = CppOpsHandler(self.pointers, dtypes, group.var_ranges(), self.values,
                                 self.checks)
        self.source = self.codegen()
        self.command = " ".join(cpp_build.command(f"{name}.cpp", f"{name}.so", options.cpp_vectorize))
        self._fn = None

    # --- the source ---------------------------------------------------------------------------
    def arguments(self) -> list[str]:
        args = [f"const {storage_type(self.dtypes[n])}* {self.pointers[n]}"
                for n in self.signature.inputs]
        args += [f"{storage_type(self.dtypes[n])}* {self.pointers[n]}"
                 for n in self.signature.outputs]
        return args + [f"int64_t {s}" for s in self.signature.sizes] + ["int64_t num_threads"]

    def header(self) -> list[str]:
        """Inductor's kernel comment: what is fused, which argument is which, the traffic."""
        g = self.group
        members = ", ".join(member_label(m) for m in g.members) + (
            f"; riding along the rows: {', '.join(member_label(m) for m in g.riders)}"
            if g.riders else "")
        args = ", ".join(f"{self.pointers[n]}={n}" for n in self.signature.buffers())
        return [f"// {self.name}: {g.kind} kernel, {g.numel} x {g.rnumel}",
                f"// fused nodes: {members}" + (f"; local: {', '.join(g.local)}" if g.local else ""),
                f"// arguments: {args}",
                f"// bytes: read {g.read_bytes}, written {g.write_bytes}",
                f"// built with: {' '.join(cpp_build.command('<source>', '<object>', self.options.cpp_vectorize))}"]

    def codegen(self) -> str:
        loops = IndentedBuffer()
        loops.writeline(f"const int64_t xnumel = {cexpr(self.group.numel)};")
        if self.group.kind == "pointwise":
            self.pointwise_loops(loops)
        else:
            loops.writeline(f"const int64_t rnumel = {cexpr(self.group.rnumel)};")
            if sympy.sympify(self.group.numel) == 1 and not self.scans():
                self.single_row_reduction(loops)
            else:
                self.row_reductions(loops)
        code = IndentedBuffer()
        code.writeline("")
        code.writelines(self.header())
        # a kernel that checks returns whether a check failed (the caller raises eager's error)
        result = "int64_t" if self.checks else "void"
        code.writeline(f'extern "C" {result} {self.name}({", ".join(self.arguments())})')
        code.writeline("{")
        with code.indent():
            if self.checks:
                sites = ", ".join(f"{n}: {c.kind}" for n, c in enumerate(self.checks))
                code.writeline(f"mc::KernelError error;  // the first failed check ({sites})")
                code.writelines(self.empty_dim_checks())
            code.splice(loops)
            if self.checks:
                code.writeline("return error.finish();")
        code.writeline("}")
        code.lines = drop_unused_temporaries(code.lines)
        body = code.getvalue()
        # the vector math functions the body calls are defined after the header (cpp_prefix.h)
        return "\n".join(['#include "cpp_prefix.h"',
                          *vector_math_lines(body, cpp_build.LIBMVEC_LEVEL)]) + "\n" + body

    def scans(self) -> bool:
        """Does the kernel scan? A scan's row runs in order: one row is one thread's work,
        never split among threads as a one-row reduction's is."""
        return any(m.node.is_scan() for m in self.group.members)

    def empty_dim_checks(self) -> list[str]:
        """An indexed dimension of size 0 has no element to read: a failed check can't fall
        back to index 0 (it reads outside the tensor). Any index into it is eager's error, so
        the kernel fails before its loops whenever it has work to do."""
        work = " * ".join(f"({cexpr(n)})" for n in (self.group.numel, self.group.rnumel)
                          if sympy.sympify(n) != 1) or "1"
        return [f"if (({cexpr(size)}) <= 0 && {work} > 0) {{ mc::fail(error, {site}, 0, "
                f"{cexpr(size)}); return error.finish(); }}  // an empty dim: nothing to index"
                for site, size in self.ops.dim_sizes if not sympy.sympify(size).is_positive]

    def emit(self, members: list[KernelMember], scope: dict[str, Any],
             position: int | None = None) -> LoopCode:
        """Run ``members`` under the C++ ops handler: the lines of one loop body (the loop over
        the row of phase ``position``, if any) or of per-row code."""
        self.ops.code, self.ops.scope = LoopCode(), scope
        inner = ((X0 if self.ops.index_subs else XINDEX,) if self.group.kind == "pointwise"
                 else () if position is None else self.row_vars())
        # the loops' variables (per-row code: no loop); none where a loop runs no times: a value
        # read before it could be read from an empty tensor (a sum over a (3, 0) tensor reads
        # ``in_ptr0[0]``, the index of a view of it folded to 0 by ``x // 0``)
        empty = any(self.ops.var_ranges.get(v, 1) == 0 for v in inner)
        self.ops.invariants = LoopInvariants(*(() if empty else inner))
        self.values.start(position, None if position is None else self.ops.code)
        emit_members(members, self.ops, self.group, scope)
        return self.ops.code

    def pointwise_loops(self, code: IndentedBuffer) -> None:
        self.ops.block = self.vector_block(XINDEX, XBLOCK_START, "xend - xblock", XBLOCK)
        with self.ops.cse.scoped():
            body = self.emit(self.group.members, {})
        row = row_length(self.ops.simplified, self.group.numel) \
            if self.options.cpp_row_loops else None
        if row is not None:  # rows of `row` points: x0 along a row, x1 the row
            body = self.emit_rows(row)
            if transposed_read(self.ops.simplified) and \
                    row_segments(self.ops.mask_bounds.at.get(X0, ()), row) == [(0, row)]:
                body = self.emit_rows(row, tiled=True)
                self.tiled_loops(code, row, body)
                return
            if self.ops.adds_into_shared and not self.ops.adds_may_collide and \
                    self.ops.rows_apart and self.options.cpp_vectorize and not body.converts_in \
                    and row_segments(self.ops.mask_bounds.at.get(X0, ()), row) == [(0, row)]:
                code.writelines(cpp_loops.column_split_loops(
                    int(self.group.numel // row), row, body, parallel_threshold([body])))
                return
            outer = f"for (int64_t x1 = 0; x1 < {self.group.numel // row}; x1++)"
            start, end, var = "0", str(row), "x0"
        else:
            outer = f"for (int64_t xblock = 0; xblock < xnumel; xblock += {XBLOCK})"
            start, end, var = "xblock", "xend", "xindex"
        code.writeline(f"#pragma omp parallel for num_threads(num_threads) "
                       f"if(xnumel >= {parallel_threshold([body])})")
        code.writeline(outer)
        code.writeline("{")
        with code.indent():
            if row is None:
                code.writeline(f"const int64_t xend = std::min<int64_t>(xblock + {XBLOCK}, xnumel);")
            code.writelines(cpp_loops.hoisted_lines(body, row is not None and self.ops.rows_own))
            code.writelines(body.converts_in)
            segments = row_segments(self.ops.mask_bounds.at.get(X0, ()), row) if row else [(start, end)]
            for lo, hi in segments:
                if self.vectorize_points():
                    code.writelines(cpp_loops.vector_loop(var, str(lo), str(hi), body.body.lines))
                elif self.vectorize_lone_thread():
                    self.lone_thread_loops(code, var, str(lo), str(hi), body)
                else:
                    self.write_loop(code, var, str(lo), str(hi), body)
            code.writelines(body.converts_out)
        code.writeline("}")

    def vectorize_points(self) -> bool:
        """``#pragma omp simd`` on a pointwise loop: its points are independent, except where
        several may add into one element (a scatter's atomic adds, ``ir.Scatter``): lanes of one
        vector would each read the element, add and write it back, and all but one add be lost."""
        return self.options.cpp_vectorize and not self.ops.adds_into_shared

    def vectorize_lone_thread(self) -> bool:
        """A scatter's adds vectorise where no two points of the loop add into one element
        (``embedding_backward``'s ``out[512*indirect0 + x0] += g[...]``: a row index loaded
        once before the loop, then consecutive elements), on a thread alone in the loop: there
        the adds need no atomics, and the lanes of a vector reach distinct elements."""
        return self.options.cpp_vectorize and not self.ops.adds_may_collide

    def lone_thread_loops(self, code: IndentedBuffer, var: str, start: str, end: str,
                          body: LoopCode) -> None:
        code.writeline("if (!shared)  // a lone thread adds into distinct elements: vectors")
        code.writeline("{")
        with code.indent():
            code.writelines(cpp_loops.vector_loop(var, start, end, body.body.lines))
        code.writeline("}")
        code.writeline("else")
        code.writeline("{")
        with code.indent():
            self.write_loop(code, var, start, end, body)
        code.writeline("}")

    def tiled_loops(self, code: IndentedBuffer, row: int, body: LoopCode) -> None:
        """Row loops in ``TILE`` x ``TILE`` tiles (``cpp_loops.transposed_read`` says why): the
        threads share the tiles' rows, each tile runs its rows one after the other."""
        rows = self.group.numel // row
        code.writeline("// 2-D tiles: a load is consecutive across rows, the store along them")
        code.writeline(f"#pragma omp parallel for num_threads(num_threads) "
                       f"if(xnumel >= {parallel_threshold([body])})")
        code.writeline(f"for (int64_t x1_tile = 0; x1_tile < {rows}; x1_tile += {TILE})")
        code.writeline("{")
        with code.indent():
            code.writeline(f"for (int64_t x0_tile = 0; x0_tile < {row}; x0_tile += {TILE})")
            code.writeline("{")
            with code.indent():
                for header, whole in cpp_loops.tile_versions(int(rows), row):
                    cpp_loops.write_tile(code, header, whole, int(rows), row, body,
                                         self.vectorize_points(), self.write_loop)
            code.writeline("}")
        code.writeline("}")

    def emit_rows(self, row: int, tiled: bool = False) -> LoopCode:
        """The body again, over ``xindex = x0 + row*x1``: a load of ``bias[xindex % 1024]`` is
        ``bias[x0]`` (consecutive: a vector load, where ``% 1024`` made it a gather, about 3x
        slower for a bias + GELU epilogue), one of ``mean[xindex / 1024]`` is ``mean[x1]``.
        float16 rows convert a whole row at a time (``cpp_blocks.py``); ``tiled``: a 2-D tile
        (part of a row: no row blocks) copies its reads across the rows first (``tiled_read``)."""
        self.split(XINDEX, X0, X1, row, self.group.numel)
        self.ops.tile = tiled
        if not tiled:
            self.ops.block = self.vector_block(X0, sympy.Integer(0), str(row), row)
        return self.emit(self.group.members, {})

    def vector_block(self, var: sympy.Symbol, start: sympy.Expr, count: str,
                     capacity: Any) -> VectorBlock | None:
        """The range of the loop about to be written, for float16 rows to convert in one block
        (``cpp_blocks.py``), or None: the kernel has no float16 buffer, updates an input in
        place (a block is read before the loop and written after it), is not vectorised, or the
        loop's range is not known to fit an array."""
        if not (self.options.cpp_vectorize and self.options.cpp_blocks and
                any(d in STORE_BLOCK_DTYPES for d in self.dtypes.values())
                and self.values.inputs_stay
                and isinstance(capacity, (int, sympy.Integer)) and 0 < capacity <= MAX_BLOCK):
            return None
        return VectorBlock(var, start, count, int(capacity))

    def split(self, var: sympy.Symbol, inner: sympy.Symbol, outer: sympy.Symbol, row: int,
              numel: sympy.Expr) -> None:
        """A fresh ops handler (temporaries from tmp0 again) whose indices read ``var`` as
        ``inner + row*outer``, each of the two over its own range. ``outer`` counts the last,
        short tile too (``ceiling``): an index is simplified over the ranges, and a range
        shorter than the loop's would let it drop terms (80 rows in tiles of 64 would make
        ``outer`` range(1), that is 0, and every tile read the first)."""
        ranges = {**self.group.var_ranges(), inner: sympy.Integer(row),
                  outer: sympy.ceiling(sympy.sympify(numel) / row)}
        self.fresh_ops(ranges)
        self.ops.index_subs = {var: inner + row * outer}

    def fresh_ops(self, ranges: dict[sympy.Symbol, Any]) -> None:
        """A fresh ops handler (temporaries from tmp0 again) over the variables ``ranges``."""
        self.values = KeptValues(self.group)
        dim_sizes = self.ops.dim_sizes
        self.ops = CppOpsHandler(self.pointers, self.dtypes, ranges, self.values, self.checks)
        self.ops.dim_sizes = dim_sizes  # (the kernel's, whichever handler finds them)

    def row_vars(self) -> tuple[sympy.Symbol, ...]:
        """The variables of a reduction's loop over the row: ``rindex``, or ``r0`` and ``r1``
        where the row is split into runs (``split_row_loop``)."""
        return (R0, R1) if RINDEX in self.ops.index_subs else (RINDEX,)

    @staticmethod
    def write_loop(code: IndentedBuffer, var: str, start: str, end: str, body: LoopCode) -> None:
        code.writeline(f"for (int64_t {var} = {start}; {var} < {end}; {var}++)")
        code.writeline("{")
        with code.indent():
            code.splice(body.body)
        code.writeline("}")

    def phases(self) -> list[tuple[str, LoopCode]]:
        """``(kind, LoopCode)`` per phase: each loop phase sees the values of the per-row code
        before it (a shared row scope) but none of an earlier loop's element values (a fresh
        element scope: a later loop recomputes what it needs, but loads back the math library
        calls an earlier loop made, which that loop keeps for it: ``cpp_keep.py``). All phases
        are written before any is printed: a later loop may add a store to an earlier one."""
        row_scope: dict[str, Any] = {}
        phases: list[tuple[str, LoopCode]] = []
        groups = self.group.phases()
        last_loop = max(k for k, p in enumerate(groups) if p.kind == "loop")
        for position, phase in enumerate(groups):
            if phase.kind == "row":
                phases.append(("row", self.emit(phase.members, row_scope)))
                continue
            scope = dict(row_scope)
            with self.ops.cse.scoped():
                phases.append(("loop", self.emit(phase.members, scope, position)))
                if self.group.riders and position == last_loop:  # (cpp_riders.py)
                    self.riders = cpp_riders.emit(self, scope)
            row_scope.update({m.get_name(): scope[m.get_name()]
                              for m in phase.members if m.is_reduction()})
        return phases

    def row_reductions(self, code: IndentedBuffer) -> None:
        phases = self.phases()
        if self.riders is not None and (is_column_reduction(
                phases, self.ops.simplified, self.values) or is_row_scan(phases, self.values)):
            raise CodegenError("column reductions ride only a loop along the rows")
        if is_column_reduction(phases, self.ops.simplified, self.values):
            tile = column_tile(self.ops.simplified, self.group.numel)  # None: stretches too short
            if tile is not None and any(e.has(FloorDiv, ModularIndexing)
                                        for e in self.ops.simplified):
                # xindex = x0 + tile*x1: consecutive in stretches of a multiple of ``tile``
                self.split(XINDEX, X0, X1, tile, self.group.numel)
                return cpp_loops.column_reductions(self, code, self.phases(), tile)
            if tile is not None:
                if block := self.vector_block(XINDEX, XBLOCK_START, "xend - xblock", XTILE):
                    self.fresh_ops(self.group.var_ranges())  # again, float16 in blocks
                    self.ops.block = block
                    phases = self.phases()
                return cpp_loops.column_reductions(self, code, phases)
        if is_row_scan(phases, self.values) and self.vector_block(  # (float16: one block)
                RINDEX, sympy.Integer(0), "rnumel", sympy.sympify(self.group.rnumel)) is None:
            return cpp_loops.column_reductions(self, code, phases, SCAN_ROWS, simd=False)
        run = (row_length(self.ops.simplified, self.group.rnumel, RINDEX)
               if self.options.cpp_row_loops else None)
        if run is not None:  # rindex = r0 + run*r1: the phases again, over runs
            self.split(RINDEX, R0, R1, run, self.group.rnumel)
            phases = self.phases()
        elif block := self.vector_block(RINDEX, sympy.Integer(0), "rnumel",
                                        sympy.sympify(self.group.rnumel)):
            self.fresh_ops(self.group.var_ranges())  # the phases again, float16 rows in blocks
            self.ops.block = block
            phases = self.phases()
        loops = [loop for kind, loop in phases if kind == "loop"]
        condition = f"xnumel * rnumel >= {parallel_threshold(loops)}"
        if self.riders is not None:  # the loop over the rows, in a region of their own
            if run is not None or self.ops.block is not None:
                raise CodegenError("column reductions ride only a plain loop over the rows")
            out, code = code, IndentedBuffer()
        else:
            code.writeline(f"#pragma omp parallel for num_threads(num_threads) if({condition})")
        code.writeline("for (int64_t xindex = 0; xindex < xnumel; xindex++)")
        code.writeline("{")
        with code.indent():
            code.writelines(self.values.scratch_declarations())
            for kind, loop in phases:
                if kind == "row":
                    code.splice(loop.body)
                    continue
                code.splice(loop.prefix)
                code.splice(loop.hoisted)
                code.writelines(loop.converts_in)
                clauses = simd_clauses(loop)
                vectorize = clauses is not None and self.options.cpp_vectorize
                lanes = (lanes_loop(loop, self.group.rnumel, run)  # (argmax's too)
                         if self.options.cpp_vectorize and self.options.cpp_lanes else None)
                if lanes is not None:
                    code.splice(lanes)
                else:
                    inner = IndentedBuffer()
                    if vectorize:  # (argmax's short rows, Welford: no clause, plain loops)
                        inner.writeline(f"#pragma omp simd{clauses}")
                    if run is None:
                        self.write_loop(inner, "rindex", "0", "rnumel", loop)
                    else:
                        self.write_loop(inner, "r0", "0", str(run), loop)
                        inner.lines = split_row_loop(inner.lines, run)
                    code.splice(inner)
                code.writelines(loop.converts_out)
                code.splice(loop.suffix)
        code.writeline("}")
        if self.riders is not None:
            cpp_riders.write_rows(out, self.riders, condition, code)

    def single_row_reduction(self, code: IndentedBuffer) -> None:
        code.writeline("const int64_t xindex = 0;  // one row: its loops run in parallel")
        phases = self.phases()
        code.writelines(self.values.scratch_declarations())  # (shared: the loops end in barriers)
        threshold = parallel_threshold([loop for kind, loop in phases if kind == "loop"])
        parallel = f"num_threads(num_threads) if(rnumel >= {threshold})"
        for kind, loop in phases:
            if kind == "row":
                code.splice(loop.body)
                continue
            code.splice(loop.prefix)
            code.splice(loop.hoisted)
            code.writelines(cpp_loops.parallel_reduction(  # (looked up now: the course swaps it)
                cpp_loops.partials(loop), loop.body.lines, parallel, self.options.cpp_vectorize))
            code.splice(loop.suffix)

    # --- running it -----------------------------------------------------------------------------
    def build(self) -> None:
        n_buf, n_size = len(self.signature.buffers()), len(self.signature.sizes)
        argtypes = [cpp_build.ctypes.c_void_p] * n_buf + [cpp_build.ctypes.c_int64] * (n_size + 1)
        self._fn, last_error = cpp_build.load(self.source, self.name, argtypes, bool(self.checks),
                                                 self.options.cpp_vectorize)
        # how it is called: one lambda, ``lambda b0, b1, s0: fn(b0.data_ptr(), b1.data_ptr(),
        # s0, threads())``, which the wrapper calls directly (through ``__call__``, ~0.4 us more);
        # a kernel that checks returns 1 when a check failed: ``fn(...) and failed()`` raises
        bufs, sizes = [f"b{i}" for i in range(n_buf)], [f"s{i}" for i in range(n_size)]
        args = [f"{b}.data_ptr()" for b in bufs] + sizes + ["threads()"]
        launcher = f"lambda {', '.join(bufs + sizes)}: fn({', '.join(args)})"
        if self.checks:
            launcher += " and failed()"
        self.wrapper_call = eval(launcher, {"fn": self._fn, "threads": torch.get_num_threads,
                                            "failed": lambda: self.fail(last_error)})

    def fail(self, last_error: Any) -> None:
        """Raise eager's error for the check that failed in this thread's last call."""
        site, value, size = last_error()
        raise self.checks[site].fail(value, size)

    def __call__(self, *args: Any) -> None:
        if self._fn is None:
            self.build()
        self.wrapper_call(*args)


def member_label(m: KernelMember) -> str:
    """``buf0 (sum)`` for a reduction, ``buf1 (scan sum)`` for a scan, ``buf2`` otherwise."""
    if m.node.is_scan():
        return f"{m.get_name()} (scan {m.node.data.scan_type})"
    return f"{m.get_name()} ({m.node.data.reduction_type})" if m.is_reduction() else m.get_name()


class CppScheduling(BaseScheduling):
    """Writes each loop kernel as C++; ``flush`` compiles the graph's kernels in parallel."""

    name = "cpp"

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.pending: list[CppKernel] = []
        self.by_code: dict[str, CppKernel] = {}  # ``same_code_key`` -> the kernel defined
        self.rides: dict[tuple[KernelGroup, ...], KernelGroup | None] = {}  # ``riding``

    def can_fuse(self, a: Any, b: Any) -> tuple[bool, str]:
        """A kernel whose reductions run down columns (``column_reductions``: a tile of rows
        inside the loop over ``rindex``) takes no member over its whole tile that runs along the
        rows: the kernel would loop in one order only, and in the row order the reductions'
        loads are gathers (a layernorm backward's weight and bias gradients with the input's
        gradient, which shares only the per-row ``rsqrt`` with them: 197 us for 256x512 on one
        core; apart, the sums take 9 us each, the input's gradient joining the row kernel).
        The scheduler then tries the member in the reduction's loop order (``loop_order.py``)."""
        members = a.get_nodes() + b.get_nodes()
        down = next((m for m in members if reduction_direction(m) == "columns"), None)
        along = next((m for m in members if down is not None and runs_along_rows(m)
                      and sympy.expand(m.numel - down.numel) != 0), None)  # (not per row)
        if along is not None:
            return False, (f"{down.get_name()} reduces down columns and {along.get_name()} "
                           "runs along the rows")
        return True, ""

    max_parts = 2  # a row kernel and a column kernel riding along it (cpp_riders.py)

    def combinable(self, group: KernelGroup, wrapper: Any) -> bool:
        return group.kind == "reduction" and self.options.cpp_row_loops

    def joins(self, run: list[KernelGroup], group: KernelGroup, wrapper: Any) -> bool:
        return self.riding(run + [group], wrapper) is not None

    def riding(self, groups: list[KernelGroup], wrapper: Any) -> KernelGroup | None:
        """The one kernel a row kernel and a column kernel make, or None (``cpp_riders``;
        asked by ``joins``, then again by ``codegen_combo``: worked out once)."""
        key = tuple(groups)
        if key not in self.rides:
            dtypes = {n: wrapper.scheduler.buffers[n].get_dtype()
                      for g in groups for n in KernelSignature.of(g).buffers()}
            self.rides[key] = next(
                (cpp_riders.riding_group(row, column, riders) for row, column in
                 (groups, groups[::-1])
                 if (riders := cpp_riders.ridden_by(row, column, dtypes)) is not None), None)
        return self.rides[key]

    def codegen_combo(self, groups: list[KernelGroup], wrapper: Any) -> None:
        try:
            self.codegen_kernel(self.riding(groups, wrapper), wrapper)
        except CodegenError:  # the row kernel took another loop order: two kernels
            for group in groups:
                self.codegen_kernel(group, wrapper)

    def codegen_kernel(self, group: KernelGroup, wrapper: Any) -> None:
        name = wrapper.kernel_name("cpp", group)
        names = KernelSignature.of(group).buffers()
        dtypes = {n: wrapper.scheduler.buffers[n].get_dtype() for n in names}
        kernel = CppKernel(group, name, dtypes, self.options)
        # the same code as a kernel before (the next layer's ReLU): called again, not compiled
        key = same_code_key(kernel.source, kernel.name, "//", repr(kernel.checks))
        twin = self.by_code.setdefault(key, kernel)
        if twin is kernel:
            wrapper.define_kernel(name, kernel, kernel.source)
            self.pending.append(kernel)
        wrapper.write_kernel_call(twin.name, kernel.signature.call_args(), group)

    def flush(self) -> None:
        kernels, self.pending = self.pending, []
        cpp_build.compile_many([k.build for k in kernels])
