"""Conv-batchnorm folding for inference (mirrors torch/_inductor/fx_passes/efficient_conv_bn_eval.py
and the conv-bn folding of torch/_inductor/fx_passes/binary_folding.py, run under freezing).

In eval mode batchnorm is an affine map per output channel with frozen statistics::

    bn(y) = (y - mean) * gamma / sqrt(var + eps) + beta = y * scale + shift

and a convolution is linear in its weight, so ``bn(conv(x, W, b)) = conv(x, W * scale, b * scale
+ shift)`` with ``scale = gamma / sqrt(var + eps)`` broadcast over W's output-channel dimension
and ``shift = beta - mean * scale``. A CBR block (conv + bn + relu) becomes conv + relu:
one pass over the activation fewer, and the relu is then a pointwise epilogue of the conv.

Folding needs the weights and statistics to be constants (``get_attr`` tensors: Inductor's
"freezing"); graphs where they are inputs are left alone. The new weight and bias are built here
as graph nodes on those constants, so :func:`~.constant_folding.fold_constants` computes them once.
"""

from __future__ import annotations

import operator

import torch
import torch.fx
from .constant_folding import _fetch_attr, _fresh_name
from .dce import eliminate_dead_code

aten = torch.ops.aten

# Eval-mode batchnorm ops, and where (weight, bias, mean, var, eps) sit in their arguments.
BATCHNORM_EVAL = {
    aten._native_batch_norm_legit_no_training.default: dict(w=1, b=2, mean=3, var=4, eps=6),
    aten.native_batch_norm.default: dict(w=1, b=2, mean=3, var=4, eps=7, training=5),
}


def _is_eval_batchnorm(node: torch.fx.Node) -> bool:
    spec = BATCHNORM_EVAL.get(node.target) if node.op == "call_function" else None
    return spec is not None and ("training" not in spec or node.args[spec["training"]] is False)


def _foldable_conv(node: torch.fx.Node) -> bool:
    """A non-transposed convolution whose weight (and bias) are constants and whose only user is
    the batchnorm (another user would still need the unfolded output)."""
    if node.op != "call_function" or node.target != aten.convolution.default:
        return False
    weight, bias, transposed = node.args[1], node.args[2], node.args[6]
    return (len(node.users) == 1 and not transposed and weight.op == "get_attr"
            and (bias is None or bias.op == "get_attr"))


def fold_conv_bn(gm: torch.fx.GraphModule) -> int:
    """Fold every eval batchnorm that follows a constant-weight conv; return how many."""
    folded = 0
    g = gm.graph
    for bn in list(g.nodes):
        if not _is_eval_batchnorm(bn) or not _foldable_conv(bn.args[0]):
            continue
        spec = BATCHNORM_EVAL[bn.target]
        gamma, beta, mean, var = (bn.args[spec[k]] for k in ("w", "b", "mean", "var"))
        if any(not isinstance(n, torch.fx.Node) or n.op != "get_attr" for n in (gamma, beta, mean, var)):
            continue
        # Only output 0 (the normalised tensor) may be used: eval stats outputs are empty.
        getitems = list(bn.users)
        if not all(u.target is operator.getitem for u in getitems):
            continue
        if any(u.args[1] != 0 and u.users for u in getitems):
            continue
        conv = bn.args[0]
        eps = bn.args[spec["eps"]]
        # Build the folded weights right before the batchnorm (its statistics are defined by
        # then) and a new conv on them there; the old conv and batchnorm then die.
        with g.inserting_before(bn):
            call = lambda op, *a: g.call_function(op, a)  # noqa: E731 - local shorthand
            scale = call(aten.div.Tensor, gamma, call(aten.sqrt.default, call(aten.add.Tensor, var, eps)))
            weight = conv.args[1]
            view_shape = [-1] + [1] * (len(conv.args[3]) + 1)  # (C_out, 1, 1, 1) for conv2d
            new_weight = call(aten.mul.Tensor, weight, call(aten.view.default, scale, view_shape))
            bias = conv.args[2] if conv.args[2] is not None else call(aten.zeros_like.default, mean)
            new_bias = call(aten.add.Tensor, call(aten.mul.Tensor, call(aten.sub.Tensor, bias, mean), scale), beta)
            new_conv = g.call_function(aten.convolution.default,
                                       (conv.args[0], new_weight, new_bias, *conv.args[3:]))
        new_conv.meta.update(conv.meta)
        for u in getitems:
            if u.args[1] == 0:
                u.replace_all_uses_with(new_conv)
        folded += 1
    if folded:

        eliminate_dead_code(gm)
        gm.recompile()
    return folded


# --- folding per-channel arithmetic into a conv (what decomposed batchnorm becomes) -----------
#
# With batchnorm decomposed to ATen arithmetic, eval BN after a conv is a chain of per-channel
# ops on constants: (conv - mean) * rsqrt(var + eps) * gamma + beta. Each link folds into the
# conv on its own (Inductor's binary_folding.py), because conv is linear in W and b:
#   conv(x, W, b) + c -> conv(x, W, b + c)        conv(x, W, b) - c -> conv(x, W, b - c)
#   conv(x, W, b) * c -> conv(x, W * c, b * c)    conv(x, W, b) / c -> conv(x, W / c, b / c)
# where c is a constant holding one value per output channel (shape (C, 1, 1), (1, C, 1, 1), or
# a single value).

BINARY_FOLDS = {  # op -> (new weight, new bias) from (W, b, c as a (C,) vector)
    aten.add.Tensor: lambda g, w, b, c: (w, g(aten.add.Tensor, b, c)),
    aten.sub.Tensor: lambda g, w, b, c: (w, g(aten.sub.Tensor, b, c)),
    aten.mul.Tensor: lambda g, w, b, c: (g(aten.mul.Tensor, w, _per_out_channel(g, w, c)),
                                         g(aten.mul.Tensor, b, c)),
    aten.div.Tensor: lambda g, w, b, c: (g(aten.div.Tensor, w, _per_out_channel(g, w, c)),
                                         g(aten.div.Tensor, b, c)),
}


def _per_out_channel(g, w: torch.fx.Node, c: torch.fx.Node) -> torch.fx.Node:
    ndim = len(w.meta["val"].shape) if "val" in w.meta else 4
    return g(aten.view.default, c, [-1] + [1] * (ndim - 1))


def _channel_vector(const: torch.Tensor, out_shape: torch.Size) -> bool:
    """Is ``const`` one value per output channel of a conv output of ``out_shape`` (N, C, ...)?"""
    if const.numel() == 1:
        return True
    shape = list(const.shape)
    while len(shape) > len(out_shape) - 1 and shape and shape[0] == 1:
        shape.pop(0)  # (1, C, 1, 1) -> (C, 1, 1)
    return (len(shape) == len(out_shape) - 1 and shape[0] == out_shape[1]
            and all(s == 1 for s in shape[1:]))


def fold_conv_binary(gm: torch.fx.GraphModule) -> int:
    """Fold ``conv(x, W, b) op constant`` into the conv's weight and bias; return how many."""

    folded, g = 0, gm.graph
    for node in list(g.nodes):
        if node.op != "call_function" or node.target not in BINARY_FOLDS or len(node.args) != 2:
            continue
        conv, const = node.args
        if not (isinstance(conv, torch.fx.Node) and isinstance(const, torch.fx.Node)
                and _foldable_conv(conv) and const.op == "get_attr" and "val" in conv.meta):
            continue
        value = _fetch_attr(gm, const.target)
        out = conv.meta["val"]
        if not (isinstance(value, torch.Tensor) and value.dtype == out.dtype
                and _channel_vector(value, out.shape)):
            continue
        with g.inserting_before(node):
            emit = lambda op, *a: g.call_function(op, a)  # noqa: E731 - local shorthand
            channels = out.shape[1]
            c = emit(aten.expand.default, emit(aten.reshape.default, const, [-1]), [channels])
            weight = conv.args[1]
            bias = conv.args[2]
            if bias is None:  # a constant zero bias, so the next fold still sees a constant
                name = _fresh_name(gm, "_folded_constant")
                gm.register_buffer(name, torch.zeros(channels, dtype=out.dtype, device=out.device))
                bias = g.get_attr(name)
            new_w, new_b = BINARY_FOLDS[node.target](emit, weight, bias, c)
            new_conv = g.call_function(aten.convolution.default,
                                       (conv.args[0], new_w, new_b, *conv.args[3:]))
        new_conv.meta.update(conv.meta)
        node.replace_all_uses_with(new_conv)
        folded += 1
    if folded:

        eliminate_dead_code(gm)
        gm.recompile()
    return folded
