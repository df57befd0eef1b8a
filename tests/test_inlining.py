"""Substitution stays linear in the size of what is substituted (``ir/inline.py``,
``inlining.py``): a producer loaded at one index is evaluated once however many times its
readers load it, and the bounds keep every body, and how deep its evaluation nests, small
however long the chain of producers is. Eager PyTorch checks every result."""

import pytest
import torch
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile.bench.scaling import lstm_steps
from minicompile.inductor import inlining
from minicompile.inductor.executor import run_nodes
from minicompile.inductor.fx_passes import run_graph_passes
from minicompile.inductor.graph import lower_graph
from minicompile.inductor.ir import (ComputedBuffer, InputBuffer, Layout, Pointwise,
                                     inline_producers, substitutions)
from minicompile.inductor.scheduler import Scheduler
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing
from minicompile.inductor.virtualized import ops, set_ops_handler
from minicompile.viz.schedule import run_scheduled

DEVICE = torch.empty(0).device
F32 = torch.float32


def _diamonds(depth: int) -> list[ComputedBuffer]:
    """buf0 = x * 0.5; buf_k = buf_{k-1} * buf_{k-1} + buf_{k-1}: each body loads the one
    before three times at the same index (2**depth evaluations if each load re-evaluated)."""
    x = InputBuffer("x", Layout(DEVICE, F32, [6]))
    lx = x.make_loader()
    nodes = [ComputedBuffer("buf0", Layout(DEVICE, F32, [6]), Pointwise(
        DEVICE, F32, lambda i: ops.mul(lx(i), ops.constant(0.5, F32)), [6]))]
    for k in range(1, depth + 1):
        load = nodes[-1].make_loader()
        nodes.append(ComputedBuffer(f"buf{k}", Layout(DEVICE, F32, [6]), Pointwise(
            DEVICE, F32, lambda i, load=load: ops.add(ops.mul(load(i), load(i)), load(i)), [6])))
    return nodes


def test_a_load_is_evaluated_once_per_index():
    depth = 20
    nodes = _diamonds(depth)
    fused = nodes[-1]
    for producer in reversed(nodes[:-1]):  # as the scheduler does: later producers first
        fused = inline_producers(fused, [producer])
    rw = fused.get_read_writes()
    assert rw.read_names() == {"x"} and substitutions(fused) == depth
    # per level one mul and one add; one load of x, one constant and one mul at the bottom
    assert rw.num_ops <= 2 * depth + 3, rw.num_ops  # not ~3**depth
    x = torch.rand(6)
    expected = x * 0.5
    for _ in range(depth):
        expected = expected * expected + expected
    out = run_nodes([fused], {"x": x}, {})[fused.name]
    torch.testing.assert_close(out, expected)


def _schedule(fn, *args):
    gm = make_fx(fn, decomposition_table=core_aten_decompositions())(*args)
    run_graph_passes(gm)
    graph = lower_graph(gm, list(args))
    s = Scheduler(graph)
    out = run_scheduled(s, *args, options={"cpu_backend": "reference"})
    torch.testing.assert_close(out, fn(*args))
    return s


def _shrinking(steps: int):
    def fn(x):  # each step reads its producer shifted by a row: other loops, so substituted
        for _ in range(steps):
            x = (x[1:] * 1.5).sin() + 0.25
        return x
    return fn


def test_a_long_chain_of_substitutions_is_cut_into_bounded_bodies():
    steps = 100  # unbounded, the last body would hold all 100 steps (300 ops)
    s = _schedule(_shrinking(steps), torch.randn(steps + 3, 4))
    bodies = [n.node for n in s.nodes if isinstance(n.node, ComputedBuffer)]
    assert len(bodies) < steps / 2  # substituted: most steps are no buffer of their own
    for node in bodies:
        assert node.get_read_writes().num_ops <= inlining.REALIZE_ACC_OPCOUNT_THRESHOLD
        assert substitutions(node) <= inlining.MAX_SUBSTITUTIONS


def test_the_bounds_decide(monkeypatch):
    """12 steps are 36 producers: with the bounds raised out of the way, one body takes more
    substitutions than ``MAX_SUBSTITUTIONS`` allows, and the chain has fewer buffers."""
    steps, x, limit = 12, torch.randn(15, 4), inlining.MAX_SUBSTITUTIONS
    cut = [n.node for n in _schedule(_shrinking(steps), x).nodes]
    monkeypatch.setattr(inlining, "REALIZE_OPCOUNT_THRESHOLD", 10**6)
    monkeypatch.setattr(inlining, "REALIZE_ACC_OPCOUNT_THRESHOLD", 10**6)
    monkeypatch.setattr(inlining, "MAX_SUBSTITUTIONS", 10**6)
    whole = [n.node for n in _schedule(_shrinking(steps), x).nodes]
    assert max(map(substitutions, cut)) <= limit < max(map(substitutions, whole))
    assert len(cut) > len(whole)


@pytest.mark.slow
def test_a_64_step_recurrence_with_gradients_compiles(monkeypatch):
    """The issue's case (an unrolled LSTM cell, backward included) at 64 steps: it compiled
    for minutes and then fell back with RecursionError. Small sizes and the reference backend
    (no C++ compiles) keep it quick; the compile is the same."""
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", "reference")
    steps, batch, hidden = 64, 2, 4
    torch.manual_seed(0)
    x = torch.randn(steps, batch, hidden)
    h, c = torch.zeros(batch, hidden), torch.zeros(batch, hidden)
    params = [torch.randn(hidden, 4 * hidden) * 0.5, torch.randn(hidden, 4 * hidden) * 0.5,
              torch.zeros(4 * hidden)]

    def run(fn):
        ps = [p.clone().requires_grad_() for p in params]
        loss = fn(x, h, c, *ps)
        loss.backward()
        return [loss.detach()] + [p.grad for p in ps]

    mc.reset()
    fallbacks = mc.metrics.eager_fallbacks
    step = lstm_steps(steps)
    torch.testing.assert_close(run(mc.compile(step)), run(step), rtol=1e-4, atol=1e-4)
    assert mc.metrics.eager_fallbacks == fallbacks and mc.metrics.graphs_compiled >= 1


class _LoadIndices:
    """An ``ops`` handler that keeps the index of every load it is handed."""

    def __init__(self):
        self.loads = []

    def load(self, name, index):
        self.loads.append((name, index))
        return f"load{len(self.loads)}"

    def __getattr__(self, name):
        return lambda *args, **kwargs: name


def _transposes(depth: int) -> list[ComputedBuffer]:
    """buf0 = x * 2 over (4, 6); buf_k = buf_{k-1}.t() + 1, alternating (6, 4) and (4, 6):
    each reads its producer permuted, so each is substituted into the next."""
    shapes = [[4, 6], [6, 4]]
    x = InputBuffer("x", Layout(DEVICE, F32, shapes[0]))
    lx = x.make_loader()
    nodes = [ComputedBuffer("buf0", Layout(DEVICE, F32, shapes[0]), Pointwise(
        DEVICE, F32, lambda i: ops.mul(lx(i), ops.constant(2.0, F32)), shapes[0]))]
    for k in range(1, depth + 1):
        load, shape = nodes[-1].make_loader(), shapes[k % 2]
        nodes.append(ComputedBuffer(f"buf{k}", Layout(DEVICE, F32, shape), Pointwise(
            DEVICE, F32, lambda i, load=load: ops.add(load([i[1], i[0]]),
                                                     ops.constant(1.0, F32)), shape)))
    return nodes


def test_a_substituted_index_is_simplified_at_each_level():
    """Substituting a producer unflattens the consumer's flat index with ``//`` and ``%``;
    simplified over the body's loop ranges at each level, the index of ``x`` that reaches the
    code generator is as plain as one transpose's, not nested once per level."""
    depth = 12
    nodes = _transposes(depth)
    fused = nodes[-1]
    for producer in reversed(nodes[:-1]):
        fused = inline_producers(fused, [producer])
    handler = _LoadIndices()
    index_vars, _ = fused.index_vars()
    with set_ops_handler(handler):
        fused.store_output(index_vars, [])
    (name, index), = handler.loads
    i0, i1 = index_vars
    assert name == "x" and index == (6 * i0 + i1 if depth % 2 == 0 else i0 + 6 * i1), index
    x = torch.rand(4, 6)
    expected = x * 2
    for _ in range(depth):
        expected = expected.t() + 1
    out = run_nodes([fused], {"x": x.reshape(-1)}, {})[fused.name]  # (buffers are flat)
    torch.testing.assert_close(out.reshape(expected.shape), expected)


def test_a_producer_read_at_equal_indices_is_evaluated_once():
    """``p[i]`` and ``p[6*(i // 6) + i % 6]`` are the same element: once simplified, the two
    loads are one, and ``p``'s body (its load of ``x``) is evaluated once."""
    x = InputBuffer("x", Layout(DEVICE, F32, [24]))
    lx = x.make_loader()
    p = ComputedBuffer("p", Layout(DEVICE, F32, [24]), Pointwise(
        DEVICE, F32, lambda i: ops.exp(lx(i)), [24]))
    lp = p.make_loader()
    same = ComputedBuffer("out", Layout(DEVICE, F32, [24]), Pointwise(
        DEVICE, F32, lambda i: ops.add(lp(i), lp([6 * FloorDiv(i[0], 6)
                                                  + ModularIndexing(i[0], 1, 6)])), [24]))
    fused = inline_producers(same, [p])
    handler = _LoadIndices()
    with set_ops_handler(handler):
        fused.store_output(fused.index_vars()[0], [])
    assert handler.loads == [("x", fused.index_vars()[0][0])]
    x = torch.rand(24)
    torch.testing.assert_close(run_nodes([fused], {"x": x}, {})["out"], 2 * x.exp())


def test_a_symbolic_index_past_the_bound_keeps_the_producer_a_buffer(monkeypatch, caplog):
    """With symbolic sizes the simplifier cannot always remove the ``//`` and ``%`` that
    unflattening a producer's index adds, so each substitution nests the index a level
    deeper: a circular pad (a chain of six ``slice_scatter`` s, each over the last) compiled
    with ``dynamic=True`` never finished. Past ``MAX_INDEX_OPS`` operations the producer stays
    a buffer (lowered here so that the small pad below reaches it)."""
    monkeypatch.setattr(inlining, "MAX_INDEX_OPS", 12)

    def pad(x):
        return torch.nn.functional.pad(x, (2, 1, 1, 2), mode="circular")

    x = torch.randn(2, 3, 5, 6)
    with caplog.at_level("DEBUG", logger="minicompile.inductor.inlining"):
        torch.testing.assert_close(mc.compile(pad, dynamic=True)(x), pad(x))
    assert "at an index of more than 12 operations" in caplog.text
