"""Normalization layers as core ATen (mirrors torch/_decomp rows): layer_norm forward and
backward, rms_norm, batch_norm in inference mode and in training mode without running
statistics (InstanceNorm), batch_norm's backward in both modes, group_norm forward and
backward, weight normalization forward and backward."""

from __future__ import annotations

import torch

from .registry import register_decomposition
from .util import LOW_PRECISION, downcast, numel_of, upcast

aten = torch.ops.aten


def _normalized_dims(x, normalized_shape) -> list[int]:
    return list(range(x.dim() - len(normalized_shape), x.dim()))


def stats_dtype(x, param, device_wide: bool = True) -> torch.dtype:
    """The dtype of the mean and rstd a norm saves for its backward, as ATen's kernels make
    them: on the CPU the parameters' dtype (float32 for a bfloat16 input with float32 weights,
    the "mixed type" of autocast; the input's without parameters); on CUDA float32 for a
    half-precision input (layer and batch norm keep the accumulation type; ``device_wide``
    off: group norm, the parameters' dtype there too). Rounding the mean to bfloat16 would
    lose x - mean wherever the mean is large next to the spread: the backward reads these."""
    if device_wide and x.device.type != "cpu":
        return torch.float32 if x.dtype in LOW_PRECISION else x.dtype
    return x.dtype if param is None else param.dtype


@register_decomposition(aten.native_layer_norm.default)
def native_layer_norm(x, normalized_shape, weight, bias, eps):
    """y = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + eps); also returns mean, rstd."""
    dims = _normalized_dims(x, normalized_shape)
    x = x.contiguous()  # eager's layer norm reads and returns contiguous tensors (torch/_refs)
    xf = upcast(x)
    n = numel_of(x, dims)
    mean = aten.div.Tensor(aten.sum.dim_IntList(xf, dims, True), n)  # (B, 1)
    centered = aten.sub.Tensor(xf, mean)
    var = aten.div.Tensor(aten.sum.dim_IntList(aten.mul.Tensor(centered, centered), dims, True), n)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))  # (B, 1)
    out = aten.mul.Tensor(centered, rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    stats = stats_dtype(x, weight if weight is not None else bias)
    return downcast(out, x.dtype), downcast(mean, stats), downcast(rstd, stats)


@register_decomposition(aten.native_layer_norm_backward.default)
def native_layer_norm_backward(grad, x, normalized_shape, mean, rstd, weight, bias, output_mask):
    """With xhat = (x - mean) rstd and g = grad * w, over the N normalized elements:
    dx = rstd / N * (N g - sum(g) - xhat sum(g xhat));  dw = sum(grad xhat);  db = sum(grad).
    Computed in float32 for half-precision tensors (as ATen's kernel), each result rounded once
    to its input's dtype: summed in bfloat16, a gradient over thousands of rows keeps 8 bits."""
    dims = _normalized_dims(x, normalized_shape)
    batch_dims = list(range(x.dim() - len(normalized_shape)))
    n = numel_of(x, dims)
    x_dtype = x.dtype
    grad, x, mean, rstd = upcast(grad), upcast(x), upcast(mean), upcast(rstd)
    xhat = aten.mul.Tensor(aten.sub.Tensor(x, mean), rstd)
    g = aten.mul.Tensor(grad, upcast(weight)) if weight is not None else grad
    dx = dw = db = None
    if output_mask[0]:
        a = aten.mul.Tensor(g, n)
        b = aten.sum.dim_IntList(g, dims, True)
        c = aten.mul.Tensor(xhat, aten.sum.dim_IntList(aten.mul.Tensor(g, xhat), dims, True))
        dx = downcast(aten.mul.Tensor(aten.div.Tensor(rstd, n),
                                      aten.sub.Tensor(aten.sub.Tensor(a, b), c)), x_dtype)
    if output_mask[1] and weight is not None:
        dw = downcast(_sum_over(aten.mul.Tensor(grad, xhat), batch_dims), weight.dtype)
    if output_mask[2] and bias is not None:
        db = downcast(_sum_over(grad, batch_dims), bias.dtype)
    return dx, dw, db


def _sum_over(t, dims: list[int]):
    """``t`` summed over ``dims``; over none, ``t`` itself (``sum(t, [])`` is over every dim:
    a layer norm over all of ``x``'s dims has no batch dim, and its dw is ``grad * xhat``)."""
    return aten.sum.dim_IntList(t, dims, False) if dims else t


def fused_rms_norm(x, normalized_shape, weight, eps):
    """y = x * rsqrt(mean(x^2) + eps) * w; also returns the rsqrt."""
    dims = _normalized_dims(x, normalized_shape)
    xf = upcast(x)
    eps = torch.finfo(xf.dtype).eps if eps is None else eps
    ms = aten.div.Tensor(aten.sum.dim_IntList(aten.mul.Tensor(xf, xf), dims, True),
                         numel_of(x, dims))
    rstd = aten.rsqrt.default(aten.add.Tensor(ms, eps))
    out = aten.mul.Tensor(xf, rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    return downcast(out, x.dtype), rstd


if hasattr(aten, "_fused_rms_norm"):  # torch >= 2.9; older versions decompose rms_norm in C++
    register_decomposition(aten._fused_rms_norm.default)(fused_rms_norm)


@register_decomposition(aten.rms_norm.default)
def rms_norm(x, normalized_shape, weight=None, eps=None):
    return fused_rms_norm(x, normalized_shape, weight, eps)[0]


def _channel_shape(x) -> list[int]:  # (C,) -> broadcastable (1, C, 1, 1)
    return [1, x.shape[1]] + [1] * (x.dim() - 2)


@register_decomposition(aten._native_batch_norm_legit_no_training.default)
def batch_norm_inference(x, weight, bias, running_mean, running_var, momentum, eps):
    """y = (x - running_mean) * rsqrt(running_var + eps) * w + b, per channel (dim 1), computed
    in float32 and returned in x's dtype, as ATen's kernel: a bfloat16 activation normalised
    with float32 statistics (autocast's ResNet) stays bfloat16, where type promotion alone
    would make it, and every residual sum after it, float32."""
    shape = _channel_shape(x)
    rstd = aten.rsqrt.default(aten.add.Tensor(running_var, eps))
    out = aten.mul.Tensor(aten.sub.Tensor(upcast(x), aten.view.default(running_mean, shape)),
                          aten.view.default(rstd, shape))
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, shape))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, shape))
    out = downcast(out, x.dtype)
    if x.device.type != "cpu":  # ATen's CUDA kernel returns the statistics it normalised with
        return out, running_mean, rstd
    empty = aten.full.default([0], 0, dtype=x.dtype, device=x.device)  # CPU's: none in eval
    return out, empty, empty


def _reduce_dims(x) -> list[int]:  # every dim but the channel dim: (N, C, H, W) -> [0, 2, 3]
    return [0] + list(range(2, x.dim()))


def batch_norm_training(x, weight, bias, running_mean, running_var, momentum, eps):
    """Training mode: normalize with the batch's own per-channel statistics, mean = E[x],
    rstd = 1 / sqrt(Var[x] + eps) (biased variance). Returns (out, mean, rstd), the two (C,)
    vectors being what the backward reads. With running statistics (BatchNorm) they are
    updated in place, as eager does, with the unbiased variance:
    running = (1 - momentum) * running + momentum * batch; the copies become the graph's input
    mutations (functionalization), so the update fuses into the kernels that compute the
    statistics. Without them (InstanceNorm, ``track_running_stats=False``) nothing is written."""
    shape, dims = _channel_shape(x), _reduce_dims(x)
    xf = upcast(x)
    n = numel_of(x, dims)
    # (1, C, 1, 1) each: one reduction that a compiler may lower in one pass over x (Welford's,
    # as Inductor's lowering does), where mean then sum((x - mean)^2) would read x twice
    var, mean = aten.var_mean.correction(xf, dims, correction=0, keepdim=True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))  # (1, C, 1, 1)
    out = aten.mul.Tensor(aten.sub.Tensor(xf, mean), rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, shape))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, shape))
    channels = [x.shape[1]]
    if running_mean is not None:
        # n / (n - 1) as two steps: with symbolic sizes one fraction would be a size expression
        # (training asks for n > 1 values a channel: F.batch_norm checks it)
        unbiased = aten.div.Tensor(aten.mul.Tensor(var, n), max(n - 1, 1) if isinstance(n, int)
                                   else n - 1)
        for running, batch in ((running_mean, mean), (running_var, unbiased)):
            new = aten.add.Tensor(aten.mul.Tensor(running, 1 - momentum),
                                  aten.mul.Tensor(aten.view.default(batch, channels), momentum))
            aten.copy_.default(running, downcast(new, running.dtype))
    stats = stats_dtype(x, weight if weight is not None else running_mean)
    return (downcast(out, x.dtype), downcast(aten.view.default(mean, channels), stats),
            downcast(aten.view.default(rstd, channels), stats))


@register_decomposition(aten.native_batch_norm_backward.default)
def native_batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    """Per channel, over the N elements of the other dims, with xhat = (x - mean) rstd:
    training (batch statistics, which depend on x):
        dx = w rstd (grad - sum(grad) / N - xhat sum(grad xhat) / N)
    eval (running statistics are constants): dx = w rstd grad.
    Both: dw = sum(grad xhat); db = sum(grad). Computed in float32 for half-precision tensors
    (as ATen's kernels): dw of a bfloat16 ResNet stem sums 400k products a channel."""
    shape, reduce = _channel_shape(x), _reduce_dims(x)
    x_dtype, param_dtype = x.dtype, x.dtype if weight is None else weight.dtype
    grad, x = upcast(grad), upcast(x)
    if train:
        mean, rstd = upcast(save_mean), upcast(save_invstd)
    else:
        mean = upcast(running_mean)
        rstd = aten.rsqrt.default(aten.add.Tensor(upcast(running_var), eps))
    mean, rstd = aten.view.default(mean, shape), aten.view.default(rstd, shape)
    xhat = aten.mul.Tensor(aten.sub.Tensor(x, mean), rstd)
    scale = rstd if weight is None else aten.mul.Tensor(
        rstd, aten.view.default(upcast(weight), shape))
    grad_sum = aten.sum.dim_IntList(grad, reduce)  # (C,)
    dot = aten.sum.dim_IntList(aten.mul.Tensor(grad, xhat), reduce)  # (C,)
    dx = None
    if output_mask[0] and train:
        n = numel_of(x, reduce)
        g = aten.sub.Tensor(grad, aten.div.Tensor(aten.view.default(grad_sum, shape), n))
        g = aten.sub.Tensor(g, aten.mul.Tensor(xhat, aten.div.Tensor(
            aten.view.default(dot, shape), n)))
        dx = aten.mul.Tensor(g, scale)
    elif output_mask[0]:
        dx = aten.mul.Tensor(grad, scale)
    dx = None if dx is None else downcast(dx, x_dtype)
    dw = downcast(dot, param_dtype) if output_mask[1] else None
    db = downcast(grad_sum, param_dtype) if output_mask[2] else None
    return dx, dw, db


@register_decomposition(aten.native_batch_norm.default)
def native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """Eval mode with running statistics -> the inference formula; training mode -> the batch
    statistics, the running ones (where there are both) updated in place."""
    if training and (running_mean is None) == (running_var is None):
        return batch_norm_training(x, weight, bias, running_mean, running_var, momentum, eps)
    if training or running_mean is None:
        return NotImplemented
    return batch_norm_inference(x, weight, bias, running_mean, running_var, momentum, eps)


@register_decomposition(aten._native_batch_norm_legit.default)
def native_batch_norm_legit(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """What ``native_batch_norm`` becomes under the Python dispatcher, which traces symbolic
    sizes (torch/_decomp's kernel for it): the same op, the same decomposition."""
    return native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps)


@register_decomposition(aten._native_batch_norm_legit.no_stats)
def native_batch_norm_legit_no_stats(x, weight, bias, training, momentum, eps):
    return native_batch_norm(x, weight, bias, None, None, training, momentum, eps)


@register_decomposition(aten.cudnn_batch_norm.default)
def cudnn_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """What ``batch_norm`` becomes on CUDA tensors (cuDNN's op). It is ``native_batch_norm``
    (called, so that it is decomposed or functionalised exactly as on the CPU) plus cuDNN's
    fourth output, a reserve buffer nothing here needs. In eval mode cuDNN saves no statistics."""
    out, save_mean, save_rstd = aten.native_batch_norm.default(
        x, weight, bias, running_mean, running_var, training, momentum, eps)
    reserve = aten.full.default([0], 0, dtype=torch.uint8, device=x.device)
    if not training:
        empty = aten.full.default([0], 0, dtype=weight.dtype, device=x.device)
        save_mean, save_rstd = empty, empty
    return out, save_mean, save_rstd, reserve


@register_decomposition(aten.cudnn_batch_norm_backward.default)
def cudnn_batch_norm_backward(x, grad, weight, running_mean, running_var, save_mean, save_rstd,
                              eps, reserve):
    """cuDNN's backward, which autograd records after ``cudnn_batch_norm`` in training mode:
    ``native_batch_norm_backward`` with the batch statistics the forward saved."""
    return native_batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean,
                                      save_rstd, True, eps, [True, True, True])


def _grouped(t, groups: int):
    """(N, C, *spatial) -> (N, G, C/G, *spatial): splitting one dim is a view for any strides
    (a channels-last tensor included), so the groups are reduced where the tensor lies."""
    n, c = t.shape[0], t.shape[1]
    return aten.view.default(t, [n, groups, c // groups, *t.shape[2:]])


def _ungrouped(t, like):
    return aten.view.default(t, list(like.shape))


@register_decomposition(aten.native_group_norm.default)
def native_group_norm(x, weight, bias, n, c, hxw, groups, eps):
    """GroupNorm: layer norm over each group of C/G channels and their spatial positions,
    y = (x - mean_g) rstd_g w_c + b_c; also returns mean and rstd, (N, G). ATen's CUDA kernel
    takes only contiguous layouts (a channels-last input in a layout of its own fails there)."""
    xg = _grouped(upcast(x), groups)
    dims = list(range(2, xg.dim()))
    m = numel_of(xg, dims)
    mean = aten.div.Tensor(aten.sum.dim_IntList(xg, dims, True), m)  # (N, G, 1, ...)
    centered = aten.sub.Tensor(xg, mean)
    var = aten.div.Tensor(aten.sum.dim_IntList(aten.mul.Tensor(centered, centered), dims, True), m)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    out = _ungrouped(aten.mul.Tensor(centered, rstd), x)
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, _channel_shape(x)))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, _channel_shape(x)))
    stats, dtype = [x.shape[0], groups], stats_dtype(x, weight, device_wide=False)
    return (downcast(out, x.dtype), downcast(aten.view.default(mean, stats), dtype),
            downcast(aten.view.default(rstd, stats), dtype))


@register_decomposition(aten.native_group_norm_backward.default)
def native_group_norm_backward(grad, x, mean, rstd, weight, n, c, hxw, groups, output_mask):
    """Within each group of M elements, with xhat = (x - mean) rstd and g = grad w (layer
    norm's formula per group): dx = rstd (g - mean(g) - xhat mean(g xhat));
    per channel, over the batch and spatial dims: dw = sum(grad xhat); db = sum(grad)."""
    dtype = x.dtype
    grad, x = upcast(grad), upcast(x)
    stats = [x.shape[0], groups, *[1] * (x.dim() - 1)]  # (N, G, 1, ...): broadcasts over a group
    mean, rstd = aten.view.default(upcast(mean), stats), aten.view.default(upcast(rstd), stats)
    xhat_g = aten.mul.Tensor(aten.sub.Tensor(_grouped(x, groups), mean), rstd)
    dx = dw = db = None
    if output_mask[0]:
        g = grad if weight is None else aten.mul.Tensor(
            grad, aten.view.default(upcast(weight), _channel_shape(x)))
        gg = _grouped(g, groups)
        dims = list(range(2, gg.dim()))
        m = numel_of(gg, dims)
        mean_g = aten.div.Tensor(aten.sum.dim_IntList(gg, dims, True), m)
        mean_gx = aten.div.Tensor(aten.sum.dim_IntList(aten.mul.Tensor(gg, xhat_g), dims, True), m)
        inner = aten.sub.Tensor(aten.sub.Tensor(gg, mean_g), aten.mul.Tensor(xhat_g, mean_gx))
        dx = downcast(_ungrouped(aten.mul.Tensor(inner, rstd), x), dtype)
    reduce = _reduce_dims(x)
    if output_mask[1] and weight is not None:
        dw = downcast(aten.sum.dim_IntList(
            aten.mul.Tensor(grad, _ungrouped(xhat_g, x)), reduce), weight.dtype)
    if output_mask[2]:  # the parameters' dtype (float32 under autocast), as ATen's
        db = downcast(aten.sum.dim_IntList(grad, reduce), dtype if weight is None else weight.dtype)
    return dx, dw, db


def batch_norm_as_native(x, weight, bias, running_mean, running_var, training, momentum, eps,
                         cudnn_enabled=True):
    """``torch.batch_norm`` (what ``F.batch_norm`` calls), replaced before autograd sees it: on
    CUDA it would dispatch to cuDNN's op, whose running-statistics update and reserve buffer
    differ from the CPU's. ``native_batch_norm`` on every device gives one graph, one
    functionalisation and one backward (``native_batch_norm_backward``)."""
    return torch.ops.aten.native_batch_norm.default(
        x, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def functional_batch_norm_as_native(x, running_mean, running_var, weight=None, bias=None,
                                    training=False, momentum=0.1, eps=1e-5):
    """``F.batch_norm``: the tracer's mode sees this call, not the ``torch.batch_norm`` inside
    it. Keeps F's check that training mode has more than one value per channel."""
    if training:
        torch.nn.functional._verify_batch_size(x.size())
    return batch_norm_as_native(x, weight, bias, running_mean, running_var, training, momentum,
                                eps)


# torch function -> replacement, applied by aot_autograd's tracer before autograd
norm_pre_autograd_decompositions = {
    torch.batch_norm: batch_norm_as_native,
    torch.nn.functional.batch_norm: functional_batch_norm_as_native,
}


# --- weight normalization (``nn.utils.weight_norm``: wav2vec2's positional convolution) -----------

def _all_dims_but(v, dim: int) -> list[int]:
    return [d for d in range(v.dim()) if d != dim % v.dim()]


@register_decomposition(aten._weight_norm_interface.default)
def weight_norm_interface(v, g, dim=0):
    """``w = v * (g / |v|)``, the norm over every dim but ``dim`` (kept, as ``g``'s shape is);
    also returns the norm, in float32 for half-precision ``v`` as ATen's kernels keep it."""
    vf = upcast(v)
    norm = aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(vf, vf), _all_dims_but(v, dim),
                                                  True))
    return downcast(aten.mul.Tensor(vf, aten.div.Tensor(upcast(g), norm)), v.dtype), norm


@register_decomposition(aten._weight_norm_interface_backward.default)
def weight_norm_interface_backward(grad_w, v, g, norm, dim):
    """With ``s = sum(grad_w * v)`` over every dim but ``dim``:
    ``grad_v = (g / norm) * (grad_w - v * s / norm**2)``, ``grad_g = s / norm``."""
    grad_wf, vf, gf = upcast(grad_w), upcast(v), upcast(g)
    s = aten.sum.dim_IntList(aten.mul.Tensor(grad_wf, vf), _all_dims_but(v, dim), True)
    inner = aten.sub.Tensor(grad_wf, aten.mul.Tensor(vf, aten.div.Tensor(
        s, aten.mul.Tensor(norm, norm))))
    grad_v = aten.mul.Tensor(aten.div.Tensor(gf, norm), inner)
    return downcast(grad_v, v.dtype), downcast(aten.div.Tensor(s, norm), g.dtype)
