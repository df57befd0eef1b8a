"""Kernel strategies chosen from a loop nest's structure (the pattern suite's shapes): each test
runs on the C++ backend and on Triton (``TRITON_INTERPRET=1``), checks against eager on odd
sizes and non-contiguous inputs, and checks that the strategy really shows in the generated
source (a test that passes by falling back to eager would prove nothing)."""

from __future__ import annotations

import os
import shutil

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from minicompile import config
from minicompile.inductor.codegen import cpp_build
from minicompile.inductor.codegen.wrapper import WrapperCodeGen

BACKENDS = ["cpp", "triton"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    if request.param == "triton":
        pytest.importorskip("triton")
        if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
            pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1")
    elif shutil.which(cpp_build.CXX) is None:
        pytest.skip("no C++ compiler")
    monkeypatch.setattr(config.inductor, "cpu_backend", request.param)
    mc.reset()
    mc.metrics.reset()
    yield request.param
    mc.reset()


@pytest.fixture
def sources(monkeypatch) -> list[str]:
    """The source of every kernel defined while the test runs."""
    seen: list[str] = []
    define = WrapperCodeGen.define_kernel

    def record(self, name, kernel, source):
        seen.append(source)
        return define(self, name, kernel, source)

    monkeypatch.setattr(WrapperCodeGen, "define_kernel", record)
    return seen


def check(fn, *args, rtol=1e-4, atol=1e-5, **compile_kwargs):
    compiled = mc.compile(fn, backend="inductor", **compile_kwargs)
    torch.testing.assert_close(compiled(*args), fn(*args), rtol=rtol, atol=atol, equal_nan=True)
    assert mc.metrics.eager_fallbacks == 0
    return compiled


def _calls_pow(source: str) -> bool:
    return "mc::pow(" in source or "libdevice.pow(" in source


# --- x ** n as multiplications --------------------------------------------------------------------

@pytest.mark.parametrize("exponent", [2, 3, 3.0, -2, 7, 0.5])
def test_small_integer_power_is_multiplications(backend, sources, exponent):
    x = torch.randn(37, 29).abs() + 0.5
    check(lambda x: x ** exponent - 1, x)
    assert sources and not any(_calls_pow(s) for s in sources), sources


def test_other_powers_still_call_pow(backend, sources):
    x = torch.rand(37, 29) + 0.5
    check(lambda x: x ** 2.5 + x ** 40, x, rtol=1e-4, atol=1e-4)
    assert any(_calls_pow(s) for s in sources)


def test_gelu_tanh_matches_eager(backend):
    x, b = torch.randn(129, 77) * 4, torch.randn(77)
    check(lambda x, b: F.gelu(x + b, approximate="tanh"), x, b)
    check(lambda x: F.gelu(x.t(), approximate="tanh"), torch.randn(33, 65))  # non-contiguous


# --- outer reductions: the kept dim contiguous --------------------------------------------------

@pytest.fixture
def launchers(monkeypatch) -> list:
    """Every kernel object defined while the test runs (Triton: its launcher)."""
    seen: list = []
    define = WrapperCodeGen.define_kernel

    def record(self, name, kernel, source):
        seen.append(kernel)
        return define(self, name, kernel, source)

    monkeypatch.setattr(WrapperCodeGen, "define_kernel", record)
    return seen


@pytest.mark.parametrize("fn, x, hint", [
    (lambda x: x.sum(0), torch.randn(67, 33), "outer"),              # persistent
    (lambda x: x.amax(0), torch.randn(3001, 35), "outer"),           # looped
    (lambda x: x.t().sum(-1), torch.randn(67, 33), "outer"),         # a transposed view
    (lambda x: x.sum(-1), torch.randn(67, 33), "inner"),
    (lambda x: x.sum((0, 2)), torch.randn(3, 5, 2001), "inner"),     # rows contiguous in parts
    (lambda x: torch.var_mean(x, (0, 2, 3)),                         # channels-last statistics
     torch.randn(4, 8, 5, 7).to(memory_format=torch.channels_last), "outer"),
])
def test_reduction_hint_from_load_strides(backend, launchers, fn, x, hint):
    check(fn, x, rtol=1e-4, atol=1e-4)
    if backend == "triton":
        assert launchers[0].hint == hint
        assert ("# outer reduction" in launchers[0].source) == (hint == "outer")


def test_outer_reduction_dynamic_and_strided(backend):
    f = lambda x: (x * 2).sum(0)  # noqa: E731
    compiled = mc.compile(f, dynamic=True)
    for x in (torch.randn(37, 21), torch.randn(129, 45), torch.randn(64, 90)[:, ::3]):
        torch.testing.assert_close(compiled(x), f(x), rtol=1e-4, atol=1e-4)


def test_outer_configs_are_wide_in_x(monkeypatch):
    """On a GPU an outer reduction's candidates own many adjacent kept elements (coalesced
    loads), an inner one's one row each in long blocks."""
    pytest.importorskip("triton")
    from minicompile.inductor.runtime import triton_heuristics as th

    monkeypatch.setattr(th, "INTERPRET", False)
    for kind, r in (("looped", 8192), ("persistent", 512)):
        outer = th.candidate_configs(kind, 8192, r, "outer")
        assert outer and all(c.XBLOCK >= 8 for c in outer), outer
        assert all(c.XBLOCK * c.RBLOCK <= 8192 for c in outer)
    assert th.candidate_configs("looped", 8192, 8192)[0].XBLOCK == 1
    assert th.candidate_configs("looped", 256, 100_000, "outer")  # few columns: still one
