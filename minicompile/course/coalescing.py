"""Which addresses one warp's load or store touches, read from a generated Triton kernel: the
cost model behind coalescing and 2-D tiling (``inductor/codegen/triton_tiling.py``).

A GPU moves global memory in 32-byte sectors. When the 32 lanes of a warp load 32 consecutive
float32 values, they touch 4 sectors and use every byte of them (the access is *coalesced*);
when the lanes are a row apart (a transpose read in the output's order), each lane needs its own
sector, 32 sectors for 128 useful bytes: an eighth of the bandwidth. A 2-D tile lets each access
run along its own contiguous axis (Triton's coalesce pass orders every load's and store's layout
by the pointer's contiguous dimension; the values change layout through shared memory).

    flat, tiled = transpose_kernels(48, 40)          # the kernel written flat, and tiled
    for access in warp_accesses(tiled):
        print(access)                                 # load in_ptr0: 4 sectors, 100% of bytes used
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import torch

from .. import reset
from ..viz.codegen import our_kernels, output_code

SECTOR_BYTES = 32
WARP_LANES = 32


@contextlib.contextmanager
def without_tiling() -> Iterator[None]:
    """Inside the block minicompile writes every pointwise kernel flat, without the 2-D tile its
    backends choose for a transposed read: the Triton one (``triton_tiling.choose_tile``, as
    ``select_tiling`` looks it up) and the C++ one (``cpp.py``'s ``transposed_read``)."""
    from ..inductor.codegen import cpp as cpp_codegen
    from ..inductor.codegen import triton as triton_codegen

    saved = triton_codegen.choose_tile, cpp_codegen.transposed_read
    triton_codegen.choose_tile = lambda indices, numel: None
    cpp_codegen.transposed_read = lambda loads: False
    reset()
    try:
        yield
    finally:
        triton_codegen.choose_tile, cpp_codegen.transposed_read = saved
        reset()


def transpose(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()


def transpose_kernels(rows: int, cols: int, device: str = "cpu") -> tuple[str, str]:
    """The source of minicompile's Triton kernel of ``x.t().contiguous()`` for an ``x`` of
    ``rows x cols``: written flat, and over a 2-D tile (what the backend chooses)."""
    x = torch.randn(rows, cols, device=device)
    with without_tiling():
        (flat,) = our_kernels(output_code(transpose, x)).values()
    (tiled,) = our_kernels(output_code(transpose, x)).values()
    return flat, tiled


def _parenthesised(text: str, start: int) -> str:
    """The text inside the parentheses that open at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i]
    raise ValueError(f"unbalanced parentheses in {text[start:]!r}")


def kernel_accesses(source: str) -> list[tuple[str, str, str]]:
    """``(kind, pointer, index)`` of every ``tl.load(ptr + (index), ...)`` and
    ``tl.store(ptr + (index), ...)`` of a kernel's source, in order."""
    found = []
    for line in source.splitlines():
        for kind in ("load", "store"):
            head = line.find(f"tl.{kind}(")
            if head < 0:
                continue
            pointer, _, rest = line[head + len(kind) + 4:].partition(" + ")
            if rest.startswith("("):
                found.append((kind, pointer.strip(), _parenthesised(rest, 0)))
    return found


@dataclass
class WarpAccess:
    kind: str  # "load" or "store"
    pointer: str
    index: str  # the kernel's index expression
    offsets: np.ndarray  # the element each of the warp's lanes touches
    element_size: int = 4

    @property
    def sectors(self) -> int:
        return len(set((self.offsets * self.element_size // SECTOR_BYTES).tolist()))

    @property
    def efficiency(self) -> float:
        """Useful bytes over the bytes of the sectors moved."""
        return len(self.offsets) * self.element_size / (self.sectors * SECTOR_BYTES)

    def __str__(self) -> str:
        return (f"{self.kind:5} {self.pointer}[{self.index}]: {self.sectors:2} sectors of 32 B "
                f"for {len(self.offsets)} lanes, {self.efficiency:4.0%} of the bytes moved used")


def _evaluate(index: str, **lanes: np.ndarray) -> np.ndarray:
    """An index expression of a generated kernel at NumPy arrays of lanes. Triton's index
    arithmetic is Python's (``+ * // %`` on integers), so Python evaluates the kernel's own text,
    with no builtins; an index without a lane variable is the same for every lane."""
    value = eval(index, {"__builtins__": {}}, lanes)  # noqa: S307
    return np.broadcast_to(value, next(iter(lanes.values())).shape)


def warp_accesses(source: str, lanes: int = WARP_LANES) -> list[WarpAccess]:
    """The elements warp 0 touches in each load and store of a pointwise kernel. A flat kernel's
    warp takes ``lanes`` consecutive points of ``xindex``; a tiled kernel's warp runs along the
    tile axis (``y0`` or ``x0``) along which that access is contiguous, as Triton lays it out."""
    lane = np.arange(lanes)
    zero = np.zeros(lanes, dtype=np.int64)
    tiled = "y0 = " in source
    out = []
    for kind, pointer, index in kernel_accesses(source):
        if not tiled:
            offsets = _evaluate(index, xindex=lane)
        else:
            along_y = _evaluate(index, y0=lane, x0=zero)
            along_x = _evaluate(index, y0=zero, x0=lane)
            offsets = along_y if np.all(np.diff(along_y) == 1) else along_x
        out.append(WarpAccess(kind, pointer, index, offsets))
    return out


def draw_warp_accesses(kernels: dict[str, str], shapes: dict[str, tuple[int, int]]) -> Any:
    """One row per kernel, one panel per access: the matrix the pointer addresses (``shapes``),
    the elements warp 0 touches coloured by lane, the sectors counted in the title."""
    import matplotlib.pyplot as plt

    accesses = {label: warp_accesses(src) for label, src in kernels.items()}
    ncols = max(len(a) for a in accesses.values())
    fig, axes = plt.subplots(len(kernels), ncols, figsize=(4.2 * ncols, 3.6 * len(kernels)),
                             squeeze=False)
    for row, (label, found) in enumerate(accesses.items()):
        for col, access in enumerate(found):
            rows, cols = shapes[access.pointer]
            grid = np.full(rows * cols, np.nan)
            grid[access.offsets] = np.arange(len(access.offsets))
            ax = axes[row][col]
            ax.imshow(np.ma.masked_invalid(grid.reshape(rows, cols)), cmap="viridis",
                      aspect="auto", interpolation="nearest")
            ax.set_facecolor("0.9")
            ax.set_title(f"{label}: {access.kind} {access.pointer}\n{access.sectors} sectors, "
                         f"{access.efficiency:.0%} of bytes used", fontsize=9)
            ax.set_xlabel(f"column (of {cols})"); ax.set_ylabel(f"row (of {rows})")
    fig.tight_layout()
    return fig


def transpose_bandwidth(n: int, device: str) -> dict[str, float]:
    """GB/s (bytes read + written over time) of ``x.t().contiguous()`` for an ``n x n`` float32
    ``x``: minicompile's kernel (Triton on a GPU, the configured CPU backend on a CPU) written
    flat and tiled, eager, and a plain copy of as many bytes (the ceiling). Each compiled kernel
    is checked against eager before it is timed."""
    from .. import compile as mc_compile
    from ..bench.timing import time_ms

    x = torch.randn(n, n, device=device)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()

    def gbs(step) -> float:
        return nbytes / (time_ms(step, device, "quick") * 1e6)

    def timed(compiled) -> float:
        torch.testing.assert_close(compiled(x), transpose(x), rtol=0, atol=0)
        return gbs(lambda: compiled(x))

    with without_tiling():  # timed inside: leaving the block resets the compiled code
        result = {"minicompile, flat": timed(mc_compile(transpose))}
    result["minicompile, 2-D tile"] = timed(mc_compile(transpose))
    result["eager"] = gbs(lambda: transpose(x))
    result["copy (no transpose)"] = gbs(lambda: y.copy_(x))
    return result
