"""Reductions in terms of ``sum`` (mirrors torch/_decomp rows): mean, var, var_mean, std."""

from __future__ import annotations

import torch

from .registry import register_decomposition
from .util import numel_of, reduction_dims

aten = torch.ops.aten


@register_decomposition(aten.sum.default)
def sum_all(x, dtype=None):  # sum over every dimension
    return aten.sum.dim_IntList(x, reduction_dims(x, None), dtype=dtype)


@register_decomposition(aten.mean.dim)
def mean_dim(x, dim, keepdim=False, dtype=None):  # sum(x, dim) / N
    dims = reduction_dims(x, dim)
    return aten.div.Tensor(aten.sum.dim_IntList(x, dims, keepdim, dtype=dtype), numel_of(x, dims))


@register_decomposition(aten.mean.default)
def mean(x, dtype=None):  # sum(x) / numel
    return mean_dim(x, None, False, dtype)


def _var(x, dims, correction, keepdim):
    """(sum((x - mean)^2) / (N - correction), mean), on the values shifted by the first one of
    each reduced block: equal values are then exactly 0 and so is their variance (as eager's
    Welford gives; sum(x) / N of equal values is often an ulp off x, and their std was then
    1e-5 instead of 0), and a large mean no longer costs the differences their digits."""
    n = numel_of(x, dims)
    shift = x
    if all(x.shape[d] != 0 for d in dims):  # (an empty block has no first value)
        for d in dims:
            shift = aten.slice.Tensor(shift, d, 0, 1)
        x = aten.sub.Tensor(x, shift)
    mu = aten.div.Tensor(aten.sum.dim_IntList(x, dims, True), n)
    centered = aten.sub.Tensor(x, mu)
    if centered.is_complex():  # |x - mean|^2: the variance of complex values is real
        centered = aten.abs.default(centered)
    sq = aten.sum.dim_IntList(aten.mul.Tensor(centered, centered), dims, keepdim)
    # N - correction, never below 0 (torch/_refs' var): the variance of no values is 0/0 = nan
    var = aten.div.Tensor(sq, torch.sym_max(n - (1 if correction is None else correction), 0))
    if shift is not x:
        mu = aten.add.Tensor(mu, shift)
    return var, (mu if keepdim else aten.squeeze.dims(mu, dims))


@register_decomposition(aten.var.correction)
def var(x, dim=None, *, correction=None, keepdim=False):
    return _var(x, reduction_dims(x, dim), correction, keepdim)[0]


@register_decomposition(aten.var_mean.correction)
def var_mean(x, dim=None, *, correction=None, keepdim=False):
    return _var(x, reduction_dims(x, dim), correction, keepdim)


@register_decomposition(aten.std.correction)
def std(x, dim=None, *, correction=None, keepdim=False):  # sqrt(var)
    return aten.sqrt.default(var(x, dim, correction=correction, keepdim=keepdim))
