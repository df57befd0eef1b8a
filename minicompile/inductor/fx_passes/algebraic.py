"""Algebraic simplification as a table of rewrites (the role of torch/_inductor/fx_passes/
post_grad.py's pattern passes; the table layout is tinygrad's ``symbolic.py``).

Each row is ``(pattern, replacement)`` with the algebra in a trailing comment. Every rule must be
exact in floating point, NaN and infinity included, because a compiler may never change results:
that is why ``x * 0 -> 0`` and ``x - x -> 0`` are absent (both are NaN for ``x = inf``), and why
``sin²x + cos²x`` becomes ``x * 0 + 1`` rather than a bare ``1``: the ``x * 0`` keeps eager's NaN
where ``x`` is infinite or NaN, and still drops the two transcendental calls. Shape and dtype
are checked by :func:`~.pattern_matcher.rewrite`, so ``view(x, same shape) -> x`` needs no
condition of its own.
"""

from __future__ import annotations

import torch
import torch.fx

from .pattern_matcher import Op, Var, rewrite

aten = torch.ops.aten
X, Y, C, S, _ = Var("x"), Var("y"), Var("c"), Var("s"), Var("_")

add = Op(aten.add.Tensor, aten.add.Scalar, commutative=True)
sub = Op(aten.sub.Tensor, aten.sub.Scalar)
mul = Op(aten.mul.Tensor, aten.mul.Scalar, commutative=True)
div = Op(aten.div.Tensor, aten.div.Scalar)
pow_ = Op(aten.pow.Tensor_Scalar)
neg, relu, abs_ = Op(aten.neg.default), Op(aten.relu.default), Op(aten.abs.default)
sin, cos = Op(aten.sin.default), Op(aten.cos.default)
where = Op(aten.where.self)
view = Op(aten.view.default, aten.reshape.default, aten._unsafe_view.default)
expand = Op(aten.expand.default)
strict_view = Op(aten.view.default)


def _one_where_finite(g, x):
    return g(aten.add.Tensor, g(aten.mul.Tensor, x, 0), 1)


RULES = [
    (add(pow_(sin(X), 2), pow_(cos(X), 2)), _one_where_finite),  # sin²x + cos²x -> 1
    (add(mul(sin(X), sin(X)), mul(cos(X), cos(X))), _one_where_finite),  # sin·sin + cos·cos -> 1
    (mul(X, 1), lambda g, x: x),  # x * 1 -> x
    (div(X, 1), lambda g, x: x),  # x / 1 -> x
    (add(X, 0), lambda g, x: x),  # x + 0 -> x
    (sub(X, 0), lambda g, x: x),  # x - 0 -> x
    (pow_(X, 1), lambda g, x: x),  # x ** 1 -> x
    (pow_(X, 2), lambda g, x: g(aten.mul.Tensor, x, x)),  # x ** 2 -> x * x  (no pow call)
    (mul(X, -1), lambda g, x: g(aten.neg.default, x)),  # x * -1 -> -x
    (neg(neg(X)), lambda g, x: x),  # -(-x) -> x
    (add(X, neg(Y)), lambda g, x, y: g(aten.sub.Tensor, x, y)),  # x + (-y) -> x - y
    (sub(X, neg(Y)), lambda g, x, y: g(aten.add.Tensor, x, y)),  # x - (-y) -> x + y
    (relu(relu(X)), lambda g, x: g(aten.relu.default, x)),  # relu(relu(x)) -> relu(x)
    (abs_(abs_(X)), lambda g, x: g(aten.abs.default, x)),  # |(|x|)| -> |x|
    (abs_(neg(X)), lambda g, x: g(aten.abs.default, x)),  # |-x| -> |x|
    (where(C, X, X), lambda g, c, x: x),  # where(c, x, x) -> x
    (view(X, _), lambda g, x, _: x),  # view(x, x.shape) -> x
    (strict_view(strict_view(X, _), S), lambda g, x, _, s: g(aten.view.default, x, s)),  # view(view(x)) -> view(x)
    (expand(X, _), lambda g, x, _: x),  # expand(x, x.shape) -> x
]


def simplify_algebra(gm: torch.fx.GraphModule) -> list[tuple[str, str]]:
    """Apply :data:`RULES` until none matches; return ``(node, rule)`` for each rewrite."""
    return rewrite(gm, RULES)
