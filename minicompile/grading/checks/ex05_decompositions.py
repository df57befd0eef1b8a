"""Checks for exercises/ex05_decompositions.py (notebook 05: decompositions)."""

from __future__ import annotations

import torch
from torch._subclasses import FakeTensorMode

from minicompile.aot_autograd import trace_graph
from minicompile.decompositions import core_aten_ops_used, decomposition_table
from minicompile.grading import exercise

aten = torch.ops.aten


def _traced_ops(op, fn, example: torch.Tensor, *args) -> set:
    """Trace ``op(example, *args)`` with ``fn`` as its decomposition: the ops left."""
    table = dict(decomposition_table)
    table[op] = fn
    gm, _ = trace_graph(lambda x: op(x, *args), [example], [False], FakeTensorMode(), table,
                        joint=False)
    report = core_aten_ops_used(gm)
    assert not report["non_core"], f"non-core ops left: {report['non_core']}"
    return set(report["core"])


def _inputs():
    torch.manual_seed(0)
    return [torch.randn(13, 7), torch.randn(4, 5, 9) * 3, torch.randn(9, 6).t()]  # odd, strided


@exercise("5.1", points=10, hint="0.5 * x * (1 + erf(x * (1/sqrt 2))); the tanh form uses "
                                 "aten.pow.Tensor_Scalar(x, 3)")
def check_gelu(sol):
    """Decompose gelu (erf and tanh forms)"""
    for x in _inputs():
        for approx in ("none", "tanh"):
            torch.testing.assert_close(sol.gelu(x, approx), torch.nn.functional.gelu(
                x, approximate=approx), msg=lambda m: f"gelu(approximate={approx!r})\n{m}")
    ops = _traced_ops(aten.gelu.default, sol.gelu, torch.randn(5, 3))
    assert "aten.gelu.default" not in ops and "aten.erf.default" in ops, ops


@exercise("5.2", points=10, hint="m = aten.amax.default(x, [dim], True); return "
                                 "(x - m) - log(sum(exp(x - m), [dim], keepdim=True))")
def check_log_softmax(sol):
    """Decompose log_softmax, numerically stable"""
    for x in _inputs() + [torch.randn(5, 8) * 10 + 1000]:  # exp(1000) overflows without the max
        for dim in range(x.dim()):
            got = sol.log_softmax(x, dim, False)
            assert torch.isfinite(got).all(), "not finite: subtract the max before exp"
            torch.testing.assert_close(got, torch.log_softmax(x, dim))
    ops = _traced_ops(aten._log_softmax.default, sol.log_softmax, torch.randn(5, 3), 1, False)
    assert "aten._log_softmax.default" not in ops, ops


@exercise("5.3", points=10, hint="dims = the last len(normalized_shape) dims; keepdim=True "
                                 "sums; var is biased (divide by N); rstd = rsqrt(var + eps)")
def check_native_layer_norm(sol):
    """Decompose layer_norm's forward (out, mean, rstd)"""
    for x in _inputs():
        for shape in ([x.shape[-1]], list(x.shape[-2:])):
            w, b = torch.randn(shape), torch.randn(shape)
            for weight, bias in ((w, b), (None, None)):
                got = sol.native_layer_norm(x, shape, weight, bias, 1e-5)
                want = aten.native_layer_norm.default(x, shape, weight, bias, 1e-5)
                assert len(got) == 3, "return (out, mean, rstd)"
                for g, w_, what in zip(got, want, ("out", "mean", "rstd")):
                    torch.testing.assert_close(g, w_, atol=1e-5, rtol=1e-4,
                                               msg=lambda m: f"{what} for shape {shape}\n{m}")
    ops = _traced_ops(aten.native_layer_norm.default, sol.native_layer_norm, torch.randn(5, 3),
                      [3], None, None, 1e-5)
    assert "aten.native_layer_norm.default" not in ops, ops
