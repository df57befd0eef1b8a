"""Softmax, log-softmax and logsumexp, with their backwards (mirrors torch/_decomp rows).
All three subtract the row maximum first so that ``exp`` never overflows."""

from __future__ import annotations

import torch

from .registry import register_decomposition
from .util import downcast, upcast

aten = torch.ops.aten


@register_decomposition(aten._softmax.default)
def softmax(x, dim, half_to_float):
    """exp(x - max) / sum(exp(x - max)), with the division of the ATen kernel it replaces: the
    CPU kernel over the last dimension computes 1 / sum once per row and multiplies each element
    by it (a multiplication costs a fraction of a division); the others divide each element."""
    if not x.is_floating_point():  # no integer softmax: the kernel's own error, as in eager
        return NotImplemented
    x = x.contiguous()  # eager's softmax returns a contiguous tensor (as torch/_decomp's row)
    xf = upcast(x)
    e = aten.exp.default(aten.sub.Tensor(xf, aten.amax.default(xf, [dim], True)))
    total = aten.sum.dim_IntList(e, [dim], True)
    if x.device.type == "cpu" and dim in (-1, max(x.dim(), 1) - 1):
        out = aten.mul.Tensor(e, aten.reciprocal.default(total))
    else:
        out = aten.div.Tensor(e, total)
    return out if half_to_float else downcast(out, x.dtype)


@register_decomposition(aten._safe_softmax.default)
def safe_softmax(x, dim, dtype=None):
    """Softmax, but 0 along a row that is all -inf (a query that may attend to nothing: SDPA's
    math path and T5's attention), where softmax gives NaN."""
    out = aten._softmax.default(x if dtype is None else aten._to_copy.default(x, dtype=dtype),
                                dim, False)
    # every element -inf exactly where the largest is (a NaN row stays NaN, as in eager)
    empty = aten.eq.Scalar(aten.amax.default(x, [dim], True), float("-inf"))
    return aten.where.self(empty, aten.zeros_like.default(out), out)


@register_decomposition(aten._log_softmax.default)
def log_softmax(x, dim, half_to_float):  # (x - max) - log(sum(exp(x - max)))
    if not x.is_floating_point():  # no integer log-softmax: the kernel's error, as in eager
        return NotImplemented
    x = x.contiguous()  # eager's log-softmax returns a contiguous tensor (torch/_decomp too)
    xf = upcast(x)
    shifted = aten.sub.Tensor(xf, aten.amax.default(xf, [dim], True))
    lse = aten.log.default(aten.sum.dim_IntList(aten.exp.default(shifted), [dim], True))
    out = aten.sub.Tensor(shifted, lse)
    return out if half_to_float else downcast(out, x.dtype)


@register_decomposition(aten.logsumexp.default)
def logsumexp(x, dim, keepdim=False):  # max + log(sum(exp(x - max)))
    # complex values: shifted by the largest real part, as eager does (complex has no order)
    m = aten.amax.default(aten.real.default(x) if x.is_complex() else x, dim, True)
    m = aten.where.self(aten.eq.Scalar(aten.abs.default(m), float("inf")),
                        aten.full_like.default(m, 0), m)  # all -inf rows: avoid inf - inf
    out = aten.add.Tensor(aten.log.default(aten.sum.dim_IntList(
        aten.exp.default(aten.sub.Tensor(x, m)), dim, True)), m)
    return out if keepdim else aten.squeeze.dims(out, dim)


@register_decomposition(aten._softmax_backward_data.default)
def softmax_backward(grad, y, dim, input_dtype):  # dx = y * (g - sum(g * y))
    gy = aten.mul.Tensor(grad, y)
    out = aten.sub.Tensor(gy, aten.mul.Tensor(y, aten.sum.dim_IntList(gy, [dim], True)))
    return downcast(out, input_dtype).contiguous()  # eager's is contiguous (torch/_decomp too)


@register_decomposition(aten._log_softmax_backward_data.default)
def log_softmax_backward(grad, y, dim, input_dtype):  # dx = g - exp(y) * sum(g)
    out = aten.sub.Tensor(grad, aten.mul.Tensor(aten.exp.default(y),
                                                aten.sum.dim_IntList(grad, [dim], True)))
    return downcast(out, input_dtype)
