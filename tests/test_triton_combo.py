"""Combo kernels (minicompile/inductor/codegen/triton_combo.py): consecutive independent
pointwise kernels of static sizes launched as one. An optimizer step's per-parameter updates are
the case they are for; every result is compared with eager, and with the same compile with
combo kernels off. Runs the Triton kernels under ``TRITON_INTERPRET=1`` on CPU tensors (conftest
sets it), or compiled on the GPU with ``MINICOMPILE_TEST_DEVICE=cuda``."""

import copy
import os

import pytest
import torch

import minicompile as mc
from minicompile import config
from minicompile.inductor.codegen import triton_combo
from minicompile.inductor.codegen.wrapper import WrapperCodeGen

pytest.importorskip("triton")

DEVICE = os.environ.get("MINICOMPILE_TEST_DEVICE", "cpu")


@pytest.fixture(autouse=True)
def triton_everywhere(monkeypatch):
    if DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1")
    monkeypatch.setattr(config.inductor, "cpu_backend", "triton")


@pytest.fixture
def sources(monkeypatch):
    """name -> source of every kernel defined while the test runs."""
    seen: dict[str, str] = {}
    define = WrapperCodeGen.define_kernel

    def record(self, name, kernel, source):
        seen[name] = source
        return define(self, name, kernel, source)

    monkeypatch.setattr(WrapperCodeGen, "define_kernel", record)
    return seen


def sgd_step(params, grads, bufs):
    torch._foreach_mul_(bufs, 0.9)
    torch._foreach_add_(bufs, grads)
    torch._foreach_add_(params, bufs, alpha=-0.1)


def tensors(shapes, seed):
    torch.manual_seed(seed)
    return [torch.randn(s, device=DEVICE) for s in shapes]


SHAPES = [(33, 17), (17,), (5, 33), (5,), (1000,), (3, 7, 2), ()]


def run_step(shapes):
    """The step compiled, on tensors of these shapes, against eager's."""
    args = [tensors(shapes, k) for k in range(3)]
    expected = copy.deepcopy(args)
    sgd_step(*expected)
    mc.compile(sgd_step, backend="inductor")(*args)
    torch.testing.assert_close(args, expected)


def test_optimizer_step_is_one_launch_for_its_parameters(sources):
    run_step(SHAPES)
    combos = [s for n, s in sources.items() if n.startswith("triton_combo")]
    assert len(combos) == 1  # the seven parameters' updates, one kernel
    assert combos[0].count("@triton.jit") == len(SHAPES) + 1  # the parts, and the dispatcher


def test_combo_kernels_off_gives_one_launch_per_kernel(sources, monkeypatch):
    monkeypatch.setattr(config.inductor, "combo_kernels", False)
    run_step(SHAPES)
    assert not any(n.startswith("triton_combo") for n in sources)
    assert len(sources) == len(SHAPES)


def test_parts_per_combo_are_bounded(sources):
    run_step([(k + 2,) for k in range(triton_combo.MAX_PARTS + 5)])
    combos = [s for n, s in sources.items() if n.startswith("triton_combo")]
    assert len(combos) == 2
    assert max(s.count("@triton.jit") - 1 for s in combos) == triton_combo.MAX_PARTS


def chained(x, y, z):
    """Kernels of different sizes, each reading what the one before wrote: none may run at the
    same time as the one it reads (a part reading another part's output would read it before
    it is written)."""
    a = (x * 2).exp()  # 29 elements
    b = y + a[:13].sum()  # 13: a reduction of a between them
    c = (z * b[3]).sin()  # 7
    return a, b, c


def writes_then_reads(x, y):
    """An input written in place, then read by a kernel of another size."""
    x.mul_(2)
    return y * x[:5].cos().reshape(5, 1)


@pytest.mark.parametrize("fn, shapes", [(chained, [(29,), (13,), (7,)]),
                                        (writes_then_reads, [(9,), (5, 4)])])
def test_dependent_kernels_are_right(fn, shapes):
    args = tensors(shapes, 0)
    twins = copy.deepcopy(args)
    # (sums of exponentials, then a sine of their multiple: float32 rounding of the order
    # a kernel sums in moves the last digits)
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(*twins), fn(*args),
                               rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(twins, args)


def reads_a(x, y):
    a = x.sin() * 3  # returned: a kernel of its own, 3000 elements
    b = (y[:1000] + a[2000:]).cos()  # 1000 elements, reading a
    return a, b


def reads_y(x, y):
    a = x.sin() * 3
    b = (y[:1000] + y[2000:]).cos()  # the same sizes, not reading a
    return a, b


@pytest.mark.parametrize("fn, combined", [(reads_a, False), (reads_y, True)])
def test_a_kernel_reading_another_is_not_its_part(fn, combined, sources):
    """Under the interpreter a combo kernel's programs run one after another, so a part reading
    another's output would still read it written: the decision itself is checked here."""
    args = tensors([(3000,), (3000,)], 1)
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(*args), fn(*args))
    assert any(n.startswith("triton_combo") for n in sources) == combined
