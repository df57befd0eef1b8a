"""float16 rows converted in vector blocks, before and after the loop that computes on them (in
real Inductor, ``CppVecKernel`` in torch/_inductor/codegen/cpp.py loads
``at::vec::Vectorized<at::Half>`` and converts it with ``convert_to_float``: one vector
instruction for a vector of elements).

A float16 in memory is a bit pattern; a kernel computes in float. Converted element by element
inside a ``#pragma omp simd`` loop (``mc::load_float``, ``mc::store_float``: the branch-free
formulas of c10/util/Half.h), each conversion is ten or so integer and float instructions per
lane: g++ cannot turn them into the one instruction x86's F16C extension has for eight lanes
(``vcvtph2ps`` / ``vcvtps2ph``), and it has no vectorised ``_Float16`` conversion of its own.
So a load of a float16 row whose index is consecutive along the loop (``in_ptr0[x0 + 512*x1]``)
is converted before the loop, the whole range of the loop at once, into a float array, and
the loop reads the array; a store is written to a float array, converted after the loop:

    float in_ptr0_float[512];  // float16 -> float, 8 lanes an instruction (cpp_prefix.h)
    mc::load_floats(in_ptr0_float, &in_ptr0[512*x1], 512);
    #pragma omp simd
    for (int64_t x0 = 0; x0 < 512; x0++)
        { auto tmp0 = in_ptr0_float[x0]; ...  out_ptr0_float[x0] = tmp6; }
    mc::store_floats(&out_ptr0[512*x1], out_ptr0_float, 512);  // float -> float16

(SiLU(a) * b in float16, 256x512 on one core: 140 -> 83 us; the sigmoid alone takes 58.) The
conversions round as ``mc::store_float`` does (to nearest, ties to even); without F16C they are
the same per-element conversions in a loop of their own. A row of a reduction kernel is converted
once for all its loops (softmax reads its row in two). A bfloat16 load is left per element: it is
a shift, which g++ vectorises. Its store is a rounding of a few integer instructions a lane, which
g++ vectorises too, but a CPU with AVX512-BF16 has one instruction for sixteen lanes
(``vcvtneps2bf16``): there bfloat16 stores go through a block as float16's do (a bias and ReLU
in bfloat16, 1024x1024 on one core: 313 -> 197 us, the same bits).

A block needs the loop's whole range in a bounded array (``VectorBlock``: the ``XBLOCK`` points
of a flat loop, a row of at most ``MAX_BLOCK`` points, the ``XTILE`` points of a column
reduction's tile in each of its rows), every element of it read (not a masked
load, which may lie outside the tensor where its mask is off) and the kernel's inputs not written
while it runs (no member updates one in place): the conversion before the loop must read what
each point would have read, and the conversion after it must write nothing another point reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy
import torch

from .cpp_build import HAS_AVX512_BF16
from .cpp_printer import cexpr

BLOCK_DTYPES = (torch.float16,)  # loaded and stored in blocks
# stored in blocks: bfloat16 too where one instruction converts a vector of it (see above)
STORE_BLOCK_DTYPES = BLOCK_DTYPES + ((torch.bfloat16,) if HAS_AVX512_BF16 else ())
MAX_BLOCK = 4096  # the longest row converted in one block (16 KB of floats an array)


@dataclass
class VectorBlock:
    """The points the loop being written runs over: ``var`` from ``start``, ``count`` of them
    (C++), at most ``capacity``; and the float arrays converted for it so far, by
    ``(pointer, index of the first point)``."""

    var: sympy.Symbol
    start: sympy.Expr
    count: str
    capacity: int
    arrays: dict[tuple[str, sympy.Expr], str] = field(default_factory=dict)
    stored: set[str] = field(default_factory=set)  # pointers stored through an array

    def first(self, index: sympy.Expr) -> sympy.Expr | None:
        """The index at the loop's first point if ``index`` is ``var`` plus something the same
        at every point of the loop (``x0 + 512*x1`` along ``x0``: ``var`` is the one variable
        a block's loop runs over); else None."""
        rest = sympy.expand(index - self.var)
        if any(s == self.var or s.name.startswith("indirect") for s in rest.free_symbols):
            return None  # (not consecutive along the loop: strided, a digit of it, a gather)
        return rest + self.start

    def element(self) -> str:
        """The loop's point as an array position: ``x0``, ``xindex - xblock``."""
        return cexpr(self.var) + ("" if self.start == 0 else f" - {cexpr(self.start)}")

    def load(self, before: list[str], pointer: str, first: sympy.Expr) -> str:
        """The array holding the loop's range of ``pointer`` from ``first``, converted in
        ``before`` the first time a loop of this block reads it."""
        key = (pointer, first)
        if key not in self.arrays:
            self.arrays[key] = self.name(pointer)
            before.append(f"float {self.arrays[key]}[{self.capacity}];  // float16 -> float, "
                          "a vector at a time (cpp_blocks.py)")
            before.append(f"mc::load_floats({self.arrays[key]}, &{pointer}[{cexpr(first)}], "
                          f"{self.count});")
        return self.arrays[key]

    def store(self, before: list[str], after: list[str], pointer: str,
              first: sympy.Expr) -> str:
        """A float array the loop stores into, converted to ``pointer`` from ``first`` after it."""
        name = self.name(pointer)
        self.stored.add(pointer)
        before.append(f"float {name}[{self.capacity}];  // stored as 16-bit floats after the loop")
        after.append(f"mc::store_floats(&{pointer}[{cexpr(first)}], {name}, {self.count});")
        return name

    def name(self, pointer: str) -> str:
        taken = set(self.arrays.values()) | {f"{p}_float" for p in self.stored}
        name, n = f"{pointer}_float", 1
        while name in taken:
            name, n = f"{pointer}_float{n}", n + 1
        return name
