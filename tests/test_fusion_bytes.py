"""Memory traffic of the scheduled kernels (``mc.metrics.num_bytes_accessed``) equals the
analytical minimum once fused: every input read once, every output written once, and an
intermediate written and read again only when it cannot stay inside a kernel (a library call
reads it, or a reduction needs all of it first). Counts below are in elements; the metric is
bytes."""

from __future__ import annotations

import pytest
import sympy
import torch
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from conftest import check_layer_norm_backward
from minicompile.inductor.fx_passes import run_graph_passes
from minicompile.inductor.scheduler_report import describe
from minicompile.viz.schedule import run_scheduled
from minicompile.inductor.graph import lower_graph
from minicompile.inductor.scheduler import Scheduler


def schedule(fn, *args, fuse=True):
    gm = make_fx(fn, decomposition_table=core_aten_decompositions())(*args)
    run_graph_passes(gm)  # CSE: x.sum(1) written twice is computed once
    graph = lower_graph(gm, list(args))
    s = Scheduler(graph, fuse=fuse)
    out = run_scheduled(s, *args)  # the schedule computes the right thing
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
    assert s.num_bytes_accessed == elements * 4, describe(s)
    assert mc.metrics.num_bytes_accessed == elements * 4


F32, I64, BOOL = 4, 8, 1  # bytes per element


def f32(n):
    return n * F32


# (name, fn, inputs, bytes moved when fused): each worked out by hand from the shapes
BYTE_CASES = [
    # broadcasting both ways: a column and a row make a 10x10 grid
    ("broadcast row and column", lambda x, y: x + y, [r(10, 1), r(1, 10)], f32(10 + 10 + 100)),
    ("broadcast a column", lambda x, y: x + y, [r(10, 10), r(10, 1)], f32(100 + 10 + 100)),
    ("expand to 3-d", lambda x, y: x.unsqueeze(0).expand(3, 5, 7) * y, [r(5, 7), r(3, 5, 7)],
     f32(35 + 105 + 105)),
    ("x.t() + x, odd size", lambda x: x.t() + x, [r(7, 7)], f32(49 + 49)),
    # slices with steps: rows 0,2,4,6,8 and columns 1,4,7 -> 15 elements
    ("slice with steps 2-d", lambda x: x[::2, 1::3].cos(), [r(10, 10)], f32(15 + 15)),
    ("slice with step 1-d", lambda x: x[1::3].cos(), [r(20)], f32(7 + 7)),  # 1,4,...,19
    # overlapping reads of one buffer are a union: x[0..4] and x[1..5] touch x[0..5]
    ("overlapping slices", lambda x: x[:5] + x[1:6], [r(10)], f32(6 + 5)),
    ("overlapping columns", lambda x: x[:, :-1] + x[:, 1:], [r(4, 6)], f32(24 + 20)),
    ("disjoint halves", lambda x: x[:5] + x[5:], [r(10)], f32(10 + 5)),
    ("sliding windows", lambda x: x.unfold(0, 3, 1).sum(-1), [r(10)], f32(10 + 8)),
    # nearest 2x upsampling as a view: index i // 2 reads each element once, writes 4 times
    ("nearest upsample view", lambda x: x[:, None, :, None].expand(3, 2, 4, 2).reshape(6, 8).exp(),
     [r(3, 4)], f32(12 + 48)),
    ("cat", lambda x, y: torch.cat([x, y]), [r(3, 4), r(5, 4)], f32(12 + 20 + 32)),
    ("cat x with itself", lambda x: torch.cat([x, x], 1), [r(3, 4)], f32(12 + 24)),
    ("constant pad", lambda x: F.pad(x, (1, 2)), [r(3, 4)], f32(12 + 21)),
    # a bool mask of 10 broadcast over 7 rows: 10 one-byte reads
    ("where, broadcast mask", lambda m, x, y: torch.where(m, x, y),
     [r(10) > 0, r(7, 10), r(7, 10)], 10 * BOOL + f32(70 + 70 + 70)),
    # reductions over each dim, some dims, all dims: read 120, write what remains
    ("sum over dim 0", lambda x: x.sum(0), [r(4, 5, 6)], f32(120 + 30)),
    ("sum over dim 1", lambda x: x.sum(1), [r(4, 5, 6)], f32(120 + 24)),
    ("sum over dim 2", lambda x: x.sum(2), [r(4, 5, 6)], f32(120 + 20)),
    ("sum over dims 0 and 2", lambda x: x.sum((0, 2)), [r(4, 5, 6)], f32(120 + 5)),
    ("sum over all dims", lambda x: x.sum(), [r(4, 5, 6)], f32(120 + 1)),
    ("amax over dim 0", lambda x: x.amax(0), [r(7, 9)], f32(63 + 9)),
    ("argmax writes int64", lambda x: x.argmax(1), [r(7, 9)], f32(63) + 7 * I64),
    # Welford: one pass writes mean and var (m2 never leaves the kernel)
    ("var_mean", lambda x: torch.var_mean(x, 1), [r(6, 10)], f32(60 + 6 + 6)),
    ("var over dim 0", lambda x: x.var(0, correction=0), [r(6, 10)], f32(60 + 10)),
    ("std keepdim", lambda x: x.std(1, keepdim=True), [r(6, 10)], f32(60 + 6)),
    ("softmax 3-d", lambda x: x.softmax(-1), [r(3, 5, 7)], f32(105 + 105)),
    # reductions over a non-last dim: the pointwise loops are reordered to the reduction's
    # (columns outer, rows inner), so max, exp, sum and divide share one kernel per column
    ("softmax over dim 0", lambda x: x.softmax(0), [r(6, 10)], f32(60 + 60)),
    ("log_softmax over dim 0", lambda x: F.log_softmax(x, 0), [r(5, 11)], f32(55 + 55)),
    ("x - x.mean(0)", lambda x: x - x.mean(0), [r(6, 10)], f32(60 + 60)),
    ("softmax over a middle dim", lambda x: x.softmax(1), [r(3, 5, 7)], f32(105 + 105)),
    ("softmax over dim 0 of 3-d", lambda x: x.softmax(0), [r(4, 3, 5)], f32(60 + 60)),
    ("normalise columns", lambda x: (x - x.mean(0)) / x.std(0), [r(6, 10)], f32(60 + 60)),
    ("batch-norm-like dims 0 and 2", lambda x: (x - x.mean((0, 2), keepdim=True)) * 2,
     [r(4, 3, 5)], f32(60 + 60)),
    ("softmax over dim 0 of x.t()", lambda x: x.t().softmax(0), [r(6, 10)], f32(60 + 60)),
    ("layer_norm affine", lambda x, w, b: F.layer_norm(x, (12,), w, b), [r(8, 12), r(12), r(12)],
     f32(96 + 12 + 12 + 96)),
    ("three outputs", lambda x: (x.sin(), x.cos(), x.sum(1)), [r(10, 10)], f32(100 + 100 + 100 + 10)),
    ("int64 to float", lambda x: x.float() * 0.5, [torch.arange(10)], 10 * I64 + f32(10)),
    # views of an intermediate: no copy, the intermediate stays in registers
    ("view of an intermediate", lambda x: x.cos().view(5, 20).sum(1), [r(10, 10)], f32(100 + 5)),
    ("transposed output", lambda x: x.cos().t(), [r(10, 10)], f32(100 + 100)),
    # part of an intermediate: it is computed only where it is read (inlining.py), never stored
    ("column of an intermediate", lambda x: (x * 2)[:, 0] + 1, [r(10, 10)], f32(10 + 10)),
    ("rows of an intermediate", lambda x: (x * 2)[:5].sum(1), [r(10, 10)], f32(50 + 5)),
    ("row of an intermediate as output", lambda x: x.cos()[3], [r(10, 10)], f32(10 + 10)),
    ("column of an intermediate as output", lambda x: x.cos()[:, 3], [r(10, 10)], f32(10 + 10)),
    ("strided part of an intermediate as output", lambda x: (x + 1)[::2, 1::3], [r(10, 10)],
     f32(15 + 15)),
    ("strided slice of an intermediate", lambda x: x.exp()[:, ::2].mean(), [r(6, 10)], f32(30 + 1)),
    ("diagonal of an intermediate", lambda x: x.cos().diagonal() + 1, [r(5, 5)], f32(5 + 5)),
    ("broadcast an intermediate", lambda x: x.sin().unsqueeze(0).expand(3, 10) + 1, [r(10)],
     f32(10 + 30)),
    ("cat of intermediates", lambda x, y: torch.cat([x.cos(), y.sin()]), [r(3, 4), r(5, 4)],
     f32(12 + 20 + 32)),
    ("stack of intermediates", lambda x, y: torch.stack([x + 1, y * 2]), [r(4), r(4)],
     f32(4 + 4 + 8)),
    ("pad an intermediate", lambda x: F.pad(x.cos(), (1, 1)), [r(3, 4)], f32(12 + 18)),
    ("flip", lambda x: x.flip(0) + 1, [r(10)], f32(10 + 10)),
    ("diagonal", lambda x: x.diagonal() + 1, [r(5, 5)], f32(5 + 5)),
    # a cheap intermediate (one input) needed by two kernels is recomputed by each, not stored
    ("x**2 reduced over both dims", lambda x: (x.pow(2).mean(1), x.pow(2).mean(0)), [r(6, 7)],
     f32(42 + 6) + f32(42 + 7)),
    # the whole intermediate is returned too: stored once, the row is read back from it
    ("intermediate and its row", lambda x: ((y := x.cos()), y[3] + 1), [r(10, 10)],
     f32(100 + 100) + f32(10 + 10)),
    # an extern kernel needs its input in memory: cos is written (100) and mm reads it back
    ("cos feeds mm and an output", lambda x, w: (x.cos() @ w, x.cos() + 1), [r(10, 10), r(10, 10)],
     f32(100 + 100 + 100) + f32(100 + 100 + 100)),
    # a library call reads only the elements of the strided view it is given
    ("bmm of a slice", lambda a, b: torch.bmm(a[:, :2], b), [r(3, 4, 5), r(3, 5, 6)],
     f32(30 + 90 + 36)),
    ("mm of a broadcast row", lambda a, w: a.expand(6, 5) @ w, [r(1, 5), r(5, 3)], f32(5 + 15 + 18)),
    # no-op calls disappear before lowering (fx_passes/noop.py)
    ("pad of a cat of intermediates", lambda a, b: F.pad(torch.cat([a.sin(), b.cos()]), (1, 1)),
     [r(4, 8), r(4, 8)], f32(64 + 80)),
    ("slice_scatter over the whole tensor", lambda a, b: torch.slice_scatter(a, b.sin()) + 1,
     [r(4, 8), r(4, 8)], f32(32 + 32)),  # a is never read
    ("clone before a library call", lambda a, w: a.clone() @ w, [r(4, 4), r(4, 4)],
     f32(16 + 16 + 16)),
    ("ceil of integers", lambda a: torch.ceil(a) * 3, [torch.arange(10)], 8 * (10 + 10)),
    ("cat of one tensor", lambda a: torch.cat([a.sin()]) * 2, [r(10)], f32(10 + 10)),
    # a gather: 5 distinct rows of 8 from a 20x8 table (an upper bound, exact when rows differ)
    ("embedding", lambda i, w: F.embedding(i, w), [torch.tensor([3, 0, 7, 19, 12]), r(20, 8)],
     5 * I64 + f32(40 + 40)),
]


@pytest.mark.parametrize("name, fn, args, nbytes", BYTE_CASES, ids=[c[0] for c in BYTE_CASES])
def test_fused_bytes_by_hand(name, fn, args, nbytes):
    s = schedule(fn, *args)
    assert s.num_bytes_accessed == nbytes, describe(s)


def test_one_kernel_each():
    """softmax, layer_norm and var_mean read their input once and write their output once."""
    for fn in (lambda x: x.softmax(-1), lambda x: F.layer_norm(x, (9,)),
               lambda x: torch.var_mean(x, -1), lambda x: x.softmax(0),
               lambda x: F.log_softmax(x, 0), lambda x: x - x.mean(0)):
        s = schedule(fn, r(7, 9))
        assert len(s.kernels) == 1, describe(s)


SYMBOLIC = [  # (fn, input shape, bytes as a formula of the two size symbols (a, b))
    (lambda x: x.softmax(-1), lambda a, b: f32(2 * a * b)),
    (lambda x: F.layer_norm(x, (x.shape[-1],)), lambda a, b: f32(2 * a * b)),
    (lambda x: torch.var_mean(x, 1), lambda a, b: f32(a * b + 2 * a)),
    (lambda x: x - x.sum(1, keepdim=True), lambda a, b: f32(2 * a * b)),
    # over dim 0: the reordered pointwise loops are proved to line up on SymPy too
    (lambda x: x.softmax(0), lambda a, b: f32(2 * a * b)),
    (lambda x: F.log_softmax(x, 0), lambda a, b: f32(2 * a * b)),
    (lambda x: x - x.mean(0), lambda a, b: f32(2 * a * b)),
]


@pytest.mark.parametrize("k", range(len(SYMBOLIC)))
def test_symbolic_sizes_fuse_and_count(k):
    """Traced with symbolic sizes: the row check is proved on SymPy formulas, so the reduction
    still fuses, and the byte count is a formula of the sizes."""
    fn, expected = SYMBOLIC[k]
    x = r(5, 7)
    gm = make_fx(fn, decomposition_table=core_aten_decompositions(), tracing_mode="symbolic")(x)
    graph = lower_graph(gm, [x])
    s = Scheduler(graph)
    assert len(s.kernels) == 1, describe(s)
    (a, _), (b, _) = sorted(graph.size_hints.items(), key=lambda kv: kv[1])  # a=5, b=7
    assert sympy.expand(s.num_bytes_accessed - expected(a, b)) == 0, s.num_bytes_accessed
    assert mc.metrics.num_bytes_accessed == expected(5, 7)  # reported at the traced sizes
    for shape in [(3, 11), (1, 2)]:
        y = r(*shape)
        torch.testing.assert_close(run_scheduled(s, y), fn(y))


def test_symbolic_union_is_an_upper_bound():
    """Two overlapping slices with symbolic sizes: the union is not computed symbolically; the
    count is their sum capped at the buffer size, exact again at the traced sizes' hint."""
    fn, x = (lambda x: x[:, 1:] + x[:, :-1]), r(5, 7)
    gm = make_fx(fn, decomposition_table=core_aten_decompositions(), tracing_mode="symbolic")(x)
    s = Scheduler(lower_graph(gm, [x]))
    assert isinstance(s.num_bytes_accessed, sympy.Expr) and s.num_bytes_accessed.has(sympy.Min)
    assert s.bytes_hint() == f32(35 + 30)


def test_enumeration_cap_falls_back_to_an_upper_bound(monkeypatch):
    import minicompile.inductor.dependencies as deps

    monkeypatch.setattr(deps, "MAX_ENUMERATED_POINTS", 4)
    s = schedule(lambda x: x[:5] + x[1:6], r(10))
    assert s.num_bytes_accessed == f32(10 + 5)  # 5 + 5 reads, capped at the 10 x holds


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


def test_size_symbol_in_an_index_is_counted_symbolically():
    """Concrete loop ranges but a size symbol in the index (a size pinned by a guard after the
    index was built): the count is a formula, never an enumeration that cannot bind ``s1``."""
    from minicompile.inductor.dependencies import footprint
    from minicompile.inductor.ir import MemoryDep

    s1, i, j = sympy.Symbol("s1", positive=True, integer=True), *sympy.symbols("i j", integer=True)
    reads = [MemoryDep("buf0", i * s1 + j, ((i, 3), (j, 4))),
             MemoryDep("buf0", i * s1 + j + 1, ((i, 3), (j, 4)))]  # two groups: no closed form
    count = footprint(reads, 3 * s1)
    assert count.free_symbols == {s1}
    assert count.subs(s1, 5) == 15  # capped at the buffer: 12 + 12 points, 15 elements


@pytest.mark.parametrize("reads, expected", [
    ([("4*i + j", 4, 4), ("4*i + j + 2", 4, 4)], 18),  # overlapping windows: 0..17
    ([("4*i + j", 4, 4), ("4*i + j", 4, 4)], 16),  # the same points twice
    ([("100000*i + j", 3, 2), ("j + 7", 1, 2)], 8),  # spread thin: sorted, not tabled
    ([("2*i", 5, 1), ("2*i + 1", 5, 1)], 10),  # interleaved halves
    ([("4*i + j + 5", 4, 4), ("4*i + 9", 4, 1)], 17),  # not from offset 0: 5..20 and 21
])
def test_distinct_elements_of_several_reads_are_counted_exactly(reads, expected):
    """Several access patterns on one buffer: the elements they touch, counted by enumeration."""
    from minicompile.inductor.dependencies import count_distinct
    from minicompile.inductor.ir import MemoryDep

    i, j = sympy.symbols("i j", integer=True, nonnegative=True)
    deps = [MemoryDep("buf0", sympy.sympify(index, {"i": i, "j": j}), ((i, ni), (j, nj)))
            for index, ni, nj in reads]
    assert count_distinct(deps) == expected


@pytest.mark.parametrize("index, n, numel, whole", [
    ("x", 7, 7, True),  # affine, one point an element
    ("x + 1", 6, 7, False),  # i[1:]: element 0 unread
    ("2*x", 4, 7, False),  # i[::2]
    ("x // 3", 21, 7, True),  # embedding's token ids, each read for 3 features: enumerated
    ("x % 7", 21, 7, True),
    ("x // 3", 18, 7, False),  # the last id never read
    ("x", "s0", "s0", True),  # symbolic: affine, proved by the closed form
    ("x // 3", "3*s0", "s0", False),  # symbolic and not affine: unknown, so not proved
])
def test_reads_every_element_is_proved_or_false(index, n, numel, whole):
    """Whether a load reads each element of its buffer (a host check of the whole buffer then
    checks exactly what the kernel reads): proved, or False."""
    from minicompile.inductor.dependencies import reads_every_element
    from minicompile.inductor.ir import MemoryDep

    x, s0 = sympy.Symbol("x", integer=True, nonnegative=True), sympy.Symbol("s0", positive=True,
                                                                            integer=True)
    names = {"x": x, "s0": s0}
    dep = MemoryDep("buf0", sympy.sympify(index, names), ((x, sympy.sympify(n, names)),))
    assert reads_every_element(dep, sympy.sympify(numel, names)) is whole


def test_bytes_accumulate_over_forward_and_backward(compiled_graphs):
    """``num_bytes_accessed`` sums every graph since ``metrics.reset()`` (as
    torch._inductor.metrics does): a training step adds its forward and its backward."""
    x = torch.randn(16, 32, requires_grad=True)
    mc.metrics.reset()
    out = mc.compile(lambda t: (t.sin() * 2).softmax(-1))(x)
    out.sum().backward()
    kinds = sorted(g.name.split()[0] for g in compiled_graphs)
    assert kinds == ["backward", "forward"], kinds
    assert mc.metrics.num_bytes_accessed == sum(g.scheduler.bytes_hint() for g in compiled_graphs)
    assert mc.metrics.num_bytes_accessed > compiled_graphs[0].scheduler.bytes_hint()


# --- inputs updated in place (fx_passes/reinplace.py): only the written elements move ----------
# Before, each of these read all of x and wrote all of its new value, which the runtime wrapper
# then copied into x again (that copy was not even counted here).

try:  # the patterns of test_input_mutation.py (tests/ on sys.path, or tests as a package)
    from test_input_mutation import (_add_to_column, _column_sin, _index_put,
                                     _index_put_accumulate, _scatter, _scatter_add, _slice_copy)
except ImportError:
    from tests.test_input_mutation import (_add_to_column, _column_sin, _index_put,
                                           _index_put_accumulate, _scatter, _scatter_add,
                                           _slice_copy)


_COLS = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])  # 8 int64 indices into a (10, 4) x
MUTATION_CASES = [  # (name, fn, inputs, bytes moved)
    ("x[:, 0] = y.sin()", _column_sin, [r(10, 10), r(10)], f32(10 + 10)),  # read y, write x[:, 0]
    ("x[:, 0] += 1", _add_to_column, [r(10, 10)], f32(10 + 10)),  # read and write x[:, 0]
    ("x[2:5].copy_(y)", _slice_copy, [r(10, 4), r(3, 4)], f32(12 + 12)),
    # idx + v + the written rows
    ("index_put_", _index_put, [r(10, 4), torch.tensor([1, 3]), r(2, 4)], 2 * I64 + f32(8 + 8)),
    # accumulate reads the written rows too
    ("index_put_ accumulate", _index_put_accumulate, [r(10, 4), torch.tensor([1, 3]), r(2, 4)],
     2 * I64 + f32(8 + 8 + 8)),
    ("scatter_", _scatter, [r(10, 4), _COLS, r(2, 4)], 8 * I64 + f32(8 + 8)),
    ("scatter_add_", _scatter_add, [r(10, 4), _COLS, r(2, 4)], 8 * I64 + f32(8 + 8 + 8)),
]


@pytest.mark.parametrize("name, fn, args, nbytes", MUTATION_CASES,
                         ids=[c[0] for c in MUTATION_CASES])
def test_bytes_of_an_input_written_in_place(name, fn, args, nbytes):
    compiled = mc.compile(fn, backend="inductor")
    mine, ref = [a.clone() for a in args], [a.clone() for a in args]
    mc.metrics.reset()
    compiled(*mine)
    fn(*ref)
    torch.testing.assert_close(mine[0], ref[0])
    assert mc.metrics.num_bytes_accessed == nbytes


def test_bytes_when_the_old_value_is_needed():
    """``y = x.clone(); x[0] = 1``: the old x is read after the write, so the new value is
    still built whole (and copied back by the wrapper): more than the written elements."""
    def fn(x):
        y = x.clone()
        x[0] = 1
        return y + x

    compiled = mc.compile(fn, backend="inductor")
    mine, ref = r(10, 10), None
    ref = mine.clone()
    mc.metrics.reset()
    torch.testing.assert_close(compiled(mine), fn(ref))
    torch.testing.assert_close(mine, ref)
    assert mc.metrics.num_bytes_accessed > f32(100 + 100)


@pytest.mark.parametrize("m, n", [(64, 48), (48, 48)], ids=["64x48", "square"])
def test_layer_norm_backward_reads_the_gradient_twice_and_writes_only_gradients(
        compiled_graphs, m, n):
    """A layer norm's backward, as Inductor's: one kernel along the rows for the input's
    gradient (reads grad, x, the weight and the saved per-row mean and 1/std; writes dx), one
    down the columns for the weight's and the bias's (``sum(grad * xhat, 0)`` and
    ``sum(grad, 0)``: reads grad, x and the per-row values; writes dw, db). ``grad * xhat`` is
    recomputed in the column kernel (``inlining.sole_reduction_reader``), not written by the
    row kernel and read back (before: 6mn + 3n + 2m elements, now 5mn + 3n + 4m). The square
    case must not put the column sums in the row kernel: they would read down columns there."""
    check_layer_norm_backward(m, n)
    backward = next(g for g in compiled_graphs if g.name.startswith("backward"))
    assert backward.scheduler.bytes_hint() == f32(5 * m * n + 3 * n + 4 * m)
