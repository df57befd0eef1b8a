"""The OpInfo sweep (minicompile/fuzz/opinfo.py) over a committed subset of PyTorch's op_db: each
op's own sample inputs, compiled and compared with eager, must pass or fall back to eager, never
compute something else or crash. The full sweep is ``python -m minicompile.fuzz.opinfo``; this
subset is ops that pass today and the ops whose fixes the sweep led to. The first tests prove the
sweep's checks catch a wrong, crashing or hanging compile, so the subset can fail."""

from __future__ import annotations

import os
import time

import pytest
import torch

import minicompile as mc
from minicompile.fuzz.opinfo import Request, check_request, op_table, summary, sweep

pytestmark = pytest.mark.cpu_only  # OpInfo's samples are made on the CPU here

# (op_db name, dtype): the float32 samples of most, and int64 / bool where the op's point is an
# integer or a predicate. op_db differs between torch releases: a name missing from the running
# one is skipped with that reason, never silently.
CPP_CASES = [
    # ops whose fixes the sweep led to (the sample count reaches the sample that found it)
    ("where", "float32"), ("expand", "float32"), ("contiguous", "float32"),
    ("sum_to_size", "float32"), ("nn.functional.embedding", "float32"),  # torch.testing lambdas
    ("baddbmm", "int64", 4), ("addmm", "int64"), ("nn.functional.hardtanh", "int64"),
    ("__rpow__", "int64"), ("var_mean.unbiased", "float32", 4), ("std.unbiased", "bfloat16", 4),
    ("__radd__", "float32"), ("__getitem__", "float32"), ("angle", "float32"),
    ("nn.functional.layer_norm", "float32"), ("roll", "float32"),
    # pointwise
    ("add", "float32"), ("mul", "int64"), ("sub", "bfloat16"), ("div.no_rounding_mode", "float32"),
    ("div.floor_rounding", "int64"), ("remainder", "float32"), ("fmod", "int64"),
    ("pow", "float32"), ("atan2", "float64"), ("abs", "int64"), ("exp", "float32"),
    ("log1p", "float64"), ("sigmoid", "float32"), ("tanh", "bfloat16"), ("rsqrt", "float32"),
    ("erf", "float32"), ("nn.functional.gelu", "float32"), ("nn.functional.silu", "float32"),
    ("nn.functional.softplus", "float32"), ("clamp", "float32"), ("lerp", "float32"),
    ("addcmul", "float32"), ("bitwise_xor", "int64"), ("floor_divide", "int64"),
    ("logical_and", "bool"), ("eq", "float32"), ("where", "int64"), ("masked_fill", "float32"),
    # reductions and scans
    ("sum", "float32"), ("mean", "float64"), ("amax", "float32"), ("argmax", "float32"),
    ("prod", "float32"), ("logsumexp", "float32"), ("softmax", "float32"),
    ("log_softmax", "float32"), ("cumsum", "float32"), ("var", "float32"),
    ("std_mean", "float32"), ("cummax", "float32"), ("topk", "float32"), ("sort", "float32"),
    # normalisation and losses
    ("nn.functional.group_norm", "float32"), ("nn.functional.batch_norm", "float32"),
    ("nn.functional.cross_entropy", "float32"), ("nn.functional.nll_loss", "float32"),
    # matrix products, convolutions, pooling, resampling
    ("mm", "float32"), ("bmm", "float32"), ("matmul", "float32"), ("nn.functional.linear", "float32"),
    ("nn.functional.conv2d", "float32"), ("nn.functional.max_pool2d", "float32"),
    ("nn.functional.avg_pool2d", "float32"), ("nn.functional.adaptive_avg_pool2d", "float32"),
    ("nn.functional.interpolate.bilinear", "float32"), ("nn.functional.pad.reflect", "float32"),
    # views, copies and indexing
    ("cat", "float32"), ("stack", "int64"), ("permute", "float32"), ("transpose", "float32"),
    ("flip", "float32"), ("tril", "float32"), ("repeat", "float32"), ("unfold", "float32"),
    ("gather", "float32"), ("scatter_add", "float32"), ("index_add", "float32"),
    ("index_put", "float32"), ("take_along_dim", "float32"),
]
# ops that ran (partly) eagerly before the sweep's fixes: each of their cases must now compile
MUST_COMPILE = {"__radd__", "__getitem__", "angle", "nn.functional.layer_norm", "roll", "mean",
                "where", "expand", "contiguous", "sum_to_size"}
# a few on the Triton backend (its interpreter on CPU tensors is slower)
TRITON_CASES = [
    ("__rpow__", "int64"), ("add", "float32"), ("where", "float32"), ("softmax", "float32"),
    ("sum", "int64"), ("var_mean.unbiased", "float32", 4), ("cumsum", "float32"),
    ("nn.functional.hardtanh", "int64"),
]
# with dynamic=True (``--dynamic``): every size a symbol in the graphs, guards and kernels
DYNAMIC_CASES = [
    # ops whose fixes the dynamic sweep led to
    ("_upsample_bilinear2d_aa", "float32", 3), ("nn.functional.upsample_nearest", "float32", 3),
    ("column_stack", "float32"), ("block_diag", "float32"), ("index_select", "float32"),
    ("quantile", "float32"), ("std_mean", "float32", 6),  # (#5: correction=1.3)
    # a few of each kind
    ("add", "float32"), ("where", "float32"), ("sum", "float32"), ("softmax", "float32"),
    ("cat", "float32"), ("matmul", "float32"), ("nn.functional.conv2d", "float32"),
    ("nn.functional.max_pool2d", "float32"), ("gather", "float32"), ("cumsum", "float32"),
]
DYNAMIC_MUST_COMPILE = {"_upsample_bilinear2d_aa", "column_stack", "block_diag", "index_select",
                        "quantile"}
SAMPLES, GRAD_SAMPLES = 2, 1


def run_case(name: str, dtype: str, backend: str, samples: int = SAMPLES,
             dynamic: bool = False) -> None:
    if name not in op_table():
        pytest.skip(f"{name} is not in op_db of torch {torch.__version__}")
    if getattr(torch, dtype) not in op_table()[name].supported_dtypes("cpu"):
        pytest.skip(f"{name} does not support {dtype} on the CPU in torch {torch.__version__}")
    results = check_request(Request(name, dtype, backend, samples, GRAD_SAMPLES,
                                    dynamic=dynamic))
    assert results, f"{name} ran no sample"
    must = DYNAMIC_MUST_COMPILE if dynamic else MUST_COMPILE
    allowed = ("pass",) if name in must else ("pass", "fallback")
    bad = [r for r in results if r.kind not in allowed]
    assert not bad, "\n" + summary(bad) + "".join(f"\n{r.kind}: {r.message}" for r in bad)


def case_id(case: tuple) -> str:
    return "-".join(str(part) for part in case)


@pytest.mark.parametrize("case", CPP_CASES, ids=case_id)
def test_op_on_cpp_backend(case):
    run_case(case[0], case[1], "cpp", *case[2:])


@pytest.mark.parametrize("case", DYNAMIC_CASES, ids=case_id)
def test_op_with_dynamic_shapes(case):
    run_case(case[0], case[1], "cpp", *case[2:], dynamic=True)


@pytest.mark.parametrize("case", TRITON_CASES, ids=case_id)
def test_op_on_triton_backend(case):
    pytest.importorskip("triton")
    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1")
    run_case(case[0], case[1], "triton", *case[2:])


# --- the sweep's checks catch a broken compile -------------------------------------------------

def compile_with(monkeypatch, wrap) -> None:
    """Make the sweep's ``mc.compile(fn)`` return ``wrap(fn)``."""
    monkeypatch.setattr(mc, "compile", lambda fn, **kwargs: wrap(fn))


def kinds(name: str = "add", **request) -> set[str]:
    return {r.kind for r in check_request(Request(name, "float32", "cpp", **request))}


def test_a_wrong_result_is_reported(monkeypatch):
    compile_with(monkeypatch, lambda fn: lambda *a, **k: fn(*a, **k) + 1)
    assert kinds() == {"wrong"}


def test_a_wrong_gradient_is_reported(monkeypatch):
    # the forward is right; the gradient is doubled on the way back
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return 2 * g
    compile_with(monkeypatch, lambda fn: lambda *a, **k: Twice.apply(fn(*a, **k)))
    assert kinds(samples=0, grad_samples=1) == {"wrong"}


def test_an_exception_eager_does_not_raise_is_a_crash(monkeypatch):
    def broken(fn):
        def call(*a, **k):
            raise NotImplementedError("no lowering")
        return call
    compile_with(monkeypatch, broken)
    assert kinds() == {"crash"}


def test_an_eager_run_behind_a_graph_break_is_a_fallback(monkeypatch):
    compile = mc.compile

    def with_break(fn):
        def call(*a, **k):
            torch._dynamo.graph_break()
            return fn(*a, **k)
        return compile(call)
    compile_with(monkeypatch, with_break)
    assert kinds() == {"fallback"}


def test_a_hang_is_a_timeout(monkeypatch):
    def slow(fn):
        def call(*a, **k):
            time.sleep(30)
            return fn(*a, **k)
        return call
    compile_with(monkeypatch, slow)
    assert kinds(samples=1, grad_samples=0, case_timeout=0.5) == {"timeout"}


def test_the_sweep_runs_requests_in_a_worker_process():
    results = sweep([Request("mul", "float32", "cpp", 2, 1), Request("abs", "int64", "cpp", 1)])
    assert [(r.op, r.mode) for r in results] == [
        ("mul", "forward"), ("mul", "forward"), ("mul", "grad"), ("abs", "forward")]
    assert {r.kind for r in results} == {"pass"}


def test_loading_op_db_leaves_torch_backends_flags_settable():
    """torch's test utilities freeze ``torch.backends`` flags when imported; the sweep runs in
    the caller's process (and beside other tests), which must still be able to set them."""
    frozen = torch.backends.flags_frozen()
    op_table()
    assert torch.backends.flags_frozen() == frozen


def record_dynamic_flags(monkeypatch) -> list:
    """The ``dynamic=`` of each ``mc.compile`` the sweep makes from now on."""
    compile, seen = mc.compile, []

    def recording(fn, **kwargs):
        seen.append(kwargs.get("dynamic"))
        return compile(fn, **kwargs)
    monkeypatch.setattr(mc, "compile", recording)
    return seen


def test_a_dynamic_request_compiles_with_symbolic_sizes(monkeypatch):
    seen = record_dynamic_flags(monkeypatch)
    assert kinds(dynamic=True, samples=1, grad_samples=0) == {"pass"}
    assert seen == [True]
    results = check_request(Request("add", "float32", "cpp", 1, 0, dynamic=True))
    assert "float32 dyn" in summary(results)


def test_a_reuse_request_runs_every_sample_on_one_compile(monkeypatch):
    seen = record_dynamic_flags(monkeypatch)
    results = check_request(Request("add", "float32", "cpp", 3, 0, dynamic=True, reuse=True))
    assert [r.kind for r in results] == ["pass"] * 3 and seen == [True]
