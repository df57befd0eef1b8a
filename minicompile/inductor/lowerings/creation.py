"""Tensors made from nothing (full, arange, iota, empty) and casts/copies into a given dtype:
bodies that read no buffer, only constants and index expressions (the ``full``, ``arange``,
``iota`` and ``to_dtype`` lowerings of torch/_inductor/lowering.py)."""

from __future__ import annotations

import sympy
import torch

from ..ir import Pointwise
from ..lowering import (Unsupported, device, loader, make_pointwise, out_dtype, out_meta, out_size,
                        realize, register_lowering)
from ...shapes.functions import sym_to_sympy
from ..virtualized import ops

aten = torch.ops.aten
prims = torch.ops.prims


def _constant(value, dtype, size) -> Pointwise:
    if isinstance(value, sympy.Expr):  # a SymInt fill value
        return Pointwise(device(), dtype, lambda index: ops.index_expr(value, dtype), list(size))
    return Pointwise(device(), dtype, lambda index: ops.constant(value, dtype), list(size))


def _full(value):
    return _constant(value, out_dtype(), out_size())


register_lowering(aten.full.default)(lambda size, value, **kw: _full(value))
register_lowering(aten.full_like.default)(lambda x, value, **kw: _full(value))
register_lowering(aten.scalar_tensor.default)(lambda value, **kw: _full(value))
register_lowering(aten.new_full.default)(lambda x, size, value, **kw: _full(value))


@register_lowering(aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default,
                   aten.empty.memory_format, aten.empty_like.default, aten.new_empty.default,
                   aten.empty_strided.default, aten.empty_permuted.default,
                   aten.new_empty_strided.default, aten.zero.default)
def zeros(*args, **kwargs):
    # empty memory holds anything; zeros keep the reference executor deterministic
    return _constant(0, out_dtype(), out_size())


@register_lowering(aten.ones.default, aten.ones_like.default, aten.new_ones.default)
def ones(*args, **kwargs):
    return _constant(1, out_dtype(), out_size())


@register_lowering(aten.fill.Scalar)
def fill(x, value):
    return _constant(value, out_dtype(), out_size())


@register_lowering(aten.fill.Tensor)
def fill_tensor(x, value):
    """Every element the 0-d tensor ``value``'s (a masked write of a traced scalar)."""
    return Pointwise(device(), out_dtype(), loader(value, out_dtype(), out_size()), out_size())


@register_lowering(aten.arange.start_step, aten.arange.default, aten.arange.start)
def arange(*args, **kwargs):
    numbers = [a for a in args if not isinstance(a, torch.dtype)]
    start, step = (numbers[0], numbers[2] if len(numbers) > 2 else 1) if len(numbers) > 1 \
        else (0, 1)
    dtype = out_dtype()
    return Pointwise(device(), dtype, lambda index: ops.add(
        ops.constant(start, dtype), ops.mul(ops.index_expr(index[0], dtype),
                                            ops.constant(step, dtype))), out_size())


@register_lowering(prims.iota.default)
def iota(length, *, start, step, **kwargs):
    dtype = out_dtype()
    return Pointwise(device(), dtype,
                     lambda index: ops.index_expr(start + step * index[0], dtype), out_size())


@register_lowering(aten.copy.default)
def copy(dst, src, non_blocking=False):  # functional copy: src broadcast to dst, in dst's dtype
    return make_pointwise(lambda v: v, [src], out_dtype())


@register_lowering(aten.tril.default, aten.triu.default)
def tril_triu(x, diagonal=0):
    from ..virtualized import V

    keep_lower = V.graph.current_node.target is aten.tril.default
    dtype = x.get_dtype()
    load = x.make_loader()

    def inner_fn(index):
        row, col = index[-2], index[-1]
        # tril keeps col - row <= diagonal; triu keeps col - row >= diagonal
        diff = ops.index_expr(col - row, torch.int64)
        cmp = ops.le if keep_lower else ops.ge
        return ops.where(cmp(diff, ops.constant(diagonal, torch.int64)), load(index),
                         ops.constant(0, dtype))

    return Pointwise(device(), dtype, inner_fn, out_size())


def empty_like_meta(k: int):
    """A zero-filled buffer shaped like output ``k`` of the current node (unused outputs)."""
    meta = out_meta()[k]

    return realize(_constant(0, meta.dtype, [sym_to_sympy(s) for s in meta.shape]))


__all__ = ["empty_like_meta", "Unsupported"]
