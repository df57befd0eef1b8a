"""The scans of a Triton kernel (mirrors the ``scan`` method of ``TritonKernel`` in
torch/_inductor/codegen/triton.py, and its ``_lift_helper``).

A scan keeps the running combination of a row's values up to each element (``cumsum``). Triton
computes it across a block's lanes with ``tl.associative_scan(value, 1, combine)``, a parallel
prefix over the row axis whose ``combine(a, b)`` is a ``@triton.jit`` function written into the
kernel's module (``SCAN_COMBINE``).

A persistent kernel holds the whole row in one block: one ``associative_scan`` is the answer.
A looped kernel walks the row ``RBLOCK`` elements at a time and carries the running value of
the elements before the block (``carry``, one per row): each element's result is
``combine(carry, scan of the block up to it)``, and the block's last scanned lane, combined into
the carry, is where the next block starts. The first block takes its own scan (``roffset > 0``
selects), so no neutral element is needed and any associative combine works; lanes past the end
of the row scan whatever was loaded there and are never stored. Pointwise work at the scan's
elements (a producer it reads, a consumer of its values) runs in the same loop. A scan down columns
(``x.cumsum(0)``) is the same loop: the launcher's "outer" tiles put many adjacent kept elements in
a program (coalesced loads) and few rows of the scanned dim in each step.
"""

from __future__ import annotations

import torch

from .triton_ops import compute_dtype, paren, triton_dtype

# scan type -> the body of its combine function ``(a, b) -> a combined with b``
SCAN_COMBINE: dict[str, list[str]] = {
    "sum": ["return a + b"],
    "prod": ["return a * b"],
    # log(exp(a) + exp(b)), as eager's logcumsumexp: from the larger, so nothing overflows; two
    # equal infinities combine to themselves (their difference would be NaN)
    "logaddexp": ["low = triton_helpers.minimum(a, b)",
                  "high = triton_helpers.maximum(a, b)",
                  "same_inf = (low == high) & ((low == float('inf')) | (low == float('-inf')))",
                  "return tl.where(same_inf, a, libdevice.log1p(tl.exp(low - high)) + high)"],
}


class TritonScans:
    """The ``ops.scan`` of ``TritonKernel`` (which provides ``generate``, ``dtype``,
    ``to_dtype``, ``cse``, ``kind``, the loop buffers and ``parts``)."""

    helpers: dict[str, list[str]]  # combine function name -> its source lines

    def scan(self, dtype: torch.dtype, scan_type: str, value: str) -> str:
        key = f"scan {scan_type} {value}"
        if key in self.cse.cache:
            return self.cse.cache[key]
        self.parts.plain = False  # no frame of triton_frames.py scans
        out_dtype, dtype = dtype, compute_dtype(dtype)  # 16-bit values accumulate in float32
        if self.dtype(value) != dtype:
            value = self.to_dtype(value, dtype)
        combine = self.combine_fn(scan_type)
        # to the block by arithmetic, which also widens a rank-1 constant (``tl.full([1], ..)``);
        # tl.broadcast_to refuses a rank change on the GPU (the interpreter allowed it)
        block = self.generate(f"{paren(value)} + tl.zeros([XBLOCK, RBLOCK], "
                              f"{triton_dtype(dtype)})", dtype)
        scanned = self.generate(f"tl.associative_scan({block}, 1, {combine})", dtype)
        if self.kind == "looped":
            scanned = self.carry_across_blocks(scanned, combine, dtype)
        # each output rounded to 16 bits as eager's (the store's own cast truncates under the
        # interpreter); the carry stays in float32
        self.cse.cache[key] = self.to_dtype(scanned, out_dtype)
        return self.cse.cache[key]

    def carry_across_blocks(self, scanned: str, combine: str, dtype: torch.dtype) -> str:
        """Each element's running value over the whole row: the block's scan combined with
        the carry of the blocks before; then the carry moves on to the block's last lane."""
        carry = f"_{self.cse.newvar()}"
        self.before_loop.writeline(f"{carry} = tl.zeros([XBLOCK, 1], {triton_dtype(dtype)})"
                                   "  # the running value before this block, per row")
        result = self.generate(f"tl.where(roffset > 0, {combine}({carry}, {scanned}), "
                               f"{scanned})", dtype)
        last = self.generate(f"triton_helpers.last_lane({scanned}, rbase == RBLOCK - 1)", dtype)
        self.body.writeline(f"{carry} = tl.where(roffset > 0, {combine}({carry}, {last}), "
                            f"{last})")
        return result

    def combine_fn(self, scan_type: str) -> str:
        """The name of ``scan_type``'s combine function, added to the kernel's module."""
        name = f"combine_{scan_type}"
        self.helpers[name] = ["@triton.jit", f"def {name}(a, b):",
                              *[f"    {line}" for line in SCAN_COMBINE[scan_type]]]
        return name
