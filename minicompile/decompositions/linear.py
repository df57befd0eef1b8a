"""Matrix products with extras, and small pointwise compounds, as core ATen (mirrors
torch/_decomp rows). A backend then only needs ``mm``/``bmm`` plus pointwise ops."""

from __future__ import annotations

import torch

from .registry import register_decomposition
from .util import scalars_of

aten = torch.ops.aten


@register_decomposition(aten.addmm.default)
def addmm(bias, a, b, beta=1, alpha=1):  # beta * bias + alpha * (a @ b)
    beta, alpha = scalars_of(a, beta, alpha)
    out = aten.mm.default(a, b)
    if alpha != 1:
        out = aten.mul.Tensor(out, alpha)
    if beta == 0:
        return out
    return aten.add.Tensor(out, bias if beta == 1 else aten.mul.Tensor(bias, beta))


@register_decomposition(aten.linear.default)
def linear(x, weight, bias=None):  # x @ w.T + b, batch dims flattened into one
    flat = aten.reshape.default(x, [-1, x.shape[-1]])  # (B*T, in); a copy if x can't view
    out = aten.mm.default(flat, aten.permute.default(weight, [1, 0]))  # (B*T, out)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    return aten.view.default(out, list(x.shape[:-1]) + [weight.shape[0]])


@register_decomposition(aten.mv.default)
def mv(a, v):  # (a @ v[:, None])[:, 0]
    return aten.squeeze.dims(aten.mm.default(a, aten.unsqueeze.default(v, 1)), [1])


@register_decomposition(aten.baddbmm.default)
def baddbmm(bias, a, b, beta=1, alpha=1):  # beta * bias + alpha * (a @ b), batched
    beta, alpha = scalars_of(a, beta, alpha)
    out = aten.bmm.default(a, b)
    if alpha != 1:
        out = aten.mul.Tensor(out, alpha)
    if beta == 0:
        return out
    return aten.add.Tensor(out, bias if beta == 1 else aten.mul.Tensor(bias, beta))


@register_decomposition(aten.t.default)
def t(x):  # transpose of a matrix (a vector stays: a fresh alias, as a view op must return)
    return aten.alias.default(x) if x.dim() < 2 else aten.permute.default(x, [1, 0])


@register_decomposition(aten.addcmul.default)
def addcmul(x, t1, t2, value=1):  # x + value * t1 * t2
    return aten.add.Tensor(x, aten.mul.Tensor(aten.mul.Tensor(t1, t2), value))


@register_decomposition(aten.addcdiv.default)
def addcdiv(x, t1, t2, value=1):  # x + value * t1 / t2
    return aten.add.Tensor(x, aten.mul.Tensor(aten.div.Tensor(t1, t2), value))


@register_decomposition(aten.rsub.Scalar)
def rsub(x, other, alpha=1):  # other - alpha * x
    return aten.add.Tensor(aten.mul.Tensor(x, -alpha), other)


@register_decomposition(aten.lerp.Scalar)
def lerp(start, end, weight):  # start + weight * (end - start)
    return aten.add.Tensor(start, aten.mul.Tensor(aten.sub.Tensor(end, start), weight))


@register_decomposition(aten.masked_fill.Scalar)
def masked_fill(x, mask, value):  # where(mask, value, x)
    return aten.where.self(mask, aten.full_like.default(x, value), x)


@register_decomposition(aten.zeros_like.default)
def zeros_like(x, **kwargs):  # full_like(x, 0)
    return aten.full_like.default(x, 0, **kwargs)


@register_decomposition(aten.ones_like.default)
def ones_like(x, **kwargs):  # full_like(x, 1)
    return aten.full_like.default(x, 1, **kwargs)


@register_decomposition(aten.embedding_dense_backward.default)
def embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Scatter-add each row of grad into the row of its index (padding_idx gets nothing)."""
    if scale_grad_by_freq:
        return NotImplemented
    dim = grad.shape[-1]
    # reshape, not view: indices may be expanded (BERT's token_type_ids have stride 0)
    flat_idx = aten.reshape.default(indices, [-1])
    flat_grad = aten.reshape.default(grad, [-1, dim])  # (N, dim)
    keep = aten.unsqueeze.default(aten.ne.Scalar(flat_idx, padding_idx), 1)
    flat_grad = aten.where.self(keep, flat_grad, aten.full_like.default(flat_grad, 0))
    zeros = aten.full.default([num_weights, dim], 0, dtype=grad.dtype, device=grad.device)
    return aten.index_put.default(zeros, [flat_idx], flat_grad, True)


@register_decomposition(aten._unsafe_view.default)
def unsafe_view(x, size):  # a view whose result autograd treats as a fresh tensor
    return aten.view.default(x, size)
