"""Checks for exercises/ex08_triton_codegen.py (notebook 08: Triton code generation).

Each check swaps the learner's piece into the real Triton backend (``codegen/triton_ops.py``,
``triton_kernel.py``, ``triton_reductions.py``), compiles graphs through
``mc.compile(backend="inductor")`` with Triton kernels (on a GPU, or on CPU tensors through
Triton's interpreter), and compares with eager.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import sympy
import torch

from minicompile import config
from minicompile.grading import exercise
from minicompile.inductor.codegen import triton_kernel, triton_ops, triton_reductions
from minicompile.inductor.runtime import triton_heuristics
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing

from .ex09_openmp_codegen import _eval_c, _special, compare, reached, swapped
from .ex09_openmp_codegen import cpp_backend as _compiled_sources


def device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    assert triton_heuristics.INTERPRET, (
        "Triton kernels need a GPU, or TRITON_INTERPRET=1 set before Python starts to run them on "
        "CPU tensors (bash course.sh lab and bash course.sh test set it)")
    return "cpu"


@contextlib.contextmanager
def triton_backend() -> Iterator[list]:
    """Triton kernels for CPU tensors too; yields the compiled graphs' output code."""
    with _compiled_sources() as sources:
        saved = config.inductor.cpu_backend
        config.inductor.cpu_backend = "triton"
        try:
            yield sources
        finally:
            config.inductor.cpu_backend = saved


# --- 8.1 ------------------------------------------------------------------------------------------

@exercise("8.1", points=10, hints=(
    "Run your templates on a NaN in each operand position: eager propagates it either way.",
    "A comparison with NaN is false in Triton too: which operand does your tl.where pick "
    "when one of them is NaN?",
    "Test for NaN explicitly where the comparison alone would drop it.",
))
def check_triton_nan_ops(sol):
    """Triton templates of maximum, minimum, remainder"""
    rows = sol.triton_nan_ops()
    assert set(rows) >= {"maximum", "minimum", "remainder"}, sorted(rows)
    rows = {k: rows[k] for k in ("maximum", "minimum", "remainder")}
    dev = device()
    with triton_backend() as sources, swapped(triton_ops.TRITON_OPS, rows):
        for dtype in (torch.float32, torch.int64):
            a, b = _special(dtype).to(dev), _special(dtype).flip(0).to(dev)
            compare(lambda x, y: torch.maximum(x, y), a, b, what=f"torch.maximum on {dtype}")
            compare(lambda x, y: torch.minimum(x, y), a, b, what=f"torch.minimum on {dtype}")
        a = torch.tensor([-7.0, 7.0, -7.5, 5.5, -0.5, 9.0, -9.0, 0.0], device=dev)
        b = torch.tensor([3.0, -3.0, 2.0, 2.5, 4.0, 3.0, -4.5, 2.0], device=dev)
        compare(lambda x, y: torch.remainder(x, y), a, b, what="torch.remainder(a, b)")
        compare(lambda x, y: torch.remainder(x * 3, y) + 1, a, b, what="remainder(3a, b) + 1")
    for op, template in rows.items():
        assert reached(template, "\n".join(sources)), f"your {op} template never reached Triton"


# --- 8.2 ------------------------------------------------------------------------------------------

@exercise("8.2", points=10, hints=(
    "An expression is a tree: print its leaves, then each operator from its printed "
    "arguments.",
    "Print the arguments first (recursively), then combine them.",
    "What happens to (a + b) when it is pasted into x * _ ?",
))
def check_triton_index(sol):
    """Print SymPy index expressions as Triton"""
    x, y = sympy.symbols("x y", integer=True, nonnegative=True)
    unit = [(3 * x + y, {x: 2, y: 5}), (FloorDiv(x, 4), {x: 13}),
            (ModularIndexing(x + 1, 3, 5), {x: 29}), (7 * ModularIndexing(x, 1, 4) + 2, {x: 10}),
            ((x + 1) * (y + 2), {x: 3, y: 4}), (x ** 2 + 1, {x: 6})]
    for expr, env in unit:
        text = sol.triton_index(expr)
        assert isinstance(text, str), f"triton_index({expr}) returned {text!r}, not a str"
        got = _eval_c(f"2 * {text}".replace("//", "/"), env)
        assert got == 2 * int(expr.subs(env)), (
            f"triton_index({expr}) = {text!r}: 2 * {text} is {got} at {env}, "
            f"expected {2 * int(expr.subs(env))}")
    dev = device()
    t = torch.randn(6, 10, device=dev)
    graphs: list[tuple[str, Callable]] = [
        ("a transpose made contiguous", lambda v: v.t().contiguous() * 2),
        ("a reshape of a transpose", lambda v: v.t().reshape(5, 12) + 1),
        ("every other row, every third column", lambda v: v[::2, 1::3].sin()),
        ("a 3-D permute", lambda v: v.view(2, 3, 10).permute(2, 0, 1) - 1),
        ("unfold with step 2", lambda v: v.unfold(1, 3, 2) * 3),
        ("sum over the columns of a transpose", lambda v: v.t().sum(1)),
    ]
    with triton_backend() as sources, _printer(sol.triton_index):
        for what, fn in graphs:
            compare(fn, t, what=what)
        assert sources, "nothing was compiled"


@contextlib.contextmanager
def _printer(print_index: Callable[[sympy.Expr], str]) -> Iterator[None]:
    def learner_texpr(expr):
        return print_index(sympy.sympify(expr))

    saved = triton_ops.texpr, triton_kernel.texpr
    triton_ops.texpr = triton_kernel.texpr = learner_texpr
    try:
        yield
    finally:
        triton_ops.texpr, triton_kernel.texpr = saved


# --- 8.3 ------------------------------------------------------------------------------------------

REDUCTIONS = ("sum", "prod", "max", "min", "any")


@exercise("8.3", points=10, hints=(
    "Lanes past the end of a row are loaded too, with the value you choose for them.",
    "That value must not change the result: for a sum, which value changes nothing?",
    "For max, which value is below every element, negative ones too?",
))
def check_persistent_reduction(sol):
    """Neutral values and axis-1 reductions of a persistent kernel"""
    neutral = {r: (lambda d, r=r: sol.persistent_reduction(r, d)[0]) for r in REDUCTIONS}
    rows = {r: sol.persistent_reduction(r, torch.float32)[1] for r in REDUCTIONS}
    dev = device()
    x = torch.randn(5, 37, device=dev) * 10  # 37 columns: RBLOCK 64, 27 lanes past each row
    x[1] = -x[1].abs() - 1  # an all-negative row
    x[2, 30] = float("nan")
    x[3] = x[3].abs() + 1  # an all-positive row
    ints = torch.randint(-50, -1, (4, 23), device=dev)
    with triton_backend() as sources, swapped(triton_reductions.NEUTRAL, neutral), \
            swapped(triton_reductions.REDUCE_ROWS, rows):
        compare(lambda t: t.sum(1), x, what="row sums", atol=1e-4)
        compare(lambda t: t.amax(1), x, what="row max")
        compare(lambda t: t.amin(1), x, what="row min")
        compare(lambda t: (1 + t / 100).prod(1), x, what="row products", atol=1e-5)
        compare(lambda t: (t > 25).any(1), x, what="row any")
        compare(lambda t: t.amax(1), ints, what="row max of negative int64")
        compare(lambda t: t.amin(1) + t.sum(1), ints, what="row min + row sum of int64")
        compare(lambda t: t.amax(1, keepdim=True) * t.sum(1, keepdim=True), x[[0, 1, 3]],
                what="a row's max and sum in one kernel")
    for r, template in rows.items():
        assert reached(template, "\n".join(sources)), (
            f"your {r} reduction never reached a kernel")
