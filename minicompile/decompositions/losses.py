"""Losses and dropout as core ATen (mirrors torch/_decomp rows): mse_loss, nll_loss,
cross_entropy (forward and backward), native_dropout and dropout; one_hot (class labels as
rows), before autograd."""

from __future__ import annotations

import torch

from .registry import register_decomposition

aten = torch.ops.aten
NONE, MEAN, SUM = 0, 1, 2  # torch's Reduction enum (the ``reduction`` int argument)


def _reduce(loss, reduction):
    if reduction == MEAN:
        return aten.mean.default(loss)
    return aten.sum.default(loss) if reduction == SUM else loss


@register_decomposition(aten.mse_loss.default)
def mse_loss(x, target, reduction=MEAN):  # reduce((x - target)^2)
    d = aten.sub.Tensor(x, target)
    return _reduce(aten.mul.Tensor(d, d), reduction)


@register_decomposition(aten.mse_loss_backward.default)
def mse_loss_backward(grad, x, target, reduction):  # 2 (x - target) grad [/ N for mean]
    # divided by N, not scaled by 2/N: with a symbolic N, 2/N is a SymFloat (1/s0) that no
    # graph node computes, and the whole graph would run eagerly
    doubled = aten.mul.Tensor(aten.sub.Tensor(x, target), 2)
    if reduction == MEAN:
        doubled = aten.div.Tensor(doubled, x.numel())
    return aten.mul.Tensor(doubled, grad)


def _picked(x, target, ignore_index):
    """x[i, target[i]] for (N, C) inputs (or x[target] for (C,)), and the not-ignored mask."""
    keep = aten.ne.Scalar(target, ignore_index)
    safe = aten.where.self(keep, target, aten.full_like.default(target, 0))
    dim = 0 if x.dim() == 1 else 1
    picked = aten.squeeze.dims(aten.gather.default(x, dim, aten.unsqueeze.default(safe, dim)),
                               [dim])
    return picked, keep


@register_decomposition(aten.nll_loss_forward.default)
def nll_loss_forward(x, target, weight, reduction, ignore_index):
    """loss_i = -w[t_i] x[i, t_i] (0 where t_i == ignore_index); mean divides by sum of w."""
    if x.dim() > 2:
        return NotImplemented
    picked, keep = _picked(x, target, ignore_index)
    w = aten.full_like.default(picked, 1) if weight is None else aten.index.Tensor(
        weight, [aten.where.self(keep, target, aten.full_like.default(target, 0))])
    w = aten.where.self(keep, w, aten.full_like.default(w, 0))
    loss = aten.neg.default(aten.mul.Tensor(picked, w))
    total_weight = aten.sum.default(w)
    if reduction == NONE:
        return loss, aten.full.default([], 0, dtype=x.dtype, device=x.device)
    total = aten.sum.default(loss)
    return (aten.div.Tensor(total, total_weight) if reduction == MEAN else total), total_weight


@register_decomposition(aten.nll_loss_backward.default)
def nll_loss_backward(grad, x, target, weight, reduction, ignore_index, total_weight):
    """d loss / d x[i, c] = -w[t_i] (c == t_i) grad_i [/ total_weight for mean]."""
    if x.dim() > 2:
        return NotImplemented
    keep = aten.ne.Scalar(target, ignore_index)
    safe = aten.where.self(keep, target, aten.full_like.default(target, 0))
    w = aten.full_like.default(safe, 1, dtype=x.dtype) if weight is None else aten.index.Tensor(
        weight, [safe])
    w = aten.where.self(keep, w, aten.full_like.default(w, 0))
    g = aten.neg.default(aten.mul.Tensor(w, grad))
    if reduction == MEAN:
        g = aten.div.Tensor(g, total_weight)
    dim = 0 if x.dim() == 1 else 1
    zeros = aten.full_like.default(x, 0)
    return aten.scatter.src(zeros, dim, aten.unsqueeze.default(safe, dim),
                            aten.unsqueeze.default(g, dim))


@register_decomposition(aten.cross_entropy_loss.default)
def cross_entropy_loss(x, target, weight=None, reduction=MEAN, ignore_index=-100,
                       label_smoothing=0.0):  # nll_loss(log_softmax(x)) for class indices
    if label_smoothing != 0.0 or x.dim() > 2 or target.is_floating_point():
        return NotImplemented
    logp = aten._log_softmax.default(x, x.dim() - 1, False)
    return aten.nll_loss_forward.default(logp, target, weight, reduction, ignore_index)[0]


@register_decomposition(aten.native_dropout.default)
def native_dropout(x, p, train):  # keep with probability 1 - p, scale kept values by 1/(1-p)
    if not train or p == 0:
        return aten.clone.default(x), aten.full_like.default(x, 1, dtype=torch.bool)
    if p == 1:
        return aten.full_like.default(x, 0), aten.full_like.default(x, 0, dtype=torch.bool)
    keep = aten.lt.Scalar(aten.rand_like.default(x), 1 - p)
    return aten.mul.Tensor(aten.mul.Tensor(x, keep), 1 / (1 - p)), keep


@register_decomposition(aten.native_dropout_backward.default)
def native_dropout_backward(grad, mask, scale):  # grad * mask * scale
    return aten.mul.Tensor(aten.mul.Tensor(grad, mask), scale)


@register_decomposition(aten.dropout.default)
def dropout(x, p, train):
    return native_dropout(x, p, train)[0] if train else aten.clone.default(x)



def one_hot(t, num_classes=-1):  # out[..., c] = (t[...] == c)
    """``F.one_hot``, replaced before autograd sees it: ATen's own one_hot is composite and,
    on fake tensors, traces to the comparison alone, without eager's range check, so a label
    outside ``[0, num_classes)`` got a row of zeros. The checks run first, with eager's messages
    (as torch/_decomp's row does); ``_assert_async`` has an effect and no value: the graph passes
    keep it (dce.py) and the inductor runs it through ATen."""
    if num_classes == -1:
        return NotImplemented  # the class count is the largest label: a size read from data
    aten._assert_async.msg(aten.all.default(aten.ge.Scalar(t, 0)),
                           "Class values must be non-negative.")
    aten._assert_async.msg(aten.all.default(aten.lt.Scalar(t, num_classes)),
                           "Class values must be smaller than num_classes.")
    classes = aten.arange.start(0, num_classes, dtype=t.dtype, device=t.device)
    return aten._to_copy.default(aten.eq.Tensor(aten.unsqueeze.default(t, -1), classes),
                                 dtype=torch.int64)


# torch function -> replacement, applied by aot_autograd's tracer before autograd
loss_pre_autograd_decompositions = {torch.nn.functional.one_hot: one_hot}
