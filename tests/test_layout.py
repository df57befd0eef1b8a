"""Layouts: a compiled graph returns the strides eager returns, and its kernels walk memory in
the order its buffers are laid out (``ir/layout.py``'s fill orders, ``lowering.layout_like``,
``GraphLowering.keep_output_stride``, ``loop_order.pick_loop_order``).

Each case runs on the reference, C++ and Triton (``TRITON_INTERPRET=1``) backends, forward and
backward, and compares values *and* strides with eager: channels-last 4-D and 3-D inputs,
permuted and transposed ones, expanded ones, and mixed layouts, where eager's TensorIterator
takes the layout of its inputs in order."""

from __future__ import annotations

import pytest
import sympy
import torch
import torch.nn.functional as F

import minicompile as mc
from conftest import record_defined_kernels, use_cpu_backend
from minicompile.bench.patterns import channels_last_bias_relu
from minicompile.inductor.graph import GraphLowering
from minicompile.inductor.ir import unflatten_index
from minicompile.inductor.ir.layout import (Layout, eager_fill_order, fill_order,
                                            fill_ordered_strides)
from minicompile.inductor.sizevars import simplify_index


def on_gpu() -> bool:
    return torch.empty(0).device.type == "cuda"


@pytest.fixture(params=["reference", "cpp", "triton"])
def backend(request, monkeypatch):
    if on_gpu() and request.param != "triton":
        pytest.skip("CUDA tensors: Triton kernels")
    use_cpu_backend(monkeypatch, request.param, needs_interpreter=not on_gpu())
    yield request.param
    mc.reset()


@pytest.fixture
def sources(monkeypatch) -> list[tuple[object, str]]:
    """(kernel, source) of every kernel defined while the test runs."""
    return record_defined_kernels(monkeypatch, lambda kernel, source: (kernel, source))


def cl(*size):  # channels-last 4-D
    return torch.randn(*size).to(memory_format=torch.channels_last)


def cl3(*size):  # channels-last 3-D (NDHWC)
    return torch.randn(*size).to(memory_format=torch.channels_last_3d)


def leaves(x) -> list[torch.Tensor]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def assert_like_eager(got, want) -> None:
    for g, w in zip(leaves(got), leaves(want), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
        assert g.stride() == w.stride(), f"{tuple(g.shape)}: {g.stride()} != eager's {w.stride()}"


CASES = {
    # channels-last in, channels-last out: one straight loop over memory
    "channels_last_bias_relu": (channels_last_bias_relu,
                                lambda: (cl(2, 16, 5, 7), torch.randn(16))),
    "channels_last_3d": (lambda x: (x * 2 + 1).sin(), lambda: (cl3(2, 3, 4, 5, 6),)),
    # NHWC -> NCHW: the caller asked for contiguous
    "channels_last_to_nchw": (lambda x: x.contiguous() * 2, lambda: (cl(2, 16, 5, 7),)),
    "avg_pool_2x2_nhwc": (lambda x: F.avg_pool2d(x, 2), lambda: (cl(2, 16, 6, 10),)),
    # mixed layouts: the first input's decides (TensorIterator)
    "mixed_channels_last_first": (lambda x, y: x * y + 1, lambda: (cl(2, 3, 4, 5),
                                                                  torch.randn(2, 3, 4, 5))),
    "mixed_contiguous_first": (lambda x, y: y * x + 1, lambda: (cl(2, 3, 4, 5),
                                                               torch.randn(2, 3, 4, 5))),
    # a broadcast input has no say: the channels-last one decides
    "expanded_then_channels_last": (lambda b, x: b + x, lambda: (torch.randn(1, 3, 1, 1),
                                                                 cl(2, 3, 4, 5))),
    "expanded_input": (lambda x: x.expand(3, 4, 5) * 2, lambda: (torch.randn(4, 1),)),
    "transposed": (lambda x, y: x.t() * y, lambda: (torch.randn(9, 7), torch.randn(7, 9))),
    "permuted": (lambda x: x.permute(2, 0, 1).exp(), lambda: (torch.randn(4, 5, 6),)),
    # reductions over channels-last and permuted inputs, and ops eager makes contiguous
    "sum_channels": (lambda x: x.sum(1), lambda: (cl(2, 3, 4, 5),)),
    "mean_spatial_keepdim": (lambda x: x.mean((2, 3), keepdim=True), lambda: (cl(2, 3, 4, 5),)),
    "permuted_amax": (lambda x: x.transpose(0, 1).amax(-1), lambda: (torch.randn(6, 7, 9),)),
    "permuted_max_dim": (lambda x: x.transpose(0, 1).max(-1), lambda: (torch.randn(6, 7, 9),)),
    "softmax_channels_last": (lambda x: torch.softmax(x, 1), lambda: (cl(2, 3, 4, 5),)),
    "layer_norm_permuted": (lambda x: F.layer_norm(x.permute(0, 2, 3, 1), (3,)),
                            lambda: (torch.randn(2, 3, 4, 5),)),
    "two_outputs": (lambda x: (x.relu(), x.sigmoid() * 2), lambda: (cl(2, 8, 3, 5),)),
}


@pytest.mark.parametrize("name", CASES)
def test_outputs_have_eager_strides(backend, name):
    fn, make = CASES[name]
    args = make()
    assert_like_eager(mc.compile(fn)(*args), fn(*args))
    assert mc.metrics.eager_fallbacks == 0


TRAINING = ["channels_last_bias_relu", "channels_last_3d", "channels_last_to_nchw",
            "avg_pool_2x2_nhwc", "mixed_channels_last_first", "mixed_contiguous_first",
            "transposed", "permuted", "sum_channels", "softmax_channels_last",
            "layer_norm_permuted"]


@pytest.mark.parametrize("name", TRAINING)
def test_gradients_have_eager_strides(backend, name):
    """``autograd.grad`` hands back the backward's own tensors (``.grad`` of a leaf would be
    restrided to the leaf's layout by autograd itself, whatever the backward returned)."""
    fn, make = CASES[name]
    args = make()
    mine = [a.clone().requires_grad_() for a in args]
    theirs = [a.clone().requires_grad_() for a in args]
    out, ref = mc.compile(fn)(*mine), fn(*theirs)
    assert_like_eager(out, ref)
    grad_out = torch.randn_like(ref)  # laid out as eager's output, as autograd's would be
    assert_like_eager(torch.autograd.grad(out, mine, grad_out),
                      torch.autograd.grad(ref, theirs, grad_out))


def test_incoming_gradient_in_another_layout(backend):
    """The backward was traced for a channels-last gradient; a row-major one is laid out so
    before it runs. Its values are eager's; its strides are those of the traced layout: eager's
    follow the incoming gradient's, which a backward compiled before it arrives cannot know
    (real AOTAutograd lays incoming gradients out as traced too)."""
    x = cl(2, 4, 3, 5).requires_grad_()
    y = x.detach().clone().requires_grad_()
    fn = lambda x: (x * 3).tanh()  # noqa: E731
    grad_out = torch.randn(2, 4, 3, 5)  # row-major, unlike the output
    [got], [want] = (torch.autograd.grad(mc.compile(fn)(x), x, grad_out),
                     torch.autograd.grad(fn(y), y, grad_out))
    torch.testing.assert_close(got, want)
    assert got.stride() == x.stride()


def test_a_row_major_buffer_is_returned_in_eager_layout(backend, monkeypatch):
    """A lowering that realizes its result itself (``max.dim``'s values and indices) makes it
    row-major: the graph's output is copied into eager's layout all the same
    (``GraphLowering.keep_output_stride``). Here every result is realized row-major."""
    realize_results = GraphLowering.realize_results
    monkeypatch.setattr(GraphLowering, "realize_results",
                        lambda self, result, val: realize_results(self, result, None))
    fn, make = CASES["channels_last_bias_relu"]
    args = make()
    assert_like_eager(mc.compile(fn)(*args), fn(*args))
    assert mc.metrics.eager_fallbacks == 0


def test_strides_follow_dynamic_sizes(backend):
    fn, _ = CASES["channels_last_bias_relu"]
    compiled = mc.compile(fn, dynamic=True)
    for n, c, h, w in ((2, 16, 5, 7), (3, 8, 4, 9)):
        x, b = cl(n, c, h, w), torch.randn(c)
        assert_like_eager(compiled(x, b), fn(x, b))


# --- the kernels walk memory in the buffers' order ----------------------------------------------

def test_channels_last_bias_relu_is_one_straight_loop(backend, sources):
    """Input and output channels-last: every load and the store at the loop's own position
    (the bias at the channel), no 2-D tile; before, the output was row-major and the kernel
    transposed on the way out."""
    x, b = cl(2, 16, 5, 7), torch.randn(16)
    assert_like_eager(mc.compile(channels_last_bias_relu)(x, b), channels_last_bias_relu(x, b))
    if backend == "reference":
        return
    [(kernel, source)] = sources
    if backend == "cpp":
        assert "2-D tiles" not in source
        assert "in_ptr0[x0 + 16*x1]" in source and "out_ptr0[x0 + 16*x1]" in source, source
        assert "in_ptr1[x0]" in source  # the bias: the channel is the innermost loop
    else:
        assert getattr(kernel, "kind", None) != "tiled" and "2-D tile" not in source
        assert "tl.store(out_ptr0 + (xindex)" in source and "in_ptr0 + (xindex)" in source, source


def test_producer_in_channels_last_is_inlined_into_a_row_major_copy(backend, sources):
    """``(x * 2).contiguous()``: the channels-last product is computed inside the copy's kernel,
    never stored (one kernel, which reads x and writes the result)."""
    x = cl(2, 8, 5, 3)
    fn = lambda x: (x * 2).contiguous()  # noqa: E731
    assert_like_eager(mc.compile(fn)(x), fn(x))
    if backend != "reference":
        assert len(sources) == 1


def test_channels_last_chain_fuses_into_one_kernel(backend, sources):
    """A channels-last intermediate read by a row-major output and a channels-last one: one
    kernel, its members looping in one order (``loop_order.reorder_to_fuse``)."""
    x = cl(2, 8, 5, 3)
    fn = lambda x: ((x * 2).exp(), ((x * 2).exp() + 1).contiguous())  # noqa: E731
    assert_like_eager(mc.compile(fn)(x), fn(x))
    if backend != "reference":
        assert len(sources) == 1


# --- the pieces -----------------------------------------------------------------------------

def test_fill_orders():
    assert fill_order([60, 1, 15, 3]) == [1, 3, 2, 0]  # channels-last NCHW: C, W, H, N
    assert fill_order([3, 1, 3, 3]) == [1, 3, 2, 0]  # size-1 dims: the later one first
    n, c, h, w = sympy.symbols("n c h w", positive=True, integer=True)
    assert fill_order([c * h * w, 1, w * c, c]) == [1, 3, 2, 0]
    assert fill_ordered_strides([n, c, h, w], [1, 3, 2, 0]) == [c * h * w, 1, w * c, c]
    assert eager_fill_order(cl(2, 3, 4, 5)) == [1, 3, 2, 0]
    assert eager_fill_order(torch.randn(4, 1).expand(4, 6)) is None  # overlapping: no order
    assert eager_fill_order(torch.randn(6, 8)[:, ::2]) is None  # gaps


def test_unflatten_inverts_a_channels_last_layout():
    size = [2, 3, 4, 5]
    layout = Layout(torch.device("cpu"), torch.float32, size,
                    fill_ordered_strides(size, [1, 3, 2, 0]))
    index = list(sympy.symbols("i0:4", integer=True, nonnegative=True))
    ranges = dict(zip(index, size))
    flat = layout.make_indexer()(index)
    back = unflatten_index(flat, layout.size, layout.stride, layout.offset)
    assert [simplify_index(e, ranges) for e in back] == index
