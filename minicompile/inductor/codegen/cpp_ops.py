"""The ``ops`` handler of the C++ backend: each op becomes one line of C++ (mirrors
``CppOverrides`` and ``CppPrinter`` in torch/_inductor/codegen/cpp.py and cpp_utils.py).

    ops.exp(tmp0)            ->  auto tmp1 = mc::exp(tmp0);
    ops.load("buf0", i + 3)  ->  auto tmp2 = in_ptr0[xindex + 3];
    ops.maximum(a, b)        ->  auto tmp3 = mc::maximum(tmp1, tmp2);   // NaN-propagating

Values are C++ variables declared ``auto``: the IR is already type-promoted (every binary op gets
operands of one dtype, casts are explicit ``to_dtype``), so C++'s own inference gives each
temporary its torch dtype; an int8, uint8, int16 or bool result, which C++ computes in int, is
cast back (``cpp_math.narrowed``: ``int8 * 40`` wraps). The ops whose C++ meaning differs from
torch's (floor division, remainder, max/min with NaN, integer pow) call helpers of
``cpp_prefix.h``. bfloat16 and float16 are stored as bits and computed in float: a load converts
up, a store rounds down. The handler notes each temporary's C++ type, for ``cpp_keep.py``.

Reductions are written in three places: the accumulator's declaration before the loop over the
row (``prefix``), its update in the loop (``body``) and the read-out after it (``suffix``);
``CppKernel`` (``cpp.py``) arranges the loops. Index expressions print from SymPy
(``cpp_printer.py``). Comparisons of an index with a constant are noted (``cpp_masks.py``):
a row is cut where cat's and pad's masks change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import sympy
import torch

from ..checks import (DIVISION, DIVISIONS, Check, decided_comparison, known_range,
                      no_check_comment, op_range, site_of, unchecked_range)
from ..kernel_group import RINDEX, XINDEX
from ..ops_handler import add_elementwise_ops
from ..sizevars import simplify_index, value_range
from .common import CSE, IndentedBuffer, nearer_along
from .cpp_blocks import BLOCK_DTYPES, STORE_BLOCK_DTYPES, VectorBlock
from .cpp_hoist import LoopInvariants
from .cpp_masks import MaskBounds, local_names_numbered, masked_fill
from .cpp_math import C_OPS, FLOAT_TYPES, fits, narrowed  # (C_OPS read here: the grading swaps it)
from .cpp_scatter import distinct_along_loop, rows_keep_apart, whole_rows_apart
from .cpp_printer import cexpr  # (cpp.py and the grading take it from here)

# a row loop's variables (x0 along a row, x1 the row) and a reduction's (cpp_loops.py)
X0, X1, R0, R1 = (sympy.Symbol(n, integer=True, nonnegative=True) for n in ("x0", "x1", "r0", "r1"))
TILE = 16  # a 2-D tile's side: 16 rows of one 64-byte line each (cpp_loops.transposed_read)

# a whole tile's first element in the tile's block numbers (``x1_block = x1_tile / 16``)
X0_BLOCK, X1_BLOCK = (sympy.Symbol(n, integer=True, nonnegative=True)
                      for n in ("x0_block", "x1_block"))
_I0, _I1 = (sympy.Symbol(n, integer=True, nonnegative=True) for n in ("i0", "i1"))


@dataclass
class TileRead:
    """A 2-D tile's read across its rows (``CppOpsHandler.tiled_read``): its local ``array``
    of C++ type ``ctype``, the ``element`` it copies at ``(x0, x1)``, and, where the read is
    16 rows of 16 consecutive elements in a whole tile, ``rows``: (the first element's address
    in block numbers, the rows' distance in elements, an element's bytes) for
    ``mc::transpose16``."""

    array: str
    ctype: str
    element: str
    rows: tuple | None


def tile_rows(index: sympy.Expr, var_ranges: dict) -> tuple[sympy.Expr, int] | None:
    """``(first, ld)`` where a whole tile reads ``index`` as 16 rows ``ld`` elements apart (one
    per ``x0``), each 16 consecutive elements (one per ``x1``): ``x.t()``'s ``1024*x0 + x1``,
    or NHWC's ``64*x0 + 129600*(x1 // 64) + x1 % 64``, which over a tile (``x1`` =
    ``16*x1_block + i1``, 16 dividing 64) is ``i1 + 64*x0 + ...``. None otherwise."""
    if X0 not in var_ranges or X1 not in var_ranges:
        return None
    ranges = {**var_ranges, _I0: TILE, _I1: TILE,
              X0_BLOCK: -(-var_ranges[X0] // TILE), X1_BLOCK: -(-var_ranges[X1] // TILE)}
    ranges.pop(X0), ranges.pop(X1)
    tiled = simplify_index(index.subs({X0: TILE * X0_BLOCK + _I0, X1: TILE * X1_BLOCK + _I1}),
                           ranges)
    ld = sympy.expand(tiled).coeff(_I0)
    rest = sympy.expand(tiled - _I1 - ld * _I0)
    if not ld.is_number or _I0 in rest.free_symbols or _I1 in rest.free_symbols:
        return None
    return rest, int(ld)


# dtype -> (C++ type in memory, C++ type computed in)
DTYPES: dict[torch.dtype, tuple[str, str]] = {
    torch.float32: ("float", "float"),
    torch.float64: ("double", "double"),
    torch.float16: ("mc::float16", "float"),
    torch.bfloat16: ("mc::bfloat16", "float"),
    torch.int64: ("int64_t", "int64_t"),
    torch.int32: ("int32_t", "int32_t"),
    torch.int16: ("int16_t", "int16_t"),
    torch.int8: ("int8_t", "int8_t"),
    torch.uint8: ("uint8_t", "uint8_t"), torch.uint32: ("uint32_t", "uint32_t"),  # no uint16:
    torch.uint64: ("uint64_t", "uint64_t"), torch.bool: ("bool", "bool"),  # its products overflow
}
HALF_DTYPES = (torch.float16, torch.bfloat16)


def storage_type(dtype: torch.dtype) -> str:
    return DTYPES[dtype][0]


def compute_type(dtype: torch.dtype) -> str:
    return DTYPES[dtype][1]


def literal(value: Any, dtype: torch.dtype) -> str:
    """A scalar as a typed C++ expression: ``static_cast<float>(0.5)``."""
    ctype = compute_type(dtype)
    if isinstance(value, sympy.Basic) and not value.is_number:  # a size: ``s0``
        return f"static_cast<{ctype}>({cexpr(value)})"
    if isinstance(value, bool) or dtype == torch.bool:
        return "true" if value else "false"
    value = float(value) if dtype.is_floating_point else int(value)
    if isinstance(value, float) and math.isnan(value):
        return f"std::numeric_limits<{ctype}>::quiet_NaN()"
    if isinstance(value, float) and math.isinf(value):
        return f"{'' if value > 0 else '-'}std::numeric_limits<{ctype}>::infinity()"
    if value == -(2 ** 63):
        return "std::numeric_limits<int64_t>::min()"
    return f"static_cast<{ctype}>({value!r})"


# --- reductions -----------------------------------------------------------------------------------

@dataclass
class ArgLanes:
    """argmax/argmin in vector lanes (``cpp_loops.lanes_loop``): a lane keeps a value and its
    position in two arrays (``acc0_v``, ``acc0_i``), not one array of ``ArgAcc`` structs, which
    g++ would not keep in vector registers. ``{v}``, ``{i}``: a lane's value and position."""

    init: str  # a lane's value before its first element (its position: the lane's first)
    update: str  # the lane after the element ``{value}`` at position ``{rindex}``
    merge: str  # lane ``{v}, {i}`` after merging in lane ``{v2}, {i2}`` (the halving)


@dataclass
class ReductionKind:
    """How one reduction type is written in C++."""

    init: str  # the accumulator's start, ``{t}`` being the value's compute type
    update: str  # the new accumulator from ``{acc}`` and ``{value}`` (``{rindex}``: position)
    readout: tuple[str, ...] = ("{acc}",)  # the result(s) after the loop
    acc_type: str = "{t}"
    omp: str | None = None  # the OpenMP reduction identifier; None: combine partials by hand
    combine: str = ""  # merges two partial accumulators ``{a}``, ``{b}``, when ``omp`` is None
    running: bool = False  # a scan's: every step's value is an output, in the row's order
    lanes: ArgLanes | None = None  # an arg reduction's lanes (the others: one array of acc)


REDUCTIONS: dict[str, ReductionKind] = {
    "sum": ReductionKind("0", "{acc} + {value}", omp="+"),
    "prod": ReductionKind("1", "{acc} * {value}", omp="*"),
    "any": ReductionKind("false", "{acc} || {value}", omp="||"),
    "max": ReductionKind("mc::lowest<{t}>()", "mc::maximum({acc}, {value})", omp="mc_max"),
    "min": ReductionKind("mc::highest<{t}>()", "mc::minimum({acc}, {value})", omp="mc_min"),
    "argmax": ReductionKind("{{mc::lowest<{t}>(), std::numeric_limits<int64_t>::max()}}",
                            "mc::argmax_combine({acc}, mc::ArgAcc<{t}>{{{value}, {rindex}}})",
                            ("{acc}.index",), "mc::ArgAcc<{t}>",
                            combine="mc::argmax_combine({a}, {b})",
                            lanes=ArgLanes("mc::lowest<{t}>()",
                                           "mc::arg_lane<true>({v}, {i}, {value}, {rindex})",
                                           "mc::arg_merge<true>({v}, {i}, {v2}, {i2})")),
    "argmin": ReductionKind("{{mc::highest<{t}>(), std::numeric_limits<int64_t>::max()}}",
                            "mc::argmin_combine({acc}, mc::ArgAcc<{t}>{{{value}, {rindex}}})",
                            ("{acc}.index",), "mc::ArgAcc<{t}>",
                            combine="mc::argmin_combine({a}, {b})",
                            lanes=ArgLanes("mc::highest<{t}>()",
                                           "mc::arg_lane<false>({v}, {i}, {value}, {rindex})",
                                           "mc::arg_merge<false>({v}, {i}, {v2}, {i2})")),
    "welford_reduce": ReductionKind("{{}}", "mc::welford_add({acc}, {value})",
                                    ("mc::welford_mean({acc})", "{acc}.m2", "{acc}.weight"),
                                    "mc::Welford<{t}>",
                                    combine="mc::welford_combine({a}, {b})"),
}

# scan type -> its running accumulator (``ops.scan``): no OpenMP reduction, since a row's steps
# must run in order; rows (or, down columns, a tile of them side by side) are what runs in parallel
SCANS: dict[str, ReductionKind] = {
    "sum": ReductionKind("0", "{acc} + {value}", running=True),
    "prod": ReductionKind("1", "{acc} * {value}", running=True),
    "logaddexp": ReductionKind("-std::numeric_limits<{t}>::infinity()",
                               "mc::logaddexp<{t}>({acc}, {value})", running=True),
}


@dataclass
class Accumulator:
    """One reduction's accumulator variable in the loop being written."""

    name: str
    kind: ReductionKind
    ctype: str
    dtype: torch.dtype | None = None  # the reduction's result
    value_type: str = ""  # the C++ type of the values it reduces
    line: str = ""  # its update in the loop's body: ``acc0 = acc0 + tmp0;``
    value: str = ""  # the value it takes at each point, and where (argmax: the position)
    position: str = ""


@dataclass
class LoopCode:
    """The code of one loop over a row, as the ops handler fills it."""

    prefix: IndentedBuffer = field(default_factory=IndentedBuffer)  # before the loop
    # checks of values the same at every point of the loop, also before it (a token id's,
    # checked once per row instead of once per element: the loop stays vectorised)
    hoisted: IndentedBuffer = field(default_factory=IndentedBuffer)
    body: IndentedBuffer = field(default_factory=IndentedBuffer)  # inside it
    suffix: IndentedBuffer = field(default_factory=IndentedBuffer)  # after it
    # float16 rows converted to float before the loop, and back after it (cpp_blocks.py)
    converts_in: list[str] = field(default_factory=list)
    converts_out: list[str] = field(default_factory=list)
    accumulators: list[Accumulator] = field(default_factory=list)
    readouts: set[str] = field(default_factory=set)  # results of this loop's reductions
    threads_asked: bool = False  # ``hoisted`` says whether other threads share the loop
    # a 2-D tile's reads across its rows, each copied into a local array before the tile's
    # loops: (buffer, index) -> its ``TileRead`` (``tiled_read``)
    tiles: dict = field(default_factory=dict)


class CppOpsHandler:
    """``ops`` -> C++ lines in ``self.code.body`` (one temporary per distinct expression)."""

    def __init__(self, pointers: dict[str, str], dtypes: dict[str, torch.dtype],
                 var_ranges: dict[sympy.Symbol, sympy.Expr], values: Any,
                 checks: list[Check] | None = None):
        self.pointers = pointers  # buffer name -> kernel argument (``in_ptr0``)
        self.values = values  # each temporary's value and C++ type (cpp_keep.KeptValues)
        self.dtypes = dtypes  # buffer name -> dtype
        self.var_ranges = var_ranges  # xindex, rindex -> their sizes
        self.index_subs: dict[sympy.Symbol, sympy.Expr] = {}  # xindex -> x0 + 1024*x1 (rows)
        self._indices: dict[sympy.Expr, str] = {}
        self.simplified: list[sympy.Expr] = []  # every index the body reads, simplified
        self.cse = CSE("tmp", "auto {name} = {expr};")
        self.code = LoopCode()
        self.reductions: dict[tuple, Any] = {}  # (type, dtype, value) -> its read-out(s)
        self.scope: dict[str, Any] = {}  # the forwarded values (``common.emit_members``)
        self.mask_bounds = MaskBounds()  # where cat's and pad's masks change (cpp_loops.py)
        self._counts = {"acc": 0, "indirect": 0, "masked": 0, "row": 0}
        # the kernel's run-time checks, by site number (``mc::fail``'s ``site``: checks.py)
        self.checks = [] if checks is None else checks
        # (site, size) of each checked dimension that may be empty: the kernel checks it first
        # (``CppKernel.empty_dim_checks``), since no index inside it exists to read at
        self.dim_sizes: list[tuple[int, sympy.Expr]] = []
        self.ranges: dict[str, tuple[int, int]] = {}  # temporary -> its known [low, high]
        self.invariants = LoopInvariants()  # values a check may repeat before the loop
        # temporary -> (the value it rounds, the 16-bit type) for each ``round_to``: a store into
        # that type rounds the value itself, once (rounding twice costs as much as the store)
        self.rounded: dict[str, tuple[str, torch.dtype]] = {}
        self.adds_into_shared = False  # an atomic add's store: points may share an element
        self.adds_may_collide = False  # ... and two points of the loop may add into one
        self.rows_apart = True  # ... and the rows' elements lie whole rows apart (``store``)
        self.rows_own = True  # ... and no two rows reach one element (``rows_keep_apart``)
        self.indirect_ranges: dict[sympy.Symbol, tuple] = {}  # each loaded index's [low, high]
        self.hoisted_indirect: set[sympy.Symbol] = set()  # indices loaded once, before the loop
        # temporary -> (the element it was loaded from, its 16-bit dtype), for a store of it
        # unchanged into that dtype (a transpose, a permute): it copies the bits (``store``)
        self.loaded_bits: dict[str, tuple[str, torch.dtype]] = {}
        self.block: VectorBlock | None = None  # the loop's range, where float16 rows convert in
        #                                        blocks (cpp_blocks.py; None: element by element)
        self.tile = False  # the body runs in 2-D tiles (``tiled_read``)

    def _fresh(self, prefix: str) -> str:
        n = self._counts[prefix]
        self._counts[prefix] += 1
        return f"{prefix}{n}"

    def _emit(self, expr: str, ctype: str | None = None, op: str | None = None,
              before_loop: bool = False) -> str:
        """A temporary for ``expr`` (of C++ type ``ctype``, where known): this loop's own (made
        ``before_loop`` if it is the same at every point), or a math library call loaded back
        from where an earlier loop over the row kept it."""
        out = self.code.hoisted if before_loop else self.code.body
        var = self.values.kept_copy(self, expr, op) or self.cse.generate(out, expr)
        self.values.note(self, var, expr, ctype)
        return var

    def index(self, expr: sympy.Expr) -> str:
        """An index in C++, simplified over the kernel's ranges first: a member's loop variables
        are ``xindex`` split into digits, which its indexer often joins again
        (``781*(xindex / 781) + xindex % 781`` is ``xindex``: no division in the inner loop)."""
        if expr not in self._indices:
            simple = simplify_index(sympy.sympify(expr).subs(self.index_subs), self.var_ranges)
            self.simplified.append(simple)
            self._indices[expr] = (cexpr(simple), simple)
        return self._indices[expr][0]

    # --- memory -------------------------------------------------------------------------------
    def load(self, name: str, index: sympy.Expr) -> str:
        value = f"{self.pointers[name]}[{self.index(index)}]"
        first = self.block_first(name, index)
        value = self.tiled_read(name, index, value) or (first is None and self.invariants.row_pointer(
            self.pointers[name], self._indices[index][1], self.code.hoisted, self._fresh)) or value
        if first is not None:  # the row converted before the loop, read as a float array
            array = self.block.load(self.code.converts_in, self.pointers[name], first)
            value = f"{array}[{self.block.element()}]"
        elif self.dtypes[name] in HALF_DTYPES:  # (no struct temporary: cpp_prefix.h says why)
            element, value = value, f"mc::load_float({value})"
        invariant = self.invariants.index(self._indices[index][1])
        # an element the same at every point (a row's mean, ``in_ptr3[xindex]`` in a loop over
        # ``rindex``) is read once, before the loop: left in it, g++'s partial redundancy
        # elimination may carry it around the loop's back edge, and the loop no longer
        # vectorises (a layernorm backward's last loop: 100 -> 17 us); not where a member
        # writes an input in place, since the element might change during the loop
        var = self._emit(value, compute_type(self.dtypes[name]),
                         before_loop=invariant and self.values.inputs_stay)
        if value.startswith("mc::load_float("):
            self.loaded_bits[var] = (element, self.dtypes[name])
        if invariant:
            self.invariants.note(var, value)
        return var

    def store(self, name: str, index: sympy.Expr, value: str, mode: str | None = None) -> None:
        # a reduction's result exists after its loop: its store goes there too
        out = self.code.suffix if value in self.code.readouts else self.code.body
        target = f"{self.pointers[name]}[{self.index(index)}]"
        if mode == "atomic_add":  # (cpp_prefix.h: threads may add into one element at once)
            self.adds_into_shared = True
            simple, inner = self._indices[index][1], self.invariants.inner
            self.adds_may_collide |= not distinct_along_loop(simple, inner, self.hoisted_indirect)
            self.rows_apart &= whole_rows_apart(simple, inner, self.var_ranges)
            self.rows_own &= rows_keep_apart(simple, X1, self.var_ranges, self.indirect_ranges)
            if not self.code.threads_asked:  # (a lone thread adds without the atomic's cost)
                self.code.hoisted.writeline("const bool shared = omp_in_parallel();  "
                                            "// other threads may add into the same elements")
                self.code.threads_asked = True
            if self.dtypes[name] in HALF_DTYPES:
                out.writeline(f"mc::atomic_add_float(&{target}, {value}, shared);")
            else:
                ctype = storage_type(self.dtypes[name])
                out.writeline(f"mc::atomic_add<{ctype}>(&{target}, static_cast<{ctype}>({value}), "
                              "shared);")
            return
        if self.loaded_bits.get(value, (None, None))[1] == self.dtypes[name] and \
                self.values.inputs_stay:
            # a 16-bit value stored as it was loaded: the bits, no conversion to float and back
            # (a bfloat16 transpose: 98 -> 34 us); the element is read again here, unchanged
            out.writeline(f"{target}.bits = {self.loaded_bits[value][0]}.bits;")
            return
        if self.dtypes[name] in HALF_DTYPES:
            unrounded, dtype = self.rounded.get(value, (value, None))
            value = unrounded if dtype == self.dtypes[name] else value
            first = self.block_first(name, index, store=True) if out is self.code.body else None
            if first is not None:  # into a float array, converted after the loop
                array = self.block.store(self.code.converts_in, self.code.converts_out,
                                         self.pointers[name], first)
                out.writeline(f"{array}[{self.block.element()}] = {value};")
                return
            out.writeline(f"mc::store_float({target}, {value});")
            return
        out.writeline(f"{target} = static_cast<{storage_type(self.dtypes[name])}>({value});")

    def tiled_read(self, name: str, index: sympy.Expr, element: str) -> str | None:
        """In a 2-D tile, a read across the tile's rows (a transpose's operand) from the tile's
        own copy of it, made before the tile's loops (Inductor's C++ ``transpose_mxn`` into a
        local array): the copy reads each element once, the loop reads the copy consecutively
        and stays a plain vector loop. Read in the loop itself, each vector was a gather of 16
        elements from 16 cache lines (``x.t() + y`` of 1024 x 1024 floats, two threads: 630 ->
        220 us). None for any other read, and inside a mask (the copy would read outside it)."""
        simple = self._indices[index][1]
        if not self.tile or self.invariants.masked or not nearer_along(simple, X1, X0) or any(
                s.name.startswith("indirect") for s in simple.free_symbols):
            return None
        key = (name, simple)
        if key not in self.code.tiles:
            rows = tile_rows(simple, self.var_ranges)  # 16 rows of 16 consecutive elements?
            self.code.tiles[key] = TileRead(
                f"{self.pointers[name]}_tile{len(self.code.tiles)}",
                storage_type(self.dtypes[name]), element,
                None if rows is None else (f"{self.pointers[name]} + {cexpr(rows[0])}", rows[1],
                                           self.dtypes[name].itemsize))
        return f"{self.code.tiles[key].array}[{TILE}*(x1 - x1_tile) + (x0 - x0_tile)]"

    def block_first(self, name: str, index: sympy.Expr,
                    store: bool = False) -> sympy.Expr | None:
        """Where the loop's range of ``name`` starts, if its points convert in a block: a
        float16 buffer read or written (or a bfloat16 one written, where the CPU converts it a
        vector at a time) at consecutive points of the loop, outside any mask."""
        dtypes = STORE_BLOCK_DTYPES if store else BLOCK_DTYPES
        if self.block is None or self.dtypes[name] not in dtypes or \
                not self.invariants.inner or self.invariants.masked:
            return None  # (per-row code runs outside the loop: no block)
        return self.block.first(self._indices[index][1])

    # --- values -------------------------------------------------------------------------------
    def constant(self, value: Any, dtype: torch.dtype) -> str:
        text = literal(value, dtype)
        if not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool:
            self.mask_bounds.constants[text] = value
        return text

    def index_expr(self, expr: sympy.Expr, dtype: torch.dtype) -> str:
        var = self._emit(f"static_cast<{compute_type(dtype)}>({self.index(expr)})",
                         compute_type(dtype))
        self.mask_bounds.index_values[var] = self._indices[expr][1]
        if self.invariants.index(self._indices[expr][1]):
            self.invariants.note(var, f"static_cast<{compute_type(dtype)}>({self.index(expr)})")
        bounds = value_range(self._indices[expr][1], self.var_ranges)
        if bounds is not None:
            self.ranges[var] = bounds
        return var

    def to_dtype(self, x: str, dtype: torch.dtype) -> str:
        if dtype in HALF_DTYPES:  # round to the 16-bit type, keep computing in float
            var = self._emit(f"mc::round_to<{storage_type(dtype)}>({x})", "float")
            self.rounded[var] = (x, dtype)
            return var
        var = self._emit(f"static_cast<{compute_type(dtype)}>({x})", compute_type(dtype))
        self.invariants.note(var, f"static_cast<{compute_type(dtype)}>({{0}})", (x,))
        if x in self.ranges and dtype in (torch.int64, torch.int32):  # (indices fit in both)
            self.ranges[var] = self.ranges[x]
        return var

    def where(self, cond: str, a: str, b: str) -> str:
        var = self._emit(f"{cond} ? {a} : {b}", self.values.result_type("where", (a, b)))
        self.invariants.note(var, "{0} ? {1} : {2}", (cond, a, b))  # (a masked token id)
        return var

    def masked(self, mask: str, body: Callable[[], str], other: Any) -> str:
        """``body`` runs in a lambda called only where ``mask`` holds, so its loads never read
        outside the mask (cat, pad); values it makes stay inside the lambda."""
        if mask == "true":  # it always holds (a pooling window inside the input): no lambda
            return body()
        outer, inner = self.code.body, IndentedBuffer()
        forwarded = dict(self.scope)
        self.code.body = inner
        self.invariants.masked += 1
        try:
            with self.cse.scoped():
                result = body()
        finally:
            self.invariants.masked -= 1
            self.code.body = outer
            self.scope.clear()
            self.scope.update(forwarded)  # recomputed producers lived in the lambda
        # the same block under the same mask (two fused nodes reading one padded window) is
        # one lambda: its temporaries are its own, so it is the same block whatever they are named
        same = f"masked {mask} {other!r}: " + local_names_numbered(inner.getvalue(), result)
        lam = self.cse.cache.get(same)
        if lam is None:
            lam = self.cse.cache[same] = self._fresh("masked")
            outer.writeline(f"auto {lam} = [&] {{")
            with outer.indent():
                outer.splice(inner)
                outer.writeline(f"return {result};")
            outer.writeline("};")
        value = f"{mask} ? {lam}() : {masked_fill(lam, other)}"
        return self._emit(value, self.values.type_of(result))

    def indirect_indexing(self, value: str, size: sympy.Expr, check: Check = Check()) -> sympy.Symbol:
        """A loaded integer used inside an index, checked against ``size`` as eager checks it
        (``x[-1]`` is ``x[size - 1]``; ``gather`` rejects it). A value known to lie inside
        (``arange``, ``% size``, a clamp: checks.py's value ranges) is used unchecked."""
        var = self._fresh("indirect")
        bounds = unchecked_range(value, size, check, self.ranges, self.mask_bounds.constants)
        if sympy.sympify(size).is_number:  # inside the dim once checked or wrapped
            self.indirect_ranges[sympy.Symbol(var, integer=True)] = \
                bounds if bounds is not None and bounds[0] >= 0 else (0, int(size) - 1)
        if bounds is not None:  # (a negative one only where the kind wraps it)
            wrapped = value if bounds[0] >= 0 else \
                f"{value} < 0 ? {value} + {cexpr(size)} : {value}"
            self.code.body.writeline(f"const int64_t {var} = {wrapped};  "
                                     f"// {no_check_comment(value, bounds)}")
            return sympy.Symbol(var, integer=True)
        call = "mc::wrapped_index" if check.error.wrap else "mc::checked_index"
        why = f"eager: {check.error.exception.__name__} outside the dim"
        out = self.code.body
        if value in self.invariants.values:  # checked once, before the loop (cpp_hoist.py)
            out, value = self.code.hoisted, self.invariants.values[value]
            why += f"; the same for every {', '.join(map(str, self.invariants.inner))}"
            self.hoisted_indirect.add(sympy.Symbol(var, integer=True))
        site = site_of(self.checks, check)
        out.writeline(f"const int64_t {var} = {call}({value}, {cexpr(size)}, error, "
                      f"{site});  // {why}")
        if not (sympy.sympify(size).is_positive and (site, size) not in self.dim_sizes):
            self.dim_sizes.append((site, size))
        return sympy.Symbol(var, integer=True)

    def reduction(self, dtype: torch.dtype, src_dtype: torch.dtype, reduction_type: str,
                  value: str) -> str | tuple[str, ...]:
        key = (reduction_type, dtype, value)
        if key in self.reductions:  # welford's mean and m2 nodes share one accumulator
            return self.reductions[key]
        kind = REDUCTIONS[reduction_type]
        # argmax compares values of the source dtype; the others accumulate in ``dtype``
        t = compute_type(src_dtype if reduction_type in ("argmax", "argmin") else dtype)
        # a whole tensor's sum (one row) accumulates in double: a thread's lanes add its share
        # one value after another, where eager's cascade sum stays within a few ulp; rows keep
        # float lanes (shorter sums; double would halve the vector width: 0.13 -> 0.22 ms)
        wide = reduction_type == "sum" and t == "float" and \
            sympy.sympify(self.var_ranges.get(XINDEX, 0)) == 1
        # (argmax's position in the row: ``r0 + 512*r1`` where the row is split into runs)
        position = cexpr(self.index_subs.get(RINDEX, RINDEX))
        acc = Accumulator(self._fresh("acc"), kind, "double" if wide else kind.acc_type.format(t=t),
                          dtype, t, value=value, position=position)
        self.code.accumulators.append(acc)
        self.code.prefix.writeline(f"{acc.ctype} {acc.name} = {kind.init.format(t=t)};")
        update = kind.update.format(acc=acc.name, value=value, t=t, rindex=position)
        acc.line = f"{acc.name} = {update};"
        self.code.body.writeline(acc.line)
        outs = []
        for readout in ("static_cast<float>({acc})",) if wide else kind.readout:
            expr = readout.format(acc=acc.name)
            if expr == acc.name:
                outs.append(expr)
            else:
                outs.append(self.cse.newvar())
                self.code.suffix.writeline(f"auto {outs[-1]} = {expr};")
        self.code.readouts.update(outs)
        positions = reduction_type in ("argmax", "argmin")  # (the others read out values of t)
        self.values.types.update(dict.fromkeys(outs, "int64_t" if positions else t))
        result = tuple(outs) if len(outs) > 1 else outs[0]
        self.reductions[key] = result
        return result

    def scan(self, dtype: torch.dtype, scan_type: str, value: str) -> str:
        """A running accumulator, declared before the loop over the row and updated at each
        step; each point's value is the accumulator rounded to ``dtype``, as eager's output is
        (what the store writes and a fused consumer reads). A float32 scan runs in double, as
        eager's CPU kernel (its ``acc_type``): the steps are in order, so the error grows with
        the row (a 16-bit one in float)."""
        key = ("scan", scan_type, dtype, value)
        if key not in self.reductions:
            kind, t = SCANS[scan_type], compute_type(dtype)
            acc = Accumulator(self._fresh("acc"), kind, "double" if t == "float" and
                              dtype == torch.float32 else t)
            self.code.accumulators.append(acc)
            self.code.prefix.writeline(f"{acc.ctype} {acc.name} = {kind.init.format(t=acc.ctype)};")
            update = kind.update.format(acc=acc.name, value=value, t=acc.ctype)
            self.code.body.writeline(f"{acc.name} = {update};")
            self.values.types[acc.name] = acc.ctype
            self.reductions[key] = acc.name
        return self.to_dtype(self.reductions[key], dtype)


BOOL_LITERALS = {"true": True, "false": False}


def folded_logical(op: str, args: tuple[str, ...], type_of: Callable) -> str | None:
    """``true && x`` is ``x``, ``false && x`` is ``false`` (and ``||`` the other way round), for a
    boolean ``x``: the masks of a pooling window whose comparisons value ranges decided."""
    if op not in ("logical_and", "logical_or") or len(args) != 2:
        return None
    absorbing = op == "logical_or"  # true || x, false && x
    for literal, other in ((args[0], args[1]), (args[1], args[0])):
        if literal in BOOL_LITERALS:
            if BOOL_LITERALS[literal] == absorbing:
                return literal
            if other in BOOL_LITERALS or type_of(other) == "bool":
                return other
    return None


def decided_extremum(op: str, args: tuple[str, ...], ranges: list) -> str | None:
    """The operand a ``minimum`` or ``maximum`` always picks, where the operands' value ranges
    do not overlap (a pooling window's end ``min(2*i + 2, 16)`` is ``2*i + 2``)."""
    if op not in ("minimum", "maximum") or len(args) != 2 or None in ranges:
        return None
    (a_low, a_high), (b_low, b_high) = ranges
    low, high = (args[0], args[1]) if a_high <= b_low else \
        (args[1], args[0]) if b_high <= a_low else (None, None)
    return low if op == "minimum" else high


def _make_op(name: str) -> Callable:
    def op(self: CppOpsHandler, *args: str) -> str:
        ranges = [known_range(a, self.ranges, self.mask_bounds.constants) for a in args]
        decided = decided_comparison(name, ranges)
        if decided is not None:  # the same at every point (value ranges): a literal
            return "true" if decided else "false"
        folded = folded_logical(name, args, self.values.type_of) or \
            decided_extremum(name, args, ranges)
        if folded is not None:
            return folded
        if name in MaskBounds.FLIPPED:  # a comparison: lt, le, gt, ge
            self.mask_bounds.compare(name, *args)
        ctype = self.values.result_type(name, args)
        constant = self.mask_bounds.constants.get(args[-1])  # an integer literal divisor
        constant = int(constant) if isinstance(constant, (int, sympy.Integer)) else None
        if name in DIVISIONS and ctype not in FLOAT_TYPES and not constant:
            args = (args[0], f"mc::divisor({args[1]}, error, {site_of(self.checks, DIVISION)})")
        bounds = op_range(name, ranges)
        spelling = narrowed(name, C_OPS[name], ctype)  # looked up now: a row can be swapped
        var = self._emit(spelling.format(*args), ctype, name)
        self.invariants.note(var, spelling, args)
        if bounds is not None and ctype not in FLOAT_TYPES and fits(bounds, ctype):
            self.ranges[var] = bounds  # (no range: a NaN; a narrow int wrapping around)
        return var

    op.__name__ = name
    return op


add_elementwise_ops(CppOpsHandler, _make_op)
