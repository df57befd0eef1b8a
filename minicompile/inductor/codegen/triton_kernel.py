"""One Triton kernel written from one ``KernelGroup`` (mirrors ``TritonKernel`` in
torch/_inductor/codegen/triton.py and ``SIMDKernel`` in codegen/simd.py).

The kernel is the ``ops`` handler: each call appends a line to the kernel body and returns the
name of a temporary (``tmp3``). Three shapes of kernel, as Inductor's:

    triton_poi_*  pointwise: a program owns XBLOCK points, ``xindex`` is (XBLOCK,)
    triton_per_*  persistent reduction: a program owns XBLOCK whole rows; ``xindex`` is
                  (XBLOCK, 1), ``rindex`` (1, RBLOCK) with RBLOCK >= rnumel, so an element value
                  is (XBLOCK, RBLOCK) and a row value (XBLOCK, 1); a reduction is one ``tl.sum``
    triton_poi_* with a 2-D tile (``triton_tiling.py``): a program owns a (YBLOCK, XBLOCK)
                  block of ``(y0, x0)``, ``xindex = xnumel * y0 + x0``: for a transposed read
    triton_red_*  looped reduction (long rows): one ``for roffset`` loop per loop phase of the
                  group (``KernelGroup.phases``), each reduction kept in (XBLOCK, RBLOCK)
                  accumulators inside the loop and reduced across lanes after it; per-row code
                  runs between the loops

A kernel whose parts fit a frame of ``triton_frames.py`` (a plain pointwise kernel, a plain looped
reduction) is written there from its parts: the addresses it loads, the lines that compute, its
accumulators, the addresses and values it stores. Loads and stores are masked (``xmask``,
``rmask``, and the masks of enclosing ``ops.masked``);
half-precision values are computed in float32 (upcast after a load, downcast at a store).
Indices are int32 (``tl.arange``): a buffer over 2**31 elements would need int64 indexing,
which Inductor switches to by size; this kernel writer does not.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import sympy
import torch

from ..checks import DIVISION, DIVISIONS, Check, HostCheck, Range, op_range, site_of
from ..ir import MemoryDep
from ..kernel_group import RINDEX, XINDEX, KernelGroup, KernelMember
from ..sizevars import simplify_index, value_range
from ..ops_handler import add_elementwise_ops
from . import triton_frames
from .common import CSE, CodegenError, IndentedBuffer, KernelSignature, emit_members, local_stride
from .triton_checks import TritonChecks, checks_emitted
from .triton_reductions import TritonReductions
from .triton_scans import TritonScans
from .triton_tiling import X0, Y0, Tile
from .triton_ops import (SIGN_BIT, TRITON_DTYPES, TRITON_OPS, compute_dtype, is_negative_zero,
                         paren, result_dtype, shift_template, texpr, triton_constant,
                         triton_dtype)

PERSISTENT_RNUMEL = 1024  # rows up to this long are reduced in one block: no loop
# A kernel that goes over its row more than once (softmax: max, then sum of exp, then the
# quotient) keeps rows up to this long in registers, so it reads each row once, not three times:
# at 8192 floats a row is 32 per thread with 8 warps (Triton's fused-softmax tutorial does this),
# at 32768 (cross-entropy over a 32000-word vocabulary) 32 per thread with 32 warps. On an H100,
# cross-entropy over 16384x32000 bfloat16 logits: 0.73 ms looped (the row read twice), 0.59 ms so.
PERSISTENT_MULTIPASS_RNUMEL = 32768
# Reductions that carry several values per lane (argmax: the value and its index; Welford: mean,
# m2, weight) get the same limit. Looped, each element costs a combine of all of them
# (``argmax_combine``: NaN tests and an index comparison, two selects; ``welford_reduce``: a
# division); persistent, the row is a plain max then a min over the indices holding it, or a
# sum then a sum of squares (triton_reductions.py), as Triton's interpreter and a GPU both
# reduce fastest. (Inductor loops past 1024 for them too, with its ``maximum_with_index``.)
MULTI_VALUE_REDUCTIONS = frozenset({"argmax", "argmin", "welford_reduce"})
# An outer reduction (``x.sum(0)``) reduced in one block holds XBLOCK x RBLOCK values, so a long
# row leaves room for few adjacent kept elements: 512 rows of bfloat16 left 16 columns, 32 bytes
# a row per program (sum(0) of 8192 x 8192 split in 16: 45 us on an H200, Inductor's looped
# kernel 33). Past this many rows it loops, its tiles as wide as an outer loop's (Inductor's
# threshold for reductions that are not inner ones).
OUTER_PERSISTENT_RNUMEL = 64

class TritonKernel(TritonReductions, TritonScans, TritonChecks):
    """Writes the source of one kernel; ``codegen()`` returns it. ``numel_of`` (a buffer's
    element count) lets the launcher check index tensors read whole (``triton_checks.py``)."""

    def __init__(self, group: KernelGroup, name: str, dtype_of: Callable[[str], torch.dtype],
                 options: Any = None, tile: Tile | None = None,
                 numel_of: Callable[[str], sympy.Expr] | None = None, looped: bool = False):
        self.group, self.name, self.tile, self.numel_of = group, name, tile, numel_of
        # index and divisor checks: always under the interpreter; on a GPU as device asserts
        self.checks_emitted = checks_emitted(options is not None and options.triton_device_asserts)
        self.buffer_dtype = dtype_of  # buffer name -> its torch dtype
        self.signature = KernelSignature.of(group)
        unsupported = {n: d for n in self.signature.buffers() if (d := dtype_of(n))
                       not in TRITON_DTYPES}
        if unsupported:  # complex tensors: Triton has no type for them (the graph falls back)
            raise CodegenError(f"kernel {name}: no Triton type for {unsupported}")
        self.args = {n: f"in_ptr{i}" for i, n in enumerate(self.signature.inputs)}
        self.args.update({n: f"out_ptr{i}" for i, n in enumerate(self.signature.outputs)})
        if group.kind == "pointwise":
            self.kind = "tiled" if tile is not None else "pointwise"
        else:
            self.kind = "looped" if looped or not self.fits_in_one_block(group) else "persistent"
        self.cse = CSE()
        self.dtypes: dict[str, torch.dtype] = {}  # temporary -> its dtype
        self.body = IndentedBuffer()  # where lines go now (a loop body inside a looped phase)
        self.before_loop = self.after_loop = None  # accumulators' set-up and final reductions
        self.row_values: set[str] = set()  # results of this loop's reductions (after the loop)
        self.masks: list[str] = []  # the masks of the enclosing ops.masked calls
        self.level = "element"  # the member being emitted runs per element or per row
        self.loop_lines: list[str] = []  # a looped kernel's loop body, and its per-row code
        self.row_lines: list[str] = []
        self.accesses: list[tuple[str, str, MemoryDep]] = []  # ("load"|"store", buffer, dep)
        self._indirect = 0
        self.in_bounds: dict[sympy.Symbol, str] = {}  # indirect index -> its bounds condition
        self.checks: list[Check] = []  # the kernel's checks, by site number (checks.py)
        self.host_checks: list[HostCheck] = []  # the launcher's, before each launch
        self.loaded_from: dict[str, tuple[str, sympy.Expr]] = {}  # temporary -> its load
        self.in_loop = False  # emitting a looped reduction's loop body
        # integer temporary -> its known [low, high] (an index needing no check, a divisor
        # needing none): from arange's lanes, constants, and the ops between them (checks.py)
        self.ranges: dict[str, Range] = {}
        self.parts = triton_frames.PlainParts()  # what a frame of triton_frames.py takes
        self.helpers: dict[str, list[str]] = {}  # a scan's combine functions (triton_scans.py)

    @staticmethod
    def fits_in_one_block(group: KernelGroup) -> bool:
        """Persistent (the whole row in one block) or looped (an ``RBLOCK`` loop per phase):
        a row that a looped kernel would walk more than once, or combine several values of per
        element (``MULTI_VALUE_REDUCTIONS``), stays in registers up to the longer limit."""
        rnumel = sympy.sympify(group.rnumel)
        if not rnumel.is_number:
            return False  # RBLOCK is a compile-time constant; a symbolic row needs the loop
        loops = sum(phase.kind == "loop" for phase in group.phases())
        multi_value = any(getattr(m.node.data, "reduction_type", None) in MULTI_VALUE_REDUCTIONS
                          for m in group.members if m.is_reduction())
        several = loops > 1 or multi_value
        limit = PERSISTENT_MULTIPASS_RNUMEL if several else PERSISTENT_RNUMEL
        return int(rnumel) <= limit

    # --- the kernel's structure --------------------------------------------------------------
    def codegen(self) -> str:
        """The kernel's source: a ``@triton.jit`` function named ``self.name``."""
        body = self.emitted
        framed = self.framed(body)
        if framed is not None:
            return triton_frames.with_header(framed, self.header_comment() +
                                             self.size_constants())
        code = IndentedBuffer()
        for lines in self.helpers.values():
            code.writelines([*lines, "", ""])
        code.writeline("@triton.jit")
        code.writeline(f"def {self.name}({', '.join(self.parameters())}):")
        with code.indent():
            code.writelines(self.header_comment())
            code.writelines(self.size_constants())
            code.writelines(self.prologue())
            code.splice(body)
        return code.getvalue()

    def codegen_part(self) -> str:
        """This pointwise kernel as a part of a combo kernel (``triton_combo.py``): a jit
        function given its program's number within the part, ``pid``."""
        code = IndentedBuffer()
        code.writeline("@triton.jit")
        code.writeline(f"def {self.name}({', '.join(self.arguments() + ['pid', 'XBLOCK: tl.constexpr'])}):")
        with code.indent():
            code.writelines(self.header_comment())
            code.writelines(self.size_constants())
            code.writelines(["xoffset = pid * XBLOCK", "xindex = xoffset + tl.arange(0, XBLOCK)",
                             "xmask = xindex < xnumel"])
            code.splice(self.emitted)
        return code.getvalue()

    @functools.cached_property
    def emitted(self) -> IndentedBuffer:
        """The members' code, emitted once: a kernel written first to see its accesses
        (``TritonScheduling.select_tiling``) is then only named and framed, not written again."""
        scope: dict[str, Any] = {}
        if self.kind == "looped":
            return self.codegen_looped(scope)
        for member in self.group.members:
            self.emit(member, scope)
        return self.body

    def framed(self, body: IndentedBuffer) -> str | None:
        """The kernel written by its frame in ``triton_frames`` (looked up now: the course swaps
        them), or None when its parts fit no frame."""
        parts = self.parts
        if not parts.fits() or self.kind == "persistent":
            return None
        params = self.arguments()
        loads, stores = list(parts.loads.values()), list(parts.stores.values())
        if self.kind in ("pointwise", "tiled"):
            frame = triton_frames.pointwise_kernel if self.kind == "pointwise" else \
                triton_frames.tiled_kernel
            return frame(self.name, params, loads, parts.body(body.lines), stores)
        return triton_frames.looped_reduction_kernel(
            self.name, params, loads, parts.body(self.loop_lines), parts.reductions,
            parts.body(self.row_lines), stores)

    def arguments(self) -> list[str]:
        """The buffers' pointers, then the size symbols."""
        return [self.args[n] for n in self.signature.buffers()] + [
            str(s) for s in self.signature.sizes]

    def parameters(self) -> list[str]:
        params = self.arguments()
        if self.kind == "tiled":
            return params + ["ynumel", "xnumel", "XBLOCK: tl.constexpr", "YBLOCK: tl.constexpr"]
        params.append("xnumel")
        if self.kind == "pointwise":
            return params + ["XBLOCK: tl.constexpr"]
        return params + ["rnumel", "XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr"]

    def numels(self) -> list:
        """The sizes the call passes after the buffers and size symbols."""
        if self.tile is not None:
            return [self.tile.ynumel, self.tile.xnumel]
        if self.kind == "pointwise":
            return [self.group.numel]
        return [self.group.numel, self.group.rnumel]

    def size_constants(self) -> list[str]:
        """``xnumel = 131044``: each static size written into the kernel (as Inductor writes
        them), over the argument of that name. Triton learns of an integer argument only
        whether it is divisible by 16; of 131044 (362 x 362) it then knows nothing, a mask
        ``x0 < xnumel`` may change at any lane, and every load and store under it moves one
        element. As a constant, ``x0 < 131044`` holds over runs of 4 lanes (131044 = 4 x 32761)
        and a row of 131044 float32 starts 16-byte aligned: 4-wide accesses."""
        names = {"tiled": ("ynumel", "xnumel"), "pointwise": ("xnumel",)}.get(
            self.kind, ("xnumel", "rnumel"))
        return [f"{name} = {int(size)}" for name, size in zip(names, self.numels())
                if sympy.sympify(size).is_number]

    def header_comment(self) -> list[str]:
        g = self.group
        fused = ", ".join(m.get_name() + ("" if m.level == "element" else " (per row)")
                          for m in g.members)
        lines = [f"# fuses {fused}", f"# aten: {', '.join(g.origins) or '-'}",
                 f"# reads {', '.join(g.reads) or '-'}; writes {', '.join(g.stored) or '-'}",
                 f"# bytes: read {g.read_bytes}, write {g.write_bytes}"]
        if self.tile is not None:
            lines.append(f"# 2-D tile: xindex = {self.tile.xnumel}*y0 + x0; an access contiguous "
                         "along y0 and another along x0, each coalesced in its own layout")
        scan = any(m.node.is_scan() for m in g.members)
        if scan:
            lines.append("# scan: tl.associative_scan along r" + (
                ", the running value carried from block to block" if self.kind == "looped"
                else ", the whole row in one block"))
        if self.reduction_hint() == "outer":
            lines.append(f"# outer {'scan' if scan else 'reduction'}: loads are contiguous "
                         "along x, not r; the launcher tiles many adjacent x per program and "
                         "loops over r")
        return lines

    def prologue(self) -> list[str]:
        if self.kind == "tiled":  # program p owns tile (p // xtiles, p % xtiles)
            return list(triton_frames.TILE_INDICES)
        if self.kind == "pointwise":
            return ["xoffset = tl.program_id(0) * XBLOCK",
                    "xindex = xoffset + tl.arange(0, XBLOCK)",
                    "xmask = xindex < xnumel"]
        lines = ["xoffset = tl.program_id(0) * XBLOCK",
                 "xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
                 "xmask = xindex < xnumel"]
        if self.kind == "persistent":
            return lines + ["rindex = tl.arange(0, RBLOCK)[None, :]", "rmask = rindex < rnumel"]
        return lines + ["rbase = tl.arange(0, RBLOCK)[None, :]"]

    def emit(self, member: KernelMember, scope: dict[str, Any]) -> None:
        self.level = member.level
        emit_members([member], self, self.group, scope)

    def codegen_looped(self, scope: dict[str, Any]) -> IndentedBuffer:
        """Row code at the top level; each loop phase one ``for roffset`` loop."""
        top = IndentedBuffer()
        elementwise = {m.get_name() for m in self.group.members
                       if m.level == "element" and not m.is_reduction()}
        phases = self.group.phases()
        self.parts.plain &= [p.kind for p in phases[:1]] == ["loop"] and \
            all(p.kind == "row" for p in phases[1:])  # the looped frame: one loop, then rows
        for phase in phases:
            if phase.kind == "row":
                self.body = top
                start = len(top.lines)
                for member in phase.members:
                    self.emit(member, scope)
                self.row_lines += top.lines[start:]
                continue
            for name in elementwise & set(scope):  # an earlier loop's values: recomputed
                del scope[name]
            self.body, self.before_loop, self.after_loop = (IndentedBuffer(), IndentedBuffer(),
                                                            IndentedBuffer())
            self.in_loop = True
            with self.cse.scoped():
                for member in phase.members:
                    self.emit(member, scope)
            self.in_loop = False
            top.splice(self.before_loop)
            top.writeline("for roffset in range(0, rnumel, RBLOCK):")
            with top.indent():
                top.writelines(["rindex = roffset + rbase", "rmask = rindex < rnumel"])
                top.splice(self.body)
            top.splice(self.after_loop)
            self.loop_lines, self.row_lines = list(self.body.lines), list(self.after_loop.lines)
            self.row_values.clear()
        return top

    def reduction_hint(self) -> str:
        """"outer" when the row's elements lie far apart and the kept dim is contiguous in every
        element-level load that moves along either (``x.sum(0)``, a batchnorm's statistics over
        N, H, W of a channels-last tensor): the launcher then tiles many adjacent kept elements
        per program, coalesced, and walks the reduced dim in the loop. Decided from the strides
        of the loads the kernel really emitted, so a fused prologue's reads count too."""
        if not self.reduces():
            return "inner"
        x_contiguous = r_contiguous = False
        for kind, _, dep in self.accesses:
            if kind != "load" or RINDEX not in dep.index.free_symbols:
                continue
            r_contiguous |= local_stride(dep.index, RINDEX) == 1
            x_contiguous |= local_stride(dep.index, XINDEX) == 1
        return "outer" if x_contiguous and not r_contiguous else "inner"

    def row_itemsize(self) -> int:
        """Bytes of the narrowest element that a load walking along the row reads (4 when
        none does): the launcher sizes an outer reduction's tiles in bytes from it."""
        return min((self.buffer_dtype(name).itemsize for kind, name, dep in self.accesses
                    if kind == "load" and RINDEX in dep.index.free_symbols), default=4)

    # --- temporaries --------------------------------------------------------------------------
    def generate(self, expr: str, dtype: torch.dtype, buffer: IndentedBuffer | None = None) -> str:
        name = self.cse.generate(self.body if buffer is None else buffer, expr)
        self.dtypes.setdefault(name, dtype)
        return name

    def dtype(self, value: str) -> torch.dtype:
        return self.dtypes[value]

    def reduces(self) -> bool:
        return self.kind in ("persistent", "looped")

    def is_block_index(self, index: sympy.Expr) -> bool:
        return any(s in (XINDEX, RINDEX, X0, Y0) or s.name.startswith("indirect")
                   for s in index.free_symbols)

    def in_tile(self, index: sympy.Expr) -> sympy.Expr:
        """``index`` in the kernel's block variables: the tile's ``(y0, x0)`` if it has one."""
        return index if self.tile is None else self.tile.rewrite(index)

    def mask(self, element: bool, index: sympy.Expr | None = None) -> str:
        """The mask of a load or store: the block's, the enclosing ``ops.masked``'s, and for an
        address made from a loaded index, that index's bounds (a lane whose index is out of
        range touches no memory, also where the device assert is compiled out)."""
        parts = ["xmask"] + (["rmask"] if element and self.reduces() else [])
        bounds = [] if index is None else [self.in_bounds[s] for s in sorted(
            index.free_symbols & self.in_bounds.keys(), key=str)]
        return " & ".join(parts + self.masks + bounds)

    def pointer(self, name: str, index: sympy.Expr, store: bool = False) -> str:
        """``in_ptr0 + (index)``; an index without a kernel variable is broadcast to the block,
        so that the masked load or store has one address per lane. (Decided on the simplified
        index: over a range of one element, ``17*xindex + 1`` is the constant ``1``.) A store's
        index along one side of a 2-D tile is broadcast to the tile too (a scatter's atomic add
        into a dim of size 1): Triton broadcasts the stored value to the address's shape, not
        the address to the value's."""
        index = self.in_tile(simplify_index(index, self.group.var_ranges()))
        text = texpr(index)
        one_side = store and self.kind == "tiled" and not {X0, Y0} <= index.free_symbols
        if not self.is_block_index(index) or one_side:
            shape = {"pointwise": "[XBLOCK]", "tiled": "[YBLOCK, XBLOCK]"}.get(self.kind,
                                                                              "[XBLOCK, 1]")
            text = f"{text} + tl.zeros({shape}, tl.int32)"
        return f"{self.args[name]} + ({text})"

    def row_invariant(self, index: sympy.Expr) -> bool:
        """A persistent kernel's load whose address does not move along the row (a variance's
        shift, ``x[i, 0]``, read by every element of row ``i``) is loaded once per row, an
        (XBLOCK, 1) value that broadcasts: masked by the row's mask alone, it is not the
        RBLOCK loads of one address per row that the element mask would make. (A looped
        kernel keeps the element mask: the frame of its loop takes only element loads.) A row of
        no elements reads nothing (the index of an empty tensor may fold to a constant 0)."""
        if self.kind != "persistent" or self.group.var_ranges()[RINDEX] == 0:
            return False
        symbols = simplify_index(index, self.group.var_ranges()).free_symbols
        return RINDEX not in symbols and not any(s.name.startswith("indirect") for s in symbols)

    def record(self, kind: str, name: str, index: sympy.Expr) -> None:
        ranges = tuple((v, r) for v, r in self.group.var_ranges().items()
                       if v in index.free_symbols)
        self.accesses.append((kind, name, MemoryDep(name, index, ranges)))

    # --- the ops handler ----------------------------------------------------------------------
    def load(self, name: str, index: sympy.Expr) -> str:
        index = sympy.sympify(index)
        self.record("load", name, index)
        dtype = self.buffer_dtype(name)
        element = self.level == "element" and not self.row_invariant(index)
        checked = index.free_symbols & self.in_bounds.keys()
        other = "" if not self.reduces() and not self.masks and not checked else ", other=0"
        expr = f"tl.load({self.pointer(name, index)}, {self.mask(element, index)}{other})"
        if compute_dtype(dtype) != dtype:
            expr += f".to({triton_dtype(compute_dtype(dtype))})"
        var = self.generate(expr, compute_dtype(dtype))
        self.note_load(var, name, index)
        address = self.pointer(name, index)
        framed = {"pointwise": "xmask", "tiled": "xmask",
                  "looped": "xmask & rmask, other=0"}.get(self.kind)
        self.parts.buffers["load"].add(name)
        # (a frame issues its loads first: one through a loaded index waits for that index)
        indirect = any(s.name.startswith("indirect") for s in index.free_symbols)
        self.parts.load(f"{var} = {expr}", var, address,
                        expr == f"tl.load({address}, {framed})" and not indirect)
        return var

    def store(self, name: str, index: sympy.Expr, value: str, mode: str | None = None) -> None:
        index = sympy.sympify(index)
        self.record("store", name, index)
        dtype = self.buffer_dtype(name)
        target = self.after_loop if value in self.row_values else self.body
        if self.dtype(value) != dtype:
            value = f"{paren(value)}.to({triton_dtype(dtype)})"
        address = self.pointer(name, index, store=True)
        mask = self.mask(RINDEX in index.free_symbols, index)
        if mode == "atomic_add":  # lanes and programs may add into one element at once
            # (the value made a block of its own by ``tl.where``: Triton 3.8's interpreter
            # adds a broadcast value, a constant's ``[1]``, at the first address only)
            line = (f"tl.atomic_add({address}, tl.where({mask}, {value}, 0), {mask}, "
                    "sem='relaxed')")
        else:
            line = f"tl.store({address}, {value}, {mask})"
        target.writeline(line)
        self.parts.buffers["store"].add(name)
        # (a frame writes plain stores; rows only after the loop)
        self.parts.store(line, address, value, mask == "xmask" and mode is None)

    def constant(self, value: Any, dtype: torch.dtype) -> str:
        dtype = compute_dtype(dtype)
        if is_negative_zero(value) and dtype in SIGN_BIT:
            # Triton's compiler turns a constant equal to 0 into +0.0 (x / -0.0 would give +inf):
            # spell -0.0 as its bits, the sign bit alone, reinterpreted as a float.
            int_type, bits = SIGN_BIT[dtype]
            return self.generate(f"tl.full([1], {bits}, {int_type}).to({triton_dtype(dtype)}, "
                                 f"bitcast=True)", dtype)
        text = texpr(value) if isinstance(value, sympy.Basic) else triton_constant(value)
        var = self.generate(f"tl.full([1], {text}, {triton_dtype(dtype)})", dtype)
        if isinstance(value, (int, sympy.Integer)) and not isinstance(value, bool) \
                and not dtype.is_floating_point:
            self.ranges[var] = (int(value), int(value))
        return var

    def index_expr(self, expr: sympy.Expr, dtype: torch.dtype) -> str:
        flat = sympy.sympify(expr)
        expr = self.in_tile(flat)
        if not self.is_block_index(expr):
            return self.constant(expr, dtype)
        var = self.generate(f"({texpr(expr)}).to({triton_dtype(compute_dtype(dtype))})",
                            compute_dtype(dtype))
        # over the lanes inside the block's mask (the others load and store nothing)
        var_ranges = self.group.var_ranges()
        bounds = value_range(simplify_index(flat, var_ranges), var_ranges)
        if bounds is not None and not dtype.is_floating_point:
            self.ranges[var] = bounds
        return var

    def to_dtype(self, x: str, dtype: torch.dtype) -> str:
        if self.dtype(x) == dtype:
            return x
        if dtype == torch.bfloat16:  # round as a GPU does, also under the interpreter
            x = self.to_dtype(x, torch.float32)
            return self.generate(f"triton_helpers.round_to_bfloat16({x})", torch.float32)
        source = self.dtype(x)
        if dtype == torch.bool:  # nonzero is true (LLVM's float-to-int1 truncates 0.5 to 0)
            return self.generate(f"{paren(x)} != 0", torch.bool)
        if dtype in (torch.uint8, torch.int8, torch.int16) and source.is_floating_point:
            # ATen's conversion wraps: to uint8 through int64 (-3.0 is 253), to int8 and int16
            # through the CPU's and the GPU's 32-bit conversion (-64736.0 is 800 as int16).
            # LLVM's direct conversion saturates on a GPU (-32768), and gives 0 for a negative
            # float made unsigned
            x = self.to_dtype(x, torch.int64 if dtype == torch.uint8 else torch.int32)
        expr = f"{paren(x)}.to({triton_dtype(dtype)})"
        if compute_dtype(dtype) != dtype:  # round to half precision, keep computing in float32
            expr += f".to({triton_dtype(compute_dtype(dtype))})"
        var = self.generate(expr, compute_dtype(dtype))
        if x in self.ranges and dtype in (torch.int64, torch.int32):  # (indices fit in both)
            self.ranges[var] = self.ranges[x]
        self.note_cast(var, x, dtype in (torch.int64, torch.int32))
        return var

    def where(self, cond: str, a: str, b: str) -> str:
        return self.generate(f"tl.where({cond}, {a}, {b})",
                             result_dtype("where", [self.dtype(a), self.dtype(b)]))

    def masked(self, mask: str, body: Callable[[], str], other: Any) -> str:
        self.masks.append(mask)
        try:
            value = body()
        finally:
            self.masks.pop()
        other = triton_constant(other, self.dtype(value))
        return self.generate(f"tl.where({mask}, {value}, {other})",
                             self.dtype(value))


def _make_op(name: str) -> Callable:
    def op(self: TritonKernel, *args: str) -> str:
        dtype = result_dtype(name, [self.dtype(a) for a in args])
        divisor = self.ranges.get(args[1]) if len(args) > 1 else None
        nonzero = divisor is not None and (divisor[0] > 0 or divisor[1] < 0)
        if name in DIVISIONS and not dtype.is_floating_point and not nonzero \
                and self.checks_emitted:
            # eager: ZeroDivisionError
            self.body.writeline(f"triton_helpers.check_divisor({args[1]}, "
                                f"{self.mask(self.level == 'element')}, {site_of(self.checks, DIVISION)})")
        template = TRITON_OPS[name]  # looked up now: a row can be swapped
        if name in ("bitwise_left_shift", "bitwise_right_shift") and dtype != torch.bool:
            template = shift_template(name, dtype)
        if name == "bitwise_not" and dtype == torch.uint8:
            # ``~x`` of a uint8 is ``x ^ -1`` to Triton's interpreter, and -1 is no uint8
            template = "{0} ^ 255"
        var = self.generate(template.format(*[paren(a) for a in args]), dtype)
        bounds = op_range(name, [self.ranges.get(a) for a in args])
        if bounds is not None and not dtype.is_floating_point:
            self.ranges[var] = bounds
        return var

    op.__name__ = name
    return op


add_elementwise_ops(TritonKernel, _make_op)
