"""2-D tiles for pointwise kernels whose loads and stores are contiguous along different dims
(mirrors ``SIMDScheduling.select_tiling`` / ``candidate_tilings`` in torch/_inductor/codegen/simd.py).

A pointwise kernel walks its ``xnumel`` points in one flat ``xindex``; consecutive lanes of a
program take consecutive points. In ``x.t() + y`` the store (and ``y``) are contiguous in that
order, but ``x`` is read a whole row apart from one lane to the next: every lane's load is a
separate 32-byte memory transaction for 4 useful bytes. No single order serves both.

A tile splits the flat index at a loop boundary, ``xindex = X * y0 + x0`` with
``x0 in [0, X)``: each program owns a ``(YBLOCK, XBLOCK)`` block of ``(y0, x0)``. The store is
contiguous along ``x0``, the transposed load along ``y0``; Triton lays each access out along its
own contiguous axis and moves the values between the two layouts through shared memory, so both
are coalesced. The split is chosen from the kernel's own accesses: among the sizes its index
expressions divide ``xindex`` by (the loop boundaries), the first where one access is contiguous
along ``x0`` and another is nearer contiguous along ``y0`` than along ``x0``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy

from ..kernel_group import XINDEX
from ..sizevars import simplify_index
from .common import digit_sizes, local_stride, nearer_along

X0 = sympy.Symbol("x0", integer=True, nonnegative=True)  # position in the tile's contiguous dim
Y0 = sympy.Symbol("y0", integer=True, nonnegative=True)  # which line of the tile


@dataclass(frozen=True)
class Tile:
    """``xindex = xnumel * y0 + x0``: ``ynumel`` lines of ``xnumel`` points."""

    ynumel: int
    xnumel: int

    def var_ranges(self) -> dict[sympy.Symbol, sympy.Expr]:
        return {Y0: sympy.Integer(self.ynumel), X0: sympy.Integer(self.xnumel)}

    def rewrite(self, index: sympy.Expr) -> sympy.Expr:
        """An index in the flat ``xindex``, in the tile's ``(y0, x0)``: ``xindex // X`` becomes
        ``y0`` and ``xindex % X`` becomes ``x0``, as the simplifier knows ``x0 < X``."""
        return _rewrite(index, self.ynumel, self.xnumel)


@functools.lru_cache(maxsize=1 << 14)
def _rewrite(index: sympy.Expr, ynumel: int, xnumel: int) -> sympy.Expr:
    """(Remembered: a kernel's accesses are rewritten for each candidate tile, then again for
    the tile chosen while the kernel is written.)"""
    return simplify_index(index.xreplace({XINDEX: xnumel * Y0 + X0}),
                          Tile(ynumel, xnumel).var_ranges())


def choose_tile(indices: list[sympy.Expr], numel: sympy.Expr) -> Tile | None:
    """The tile where one access is contiguous along ``x0`` and another reads better along
    ``y0`` (``common.nearer_along``), or None
    (every access already agrees with the flat order, or the sizes are symbolic: a tile's
    split is a compile-time constant here)."""
    numel = sympy.sympify(numel)
    if not numel.is_number:
        return None
    for split in digit_sizes(indices, XINDEX, strict=False):
        if int(numel) % split or split >= int(numel):
            continue
        tile = Tile(int(numel) // split, split)
        rewritten = [tile.rewrite(i) for i in indices if XINDEX in i.free_symbols]
        along_x = any(local_stride(i, X0) == 1 for i in rewritten)
        if along_x and any(nearer_along(i, Y0, X0) for i in rewritten):
            return tile
    return None
