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
