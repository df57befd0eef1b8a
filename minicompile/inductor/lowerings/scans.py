"""Scan lowerings: ``cumsum``, ``cumprod``, ``logcumsumexp`` as ``Scan`` nodes (mirrors
``cumsum``, ``cumprod``, ``logcumsumexp`` and ``_make_scan_inner`` in
torch/_inductor/lowering.py, and ``Scan.create`` in torch/_inductor/ir.py).

A scan along ``dim`` loops over the other dims outside (the rows) and along ``dim`` inside, as a
reduction over ``dim`` does, but stores every running value. The values are converted to the
result's dtype first, as eager's ``x.to(dtype).cumsum(dim)``: integers and bools sum and
multiply as int64 unless ``dtype=`` says otherwise; 16-bit floats are rounded back to 16 bits
at every output, but the kernels carry the running value in float32 as eager's do (its
``acc_type``). Their backward (``cumsum``'s is a reversed cumsum; ``cumprod``'s and
``logcumsumexp``'s are built from cumsums) goes through the same lowerings.
"""

from __future__ import annotations

import torch

from ..ir import IRNode, Scan
from ..lowering import Unsupported, device, make_pointwise, out_meta, register_lowering
from ..sizevars import Expr
from ..virtualized import ops

aten = torch.ops.aten


def make_scan(x: IRNode, dim: int, scan_type: str, dtype: torch.dtype) -> IRNode:
    """The inclusive scan of ``x`` (converted to ``dtype``) along ``dim`` with ``scan_type``."""
    size = x.get_size()
    if not size or any(s == 0 for s in size):
        # a 0-d tensor is its own scan; an empty one has no element to scan (its rows would
        # be a kernel over no element, launched over the rows)
        return make_pointwise(lambda v: v, [x], dtype, size=size)
    dim = dim + len(size) if dim < 0 else dim
    load = x.make_loader()

    def reindex(index: list[Expr], sindex: list[Expr]) -> list[Expr]:
        return [*index[:dim], sindex[0], *index[dim:]]  # the scanned position back at ``dim``

    def inner_fn(index, sindex):
        value = load(reindex(index, sindex))
        return value if x.get_dtype() == dtype else ops.to_dtype(value, dtype)

    rows = [s for d, s in enumerate(size) if d != dim]
    return Scan(device(), dtype, inner_fn, rows, size=list(size), scan_ranges=[size[dim]],
                scan_type=scan_type, reindex=reindex)


@register_lowering(aten.cumsum)
def cumsum(x, dim, *, dtype=None):
    return make_scan(x, dim, "sum", out_meta().dtype)


@register_lowering(aten.cumprod)
def cumprod(x, dim, *, dtype=None):
    return make_scan(x, dim, "prod", out_meta().dtype)


@register_lowering(aten.logcumsumexp)
def logcumsumexp(x, dim):
    if not x.get_dtype().is_floating_point:  # ATen has no integer kernel: eager's error
        raise Unsupported(f"logcumsumexp of a {x.get_dtype()} tensor (no ATen kernel: it raises)")
    return make_scan(x, dim, "logaddexp", out_meta().dtype)
