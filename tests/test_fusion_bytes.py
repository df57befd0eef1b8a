"""Memory traffic of the scheduled kernels (``mc.metrics.num_bytes_accessed``) equals the
analytical minimum once fused: every input read once, every output written once, and an
intermediate written and read again only when it cannot stay inside a kernel (a library call
reads it, or a reduction needs all of it first). Counts below are in elements; the metric is
bytes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile.inductor.fx_passes import run_graph_passes
from minicompile.inductor.executor import GraphExecutor
from minicompile.inductor.graph import lower_graph
from minicompile.inductor.scheduler import Scheduler


def schedule(fn, *args, fuse=True):
    gm = make_fx(fn, decomposition_table=core_aten_decompositions())(*args)
    run_graph_passes(gm)  # CSE: x.sum(1) written twice is computed once
    graph = lower_graph(gm, list(args))
    s = Scheduler(graph, fuse=fuse)
    out = GraphExecutor(graph, s.ordered_nodes())(*args)  # the schedule computes the right thing
    torch.testing.assert_close(out, fn(*args))
    return s


def r(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


# (name, fn, inputs, elements moved when fused) - float32 unless the dtype says otherwise
CASES = [
    ("cos", lambda x: x.cos(), [r(10)], 10 + 10),
    ("chain x*2+3", lambda x: x * 2 + 3, [r(10)], 10 + 10),  # the seeds' y=x*2; z=y+3
    ("broadcast add", lambda x, y: x + y, [r(10, 10), r(10)], 100 + 10 + 100),
    ("sum dim 1", lambda x: x.sum(dim=1), [r(10, 10)], 100 + 10),
    ("sum dim 0", lambda x: x.sum(dim=0), [r(10, 10)], 100 + 10),
    ("full sum", lambda x: x.sum(), [r(7, 13)], 91 + 1),
    ("mean keepdim", lambda x: x.mean(-1, keepdim=True), [r(6, 9)], 54 + 6),
    ("prologue", lambda x: (x * x).sum(1), [r(10, 10)], 100 + 10),
    ("epilogue", lambda x: x.sum(1).exp() * 2, [r(10, 10)], 100 + 10),
    ("subtract row sum", lambda x: x - x.sum(1, keepdim=True), [r(10, 10)], 100 + 100),
    ("softmax", lambda x: x.softmax(-1), [r(10, 10)], 100 + 100),
    ("log_softmax", lambda x: F.log_softmax(x, -1), [r(5, 11)], 55 + 55),
    ("layer_norm", lambda x: F.layer_norm(x, (12,)), [r(8, 12)], 96 + 96),
    ("transpose view", lambda x: x.t() + 1, [r(10, 10)], 100 + 100),
    ("reshape view", lambda x: x.reshape(5, 20).cos(), [r(10, 10)], 100 + 100),
    ("slice", lambda x: x[:, :5].cos(), [r(10, 10)], 50 + 50),
    ("strided slice", lambda x: x[::2].sin(), [r(10, 10)], 50 + 50),
    ("two columns", lambda x: x[:, 0] + x[:, 1], [r(10, 10)], 20 + 10),
    ("expand input", lambda x: x.expand(10, 10).cos(), [r(1, 10)], 10 + 100),
    ("x + x.t()", lambda x: x + x.t(), [r(10, 10)], 100 + 100),
    ("two outputs", lambda x: (x.sin(), x.cos()), [r(10, 10)], 100 + 200),
    ("output and its use", lambda x: (x.cos(), x.cos() * 2), [r(10, 10)], 100 + 200),
    ("intermediate as output", lambda x: ((y := x * 2), y.sum(1)), [r(10, 10)], 100 + 100 + 10),
    ("independent inputs", lambda x, y: (x.sin(), y.cos()), [r(10), r(10)], 40),
    ("int64", lambda x: x + 1, [torch.arange(10)], 2 * (10 + 10)),  # 8-byte elements
    ("float64 reduction", lambda x: x.sum(0), [r(4, 6, dtype=torch.float64)], 2 * (24 + 6)),
    ("half to float", lambda x: x.float() * 2, [r(10, dtype=torch.float16)], 5 + 10),
    # an extern kernel must see its input in memory, and writes its output there
    ("mm then relu", lambda x, w: (x @ w).relu(), [r(10, 10), r(10, 10)],
     (100 + 100 + 100) + (100 + 100)),
    ("cos then mm", lambda x, w: x.cos() @ w, [r(10, 10), r(10, 10)],
     (100 + 100) + (100 + 100 + 100)),
    # a reduction over another axis needs all of y first: y is stored, then read back
    ("reduce a reduction's rows", lambda x: (x.sum(1) - x.sum(1).mean()), [r(10, 10)],
     (100 + 10) + (10 + 10)),
]


@pytest.mark.parametrize("name, fn, args, elements", CASES, ids=[c[0] for c in CASES])
def test_fused_bytes_are_the_analytical_minimum(name, fn, args, elements):
    s = schedule(fn, *args)
    assert s.num_bytes_accessed == elements * 4, s.describe()
    assert mc.metrics.num_bytes_accessed == elements * 4


def test_unfused_chain_moves_more():
    x = r(1000)
    fn = lambda x: ((x * 2 + 3).sin() - 1).abs()  # noqa: E731
    unfused, fused = schedule(fn, x, fuse=False), schedule(fn, x)
    assert len(fused.kernels) == 1 and len(unfused.kernels) == 5
    assert fused.num_bytes_accessed == 2 * 1000 * 4
    assert unfused.num_bytes_accessed == 5 * 2 * 1000 * 4  # each of 5 ops reads and writes 1000


def test_bytes_through_compile_fx_inner():
    compile_fx = pytest.importorskip("minicompile.inductor.compile_fx",
                                     reason="compile_fx_inner not written yet")
    x, y = r(10, 10), r(10)
    gm = make_fx(lambda x, y: x + y, decomposition_table=core_aten_decompositions())(x, y)
    mc.metrics.reset()
    out = compile_fx.compile_fx_inner(gm, [x, y])([x, y]) if _takes_list(compile_fx) \
        else compile_fx.compile_fx_inner(gm, [x, y])(x, y)
    out = out[0] if isinstance(out, (list, tuple)) else out
    torch.testing.assert_close(out, x + y)
    assert mc.metrics.num_bytes_accessed == 210 * 4


def _takes_list(compile_fx) -> bool:
    return getattr(compile_fx, "BOXED_CALL", False)


MC_CASES = [CASES[i] for i in (0, 2, 3, 10, 20, 27)]  # cos, broadcast, sum, softmax, 2 outputs, mm


@pytest.mark.parametrize("name, fn, args, elements", MC_CASES, ids=[c[0] for c in MC_CASES])
def test_bytes_through_mc_compile(name, fn, args, elements):
    compiled = mc.compile(fn, backend="inductor")
    mc.metrics.reset()
    torch.testing.assert_close(compiled(*args), fn(*args))
    assert mc.metrics.num_bytes_accessed == elements * 4
