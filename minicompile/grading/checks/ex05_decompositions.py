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
    """Odd sizes, a strided view, and float64 (a decomposition must keep its input's dtype)."""
    torch.manual_seed(0)
    return [torch.randn(13, 7), torch.randn(4, 5, 9) * 3, torch.randn(9, 6).t(),
            torch.randn(6, 5, dtype=torch.float64)]


def _far_apart_rows() -> torch.Tensor:
    """Rows (and columns) whose logits lie far apart: exp(x - one global max) underflows to 0
    for every row far below the largest, and log(0) is -inf."""
    offsets = torch.tensor([[0.0], [1000.0], [-1000.0], [200.0], [-50.0]])
    return torch.randn(5, 8) + offsets + torch.linspace(-300, 300, 8)


@exercise("5.1", points=10, hints=(
    "Write the formula with aten ops only: each arithmetic step is one aten call.",
    "A Python number works as the second operand of aten.mul.Tensor and aten.add.Tensor.",
    "The result must keep the input's dtype: float64 in, float64 out.",
))
def check_gelu(sol):
    """Decompose gelu (erf and tanh forms)"""
    for x in _inputs():
        for approx in ("none", "tanh"):
            torch.testing.assert_close(sol.gelu(x, approx), torch.nn.functional.gelu(
                x, approximate=approx), msg=lambda m: f"gelu(approximate={approx!r})\n{m}")
    ops = _traced_ops(aten.gelu.default, sol.gelu, torch.randn(5, 3))
    assert "aten.gelu.default" not in ops and "aten.erf.default" in ops, ops


@exercise("5.2", points=10, hints=(
    "exp of a large logit overflows: shift the logits before exponentiating.",
    "The shift may be any value per row; which one makes the largest exp equal to 1?",
    "The shift must be per row (along dim): one value for the whole tensor underflows "
    "rows far below it.",
))
def check_log_softmax(sol):
    """Decompose log_softmax, numerically stable"""
    for x in _inputs() + [torch.randn(5, 8) * 10 + 1000, _far_apart_rows()]:  # exp(1000) overflows
        for dim in range(x.dim()):
            got = sol.log_softmax(x, dim, False)
            assert torch.isfinite(got).all(), (
                f"log_softmax over dim {dim} of a {tuple(x.shape)} input is not finite where "
                f"eager's is: {got[~torch.isfinite(got)][:4].tolist()} ... (the largest logits "
                f"along dim {dim} are {[round(v, 1) for v in x.amax(dim).tolist()]})")
            torch.testing.assert_close(got, torch.log_softmax(x, dim))
    ops = _traced_ops(aten._log_softmax.default, sol.log_softmax, torch.randn(5, 3), 1, False)
    assert "aten._log_softmax.default" not in ops, ops


@exercise("5.3", points=10, hints=(
    "Reduce over the last len(normalized_shape) dims, keeping them as size 1.",
    "The variance is biased: divide by N, not N - 1.",
    "Where does eps go? Compare with the definition of layer norm: rstd is 1 / sqrt(var +"
    " eps).",
))
def check_native_layer_norm(sol):
    """Decompose layer_norm's forward (out, mean, rstd)"""
    small_variance = torch.randn(6, 10) * 0.05  # where eps matters: var ~ 0.0025
    for x in _inputs() + [small_variance]:
        for shape in ([x.shape[-1]], list(x.shape[-2:])):
            w, b = torch.randn(shape, dtype=x.dtype), torch.randn(shape, dtype=x.dtype)
            for (weight, bias), eps in (((w, b), 1e-5), ((None, None), 1e-5), ((w, b), 0.1)):
                got = sol.native_layer_norm(x, shape, weight, bias, eps)
                want = aten.native_layer_norm.default(x, shape, weight, bias, eps)
                assert len(got) == 3, "return (out, mean, rstd)"
                for g, w_, what in zip(got, want, ("out", "mean", "rstd")):
                    torch.testing.assert_close(g, w_, atol=1e-5, rtol=1e-4, msg=lambda m: (
                        f"{what} for a {x.dtype} input of {tuple(x.shape)} normalized over "
                        f"{shape}, eps={eps}\n{m}"))
    ops = _traced_ops(aten.native_layer_norm.default, sol.native_layer_norm, torch.randn(5, 3),
                      [3], None, None, 1e-5)
    assert "aten.native_layer_norm.default" not in ops, ops
