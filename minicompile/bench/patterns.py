"""The pattern suite (``--suite patterns``): the kernel shapes real code is made of, beyond the
benchmark's own cases, each measured as the cases are (eager oracle, real ``torch.compile`` and
minicompile in one process, ratios, % of copy bandwidth).

Each row is one pattern a kernel writer must get right: a reduction over the inner, the outer or
mixed axes; a read through a transpose, a permute or a channels-last layout; a scan; a norm's
forward and backward; an optimizer's in-place update; a gather, scatter or index_put; a pooling
window; an epilogue after a matrix product; and a few dtypes. Sizes: every pattern builds its
tensors from one ``(m, n)`` per scale: bandwidth-bound on the GPU (8192 x 8192: 256 MB of
float32 per operand), moderate on the CPU; the test scale uses odd sizes.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from .cases import Case, Workload, _short

# (m, n) per scale; a pattern derives its shapes from them
SIZES = {"cuda": (8192, 8192), "cuda-quick": (4096, 4096), "cpu": (1024, 1024),
         "cpu-quick": (256, 512), "tiny": (33, 67)}


def _rand(device, *shape, dtype=torch.float32):
    return torch.randn(*shape, device=device, dtype=dtype)


def _nchw(m: int, n: int) -> tuple[int, int, int, int]:
    """An (N, C, H, W) image batch of about m * n elements, 64 channels."""
    side = max(int(math.sqrt(m * n / 64 / 8)), 3)
    return 8, 64, side, side


# ---- the patterns: each a function (what is compiled) and how to build its inputs ---------------

def sum_inner(x):
    return x.sum(-1)  # read MN, write M


def sum_outer(x):
    return x.sum(0)  # read MN, write N: the reduced dim is the slow one


def sum_mixed(x):
    return x.sum((0, 2))  # (B, M, N) -> (M,): one outer and one inner reduced dim


def amax_outer(x):
    return x.amax(0)


def argmax_inner(x):
    return x.argmax(-1)


def var_mean_inner(x):
    return torch.var_mean(x, -1)  # two outputs of one pass


def logsumexp_inner(x):
    return torch.logsumexp(x, -1)


def transpose_add(x, y):
    return x.t() + y  # read x column by column, y row by row


def transpose_copy(x):
    return x.t().contiguous()


def permute_add(x, y):
    return x.permute(2, 0, 1) + y  # (A, B, C) -> (C, A, B)


def channels_last_to_contiguous(x):
    return x.contiguous()  # x channels-last: a layout change, NHWC -> NCHW


def channels_last_bias_relu(x, b):
    return (x + b.view(1, -1, 1, 1)).relu()  # stays channels-last, as eager's output does


def cumsum_rows(x):
    return x.cumsum(-1)


def cumprod_rows(x):
    return x.cumprod(-1)


def logcumsumexp_rows(x):
    return torch.logcumsumexp(x, -1)


def cumsum_cols(x):
    return x.cumsum(0)  # a scan over the outer dim


def layernorm(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b)


def rmsnorm(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w


def batchnorm_train(x, w, b):
    return F.batch_norm(x, None, None, w, b, training=True)  # batch statistics over N, H, W


def adamw_update(p, g, m, v):
    """One AdamW step as torch.optim's single-tensor loop writes it (step 10, lr 1e-3)."""
    lr, beta1, beta2, eps, wd, step = 1e-3, 0.9, 0.999, 1e-8, 1e-2, 10
    p.mul_(1 - lr * wd)
    m.lerp_(g, 1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    denom = (v.sqrt() / math.sqrt(1 - beta2 ** step)).add_(eps)
    p.addcdiv_(m, denom, value=-lr / (1 - beta1 ** step))  # read p g m v, write p m v


def sgd_momentum_update(p, g, buf):
    buf.mul_(0.9).add_(g)
    p.add_(buf, alpha=-0.01)  # read p g buf, write p buf


def embedding_add(weight, idx, pos):
    return F.embedding(idx, weight) + pos  # gather rows


def gather_cols(x, idx):
    return torch.gather(x, 1, idx)


def index_add_rows(x, idx, src):
    return x.index_add(0, idx, src)  # scatter with accumulation


def index_put_rows(x, idx, values):
    return torch.index_put(x, (idx,), values)  # scatter without accumulation


def scatter_add_cols(x, idx, src):
    return x.scatter_add(1, idx, src)


def max_pool(x):
    return F.max_pool2d(x, 3, 2, 1)


def avg_pool(x):
    return F.avg_pool2d(x, 2)


def cat_channels(*xs):
    return torch.cat(xs, 1) * 2  # DenseNet's concatenated features, then a pointwise op


def global_avg_pool(x):
    return x.mean((2, 3))  # (N, C, H, W) -> (N, C)


def mean_and_max_pool(x):
    return x.mean((2, 3)) + x.amax((2, 3))  # a channel attention's two poolings (CBAM)


def bias_gelu_tanh(x, b):
    return F.gelu(x + b, approximate="tanh")


def bias_gelu(x, b):
    return F.gelu(x + b)


def swiglu(a, b):
    return F.silu(a) * b


def softmax_rows(x):
    return torch.softmax(x, -1)


def mm_bias_relu(x, w, b):
    return torch.relu(x @ w + b)  # an extern matmul with a bias + ReLU epilogue


def conv_bias_relu(x, w, b):
    return torch.relu(F.conv2d(x, w, b, padding=1))


# ---- builders -------------------------------------------------------------------------------------

def one_2d(fn, dtype=torch.float32, tol=None):
    def make(device, m, n):
        return Workload(fn, (_rand(device, m, n, dtype=dtype),), f"{m}x{n} {_short(dtype)}",
                        tol=tol)
    return make


def two_2d(fn, dtype=torch.float32, transposed=False):
    def make(device, m, n):
        x = _rand(device, *((n, m) if transposed else (m, n)), dtype=dtype)
        return Workload(fn, (x, _rand(device, m, n, dtype=dtype)), f"{m}x{n} {_short(dtype)}")
    return make


def row_bias(fn, dtype=torch.float32):
    def make(device, m, n):
        return Workload(fn, (_rand(device, m, n, dtype=dtype), _rand(device, n, dtype=dtype)),
                        f"{m}x{n} {_short(dtype)}")
    return make


def make_sum_mixed(device, m, n):
    b = 4
    x = _rand(device, b, m // b + 1, n)
    return Workload(sum_mixed, (x,), f"{b}x{m // b + 1}x{n} f32")


def make_permute_add(device, m, n):
    a, c = 16, n
    bb = max(m // a, 2)
    return Workload(permute_add, (_rand(device, a, bb, c), _rand(device, c, a, bb)),
                    f"{a}x{bb}x{c} f32")


def image(fn, dtype=torch.float32, with_bias=False):
    def make(device, m, n):
        shape = _nchw(m, n)
        x = _rand(device, *shape, dtype=dtype).to(memory_format=torch.channels_last)
        args = (x, _rand(device, shape[1], dtype=dtype)) if with_bias else (x,)
        return Workload(fn, args, "x".join(map(str, shape)) + f" {_short(dtype)} NHWC")
    return make


def contiguous_image(fn, dtype=torch.float32):
    def make(device, m, n):
        shape = _nchw(m, n)
        return Workload(fn, (_rand(device, *shape, dtype=dtype),),
                        "x".join(map(str, shape)) + f" {_short(dtype)}")
    return make


def make_max_pool_backward(device, m, n):
    shape = _nchw(m, n)
    x = _rand(device, *shape).requires_grad_()
    out = [shape[0], shape[1], (shape[2] + 1) // 2, (shape[3] + 1) // 2]  # 3x3, stride 2, pad 1
    return Workload(max_pool, (x,), "x".join(map(str, shape)) + " f32 fwd+bwd",
                    grad_out=_rand(device, *out))


def make_cat_channels(device, m, n):
    n_, c, h, w = _nchw(m, n)
    xs = [_rand(device, n_, c // 8, h, w) for _ in range(8)]
    return Workload(cat_channels, tuple(xs), f"8x{n_}x{c // 8}x{h}x{w} f32")


def make_cumprod(device, m, n):
    x = 1 + 0.01 * _rand(device, m, n)  # a product of values near 1 stays in range
    return Workload(cumprod_rows, (x,), f"{m}x{n} f32", tol=(1e-4, 1e-5))


def norm_backward(fn, dtype=torch.float32, params=2):
    """Forward and backward of a norm over rows: x and its weight (and bias) get gradients."""
    def make(device, m, n):
        x = _rand(device, m, n, dtype=dtype).requires_grad_()
        ps = [(1 + 0.1 * _rand(device, n, dtype=dtype)).requires_grad_()] + \
             [_rand(device, n, dtype=dtype).requires_grad_() for _ in range(params - 1)]
        # the weight's gradient is a sum over m rows: eager rounds its half-precision terms,
        # a fused kernel sums them in float32; the difference grows as sqrt(m)
        tol = (4e-2, 2e-2 * math.sqrt(m)) if dtype != torch.float32 else (1e-3, 1e-3)
        return Workload(fn, (x, *ps), f"{m}x{n} {_short(dtype)} fwd+bwd", tol=tol,
                        grad_out=_rand(device, m, n, dtype=dtype))
    return make


def make_batchnorm(device, m, n):
    shape = _nchw(m, n)
    x = _rand(device, *shape).requires_grad_()
    w, b = ((_rand(device, shape[1])).requires_grad_() for _ in range(2))
    return Workload(batchnorm_train, (x, w, b), "x".join(map(str, shape)) + " f32 fwd+bwd",
                    tol=(1e-3, 1e-3), grad_out=_rand(device, *shape))


def make_adamw(device, m, n):
    p, g, mom = (_rand(device, m * n) for _ in range(3))
    v = _rand(device, m * n).abs()
    return Workload(adamw_update, (p, g, mom, v), f"4x{m * n} f32 in place", mutated=(0, 2, 3),
                    tol=(1e-5, 1e-5))


def make_sgd(device, m, n):
    p, g, buf = (_rand(device, m * n) for _ in range(3))
    return Workload(sgd_momentum_update, (p, g, buf), f"3x{m * n} f32 in place", mutated=(0, 2))


def make_embedding(device, m, n):
    vocab, dim, dtype = 4 * m, n, torch.bfloat16
    idx = torch.randint(0, vocab, (m,), device=device)
    return Workload(embedding_add, (_rand(device, vocab, dim, dtype=dtype), idx,
                                    _rand(device, m, dim, dtype=dtype)), f"{m}x{dim} bf16")


def make_gather(device, m, n):
    x = _rand(device, m, n)
    return Workload(gather_cols, (x, torch.randint(0, n, (m, n // 2), device=device)),
                    f"{m}x{n} f32")


def make_index_add(device, m, n):
    idx = torch.randint(0, m, (m // 2,), device=device)
    return Workload(index_add_rows, (_rand(device, m, n), idx, _rand(device, m // 2, n)),
                    f"{m}x{n} f32", tol=(1e-4, 1e-4))


def make_index_put(device, m, n):
    idx = torch.randperm(m, device=device)[: m // 2]  # distinct rows: one writer per element
    return Workload(index_put_rows, (_rand(device, m, n), idx, _rand(device, m // 2, n)),
                    f"{m}x{n} f32")


def make_scatter_add(device, m, n):
    idx = torch.randint(0, n, (m, n // 2), device=device)
    return Workload(scatter_add_cols, (_rand(device, m, n), idx, _rand(device, m, n // 2)),
                    f"{m}x{n} f32")


def make_mm_bias_relu(device, m, n):
    k, dtype = n // 2, torch.bfloat16 if device == "cuda" else torch.float32
    args = (_rand(device, m, k, dtype=dtype) / k ** 0.5, _rand(device, k, n, dtype=dtype),
            _rand(device, n, dtype=dtype))
    return Workload(mm_bias_relu, args, f"{m}x{k}x{n} {_short(dtype)}", kind="compute",
                    flops=2.0 * m * k * n, tol=(2e-2, 2e-2) if device == "cuda" else (1e-3, 1e-3))


def make_conv_bias_relu(device, m, n):
    shape = _nchw(m, n)
    c = shape[1]
    args = (_rand(device, *shape), _rand(device, c, c, 3, 3) / (3 * c ** 0.5), _rand(device, c))
    flops = 2.0 * shape[0] * shape[2] * shape[3] * c * c * 9
    return Workload(conv_bias_relu, args, "x".join(map(str, shape)) + " f32 3x3", kind="compute",
                    flops=flops, tol=(1e-3, 1e-3))


def _tol_scan(fn):  # a scan's error grows with the row: float32 sums in another order
    return one_2d(fn, tol=(1e-4, 1e-3))


MAKERS: dict[str, Callable[..., Workload]] = {
    # reductions: inner, outer, mixed axes; one-pass multi-output and index-returning ones
    "sum_inner": one_2d(sum_inner),
    "sum_outer": one_2d(sum_outer, tol=(1e-4, 1e-3)),
    "sum_outer_bf16": one_2d(sum_outer, torch.bfloat16, tol=(2e-2, 2e-1)),
    "sum_mixed": make_sum_mixed,
    "amax_outer_f16": one_2d(amax_outer, torch.float16),
    "argmax_inner": one_2d(argmax_inner),
    "var_mean_inner": one_2d(var_mean_inner),
    "logsumexp_inner": one_2d(logsumexp_inner),
    # layouts
    "transpose_add": two_2d(transpose_add, transposed=True),
    "transpose_copy_bf16": one_2d(transpose_copy, torch.bfloat16),
    "permute_add": make_permute_add,
    "channels_last_to_nchw": image(channels_last_to_contiguous),
    "channels_last_bias_relu": image(channels_last_bias_relu, with_bias=True),
    # scans
    "cumsum_rows": _tol_scan(cumsum_rows),
    "cumprod_rows": make_cumprod,
    "logcumsumexp_rows": _tol_scan(logcumsumexp_rows),
    "cumsum_cols": _tol_scan(cumsum_cols),
    # norms, forward and backward
    "layernorm_fwd_bwd": norm_backward(layernorm),
    "rmsnorm_fwd_bwd_bf16": norm_backward(rmsnorm, torch.bfloat16, params=1),
    "batchnorm_fwd_bwd": make_batchnorm,
    # optimizer updates in place
    "adamw_update": make_adamw,
    "sgd_momentum_update": make_sgd,
    # gathers and scatters
    "embedding_add_bf16": make_embedding,
    "gather_cols": make_gather,
    "index_add_rows": make_index_add,
    "index_put_rows": make_index_put,
    "scatter_add_cols": make_scatter_add,
    # pooling
    "max_pool_3x3s2": contiguous_image(max_pool),
    "max_pool_3x3s2_fwd_bwd": make_max_pool_backward,
    "avg_pool_2x2_nhwc": image(avg_pool),
    "global_avg_pool": contiguous_image(global_avg_pool),
    # a squeeze-excite's pooling in a channels-last network: C contiguous, an outer reduction
    "global_avg_pool_nhwc": image(global_avg_pool),
    # a channel attention's mean and max pooling of the same channels-last image: one pass
    "mean_max_pool_nhwc": image(mean_and_max_pool),
    # activations and epilogues
    "bias_gelu_tanh": row_bias(bias_gelu_tanh),
    "bias_gelu_bf16": row_bias(bias_gelu, torch.bfloat16),
    "swiglu_f16": two_2d(swiglu, torch.float16),
    "softmax_f16": one_2d(softmax_rows, torch.float16),
    "mm_bias_relu": make_mm_bias_relu,
    "conv_bias_relu": make_conv_bias_relu,
    # many inputs
    "cat_8_channels": make_cat_channels,
}

PATTERNS: dict[str, Case] = {
    name: Case(make, {scale: [size] for scale, size in SIZES.items()})
    for name, make in MAKERS.items()}
