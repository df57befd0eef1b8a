"""The frame of a Triton kernel around its body, written from the kernel's parts (mirrors
``TritonKernel.codegen_kernel`` and ``codegen_body`` in torch/_inductor/codegen/triton.py, which
wrap the loads, compute and stores the ops handler collected in the program's indices, masks,
reduction loop and accumulators).

``TritonKernel`` hands a kernel here when its parts fit one of three frames, and writes every
other kernel itself:

- ``pointwise_kernel``: loads and stores masked by ``xmask`` alone (no ``ops.masked``, no
  loaded index, no dtype conversion at a load), no buffer both loaded and stored;
- ``tiled_kernel``: the same parts, in a pointwise kernel split into 2-D tiles
  (``triton_tiling.py``): its addresses are written in the tile's ``y0`` and ``x0``;
- ``looped_reduction_kernel``: one loop over the row (``for roffset``), whose loads are masked
  by ``xmask & rmask``, reducing with ``sum``/``prod``/``max``/``min`` into accumulators of a
  float or integer dtype,
  followed only by per-row code and stores masked by ``xmask``.

The course's exercises 8.3, 8.4 and 8.5 write these three functions; ``PlainParts`` gathers
what they take while the kernel is emitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .common import IndentedBuffer

FRAMED_REDUCTIONS = ("sum", "prod", "max", "min")


@dataclass
class LoopedReduction:
    """One accumulator of a looped reduction: ``result`` (per row, after the loop) is the
    ``kind`` reduction of ``value`` (per element, inside the loop), accumulated lane by lane in
    ``accumulator``, an ``[XBLOCK, RBLOCK]`` block of ``dtype`` (``tl_dtype`` its Triton name)."""

    accumulator: str
    result: str
    kind: str
    value: str
    dtype: torch.dtype
    tl_dtype: str


def pointwise_kernel(name: str, params: list[str], loads: list[tuple[str, str]],
                     body: list[str], stores: list[tuple[str, str]]) -> str:
    """A pointwise kernel from its parts: ``loads`` are ``(variable, address)`` pairs, ``body``
    the lines computing from the loaded variables, ``stores`` ``(address, value)`` pairs.
    Program ``p`` owns elements ``p * XBLOCK`` to ``p * XBLOCK + XBLOCK - 1``; the last program's
    lanes past ``xnumel`` are masked off, so they touch no memory."""
    code = IndentedBuffer()
    code.writeline("@triton.jit")
    code.writeline(f"def {name}({', '.join(params + ['xnumel', 'XBLOCK: tl.constexpr'])}):")
    with code.indent():
        code.writelines(["xoffset = tl.program_id(0) * XBLOCK",
                         "xindex = xoffset + tl.arange(0, XBLOCK)",
                         "xmask = xindex < xnumel"])
        code.writelines([f"{var} = tl.load({address}, xmask)" for var, address in loads])
        code.writelines(body)
        code.writelines([f"tl.store({address}, {value}, xmask)" for address, value in stores])
    return code.getvalue()


# program p owns tile (p // xtiles, p % xtiles): y0 a column of YBLOCK lines, x0 a row of XBLOCK
# points along each line, xmask the points of the tile inside both sizes
TILE_INDICES = ["xtiles = tl.cdiv(xnumel, XBLOCK)",
                "y0 = (tl.program_id(0) // xtiles) * YBLOCK + tl.arange(0, YBLOCK)[:, None]",
                "x0 = (tl.program_id(0) % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[None, :]",
                "xmask = (y0 < ynumel) & (x0 < xnumel)"]


def tiled_kernel(name: str, params: list[str], loads: list[tuple[str, str]],
                 body: list[str], stores: list[tuple[str, str]]) -> str:
    """A 2-D tiled pointwise kernel from the parts ``pointwise_kernel`` takes, its addresses in
    ``y0`` and ``x0``: each program a ``[YBLOCK, XBLOCK]`` block of ``ynumel`` lines of
    ``xnumel`` points, the tiles of the last column and the last row masked where they run
    past either size. Triton lays out each access along the axis it is contiguous in, so a
    transposed load (contiguous along ``y0``) and the store (along ``x0``) both coalesce."""
    code = IndentedBuffer()
    code.writeline("@triton.jit")
    sizes = ["ynumel", "xnumel", "XBLOCK: tl.constexpr", "YBLOCK: tl.constexpr"]
    code.writeline(f"def {name}({', '.join(params + sizes)}):")
    with code.indent():
        code.writelines(TILE_INDICES)
        code.writelines([f"{var} = tl.load({address}, xmask)" for var, address in loads])
        code.writelines(body)
        code.writelines([f"tl.store({address}, {value}, xmask)" for address, value in stores])
    return code.getvalue()


# reduction kind -> (the lanes' start value by dtype, one step in the loop, the lanes reduced
# across the row after it)
def _lowest(dtype: torch.dtype) -> str:
    return 'float("-inf")' if dtype.is_floating_point else str(torch.iinfo(dtype).min)


def _highest(dtype: torch.dtype) -> str:
    return 'float("inf")' if dtype.is_floating_point else str(torch.iinfo(dtype).max)


LOOPED = {
    "sum": (lambda d: "0", "{acc} + {v}", "tl.sum({acc}, 1)[:, None]"),
    "prod": (lambda d: "1", "{acc} * {v}", "triton_helpers.prod({acc}, 1)[:, None]"),
    "max": (_lowest, "triton_helpers.maximum({acc}, {v})",
            "triton_helpers.max2({acc}, 1)[:, None]"),
    "min": (_highest, "triton_helpers.minimum({acc}, {v})",
            "triton_helpers.min2({acc}, 1)[:, None]"),
}


def looped_reduction_kernel(name: str, params: list[str], loads: list[tuple[str, str]],
                            body: list[str], reductions: list[LoopedReduction],
                            after: list[str], stores: list[tuple[str, str]]) -> str:
    """A looped reduction from its parts: program ``p`` owns rows ``p * XBLOCK`` on; one loop
    walks the rows ``RBLOCK`` elements at a time, loading (``loads``), computing (``body``) and
    folding each value into its accumulator, lanes past a row's end or past the last row left
    as they are; after the loop each accumulator is reduced across its row (``reductions``),
    then the per-row code (``after``) and the stores of whole rows."""
    code = IndentedBuffer()
    code.writeline("@triton.jit")
    sizes = ["xnumel", "rnumel", "XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr"]
    code.writeline(f"def {name}({', '.join(params + sizes)}):")
    with code.indent():
        code.writelines(["xoffset = tl.program_id(0) * XBLOCK",
                         "xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
                         "xmask = xindex < xnumel",
                         "rbase = tl.arange(0, RBLOCK)[None, :]"])
        for r in reductions:
            start = LOOPED[r.kind][0](r.dtype)
            code.writeline(f"{r.accumulator} = tl.full([XBLOCK, RBLOCK], {start}, {r.tl_dtype})")
        code.writeline("for roffset in range(0, rnumel, RBLOCK):")
        with code.indent():
            code.writelines(["rindex = roffset + rbase", "rmask = rindex < rnumel"])
            code.writelines([f"{var} = tl.load({address}, xmask & rmask, other=0)"
                             for var, address in loads])
            code.writelines(body)
            for r in reductions:
                step = LOOPED[r.kind][1].format(acc=r.accumulator, v=r.value)
                code.writeline(
                    f"{r.accumulator} = tl.where(xmask & rmask, {step}, {r.accumulator})")
        code.writelines([f"{r.result} = {LOOPED[r.kind][2].format(acc=r.accumulator)}"
                         for r in reductions])
        code.writelines(after)
        code.writelines([f"tl.store({address}, {value}, xmask)" for address, value in stores])
    return code.getvalue()


@dataclass
class PlainParts:
    """A kernel's parts as the two frames take them, gathered while the kernel is emitted:
    each part keyed by the line the kernel writer wrote for it (so the frame's own lines can be
    told from the body's). ``plain`` turns false at the first load, store or reduction that no
    frame writes."""

    plain: bool = True
    loads: dict[str, tuple[str, str]] = field(default_factory=dict)  # line -> (var, address)
    stores: dict[str, tuple[str, str]] = field(default_factory=dict)  # line -> (address, value)
    frame_lines: set[str] = field(default_factory=set)  # accumulators' lines, written by the frame
    reductions: list[LoopedReduction] = field(default_factory=list)
    buffers: dict[str, set[str]] = field(default_factory=lambda: {"load": set(), "store": set()})

    def load(self, line: str, var: str, address: str, framed: bool) -> None:
        self.loads[line] = (var, address)
        self.plain &= framed

    def store(self, line: str, address: str, value: str, framed: bool) -> None:
        self.stores[line] = (address, value)
        self.plain &= framed

    def fits(self) -> bool:
        return self.plain and not self.buffers["load"] & self.buffers["store"]

    def body(self, lines: list[str]) -> list[str]:
        """``lines`` without the loads, stores and accumulator lines the frame writes."""
        return [line for line in lines if line not in self.loads and line not in self.stores
                and line not in self.frame_lines]


def with_header(source: str, comments: list[str]) -> str:
    """``source`` with ``comments`` (and the kernel's size constants after them) as the first
    lines of its function's body."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    at = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(":")) + 1
    indent = len(lines[at]) - len(lines[at].lstrip()) if at < len(lines) else 4
    return "\n".join(lines[:at] + [" " * indent + c for c in comments] + lines[at:]) + "\n"
