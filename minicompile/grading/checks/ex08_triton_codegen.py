"""Checks for exercises/ex08_triton_codegen.py (notebook 08: Triton code generation).

Each check swaps the learner's piece into the real Triton backend (``codegen/triton_ops.py``,
``triton_kernel.py``, ``triton_reductions.py``, ``triton_frames.py``), compiles graphs through
``mc.compile(backend="inductor")`` with Triton kernels (on a GPU, or on CPU tensors through
Triton's interpreter), and compares with eager.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import numpy as np
import sympy
import torch
from triton.runtime import interpreter

from minicompile import config
from minicompile.grading import exercise
from minicompile.inductor.codegen import triton, triton_frames, triton_kernel, triton_ops
from minicompile.inductor.codegen.common import KernelSignature
from minicompile.inductor.runtime import triton_heuristics
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing

from .ex09_openmp_codegen import (Graph, _attribute, _special, compare,
                                  compare_written_by, fence, reached, swapped)
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
    """Triton kernels for CPU tensors too, with a GPU's NaN rules; yields the compiled graphs'
    output code."""
    with _compiled_sources() as sources, gpu_nan_rules():
        saved = config.inductor.cpu_backend
        config.inductor.cpu_backend = "triton"
        try:
            yield sources
        finally:
            config.inductor.cpu_backend = saved


@contextlib.contextmanager
def gpu_nan_rules() -> Iterator[None]:
    """Under Triton's interpreter, ``tl.maximum``/``tl.minimum`` and ``tl.max``/``tl.min`` drop
    a NaN operand as they do on a GPU (PTX ``max.f32``, NumPy's ``fmax``). Some interpreter
    versions propagate it instead (NumPy's ``maximum``): a template built on them would pass on
    CPU and return numbers where torch returns NaN on the GPU. A no-op on a GPU."""
    patches = []  # (owner, attribute, replacement), where this Triton version has them
    if triton_heuristics.INTERPRET:
        builder = getattr(interpreter, "InterpreterBuilder", None)
        for name, numpy_fn in (("create_maxnumf", np.fmax), ("create_minnumf", np.fmin)):
            if hasattr(builder, name):
                patches.append((builder, name, lambda self, a, b, f=numpy_fn:
                                self.binary_op(a, b, f)))
        reduce_ops = getattr(interpreter, "ReduceOps", None)
        if hasattr(reduce_ops, "min_max"):
            own_min_max = reduce_ops.min_max
            skip_nan = {np.max: np.nanmax, np.amax: np.nanmax, np.min: np.nanmin,
                        np.amin: np.nanmin}

            def min_max(self, input, val_reduce_op, idx_reduce_op=None):
                return own_min_max(self, input, skip_nan.get(val_reduce_op, val_reduce_op),
                                   idx_reduce_op)
            patches.append((reduce_ops, "min_max", min_max))
    with contextlib.ExitStack() as stack:
        for owner, name, value in patches:
            stack.enter_context(_attribute(owner, name, value))
        yield


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
        for dtype in (torch.float32, torch.int64):  # int64 beyond 2**24 (no float32 detour)
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

def index_cases() -> list[tuple[sympy.Expr, dict]]:
    """Index expressions and values at which a missing parenthesis or a wrong operator changes
    the result when the printed text is pasted into a larger expression (``check_pasted``):
    ``2 * x // 4`` is ``2 * (x // 4)`` at x = 13, not at x = 14."""
    x, y = sympy.symbols("x y", integer=True, nonnegative=True)
    return [(3 * x + y, {x: 2, y: 5}), (FloorDiv(x, 4), {x: 14}),
            (ModularIndexing(x + 1, 3, 5), {x: 29}), (7 * ModularIndexing(x, 1, 4) + 2, {x: 10}),
            ((x + 1) * (y + 2), {x: 3, y: 4}), (x ** 2 + 1, {x: 6}),
            (FloorDiv(x, y ** 2), {x: 50, y: 3}), (ModularIndexing(x, y ** 2, 7), {x: 100, y: 3}),
            (ModularIndexing(x, 1, y + 2) * 3, {x: 23, y: 4}), ((x + 2) ** 2, {x: 3})]


PASTED = ("2 * {}", "{} * 3", "1000 - {}", "{} % 1000")  # where kernels paste an index


def check_pasted(expr: sympy.Expr, text: str, env: dict, evaluate: Callable[[str, dict], int],
                 printer: str) -> None:
    """``text``, the printed ``expr``, pasted into each of ``PASTED``, against SymPy's value."""
    want = int(expr.subs(env))
    for context in PASTED:
        pasted = context.format(text)
        got = evaluate(pasted, env)
        expected = int(eval(context.format(want)))  # noqa: S307 (numbers only)
        assert got == expected, (f"{printer}({expr}) = {text!r}: pasted as {pasted} it is {got} "
                                 f"at {env}, expected {expected}")


def power_graphs() -> list[tuple[str, Callable, tuple]]:
    """Graphs whose kernels index with a power: a cube of side s0 has strides s0**2, s0, 1
    (compiled with symbolic sizes, ``dynamic=True``)."""
    cube = torch.randn(5, 5, 5)
    return [("a permuted cube with symbolic sides", lambda t: t.permute(2, 0, 1).contiguous() + 1,
             (cube,)),
            ("a cube summed over its first dimension", lambda t: t.sum(0), (cube,))]


class _TL:
    """What an index printed for Triton may call, evaluated in Python."""
    minimum, maximum = staticmethod(min), staticmethod(max)


def _eval_triton(text: str, env: dict) -> int:
    return int(eval(text, {"tl": _TL}, {str(k): v for k, v in env.items()}))  # noqa: S307


def _min_max_cases() -> list[tuple[sympy.Expr, dict]]:
    """Min and Max of two and three arguments (each argument the result at one of the values)."""
    x, y, z = sympy.symbols("x y z", integer=True, nonnegative=True)
    values = [{x: 1, y: 5, z: 3}, {x: 5, y: 1, z: 3}, {x: 5, y: 3, z: 1}]
    return [(sympy.Min(x, 7) * 3, {x: 9}), (sympy.Max(x + 1, y) + 2, {x: 4, y: 3}),
            (FloorDiv(sympy.Min(x, 40), 3), {x: 50})] + [
        (f(x, y, z) + 1, env) for f in (sympy.Min, sympy.Max) for env in values] + [
        (f(x, y, z) + 1, {x: v[y], y: v[z], z: v[x]}) for f in (sympy.Min, sympy.Max)
        for v in values]


@exercise("8.2", points=10, hints=(
    "An expression is a tree: print its leaves, then each operator from its printed "
    "arguments.",
    "Print the arguments first (recursively), then combine them.",
    "What happens to (a + b) when it is pasted into x * _ ? And to a // b pasted into 2 * _ ?",
))
def check_triton_index(sol):
    """Print SymPy index expressions as Triton"""
    for expr, env in index_cases() + _min_max_cases():
        text = sol.triton_index(expr)
        assert isinstance(text, str), f"triton_index({expr}) returned {text!r}, not a str"
        check_pasted(expr, text, env, _eval_triton, "triton_index")
    dev = device()
    t = torch.randn(6, 10, device=dev)
    graphs: list[tuple[str, Callable]] = [
        ("a transpose made contiguous", lambda v: v.t().contiguous() * 2),
        ("a reshape of a transpose", lambda v: v.t().reshape(5, 12) + 1),
        ("every other row, every third column", lambda v: v[::2, 1::3].sin()),
        ("a 3-D permute", lambda v: v.view(2, 3, 10).permute(2, 0, 1) - 1),
        ("unfold with step 2", lambda v: v.unfold(1, 3, 2) * 3),
        ("sum over the columns of a transpose", lambda v: v.t().sum(1)),
        ("a diagonal", lambda v: torch.diagonal(v.view(10, 6)[:6]) + 1),
    ]
    powers: list[sympy.Expr] = []

    def printer(expr):
        powers.extend(expr.atoms(sympy.Pow))
        return sol.triton_index(expr)

    with triton_backend() as sources, _printer(printer):
        for what, fn in graphs:
            compare(fn, t, what=what)
        for what, fn, args in power_graphs():
            compare(fn, *(a.to(dev) for a in args), what=what, dynamic=True)
        assert sources, "nothing was compiled"
    assert powers, "no kernel index held a power (s0**2): the check did not reach it"


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

@contextlib.contextmanager
def fenced_launches() -> Iterator[list]:
    """Every Triton launch fenced (``fence``); yields the kinds of kernels launched."""
    launched: list[str] = []
    own_call = triton.TritonKernelObject.__call__

    def call(launcher, *args):
        launched.append(launcher.kind)
        signature = KernelSignature.of(launcher.group)
        fence(launcher.name, launcher.source, lambda *a: own_call(launcher, *a), signature, args)

    with _attribute(triton.TritonKernelObject, "__call__", call):
        yield launched


def _pointwise_graphs(dev: str) -> list[Graph]:
    """Odd sizes (the last program partly masked), special values, wide integers."""
    x = torch.randn(37, device=dev)
    x[3], x[5], x[7] = float("nan"), float("-inf"), float("inf")
    big = torch.randn(1823, 3, device=dev)  # 5469 elements: 6 blocks of 1024 on a GPU
    many = torch.randn(201, 203, device=dev)  # 40803: 3 blocks of 16384 in the interpreter
    ints = _special(torch.int64).to(dev)
    return [("sin(x) * 2 over 37 elements (NaN, infinities)", lambda t: t.sin() * 2, (x,), {}),
            ("x + y over 1823x3 elements", lambda a, b: a + b, (big, big.flip(0)), {}),
            ("a transpose made contiguous (1823x3)", lambda a: a.t().contiguous() - 1, (big,),
             {}),
            ("x * y.t() over 201x203 elements", lambda a, b: a * b.t(), (many, many.t() + 1),
             {}),
            ("two outputs", lambda a: (a.exp(), a.relu() * 3), (x,), {}),
            ("int64 beyond 2**24, plus 1", lambda a: a + 1, (ints,), {}),
            ("one element", lambda a: a * 5, (x[:1],), {})]


@exercise("8.3", points=10, hints=(
    "Grade shows the kernel the backend wrote with your function: read it as Triton would run "
    "it for the last program, the one that runs past the end.",
    "Which lanes of the last program hold no element? Which of your loads and stores touch "
    "them? How many programs cover 37 elements, 64 at a time?",
    "xmask is true for exactly the lanes below xnumel, and every tl.load and tl.store takes it.",
))
def check_pointwise_kernel(sol):
    """A pointwise Triton kernel: its block, mask and grid"""
    with triton_backend(), _attribute(triton_heuristics, "grid", sol.grid):  # (runs at launch)
        compare_written_by(sol.pointwise_kernel, "pointwise_kernel", str, triton_frames,
                           _pointwise_graphs(device()), fenced_launches, "pointwise")


# --- 8.4 ------------------------------------------------------------------------------------------

def _long_rows(dev: str) -> torch.Tensor:
    """7 rows of 3001: longer than one block (the loop's last block partly masked), 7 rows (the
    last program's rows partly masked), and rows where a wrong start value or mask shows: all
    negative, a NaN, all -inf, all positive before a row whose first element is huge (a lane
    one past a row's end reads it)."""
    x = torch.randn(7, 3001, device=dev) * 10
    x[1] = -x[1].abs() - 1
    x[2, 2999] = float("nan")
    x[3] = float("-inf")
    x[4] = x[4].abs() + 1
    x[5, 0] = 1e6
    return x


def _looped_graphs(dev: str) -> list[Graph]:
    x, wide = _long_rows(dev), (torch.randint(2 ** 24, 2 ** 24 + 1000, (3, 3001)) * 2).to(dev)
    wide[:, 2000], wide[:, 2001] = 2 ** 24 + 2001, -(2 ** 24) - 2001  # odd: float32 rounds them
    many = torch.randn(1029, 1100, device=dev)  # several programs, the last partly masked
    return [("row max", lambda t: t.amax(1), (x,), {}),
            ("row min", lambda t: t.amin(1), (-x,), {}),
            ("row sums of 2 * x", lambda t: (t * 2).sum(1), (x,), {"atol": 1e-3}),
            ("row products of 1 + x / 1e4", lambda t: (1 + t / 1e4).prod(1), (x[[0, 1, 4]],),
             {"atol": 1e-5}),
            ("a row's sum plus its max", lambda t: t.sum(1) + t.amax(1), (x[[0, 1, 4, 6]],),
             {"atol": 1e-3}),
            ("row max and min of int64 beyond 2**24", lambda t: t.amax(1) - t.amin(1), (wide,), {}),
            ("row sums of int64 beyond 2**24", lambda t: t.sum(1), (wide,), {}),
            ("1029 row max of 1100", lambda t: t.amax(1), (many,), {}),
            ("row sums, symbolic sizes", lambda t: t.sum(1), (x[[0, 1, 4, 6]],),
             {"atol": 1e-3, "dynamic": True})]


@exercise("8.4", points=10, hints=(
    "Grade shows the kernel written with your function: follow one program through the loop, "
    "for the last block of a row of 3001 and the last program's rows.",
    "Which lanes of the accumulator hold no element of the row? What do they start as, and "
    "what do they become after each step?",
    "A lane outside the row (rmask) or outside the rows (xmask) must keep the start value, and "
    "the start value must change nothing: also for a row of -inf, and for int64.",
))
def check_looped_reduction_kernel(sol):
    """A looped Triton reduction: accumulators, loop, row reduction"""
    with triton_backend():
        compare_written_by(sol.looped_reduction_kernel, "looped_reduction_kernel", str,
                           triton_frames, _looped_graphs(device()), fenced_launches, "looped")


# --- 8.5 ------------------------------------------------------------------------------------------

# small, oblong tiles: several programs along both axes of the odd sizes below, the last row and
# column of tiles partly masked, and a y-step that differs from the x-step
SMALL_TILE = triton_heuristics.Config(8, num_warps=4, YBLOCK=4)


def _tiled_graphs(dev: str) -> list[Graph]:
    """Transposes and permutes at odd sizes (31x17, 129x65, 1x1), of non-contiguous inputs (a
    strided slice, a permuted 3-D tensor), with special values and int64 beyond 2**24."""
    x = torch.randn(31, 17, device=dev)
    x[3, 5], x[30, 16], x[0, 16] = float("nan"), float("-inf"), float("inf")
    wide = torch.randn(129, 65, device=dev)
    cube = torch.randn(5, 7, 9, device=dev)
    ints = (torch.randint(2 ** 24, 2 ** 24 + 1000, (31, 17)) * 2 + 1).to(dev)
    strided = torch.randn(62, 51, device=dev)[::2, 1::3]  # 31x17, neither stride 1
    return [("x.t().contiguous() * 2, 31x17 (NaN, infinities)",
             lambda t: t.t().contiguous() * 2, (x,), {}),
            ("x.t() + y, 129x65", lambda a, b: a.t() + b, (wide, wide.t().contiguous()), {}),
            ("a transpose of a strided slice (31x17 of 62x51)",
             lambda t: t.t().contiguous() - 1, (strided,), {}),
            ("a 3-D permute (5x7x9 to 9x5x7)", lambda t: t.permute(2, 0, 1).contiguous() * 3,
             (cube,), {}),
            ("a permute of a permuted input", lambda t: t.permute(2, 1, 0).contiguous().sin(),
             (cube.permute(1, 2, 0),), {}),
            ("int64 beyond 2**24 transposed, plus 1", lambda t: t.t().contiguous() + 1, (ints,),
             {}),
            ("a 1x1 transpose", lambda t: t.t().contiguous() * 5, (x[:1, :1],), {})]


@exercise("8.5", points=10, hints=(
    "Grade shows the kernel written with your function: follow the program that owns the last "
    "row and the last column of tiles of a 31x17 transpose, in tiles of 4 lines of 8 points.",
    "Which program owns which tile? Program p's tile is row p // xtiles, column p % xtiles of "
    "tiles; how far apart are the first lines of two tiles of one column? How many programs "
    "cover every tile?",
    "xmask must hold y0 < ynumel and x0 < xnumel, every tl.load and tl.store takes it, and "
    "the grid counts the tiles along both axes.",
))
def check_tiled_kernel(sol):
    """A 2-D tiled Triton kernel for transposes: its tile, mask and grid"""
    with triton_backend(), _attribute(triton_heuristics, "tiled_grid", sol.tiled_grid), \
            _attribute(triton_heuristics, "tiled_configs", lambda ycap, xcap: [SMALL_TILE]):
        compare_written_by(sol.tiled_kernel, "tiled_kernel", str, triton_frames,
                           _tiled_graphs(device()), fenced_launches, "tiled")
