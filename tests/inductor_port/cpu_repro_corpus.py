"""Cases ported from pytorch/pytorch ``test/inductor/test_cpu_repro.py`` (``CPUReproTests``): each
test there is the regression test of a bug Inductor's CPU backend had (odd sizes and vector
tails, strides and transposes, channels-last, masked loads, index_put and scatter, reductions,
int8/uint8/bool and low-precision floats). The small functions and inputs are re-typed and
adapted: sizes are smaller (still odd, still past a vector's width where the original tests a
tail), modules become functions whose parameters are arguments, a test that loops over dtypes or
shapes becomes one case taking one input per variant (or several cases, named with a suffix).
What the originals assert about Inductor's internals (metrics, generated code, configuration
patches) is left out; what remains is the comparison with eager. Tests of quantization ops or
mkldnn fusions, of random numbers and of Inductor's own APIs are not ported (of the quantization
tests, only the one written as plain arithmetic, test_decomposed_dequant_relu_quant, is)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import case

aten = torch.ops.aten
randn, rand, randint = torch.randn, torch.rand, torch.randint
LOWP_TOL = dict(atol=2e-2, rtol=2e-2)


def variant(name: str, body, args, **kwargs) -> None:
    """Registers ``body`` under ``name``: one original test run on several inputs."""

    def fn(*a):
        return body(*a)

    fn.__name__ = fn.__qualname__ = name
    case(args, **kwargs)(fn)


def cl(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last)


def _nan_at_ends(*shape, dtype=torch.float32):
    x = randn(*shape).to(dtype)
    x.view(-1)[0] = float("nan")
    x.view(-1)[-1] = float("nan")
    return x


# --- convolutions, folds, normalizations --------------------------------------------------------

@case(lambda: (torch.ones(1, 1, 1, 1),))
def test_conv_bias_flattened_view(x):
    bias = x.to(torch.bool).float().flatten()
    return F.conv2d(x, x, bias, stride=1, padding=0)


@case(lambda: (randn(1, 3, 9, 11, dtype=torch.bfloat16), randn(5, 3, 3, 3, dtype=torch.bfloat16),
               randn(5), rand(5) + 0.5, randn(5), randn(5)), atol=5e-2, rtol=5e-2)
def test_conv2d_bn_mixed_dtype(x, w, mean, var, gamma, beta):
    y = F.conv2d(x, w, None, 1, 1)
    return F.batch_norm(y, mean, var, gamma, beta, False, 0.1, 1e-3)


@case(lambda: (randn(1, 16, 36), randn(1, 9, 16)))
def test_nn_fold(a, b):
    return (F.fold(a, output_size=(9, 9), kernel_size=(4, 4), stride=(1, 1)),
            F.fold(b, output_size=(9, 9), kernel_size=(3, 3), stride=(2, 2)))


@case(lambda: (randn(2, 3, 5), randn(4, 2, 3)), grads=True)
def test_conv1d_strided_weight_torch_compile(x, w):
    return F.conv1d(x, w.transpose(2, 1)).clone()


@case(lambda: (randn(3, 5, 8, 9), randn(5, 2, 3, 3), randn(2), randn(5), randn(5)), grads=True)
def test_compile_dynamic_grad_conv_transpose2d(x, w, b, gamma, beta):
    y = F.batch_norm(x, torch.zeros(5), torch.ones(5), gamma, beta, False)
    y = F.conv_transpose2d(y, w, b)
    y = F.max_pool2d(y, 2)
    return torch.softmax(y, dim=0).mean()


@case(lambda: (cl(randn(2, 3, 5, 6)), cl(randn(2, 5, 5, 6)), cl(randn(4, 3, 3, 3))),
      atol=1e-5, rtol=1e-5)
def test_require_stride_order_non_owning(x1, x2, w):
    return torch.cat([x1, x2], dim=1), F.conv2d(x1, w, padding=1)


@case(lambda: (randn(2, 3, 9, 15), randn(16, 3, 1, 7), randn(16), randn(10, 720)),
      atol=1e-3, rtol=1e-3)
def test_parallel_reduction_vectorization(x, w, b, weight):
    y = F.conv2d(x, w, b, stride=(2, 1))
    shrunk = F.hardshrink(y, lambd=0)
    return (torch.mv(weight, y.view(y.size(0), -1)[0]),
            torch.mv(weight, shrunk.view(y.size(0), -1)[0]))


@case(lambda: (randn(1, 39, 1, 18, 17), randn(1, 39, 1, 17), randn(1)), atol=1e-4, rtol=1e-4)
def test_non_contiguous_reduction_store(x, w, b):
    return F.conv2d(x.max(3).values, w, b, stride=(2, 2))


@case(lambda: (randn(1, 8, 13, 22), randn(8, 8, 1, 1), randn(8, 8, 3, 3), randn(8), randn(8)),
      dynamic=True, atol=1e-4, rtol=1e-4)
def test_broadcast_scalar_cpp_tile_2d_kernel(data, w1, w2, b1, b2):
    one = aten.convolution(data, w1, b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    two = aten.convolution(data, w2, b2, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return one, two, F.max_pool2d(one, [1, 1], [2, 2], [0, 0], [1, 1], False)


def _group_norm_args(fmt, dtype=torch.float32):
    x = randn(2, 9, 6, 5).to(dtype)
    return (x.contiguous(memory_format=fmt), randn(9).to(dtype), randn(9).to(dtype))


def _group_norm(x, w, b):
    return F.group_norm(x, 3, w, b)


@case(lambda: _group_norm_args(torch.contiguous_format) + _group_norm_args(torch.channels_last)
      + _group_norm_args(torch.channels_last, torch.bfloat16), **LOWP_TOL)
def test_group_norm_vec(*xs):
    return tuple(_group_norm(*xs[i:i + 3]) for i in range(0, len(xs), 3))
variant("test_group_norm_vec_dynamic", _group_norm,
        lambda: _group_norm_args(torch.channels_last), dynamic=True)


@case(lambda: (randn(3, 9, 5, 6), randn(1, 9, 3), randn(1), randn(7, 1, 3), randn(7)),
      atol=2e-4, rtol=1e-3)
def test_group_norm_sum_conv1d_tail_reduction_store(x, w1, b1, w2, b2):
    out = F.group_norm(x, 1).sum(dim=3)
    return F.conv1d(F.conv1d(out, w1, b1), w2, b2)


@case(lambda: (randn(1, 4, 17, 17, 17),), atol=1e-4, rtol=1e-4)
def test_group_norm_large_size(x):
    return F.group_norm(x, 4)


@case(lambda: (rand(2, 33, 4, 5), rand(33), rand(33)), grads=True, dynamic=True)
def test_group_norm_backward_symint_divisible_channels(x, weight, bias):
    y = F.group_norm(x, 1, weight=weight, bias=bias)
    return torch.sigmoid(y.max(dim=0).values)


def _two_step_variance_args(pairs):
    xs = []
    for mean, std in pairs:
        x = randn(7, 33)
        x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)
        xs.append(x * std + mean)
    return tuple(xs)


def _layer_norms(*xs):
    return tuple(F.layer_norm(x, (33,), eps=1e-5) for x in xs)


variant("test_two_step_variance", _layer_norms,
        lambda: _two_step_variance_args([(0, 1), (0, 0.5), (0.5, 1), (0, 2)]),
        atol=1e-4, rtol=1e-4)
variant("test_two_step_variance_large", _layer_norms,
        lambda: _two_step_variance_args([(0, 1e10), (1e10, 10), (1e10, 1e10)]), atol=1, rtol=1e-4)


def _layernorm_inf_args():
    x = torch.tensor([[65504.0, 65504.0, -65504.0, -65504.0]])
    return x.half(), x.bfloat16(), randn(4).half(), randn(4).bfloat16()


@case(_layernorm_inf_args)
def test_layernorm_nan_with_inf_cpu_float16(x16, xb16, w16, wb16):
    return F.layer_norm(x16, (4,), w16), F.layer_norm(xb16, (4,), wb16)


@case(lambda: (randn(14, 2), randn(14, 2), randn(14, 2), randn(2, 2, 14), randn(14), randn(14)),
      atol=1e-4, rtol=1e-4)
def test_vertical_reduction_tail_store_uses_tail_width(x, y, z, residual, weight, bias):
    x = F.leaky_relu(x * y + z)
    x = x.permute(1, 0).unsqueeze(1)
    return F.layer_norm(x + residual, (14,), weight, bias)


# --- pointwise: special values, dtypes, vector tails ----------------------------------------------

@case(lambda: (randn(1, 3, 7, 7),))
def test_pad_with_nan_value(x):
    return F.pad(x, (1, 1, 1, 1), value=float("nan"))


@case(lambda: (randn(2, 17), randint(0, 2, (2, 17)).to(torch.bool)))
def test_masked_fill_with_inf_or_nan_value(value, mask):
    return (torch.masked_fill(value, mask, float("inf")),
            torch.masked_fill(value, mask, float("-inf")),
            torch.masked_fill(value, mask, float("nan")))


@case(lambda: (torch.tensor([-572373.5000, 755109.1250, 330995.5625]),))
def test_relu_with_inf_value(x):
    return torch.relu(torch.sinh(x))


def _acosh_args():
    x = torch.tensor([[-8493.9854, 431654.1250, 71741.5859, 608234.5000, -103814.7500,
                       -699397.0000, -910685.8125, -832737.1875, 875343.5000]]).repeat(3, 9)
    return x, x.bfloat16(), x.double()


@case(_acosh_args)
def test_acosh_with_negative_large_input(a, b, c):
    return torch.acosh(a), torch.acosh(b), torch.acosh(c)


def _asinh_args():
    x = torch.tensor([0, 0, 0, -10000.1]).repeat(3, 5)
    return x, x.bfloat16(), x.half(), x.double()


@case(_asinh_args)
def test_asinh_with_corner_inputs(a, b, c, d):
    return torch.asinh(a), torch.asinh(b), torch.asinh(c), torch.asinh(d)


@case(lambda: (torch.tensor([[-1e30, 1e30, -5e28, 5e28, -7.5e29, 7.5e29, -2e30, 2e30, 0.0]])
               .repeat(3, 1),))
def test_asinh_large_float32_inplace(x):
    return x.asinh_()


@case(lambda: (torch.tensor([4, 3, 2], dtype=torch.uint8),))
def test_pow_cos(x):
    return torch.cos(x.pow(5))


@case(lambda: (randn(2), randn(2)))
def test_reduce_with_masked(a, b):
    a = F.pad(a, (0, -1))
    return (a + b).min(0).values


@case(lambda: (randn(1, 3, 8, 9),))
def test_tanh_atan2(x):
    x = x - torch.tanh(x)
    return torch.atan2(x, x)


@case(lambda: (randn(8),))
def test_index_propagation_issue_102065(x):
    x = torch.arange(x.numel())
    return (x.unsqueeze(0) - x.unsqueeze(1)) ** 2


@case(lambda: ())
def test_low_fp_index_expr_issue_147279():
    return torch.sum(torch.arange(start=300, end=400, dtype=torch.float16), dim=(0,))


@case(lambda: (torch.tensor([4.4, 4.5, 4.6, 5.5, 254.5, 0.5, 1.5]).repeat(3),))
def test_to_uint8_rounding_method(x):
    return x.to(torch.uint8)


def _decomposed_dequant_relu_quant(dtype, qmin, qmax):
    def body(x, fx):
        scale, zero_point = 0.01, 100
        y = torch.relu((x.to(torch.float32) - zero_point) * scale)
        q = torch.clamp(torch.round(y * (1.0 / scale)) + zero_point, qmin, qmax).to(dtype)
        fq = torch.clamp(torch.round(torch.relu(fx) * (1.0 / scale)) + zero_point, qmin, qmax)
        return q, fq.to(dtype), y

    def args():
        x = torch.clamp(randn(1, 7, 7, 9) * 100, qmin, qmax)
        return x.to(dtype), x

    return body, args


for _name, _dtype, _lo, _hi in (("uint8", torch.uint8, 0, 255), ("int8", torch.int8, -128, 127)):
    _body, _args = _decomposed_dequant_relu_quant(_dtype, _lo, _hi)
    variant(f"test_decomposed_dequant_relu_quant_{_name}", _body, _args)


@case(lambda: (torch.zeros(10), randn(10)))
def test_inplace_add_alpha(x, y):
    aten.add_.Tensor(x, y, alpha=0.55)
    return (x,)


def _masked_fill_softmax_args():
    mask = randint(0, 2, (2, 17), dtype=torch.uint8)
    return randn(2, 17), randn(2, 17).bfloat16(), randn(2, 17).half(), mask


@case(_masked_fill_softmax_args, atol=1e-2, rtol=1e-2)
def test_masked_fill_softmax(v32, vbf16, vf16, mask):
    mask = mask.to(torch.bool)
    return tuple(torch.softmax(torch.masked_fill(v, mask, -33.0), -1) for v in (v32, vbf16, vf16))


@case(lambda: (torch.zeros(129, dtype=torch.bool) | (randn(129) > 0),))
def test_ops_masked_with_bool_input(x):
    return torch.constant_pad_nd(x, [2, 3])


@case(lambda: (randn(37, 1),))
def test_frexp(x):
    x_frac, x_exp = torch.frexp(x)
    return x_frac * x_exp


@case(lambda: (randint(-1, 0, (1, 1, 1)), torch.tensor([-5, -1, 0, 7, 2 ** 40])))
def test_bitwise_right_shift(x, y):
    return torch.bitwise_right_shift(x, 31), torch.bitwise_right_shift(y, 31)


@case(lambda: (torch.tensor(1000), torch.tensor(64), torch.tensor([-3, 5, 1000, 1]),
               torch.tensor([64, 65, 63, -1])))
def test_bitwise_shift_corner_inputs(x, bits, xs, ys):
    return (torch.bitwise_left_shift(x, bits), torch.bitwise_right_shift(x, bits),
            torch.bitwise_left_shift(xs, ys), torch.bitwise_right_shift(xs, ys))


@case(lambda: (randn(7, 9),))
def test_view_dtype(x):
    return x.view(torch.int32) >> 2


def _logical(x, y):
    return tuple(torch.where(c, 1.0, 0.0) for c in (
        torch.logical_and(x, y), torch.logical_not(x), torch.logical_or(x, y),
        torch.logical_xor(x, y)))


@case(lambda: (randn(67) * (randn(67) > 0), randn(67) * (randn(67) > 0),
               (randn(67) * (randn(67) > 0)).bfloat16(), (randn(67) * (randn(67) > 0)).half()))
def test_vec_logical(x, y, a, b):
    return _logical(x, y) + _logical(a, b)


def _bitwise(x, y):
    return torch.bitwise_and(x, y), torch.bitwise_not(x), torch.bitwise_or(x, y), \
        torch.bitwise_xor(x, y)


def _bitwise_and_shifts(x, y):
    return _bitwise(x, y) + (torch.bitwise_left_shift(x, y), torch.bitwise_right_shift(x, y))


@case(lambda: (randn(67) > 0, randn(67) > 0) + sum((
    ((randn(67) * 5).to(d), (randn(67) * 5).to(d))
    for d in (torch.uint8, torch.int8, torch.int32, torch.int64)), ()), triton=True)
def test_vec_bitwise(b1, b2, *xs):  # no shifts of bools: eager has none
    return _bitwise(b1, b2) + sum((_bitwise_and_shifts(x, y) for x, y in zip(xs[::2], xs[1::2])),
                                  ())


@case(lambda: (randint(0, 3, (67,)), randint(0, 3, (67,), dtype=torch.uint8)))
def test_bitwise_logical_op_bool(a, b):
    a, b = a > 1, b > 1
    return (torch.bitwise_and(a, b), torch.bitwise_or(a, b), torch.bitwise_xor(a, b),
            torch.logical_and(a, b), torch.logical_or(a, b), torch.logical_xor(a, b))


@case(lambda: (torch.tensor(0.3, dtype=torch.float64),
               torch.tensor([0.05, 0.5, 0.97], dtype=torch.float64)))
def test_torch_logit(x, y):
    return torch.logit(x, 0.9), torch.logit(y, 0.1), torch.logit(y)


def _compares(x):
    x = torch.where(torch.eq(x, 1.0), x, -x)
    x = torch.where(torch.ne(x, 0.0), x, -x)
    x = torch.where(torch.lt(x, 5.0), x, x - 1.0)
    x = torch.where(torch.gt(x, -2.0), x, x + 1.0)
    x = torch.where(torch.le(x, 8.0), x, x - 1.0)
    x = torch.where(torch.ge(x, -3.0), x, x + 1.0)
    x = torch.where(x == 1.0, x, -x)
    x = torch.where(x != 0.0, x, -x)
    x = torch.where(x < 5.0, x, x - 1.0)
    x = torch.where(x > -2.0, x, x + 1.0)
    x = torch.where(x <= 8.0, x, x - 1.0)
    return torch.where(x >= -3.0, x, x + 1.0)


@case(lambda: (randn(2, 9) * 4, (randn(2, 9) * 4).bfloat16(), (randn(2, 9) * 4).half()))
def test_vec_compare_op_cpu_only(a, b, c):
    return _compares(a), _compares(b), _compares(c)


def _remainder_args(dtype):
    if dtype.is_floating_point:
        return randn(67).to(dtype), randn(67).to(dtype)
    lower = 1 if dtype == torch.uint8 else -100
    x, y = randint(lower, 100, (67,), dtype=dtype), randint(lower, 100, (67,), dtype=dtype)
    return x, torch.where(y == 0, torch.ones_like(y), y)


@case(lambda: sum((_remainder_args(d) for d in (
    torch.int8, torch.uint8, torch.int32, torch.int64, torch.bfloat16, torch.float16,
    torch.float32, torch.float64)), ()), **LOWP_TOL)
def test_vec_remainder(*xs):
    return tuple(torch.remainder(x, y) for x, y in zip(xs[::2], xs[1::2]))


def _int_div(x, y):
    return (torch.div(x, y), torch.div(x, y, rounding_mode="trunc"),
            torch.div(x, y, rounding_mode="floor"))


def _int_div_args(dtype):
    signs = (1 if dtype == torch.uint8 else -1) ** randint(0, 2, (7, 19))
    return (randint(1 if dtype == torch.uint8 else -100, 100, (7, 19), dtype=dtype),
            (randint(1, 100, (7, 19)) * signs).to(dtype))


@case(lambda: sum((_int_div_args(d) for d in (torch.int8, torch.uint8, torch.int32, torch.int64)),
                  ()))
def test_int_div_vec(*xs):
    return tuple(_int_div(x, y) for x, y in zip(xs[::2], xs[1::2]))


@case(lambda: (randn(2, 9), randn(2, 9)), triton=True)
def test_redundant_to_node_elimination_lowp_fp(x, y):
    return torch.mean(x.bfloat16() + y.bfloat16()), torch.mean(x.half() + y.half())


@case(lambda: (torch.arange(20, dtype=torch.float32).reshape(5, 4).t() / 7.0,))
def test_emulate_precision_casts_explicit_lowp_round_trip(x):
    y = x.to(torch.float16).to(torch.float32)
    return y, y.sum(dim=1)


@case(lambda: (torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 10,
               (torch.arange(24) % 5 == 0).reshape(2, 3, 4)))
def test_emulate_precision_casts_preserves_fused_fp16_rounding(x, c):
    z = torch.where(c, torch.full_like(x, 0.5), torch.full_like(x, -0.5))
    y = z.to(torch.float16) + x.to(torch.float16)
    return y, y.float().sum()


@case(lambda: (randn(10).half(), torch.tensor(2.0).half(), torch.tensor(0.5).half()), grads=True,
      atol=1e-2, rtol=1e-2)
def test_emulate_precision_casts_cpp_backend_no_error(base, exponent, threshold):
    cond = torch.abs(base) < threshold.expand_as(base)
    return torch.where(cond, base / threshold, base ** exponent)


@case(lambda: (randn(17, 19).bfloat16(),))
def test_memory_copy_with_fusion(x):
    res = x.relu()
    x.copy_(res)
    return (res,)


@case(lambda: (randn(17),))
def test_to_dtype_float_bool(a):
    return a * (a >= 0).to(torch.float32), a.to(torch.bool), (a * 0).to(torch.bool)


@case(lambda: (rand(4, 5),))
def test_constant_store(a):
    a[0, [3, 3]] = -float("inf")
    return a


@case(lambda: (randint(0, 255, (3, 3), dtype=torch.uint8),
               randint(0, 255, (3, 3), dtype=torch.uint8)),
      triton=True)
def test_uint8_add(x, y):
    return torch.add(x, y).neg().to(torch.int32)


@case(lambda: (torch.tensor([-1.0, -2.0, -3.0, -4.0, 255.5, 1.5]).repeat(3),),
      cpu_only="a negative float converted to uint8 is implementation-defined: CUDA's eager "
               "kernel gives another byte than the CPU's")
def test_float32_to_uint8(x):
    return x.to(torch.uint8)


@case(lambda: (torch.full((37,), -9223372036854775808, dtype=torch.int64),))
def test_convert_fp32_int64_oob_vec(x):
    return x.to(torch.float32).to(torch.int64)


@case(lambda: (randn(10),))
def test_special_float_pow(val):
    return aten.pow(val, -math.inf), aten.pow(val, math.inf), aten.pow(val, math.nan)


@case(lambda: (randn(2, 9), randn(2, 9).bfloat16(), randn(2, 9).half()), atol=1e-2, rtol=1e-2)
def test_new_vec_op_cpu_only(a, b, c):
    for t in (a, b, c):
        t[0, 0] = float("nan")
        t[1, -1] = float("nan")
    return tuple(torch.log1p(torch.expm1(torch.erf(t))) for t in (a, b, c))


@case(lambda: (_nan_at_ends(2, 9), _nan_at_ends(2, 9, dtype=torch.bfloat16),
               _nan_at_ends(2, 9, dtype=torch.float16)))
def test_sign_cpu_only(a, b, c):
    return torch.sign(a), torch.sign(b), torch.sign(c)


def _vec_kernel(x1, x2):
    x = torch.abs(x1)
    x = torch.sin(x)
    x = torch.neg(x)
    x = torch.square(x)
    x = torch.sigmoid(x)
    x = torch.relu(x)
    x = torch.cos(x)
    x = torch.exp(x)
    x = torch.sqrt(x)
    x = torch.add(x, x1)
    x = torch.sub(x, x2)
    x = torch.mul(x, x1)
    x = torch.div(x, x1)
    x = torch.pow(x, 10)
    x = torch.log(x)
    x = torch.floor(x)
    x = torch.ceil(x)
    x = torch.trunc(x)
    x = torch.lgamma(x)
    x = torch.fmod(x, x2)
    x = torch.sign(x)
    return x + x2


variant("test_vec_kernel_cpu_only", _vec_kernel, lambda: (randn(5, 21), randn(5, 21)),
        atol=1e-4, rtol=1e-4, triton=True)
variant("test_vec_kernel_cpu_only_transposed", _vec_kernel,
        lambda: (randn(10, 21).permute(1, 0), randn(21, 10)), atol=1e-4, rtol=1e-4)


@case(lambda: (randint(0, 100, (37, 37), dtype=torch.int32), randint(0, 100, (37, 37)),
               randn(37, 37, dtype=torch.double)))
def test_int32_pointwise_vec(i32, i64, f64):
    return i32 * i32, i64 * i64, f64 * f64


def _unsigned_args():
    return (randint(0, 2 ** 32, (37, 37)).to(torch.uint32),
            randint(0, 2 ** 62, (37, 37)).to(torch.uint64))


@case(_unsigned_args, triton=True,
      cpu_only="eager's CUDA kernels have no product of uint32 or uint64 tensors")
def test_uint32_pointwise_vec(u32, u64):
    return u32 * u32, u64 * u64, u32.clone(), u64.to(torch.int64)


@case(_unsigned_args, triton=True)
def test_uint32_reduction_vec(u32, u64):
    return u32.sum(dim=1), u64.sum(dim=1)


@case(lambda: (randint(0, 100, (37, 37), dtype=torch.int32), randint(0, 100, (37, 37)),
               randn(37, 37, dtype=torch.double)))
def test_int32_reduction_vec(i32, i64, f64):
    return i32.sum(dim=1), i64.sum(dim=1), f64.sum(dim=1)


@case(lambda: (randint(-100, 100, (32, 33), dtype=torch.int8),
               randint(0, 100, (32, 33), dtype=torch.uint8)))
def test_convert_int8_to_half_vec(i8, u8):
    return i8.to(torch.bfloat16), i8.half(), u8.to(torch.bfloat16), u8.half()


@case(lambda: (randint(-2 ** 31, 2 ** 31 - 1, (31, 33), dtype=torch.int32),
               randint(-2 ** 40, 2 ** 40, (31, 33)), rand(31, 33) * 1000 - 500,
               randn(31, 33, dtype=torch.double)))
def test_convert_int32_to_int64_vec(i32, i64, f32, f64):
    return (i32.to(torch.int64), i64.to(torch.int32), f32.to(torch.int64), i64.to(torch.float32),
            f32.to(torch.double), f64.to(torch.float32))


@case(lambda: (randint(0, 100, (819 // 21,)),))
def test_masked_load_int64_vec(x):
    return F.pad(x, (0, 13))


@case(lambda: (randint(0, 100, (22, 51)),))
def test_reduction_float_to_int64(x):
    return x.max(0).values


def _bool_reduction_args():
    c = torch.zeros(63, dtype=torch.bool)
    d = c.clone()
    d[10] = True
    return c, d, torch.ones(63, dtype=torch.bool)


@case(_bool_reduction_args)
def test_bool_reduction_vec(x1, x2, x3):
    return tuple(op(x) for op in (torch.any, torch.min, torch.max) for x in (x1, x2, x3))


@case(lambda: (randn(13, 251).ge(0),))
def test_bool_max(x):
    return torch.max(x, 1, False)


@case(lambda: (randn(2, 5, 7, 9).bfloat16() / 2, randn(2, 5, 7, 9).bfloat16(),
               randn(2, 5, 7, 9).half() / 2, randn(2, 5, 7, 9).bfloat16()), **LOWP_TOL)
def test_full_bits_lowp(a, b, c, d):
    f0 = aten.sum(aten.add(aten.atanh(a), b), (2, 3))
    v = aten.add(aten.atanh(a), torch.ops.prims.convert_element_type.default(a, torch.float))
    f1 = torch.ops.prims.convert_element_type.default(v, a.dtype)
    f2 = torch.ops.prims.convert_element_type.default(aten.add(aten.atanh(c), d), d.dtype)
    return f0, f1, f2


@case(lambda: (torch.ones(0, 6, 6, dtype=torch.bool),))
def test_avx2_bool_constant_pad_nd(arg):
    return torch.constant_pad_nd(arg, (1, 1, 1, 1, 1, 1))


@case(lambda: (randn(7, 9, 5) > -1.5,))
def test_unrolled_bool_prod_vectorized(arg):
    return torch.prod(arg, 1, dtype=torch.bool)


@case(lambda: (randn(199, 2),))
def test_for_loop_collapsed(x):
    return x.transpose(1, 0).contiguous()


@case(lambda: (torch.tensor([[[1.0, -3.0, 2.0, 4.0]]]),
               torch.tensor([[[[1.0, -3.0, 2.0], [4.0, -5.0, 6.0], [-7.0, 8.0, -9.0]]]])))
def test_lp_pool_inf_norm_type_compile(x1, x2):
    return (F.lp_pool1d(x1, float("inf"), 2, 1), F.lp_pool1d(x1, -float("inf"), 2, 1),
            F.lp_pool2d(x2, float("inf"), 2, 1), F.lp_pool2d(x2, -float("inf"), 2, 1))


@case(lambda: (randn(2, 12, 10), rand(1, 2, 2)))
def test_fractional_max_pool2d_3d_input(x, samples):
    return F.fractional_max_pool2d(x, kernel_size=3, output_size=(4, 4), _random_samples=samples)


@case(lambda: (randn(4),), dynamic=True)
def test_inductor_dynamic_shapes_broadcasting(x):
    y = torch.arange(8.0)
    return x.view(-1, 4) * y.view(-1, 4)


@case(lambda: (torch.ones(1, 2, 3).transpose(1, 2), randn(1, 3, 1)))
def test_mutation_transpose_reshape_ordering(x, y):
    return x.add_(y).reshape(-1, 1, 3)


@case(lambda: (randn(17, 2, 16).permute(2, 1, 0), randint(0, 2, (16,))))
def test_indirect_index_transposed_tensor(buf, idx):
    return buf[torch.arange(buf.shape[0]), idx, :]


@case(lambda: (torch.tensor([[0, 0], [0, 0], [0, 0]]), torch.arange(3.0).reshape(1, 3)))
def test_indirect_assert_scalar_mask_tail_vec_no_crash(positions, cache):
    x = cache[positions]
    y = x[0].clone()
    y[..., 1::3] = x[1, ..., 1::3]
    y[..., 2::3] = x[2, ..., 2::3]
    return y


# --- reductions, outer-loop fusion, argmax/argmin -----------------------------------------------

@case(lambda: (randn(1, 8, 7, 9),), triton=True)
def test_sigmoid_with_reduction(x):
    return aten.mean.dim(aten.sigmoid.default(x), [-1, -2], True)


@case(lambda: (randn(1, 33, 3, 5).half(), randn(1, 33, 3, 5).bfloat16()))
def test_max_reduction_lowp_fp(a, b):
    return aten.max(a, 1, keepdim=True)[0].float(), aten.max(b, 1, keepdim=True)[0].float()


@case(lambda: (randn(2, 2, 8, 9),), atol=1e-4, rtol=1e-4)
def test_outer_mean_large_size(x):
    x = x.flatten()
    return torch.mean(torch.outer(x, torch.ones_like(x)), dim=1)


@case(lambda: (randint(0, 100, (4, 6, 11)), randn(4, 6, 11, dtype=torch.float64),
               randint(0, 100, (4, 6, 11), dtype=torch.int16), randn(4, 6, 11).half(),
               randint(0, 100, (4, 6, 11), dtype=torch.int8), randn(4, 6, 11).bfloat16()))
def test_store_reduction(a, b, c, d, e, f):
    return tuple(t.amax(dim=0) for t in (a, b, c, d, e, f))


@case(lambda: (randn(9, 11), randn(9, 11).bfloat16(), randn(9, 11).half()))
def test_reduction_cpu_only(a, b, c):
    return torch.argmax(a, -1), torch.argmax(b, -1), torch.argmax(c, -1)


@case(lambda: (randn(9, 11), randn(9, 11).bfloat16(), randn(9, 11).half()))
def test_argmin(a, b, c):
    return torch.argmin(a, -1), torch.argmin(b, -1), torch.argmin(c, -1)


@case(lambda: (randn(2, 3, 17, 19),))
def test_outer_loop_fusion(x):
    return x - torch.amax(x, dim=-1, keepdim=True)


@case(lambda: (randn(2, 3, 9, 19),))
def test_local_buffer_in_outer_loop_fusion(x):
    return x - F.softmax(x, dim=-1)


@case(lambda: (randn(2, 3, 5, 37),), atol=1e-5, rtol=1e-5)
def test_two_local_buffers_in_outer_loop_fusion(x):
    softmax = F.softmax(x, dim=-1)
    total = torch.sum(softmax, dim=-1)
    sum_exp = torch.exp(torch.broadcast_to(total.unsqueeze(-1), [*(total.size()[0:3]), 16]))
    sum2 = torch.sum(sum_exp, dim=-1)
    return x[:, :, :, 0:16] - (sum_exp - sum2.unsqueeze(-1))


@case(lambda: (randn(2, 3, 9, 19),))
def test_share_local_buffers_in_outer_loop_fusion(x):
    return x - F.softmax(F.softmax(x, dim=-1), dim=-1)


@case(lambda: (randn(2, 3, 9, 19),), atol=1e-5, rtol=1e-5)
def test_two_local_buffers_in_outer_loop_fusion_case2(x):
    exp = torch.exp(x - torch.amax(x, -1, keepdim=True))
    exp2 = torch.exp(exp - torch.sum(exp, -1, keepdim=True))
    return exp - (exp2 - torch.sum(exp2, -1, keepdim=True))


@case(lambda: (rand(5, 33), rand(33, 33)), atol=1e-4, rtol=1e-4)
def test_local_buffer_with_line_reuse(x, y):
    z = torch.matmul(x, y)
    exp = torch.exp((z - torch.amax(x, -1, keepdim=True)) / z)
    return exp - torch.sum(exp, -1, keepdim=True)


@case(lambda: (randn(4, 8, 19) * 0.1, randn(4, 8) * 0.1, randn(8) * 0.1, torch.zeros(8)),
      atol=1e-5, rtol=1e-5)
def test_outer_loop_local_buffer_with_tiled_outer_dim(l_c, y, alpha, beta):
    x = l_c[..., 16]
    positive = F.softplus(x) + 0.0001
    rates = F.softplus(y) + 0.0001
    gammaln_term = torch.special.gammaln(positive + alpha.view(1, -1))
    erf_term = torch.special.erf(x * beta.view(1, -1))
    logadd = torch.logaddexp(gammaln_term, torch.special.xlogy(positive, rates))
    centered = logadd - logadd.mean(dim=-1, keepdim=True)
    return torch.stack([centered, erf_term, centered * erf_term], dim=-1)


@case(lambda: (torch.ones(5, 1, 7, 9), rand(5)), atol=1e-5, rtol=1e-5)
def test_outer_looop_fusion_with_local_buf(xs, ls):
    temp = torch.exp(-torch.einsum("i...,i->i...", xs, ls))
    q = torch.einsum("i...->i", temp)
    return torch.einsum("i,i...->i...", 1 / q, temp)


def _argmax_nan_args():
    rows = ([-755832.1250, 100], [-755832.1250, 100, 200], [100, -755832.1250],
            [100, 200, -755832.1250])
    return tuple(torch.log1p(torch.tensor(r).repeat(16, 16)) for r in rows)


@case(_argmax_nan_args)
def test_argmax_argmin_with_nan_value(*xs):
    return tuple(f(x) for x in xs for f in (torch.argmax, torch.argmin))


def _issue_argmax_args():
    x = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    x[4, 0] = -100
    x[1, 3] = 100
    return randn(5, 7), x


@case(_issue_argmax_args)
def test_argmax_argmin_transpose_logical_index_cpu(x, y):
    x = x.clone()
    x.sin_()
    return x.t().argmax(), y.t().argmin(), y.t().argmax()


@case(lambda: (randn(35, 35).transpose(0, 1), randn(35, 35), randn(8, 8).t(), randn(8, 8)))
def test_argmax_argmin_cpptile2d_2d_input(a, b, c, d):
    return (a + b).max(dim=1), (a + b).min(dim=1), (c + d).max(dim=1), (c + d).min(dim=1)


@case(lambda: (randn(4, 17, 16).permute(0, 2, 1), randn(4, 16, 17)))
def test_argmax_argmin_cpptile2d_3d_input(a, b):
    return (a + b).max(dim=2), (a + b).min(dim=2)


@case(lambda: (randn(37, 41), randn(9, 11, 13)), atol=1e-4, rtol=1e-4)
def test_vertical_sum_cpu_only(a, b):
    return a.sum(dim=0), b.sum(dim=1)


@case(lambda: (randn(3, 17, 19), randn(3, 19, 17).transpose(1, 2)), atol=1e-4, rtol=1e-4)
def test_transpose_vertical_sum_cpu_only(a, b):
    return (a * b).sum(dim=1)


@case(lambda: (randn(3, 17, 19).bfloat16(), randn(3, 19, 17).bfloat16().transpose(1, 2),
               randn(3, 17, 19).half(), randn(3, 19, 17).half().transpose(1, 2)), **LOWP_TOL)
def test_transpose_mxn_16_16_bf16_fp16(a, b, c, d):
    return (a * b).sum(dim=1), (c * d).sum(dim=1)


@case(lambda: (randn(2, 33, 35).bfloat16(), randn(2, 35, 33).half()))
def test_transpose_mxn_32_32_bf16_fp16(a, b):
    return a.permute(0, 2, 1).contiguous(), b.permute(0, 2, 1).contiguous()


@case(lambda: (randn(17, 17), randn(17, 17).transpose(0, 1)), atol=1e-4, rtol=1e-4)
def test_transpose_sum2d_cpu_only(a, b):
    return (a * b).sum()


@case(lambda: (randn(2, 5, 9, 11),), atol=1e-5, rtol=1e-5)
def test_transpose_sum_outer(a):
    return a.transpose(2, 3).sum(dim=1).contiguous()


@case(lambda: (randn(32, 35), randn(32, 19)), triton=True)
def test_concat_inner_vec(x, y):
    return F.relu(torch.cat([x, y], dim=1))


# --- strides, transposes, channels-last ---------------------------------------------------------

@case(lambda: (randn(2, 3, 4, 5),))
def test_vec_transpose_lowp_fp(x):
    x = x.to(memory_format=torch.channels_last)
    return x.to(torch.bfloat16), x.to(torch.float16)


@case(lambda: (randn(1, 3, 16, 17),))
def test_load_inf_bf16(x):
    return torch.where(x > 0, x, math.inf), torch.where(x > 0, x, -math.inf)


@case(lambda: (randn(4, 2, 2).half(), randn(4, 2, 2, 2).half(), randn(4, 2, 2).bfloat16(),
               randn(4, 2, 2, 2).bfloat16(), torch.zeros(8, 4, 2, 2)))
def test_fp32_load_with_to_lowp_fp(x, xk, y, yk, cache):
    out = []
    for inp, k in ((x, xk), (y, yk)):
        bsz, seqlen, _ = inp.shape
        c = cache.to(inp)
        c[:bsz, 1:1 + seqlen] = k
        out.append(c)
    return tuple(out)


@case(lambda: (randn(1, 16, 3, 4), randn(3, 3, 8, 9)))
def test_slice_scatter_default_end_value(query, key):
    window_overlap = 4
    batch_size, seq_len, num_heads, head_dim = query.size()
    chunks_count = seq_len // window_overlap - 1
    scores = key.new_zeros((batch_size * num_heads, chunks_count + 1, window_overlap,
                            window_overlap * 2 + 1))
    scores[:, :3, :, window_overlap:] = key[:, :, :window_overlap, : window_overlap + 1]
    return scores


@case(lambda: (randn(16, 3, 8).permute(1, 0, 2).unsqueeze(1),
               randn(16, 3, 8).permute(1, 0, 2).unsqueeze(1)), atol=1e-4, rtol=1e-4)
def test_ModularIndexing_range_issue_103133(q, k):
    einsum = torch.einsum("bcxd,bcyd->bcxy", (q, k))
    padded = aten.constant_pad_nd.default(einsum, [0, 0, 0, 1], 0.0)
    view = aten.view.default(padded, [3, 1, 16, 17])
    y = view.new_zeros((3, 2, 8, 17))
    y[:, :-1, :, 8:] = view[:, :, :8, :9]
    return y


def _channel_shuffle(x, groups):
    batchsize, num_channels, height, width = x.size()
    x = x.view(batchsize, groups, num_channels // groups, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width).contiguous(memory_format=torch.channels_last)


@case(lambda: (randn(2, 10, 5, 7),))
def test_channel_shuffle_cl_output(x):
    return _channel_shuffle(x, 2)


@case(lambda: (randn(3, 7, 12), randn(22, 12), randn(22), randn(11), randn(11), randn(7, 7),
               randn(7), randn(12, 11), randn(12)), grads=True, atol=1e-4, rtol=1e-4)
def test_transpose_with_norm(x, w1, b1, gamma, beta, wp, bp, wf, bf):
    x = F.gelu(F.linear(x, w1, b1))
    u, v = x.chunk(2, dim=-1)
    v = F.layer_norm(v, (11,), gamma, beta)
    v = F.linear(v.transpose(-1, -2), wp, bp)
    return F.linear(u * v.transpose(-1, -2), wf, bf)


@case(lambda: tuple(randn(n, n) for n in (7, 8, 9, 16, 17, 33))
      + tuple(randn(n, n).bfloat16() for n in (9, 17, 33)))
def test_transpose_copy(*xs):
    return tuple(a.t().contiguous() for a in xs)


@case(lambda: (randn(4, 16).bfloat16(), randn(4, 32).bfloat16(), randn(4, 64).bfloat16(),
               randint(0, 4, (5,))))
def test_horizontal_fusion(a, b, c, idx):
    return (torch.index_select(a, 0, idx), torch.index_select(b, 0, idx),
            torch.index_select(c, 0, idx))


@case(lambda: (cl(randn(1, 48, 20, 20)),))
def test_transpose_non_contiguous(a):
    c = 48
    s = aten.as_strided.default(a, [1, c, 2, 20, 12], [c * 400, 1, c * 160, c, c * 20])
    s = aten.as_strided.default(s, [1, c, 2, 2, 12, 12], [c * 400, 1, c * 160, c * 8, c * 20, c])
    clone_1 = aten.clone.default(s, memory_format=torch.contiguous_format)
    v = aten._unsafe_view.default(clone_1, [1, 48, 4, 144])
    p = aten.permute.default(v, [0, 2, 3, 1])
    first, _ = aten.split_with_sizes.default(p, [16, 32], -1)
    e = aten.expand.default(aten.permute.default(first, [0, 1, 3, 2]), [1, 4, 16, 144])
    return aten.clone.default(e, memory_format=torch.contiguous_format)


@case(lambda: (randn(1, 3, 5, 18),), triton=True)
def test_non_contiguous_index_with_constant_stride(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


@case(lambda: (torch.as_strided(randn(16 * 40), (16, 8, 5), (40, 1, 8)), randn(4, 5, 4, 8)),
      atol=1e-5, rtol=1e-5)
def test_eliminate_meaningless_copy(x1, x2):
    clone = aten.clone.default(aten.permute.default(x2, [0, 2, 1, 3]),
                               memory_format=torch.contiguous_format)
    view = aten.view.default(clone, [16, -1, 8])
    return aten.bmm.default(view, x1), aten.permute.default(view, [0, 2, 1])


@case(lambda: (cl(randn(2, 5, 3, 7)),))
def test_relu_permute_reshape_reinterpret_view(x):
    n, c, h, w = x.shape
    return torch.relu(x).permute(0, 2, 3, 1).reshape(n, h * w, c)


@case(lambda: (randn(2, 6),), atol=1e-5, rtol=1e-5)
def test_issue_181624_cpu_fusion_with_constant_index_expr(x):
    out = F.hardswish(x).unfold(1, 2, 1)
    out = F.scaled_dot_product_attention(out, out, out)
    out = torch.roll(out, 1, 2)
    return torch.nan_to_num(F.layer_norm(out, [2]))


@case(lambda: (randn(2, 12, 5, 7), randn(2, 3, 35, 4)))
def test_select_tiliing_with_index_expr(x, y):
    x = aten.permute.default(aten.view.default(x, [2, 3, 4, 35]), [0, 1, 3, 2])
    return aten.constant_pad_nd.default(aten.mul.Tensor(y, x), [0, 0, 1, 0, 0, 0], 0.0)


@case(lambda: (randint(0, 13, (4, 7)), randn(4, 7, 35), randn(13, 35)))
def test_embedding_vec(idx, x, weight):
    return F.embedding(idx, weight) + x, F.embedding(idx, weight.bfloat16())


def _expr_vec_non_contiguous(x):
    n = 5
    y = F.pad(x, (0, n - 1)).reshape(-1, n + 1, 2 * n - 1)
    y = y[:, :n, n - 1:].reshape(4, n, 1, n, n).expand(-1, -1, n, -1, -1)
    y = y.permute(0, 3, 1, 4, 2).clone(memory_format=torch.contiguous_format)
    return y.view(4, n * n, n * n).softmax(dim=-1)


variant("test_expr_vec_non_contiguous", _expr_vec_non_contiguous, lambda: (randn(20, 50),))


@case(lambda: (randn(1, 6, 10, 5), randn(20), randn(20)), atol=1e-5, rtol=1e-5)
def test_vec_contiguous_ModularIndexing(x, gamma, beta):
    b, h, w, c = x.shape
    x = x.reshape(b, h // 2, 2, w // 2, 2, c).permute(0, 1, 3, 4, 2, 5).flatten(3)
    return F.layer_norm(x, (4 * c,), gamma, beta)


@case(lambda: (rand(31), rand(97)))
def test_constant_bool_vec(x, y):
    mask = torch.zeros(1, dtype=torch.bool)
    return torch.where(mask, x, -1.0), torch.where(mask, y, -1.0)


@case(lambda: (randn(17, 5, 1, 7).half(), randn(17, 5, 1, 7).half(), randn(17, 5, 11, 7).half(),
               randn(17, 5, 1, 7).half(), torch.tensor(4.39, dtype=torch.float16)), **LOWP_TOL)
def test_no_redundant_to_dtypes_between_fused_scheduler_node(a0, a1, a2, a3, a4):
    cat = torch.cat((a3, a2, a1, a0), dim=2)
    mul = torch.mul(cat, torch.max(a4, torch.tensor([1.0879], dtype=torch.float16)))
    return mul, torch.tan(mul)


@case(lambda: ())
def test_masked_handle_scalar_var():
    window, shift, height, width = 7, 3, 14, 14
    img_mask = torch.zeros((1, height, width, 1), dtype=torch.float32)
    slices = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
    count = 0
    for h in slices:
        for w in slices:
            img_mask[:, h, w, :] = count
            count += 1
    windows = img_mask.view(1, height // window, window, width // window, window, 1)
    windows = windows.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window * window)
    attn_mask = windows.unsqueeze(1) - windows.unsqueeze(2)
    return attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)


@case(lambda: (randn(5, 17), randint(0, 10, (5, 17), dtype=torch.int8), randn(17, 17)),
      atol=1e-2, rtol=1e-2)
def test_highp_to_lowp_cse_var_cache_with_store(x, x2, x3):
    temp = x2.to(torch.int32).to(torch.float16).clone()
    return torch.mm(temp, x3.to(torch.float16)), temp.to(torch.float32) * x


@case(lambda: (randint(0, 13, (2, 37)),))
def test_vec_indirect_load_cse_cache(arg0_1):
    device = arg0_1.device  # (an ATen call takes no default device)
    full_default = aten.full.default([37], 1, device=device)
    select = aten.select.int(arg0_1, 0, 0)
    select_1 = aten.select.int(arg0_1, 0, 1)
    expand = aten.expand.default(aten.reshape.default(select_1, [-1]), [37])
    scatter_add = aten.scatter_add.default(aten.full.default([13], 0, device=device), 0, expand,
                                           full_default)
    pow_1 = aten.pow.Tensor_Scalar(scatter_add, -0.5)
    where = aten.where.self(aten.eq.Scalar(pow_1, math.inf),
                            aten.full.default([], 0.0, device=device), pow_1)
    return (aten.mul.Tensor(aten.index.Tensor(where, [select]),
                            aten.index.Tensor(where, [select_1])),)


# --- indexing, scatter, index_put ---------------------------------------------------------------

@case(lambda: (randint(-10, -9, (1, 2)), randn(2, 32)))
def test_index_put(x, y):
    x = x + 10
    y[x] += y[x]


@case(lambda: (randn(2, 32), torch.tensor([[0, 1]]), torch.tensor([[1, 0]])))
def test_index_put2(y, index0, index1):
    y[index1] += y[index0]


def _index_add(x, y, scale_y, index):
    values = x[index] + y * scale_y
    return x.index_add_(dim=0, source=values, index=index)


variant("test_index_add", _index_add,
        lambda: (randn(10, 10), randn(5, 10), randn(10), torch.randperm(10)[:5].to(torch.int32)),
        atol=1e-3, rtol=1e-3)
variant("test_index_add_duplicates", _index_add,
        lambda: (randn(10, 10), randn(5, 10), randn(10), torch.zeros(5, dtype=torch.int32)),
        atol=1e-3, rtol=1e-3)


@case(lambda: (torch.tensor([[3.0, -5.0]]).bfloat16(), torch.tensor([[3.0, -5.0, 1.0]]).half(),
               torch.tensor([[1]]), torch.tensor([[1, 1, 0, 1]])), grads=True)
def test_atomic_add_lowp_fp(a, b, i, j):
    return torch.gather(a, 1, i), torch.gather(b, 1, j)


@case(lambda: (randn(5, 29, 13), torch.tensor([[[3, 5, 7, 9]]]), randn(1, 1, 10)))
def test_scatter_using_atomic_add(a, index, b):
    return aten.scatter(a, 2, index, b, reduce="add")


@case(lambda: (torch.zeros(1, 1, 25), torch.tensor([[[3, 5, 7, 9] * 5]]), torch.ones(1, 1, 25)),
      triton=True)
def test_scatter_using_atomic_add_vec(a, index, b):
    return aten.scatter(a, 2, index, b, reduce="add")
