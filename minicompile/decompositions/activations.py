"""Activation functions and their backward formulas as core ATen (mirrors the matching rows of
torch/_decomp/decompositions.py). Each row: the op, then the algebra in the comment."""

from __future__ import annotations

import math

import torch

from .registry import register_decomposition
from .util import pw_cast_for_opmath, scalars_of

aten = torch.ops.aten
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
INV_SQRT_2 = 1 / math.sqrt(2)


@register_decomposition(aten.gelu.default)
@pw_cast_for_opmath
def gelu(x, approximate="none"):
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        inner = aten.mul.Tensor(aten.add.Tensor(x, aten.mul.Tensor(aten.pow.Tensor_Scalar(x, 3),
                                                                   0.044715)), SQRT_2_OVER_PI)
        return aten.mul.Tensor(aten.mul.Tensor(x, 0.5), aten.add.Tensor(aten.tanh.default(inner), 1))
    # 0.5 x (1 + erf(x / sqrt 2))
    return aten.mul.Tensor(aten.mul.Tensor(x, 0.5),
                           aten.add.Tensor(aten.erf.default(aten.mul.Tensor(x, INV_SQRT_2)), 1))


@register_decomposition(aten.gelu_backward.default)
@pw_cast_for_opmath
def gelu_backward(grad, x, approximate="none"):
    if approximate == "tanh":  # d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        x2 = aten.mul.Tensor(x, x)
        inner = aten.mul.Tensor(aten.add.Tensor(x, aten.mul.Tensor(aten.mul.Tensor(x2, x), 0.044715)),
                                SQRT_2_OVER_PI)
        t = aten.tanh.default(inner)
        left = aten.mul.Tensor(aten.add.Tensor(t, 1), 0.5)
        d_inner = aten.mul.Tensor(aten.add.Tensor(aten.mul.Tensor(x2, 3 * 0.044715), 1),
                                  SQRT_2_OVER_PI)
        right = aten.mul.Tensor(aten.mul.Tensor(aten.mul.Tensor(x, 0.5),
                                                aten.rsub.Scalar(aten.mul.Tensor(t, t), 1)), d_inner)
        return aten.mul.Tensor(grad, aten.add.Tensor(left, right))
    # d/dx: Phi(x) + x phi(x),  Phi = 0.5 (1 + erf(x / sqrt 2)),  phi = exp(-x^2 / 2) / sqrt(2 pi)
    cdf = aten.mul.Tensor(aten.add.Tensor(aten.erf.default(aten.mul.Tensor(x, INV_SQRT_2)), 1), 0.5)
    pdf = aten.mul.Tensor(aten.exp.default(aten.mul.Tensor(aten.mul.Tensor(x, x), -0.5)),
                          1 / math.sqrt(2 * math.pi))
    return aten.mul.Tensor(grad, aten.add.Tensor(cdf, aten.mul.Tensor(x, pdf)))


@register_decomposition(aten.silu.default)
@pw_cast_for_opmath
def silu(x):  # x * sigmoid(x)
    return aten.mul.Tensor(x, aten.sigmoid.default(x))


@register_decomposition(aten.silu_backward.default)
@pw_cast_for_opmath
def silu_backward(grad, x):  # d/dx: s (1 + x (1 - s)),  s = sigmoid(x)
    s = aten.sigmoid.default(x)
    return aten.mul.Tensor(grad, aten.mul.Tensor(
        s, aten.add.Tensor(aten.mul.Tensor(x, aten.rsub.Scalar(s, 1)), 1)))


@register_decomposition(aten.sigmoid_backward.default)
@pw_cast_for_opmath
def sigmoid_backward(grad, y):  # y = sigmoid(x): dy/dx = y (1 - y)
    return aten.mul.Tensor(grad, aten.mul.Tensor(y, aten.rsub.Scalar(y, 1)))


@register_decomposition(aten.tanh_backward.default)
@pw_cast_for_opmath
def tanh_backward(grad, y):  # y = tanh(x): dy/dx = 1 - y^2
    return aten.mul.Tensor(grad, aten.rsub.Scalar(aten.mul.Tensor(y, y), 1))


@register_decomposition(aten.threshold_backward.default)
def threshold_backward(grad, x, threshold):  # relu backward: grad where x > threshold, else 0
    return aten.where.self(aten.le.Scalar(x, threshold), aten.zeros_like.default(grad), grad)


@register_decomposition(aten.hardsigmoid.default)
@pw_cast_for_opmath
def hardsigmoid(x):  # clamp(x + 3, 0, 6) / 6
    return aten.div.Tensor(aten.clamp.default(aten.add.Tensor(x, 3), 0, 6), 6)


@register_decomposition(aten.hardsigmoid_backward.default)
@pw_cast_for_opmath
def hardsigmoid_backward(grad, x):  # grad / 6 strictly inside (-3, 3), else 0
    inside = aten.logical_and.default(aten.gt.Scalar(x, -3), aten.lt.Scalar(x, 3))
    return aten.where.self(inside, aten.div.Tensor(grad, 6), aten.zeros_like.default(grad))


@register_decomposition(aten.hardswish.default)
@pw_cast_for_opmath
def hardswish(x):  # x * clamp(x + 3, 0, 6) / 6
    return aten.mul.Tensor(x, aten.div.Tensor(aten.clamp.default(aten.add.Tensor(x, 3), 0, 6), 6))


@register_decomposition(aten.hardswish_backward.default)
@pw_cast_for_opmath
def hardswish_backward(grad, x):  # 0 below -3, (2x + 3) / 6 in [-3, 3], 1 above 3
    inside = aten.div.Tensor(aten.add.Tensor(aten.mul.Tensor(x, 2), 3), 6)
    zero = aten.zeros_like.default(grad)
    slope = aten.where.self(aten.lt.Scalar(x, -3), zero,
                            aten.where.self(aten.le.Scalar(x, 3), inside, aten.ones_like.default(x)))
    return aten.mul.Tensor(grad, slope)


@register_decomposition(aten.hardtanh.default)
def hardtanh(x, min_val=-1, max_val=1):  # clamp(x, min, max), the bounds in x's dtype
    return aten.clamp.default(x, *scalars_of(x, min_val, max_val))


@register_decomposition(aten.hardtanh_backward.default)
def hardtanh_backward(grad, x, min_val, max_val):  # grad where min < x < max, else 0
    outside = aten.logical_or.default(aten.le.Scalar(x, min_val), aten.ge.Scalar(x, max_val))
    return aten.where.self(outside, aten.zeros_like.default(grad), grad)


@register_decomposition(aten.leaky_relu.default)
def leaky_relu(x, negative_slope=0.01):  # x if x > 0 else slope * x
    return aten.where.self(aten.gt.Scalar(x, 0), x, aten.mul.Tensor(x, negative_slope))


@register_decomposition(aten.leaky_relu_backward.default)
def leaky_relu_backward(grad, x, negative_slope, self_is_result):  # grad * (1 if x > 0 else slope)
    return aten.where.self(aten.gt.Scalar(x, 0), grad, aten.mul.Tensor(grad, negative_slope))


@register_decomposition(aten.elu.default)
@pw_cast_for_opmath
def elu(x, alpha=1, scale=1, input_scale=1):  # scale * (x if x > 0 else alpha (exp(x * s) - 1))
    neg = aten.mul.Tensor(aten.sub.Tensor(aten.exp.default(aten.mul.Tensor(x, input_scale)), 1),
                          alpha)
    return aten.mul.Tensor(aten.where.self(aten.gt.Scalar(x, 0), x, neg), scale)


@register_decomposition(aten.softplus.default)
@pw_cast_for_opmath
def softplus(x, beta=1, threshold=20):  # log(1 + exp(beta x)) / beta, linear above threshold
    bx = aten.mul.Tensor(x, beta)
    soft = aten.div.Tensor(aten.log1p.default(aten.exp.default(bx)), beta)
    return aten.where.self(aten.gt.Scalar(bx, threshold), x, soft)


@register_decomposition(aten.softplus_backward.default)
@pw_cast_for_opmath
def softplus_backward(grad, x, beta, threshold):  # grad * sigmoid(beta x), 1 above threshold
    bx = aten.mul.Tensor(x, beta)
    return aten.where.self(aten.gt.Scalar(bx, threshold), grad,
                           aten.mul.Tensor(grad, aten.sigmoid.default(bx)))
