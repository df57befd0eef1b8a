"""torch.autocast regions traced (variables/misc.py AutocastVariable): the graph holds
``torch.amp._enter_autocast`` / ``_exit_autocast`` nodes as real Dynamo's does, AOT autograd
records the casts the region implies, and every backend gives eager's dtypes and values."""

from __future__ import annotations

import pytest
import torch

import minicompile as mc

with torch.random.fork_rng():  # the same weights whichever test modules were imported first
    torch.manual_seed(0)
    LIN = torch.nn.Linear(8, 8)  # on the test device (MINICOMPILE_TEST_DEVICE)
DEVICE = LIN.weight.device.type


def region(x):
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        y = LIN(x)  # bfloat16 under autocast
        z = y.sigmoid() @ y.t()  # smooth: relu's kink turns one rounding into a jump
    return z.float().sum(), y, z


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_autocast_region_matches_eager(backend):
    x = torch.randn(4, 8, requires_grad=True)
    got, expected = mc.compile(region, backend=backend)(x), region(x)
    # bfloat16 keeps 8 bits, and a decomposed graph rounds in other places than eager's kernels
    # (aot_eager's addmm is an mm and an add, two roundings): elements may differ by a few units
    # in their last place (measured over 300 inputs: 0.031), and the float32 sum of 16 of them by
    # up to 2^-7 of the terms' magnitude (measured: 0.0067 of it)
    assert [g.dtype for g in got] == [e.dtype for e in expected]
    total, z = expected[0], expected[2]
    torch.testing.assert_close(got[0], total, rtol=0, atol=2**-6 * z.float().abs().sum().item())
    for g, e in zip(got[1:], expected[1:]):
        torch.testing.assert_close(g, e, rtol=2e-2, atol=5e-2)
    grad, = torch.autograd.grad(got[0], x)
    torch.testing.assert_close(grad, torch.autograd.grad(total, x)[0], rtol=2e-2, atol=5e-2)
    assert not torch.is_autocast_enabled(DEVICE)  # the region was left


def test_autocast_region_is_one_graph_with_enter_and_exit_nodes():
    explained = mc.explain(region)(torch.randn(4, 8))
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    targets = [n.target for n in explained.graphs[0].graph.nodes]
    assert torch.amp._enter_autocast in targets and torch.amp._exit_autocast in targets


def test_graph_break_inside_autocast_resumes_inside_it():
    def f(x):
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            y = LIN(x)
            print("a break")  # noqa: T201  (a graph break inside the region)
            z = LIN(y.float())
        return y, z

    x = torch.randn(2, 8)
    got, expected = mc.compile(f, backend="eager")(x), f(x)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype == torch.bfloat16
        torch.testing.assert_close(g, e)


def test_disabled_autocast_changes_nothing():
    def f(x):
        with torch.autocast(DEVICE, enabled=False):
            return LIN(x)

    x = torch.randn(2, 8)
    got = mc.compile(f, backend="aot_eager")(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, f(x))


@pytest.mark.parametrize("grad", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_float32_region_inside_the_callers_autocast_stays_float32(backend, grad):
    """The caller's autocast is on and the compiled code turns it off for a matmul. The traced
    graph holds the casts autocast implied, so it is compiled and run with autocast off, its
    backward too (``backward()`` inside the caller's block): under the caller's autocast the
    graph's matmul, an ATen call, would run in bfloat16 again (0.09 off here), and the compiler,
    reading its output's dtype under autocast, would take it for a bfloat16 buffer."""

    def f(a, b):
        with torch.autocast(DEVICE, enabled=False):
            return torch.mm(a, b) + 1

    a, b = torch.randn(64, 64, requires_grad=grad), torch.randn(64, 64)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        got, expected = mc.compile(f, backend=backend)(a, b), f(a, b)
        grads = [torch.autograd.grad(out.sum(), a)[0] for out in (got, expected)] if grad else []
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected)  # float32's tolerance, not bfloat16's
    for g, e in zip(grads[:1], grads[1:]):
        torch.testing.assert_close(g, e)
