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


# --- dynamic shapes through mc.compile(backend="inductor") ---------------------------------------
def _compiles(fn, make_args, sizes=(5, 9, 4)):
    """Run ``fn`` compiled with dynamic=True at each size; check against eager and return
    (frames compiled, graphs compiled by compile_fx_inner)."""
    import minicompile as mc
    from minicompile.inductor.compile_fx import counters

    before = counters["graphs"]
    cf = mc.compile(fn, backend="inductor", dynamic=True)
    for n in sizes:
        args = make_args(n)
        torch.testing.assert_close(cf(*args), fn(*args), rtol=1e-4, atol=1e-5)
    assert mc.metrics.eager_fallbacks == 0
    return mc.metrics.frames_compiled, counters["graphs"] - before


DYNAMIC_CASES = {
    "softmax": (lambda x: torch.softmax(x, -1), lambda n: (torch.randn(n, 13),)),
    "layer_norm": (lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:]),
                   lambda n: (torch.randn(3, n, 11),)),
    "sum_dim0": (lambda x: x.sum(0) * x.shape[0], lambda n: (torch.randn(n, n + 2),)),
    "view_reshape": (lambda x: (x.reshape(-1) + 1).view(x.shape[1], -1).t() * 2,
                     lambda n: (torch.randn(n, 6),)),
    "softmax_dim0": (lambda x: torch.softmax(x, 0) * 2, lambda n: (torch.randn(n, 7),)),
    "non_contiguous": (lambda x, y: (x + y).cos().sum(1), lambda n: (
        torch.randn(7, n).t(), torch.randn(7))),
}


@pytest.mark.parametrize("name", sorted(DYNAMIC_CASES))
def test_dynamic_one_compile_serves_every_size(name):
    fn, make_args = DYNAMIC_CASES[name]
    frames, graphs = _compiles(fn, make_args)
    assert (frames, graphs) == (1, 1)


def test_reordered_reduction_forward_and_backward():
    """softmax over dim 0 is one kernel forward, and its backward matches eager."""
    import minicompile as mc

    fn = lambda x: torch.log_softmax(x, 0) * torch.arange(7.0)  # noqa: E731
    cf = mc.compile(fn, backend="inductor")
    x = torch.randn(11, 7, requires_grad=True)
    out, ref = cf(x), fn(x)
    torch.testing.assert_close(out, ref)
    grad, ref_grad = (torch.autograd.grad(o.sum(), x)[0] for o in (out, ref))
    torch.testing.assert_close(grad, ref_grad)


def test_dynamic_graph_has_symbols_and_bytes_at_the_hints():
    import minicompile as mc

    cf = mc.compile(lambda x: torch.softmax(x, -1), backend="inductor", dynamic=True)
    cf(torch.randn(5, 13))
    # one kernel reads x and writes the result: 2 * 5 * 13 float32 at the traced sizes
    assert mc.metrics.num_bytes_accessed == 2 * 5 * 13 * 4
    cf(torch.randn(9, 13))  # no recompile: the count stays the formula at the traced hints
    assert mc.metrics.frames_compiled == 1 and mc.metrics.num_bytes_accessed == 2 * 5 * 13 * 4


@pytest.mark.parametrize("name", ["layernorm_residual", "softmax_attention", "cross_entropy_step"])
def test_dynamic_model_forward_and_backward(name):
    import minicompile as mc
    from minicompile.inductor.compile_fx import counters

    before = dict(counters)
    model, inputs = MODELS[name]()
    cf = mc.compile(model, backend="inductor", dynamic=True)
    for n in (5, 9, 4):
        shape = list(inputs[0].shape)
        shape[-2 if len(shape) == 3 else 0] = n
        x = torch.randn(*shape, requires_grad=True)
        args = (x, torch.randint(0, 13, (n,))) if name == "cross_entropy_step" else (x,)
        out, ref = cf(*args), model(*args)
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
        grad, ref_grad = (torch.autograd.grad(o.sum(), x)[0] for o in (out, ref))
        torch.testing.assert_close(grad, ref_grad, rtol=1e-4, atol=1e-5)
    assert mc.metrics.frames_compiled == 1 and mc.metrics.eager_fallbacks == 0
    # one forward and one backward graph, both symbolic, served all three sizes
    assert counters["graphs"] - before.get("graphs", 0) == 2
    assert counters["symbolic_graphs"] - before.get("symbolic_graphs", 0) == 2


def test_logs_tell_one_story_per_graph():
    """MINICOMPILE_LOGS=ir_pre_fusion,ir_post_fusion,fusion: each graph's three artifacts once,
    in pipeline order, titled with the graph's name."""
    import logging

    import minicompile as mc
    from minicompile._logging import set_logs

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    root = logging.getLogger("minicompile")
    root.addHandler(handler)
    set_logs("ir_pre_fusion", "ir_post_fusion", "fusion")
    try:
        cf = mc.compile(lambda x: (x.cos() * 2).sum(1), backend="inductor")
        cf(torch.randn(5, 7, requires_grad=True)).sum().backward()
    finally:
        set_logs()
        root.removeHandler(handler)
    titles = [r.splitlines()[0] for r in records]
    assert len(titles) == 6  # nothing logged twice
    for kind in ("forward", "backward"):
        mine = [t for t in titles if t.startswith(kind)]
        assert [t.split(": ")[1] for t in mine] == [
            "loop IR before fusion", "fusion decisions", "kernels after fusion"]
    assert "# graph passes:" in records[0] and "for i0 in range(5)" in records[0]


def test_folded_constant_is_read_like_an_input():
    """``y[0] = 0`` writes a constant tensor, folded into a constant buffer: the scheduler reads
    (and counts) it like an input rather than falling back to eager."""
    import minicompile as mc

    def fn(x):
        y = x.clone()
        y[0] = 0
        return y.add_(1)

    x = torch.randn(3)
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(x), fn(x))
    assert mc.metrics.eager_fallbacks == 0 and mc.metrics.num_bytes_accessed > 0


def test_an_index_outside_its_buffer_is_an_error_naming_the_buffer():
    """A lowering whose index leaves its input (a learner's exercise, a bug) raises IndexError
    with the buffer and index, on every device: CUDA would end the process's context with a
    device-side assert instead of raising."""
    from minicompile.inductor.executor import execute
    from minicompile.inductor.ir import InputBuffer, Layout, Pointwise

    x = torch.randn(5, 7)
    buf = InputBuffer("x", Layout(x.device, x.dtype, list(x.shape), list(x.stride())))
    load = buf.make_loader()
    shifted = Pointwise(x.device, x.dtype, lambda idx: load([idx[0] + 1, idx[1]]), [5, 7])
    message = r"reads x at 7\*i0 \+ i1 \+ 7: element 41, outside its 35 elements"
    with pytest.raises(IndexError, match=message):
        execute(shifted, {"x": x})
    inside = Pointwise(x.device, x.dtype, lambda idx: load([idx[0], idx[1]]), [5, 7])
    torch.testing.assert_close(execute(inside, {"x": x}), x)
