"""Checks for exercises/ex09_openmp_codegen.py (notebook 09: C++/OpenMP code generation).

Each check swaps the learner's piece into the real C++ backend (``codegen/cpp_ops.py``), compiles
graphs through ``mc.compile(backend="inductor")`` on CPU tensors, and compares the generated
kernels' results with eager PyTorch. It also checks that the piece really reached the generated
C++, so a check cannot pass by never running it.
"""

from __future__ import annotations

import contextlib
import re
from typing import Callable, Iterator

import sympy
import torch

import minicompile as mc
from minicompile import config
from minicompile.grading import exercise
from minicompile.inductor import backend as inductor_backend
from minicompile.inductor.codegen import cpp, cpp_ops
from minicompile.inductor.codegen.cpp_ops import C_OPS, REDUCTIONS, ReductionKind
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing

NAN, INF = float("nan"), float("inf")


@contextlib.contextmanager
def cpp_backend() -> Iterator[list]:
    """CPU kernels by the C++ backend; yields the list of compiled graphs' output code."""
    sources: list[str] = []
    compile_graph = inductor_backend.compile_fx_inner

    def spy(gm, example_inputs, **kwargs):
        compiled = compile_graph(gm, example_inputs, **kwargs)
        sources.append(compiled.source)
        return compiled

    saved = config.inductor.cpu_backend
    config.inductor.cpu_backend = "cpp"
    inductor_backend.compile_fx_inner = spy
    mc.reset()
    try:
        yield sources
    finally:
        inductor_backend.compile_fx_inner = compile_graph
        config.inductor.cpu_backend = saved
        mc.reset()


@contextlib.contextmanager
def swapped(table: dict, rows: dict) -> Iterator[None]:
    saved = {k: table[k] for k in rows}
    table.update(rows)
    try:
        yield
    finally:
        table.update(saved)


def compare(fn: Callable, *args: torch.Tensor, what: str, atol: float = 1e-6,
            rtol: float = 1e-5, dynamic: bool | None = None) -> None:
    """``mc.compile(fn)`` against eager (each output of a tuple), with the numbers of the first
    difference. A sum of thousands of float32 values depends on the order of its additions
    (vector lanes, threads): compare sums with an ``atol`` to match. Integer results are
    compared exactly. ``dynamic=True`` compiles with symbolic sizes."""
    mc.reset()
    got, want = mc.compile(fn, dynamic=dynamic)(*args), fn(*args)
    if isinstance(want, torch.Tensor):
        got, want = (got,), (want,)
    for k, (g, w) in enumerate(zip(got, want)):
        label = what if len(want) == 1 else f"{what}, output {k}"
        _same(g, w, args, label, atol, rtol)


def _same(got: torch.Tensor, want: torch.Tensor, args: tuple, what: str, atol: float,
          rtol: float) -> None:
    if not want.dtype.is_floating_point:  # integers exactly: 2**24 + 1 is not 2**24
        atol = rtol = 0
    try:
        torch.testing.assert_close(got, want, equal_nan=True, atol=atol, rtol=rtol)
    except AssertionError as e:
        bad = ~torch.isclose(got.double(), want.double(), rtol=rtol, atol=atol, equal_nan=True)
        k = bad.flatten().nonzero()[0].item() if bad.any() else 0
        inputs = ", ".join(f"{a.flatten()[k].item()!r}" if a.numel() == bad.numel() else
                           f"a {tuple(a.shape)} {a.dtype} tensor" for a in args)
        raise AssertionError(f"{what}: element {k}: compiled {got.flatten()[k].item()!r}, eager "
                             f"{want.flatten()[k].item()!r} (inputs there: {inputs})\n{e}") from None


def reached(template: str, source: str) -> bool:
    """Does ``template`` appear in ``source`` with any names for its ``{fields}``?"""
    pattern = re.sub(r"\\\{\w*\\\}", r"[\\w:<>\\s]+", re.escape(template))
    return re.search(pattern, source) is not None


# --- 9.1 ------------------------------------------------------------------------------------------

def _special(dtype: torch.dtype, n: int = 37) -> torch.Tensor:
    """Values where wrong templates show: NaN, -0.0 and infinities for floats; for integers,
    values beyond 2**24, where a detour through float32 rounds (odd ones to even), at the same
    places in ``x`` and ``x.flip(0)`` (``n - 1`` is a multiple of 3 and 6)."""
    x = torch.linspace(-30, 30, n, dtype=torch.float64)
    if dtype.is_floating_point:
        x[::5] = NAN
        x[1::7] = -0.0
        x[2], x[3] = INF, -INF
        return x.to(dtype)
    x = x.to(dtype)
    i = torch.arange(n, dtype=dtype)
    x[::3] = 2 ** 24 + 1 + i[::3]  # 2**24 + 1, + 4, + 7, ...: float32 keeps only even ones
    x[1::6] = -(2 ** 40) - 1 - 2 * i[1::6]
    return x


@exercise("9.1", points=10, hints=(
    "Run your templates on a NaN in each operand position: eager propagates it either way.",
    "C++'s comparisons with NaN are all false: which branch of a ?: does a NaN operand "
    "take in your template?",
    "Test for NaN explicitly where the comparison alone would drop it (the same template "
    "also serves int64 operands).",
))
def check_nan_aware_ops(sol):
    """C++ templates of maximum, minimum, relu, sigmoid"""
    rows = sol.nan_aware_ops()
    assert set(rows) >= {"maximum", "minimum", "relu", "sigmoid"}, (
        f"return templates for maximum, minimum, relu and sigmoid; got {sorted(rows)}")
    rows = {k: rows[k] for k in ("maximum", "minimum", "relu", "sigmoid")}
    with cpp_backend() as sources, swapped(C_OPS, rows):
        for dtype in (torch.float32, torch.float64, torch.int64):
            a, b = _special(dtype), _special(dtype).flip(0)
            compare(lambda x, y: torch.maximum(x, y), a, b, what=f"torch.maximum on {dtype}")
            compare(lambda x, y: torch.minimum(x, y), a, b, what=f"torch.minimum on {dtype}")
            compare(lambda x: torch.relu(x), a, what=f"torch.relu on {dtype}")
            compare(lambda x, y: torch.relu(torch.maximum(x, y) - 3), a, b,
                    what=f"relu(maximum(a, b) - 3) on {dtype}")
        for dtype in (torch.float32, torch.float64):
            compare(lambda x: torch.sigmoid(x), _special(dtype, 101) * 4, what=f"torch.sigmoid on {dtype}")
        compare(lambda x: torch.sigmoid(x).clamp(0.1, 0.9), torch.randn(6, 7) * 5,
                what="sigmoid then clamp")
    for op, template in rows.items():
        assert reached(template, "\n".join(sources)), f"your {op} template never reached the C++"


# --- 9.2 ------------------------------------------------------------------------------------------

def _index_graphs() -> list[tuple[str, Callable, tuple]]:
    x = torch.randn(6, 10)
    return [
        ("a transpose made contiguous", lambda t: t.t().contiguous() * 2, (x,)),
        ("a reshape of a transpose", lambda t: t.t().reshape(5, 12) + 1, (x,)),
        ("every other row, every third column", lambda t: t[::2, 1::3].sin(), (x,)),
        ("a 3-D permute", lambda t: t.view(2, 3, 10).permute(2, 0, 1) - 1, (x,)),
        ("unfold with step 2", lambda t: t.unfold(1, 3, 2) * 3, (x,)),
        ("sum over the columns of a transpose", lambda t: t.t().sum(1), (x,)),
        ("a diagonal", lambda t: torch.diagonal(t.view(10, 6)[:6]) + 1, (x,)),
        ("sizes as symbols", lambda t: t.t().reshape(-1) * 2, (torch.randn(7, 9),)),
    ]


@exercise("9.2", points=10, hints=(
    "An expression is a tree: print its leaves, then each operator from its printed "
    "arguments.",
    "Print the arguments first (recursively), then combine them.",
    "What happens to (a + b) when it is pasted into x * _ ?",
))
def check_print_index(sol):
    """Print SymPy index expressions as C++"""
    for expr, env in index_cases():
        text = sol.print_index(expr)
        assert isinstance(text, str), f"print_index({expr}) returned {text!r}, not a str"
        check_pasted(expr, text, env, _eval_c, "print_index")
    powers: list[sympy.Expr] = []
    with cpp_backend() as sources, _printer(_noting_powers(sol.print_index, powers)):
        for what, fn, args in _index_graphs():
            compare(fn, *args, what=what)
        for what, fn, args in power_graphs():
            compare(fn, *args, what=what, dynamic=True)
        assert powers, "no kernel index held a power (s0**2): the check did not reach it"
        mark_dynamic = torch.randn(11, 13)
        mc.reset()
        f = mc.compile(lambda t: t.t().reshape(-1) + 1, dynamic=True)
        for t in (mark_dynamic, torch.randn(5, 3)):
            torch.testing.assert_close(f(t), t.t().reshape(-1) + 1)
        assert sources, "nothing was compiled"


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


def _noting_powers(print_index: Callable, powers: list) -> Callable:
    def printer(expr):
        powers.extend(expr.atoms(sympy.Pow))
        return print_index(expr)
    return printer


def _eval_c(text: str, env: dict) -> int:
    """Evaluate the C++ integer expression ``text`` (only + * / % and parentheses) in Python,
    with C's truncating ``/`` (the same as floor division for the non-negative values here)."""
    code = text.replace("/", "//")
    return int(eval(code, {}, {str(k): v for k, v in env.items()}))  # noqa: S307 (a test helper)


@contextlib.contextmanager
def _printer(print_index: Callable[[sympy.Expr], str]) -> Iterator[None]:
    def learner_cexpr(expr):
        return print_index(sympy.sympify(expr))

    saved = cpp_ops.cexpr, cpp.cexpr
    cpp_ops.cexpr = cpp.cexpr = learner_cexpr
    try:
        yield
    finally:
        cpp_ops.cexpr, cpp.cexpr = saved


# --- 9.3 ------------------------------------------------------------------------------------------

def _rows_with_specials(dtype: torch.dtype) -> torch.Tensor:
    x = (torch.randn(5, 3001) * 10).to(dtype)
    if dtype.is_floating_point:
        x[1] = -x[1].abs() - 1  # an all-negative row
        x[2, 2999] = NAN  # a NaN near the end of a row
        x[3] = x[3].abs() + 1  # an all-positive row
    return x


def _infinite_rows(dtype: torch.dtype) -> torch.Tensor:
    """Rows of -inf (a max starting from the lowest finite value returns that instead), one of
    them with a NaN, beside an ordinary row."""
    x = torch.full((4, 3001), -INF, dtype=dtype)
    x[1] = torch.randn(3001, dtype=dtype)
    x[2, 1500] = NAN
    return x


def _wide_ints() -> torch.Tensor:
    """int64 rows beyond 2**24, where float32 keeps only even numbers: the max is odd."""
    x = torch.randint(2 ** 24, 2 ** 24 + 1000, (3, 3001)) * 2
    x[:, 2000] = 2 ** 24 + 2001  # the odd maximum (2**24 + 2000 in float32)
    x[:, 2001] = -(2 ** 24) - 2001  # and minimum
    return x


@exercise("9.3", points=10, hints=(
    "Each row is an initial value, an update, and how OpenMP combines the threads' partial "
    "results.",
    "The accumulator must start at the value that changes nothing.",
    "For max, what is below every element, the most negative ones too?",
))
def check_reduction_rows(sol):
    """C++ accumulators of sum, prod, max, min, any"""
    rows = sol.reduction_rows()
    assert set(rows) >= {"sum", "prod", "max", "min", "any"}, sorted(rows)
    kinds = {k: ReductionKind(init, update, omp=omp) for k, (init, update, omp) in rows.items()
             if k in ("sum", "prod", "max", "min", "any")}
    threads = torch.get_num_threads()
    with cpp_backend() as sources, swapped(REDUCTIONS, kinds), _threads(threads):
        for n in (1, 2):
            torch.set_num_threads(n)
            for dtype in (torch.float32, torch.float64):
                x = _rows_with_specials(dtype)
                compare(lambda t: t.sum(1), x, what=f"row sums of {dtype}", atol=1e-2)
                compare(lambda t: t.amax(1), x, what=f"row max of {dtype} ({n} threads)")
                compare(lambda t: t.amin(1), x, what=f"row min of {dtype} ({n} threads)")
                compare(lambda t: (1 + t / 1e4).prod(1), x, what=f"row products of {dtype}",
                        atol=1e-4, rtol=1e-4)
                compare(lambda t: (t > 25).any(1), x, what=f"row any of {dtype}")
                compare(lambda t: t[:2].amax(1), x, what="max of two long rows")
                compare(lambda t: t.amax(), -x.abs() - 1, what="max of an all-negative tensor")
                compare(lambda t: t.amin(), x.abs() + 1, what="min of an all-positive tensor")
            for dtype in (torch.float32, torch.float64):
                rows = _infinite_rows(dtype)
                compare(lambda t: t.amax(1), rows, what=f"row max with a row of -inf ({dtype})")
                compare(lambda t: t.amin(1), -rows, what=f"row min with a row of +inf ({dtype})")
            wide = _wide_ints()
            compare(lambda t: t.amax(1), wide, what=f"row max of int64 beyond 2**24 ({n} threads)")
            compare(lambda t: t.amin(1), wide, what=f"row min of int64 beyond 2**24 ({n} threads)")
            compare(lambda t: t.sum(1), wide, what="row sums of int64 beyond 2**24")
            ints = torch.randint(-50, -1, (3, 40001))
            compare(lambda t: t.amax(1), ints, what=f"row max of negative int64 ({n} threads)")
            compare(lambda t: t.sum(1), ints, what="row sums of int64")
            compare(lambda t: (t > -2).any(1), ints, what="row any of a bool test")
    for kind, row in kinds.items():
        assert reached(row.update, "\n".join(sources)), f"your {kind} update never reached the C++"


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    try:
        yield
    finally:
        torch.set_num_threads(n)
