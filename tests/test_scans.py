"""Scans (``cumsum``, ``cumprod``, ``logcumsumexp``) as ``ir.Scan`` loop nests: lowered and run by
the reference executor, then compiled for the reference, C++ and Triton (``TRITON_INTERPRET=1``)
backends, against eager on odd sizes, 1-element dims, dims other than the last, 3-D and
non-contiguous inputs, every dtype family eager promotes, and through the backward. Each compiled
case checks that nothing fell back to ATen and that the scan is in the generated code (Triton's
``tl.associative_scan``, C++'s running accumulator), so a test cannot pass by running eager's
``cumsum``."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from conftest import use_cpu_backend
from minicompile.inductor import graph as graph_module
from minicompile.inductor.executor import GraphExecutor
from minicompile.inductor.graph import GraphLowering
from minicompile.inductor.ir import ComputedBuffer


def randn(*shape, dtype=torch.float32):
    return torch.randn(shape).to(dtype)


def ints(*shape, dtype=torch.int32):
    return torch.randint(-4, 5, shape).to(dtype)


def with_infinities(*shape):
    x = torch.randn(*shape)
    x[0, 1], x[-1, :2] = float("inf"), float("-inf")  # inf - inf must not make a NaN
    return x


# (name, fn, input); inputs are made fresh for each run
CASES = [
    ("cumsum_last_odd", lambda a: a.cumsum(-1), lambda: randn(13, 7)),
    ("cumsum_dim0", lambda a: a.cumsum(0), lambda: randn(5, 3)),
    ("cumsum_3d_middle_negative", lambda a: a.cumsum(-2), lambda: randn(3, 5, 4)),
    ("cumsum_one_element_scan", lambda a: a.cumsum(1), lambda: randn(6, 1)),
    ("cumsum_one_row", lambda a: a.cumsum(1), lambda: randn(1, 9)),
    ("cumsum_1d", lambda a: a.cumsum(0), lambda: randn(17)),
    ("cumsum_0d", lambda a: a.cumsum(0), lambda: randn()),
    ("cumsum_empty", lambda a: a.cumsum(1), lambda: randn(3, 0)),
    ("cumsum_transposed", lambda a: a.t().cumsum(1), lambda: randn(7, 5)),
    ("cumsum_float64", lambda a: a.cumsum(1), lambda: randn(4, 9, dtype=torch.float64)),
    ("cumsum_bfloat16", lambda a: a.cumsum(1), lambda: randn(4, 40, dtype=torch.bfloat16)),
    ("cumsum_int32", lambda a: a.cumsum(0), lambda: ints(6, 5)),  # int64 result
    ("cumsum_int64", lambda a: a.cumsum(1), lambda: ints(3, 7, dtype=torch.int64)),
    ("cumsum_bool", lambda a: (a > 0).cumsum(1), lambda: randn(5, 6)),
    ("cumsum_dtype_arg", lambda a: a.cumsum(1, dtype=torch.float64), lambda: randn(3, 5)),
    ("cumprod_last", lambda a: a.cumprod(-1), lambda: randn(5, 6)),
    ("cumprod_dim0_3d", lambda a: a.cumprod(0), lambda: randn(4, 3, 2)),
    ("cumprod_bool", lambda a: (a > 0).cumprod(0), lambda: randn(5, 3)),
    ("cumprod_int32", lambda a: a.cumprod(1), lambda: ints(3, 6)),
    ("logcumsumexp_last", lambda a: a.logcumsumexp(-1), lambda: randn(6, 11)),
    ("logcumsumexp_dim0", lambda a: a.logcumsumexp(0), lambda: randn(7, 3)),
    ("logcumsumexp_infinities", lambda a: a.logcumsumexp(1), lambda: with_infinities(3, 6)),
    ("logcumsumexp_bfloat16", lambda a: a.logcumsumexp(1),
     lambda: randn(3, 9, dtype=torch.bfloat16)),
]
# rows longer than one block (a looped kernel: the running value carried from block to block),
# along the contiguous dim and down columns
LONG_CASES = [
    ("cumsum_long_rows", lambda a: a.cumsum(1), lambda: randn(3, 2500)),
    ("cumsum_long_columns", lambda a: a.cumsum(0), lambda: randn(1300, 5)),
    ("cumprod_long_rows", lambda a: (a * 0.01 + 1).cumprod(1), lambda: randn(2, 1500)),
    ("logcumsumexp_long_rows", lambda a: a.logcumsumexp(1), lambda: randn(2, 1500)),
    ("cumsum_long_bfloat16", lambda a: a.cumsum(1), lambda: randn(2, 1300, dtype=torch.bfloat16)),
]


def tolerance(out: torch.Tensor) -> dict:
    """A float32 running sum drifts with the row (the kernels and eager add in another order);
    a 16-bit output may round the other way at an ulp."""
    if out.dtype in (torch.bfloat16, torch.float16):
        return {"atol": 0.1, "rtol": 2e-2}
    return {"atol": 1e-3, "rtol": 1e-4} if out.dtype == torch.float32 else {}


@pytest.mark.parametrize("name, fn, make", CASES + LONG_CASES,
                         ids=[c[0] for c in CASES + LONG_CASES])
def test_reference_executor_runs_scans(name, fn, make):
    x = make()
    graph = GraphLowering(make_fx(fn)(x)).run()
    assert not graph.fallbacks, graph.fallbacks
    if x.numel() > 1:  # (a scan of one element or none is a copy)
        assert any(isinstance(b, ComputedBuffer) and b.is_scan() for b in graph.buffers)
    expected = fn(x)
    out = GraphExecutor(graph)(x)
    assert out.dtype == expected.dtype
    torch.testing.assert_close(out, expected, equal_nan=True, **tolerance(expected))


def test_scan_prints_as_a_loop_with_a_running_value():
    graph = GraphLowering(make_fx(lambda a: (a * 2).cumsum(0))(randn(4, 3))).run()
    text = str(graph)
    assert "= Scan(sum)" in text and "# scan" in text and "acc = sum(acc, " in text


# --- compiled: the reference, C++ and Triton backends -----------------------------------------

BACKENDS = ["reference", "cpp", "triton"]
SCAN_IN_SOURCE = {"cpp": "(scan ", "triton": "tl.associative_scan("}


def kernels_by(backend: str, x: torch.Tensor) -> str:
    """The backend that writes the kernels: Triton's for CUDA tensors, whichever is asked for
    CPU ones (``MINICOMPILE_TEST_DEVICE=cuda`` puts every test's tensors on the GPU)."""
    return "triton" if x.is_cuda else backend


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    use_cpu_backend(monkeypatch, request.param, needs_interpreter=not torch.cuda.is_available())

    def no_fallback(target, *args, **kwargs):
        raise AssertionError(f"{target} fell back to ATen")

    monkeypatch.setattr(graph_module, "make_fallback", no_fallback)
    mc.reset()
    mc.metrics.reset()
    yield request.param
    mc.reset()


def run_compiled(fn, *args):
    """``fn`` compiled, on ``args``; a backend that fails to build a kernel and falls back to
    the reference backend warns, which fails the test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*reference backend.*")
        out = mc.compile(fn)(*args)
    assert mc.metrics.eager_fallbacks == 0
    return out


def check(backend, sources, fn, x):
    expected = fn(x)
    out = run_compiled(fn, x)
    assert out.dtype == expected.dtype
    torch.testing.assert_close(out, expected, equal_nan=True, **tolerance(expected))
    mark = SCAN_IN_SOURCE.get(kernels_by(backend, x))
    if mark is not None and x.numel() > 1:
        assert any(mark in s for s in sources), sources


# each dtype family, dim, odd and 1-element shape, and op once (the reference executor runs all:
# a compiled case costs a C++ build or an interpreted Triton kernel)
COMPILED = ["cumsum_last_odd", "cumsum_3d_middle_negative", "cumsum_one_element_scan",
            "cumsum_1d", "cumsum_0d", "cumsum_transposed", "cumsum_float64", "cumsum_bfloat16",
            "cumsum_int32", "cumsum_bool", "cumprod_dim0_3d", "logcumsumexp_infinities"]
COMPILED_CASES = [c for c in CASES if c[0] in COMPILED]


@pytest.mark.parametrize("name, fn, make", COMPILED_CASES, ids=[c[0] for c in COMPILED_CASES])
def test_compiled_scans(backend, sources, name, fn, make):
    check(backend, sources, fn, make())


@pytest.mark.parametrize("name, fn, make", LONG_CASES, ids=[c[0] for c in LONG_CASES])
def test_rows_longer_than_a_block(backend, sources, name, fn, make):
    x = make()
    if kernels_by(backend, x) == "triton" and not x.is_cuda and name.startswith("logcumsumexp"):
        pytest.skip("the interpreter calls the combine lane by lane: 14 s (sum and prod test "
                    "the carry, which is the same for every combine)")
    check(backend, sources, fn, x)
    if kernels_by(backend, x) == "triton":  # the looped kernel: a carry from block to block
        assert any("carried from block to block" in s for s in sources), sources


def test_pointwise_work_at_the_scans_elements_shares_its_kernel(backend, sources):
    """A producer and a consumer at the scan's own elements join its loop: one kernel, along
    rows and (its loops reordered to the scan's) down columns."""
    cases = [(lambda a: (a * 2 + 1).cumsum(1).tanh(), randn(6, 1100)),
             (lambda a: a.cumsum(0) * a, randn(1100, 7))]
    for fn, x in cases:
        sources.clear()
        mc.reset()
        check(backend, sources, fn, x)
        if kernels_by(backend, x) in SCAN_IN_SOURCE:
            assert len(sources) == 1, sources


@pytest.mark.parametrize("fn, row", [
    (lambda a: (lambda c: c - c[:, :1])(a.cumsum(1)), 1100),  # each row's first running value
    (lambda a: a.cumsum(1).flip(1) + 1, 1100),  # the last one first
    (lambda a: a.cumsum(1) + a.sum(1, keepdim=True), 40),  # a reduction: the row's total first
    (lambda a: a.cumsum(1).cumsum(1), 40),  # a scan of a scan
], ids=["first_of_row", "flipped", "with_reduction", "scan_of_scan"])
def test_work_at_other_elements_stays_out_of_the_scans_kernel(backend, fn, row):
    """A consumer reading a running value another point computes (in a later block of a long
    row: wrong values if fused) or needing a per-row value or a second scan first (a C++ kernel
    that fails to build if fused): a kernel of its own."""
    x = randn(3, row, dtype=torch.float64)
    torch.testing.assert_close(run_compiled(fn, x), fn(x))


def test_scan_down_columns_walks_rows_in_the_loop(backend, sources):
    """A scan of a non-contiguous dim (``x.cumsum(0)``): C++ loops over the scanned dim outside
    and a tile of kept elements inside (consecutive loads, vectorised); Triton's launcher tiles
    many adjacent kept elements per program (an outer scan)."""
    x = randn(37, 70)
    check(backend, sources, lambda a: a.cumsum(0), x)
    if kernels_by(backend, x) == "cpp":
        (source,) = sources
        assert source.index("for (int64_t rindex") < source.index("for (int64_t xindex")
        assert "acc0[xindex - xblock]" in source
    if kernels_by(backend, x) == "triton":
        assert any("outer scan" in s for s in sources), sources


TRAINING = [
    ("cumsum_dim0", lambda a: (a * 2).cumsum(0)),
    ("cumprod", lambda a: torch.cumprod(a.tanh() + 1, dim=1)),
    ("logcumsumexp", lambda a: torch.logcumsumexp(a, -1)),
]


@pytest.mark.parametrize("name, fn", TRAINING, ids=[c[0] for c in TRAINING])
def test_training_through_scans(backend, sources, name, fn):
    """The backward of each scan is built from scans (a reversed cumsum, ...): gradients match
    eager's, and the backward's kernels scan too."""
    x = randn(5, 9).requires_grad_()
    weight = randn(5, 9)
    out = fn(x)
    (out * weight).sum().backward()
    expected_grad, x.grad = x.grad, None
    compiled_out = run_compiled(fn, x)
    (compiled_out * weight).sum().backward()
    torch.testing.assert_close(compiled_out, out)
    torch.testing.assert_close(x.grad, expected_grad, atol=1e-4, rtol=1e-4)
    mark = SCAN_IN_SOURCE.get(kernels_by(backend, x))
    if mark is not None:
        assert sum(mark in s for s in sources) >= 2, sources


def test_one_compiled_scan_serves_every_size(backend):
    """``dynamic=True``: the rows and their length are size symbols; a looped kernel (the row's
    length is not known when it is written) serves short and long rows alike."""
    fn = lambda a: (a * 2).cumsum(1).sin()  # noqa: E731
    compiled = mc.compile(fn, dynamic=True)
    for shape in [(3, 50), (4, 1100)]:
        x = randn(*shape)
        torch.testing.assert_close(compiled(x), fn(x), atol=1e-3, rtol=1e-4)
    assert mc.metrics.eager_fallbacks == 0
