"""Pointwise lowerings: one ``ops`` body per ATen op, broadcast and type-promoted (mirrors
``make_pointwise`` and the ``register_lowering`` rows of torch/_inductor/lowering.py).

Most ops are a row in a table: ATen op -> ``ops`` name. The composite ones (gelu, clamp, the
``*_backward`` formulas) are short bodies written with ``ops`` calls.
"""

from __future__ import annotations

import math

import torch

from ..lowering import Unsupported, make_pointwise, out_dtype, register_lowering
from ..virtualized import ops

aten = torch.ops.aten
prims = torch.ops.prims

# ATen op -> ops name; the output dtype (from the graph's metadata) is the compute dtype.
UNARY = {
    aten.abs: "abs", aten.neg: "neg", aten.exp: "exp", aten.exp2: "exp2", aten.expm1: "expm1",
    aten.log: "log", aten.log1p: "log1p", aten.log2: "log2", aten.sqrt: "sqrt",
    aten.rsqrt: "rsqrt", aten.sin: "sin", aten.cos: "cos", aten.tan: "tan", aten.tanh: "tanh",
    aten.sinh: "sinh", aten.cosh: "cosh", aten.asin: "asin", aten.acos: "acos",
    aten.atan: "atan", aten.asinh: "asinh", aten.acosh: "acosh", aten.atanh: "atanh",
    aten.sigmoid: "sigmoid", aten.erf: "erf", aten.erfc: "erfc", aten.floor: "floor",
    aten.ceil: "ceil", aten.round.default: "round", aten.trunc: "trunc", aten.sign: "sign",
    aten.reciprocal: "reciprocal", aten.relu: "relu", aten.bitwise_not: "bitwise_not",
    aten.lgamma: "lgamma", aten.square: "square",
    aten.sgn: "sign",  # a real tensor's sgn is its sign (a complex graph never gets here)
}
# ops whose result is bool but which compute on the input's own dtype
PREDICATES = {aten.isnan: "isnan", aten.isinf: "isinf", aten.signbit: "signbit"}
BINARY = {
    aten.mul: "mul", aten.div.Tensor: "truediv", aten.div.Scalar: "truediv",
    aten.pow: "pow", aten.maximum: "maximum", aten.minimum: "minimum", aten.atan2: "atan2",
    aten.hypot: "hypot", aten.copysign: "copysign", aten.fmod: "fmod",
    aten.remainder: "remainder", aten.bitwise_and: "bitwise_and", aten.bitwise_or: "bitwise_or",
    aten.bitwise_xor: "bitwise_xor", aten.floor_divide: "floordiv",
}
# comparisons: the inputs are promoted to a common dtype, the result is bool
COMPARISONS = {aten.eq: "eq", aten.ne: "ne", aten.lt: "lt", aten.le: "le", aten.gt: "gt",
               aten.ge: "ge"}
LOGICAL = {aten.logical_and: "logical_and", aten.logical_or: "logical_or",
           aten.logical_xor: "logical_xor", aten.logical_not: "logical_not"}


def _register_table(table: dict, compute_dtype_of=None) -> None:
    for aten_op, name in table.items():
        def lower(*args, _name=name, **kwargs):
            if kwargs:
                raise Unsupported(f"keyword arguments {sorted(kwargs)}")
            dtype = out_dtype()
            compute = compute_dtype_of(args) if compute_dtype_of else dtype
            return make_pointwise(getattr(ops, _name), args, dtype, compute)

        register_lowering(aten_op)(lower)


def _promoted(args) -> torch.dtype:
    """The dtype the inputs of a comparison are promoted to (torch's own promotion rules,
    applied to the FakeTensor metadata of the node's arguments)."""
    from ..virtualized import V

    metas = [_example(a) if hasattr(a, "meta") else a for a in V.graph.current_node.args[:2]]
    return torch.result_type(*metas)


def _example(node) -> object:
    """A node's example for promotion. A size computation AOT tracing made (``pos - 4`` in
    ``arange(n) > pos - 4``) has no FakeTensor value, only its SymPy expression: it promotes
    as a Python int (or float) scalar does."""
    if "val" in node.meta:
        return node.meta["val"]
    return 1 if node.meta["sym_expr"].is_integer else 1.0


_register_table(UNARY)
_register_table(BINARY)
_register_table(COMPARISONS, _promoted)
_register_table(LOGICAL, lambda args: torch.bool)
_register_table(PREDICATES, lambda args: args[0].get_dtype())


@register_lowering(aten.add, aten.sub)
def add_sub(a, b, alpha=1):
    from ..virtualized import V

    name = "add" if V.graph.current_node.target.overloadpacket is aten.add else "sub"
    dtype = out_dtype()
    if dtype == torch.bool:  # (only add has bools: True + True is True, where int1's sum is 0)
        return make_pointwise(ops.logical_or, [a, b], dtype)
    if alpha != 1:  # a + alpha * b
        return make_pointwise(lambda x, y: getattr(ops, name)(x, ops.mul(y, ops.constant(
            alpha, dtype))), [a, b], dtype)
    return make_pointwise(getattr(ops, name), [a, b], dtype)


POW_BY_MULTIPLICATION = 32  # x ** n for |n| up to this: multiplications (Inductor's pow_recursive)


def _power(v, n: int):
    """v ** n, n >= 1, by repeated squaring: at most 2 log2(n) multiplications."""
    if n == 1:
        return v
    half = _power(v, n // 2)
    square = ops.mul(half, half)
    return ops.mul(square, v) if n % 2 else square


@register_lowering(aten.pow.Tensor_Scalar)
def pow_scalar(x, exponent):
    """``x ** n`` for a small integer n as multiplications, ``x ** 0.5`` as a square root.

    A general ``pow`` is a call of a vector math function: in GELU(tanh)'s ``x ** 3`` it cost
    more than the rest of the kernel, where ``x * x * x`` is two multiplications (ATen's own
    kernel special-cases 2, 3, -1, -2 and 0.5 the same way)."""
    dtype = out_dtype()
    integral = isinstance(exponent, (int, float)) and float(exponent).is_integer()
    n = int(exponent) if integral else None
    if dtype.is_floating_point and exponent == 0.5:
        return make_pointwise(ops.sqrt, [x], dtype)
    if n is None or n == 0 or abs(n) > POW_BY_MULTIPLICATION or (n < 0 and not
                                                                   dtype.is_floating_point):
        return make_pointwise(ops.pow, [x, exponent], dtype)
    if n > 0:
        return make_pointwise(lambda v: _power(v, n), [x], dtype)
    return make_pointwise(lambda v: ops.reciprocal(_power(v, -n)), [x], dtype)


@register_lowering(aten.fmax, aten.fmin)
def fmax_fmin(a, b):
    """``maximum``/``minimum`` where neither is NaN; else the other (a NaN loses, where in
    ``maximum`` it wins: ``fmax(nan, 1)`` is 1)."""
    from ..virtualized import V

    pick = ops.maximum if V.graph.current_node.target.overloadpacket is aten.fmax else ops.minimum
    return make_pointwise(lambda x, y: ops.where(ops.isnan(x), y, ops.where(ops.isnan(y), x,
                                                                            pick(x, y))),
                          [a, b], out_dtype())


@register_lowering(aten.rsub)
def rsub(a, b, alpha=1):  # b - alpha * a
    dtype = out_dtype()
    return make_pointwise(lambda x, y: ops.sub(y, ops.mul(x, ops.constant(alpha, dtype))),
                          [a, b], dtype)


@register_lowering(aten.div.Tensor_mode, aten.div.Scalar_mode)
def div_mode(a, b, rounding_mode=None):
    op = {None: ops.truediv, "floor": ops.floordiv, "trunc": ops.truncdiv}[rounding_mode]
    return make_pointwise(op, [a, b], out_dtype())


@register_lowering(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther,
                   aten.where.Scalar)
def where(cond, a, b):
    dtype = out_dtype()
    return make_pointwise(lambda c, x, y: ops.where(ops.to_dtype(c, torch.bool), x, y),
                          [cond, a, b], dtype)


@register_lowering(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def masked_fill(x, mask, value):
    return make_pointwise(lambda v, m, f: ops.where(ops.to_dtype(m, torch.bool), f, v),
                          [x, mask, value], out_dtype())


@register_lowering(aten.clamp, aten.clamp_min, aten.clamp_max)
def clamp(x, lo=None, hi=None):
    from ..virtualized import V

    if V.graph.current_node.target.overloadpacket is aten.clamp_max:
        lo, hi = None, lo
    bounds = [b for b in (lo, hi) if b is not None]

    def body(v, *bs):
        k = 0
        if lo is not None:
            v, k = ops.maximum(v, bs[0]), 1
        if hi is not None:
            v = ops.minimum(v, bs[k])
        return v

    return make_pointwise(body, [x, *bounds], out_dtype())


@register_lowering(aten.hardtanh)
def hardtanh(x, lo=-1.0, hi=1.0):
    dtype = out_dtype()
    return make_pointwise(lambda v: ops.minimum(ops.maximum(v, ops.constant(lo, dtype)),
                                                ops.constant(hi, dtype)), [x], dtype)


def _gelu(v, approximate: str, dtype):
    c = lambda value: ops.constant(value, dtype)  # noqa: E731
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        inner = ops.mul(c(math.sqrt(2 / math.pi)),
                        ops.add(v, ops.mul(c(0.044715), ops.mul(v, ops.mul(v, v)))))
        return ops.mul(ops.mul(c(0.5), v), ops.add(c(1.0), ops.tanh(inner)))
    # 0.5 x (1 + erf(x / sqrt(2)))
    return ops.mul(ops.mul(c(0.5), v), ops.add(c(1.0), ops.erf(ops.mul(v, c(math.sqrt(0.5))))))


@register_lowering(aten.gelu)
def gelu(x, approximate="none"):
    dtype = out_dtype()
    return make_pointwise(lambda v: _gelu(v, approximate, dtype), [x], dtype)


@register_lowering(aten.gelu_backward)
def gelu_backward(grad, x, approximate="none"):
    if approximate != "none":
        raise Unsupported("tanh-approximate gelu_backward")
    dtype = out_dtype()
    c = lambda value: ops.constant(value, dtype)  # noqa: E731

    def body(g, v):  # d/dx [x Phi(x)] = Phi(x) + x phi(x)
        cdf = ops.mul(c(0.5), ops.add(c(1.0), ops.erf(ops.mul(v, c(math.sqrt(0.5))))))
        pdf = ops.mul(c(1 / math.sqrt(2 * math.pi)), ops.exp(ops.mul(c(-0.5), ops.mul(v, v))))
        return ops.mul(g, ops.add(cdf, ops.mul(v, pdf)))

    return make_pointwise(body, [grad, x], dtype)


@register_lowering(aten.silu)
def silu(x):
    return make_pointwise(lambda v: ops.mul(v, ops.sigmoid(v)), [x], out_dtype())


@register_lowering(aten.sigmoid_backward)
def sigmoid_backward(grad, y):  # g * y * (1 - y)
    dtype = out_dtype()
    return make_pointwise(
        lambda g, v: ops.mul(g, ops.mul(v, ops.sub(ops.constant(1.0, dtype), v))),
        [grad, y], dtype)


@register_lowering(aten.tanh_backward)
def tanh_backward(grad, y):  # g * (1 - y^2)
    dtype = out_dtype()
    return make_pointwise(
        lambda g, v: ops.mul(g, ops.sub(ops.constant(1.0, dtype), ops.mul(v, v))),
        [grad, y], dtype)


@register_lowering(aten.threshold_backward)
def threshold_backward(grad, x, threshold):  # g where x > threshold else 0
    dtype = out_dtype()
    return make_pointwise(
        lambda g, v, t: ops.where(ops.le(v, t), ops.constant(0, dtype), g),
        [grad, x, threshold], dtype)


@register_lowering(aten.leaky_relu)
def leaky_relu(x, slope=0.01):
    dtype = out_dtype()
    return make_pointwise(lambda v: ops.where(ops.gt(v, ops.constant(0, dtype)), v,
                                              ops.mul(v, ops.constant(slope, dtype))),
                          [x], dtype)


@register_lowering(aten.lerp.Scalar, aten.lerp.Tensor)
def lerp(a, b, w):  # a + w * (b - a)
    return make_pointwise(lambda x, y, t: ops.add(x, ops.mul(t, ops.sub(y, x))), [a, b, w],
                          out_dtype())


@register_lowering(aten.addcmul)
def addcmul(a, b, c, value=1):
    dtype = out_dtype()
    return make_pointwise(
        lambda x, y, z: ops.add(x, ops.mul(ops.constant(value, dtype), ops.mul(y, z))),
        [a, b, c], dtype)


@register_lowering(aten.addcdiv)
def addcdiv(a, b, c, value=1):  # a + value * b / c, in ATen's CPU kernel's order
    dtype = out_dtype()
    return make_pointwise(
        lambda x, y, z: ops.add(x, ops.truediv(ops.mul(ops.constant(value, dtype), y), z)),
        [a, b, c], dtype)


@register_lowering(aten._to_copy, aten.clone, prims.convert_element_type, aten.lift_fresh_copy,
                   aten.contiguous)
def to_copy(x, dtype=None, **kwargs):
    if kwargs.get("device") not in (None, x.get_device()):
        raise Unsupported("a copy to another device")
    return make_pointwise(lambda v: v, [x], out_dtype())


@register_lowering(aten.nan_to_num)
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    dtype = out_dtype()
    info = torch.finfo(dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    c = lambda value: ops.constant(value, dtype)  # noqa: E731
    return make_pointwise(
        lambda v: ops.where(ops.isnan(v), c(nan), ops.where(ops.isinf(v), ops.where(
            ops.gt(v, c(0)), c(posinf), c(neginf)), v)), [x], dtype)
