"""The reference executor and compile_fx: symbolic sizes, run-time layouts, and the model zoo
forward and backward through the whole inductor backend (AOT autograd + lowering + scheduler)."""

import pytest
import torch
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

from minicompile.inductor.backend import inductor
from minicompile.inductor.compile_fx import compile_fx_inner
from minicompile.inductor.executor import GraphExecutor
from minicompile.inductor.graph import GraphLowering

try:  # tests/ on sys.path (rootdir-relative) or tests as a package
    from models import MODELS
except ImportError:
    from tests.models import MODELS


def test_one_graph_many_sizes():
    fn = lambda x, y: ((x * 2 + y).cos().sum(0), x.t().reshape(-1))  # noqa: E731
    gm = make_fx(fn, decomposition_table=core_aten_decompositions(),
                 tracing_mode="symbolic")(torch.randn(5, 7), torch.randn(7))
    graph = GraphLowering(gm).run()
    assert any(s.free_symbols for b in graph.buffers for s in b.get_size())
    run = GraphExecutor(graph)
    for n, m in [(5, 7), (3, 11), (17, 2)]:
        x, y = torch.randn(n, m), torch.randn(m)
        torch.testing.assert_close(run(x, y), fn(x, y))


def test_runtime_layout_mismatch_is_copied_not_misread():
    fn = lambda x: x * 2 + 1  # noqa: E731
    compiled = compile_fx_inner(make_fx(fn)(torch.randn(6, 4)), [torch.randn(6, 4)])
    x = torch.randn(4, 6).t()  # same shape, different strides
    torch.testing.assert_close(compiled(x), fn(x))


def test_compile_fx_inner_uses_scheduler_when_present():
    fn = lambda x: (x.cos() * 2).sum(1)  # noqa: E731
    x = torch.randn(9, 5)
    compiled = compile_fx_inner(make_fx(fn)(x), [x])
    torch.testing.assert_close(compiled(x), fn(x))
    assert compiled.graph.buffers


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_forward_and_backward(name):
    model, inputs = MODELS[name]()
    compiled = inductor(torch.fx.symbolic_trace(model), list(inputs))
    out = compiled(*inputs)
    out = out[0] if isinstance(out, (list, tuple)) else out
    ref = model(*inputs)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    params = list(model.parameters())
    grads = torch.autograd.grad(out.sum(), params)
    torch.testing.assert_close(grads, torch.autograd.grad(ref.sum(), params), rtol=1e-4,
                               atol=1e-4)
