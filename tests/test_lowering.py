"""Every lowered ATen op, run by the reference executor, against eager PyTorch.

Each case is traced to ATen with ``make_fx`` (core ATen decompositions), lowered with
``GraphLowering`` and executed with ``GraphExecutor``; inputs have odd sizes, and each case also
runs on a non-contiguous (transposed) input where the op allows it.
"""

import pytest
import sympy
import torch
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile.inductor.executor import GraphExecutor
from minicompile.inductor.graph import GraphLowering
from minicompile.inductor.lowering import lowerings


def lower(fn, *args, mode="real"):
    gm = make_fx(fn, decomposition_table=core_aten_decompositions(), tracing_mode=mode)(*args)
    return GraphLowering(gm).run()


def check(fn, *args, allow_fallback=False, **tol):
    graph = lower(fn, *args)
    if not allow_fallback:
        assert not graph.fallbacks, graph.fallbacks
    torch.testing.assert_close(GraphExecutor(graph)(*args), fn(*args), equal_nan=True, **tol)
    return graph


def x(*shape):
    return torch.randn(*shape)


def xt(*shape):  # non-contiguous: the transpose of a contiguous tensor
    return torch.randn(*shape[::-1]).t() if len(shape) == 2 else torch.randn(*shape)


def pos(*shape):
    return torch.rand(*shape) + 0.1


UNARY = ["abs", "neg", "exp", "exp2", "expm1", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
         "tanh", "sinh", "cosh", "atan", "asinh", "sigmoid", "erf", "erfc", "floor", "ceil",
         "round", "trunc", "sign", "reciprocal", "relu", "isnan", "signbit", "square", "log",
         "log2", "lgamma", "frac"]


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    fn = getattr(torch, name)
    inp = pos if name in ("log", "log2", "sqrt", "rsqrt", "lgamma", "reciprocal") else x
    check(fn, inp(13, 7))
    check(fn, inp(7, 13).t())  # non-contiguous input


BINARY = [torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.minimum, torch.atan2,
          torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge, torch.hypot,
          torch.copysign, torch.fmax, torch.fmin, lambda a, b: torch.pow(a.abs(), b),
          lambda a, b: torch.add(a, b, alpha=2.5), lambda a, b: torch.sub(a, b, alpha=0.5),
          lambda a, b: torch.div(a, b, rounding_mode="floor"),
          lambda a, b: torch.div(a, b, rounding_mode="trunc"),
          lambda a, b: torch.fmod(a, b), lambda a, b: torch.remainder(a, b),
          lambda a, b: torch.logical_and(a > 0, b > 0), lambda a, b: torch.logical_or(a > 0, b > 0),
          lambda a, b: torch.logical_xor(a > 0, b > 0), lambda a, b: torch.where(a > b, a, b),
          lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: torch.addcmul(a, a, b, value=0.5),
          lambda a, b: a.masked_fill(b > 0, -1.0), lambda a, b: torch.rsub(a, b)]


@pytest.mark.parametrize("fn", BINARY, ids=lambda f: getattr(f, "__name__", "lambda"))
def test_binary_broadcast(fn):
    check(fn, x(13, 7), x(7))  # broadcast a row
    check(fn, x(5, 1, 7), xt(3, 7))  # broadcast both ways, non-contiguous second input
    check(fn, x(13, 7), torch.tensor(0.7))  # 0-d tensor


def test_scalar_and_int_promotion():
    ints = torch.randint(-5, 5, (11, 3))
    check(lambda a: a * 2 + 1, ints)
    check(lambda a: a / 2, ints)  # int / int -> float
    check(lambda a: a.float().exp() + a, ints)
    check(lambda a: (a > 0) & (a < 3), ints)
    check(lambda a: torch.bitwise_and(a, 3) | torch.bitwise_xor(a, 1), ints)
    check(lambda a: a.to(torch.float64) * 0.1, ints)
    check(lambda a: torch.clamp(a, -2, 2), ints)


ACTIVATIONS = [lambda a: F.gelu(a), lambda a: F.gelu(a, approximate="tanh"),
               lambda a: F.silu(a), lambda a: F.relu(a), lambda a: F.leaky_relu(a, 0.2),
               lambda a: F.hardtanh(a), lambda a: a.clamp(min=-0.5),
               lambda a: a.clamp(max=0.5), lambda a: a.clamp(-0.3, 0.4),
               lambda a: torch.nan_to_num(a.log())]


@pytest.mark.parametrize("fn", ACTIVATIONS, ids=lambda f: getattr(f, "__name__", "lambda"))
def test_activations(fn):
    check(fn, x(9, 11))
    check(fn, xt(9, 11))


REDUCTIONS = [
    lambda a: a.sum(), lambda a: a.sum(1), lambda a: a.sum(0, keepdim=True),
    lambda a: a.sum((0, 2)), lambda a: a.mean(-1), lambda a: a.mean(),
    lambda a: a.amax(1), lambda a: a.amin((0, 1)), lambda a: a.max(1), lambda a: a.min(2),
    lambda a: a.argmax(1), lambda a: a.argmin(-1), lambda a: a.argmax(),
    lambda a: a.prod(1), lambda a: (a > 1).any(1), lambda a: (a > -3).all(),
    lambda a: torch.var_mean(a, 1), lambda a: torch.var_mean(a, (0, 2), correction=0),
    lambda a: a.var(-1), lambda a: a.std(1), lambda a: torch.logsumexp(a, 1),
    lambda a: a.max(), lambda a: a.min(), lambda a: (a * 3).int().sum(1),
]


@pytest.mark.parametrize("fn", REDUCTIONS)
def test_reduction(fn):
    check(fn, x(5, 13, 3))
    check(fn, x(3, 13, 5).transpose(0, 2))


@pytest.mark.parametrize("fn", [lambda a: a.argmax(1), lambda a: a.argmin()],
                         ids=["argmax", "argmin"])
def test_arg_reduction_of_bool_raises_as_eager(fn):
    """Eager has no bool kernel for argmax/argmin; the meta kernel tracing uses accepts bool,
    so a lowered kernel returned an answer."""
    a = torch.tensor([[True, False, True], [False, True, False]])
    with pytest.raises(RuntimeError, match="does not support bool input"):
        fn(a)
    mc.reset()
    with pytest.raises(RuntimeError, match="does not support bool input"):
        mc.compile(fn, backend="inductor")(a)


WELFORD = [  # lowered without decompositions, so the Welford reduction itself runs
    lambda a: torch.var_mean(a, 1), lambda a: torch.var_mean(a, 1, correction=0),
    lambda a: torch.var_mean(a, (0, 2), correction=0, keepdim=True),
    lambda a: torch.var_mean(a), lambda a: a.var(-1, correction=2), lambda a: a.var(0),
    lambda a: a.std(1, keepdim=True), lambda a: a.std((1, 2), correction=0),
    lambda a: torch.std_mean(a, -1), lambda a: torch.var_mean(a[:, :1], 1),  # n=1: nan, like eager
]


@pytest.mark.parametrize("fn", WELFORD)
def test_welford_var_mean_std(fn):
    for a in (x(5, 67, 3) + 1000, x(3, 67, 5).transpose(0, 2)):  # a large mean; 67 > one block
        graph = GraphLowering(make_fx(fn)(a)).run()
        assert not graph.fallbacks, graph.fallbacks
        assert any(getattr(b, "data", None) is not None and
                   getattr(b.data, "reduction_type", "") == "welford_reduce" for b in graph.buffers)
        torch.testing.assert_close(GraphExecutor(graph)(a), fn(a), equal_nan=True,
                                   rtol=1e-4, atol=1e-4)


def test_welford_combine_matches_one_pass():
    from minicompile.inductor.executor import welford_reduce

    v = torch.randn(4, 100, dtype=torch.float64) * 3 + 1e4
    mean, m2, n = welford_reduce(v)
    torch.testing.assert_close(mean, v.mean(-1))
    torch.testing.assert_close(m2 / (n - 1), v.var(-1))


NORMS = [lambda a: F.softmax(a, -1), lambda a: F.softmax(a, 0), lambda a: F.log_softmax(a, 1),
         lambda a: F.layer_norm(a, (a.shape[-1],)),
         lambda a: F.layer_norm(a, a.shape[-2:], torch.ones(a.shape[-2:]) * 0.5,
                                torch.zeros(a.shape[-2:]) + 0.1)]


@pytest.mark.parametrize("fn", NORMS)
def test_normalisation(fn):
    check(fn, x(6, 7, 9))
    check(fn, x(9, 7, 6).permute(2, 1, 0))


def test_batch_norm_eval():
    bn = torch.nn.BatchNorm2d(3).eval()
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2)
    check(lambda a: bn(a), x(2, 3, 5, 4))


@pytest.mark.parametrize("stats", [False, True])
def test_batch_norm_training_falls_back_with_a_reason(stats):
    """native_batch_norm in training mode (the graph node's target is the overload
    ``aten.native_batch_norm.default``) is not the eval formula: an ATen fallback kernel, with
    or without running statistics, never a wrong result or a missing buffer."""
    mean, var = (torch.randn(3), torch.rand(3) + 0.5) if stats else (None, None)

    def fn(a):
        return torch.ops.aten.native_batch_norm.default(a, None, None, mean, var, True, 0.1,
                                                         1e-5)[0]
    graph = check(fn, x(2, 3, 5, 4), allow_fallback=True, rtol=1e-4, atol=1e-5)
    assert graph.fallbacks and "training mode" in graph.fallbacks[0][1]


@pytest.mark.parametrize("fn", [lambda a: torch.where(a > 0, a, 0.0),
                                lambda a: torch.where(a > 0, 1.5, a) * 2,
                                lambda a: a + torch.full((), 3.0)])
def test_scalar_constants_are_inlined_not_stored(fn):
    """A 0-d tensor made from a Python number (``scalar_tensor(0.0)``) is read by inlining its
    value: no buffer of its own, no bytes moved for it."""
    import minicompile as mc
    a = x(13, 7)
    graph = check(fn, a)
    assert all(b.get_size() for b in graph.buffers), [str(b) for b in graph.buffers]
    a = a.requires_grad_()
    cf = mc.compile(fn, backend="inductor")
    out, ref = cf(a), fn(a)
    torch.testing.assert_close(out, ref)
    (grad,), (ref_grad,) = (torch.autograd.grad(o.sum(), a) for o in (out, ref))
    torch.testing.assert_close(grad, ref_grad)
    mc.metrics.reset()
    cf(a.detach())  # the inference graph: read a, write the result
    assert mc.metrics.num_bytes_accessed == 2 * a.numel() * 4


VIEWS = [
    lambda a: a.t() + 0, lambda a: a.reshape(-1) * 2, lambda a: a.t().reshape(-1) * 2,
    lambda a: a.reshape(7, 3, 5).permute(2, 0, 1) + 1, lambda a: a.unsqueeze(1).expand(15, 4, 7) * 1,
    lambda a: a[2:11:3, 1:] * 1, lambda a: a[-1] + 1, lambda a: a[:, 3] + 1,
    lambda a: a.view(3, 5, 7)[1].sum(0), lambda a: a[None, :, None].squeeze() * 2,
    lambda a: torch.cat([a, a * 2, a[:, :2]], 1), lambda a: torch.cat([a, a[:3]], 0),
    lambda a: F.pad(a, (1, 2, 3, 0), value=0.5), lambda a: a.split(4, 0)[1] + a.split(4, 0)[3].sum(),
    lambda a: torch.stack([a, a + 1], 0), lambda a: a.narrow(1, 2, 3) * 3, lambda a: a.repeat(2, 3) + 1,
    lambda a: a.transpose(0, 1).contiguous().view(7, 15)[:, ::2] + 1,
    lambda a: a.tril() + a.triu(1), lambda a: a.as_strided((3, 4), (2, 1), 1) + 1,
    lambda a: a.flip(0) + 1, lambda a: a.flip(0, 1).t() * 2, lambda a: a[:7].diagonal() + 1,
    lambda a: a.diagonal(2) * 2, lambda a: a.diagonal(-3).exp(),
    lambda a: a.reshape(3, 5, 7).diagonal(1, 0, 2) + 1,
]


@pytest.mark.parametrize("fn", VIEWS)
def test_views(fn):
    check(fn, x(15, 7))
    check(fn, xt(15, 7))


# views returned as outputs, and views read by a library call: same values and same strides as
# eager (a flipped view has a negative stride, so a library call gets a copy) ...
VIEW_OUTPUTS = [
    lambda a, w: (a.flip(1), a.flip(1) @ w), lambda a, w: (a.diagonal(), a.diagonal(1) * 2),
    lambda a, w: a.cos()[3], lambda a, w: (a.sin(), a.sin()[1:4]), lambda a, w: a.cos().t(),
    lambda a, w: (a.exp()[2:5], a.exp() @ w), lambda a, w: (lambda y: (y, y[:, 2]))(a.cos()),
]


@pytest.mark.parametrize("fn", VIEW_OUTPUTS)
def test_view_outputs_keep_eager_strides(fn):
    a, w = x(7, 7), x(7, 3)
    graph = check(fn, a, w)
    outs, refs = GraphExecutor(graph)(a, w), fn(a, w)
    for out, ref in zip(*(o if isinstance(o, tuple) else (o,) for o in (outs, refs))):
        assert out.stride() == ref.stride(), (out.stride(), ref.stride())


# ... but a part of an intermediate that nothing else needs comes back as its own row-major buffer:
# only that part is computed and written
def test_part_of_an_intermediate_is_returned_as_its_own_buffer():
    for fn, size in [(lambda a: a.cos()[:, 2], [7]), (lambda a: a.cos().flip(0)[:, 1:], [7, 6])]:
        [buf] = check(fn, x(7, 7)).graph_outputs
        assert buf.get_size() == size and buf.layout.is_contiguous()


def test_gathers():
    a = x(11, 6)
    idx = torch.randint(-11, 11, (4, 3))
    check(lambda t, i: t[i], a, idx)
    check(lambda t, i: t[:, i.clamp(0, 5)], a, idx)
    check(lambda t, i: t[i, i.clamp(0, 5)], a, idx)
    check(lambda t, i: torch.gather(t, 1, i.clamp(0, 5).repeat(3, 2)[:11, :4]), a, idx)
    check(lambda t, i: F.embedding(i.clamp(0, 10), t), a, idx)
    check(lambda t, i: t.index_select(0, i.clamp(0, 10).flatten()), a, idx)


def test_cat_of_only_legacy_empty_tensors():
    """``cat`` skips 1-d empty tensors (ATen's legacy rule); when every input is one, the
    lowering's loop body returned None, which the C++ kernel printed as ``None`` (a compile
    error, the graph run by the reference backend)."""
    mc.metrics.reset()
    check(lambda a, b: torch.cat([a, b]) + 1, torch.randn(0), torch.randn(0))
    fn = lambda a, b: torch.cat([a, b]) + 1
    torch.testing.assert_close(mc.compile(fn)(torch.randn(0), torch.randn(0)),
                               fn(torch.randn(0), torch.randn(0)))
    assert not mc.metrics.backend_fallbacks


@pytest.mark.parametrize("index", [torch.tensor([0]), torch.tensor(0), torch.tensor(2)])
@pytest.mark.parametrize("shape", [(), (4, 5)])
def test_index_select_of_a_0d_tensor_or_with_a_0d_index(shape, index):
    """ATen selects from a 0-d tensor as from one element (the result is 0-d), and takes a 0-d
    index as one of one element: the lowering read dim 0 of a 0-d output and loaded a 0-d
    index at one coordinate (an IndexError: every such graph, and a 0-d input's gradient
    through ``index_add``/``index_copy``, ran eagerly)."""
    if not shape and index.item():
        pytest.skip("out of range for a 0-d tensor")
    a = torch.randn(shape)
    for dim in ([0, -1] if shape else [0]):
        check(lambda t, i: t.index_select(dim, i) * 2, a, index)


CREATION = [lambda a: torch.full((3, 5), 2.5) + a.sum(), lambda a: torch.arange(7) * a[0, 0],
            lambda a: torch.arange(2, 19, 3, dtype=torch.float32) + 1, lambda a: torch.zeros_like(a) + 1,
            lambda a: torch.ones(4, 3, dtype=torch.int64) * 3, lambda a: a.new_full((2, 2), 7.0),
            lambda a: torch.full_like(a, 3.0) + a, lambda a: a.clone() * 2,
            lambda a: a.to(torch.float16).to(torch.float32), lambda a: a.double() * 2]


@pytest.mark.parametrize("fn", CREATION)
def test_creation_and_casts(fn):
    check(fn, x(5, 3))


EXTERN = [lambda a, b: a @ b, lambda a, b: torch.addmm(b[0], a, b),
          lambda a, b: (b.t() @ a.t()).t() + 1,  # transposed operands stay strided views
          lambda a, b: torch.bmm(a.expand(2, *a.shape), b.expand(2, *b.shape))]


@pytest.mark.parametrize("fn", EXTERN)
def test_extern_matmul(fn):
    graph = check(fn, x(5, 9), x(9, 6))
    assert "ExternKernel" in str(graph)


def test_extern_conv_and_sdpa():
    w = x(4, 3, 3, 3)
    check(lambda a: F.conv2d(a, w, padding=1, stride=2), x(2, 3, 9, 7))
    q, k, v = x(2, 3, 5, 8), x(2, 3, 5, 8), x(2, 3, 5, 8)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)


def test_unlowered_op_falls_back_with_reason():
    graph = check(lambda a: torch.cummax(a, 1)[0] * 2, x(4, 6), allow_fallback=True)
    (op, reason), = graph.fallbacks
    assert "cummax" in op and reason
    assert "FallbackKernel" in str(graph)


def test_multi_output_fallback():
    graph = check(lambda a: torch.sort(a, 1)[0] + torch.sort(a, 1)[1], x(4, 6),
                  allow_fallback=True)
    assert "MultiOutput" in str(graph) or "buf" in str(graph)


def test_at_least_80_ops_lowered():
    packets = {op.overloadpacket if hasattr(op, "overloadpacket") else op for op in lowerings}
    assert len(packets) >= 80, len(packets)


# ops lowered whole (traced without decompositions, so the lowering itself runs)
NN_OPS = [
    (lambda a, b: torch.ops.aten.mish(a), ()),
    (lambda a, b: torch.ops.aten.mish_backward(b, a), ()),
    (lambda a, b: torch.ops.aten.elu_backward(b, 1.3, 1.0, 1.0, False, a), ()),
    (lambda a, b: torch.ops.aten.elu_backward(b, 1.0, 1.05, 1.0, True, F.elu(a)), ()),
    (lambda a, b: F.smooth_l1_loss(a, b), ()), (lambda a, b: F.smooth_l1_loss(a, b, beta=0.5,
                                                                              reduction="sum"), ()),
    (lambda a, b: F.smooth_l1_loss(a, b, reduction="none", beta=0.0), ()),
    (lambda a, b: torch.ops.aten.smooth_l1_loss_backward(torch.tensor(0.7), a, b, 1, 0.5), ()),
    (lambda a, b: F.binary_cross_entropy_with_logits(a * 30, b.sigmoid()), ()),
    (lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid(), weight=b.abs(),
                                                     pos_weight=b[0].abs(), reduction="none"), ()),
    (lambda a, b: torch.ops.aten.select_backward(b[:, 2], [13, 7], 1, 2), ()),
    (lambda a, b: torch.ops.aten.select_backward(b[-1], [13, 7], 0, -1), ()),
    # slices' and selects' gradients and scatters: Pointwise, fused, no zero fill and copy
    (lambda a, b: torch.ops.aten.slice_backward(b[:, 3:].exp(), [13, 7], 1, 3, 7, 1) + a, ()),
    (lambda a, b: torch.ops.aten.slice_backward(b[:4], [13, 7], 0, 1, 13, 3), ()),  # every 3rd
    (lambda a, b: torch.ops.aten.slice_backward(b[-4:], [13, 7], 0, -4, 2**63 - 1, 1), ()),
    (lambda a, b: torch.slice_scatter(a, b[:, :3] * 2, 1, 1, 7, 2), ()),
    (lambda a, b: torch.slice_scatter(a.sin(), b[-2:], 0, -2), ()),
    (lambda a, b: torch.select_scatter(a, b[:, 0].cos(), 1, -1) * 3, ()),
    (lambda a, b: torch.select_scatter(a, b[0], 0, 4), ()),
    (lambda a, b: torch.ops.aten.slice_backward(b[:, 7:], [13, 7], 1, 7, 7, 1) + a, ()),  # empty
    (lambda a, b: torch.zeros_like(a).scatter(1, (b.abs() * 3).long().clamp(max=6)[:, :1],
                                              a[:, :1]), ()),
    (lambda a, b: a.scatter(0, (b.abs() * 3).long().clamp(max=12)[:2], -1.0), ()),  # 2 slots
]


@pytest.mark.parametrize("k", range(len(NN_OPS)))
def test_nn_ops_lowered_whole(k):
    fn, _ = NN_OPS[k]
    a, b = x(13, 7), x(13, 7)
    graph = GraphLowering(make_fx(fn)(a, b)).run()
    assert not graph.fallbacks, graph.fallbacks
    torch.testing.assert_close(GraphExecutor(graph)(a, b), fn(a, b))


FALLBACK_REASONS = [  # (fn, args, words the logged reason contains)
    (lambda a: a.cummin(0)[0], (x(5, 3),), "scan"),
    (lambda a: a[a > 0], (x(5, 3),), "data-dependent"),
    (lambda a, i: a.scatter_reduce(0, i, torch.ones(3), "prod"), (x(6), torch.tensor([0, 2, 2])),
     "prod"),
]


@pytest.mark.parametrize("k", range(len(FALLBACK_REASONS)))
def test_fallbacks_say_why(k):
    fn, args, words = FALLBACK_REASONS[k]
    graph = GraphLowering(make_fx(fn)(*args)).run()
    assert graph.fallbacks and words in graph.fallbacks[0][1], graph.fallbacks
    torch.testing.assert_close(GraphExecutor(graph)(*args), fn(*args))


SEEN_STRIDES: list[tuple[int, ...]] = []


@torch.library.custom_op("minicompile_test::strides_seen", mutates_args=())
def strides_seen(a: torch.Tensor) -> torch.Tensor:
    """An op no lowering knows (a fallback) that remembers the strides it was given."""
    SEEN_STRIDES.append(a.stride())
    return a * 2


strides_seen.register_fake(lambda a: torch.empty_like(a))


@pytest.mark.parametrize("device", [
    pytest.param("cpu", marks=pytest.mark.skipif(not torch.backends.mkldnn.is_available(),
                                                 reason="channels-last on the CPU is oneDNN's")),
    pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_fallback_sees_its_inputs_laid_out_as_in_eager(monkeypatch, device):
    """A graph of convolutions may run them channels-last (``layout_opt``: on CUDA by Inductor's
    rule, on the CPU when one is grouped), where eager's results are contiguous. An op left to
    ATen (here a ``torch.library.custom_op``, one graph node) gets eager's layout back, the
    strides it was traced with: a kernel may assume the layouts ATen makes (GroupNorm's CUDA
    kernel took only contiguous or exactly channels-last inputs)."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # eager is the oracle: float32
    groups = 2 if device == "cpu" else 1
    w = torch.randn(32, 16 // groups, 3, 3, device=device)

    def fn(a):
        return strides_seen(F.conv2d(a, w, padding=1, groups=groups))

    a = torch.randn(2, 16, 7, 7, device=device)
    assert mc.explain(fn)(a).graph_break_count == 0  # the custom op is in the graph
    SEEN_STRIDES.clear()
    want = fn(a)
    # (the channels-last convolution is another cuDNN algorithm than eager's: rounding apart,
    # 2e-5 on an H200 with TF32 off)
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(a), want, rtol=1e-4, atol=1e-4)
    assert SEEN_STRIDES == [(1568, 49, 7, 1)] * 2, SEEN_STRIDES  # eager, compiled


# --- split reductions: a large full reduction as partials, then the partials ----------------
SPLIT_CASES = [
    (lambda a: a.sum(), torch.randn(1 << 16)),  # divides into the splits: no mask
    (lambda a: a.sum(), torch.randn(300, 301)),  # does not: the last chunk is masked
    (lambda a: a.t().sum(), torch.randn(300, 301)),  # non-contiguous
    (lambda a: a.mean(), torch.randn(256, 300)),
    (lambda a: a.amax(), torch.randn(70001) - 50),  # all negative: a 0 in a masked lane shows
    (lambda a: a.amin(), torch.randn(70001) + 50),
    (lambda a: a.max(), torch.randint(-100, -1, (70001,))),  # integer extremes as identities
    (lambda a: a.sum(), torch.randint(-100, 100, (70001,))),
    (lambda a: (a > 3.5).any(), torch.randn(70001)),
    (lambda a: (a > -9).all(), torch.randn(70001)),
    (lambda a: (a ** 2).sum(dtype=torch.float64), torch.randn(70001)),
]


@pytest.mark.parametrize("case", range(len(SPLIT_CASES)))
def test_large_full_reduction_is_split(case, compiled_graphs):
    fn, a = SPLIT_CASES[case]
    out = mc.compile(fn)(a)
    torch.testing.assert_close(out, fn(a), rtol=1e-4, atol=1e-3)
    kinds = [g.kind for g in compiled_graphs[-1].scheduler.kernel_groups]
    assert kinds.count("reduction") == 2, kinds  # the partials, then their reduction


def test_split_reduction_gradient():
    a = torch.randn(70001, requires_grad=True)
    mc.compile(lambda t: (t.sin() ** 2).sum())(a).backward()
    torch.testing.assert_close(a.grad, (2 * a.sin() * a.cos()).detach())


# Reductions with few outputs over long rows, split where the device has programs to spare
# (a GPU's SMs; a CPU never, so the split is forced here): outer, inner and middle dims, rows
# that a chunk divides and rows it doesn't, each splittable type, and a pointwise body.
FEW_OUTPUT_CASES = [
    (lambda a: a.sum(0), torch.randn(2048, 96)),  # a bias gradient: outer
    (lambda a: a.sum(0), torch.randn(1999, 96)),  # no divisor near the chunk: masked
    (lambda a: (a * 2).sum([0, 1]), torch.randn(64, 40, 24)),  # a layer norm weight's
    (lambda a: a.sum(1), torch.randn(3, 5000, 7)),  # a middle dim
    (lambda a: a.sum(-1, keepdim=True), torch.randn(3, 5001)),  # inner, few rows
    (lambda a: a.amax(0), torch.randn(3001, 5) - 50),  # masked lanes must not win
    (lambda a: a.amin(1), torch.randint(-9, 9, (4, 3001))),
    (lambda a: a.prod(0), 1 + torch.rand(1000, 3) / 1000),
    (lambda a: (a > 3).any(0), torch.randn(5000, 4)),
    (lambda a: a.mean(0), torch.randn(4096, 8)),
    # 16-bit: partials in float32 (in bfloat16 they lost up to 0.5 of a sum over 8192 rows)
    (lambda a: a.sum(0), torch.randn(8192, 16, dtype=torch.bfloat16)),
]


@pytest.mark.parametrize("case", range(len(FEW_OUTPUT_CASES)))
def test_reduction_with_few_outputs_is_split(case, compiled_graphs, monkeypatch):
    from minicompile.inductor.lowerings import reductions
    monkeypatch.setattr(reductions, "device_programs", lambda device: 256)
    fn, a = FEW_OUTPUT_CASES[case]
    out = mc.compile(fn)(a)
    torch.testing.assert_close(out, fn(a), **({} if a.dtype == torch.bfloat16 else
                                              dict(rtol=1e-4, atol=1e-3)))
    groups = compiled_graphs[-1].scheduler.kernel_groups
    reductions = [g for g in groups if g.kind == "reduction"]
    assert len(reductions) == 2, [g.kind for g in groups]  # the partials, then their reduction
    if a.dtype == torch.bfloat16:
        assert reductions[0].members[0].node.get_dtype() == torch.float32  # the partials


def test_outer_reduction_is_split_into_more_programs(compiled_graphs, monkeypatch):
    """An outer reduction's programs each move a small tile a step: it is cut into
    ``OUTER_OCCUPANCY`` times as many programs as the device runs at once (on a device of 16:
    2 tiles of 64 columns, 64 chunks), where an inner one stops at 16."""
    from minicompile.inductor.lowerings import reductions
    monkeypatch.setattr(reductions, "device_programs", lambda device: 16)
    a = torch.randn(4096, 128)
    torch.testing.assert_close(mc.compile(lambda t: t.sum(0))(a), a.sum(0), rtol=1e-4,
                               atol=1e-3)
    partials = compiled_graphs[-1].scheduler.kernel_groups[0]
    programs = int(partials.numel) // reductions.OUTER_LANES
    assert programs >= 16 * reductions.OUTER_OCCUPANCY, partials.describe()


def test_reductions_with_enough_outputs_are_not_split(compiled_graphs, monkeypatch):
    from minicompile.inductor.lowerings import reductions
    monkeypatch.setattr(reductions, "device_programs", lambda device: 256)
    a = torch.randn(512, 300)
    torch.testing.assert_close(mc.compile(lambda t: t.sum(1))(a), a.sum(1))
    kinds = [g.kind for g in compiled_graphs[-1].scheduler.kernel_groups]
    assert kinds.count("reduction") == 1, kinds


# Mixed-axis reductions (a kept dim between reduced ones) split at the dims: the trailing
# reduced block is reduced first, one row per (leading, kept) index, then the leading dims. (A
# device of 16 programs: the tests' 32 rows of the first reduction are enough, no second split.)
MIXED_CASES = [
    (lambda a: (a * 2 - 1).sum((0, 2, 3)), torch.randn(4, 8, 20, 20)),  # batch norm's sums
    (lambda a: a.amax((0, 2), keepdim=True), torch.randn(6, 5, 300)),
    (lambda a: a.sum((0, 2)), torch.randn(6, 5, 300, dtype=torch.bfloat16)),
]


@pytest.mark.parametrize("case", range(len(MIXED_CASES)))
def test_mixed_reduction_splits_at_its_dims(case, compiled_graphs, monkeypatch):
    """Two reductions and no pointwise kernel: the producer (``a * 2 - 1``) is in the kernel of
    the first, which visits the elements in its order (the flat chunks of ``split_reduction``
    did not, and the producer was written to memory)."""
    from minicompile.inductor.lowerings import reductions
    monkeypatch.setattr(reductions, "device_programs", lambda device: 16)
    fn, a = MIXED_CASES[case]
    out = mc.compile(fn)(a)
    torch.testing.assert_close(out, fn(a), **({} if a.dtype == torch.bfloat16 else
                                              dict(rtol=1e-4, atol=1e-4)))
    groups = compiled_graphs[-1].scheduler.kernel_groups
    assert [g.kind for g in groups] == ["reduction", "reduction"], [g.kind for g in groups]
    leading = int(a.shape[0])
    assert sympy.sympify(groups[0].numel) == leading * a.shape[1]  # a row per (n, c)
    assert groups[0].members[-1].node.get_dtype() == torch.float32  # (float32 partials)


@pytest.mark.parametrize("a", [
    torch.randn(512, 4, 7, 7),  # a 7 x 7 trailing block: too short to be a row of its own
    torch.randn(4, 8, 20, 20).to(memory_format=torch.channels_last),  # H, W a channel apart
], ids=["short", "channels_last"])
def test_mixed_reduction_stays_in_flat_chunks(a, compiled_graphs, monkeypatch):
    """Where a row per (n, c) would be short, or strided (channels-last: that reduction would
    be an outer one with N x C outputs, a few programs wide), the flat chunks stay; the
    producer ``t * t`` is computed inside their kernel (it cannot share the chunks' loops)."""
    from minicompile.inductor.lowerings import reductions
    monkeypatch.setattr(reductions, "device_programs", lambda device: 16)
    f = lambda t: (t * t).mean((0, 2, 3))  # noqa: E731
    torch.testing.assert_close(mc.compile(f)(a), f(a), rtol=1e-4, atol=1e-4)
    groups = compiled_graphs[-1].scheduler.kernel_groups
    assert [g.kind for g in groups] == ["reduction", "reduction"], [g.describe() for g in groups]
    assert sympy.sympify(groups[0].numel) != a.shape[0] * a.shape[1], groups[0].describe()


@pytest.fixture
def gpu_reductions(monkeypatch):
    """Reductions lowered as on a GPU: split where few outputs have long rows (16 programs
    fill this device), and ``var_mean`` lowered whole (one Welford pass), not decomposed."""
    from minicompile.inductor import backend
    from minicompile.inductor.lowerings import reductions
    monkeypatch.setattr(reductions, "device_programs", lambda device: 16)
    monkeypatch.setattr(backend, "var_mean_on_cpu", lambda x, *args, **kwargs: NotImplemented)


def test_batch_norm_training_splits_without_writing_its_centred_values(compiled_graphs,
                                                                        gpu_reductions):
    """Batch norm's forward and backward with its statistics split (as on a GPU with few
    channels): the forward is one Welford pass over x (each chunk's mean and m2), the partials
    combined, and one output kernel; the backward one kernel for both sums (grad and
    grad * xhat), their second passes, and dx; x - mean is recomputed where it is read, never
    written. Output and gradients equal eager's."""
    x = torch.randn(4, 8, 20, 20, requires_grad=True)
    w, b = torch.randn(8, requires_grad=True), torch.randn(8, requires_grad=True)
    grad = torch.randn(4, 8, 20, 20)

    def fn(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)

    mc.compile(fn)(x, w, b).backward(grad)
    got = [t.grad for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    fn(x, w, b).backward(grad)
    for g, t in zip(got, (x, w, b)):
        torch.testing.assert_close(g, t.grad, rtol=1e-4, atol=1e-4)
    forward, backward = ([g.kind for g in c.scheduler.kernel_groups] for c in compiled_graphs)
    assert forward == ["reduction"] * 2 + ["pointwise"], forward
    assert backward == ["reduction"] * 3 + ["pointwise"], backward
    statistics = compiled_graphs[0].scheduler.kernel_groups[:2]
    written = sum(int(g.write_bytes) for g in statistics)
    assert written < x.numel() * 4, [(g.stored, g.write_bytes) for g in statistics]


WELFORD_SPLITS = {  # var_mean over few outputs with long rows, as a GPU splits it
    "nchw": (torch.randn(4, 8, 20, 20), (0, 2, 3)),  # rows over H, W, then over N
    "channels_last": (torch.randn(4, 8, 20, 20).to(memory_format=torch.channels_last),
                      (0, 2, 3)),  # equal flat chunks, laid out split-major
    "inner": (torch.randn(3, 4096), (1,)),
    "full": (torch.randn(64, 512), (0, 1)),
}


@pytest.mark.parametrize("case", WELFORD_SPLITS)
def test_var_mean_is_one_welford_pass_split_into_equal_chunks(case, compiled_graphs,
                                                              gpu_reductions):
    """``var_mean`` (a batch norm's statistics) reads its input once: each chunk's (mean, m2)
    in one kernel, then the chunks combined with equal weights. The values sit at 1000 with a
    spread of 1: a combine through sum(x^2) - n mean^2 would cancel away most digits."""
    a, dims = WELFORD_SPLITS[case]
    a = a * 1 + 1000

    def fn(t):
        return torch.var_mean(t, dims, correction=0, keepdim=case == "nchw")

    for got, want in zip(mc.compile(fn)(a), fn(a.double())):
        torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-4)
    groups = compiled_graphs[-1].scheduler.kernel_groups
    assert [g.kind for g in groups] == ["reduction", "reduction"], [g.describe() for g in groups]
    assert int(groups[0].read_bytes) <= a.numel() * 4 + 4096, groups[0].describe()  # x once


def test_var_mean_stays_whole_where_equal_chunks_do_not_divide_the_rows(compiled_graphs,
                                                                        gpu_reductions):
    """A row of 4099 (a prime) elements has no equal chunks; a masked lane would count as an
    element of the last one: one Welford kernel."""
    a = torch.randn(3, 4099) + 1000
    fn = lambda t: torch.var_mean(t, 1)  # noqa: E731
    for got, want in zip(mc.compile(fn)(a), fn(a.double())):
        torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-4)
    assert [g.kind for g in compiled_graphs[-1].scheduler.kernel_groups] == ["reduction"]


def test_split_chunks_divide_the_rows_where_they_can():
    from minicompile.inductor.lowerings.reductions import chunk_length
    assert chunk_length(2048, 40) == 64  # (51.2 wanted: 64 divides 2048 and is nearest)
    assert chunk_length(2048, 32) == 64 and chunk_length(1999, 10) == 200  # 1999 is prime


# --- complex tensors: left to ATen ------------------------------------------------------------

COMPLEX_PROGRAMS = {
    "abs_plus_real": lambda z: (z * 2 + 1).abs() + z.real,
    "view_as_real": lambda z: torch.view_as_real(z * 2).sum(),
    "from_real": lambda z: torch.view_as_complex(torch.view_as_real(z) * 3).angle(),
}


@pytest.mark.parametrize("backend", ["reference", "cpp", "triton"])
@pytest.mark.parametrize("name", sorted(COMPLEX_PROGRAMS))
def test_complex_tensors_run_through_aten_on_every_backend(name, backend, monkeypatch):
    """A complex value never reaches a loop kernel: the Triton kernel writer had no type for it
    (KeyError: complex64), and the C++ and reference backends computed |z| of the real part
    alone. The ops on complex tensors are fallbacks; the rest of the graph still compiles."""
    from minicompile import config
    from minicompile.inductor.codegen import BACKENDS

    if backend not in BACKENDS:
        pytest.skip(f"no {backend} backend here")
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    mc.reset()
    fn, z = COMPLEX_PROGRAMS[name], torch.randn(37, dtype=torch.complex64, device="cpu")
    torch.testing.assert_close(mc.compile(fn)(z), fn(z))
    assert mc.metrics.eager_fallbacks == 0  # compiled, not run eagerly
    mc.reset()


def rotary(x, theta):
    """Rotary position embedding as Llama's reference code writes it (view_as_complex)."""
    freqs = torch.polar(torch.ones_like(theta), theta)  # (T, D/2) complex
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))  # (B, T, D/2)
    return torch.view_as_real(xc * freqs).flatten(-2).type_as(x) * 2  # (B, T, D)


@pytest.mark.parametrize("backend", ["reference", "cpp", "triton"])
def test_rotary_embedding_through_complex_trains_on_every_backend(backend, monkeypatch):
    """RoPE through torch.view_as_complex: forward and gradients equal to eager, compiled (the
    complex ops through ATen, the real ops around them in kernels), never a crash."""
    from minicompile import config
    from minicompile.inductor.codegen import BACKENDS

    if backend not in BACKENDS:
        pytest.skip(f"no {backend} backend here")
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    mc.reset()
    x, theta = torch.randn(2, 7, 8, requires_grad=True), torch.randn(7, 4, requires_grad=True)
    rx, rtheta = (t.detach().clone().requires_grad_() for t in (x, theta))
    out, ref = mc.compile(rotary)(x, theta), rotary(rx, rtheta)
    torch.testing.assert_close(out, ref)
    out.square().sum().backward(), ref.square().sum().backward()
    torch.testing.assert_close((x.grad, theta.grad), (rx.grad, rtheta.grad))
    assert mc.metrics.eager_fallbacks == 0
    mc.reset()


def rotate_half(x):
    """RoPE as Llama's and Mistral's transformers code writes it: the halves swapped, one
    negated. Its backward is a ``slice_backward`` of each half."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_gradients_of_slices_are_kernels_not_fallbacks(backend, monkeypatch, compiled_graphs):
    """The gradient of a slice (``slice_backward``: zeros, the gradient in the slice) was an
    ATen fallback, a zero fill and a copy each, four a layer of a RoPE model; it is a
    ``Pointwise`` now, fused with its neighbours: forward and gradients equal eager's."""
    from minicompile import config
    from minicompile.inductor.codegen import BACKENDS

    if backend not in BACKENDS:
        pytest.skip(f"no {backend} backend here")
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)

    def rope(q, cos, sin):
        return (q * cos + rotate_half(q) * sin)[:, 1:].tanh()  # (and a slice of the output)

    q, cos, sin = torch.randn(2, 5, 3, 8), torch.randn(5, 1, 8), torch.randn(5, 1, 8)
    mine, ref = q.clone().requires_grad_(), q.clone().requires_grad_()
    out, expected = mc.compile(rope)(mine, cos, sin), rope(ref, cos, sin)
    torch.testing.assert_close(out, expected)
    out.square().sum().backward(), expected.square().sum().backward()
    torch.testing.assert_close(mine.grad, ref.grad)
    assert len(compiled_graphs) == 2  # forward and backward
    assert not [f for g in compiled_graphs for f in g.graph.fallbacks]
    mc.reset()


def test_the_gradient_of_an_empty_slice_is_no_load(compiled_graphs):
    """Phi-3's RoPE rotates all of each head and passes the rest, an empty slice, through a
    ``cat``: the gradient of that empty slice is a ``slice_backward`` of no elements, whose
    source, a view of a view of a size-0 dim, has an index dividing by 0 (the scheduler's byte
    count, and Triton's reduction hint, raised ZeroDivisionError and the graph fell back to
    eager). An empty tensor's index divides by 0 to 0 (``FloorDiv``, ``ModularIndexing``):
    its masked load never runs."""
    def partial_rope(x, w, cos, sin):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            q = (x @ w)[..., :16].view(2, 3, 2, 8).transpose(1, 2)
            rot, passed = q[..., :8], q[..., 8:]  # all of the head rotated: passed is empty
            out = torch.cat([rot * cos + rotate_half(rot) * sin, passed], -1)
            return out.float().square().sum()

    x, cos, sin = torch.randn(2, 3, 8), torch.randn(3, 8), torch.randn(3, 8)
    w = torch.randn(8, 24)
    mine, ref = w.clone().requires_grad_(), w.clone().requires_grad_()
    mc.compile(partial_rope)(x, mine, cos, sin).backward()
    partial_rope(x, ref, cos, sin).backward()
    torch.testing.assert_close(mine.grad, ref.grad, rtol=1e-2, atol=1e-2)
    assert len(compiled_graphs) == 2 and mc.metrics.eager_fallbacks == 0
    mc.reset()


# ops that were ATen fallbacks in the transformers and timm models of the benchmark (each
# a kernel launch of its own and a break in fusion), now kernels; fmax/fmin were lowered as
# maximum/minimum, a wrong result where one side is NaN
MODEL_OPS = {
    "fmax, fmin with NaN": lambda a, b: torch.fmax(a.log(), b) + torch.fmin(b, a.log()) * 2,
    "floor_divide": lambda a, b: torch.floor_divide(a * 5, b),
    "floor_divide int": lambda a, b: torch.floor_divide((a * 9).long(), (b * 4).long() | 1),
    "contiguous": lambda a, b: torch.ops.aten.contiguous(a.t() * 2),
    "fill.Tensor": lambda a, b: torch.ops.aten.fill.Tensor(a * 2, b[2, 3]) + a,
    "unbind": lambda a, b: [t * 2 for t in a.sin().view(13, 7, 1).unbind(1)][::3],
    "roll": lambda a, b: torch.roll(a * 2, shifts=(3, -9), dims=(0, 1)),
    "roll twice along a dim": lambda a, b: torch.roll(a, shifts=(1, 20), dims=(0, 0)) + 1,
    "as_strided_scatter": lambda a, b: torch.as_strided_scatter(a * 2, b[:2, :3], (2, 3),
                                                                (1, 7), 4) + 1,
    "as_strided_scatter of a transpose": lambda a, b: torch.as_strided_scatter(
        a.t() * 2, b[0, :7], (7,), (14,), 1),
    "in-place op on a view of an intermediate": lambda a, b: (
        lambda y: (y[:, 1].mul_(b[0, 0]), y[2:5, ::2].add_(1), y)[2])(a.exp()),
    "hardsigmoid_backward": lambda a, b: torch.ops.aten.hardsigmoid_backward(b, a * 4),
    "_safe_softmax": lambda a, b: torch.ops.aten._safe_softmax(a.masked_fill(
        (b > 0.5) | (torch.arange(13)[:, None] == 2), float("-inf")), 1),
}


def test_a_roll_of_an_empty_tensor_is_a_kernel(compiled_graphs):
    """A dim of size 0 has nothing to roll; its shift modulo the size was a ZeroDivisionError,
    and the graph ran eagerly (OpInfo's roll samples on (0, 0, 0) tensors)."""
    fn = lambda a: torch.roll(a * 2, shifts=(1, 2), dims=(2, 1))  # noqa: E731
    a = torch.randn(0, 0, 0)
    mc.metrics.reset()
    torch.testing.assert_close(mc.compile(fn)(a), fn(a))
    assert compiled_graphs and mc.metrics.eager_fallbacks == 0
    mc.reset()


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("name", sorted(MODEL_OPS))
def test_ops_of_the_model_suites_are_kernels(name, backend, monkeypatch, compiled_graphs):
    from minicompile import config
    from minicompile.inductor.codegen import BACKENDS

    if backend not in BACKENDS:
        pytest.skip(f"no {backend} backend here")
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    fn, a, b = MODEL_OPS[name], x(13, 7), x(13, 7)
    a.view(-1)[::5] = -1.0  # (its log is NaN)
    b.view(-1)[::4] = float("nan")
    out, expected = mc.compile(fn)(a, b), fn(a, b)
    torch.testing.assert_close(out, expected, equal_nan=True)
    for o, e in zip(*(t if isinstance(t, list) else [t] for t in (out, expected))):
        assert o.stride() == e.stride()
    assert compiled_graphs and not [f for g in compiled_graphs for f in g.graph.fallbacks]
    mc.reset()


# --- pooling: windows unrolled into loads, backwards as gathers --------------------------------

POOLS = {
    "max 3x3 s2 p1": lambda x: F.max_pool2d(x, 3, 2, 1),
    "max 2x2": lambda x: F.max_pool2d(x, 2),
    "max ceil_mode": lambda x: F.max_pool2d(x, 3, 1, 1, ceil_mode=True),
    "max dilated": lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2),
    "avg 2x2": lambda x: F.avg_pool2d(x, 2),
    "avg 3x3 s2 p1": lambda x: F.avg_pool2d(x, 3, 2, 1),
    "avg without pad": lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    "avg ceil_mode": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
    "avg divisor": lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5),
}


@pytest.mark.parametrize("shape", [(2, 3, 9, 9), (3, 10, 7)], ids=["4-d", "3-d"])
@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_forward_and_backward_match_eager(name, shape, compiled_graphs):
    fn = POOLS[name]
    x = torch.randn(*shape)
    x.view(-1)[::11] = float("nan")  # max-pool: a NaN wins its windows, and takes the gradient
    mine, ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    out, expected = mc.compile(fn)(mine), fn(ref)
    torch.testing.assert_close(out, expected, equal_nan=True)
    grad = torch.randn_like(expected)
    out.backward(grad)
    expected.backward(grad)
    torch.testing.assert_close(mine.grad, ref.grad, equal_nan=True)
    kinds = {g.kind for c in compiled_graphs for g in c.scheduler.kernel_groups}
    assert "extern" not in kinds, "pooling was left to ATen"


def test_max_pool_indices_match_eager_ties_included():
    x = torch.randn(2, 3, 9, 9).round()  # many equal values: the first of the window wins
    fn = lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True)  # noqa: E731
    (values, indices), (ev, ei) = mc.compile(fn)(x), fn(x)
    torch.testing.assert_close(values, ev)
    assert torch.equal(indices, ei)


def test_pooling_of_16_bit_and_channels_last_inputs():
    x = torch.randn(2, 8, 12, 12, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    for fn in (lambda t: F.avg_pool2d(t, 3, 2, 1), lambda t: F.max_pool2d(t, 3, 2, 1)):
        torch.testing.assert_close(mc.compile(fn)(x), fn(x))


def test_a_window_too_large_to_unroll_stays_a_library_call(compiled_graphs):
    x = torch.randn(1, 2, 14, 14)
    torch.testing.assert_close(mc.compile(lambda t: F.avg_pool2d(t, 7))(x), F.avg_pool2d(x, 7))
    externs = [g for g in compiled_graphs[0].scheduler.kernel_groups if g.kind == "extern"]
    assert externs, "a 49-element window was unrolled"


def test_comparison_with_a_size_computation_promotes_as_an_int():
    """``arange(n) > pos - 4`` with ``pos`` a SymInt: AOT tracing makes ``pos - 4`` a size
    computation node, which carries its SymPy expression and no FakeTensor value; the
    comparison's promotion read the value and raised (KeyError), so the graph ran eagerly."""
    def window_mask(scores, pos):
        idx = torch.arange(scores.shape[-1])
        mask = (idx <= pos) & (idx > pos - 4)
        return scores.masked_fill(~mask, float("-inf")).softmax(-1)

    cfn = mc.compile(window_mask, dynamic=True)
    for pos in (5, 9):
        scores = torch.randn(2, 16)
        torch.testing.assert_close(cfn(scores, pos), window_mask(scores, pos))
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons


def test_an_output_saved_for_the_backward_is_the_output_itself():
    """``x.exp()`` returns exp and saves it for its backward: the forward graph returns the same
    value twice. The copy for a repeated output (the caller must get two tensors) was made for
    the saved one too: a second store of the whole output every step (and no C++ kernel at all
    for a complex value, so ``polar``'s forward ran on the reference backend), and the backward
    read a private copy, so writing into the output before ``backward()`` went unnoticed where
    eager raises (autograd's version check on the saved output)."""
    f = lambda x: x.exp()
    compiled = mc.compile(f)
    for fn in (f, compiled):
        y = fn(torch.randn(8, requires_grad=True))
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    mc.metrics.reset()
    a, b = torch.tensor(2.0, requires_grad=True), torch.tensor(0.5, requires_grad=True)
    polar = lambda a, b: torch.polar(a, b)
    torch.testing.assert_close(mc.compile(polar)(a, b), polar(a, b))
    assert not mc.metrics.backend_fallbacks


def test_sgn_of_a_real_tensor_is_its_sign():
    """``abs``'s gradient is ``grad * sgn(x)``: a real tensor's ``sgn`` is its ``sign`` (a
    complex one never reaches a kernel), so a training step with ``abs`` had an op left to
    ATen (found by ``tests/inductor_port``)."""
    special = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), -float("inf")])
    for t in (torch.cat([special, x(11)]), torch.randint(-3, 3, (9,), dtype=torch.int32)):
        graph = GraphLowering(make_fx(torch.sgn)(t)).run()  # (no decomposition of sgn)
        assert not graph.fallbacks, graph.fallbacks
        torch.testing.assert_close(GraphExecutor(graph)(t), torch.sgn(t), equal_nan=True)


def test_zero_is_a_constant_fill():
    """``x.zero_()`` is functionalized into ``aten.zero`` (a tensor of zeros like ``x``), which
    was left to ATen (found by ``tests/inductor_port``)."""
    t = torch.randn(3, 5).t()
    graph = GraphLowering(make_fx(torch.ops.aten.zero.default)(t)).run()
    assert not graph.fallbacks, graph.fallbacks
    torch.testing.assert_close(GraphExecutor(graph)(t), torch.zeros_like(t))
