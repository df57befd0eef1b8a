"""Which loop order a C++ kernel gets (``cpp.py`` writes the loops; in real Inductor the
tiling decisions of torch/_inductor/codegen/cpp.py, ``select_tiling`` and the outer-loop
fusion of column reductions).

- A pointwise kernel is one flat loop over ``xindex``, in blocks for the threads, unless a
  load's index cuts ``xindex`` into digits (``bias[xindex % 1024]``): then it loops over rows,
  ``xindex = x0 + 1024*x1`` (``row_length``), and the index simplifies to ``bias[x0]``.
- A reduction kernel gives each thread whole rows and loops along each row inside, unless every
  load is consecutive across rows and strided along them (a column sum, a bias gradient): then
  the loop over ``rindex`` goes outside and a tile of rows inside (``is_column_reduction``).

Either way the reason is the same: the innermost loop, the one ``#pragma omp simd`` vectorises,
should read consecutive elements (one vector load), not one element per lane (a gather). A scan
along rows loops in the column order too, over a tile of four rows, for another reason: the
rows' chains of dependent steps interleave (``is_row_scan``).

Along a row, a reduction whose loop is cheap (no call into the vector math library) keeps an
array of partial results, 256 bytes of them (``lanes_loop``; argmax a value and a position
each): four vector registers' worth, four independent chains of updates, combined at the end of
the row by halving the array. An
``omp simd reduction`` keeps one register: each update waits for the one before (a max is a
compare and a blend, five cycles), and its lanes are combined one by one in scalar code. amax
over 1024x1024 floats on this 2-core machine: 70 us -> 45 (eager 30).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import sympy
import torch

from ..kernel_group import RINDEX, XINDEX
from .common import IndentedBuffer, digit_sizes, local_stride, nearer_along
from .cpp_keep import KeptValues
from .cpp_math import LIBRARY_CALL, MATH_CALL
from .cpp_ops import R0, R1, TILE, X0, X1, LoopCode

XTILE = 64  # rows of a column reduction summed side by side (``column_reductions``)
RCHUNK = 16  # rows of a column sum added in float before its double total (``column_reductions``)
ACCUMULATOR = re.compile(r"^([\w:<>]+) (acc\d+) = (.+);$")  # float acc0 = 0;
LANE_BYTES = 256  # partial results a row's reduction keeps: four 64-byte vector registers
SHORT_ROW_BYTES, SHORT_ROW_LANE_BYTES = 2048, 64  # a row shorter than 2 KB: one register
PARALLEL_MIN_WORK = 65536  # operations a kernel must do before its loop is shared among threads
MATH_CALL_WORK = 8  # a line calling a math function (``exp``, ``log``, ...): this many operations
LANE_SIZES = {"float": 4, "int32_t": 4, "double": 8, "int64_t": 8}  # others: plain loops


def vector_loop(var: str, start: str, end: str, body: list[str]) -> list[str]:
    """The lines that run ``body`` for every ``var`` in ``[start, end)``, vectorised. Here
    ``#pragma omp simd`` asks g++ to split the range into whole vectors of lanes and a scalar
    tail (its epilogue loop); Inductor's ``CppVecKernel`` writes the split out, vectors of
    ``at::vec::Vectorized`` then a tail loop, as exercise 9.2 of the course does."""
    return ["#pragma omp simd", f"for (int64_t {var} = {start}; {var} < {end}; {var}++)", "{",
            *[f"    {line}" for line in body], "}"]


@dataclass
class Partial:
    """One accumulator of a loop shared among threads, of C++ type ``ctype``: ``combine`` merges
    two partial results ``{a}`` and ``{b}``; ``omp`` is its OpenMP reduction identifier (None:
    none exists)."""

    name: str
    ctype: str
    combine: str
    omp: str | None


def partials(loop) -> list[Partial]:
    return [Partial(a.name, a.ctype, a.kind.combine or
                    a.kind.update.format(acc="{a}", value="{b}"), a.kind.omp)
            for a in loop.accumulators]


def parallel_reduction(accumulators: list[Partial], body: list[str], parallel: str,
                       simd: bool = True) -> list[str]:
    """The loop over ``rindex`` of a one-row reduction, its iterations shared among threads
    (``parallel``: the ``num_threads(...) if(...)`` clauses), each accumulator already declared
    and started. Where every accumulator has an OpenMP reduction, OpenMP keeps one partial per
    thread and combines them (``reduction(+:acc0)``); otherwise each thread's partial starts as
    a copy of the accumulator and they are combined by hand, in thread order, after the loop
    (argmax keeps the first maximum). Exercise 9.4 of the course writes this by hand."""
    loop = ["for (int64_t rindex = 0; rindex < rnumel; rindex++)", "{",
            *[f"    {line}" for line in body], "}"]
    clauses = "".join(f" reduction({a.omp}:{a.name})" for a in accumulators if a.omp)
    if all(a.omp for a in accumulators):
        return [f"#pragma omp parallel for {'simd ' if simd else ''}{parallel}{clauses}", *loop]
    by_hand = [a for a in accumulators if a.omp is None]
    lines = [f"std::vector<{a.ctype}> {a.name}_parts(num_threads, {a.name});"
             for a in by_hand]
    lines += [f"#pragma omp parallel {parallel}", "{"]
    # this thread's partial, shadowing the total inside the region
    lines += [f"    auto {a.name} = {a.name}_parts[omp_get_thread_num()];" for a in by_hand]
    lines += [f"    #pragma omp for schedule(static){clauses}", *[f"    {line}" for line in loop]]
    lines += [f"    {a.name}_parts[omp_get_thread_num()] = {a.name};" for a in by_hand]
    lines += ["}"]
    return lines + [f"for (const auto& part : {a.name}_parts) {a.name} = "
                    f"{a.combine.format(a=a.name, b='part')};" for a in by_hand]


def omp_accumulators(loop) -> list[tuple[str, str, str]] | None:
    """``(ctype, name, init)`` of each accumulator of a ``LoopCode`` (``float acc0 = 0;`` in
    its prefix), or None unless there are some and each is an OpenMP reduction (a sum, a max: a
    scalar that partial results combine into; not argmax's or Welford's structs) or a scan's
    running value (a scalar too, one per row)."""
    decls = [ACCUMULATOR.match(line.strip()) for line in loop.prefix.lines]
    if not loop.accumulators or len(decls) != len(loop.accumulators) or not all(decls) or \
            any(a.kind.omp is None and not a.kind.running for a in loop.accumulators):
        return None
    return [d.groups() for d in decls]


def renamed_accumulators(buf: IndentedBuffer, accumulators: list, new: str) -> list[str]:
    """``buf``'s lines with each accumulator ``acc0`` written ``new.format(acc0)``
    (``acc0[xindex - xblock]``, ``acc0_v[w]``, a rider's ``acc0_col[rindex]``)."""
    names = re.compile(r"\b(" + "|".join(a.name for a in accumulators) + r")\b")
    return [names.sub(lambda m: new.format(m[1]), line) for line in buf.lines]


def is_column_reduction(phases: list, indices: list[sympy.Expr], values: KeptValues) -> bool:
    """One loop over the row, then per-row code only; plain accumulators (a sum, a max: an
    OpenMP reduction, a scalar); every index of the loop consecutive across rows and not along
    them: reductions down columns, which ``column_reductions`` loops over in the other order.
    An index of ``rindex`` alone is one value for all the rows of a tile (a layer norm's
    per-sample mean in its weight gradient, ``sum((x - mean[r]) * rstd[r] * grad, r)``).
    "Consecutive" is the step from one row to the next (``local_stride``), so a channels-last
    ``mean((2, 3))``, read at ``129600*(xindex / 64) + (xindex % 64) + 64*rindex``, counts: its
    rows are consecutive within each image (a tile crossing into the next image still reads
    the right elements, with a jump)."""
    kinds = [kind for kind, _ in phases]
    if kinds[:1] != ["loop"] or "loop" in kinds[1:] or values.slots:
        return False
    if omp_accumulators(phases[0][1]) is None:
        return False
    down = [e for e in indices if {RINDEX, XINDEX} <= e.free_symbols]
    return bool(down) and all(
        local_stride(e, XINDEX) == 1 and local_stride(e, RINDEX) != 1 for e in down)


def chunks_of_rows(code: IndentedBuffer, loop: Any, decls: list, rows_loop: IndentedBuffer,
                   tile: int, vectorize: bool) -> None:
    """The loop over ``rindex`` of a column reduction (``CppKernel.column_reductions``),
    ``RCHUNK`` rows at a time into partial results of the accumulators' own type
    (``acc0_chunk``, one per row of the ``tile``), then added up."""
    code.writeline(f"for (int64_t rchunk = 0; rchunk < rnumel; rchunk += {RCHUNK})")
    code.writeline("{")
    with code.indent():
        code.writeline(f"const int64_t rend = std::min<int64_t>(rchunk + {RCHUNK}, rnumel);")
        for ctype, name, init in decls:
            code.writeline(f"{ctype} {name}_chunk[{tile}];  // these rows' partial results")
            code.writeline(f"for (int64_t i = 0; i < {tile}; i++) {name}_chunk[i] = {init};")
        code.writeline("for (int64_t rindex = rchunk; rindex < rend; rindex++)")
        code.writeline("{")
        with code.indent():
            code.splice(rows_loop)
        code.writeline("}")
        steps = [f"{a.name}[i] = " + a.kind.update.format(acc=f"{a.name}[i]",
                                                           value=f"{a.name}_chunk[i]") + ";"
                 for a in loop.accumulators]
        if vectorize:
            code.writeline("#pragma omp simd")
        code.writeline(f"for (int64_t i = 0; i < {tile}; i++) {{ {' '.join(steps)} }}")
    code.writeline("}")


MIN_COLUMN_TILE = 8  # fewer rows consecutive than this: a column reduction is not worth it


def column_tile(indices: list[sympy.Expr], numel: Any) -> int | None:
    """Rows a column reduction's tile may hold so that, within a tile aligned on its size,
    every index is consecutive across the rows: the largest power of two up to ``XTILE``
    dividing the sizes the indices divide ``xindex`` by (``xindex / 64``, ``xindex % 64``) and
    the number of rows (``XTILE`` where no index divides: the last tile may be short); None
    where that is below ``MIN_COLUMN_TILE`` or a size is symbolic."""
    sizes = digit_sizes(indices, XINDEX)
    if sizes is None:
        return None  # xindex inside other arithmetic: not a plain stretch
    if not sizes:  # consecutive throughout: any tile, the last one short
        return XTILE
    if not sympy.sympify(numel).is_Integer:
        return None
    sizes = [*sizes, int(numel)]  # (x1 = xindex / tile over whole tiles only)
    tile = XTILE
    while tile >= MIN_COLUMN_TILE and any(size % tile for size in sizes):
        tile //= 2
    return tile if tile >= MIN_COLUMN_TILE else None


SCAN_ROWS = 4  # rows of a scan along rows run side by side (``is_row_scan``)


def is_row_scan(phases: list, values: KeptValues) -> bool:
    """One loop over the row, then per-row code only, every accumulator a scan's running value
    (``cumsum``, ``cumprod``, ``logcumsumexp`` along rows). Each step of a row's scan waits for
    the one before (a double add: 3 cycles), so a row is a chain of dependent steps; rows are
    independent, and ``column_reductions`` runs ``SCAN_ROWS`` of them side by side, their chains
    interleaved, not vectorised (a row's next element is a row's length away from the next
    row's: vector lanes would gather). 256x512 ``x.cumsum(1)`` on one core: 119 -> 57 us. Four
    rows, not more: eight rows of 1024 floats (4 KB apart: one set of L1) with their outputs
    evict each other (686 us). (A float16 row keeps the row order: ``cpp.py`` converts it in
    one block, a vector at a time, ``cpp_blocks.py``.)"""
    kinds = [kind for kind, _ in phases]
    if kinds[:1] != ["loop"] or "loop" in kinds[1:] or values.slots:
        return False
    loop = phases[0][1]
    return bool(loop.accumulators) and all(a.kind.running for a in loop.accumulators) \
        and omp_accumulators(loop) is not None


MIN_ROW = 16  # shorter rows: the inner loop is too short for vectors, keep the flat loop


def parallel_threshold(loops: list) -> int:
    """The fewest points (``xnumel``, or ``xnumel * rnumel``) for which a kernel whose loop
    bodies are ``loops`` (``LoopCode``) runs on several threads: waking a thread team costs a
    few microseconds (fork and join), worth it from about ``PARALLEL_MIN_WORK`` operations. A
    point's operations are estimated as the lines of C++ it runs (a load, an add, a store), a
    line calling a math function (``cpp_math.MATH_CALL``) as ``MATH_CALL_WORK`` of them. On this
    2-core machine a 128x128 row sum (2 a point) stays on one thread (threads: 2.1 -> 2.3 us), a
    softmax (18, an ``exp`` among them) does not (10.6 -> 6.2 us; eager's ``parallel_for``
    shares it too). Real Inductor's C++ backend makes the same decision with its own cost
    estimate (``decide_parallel_depth``)."""
    work = sum(MATH_CALL_WORK if MATH_CALL.search(line) else 1
               for loop in loops for line in loop.body.lines)
    return max(1, -(-PARALLEL_MIN_WORK // max(work, 1)))


def row_length(indices: list[sympy.Expr], numel: sympy.Expr,
               var: sympy.Symbol = XINDEX) -> int | None:
    """The row length to split a loop over ``var`` by, if its indices cut ``var`` into digits:
    ``% 1024`` and ``// 1024`` (a broadcast bias, a per-row mean; the batch and column of a
    reduction over dims 0 and 2) at every multiple of one length that divides ``numel``; within
    a row those indices are then consecutive or fixed."""
    bounds = digit_sizes(indices, var)
    if bounds is None or not isinstance(sympy.sympify(numel), sympy.Integer):
        return None  # (xindex + 3) // 4, or a symbolic size
    row = math.gcd(*bounds) if bounds else 0
    return row if row >= MIN_ROW and int(numel) % row == 0 and row < int(numel) else None


def transposed_read(indices: list[sympy.Expr]) -> bool:
    """Whether a row loop reads some buffer across rows (nearer along ``x1`` than along ``x0``:
    ``x.t() + y``, a permute, NHWC to NCHW). Its loads then touch one cache line per
    element; in ``TILE`` x ``TILE`` tiles those lines are reused from L1 by the tile's next rows
    (Inductor's C++ ``tile2d``), instead of being evicted before the next row comes back."""
    return any(nearer_along(i, X1, X0) for i in indices)


def hoisted_lines(body: Any, owned: bool, why: str = "this thread's own rows") -> list[str]:
    """The lines before a loop; ``owned``: no other thread adds into the elements this one
    adds into (``CppOpsHandler.rows_keep_apart``, ``column_split_loops``), so a scatter's adds
    need no atomics even inside a parallel loop."""
    return [f"const bool shared = false;  // ({why})" if owned and
            line.startswith("const bool shared") else line for line in body.hoisted.lines]


def column_split_loops(rows: int, row: int, body: Any, threshold: int) -> list[str]:
    """A scatter adding each row into a row of its output (``index_add`` over rows, an embedding's
    gradient: ``out[1024*indirect0 + x0] += src[x0 + 1024*x1]``): rows may add into the same
    output row, but position ``x0`` of one only ever into position ``x0`` of another. So each
    thread owns a slice of the positions and walks every row: no two threads add into one
    element, and the adds need no atomics (eager's ``index_add`` shares the work so; a 1024 x
    1024 ``index_add`` on two threads: about 0.9 ms with atomic adds, 6x eager's call)."""
    hoisted = hoisted_lines(body, True, "this thread's own positions")
    return ["// the threads split each row's positions: a position is one thread's in every row",
            f"#pragma omp parallel num_threads(num_threads) if(xnumel >= {threshold})",
            "{",
            "    const int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();",
            f"    const int64_t x0_start = {row} * thread / threads, "
            f"x0_stop = {row} * (thread + 1) / threads;",
            f"    for (int64_t x1 = 0; x1 < {rows}; x1++)",
            "    {",
            *[f"        {line}" for line in [*hoisted, *vector_loop(
                "x0", "x0_start", "x0_stop", body.body.lines)]],
            "    }",
            "}"]


def tile_versions(rows: int, row: int) -> list[tuple[str | None, bool]]:
    """The versions of a tile's code: ``(the line choosing it, whether the tile is whole)``. A
    whole tile ends at constants past its start, and g++ unrolls and vectorises its loops whole
    (``x.t() + y``'s tile: 391 -> 224 us against ends it must compare with); where the dims are
    not multiples of ``TILE``, the tiles at their edges are a second version, clamped."""
    if rows % TILE == 0 and row % TILE == 0:
        return [(None, True)]
    return [(f"if (x1_tile + {TILE} <= {rows} && x0_tile + {TILE} <= {row})  // a whole tile",
             True), ("else", False)]


def write_tile(code: IndentedBuffer, header: str | None, whole: bool, rows: int, row: int,
               body: Any, simd: bool, write_loop: Callable) -> None:
    """One version of a tile's code (``header``: the line choosing it, None for the only one):
    where it ends, its copies of the reads across its rows, then its rows."""
    if header is not None:
        code.writeline(header)
        code.writeline("{")
        with code.indent():
            write_tile(code, None, whole, rows, row, body, simd, write_loop)
        code.writeline("}")
        return
    ends = (f"x1_tile + {TILE}", f"x0_tile + {TILE}") if whole else (
        f"std::min<int64_t>(x1_tile + {TILE}, {rows})", f"std::min<int64_t>(x0_tile + {TILE}, {row})")
    code.writelines([f"const int64_t x1_end = {ends[0]};", f"const int64_t x0_end = {ends[1]};",
                     *tile_copies(body.tiles, whole)])
    code.writeline("for (int64_t x1 = x1_tile; x1 < x1_end; x1++)")
    code.writeline("{")
    with code.indent():
        code.splice(body.hoisted)
        if simd:
            code.writeline("#pragma omp simd")
        write_loop(code, "x0", "x0_tile", "x0_end", body)
    code.writeline("}")


BITS = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}  # an element's bits


def tile_copies(tiles: dict, whole: bool) -> list[str]:
    """Each read across a tile's rows copied into the tile's local array, before its loops
    (``CppOpsHandler.tiled_read``): in a ``whole`` tile, 16 rows of 16 consecutive elements
    are transposed in registers (``mc::transpose16``), else copied element by element."""
    lines = []
    if whole and any(t.rows for t in tiles.values()):
        lines.append(f"const int64_t x1_block = x1_tile / {TILE}, x0_block = x0_tile / {TILE};")
    for t in tiles.values():
        lines.append(f"alignas(64) {t.ctype} {t.array}[{TILE * TILE}];  // read across the rows")
        if whole and t.rows:
            first, ld, size = t.rows
            lines.append(f"mc::transpose16<{BITS[size]}>({first}, {ld}, {t.array});")
            continue
        lines += ["for (int64_t x1 = x1_tile; x1 < x1_end; x1++)",
                  "    for (int64_t x0 = x0_tile; x0 < x0_end; x0++)",
                  f"        {t.array}[{TILE}*(x1 - x1_tile) + (x0 - x0_tile)] = {t.element};"]
    return lines


@dataclass
class Lanes:
    """One accumulator's partial results in the lanes of ``lanes_loop``: its arrays ``(C++ type,
    name, a lane's start)``, its update line rewritten for lane ``w`` (``update``: a body line ->
    that line for a lane), one halving step (``merge``, over ``w`` and ``{half}``) and the line
    adding lane 0 into the accumulator (``total``)."""

    arrays: list[tuple[str, str, str]]
    update: Callable[[str], str]
    merge: str
    total: str
    size: int  # bytes of a lane's widest array


def scalar_lanes(acc, ctype: str, init: str) -> Lanes:
    """A sum, a max...: one array ``acc0_v``, updated and merged by the accumulator's own update."""
    lane, other = f"{acc.name}_v[w]", f"{acc.name}_v[w + {{half}}]"
    return Lanes([(ctype, f"{acc.name}_v", init)], lambda line: line,
                 f"{lane} = " + acc.kind.update.format(acc=lane, value=other) + ";",
                 f"{acc.name} = " + acc.kind.update.format(acc=acc.name, value=f"{acc.name}_v[0]")
                 + ";", LANE_SIZES[ctype])


def arg_lanes(acc) -> Lanes:
    """argmax/argmin: a value array ``acc0_v`` and a position array ``acc0_i`` (``ArgLanes`` in
    cpp_ops.py); lane ``w`` starts at position ``w``, its first (``arg_lane`` in cpp_prefix.h
    says why). The total merges lane 0 into the tail's accumulator in argmax's order."""
    spec, v, i = acc.kind.lanes, f"{acc.name}_v", f"{acc.name}_i"
    lane = spec.update.format(v=f"{v}[w]", i=f"{i}[w]", value=acc.value, rindex=acc.position)
    merge = spec.merge.format(v=f"{v}[w]", i=f"{i}[w]", v2=f"{v}[w + {{half}}]",
                              i2=f"{i}[w + {{half}}]")
    total = acc.kind.combine.format(a=acc.name, b=f"{acc.ctype}{{{v}[0], {i}[0]}}")
    return Lanes([(acc.value_type, v, spec.init.format(t=acc.value_type)), ("int64_t", i, "w")],
                 lambda line: line.replace(acc.line, lane + ";"), merge + ";",
                 f"{acc.name} = {total};", max(LANE_SIZES[acc.value_type], LANE_SIZES["int64_t"]))


def loop_lanes(loop) -> list[Lanes] | None:
    """The lanes of each of ``loop``'s accumulators, or None if one has none: not an OpenMP
    reduction of a 4- or 8-byte type, nor an argmax/argmin of one (Welford, booleans)."""
    decls = [ACCUMULATOR.match(line.strip()) for line in loop.prefix.lines]
    if not loop.accumulators or len(decls) != len(loop.accumulators) or not all(decls):
        return None
    lanes = []
    for acc, decl in zip(loop.accumulators, decls):
        ctype, _, init = decl.groups()
        if acc.kind.lanes is not None and acc.value_type in LANE_SIZES:
            lanes.append(arg_lanes(acc))
        elif acc.kind.omp is not None and ctype in LANE_SIZES:
            lanes.append(scalar_lanes(acc, ctype, init))
        else:
            return None
    return lanes


def lanes_loop(loop, rnumel: sympy.Expr | int | None = None,
               row: int | None = None) -> IndentedBuffer | None:
    """The loop over ``rindex`` of a ``LoopCode`` (its prefix, declaring the accumulators,
    already written) with an array of ``W`` partial results per accumulator:

        float acc0_v[64];  ... = init;   const int64_t rvec = rnumel / 64 * 64;
        for (int64_t rblock = 0; rblock < rvec; rblock += 64)
            #pragma omp simd
            for (int64_t w = 0; w < 64; w++)
                { const int64_t rindex = rblock + w; ...acc0_v[w]... }
        for (int64_t rindex = rvec; rindex < rnumel; rindex++)  ...acc0...  (the tail)
        #pragma omp simd
        for (int64_t w = 0; w < 32; w++) acc0_v[w] = combine(acc0_v[w], acc0_v[w + 32]);
        ...  (16, 8, 4, 2, 1)
        acc0 = combine(acc0, acc0_v[0]);

    The halving is written out step by step: each step's loop has a constant trip count, so g++
    vectorises it whole and keeps the array in registers (one loop over a variable ``half``
    left it in memory: 60 cycles a row; a 128x128 row sum 1.8 -> 0.9 us, 2048x1024 140 -> 91).
    A row known to be shorter than 2 KB (``rnumel`` < 512 floats) gets one
    register's worth (16 floats: 128x128 0.9 -> 0.7 us); one shorter than that, no array.
    A row split into runs (``row``: ``rindex = r0 + row*r1``, ``split_row_loop``) runs the
    loops over ``rblock`` and the tail once per run, inside a loop over ``r1``.

    argmax and argmin keep a value and a position per lane (``arg_lanes``): 32 of each, the
    positions' 8 bytes deciding the width (256x512 ``x.argmax(-1)`` on one core: one
    ``ArgAcc`` updated element by element 151 us, in lanes 23; eager 120).

    None if an accumulator has no lanes (``loop_lanes``: Welford, booleans: plain loops), or if
    the body calls glibc's vector math library: there a call costs
    more than the wait on the accumulator, and four calls an iteration spill every vector
    register (softmax's sum of glibc's ``exp`` took 10% longer). Our own inline ``exp`` and
    ``erf`` (``cpp_prefix.h``) spill nothing, and take the lanes (a 1024x1024 softmax: 249 ->
    224 us on two cores)."""
    lanes = loop_lanes(loop)
    if lanes is None or any(LIBRARY_CALL in line for line in loop.body.lines):
        return None
    size = max(lane.size for lane in lanes)
    width = LANE_BYTES // size
    length = rnumel if row is None else row  # of the loop the lanes run along
    var, end = ("rindex", "rnumel") if row is None else ("r0", str(row))
    if isinstance(length, (int, sympy.Integer)) and int(length) * size < SHORT_ROW_BYTES:
        width = SHORT_ROW_LANE_BYTES // size
        if int(length) < width:
            return None
    code = IndentedBuffer()
    code.writeline("{")
    with code.indent():
        for ctype, name, init in (array for lane in lanes for array in lane.arrays):
            code.writeline(f"{ctype} {name}[{width}];")
            code.writeline(f"for (int64_t w = 0; w < {width}; w++) {name}[w] = {init};")
        code.writeline(f"const int64_t rvec = {end} / {width} * {width};")
        body = IndentedBuffer()  # the loop's body for lane w
        body.lines = loop.body.lines
        for lane in lanes:
            body.lines = [lane.update(line) for line in body.lines]
        runs = IndentedBuffer()  # the vectors of lanes, then the tail, of the row or of a run
        runs.writeline(f"for (int64_t rblock = 0; rblock < rvec; rblock += {width})")
        runs.writeline("{")
        with runs.indent():
            runs.writeline("#pragma omp simd")
            runs.writeline(f"for (int64_t w = 0; w < {width}; w++)")
            runs.writeline("{")
            with runs.indent():
                runs.writeline(f"const int64_t {var} = rblock + w;")
                runs.writelines(renamed_accumulators(body, loop.accumulators, "{}_v[w]"))
            runs.writeline("}")
        runs.writeline("}")
        runs.writeline(f"for (int64_t {var} = rvec; {var} < {end}; {var}++)")
        runs.writeline("{")
        with runs.indent():
            runs.splice(loop.body)
        runs.writeline("}")
        code.writelines(runs.lines if row is None else split_row_loop(runs.lines, row))
        half = width // 2
        while half:  # one line a step: for (...) acc0_v[w] = acc0_v[w] + acc0_v[w + 32];
            steps = [lane.merge.format(half=half) for lane in lanes]
            step = steps[0] if len(steps) == 1 else "{ " + " ".join(steps) + " }"
            code.writeline("#pragma omp simd")
            code.writeline(f"for (int64_t w = 0; w < {half}; w++) {step}")
            half //= 2
        for lane in lanes:  # (the tail's elements went into the accumulator itself)
            code.writeline(lane.total)
    code.writeline("}")
    return code


def split_row_loop(inner: list[str], row: int) -> list[str]:
    """The loop over a reduction's row as runs of ``row`` consecutive positions: ``inner``
    (a loop over ``r0``, the position in a run) once per run ``r1``. Where a load's index cuts
    ``rindex`` into digits (``x.sum((0, 2))`` reads ``x[rindex / 512, xindex, rindex % 512]``)
    the runs are its rows, and the index ``33280*r1 + 512*xindex + r0`` is consecutive along
    ``r0``, a vector load, where the division and remainder made it a gather (Inductor's C++
    kernels loop over each reduced dimension in the same way, one loop per dim)."""
    return ["for (int64_t r1 = 0; r1 < rnumel / %d; r1++)" % row, "{",
            *[f"    {line}" for line in inner], "}"]


def simd_clauses(loop: LoopCode) -> str | None:
    """`` reduction(+:acc0) reduction(mc_max:acc1)`` for a loop's accumulators, or None when one
    of them has no OpenMP reduction (the loop must then not be split among lanes or threads)."""
    if any(a.kind.omp is None for a in loop.accumulators):
        return None
    return "".join(f" reduction({a.kind.omp}:{a.name})" for a in loop.accumulators)


def column_reductions(kernel: Any, code: IndentedBuffer, phases: list, tile: int = XTILE,
                       simd: bool = True) -> None:
    """Reductions down columns (a bias gradient: ``sum(grad[r, x] for r)``, row ``x`` at
    stride 1 across rows and a whole row apart along its own): the loop over ``rindex`` goes
    outside, a tile of ``XTILE`` rows inside, one accumulator per row of the tile in an array,
    so that the inner loop reads consecutive elements (a vector load; along a row they are
    ``xnumel`` apart: a gather per element). Then the per-row code, row by row of the tile.

    A float32 sum accumulates in double: one row's terms one after another, a float sum of
    them drifts (200 terms: 5e-6) where eager's cascade sum stays close. Double lanes are
    half as many a vector, so ``RCHUNK`` rows at a time are summed in float lanes
    (``acc0_chunk``), each chunk's partial then added to the double (ATen's cascade sum
    sums runs of 16 too): 256x512 ``x.sum(0)`` 13.5 -> 9.2 us on one core. (A 16-bit
    result rounds the drift away: its sum stays float, as eager's; bf16 x.sum(0) 60 -> 26
    us.)

    Scans along rows run in the same order, ``tile`` rows (``SCAN_ROWS``) side by side
    and not vectorised (``simd``; ``cpp_loops.is_row_scan`` says why).

    Where the rows are consecutive in stretches (a channels-last ``mean((2, 3))``:
    ``129600*(xindex / 64) + (xindex % 64)``), the body was written over ``xindex =
    x0 + tile*x1`` (``column_tile``, ``split``): a tile is one stretch or part of one, ``x1``
    is fixed in it and its loads are ``x0``-consecutive, with no division in the inner
    loop."""
    split = XINDEX in kernel.ops.index_subs
    (_, loop), rows = phases[0], [p for _, p in phases[1:]]
    loop.body.lines[:0] = loop.hoisted.lines  # (the row changes in the inner loop here)
    decls = omp_accumulators(loop)
    wide = [a.kind.omp == "+" and ctype == "float" and a.dtype == torch.float32
            for a, (ctype, _, _) in zip(loop.accumulators, decls)]
    chunked = any(wide) and not any(a.kind.running for a in loop.accumulators)

    def per_row(buf: IndentedBuffer, acc: str = "{}") -> IndentedBuffer:
        out = IndentedBuffer()  # acc0 -> acc0[xindex - xblock] (or acc0_chunk[...])
        out.lines = renamed_accumulators(buf, loop.accumulators, acc + "[xindex - xblock]")
        return out
    x0 = ["const int64_t x0 = xindex - xblock;"] if split else []  # (x1: the tile's)
    if not simd:
        code.writeline(f"// {tile} rows side by side: each row's scan a chain of dependent "
                       "steps, the rows' chains interleaved")
    code.writeline(f"#pragma omp parallel for num_threads(num_threads) "
                   f"if(xnumel * rnumel >= {parallel_threshold([loop])})")
    code.writeline(f"for (int64_t xblock = 0; xblock < xnumel; xblock += {tile})")
    code.writeline("{")
    with code.indent():
        code.writeline(f"const int64_t xend = std::min<int64_t>(xblock + {tile}, xnumel);")
        if split:
            code.writeline(f"const int64_t x1 = xblock / {tile};")
        for (ctype, name, init), double in zip(decls, wide):
            code.writeline(f"{'double' if double else ctype} {name}[{tile}];")
            code.writeline(f"for (int64_t i = 0; i < {tile}; i++) {name}[i] = {init};")
        rows_loop = IndentedBuffer()
        rows_loop.writelines(loop.converts_in)
        if kernel.options.cpp_vectorize and simd:
            rows_loop.writeline("#pragma omp simd")
        body = per_row(loop.body, "{}_chunk" if chunked else "{}")
        body.lines[:0] = x0
        kernel.write_loop(rows_loop, "xindex", "xblock", "xend", LoopCode(body=body))
        rows_loop.writelines(loop.converts_out)
        if chunked:
            chunks_of_rows(code, loop, decls, rows_loop, tile,
                                     kernel.options.cpp_vectorize)
        else:
            kernel.write_loop(code, "rindex", "0", "rnumel", LoopCode(body=rows_loop))
        tail = LoopCode(body=per_row(loop.suffix))  # the per-row code: read-outs, stores...
        for row in rows:
            tail.body.splice(per_row(row.body))
        if tail.body.lines:  # (a scan stores inside its loop: none)
            tail.body.lines[:0] = x0
            kernel.write_loop(code, "xindex", "xblock", "xend", tail)
    code.writeline("}")
