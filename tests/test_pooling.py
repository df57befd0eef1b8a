"""Max-pooling kernels (minicompile/inductor/lowerings/pooling.py) on every CPU backend (on the
GPU, on Triton), eager as the oracle: NaN and -inf windows, padding, dilation, ceil_mode, 16-bit
inputs, the gradient; inference computes the maxima alone, and tests bounds only where a window
can leave the input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from minicompile.inductor.ir import PrintHandler
from minicompile.inductor.virtualized import set_ops_handler

POOLS = {  # name -> (max_pool2d arguments, input size)
    "3x3_s2_p1_even": ((3, 2, 1), (2, 3, 10, 8)),
    "3x3_s2_p1_odd": ((3, 2, 1), (1, 2, 9, 11)),
    "ceil_mode": ((3, 2, 1, 1, True), (1, 2, 10, 9)),  # the last window hangs over the end
    "dilated": ((3, 2, 1, 2), (1, 3, 11, 10)),
    "2x2_no_padding": ((2,), (2, 2, 8, 6)),
    "rectangular": (((2, 3), (1, 2), (1, 0)), (1, 2, 7, 9)),
}


def special_values(x: torch.Tensor) -> torch.Tensor:
    x.view(-1)[::13] = float("nan")  # a NaN wins its windows
    x.view(-1)[5::7] = float("-inf")
    x[..., :3, :3] = float("-inf")  # a window of -inf alone (padding aside)
    return x


@pytest.mark.parametrize("name", list(POOLS))
def test_max_pool_matches_eager(name, kernel_backend):
    args, size = POOLS[name]
    fn = lambda t: F.max_pool2d(t, *args)  # noqa: E731
    x = special_values(torch.randn(size))
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(x), fn(x), equal_nan=True)
    assert mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("name", ["3x3_s2_p1_odd", "ceil_mode", "dilated"])
def test_max_pool_gradient_and_indices_match_eager(name, kernel_backend):
    args, size = POOLS[name]
    fn = lambda t: F.max_pool2d(t, *args, return_indices=True)  # noqa: E731
    x = special_values(torch.randn(size).round())  # ties: the first of the window wins
    mine, ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    (out, idx), (want, want_idx) = mc.compile(fn, backend="inductor")(mine), fn(ref)
    torch.testing.assert_close(out, want, equal_nan=True)
    assert torch.equal(idx, want_idx)
    grad = torch.randn_like(want)
    out.backward(grad), want.backward(grad)
    torch.testing.assert_close(mine.grad, ref.grad, equal_nan=True)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "unbatched"])
def test_max_pool_gradient_in_other_layouts(layout, kernel_backend):
    """The gradient of a contiguous input, a channels-last one and an unbatched (C, H, W) one
    equal eager's; from a contiguous gradient C++ kernels scatter one plane a row, with plain
    adds (a thread owns whole planes, and a plane's indices stay in it:
    ``cpp_scatter.rows_keep_apart``)."""
    backend, graphs = kernel_backend
    x = torch.randn(2, 4, 9, 11).round()
    x = {"contiguous": x, "channels_last": x.contiguous(memory_format=torch.channels_last),
         "unbatched": x[0]}[layout]
    fn = lambda t: F.max_pool2d(t, 3, 2, 1)  # noqa: E731
    mine, ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    out, want = mc.compile(fn, backend="inductor")(mine), fn(ref)
    grad = torch.randn_like(want)
    out.backward(grad), want.backward(grad)
    torch.testing.assert_close(mine.grad, ref.grad)
    assert mc.metrics.eager_fallbacks == 0
    if backend == "cpp" and layout != "channels_last":  # (there, a flat loop adds atomically)
        backward = graphs[-1].source
        assert "max_pool2d_with_indices_backward" in backward
        assert "const bool shared = false;" in backward  # its adds: plain, its rows its own


def test_max_pool_bfloat16(kernel_backend):
    fn = lambda t: F.max_pool2d(t, 3, 2, 1)  # noqa: E731
    x = torch.randn(2, 4, 12, 10, dtype=torch.bfloat16)
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(x), fn(x))


def test_max_pool_of_integers_pads_with_the_lowest_integer(kernel_backend):
    """Padding is the dtype's lowest value: -inf has no integer (a window of negative values
    next to the padding must not see a 0 there)."""
    fn = lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True)  # noqa: E731
    x = torch.randint(-2**40, -1, (1, 2, 7, 8))
    if x.is_cuda:
        pytest.skip("eager's CUDA max_pool2d takes floating-point tensors only")
    (values, indices), (want, want_indices) = mc.compile(fn, backend="inductor")(x), fn(x)
    assert torch.equal(values, want) and torch.equal(indices, want_indices)


def test_inference_computes_the_maxima_alone_with_the_fewest_bounds_tests(kernel_backend):
    """No index bookkeeping where nothing reads the indices (one buffer, no ``isnan``), and of a
    3x3 stride-2 window with padding 1 over an even size, only the elements of its first row or
    column (5 of 9) can fall into the padding: the 4 others load unmasked."""
    _, graphs = kernel_backend
    fn = lambda t: F.max_pool2d(t, 3, 2, 1)  # noqa: E731
    x = torch.randn(2, 3, 16, 12)
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(x), fn(x))
    buffers = graphs[0].graph.buffers
    assert len(buffers) == 1, [b.describe() for b in buffers]
    printer = PrintHandler(buffers[0].var_ranges())
    with set_ops_handler(printer):
        buffers[0].store_output(*buffers[0].index_vars())
    body = "\n".join(line for _, line in printer.lines)
    assert "isnan" not in body and body.count("load(") == 9
    assert body.count("# masked") == 5, body
