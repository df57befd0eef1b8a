"""Checks for exercises/ex09_openmp_codegen.py (notebook 09: C++/OpenMP code generation).

Each check swaps the learner's piece into the real C++ backend (``codegen/cpp_ops.py``), compiles
graphs through ``mc.compile(backend="inductor")`` on CPU tensors, and compares the generated
kernels' results with eager PyTorch. It also checks that the piece really reached the generated
C++, so a check cannot pass by never running it.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, ContextManager, Iterator

import torch

import minicompile as mc
from minicompile import config
from minicompile.grading import exercise
from minicompile.inductor import backend as inductor_backend
from minicompile.inductor.codegen import cpp, cpp_loops
from minicompile.inductor.codegen.common import KernelSignature
from minicompile.inductor.codegen.cpp_ops import C_OPS, REDUCTIONS, ReductionKind

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
            rtol: float = 1e-5, dynamic: bool | None = None, calls: int = 1) -> None:
    """``mc.compile(fn)`` against eager (each output of a tuple), with the numbers of the first
    difference. A sum of thousands of float32 values depends on the order of its additions
    (vector lanes, threads): compare sums with an ``atol`` to match. Integer results are
    compared exactly. ``dynamic=True`` compiles with symbolic sizes; ``calls``: how many times
    the compiled function runs (a race between threads shows in some runs, not in all)."""
    mc.reset()
    compiled, want = mc.compile(fn, dynamic=dynamic), fn(*args)
    if isinstance(want, torch.Tensor):
        want = (want,)
    for call in range(calls):
        got = compiled(*args)
        got = (got,) if isinstance(got, torch.Tensor) else got
        for k, (g, w) in enumerate(zip(got, want)):
            label = what if len(want) == 1 else f"{what}, output {k}"
            _same(g, w, args, label + (f" (run {call + 1})" if call else ""), atol, rtol)


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


FENCE = 1 << 15  # elements past each buffer's storage a launch must leave alone (> any block)
FENCE_BYTE = 0x5A
POISON = {torch.float32: 1.2345e30, torch.float64: 1.2345e30, torch.int64: -0x5A5A5A5A5A,
          torch.int32: -0x5A5A5A5, torch.bool: True}  # what an output holds before its kernel


def fence(name: str, source: str, call: Callable, signature: KernelSignature,
          args: tuple) -> None:
    """``call(*args)``, a kernel launch, on copies of its tensors' storages each followed by a
    fence of ``FENCE`` elements of a known byte, its outputs first filled with ``POISON``. A
    launch that writes into a fence (a lane or an iteration past the end of a buffer: a mask or
    a loop bound off by one, or missing) fails here, on a GPU and on CPU alike, where it would
    otherwise overwrite whatever memory follows; one that leaves an output element unwritten (a
    grid or a loop that stops short) leaves the poison there, which eager does not compute.
    The copies are copied back after the launch."""
    written = set(signature.outputs) - set(signature.inputs)
    names = signature.buffers() + [None] * (len(args) - len(signature.buffers()))
    copies = [_fenced_copy(a, n in written) if isinstance(a, torch.Tensor) else (a, None)
              for a, n in zip(args, names)]
    call(*(c for c, _ in copies))
    for original, (copy, tail) in zip(args, copies):
        if tail is None:
            continue
        assert bool((tail == FENCE_BYTE).all()), (
            f"kernel {name} wrote past the end of a buffer of "
            f"{_bytes(original).numel() // original.element_size()} elements (a lane or an "
            f"iteration that should not run)\n{source}")
        _bytes(original).copy_(_bytes(copy)[:_bytes(original).numel()])


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under ``t``, as bytes."""
    storage = t.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(
        storage, 0, (storage.nbytes(),), (1,))


def _fenced_copy(t: torch.Tensor, poison: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``t`` on a copy of its storage with ``FENCE`` elements of ``FENCE_BYTE`` after it (and
    its own elements ``POISON`` if ``poison``); the fence as bytes."""
    original = _bytes(t)
    raw = torch.full((original.numel() + FENCE * t.element_size(),), FENCE_BYTE,
                     dtype=torch.uint8, device=t.device)
    raw[:original.numel()] = original
    copy = torch.empty(0, dtype=t.dtype, device=t.device).set_(
        raw.untyped_storage(), t.storage_offset(), t.size(), t.stride())
    if poison and t.dtype in POISON:
        copy.fill_(POISON[t.dtype])
    return copy, raw[original.numel():]


@contextlib.contextmanager
def fenced_cpp_launches() -> Iterator[list]:
    """Every C++ kernel call fenced (``fence``); yields the kinds of kernels called."""
    launched: list[str] = []
    own_build = cpp.CppKernel.build

    def build(kernel):
        own_build(kernel)
        own_call = kernel.wrapper_call

        def call(*args):
            launched.append(kernel.group.kind)
            fence(kernel.name, kernel.source, own_call, kernel.signature, args)
        kernel.wrapper_call = call

    with _attribute(cpp.CppKernel, "build", build):
        yield launched


def _raising(fn: Callable, raised: list) -> Callable:
    """``fn``, noting what it raises: a compile that fails falls back to eager, which would hide
    the learner's exception (and ``NotImplementedError`` says the stub is untouched)."""
    def call(*args):
        try:
            return fn(*args)
        except Exception as e:
            raised.append(e)
            raise
    return call


Graph = tuple[str, Callable, tuple, dict]  # (what, function, inputs, options of compare)


def compare_written_by(piece: Callable, name: str, returns: type, table: Any, graphs: list[Graph],
                       fenced: Callable[[], ContextManager[list]], kind: str | None,
                       adapt: Callable = lambda piece: piece) -> None:
    """Each graph compiled with the learner's kernel-writing ``piece`` as ``table.<name>``
    (through ``adapt``, which fits it to the compiler's call), every launch ``fenced``, against
    eager. A compile whose piece raised falls back to eager, which would hide the learner's
    error: it is raised instead. A kernel of ``kind`` must have been written with the piece."""
    calls, raised = [0], []

    def written_by(*args):
        calls[0] += 1
        result = _raising(adapt(piece), raised)(*args)
        assert isinstance(result, returns) and (returns is not list or all(
            isinstance(line, str) for line in result)), (
            f"{name} returned {result!r}, not a {'list of lines' if returns is list else 'str'}")
        return result

    with fenced() as launched, _attribute(table, name, written_by):
        for what, fn, args, options in graphs:
            try:
                compare(fn, *args, what=what, **options)
            finally:
                if raised:
                    raise raised[0]
    assert calls[0] and (kind is None or kind in launched), (
        f"no {kind or ''} kernel was written with your {name}")


@contextlib.contextmanager
def _attribute(obj, name: str, value) -> Iterator[None]:
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, saved)


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

def _pointwise_graphs() -> list[Graph]:
    """Blocks that are not a multiple of a vector: 37 points, 5469 (blocks of 1024, the last
    349), rows of 1001 (a row loop: ``x0`` along a row), special values and wide integers."""
    x = _special(torch.float32)
    big, rows, bias = torch.randn(1823, 3), torch.randn(5, 1001), torch.randn(1001)
    return [("sin(x) * 2 over 37 points (NaN, infinities)", lambda t: t.sin() * 2, (x,), {}),
            ("x + y over 1823x3", lambda a, b: a + b, (big, big.flip(0)), {}),
            ("a transpose made contiguous (1823x3)", lambda a: a.t().contiguous() - 1, (big,),
             {}),
            ("rows of 1001 plus a bias", lambda a, b: (a + b).relu(), (rows, bias), {}),
            ("int64 beyond 2**24, plus 1", lambda a: a + 1, (_special(torch.int64),), {}),
            ("one point", lambda a: a * 5, (x[:1],), {}),
            ("15 points", lambda a: a.exp() - 1, (x[:15],), {}),
            ("two outputs", lambda a: (a.abs(), a * 3), (big,), {})]


@exercise("9.2", points=10, hints=(
    "Grade shows the kernel written with your function: run its loops by hand for a block of "
    "37 points.",
    "How many whole vectors fit in 37 points? Which points does no vector cover, and which "
    "loop runs them?",
    "The vectors stop where fewer than VECTOR_LANES points are left; the tail starts exactly "
    "there and stops at the block's end, not one past it.",
))
def check_vector_loop(sol):
    """A C++ pointwise loop: whole vectors, then the tail"""
    with cpp_backend():
        compare_written_by(sol.vector_loop, "vector_loop", list, cpp_loops, _pointwise_graphs(),
                           fenced_cpp_launches, "pointwise")


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


# --- 9.4 ------------------------------------------------------------------------------------------

def _one_row_graphs() -> list[Graph]:
    """Whole-tensor reductions (one row of 200003: enough work for every thread), where a lost
    update, a wrong start or a wrong combine shows: all-negative and all -inf tensors, a NaN,
    int64 beyond 2**24, ties for argmax (the first one wins). Compiled with a symbolic size:
    a row of a known size this long is split into partial rows first (``split_reduction``)."""
    x = torch.randn(200003)
    negative, infinite, nan = -x.abs() - 1, torch.full((200003,), -INF), x.clone()
    nan[150001] = NAN
    wide = torch.randint(2 ** 24, 2 ** 24 + 1000, (200003,)) * 2
    wide[170001] = 2 ** 24 + 2001
    ties = torch.randint(0, 5, (200003,)).float()
    long = torch.rand(4_000_003)  # a sum of 4M exps: each thread busy ~10 ms, so they overlap
    return [("sum of exp(x) over 4M elements", lambda t: t.exp().sum(), (long,),
             {"rtol": 1e-4, "calls": 8}),
            ("sum", lambda t: t.sum(), (x,), {"atol": 1e-2}),
            ("max of an all-negative tensor", lambda t: t.amax(), (negative,), {}),
            ("min", lambda t: t.amin(), (x,), {}),
            ("max of an all -inf tensor", lambda t: t.amax(), (infinite,), {}),
            ("max with a NaN", lambda t: t.amax(), (nan,), {}),
            ("any(x > 4)", lambda t: (t > 4).any(), (x,), {}),
            ("sum and max of int64 beyond 2**24", lambda t: t.sum() + t.amax(), (wide,), {}),
            ("argmax with ties (the first wins)", lambda t: t.argmax(), (ties,), {}),
            ("sum of squares over sum", lambda t: (t * t).sum() / t.sum(), (x.abs() + 1,),
             {"rtol": 1e-4})]


@exercise("9.4", points=10, hints=(
    "Grade shows the kernel written with your function. Run it in your head with two threads: "
    "which variable does each thread update, and when?",
    "Each thread needs its own partial, started from the accumulator's start value; only the "
    "final merge touches the total, and two threads must not merge at the same moment.",
    "#pragma omp parallel (a region), #pragma omp for inside it (the shared loop), then "
    "#pragma omp critical around total = combine(total, partial).",
))
def check_parallel_reduction(sol):
    """A parallel C++ reduction of one row, without a race"""
    def without_simd(piece):  # the compiler also says whether to vectorise: not asked here
        return lambda accumulators, body, parallel, simd=True: piece(accumulators, body, parallel)

    threads = torch.get_num_threads()
    with cpp_backend(), _threads(threads):
        for n in (2, 1):  # two threads race where one does not
            torch.set_num_threads(n)
            graphs = [(f"{what} ({n} threads)", fn, args, {**options, "dynamic": True})
                      for what, fn, args, options in _one_row_graphs()]
            compare_written_by(sol.parallel_reduction, "parallel_reduction", list, cpp_loops,
                               graphs, fenced_cpp_launches, None, without_simd)
