"""Checks for exercises/ex07_fusion.py (notebook 07: fusion, bytes moved, memory planning).

7.1 to 7.3 compare plain-data answers with the scheduler's own; 7.4 puts the learner's fusion rule
into the real scheduler, compiles real functions with it, and compares with eager."""

from __future__ import annotations

import contextlib
import random
from types import SimpleNamespace
from typing import Callable, Iterator

import sympy
import torch
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile import config
from minicompile.grading import exercise
from minicompile.inductor import fusion
from minicompile.inductor.fusion import tile
from minicompile.inductor.graph import lower_graph
from minicompile.inductor.memory_planning import BufferLifetime, assign_storage
from minicompile.inductor.scheduler import Scheduler


def _member(i: int, numel: int, rnumel: int) -> SimpleNamespace:
    return SimpleNamespace(numel=sympy.Integer(numel), rnumel=sympy.Integer(rnumel),
                           is_reduction=lambda: rnumel > 1, get_name=lambda: f"buf{i}")


def _reference_tile(loops):
    t = tile([_member(i, n, r) for i, (n, r) in enumerate(loops)])
    return None if isinstance(t, str) else (int(t[0]), int(t[1]))


@exercise("7.1", points=10, hints=(
    "Start from the reductions: if there are any, they fix the tile.",
    "Different reduction shapes cannot share a kernel.",
    "A pointwise node fits a reduction's tile when it covers the reduced values (n) or "
    "the whole input (n * r).",
))
def check_kernel_tile(sol):
    """Decide whether loop nests can share a kernel"""
    rng = random.Random(7)
    cases = [[(100, 1), (10, 10)], [(10, 10), (10, 1)], [(100, 1), (50, 1)],
             [(10, 10), (100, 1), (5, 20)], [(7, 1)], [(6, 4), (6, 4), (24, 1), (6, 1)]]
    for _ in range(40):
        n, r = rng.choice([(6, 4), (10, 10), (3, 8), (12, 2)])
        pool = [(n, r), (n * r, 1), (n, 1), (n * 2, 1), (r, n), (n, r * 2)]
        cases.append([rng.choice(pool) for _ in range(rng.randint(1, 4))])
    for loops in cases:
        got, want = sol.kernel_tile(loops), _reference_tile(loops)
        got = None if got is None else tuple(int(v) for v in got)
        assert got == want, f"kernel_tile({loops}) returned {got}; expected {want}"


def _schedules():
    x, w = torch.randn(10, 10), torch.randn(10, 10)
    fns = [(lambda x: x * 2 + 3, [torch.randn(17)]),
           (lambda x: torch.softmax(x, -1), [x]),
           (lambda x: (x.sin(), x.cos()), [x]),
           (lambda x, w: (x.cos() @ w).relu(), [x, w]),
           (lambda x: (x * x).sum(1).sqrt(), [x]),
           (lambda x, w: ((y := x.exp()) @ w) + y, [x, w])]
    for fn, args in fns:
        gm = make_fx(fn, decomposition_table=core_aten_decompositions())(*args)
        graph = lower_graph(gm, args)
        for fuse in (True, False):
            yield Scheduler(graph, fuse=fuse, record_metrics=False)


@exercise("7.2", points=10, hints=(
    "Count per kernel: what it reads from memory, and what it writes to memory.",
    "A buffer read by two nodes of the same kernel is loaded once; one the kernel "
    "computes itself is not loaded at all.",
    "A computed buffer is stored only when someone outside the kernel needs it: the "
    "caller, or another kernel.",
))
def check_bytes_moved(sol):
    """Count the bytes a schedule moves"""
    for s in _schedules():
        kernels = [[(n.get_name(), sorted(n.read_names())) for n in k.get_nodes()]
                   for k in s.kernels]
        numel = {name: int(s.numel(name)) for name in s.buffers if s.buffers[name].layout}
        got = sol.bytes_moved(kernels, numel, set(s.output_names))
        assert got == int(s.num_bytes_accessed), (
            f"for kernels {kernels} (outputs {sorted(s.output_names)}) you count {got} bytes; "
            f"the scheduler counts {s.num_bytes_accessed}")


@exercise("7.3", points=10, hints=(
    "Walk the steps; at each: allocate what starts, measure, free what ends.",
    "Freed storages wait in a pool per size; reuse takes from the pool of exactly the "
    "buffer's size.",
    "The pool is a stack: the most recently freed storage is taken first. The peak is "
    "measured before the frees.",
))
def check_plan_reuse(sol):
    """Plan buffer reuse and peak memory"""
    rng = random.Random(3)
    for trial in range(30):
        n_steps = rng.randint(3, 9)
        rows = []
        for i in range(rng.randint(1, 8)):
            first = rng.randrange(n_steps)
            last = rng.choice([rng.randint(first, n_steps - 1), n_steps])
            rows.append((f"buf{i}", rng.choice([256, 512, 1024]), first, last))
        lifetimes = [BufferLifetime(name, nbytes, first, last, name) for name, nbytes, first, last in rows]
        sizes = {b.name: b.nbytes for b in lifetimes}
        _, want_peak = assign_storage(lifetimes, [f"k{i}" for i in range(n_steps)], sizes.__getitem__)
        want = {b.name: b.storage for b in lifetimes}
        got, peak = sol.plan_reuse(rows, n_steps)
        assert dict(got) == want, f"plan_reuse({rows}, {n_steps}) storages {got}; expected {want}"
        assert peak == want_peak, f"plan_reuse({rows}, {n_steps}) peak {peak}; expected {want_peak}"


# -- 7.4 ----------------------------------------------------------------------------------------
# Each returns e too, so that e is a buffer of its own (not inlined into its readers) and the
# scheduler must decide whether e's node may join the kernel of a node reading it.
def _reversed_rows(x):
    e = x.exp()
    return (e * e.flip(1)).sum(1), e  # the reduction reads e at the mirrored point of its row


def _transposed(x):
    e = x.exp()
    return e + e.t(), e  # a pointwise node reads e at another point


def _epilogue_reads_one_column(x):
    e = x.exp()
    return e.sum(1) + e[:, 0], e  # once per row, after the row's loop: one element's value


FUSION_CASES: list[tuple[str, Callable, tuple[int, ...]]] = [
    ("softmax over rows", lambda x: torch.softmax(x, -1), (9, 13)),
    ("softmax over columns", lambda x: torch.softmax(x, 0), (9, 13)),
    ("layer norm", lambda x: F.layer_norm(x, (13,)), (7, 13)),
    ("x - x.amax(1) and its exp", lambda x: (x - x.amax(1, keepdim=True)).exp(), (6, 11)),
    ("a row read mirrored", _reversed_rows, (6, 10)),
    ("a transposed read", _transposed, (8, 8)),
    ("an epilogue reading one element of each row", _epilogue_reads_one_column, (5, 12)),
    ("a chain of pointwise ops", lambda x: (x.sin() * 2).cos() + x, (31,)),
]


class _RuleSpy:
    """The learner's rule as a row of ``fusion.RULES``. Remembers its first exception (the
    compiler would turn it into an eager fallback) and the first pair on which its verdict
    differs from the scheduler's own rule."""

    def __init__(self, rule: Callable):
        self.rule, self.calls = rule, 0
        self.error: Exception | None = None
        self.disagreement: str | None = None

    def __call__(self, s, a, b) -> tuple[bool, str]:
        self.calls += 1
        try:
            mine = self.rule(a, b)
        except Exception as e:
            self.error = self.error or e
            raise
        want = fusion._reads_line_up(s, a, b)
        if not (isinstance(mine, tuple) and len(mine) == 2 and isinstance(mine[0], bool)):
            self.disagreement = self.disagreement or f"return (ok: bool, reason: str), not {mine!r}"
        elif mine[0] != want[0] and self.disagreement is None:
            self.disagreement = (
                f"fusing {sorted(a.get_names())} with {sorted(b.get_names())}: your rule says "
                f"{mine}; the scheduler's {want}")
        return mine


@contextlib.contextmanager
def learner_fusion_rule(rule: Callable) -> Iterator[_RuleSpy]:
    """Run the scheduler with ``rule(a, b)`` in place of its own ``_reads_line_up``; C++ kernels
    for CPU tensors (a wrong fusion reads wrong values there)."""
    spy = _RuleSpy(rule)
    i = fusion.RULES.index(fusion._reads_line_up)
    saved = config.inductor.cpu_backend
    fusion.RULES[i], config.inductor.cpu_backend = spy, "cpp"
    mc.reset()
    try:
        yield spy
    finally:
        fusion.RULES[i], config.inductor.cpu_backend = fusion._reads_line_up, saved
        mc.reset()


@exercise("7.4", points=20, hints=(
    "Only values that another member of the same kernel computes matter: a buffer read from "
    "memory is there whole, whichever element a member asks for.",
    "Sort each such read by its writer: does the writer make one value per row of the tile, or "
    "one per element? Each kind is available at different points of the kernel's loops.",
    "A per-row value is there for the whole of its row; a per-element value only at its own "
    "point, which is a row of one element. A member that runs once per row without reducing "
    "runs after the row's loop: what per-element value would it see?",
))
def check_reads_line_up(sol):
    """Write a fusion rule that the real scheduler uses"""
    for name, fn, shape in FUSION_CASES:
        x = torch.randn(shape)
        with learner_fusion_rule(sol.reads_line_up) as spy:
            got = mc.compile(fn, backend="inductor")(x)
        if spy.error is not None:
            raise spy.error
        assert spy.disagreement is None, f"{name}: {spy.disagreement}"
        assert spy.calls > 0, f"{name}: the scheduler never asked your rule"
        torch.testing.assert_close(got, fn(x), msg=lambda m: (
            f"{name}, compiled with your rule deciding the fusions, on a {tuple(shape)} input\n{m}"))
