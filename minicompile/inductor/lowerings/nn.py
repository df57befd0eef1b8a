"""Lowerings of the ``torch.nn`` ops that reach the graph whole (activations and losses that
minicompile's decomposition table leaves as single ATen ops), and of the scatter-like backward
ops: each is a pointwise body, plus a sum for the losses' ``reduction`` (mirrors the matching
entries of torch/_inductor/lowering.py and torch/_decomp/decompositions.py).
"""

from __future__ import annotations

import sympy
import torch

from ..checks import Check
from ..ir import IRNode, Pointwise
from ..lowering import (Unsupported, device, make_pointwise, out_dtype, realize,
                        register_lowering)
from ..virtualized import ops
from .reductions import make_reduction
from .scatter import destination, scatter_plan

aten = torch.ops.aten


def _c(value, dtype):
    return ops.constant(value, dtype)


# --- activations -------------------------------------------------------------------------------

def _softplus(v, dtype):  # log(1 + e^v), computed as max(v, 0) + log1p(e^-|v|): no overflow
    return ops.add(ops.maximum(v, _c(0.0, dtype)), ops.log1p(ops.exp(ops.neg(ops.abs(v)))))


@register_lowering(aten.mish)
def mish(x):  # x * tanh(softplus(x))
    dtype = out_dtype()
    return make_pointwise(lambda v: ops.mul(v, ops.tanh(_softplus(v, dtype))), [x], dtype)


@register_lowering(aten.mish_backward)
def mish_backward(grad, x):  # g * (t + x * sigmoid(x) * (1 - t^2)),  t = tanh(softplus(x))
    dtype = out_dtype()

    def body(g, v):
        t = ops.tanh(_softplus(v, dtype))
        dt = ops.mul(ops.mul(v, ops.sigmoid(v)), ops.sub(_c(1.0, dtype), ops.mul(t, t)))
        return ops.mul(g, ops.add(t, dt))

    return make_pointwise(body, [grad, x], dtype)


@register_lowering(aten.elu)
def elu(x, alpha=1.0, scale=1.0, input_scale=1.0):  # x > 0: scale*x, else scale*alpha*(e^(s x) - 1)
    dtype = out_dtype()

    def body(v):
        neg = ops.mul(_c(scale * alpha, dtype), ops.expm1(ops.mul(v, _c(input_scale, dtype))))
        return ops.where(ops.gt(v, _c(0.0, dtype)), ops.mul(v, _c(scale, dtype)), neg)

    return make_pointwise(body, [x], dtype)


@register_lowering(aten.elu_backward)
def elu_backward(grad, alpha, scale, input_scale, is_result, x_or_y):
    """Negative side: d/dx scale*alpha*(e^(x*s) - 1) = s*scale*alpha*e^(x*s), or from the
    result y: s*(y + scale*alpha). Positive side: scale."""
    dtype = out_dtype()

    def body(g, v):
        if is_result:
            neg = ops.mul(_c(input_scale, dtype), ops.add(v, _c(alpha * scale, dtype)))
        else:
            neg = ops.mul(_c(input_scale * alpha * scale, dtype),
                          ops.exp(ops.mul(v, _c(input_scale, dtype))))
        slope = ops.where(ops.le(v, _c(0.0, dtype)), neg, _c(scale, dtype))
        return ops.mul(g, slope)

    return make_pointwise(body, [grad, x_or_y], dtype)


# --- losses: an elementwise loss, then none / mean / sum -----------------------------------------

REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduce(loss: Pointwise, numel, reduction: int):
    if REDUCTIONS[reduction] == "none":
        return loss
    dtype = loss.get_dtype()
    total = realize(make_reduction(loss, None, False, "sum", dtype, dtype))
    if REDUCTIONS[reduction] == "sum":
        return total
    return make_pointwise(lambda s: ops.truediv(s, ops.index_expr(numel, dtype)), [total], dtype,
                          size=[])


def _numel(x: IRNode):
    return sympy.Mul(*x.get_size()) if x.get_size() else sympy.Integer(1)


@register_lowering(aten.smooth_l1_loss)
def smooth_l1_loss(x, target, reduction=1, beta=1.0):
    """|d| < beta: d^2 / (2 beta), else |d| - beta/2 (beta = 0: plain L1)."""
    dtype = x.get_dtype()

    def body(v, t):
        d = ops.abs(ops.sub(v, t))
        if beta == 0:
            return d
        quad = ops.truediv(ops.mul(ops.mul(d, d), _c(0.5, dtype)), _c(beta, dtype))
        return ops.where(ops.lt(d, _c(beta, dtype)), quad, ops.sub(d, _c(0.5 * beta, dtype)))

    loss = make_pointwise(body, [x, target], dtype, size=x.get_size())
    return _reduce(loss, _numel(x), reduction)


@register_lowering(aten.smooth_l1_loss_backward)
def smooth_l1_loss_backward(grad, x, target, reduction, beta):
    """d/dx: d / beta inside the quadratic zone, sign(d) outside; times grad (/ numel for mean)."""
    dtype = out_dtype()
    scale = _numel(x) if REDUCTIONS[reduction] == "mean" else sympy.Integer(1)

    def body(g, v, t):
        d = ops.sub(v, t)
        inside = ops.lt(ops.abs(d), _c(beta, dtype))
        slope = ops.where(inside, ops.truediv(d, _c(beta, dtype)), ops.sign(d)) if beta \
            else ops.sign(d)
        return ops.truediv(ops.mul(g, slope), ops.index_expr(scale, dtype))

    return make_pointwise(body, [grad, x, target], dtype, size=x.get_size())


@register_lowering(aten.binary_cross_entropy_with_logits)
def bce_with_logits(x, target, weight=None, pos_weight=None, reduction=1):
    """(1 - t) x + (1 + (pw - 1) t) * softplus(-x), times weight (pw = 1 without pos_weight)."""
    dtype = x.get_dtype()
    extra = [a for a in (weight, pos_weight) if a is not None]

    def body(v, t, *wp):
        w = wp[0] if weight is not None else None
        pw = wp[-1] if pos_weight is not None else None
        log_weight = _c(1.0, dtype) if pw is None else \
            ops.add(_c(1.0, dtype), ops.mul(ops.sub(pw, _c(1.0, dtype)), t))
        loss = ops.add(ops.mul(ops.sub(_c(1.0, dtype), t), v),
                       ops.mul(log_weight, _softplus(ops.neg(v), dtype)))
        return loss if w is None else ops.mul(loss, w)

    loss = make_pointwise(body, [x, target, *extra], dtype, size=x.get_size())
    return _reduce(loss, _numel(x), reduction)


# --- scatter-like ops as gathers: each output element finds the value that lands on it ----------

MAX_SCATTER_SLOTS = 8  # index.size(dim) up to this: one where() per slot


@register_lowering(aten.scatter.src, aten.scatter.value)
def scatter(x, dim: int, index, src):
    """``out[..., index[..., k, ...], ...] = src[..., k, ...]``: output element j along ``dim``
    takes the src value of a slot k whose index equals j, else keeps x (duplicates: any slot
    may win, as in eager). Needs index to cover x in every other dim and few slots; any other
    scatter is a scatter kernel (``lowerings/scatter.py``)."""
    size, dtype = x.get_size(), out_dtype()
    if not size:
        raise Unsupported("a scatter into a 0-d tensor")
    dim = dim % len(size)
    isize = index.get_size()
    slots = isize[dim]
    if len(isize) != len(size) or \
            any(sympy.expand(a - b) != 0 for d, (a, b) in enumerate(zip(isize, size)) if d != dim) \
            or not (slots.is_number and int(slots) <= MAX_SCATTER_SLOTS):
        return scatter_plan(x, dim, index, src).into(destination(x))
    load_x, load_index = x.make_loader(), index.make_loader()
    load_src = src.make_loader() if isinstance(src, IRNode) else None

    def inner_fn(i):
        value = load_x(i)
        for k in range(int(slots)):
            at = list(i[:dim]) + [sympy.Integer(k)] + list(i[dim + 1:])
            # the slot's target row, checked: eager raises for one outside [0, size)
            target = ops.indirect_indexing(load_index(at), size[dim], Check("scatter", dim))
            hit = ops.eq(ops.index_expr(target, torch.int64), ops.index_expr(i[dim], torch.int64))
            new = load_src(at) if load_src else _c(src, dtype)
            value = ops.where(hit, ops.to_dtype(new, dtype) if load_src else new, value)
        return value

    return Pointwise(device(), dtype, inner_fn, size)
