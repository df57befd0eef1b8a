"""Generated code side by side, and timings of generated kernels, for notebooks 08 and 09.

    output_code(fn, *args)              # minicompile's kernels and wrapper for fn(*args)
    compile_watching(owner, name, seen, fn, *args)  # compile fn(*args), reporting owner.name's calls
    real_output_code(fn, *args)         # what real torch.compile generates for the same call
    real_kernels(code)                  # the kernels inside real Inductor's output code
    kernel_names(code)                  # the kernel names in either output code
    our_kernels(code), wrapper_code(code)  # minicompile's kernels by name; its wrapper program
    time_compiled(fn, args, threads=n)  # median seconds per call (torch.utils.benchmark)

Real Inductor writes its output code as a Python module whose kernels are strings handed to
``async_compile.cpp_pybinding`` / ``async_compile.triton`` (torch/_inductor/codegen/wrapper.py);
``torch._inductor.utils.run_and_get_code`` returns it.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, Iterator

import torch
import torch.utils.benchmark as benchmark

from .. import compile as mc_compile
from .. import config, reset
from ..bench.helpers import say_if_noisy
from ..bench.timing import spread
from ..inductor import backend as inductor_backend


@contextlib.contextmanager
def inductor_options(**knobs: Any) -> Iterator[None]:
    """``config.inductor`` knobs (``cpu_backend="cpp"``, ``cpp_vectorize=False``) for a block."""
    saved = {k: getattr(config.inductor, k) for k in knobs}
    for k, v in knobs.items():
        setattr(config.inductor, k, v)
    reset()
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(config.inductor, k, v)
        reset()


def compile_watching(owner: Any, name: str, seen: Callable[..., None], fn: Callable,
                     *args: Any) -> None:
    """Compile ``fn`` afresh and call it on ``args`` while every call of ``owner.name`` (a
    function of a module, or a method) is also reported: ``seen(result, *its_args)``."""
    original = getattr(owner, name)

    def watched(*call_args: Any, **kwargs: Any) -> Any:
        result = original(*call_args, **kwargs)
        seen(result, *call_args, **kwargs)
        return result

    setattr(owner, name, watched)
    reset()
    try:
        mc_compile(fn)(*args)
    finally:
        setattr(owner, name, original)


def output_code(fn: Callable, *args: Any) -> str:
    """The output code (kernels, then the wrapper) of every graph ``mc.compile(fn)`` makes."""
    sources: list[str] = []
    compile_watching(inductor_backend, "compile_fx_inner",
                     lambda compiled, *_, **__: sources.append(compiled.source), fn, *args)
    return "\n".join(sources)


def real_output_code(fn: Callable, *args: Any, **knobs: Any) -> str:
    """Real Inductor's output code for ``fn(*args)``; ``knobs`` patch ``torch._inductor.config``
    for the compile (``max_autotune=True``, ``max_autotune_gemm_backends="TRITON"``)."""
    from torch._inductor import config as real_config
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    with real_config.patch(**knobs):
        _, codes = run_and_get_code(torch.compile(fn), *args)
    return "\n".join(codes)


# ``name = async_compile.triton('name', '''...'''`` (codegen/triton.py, define_kernel) or
# ``name = async_compile.cpp_pybinding(['const float*', ...], r'''...'''`` (codegen/cpp.py)
_KERNEL = re.compile(r"^(\w+) = async_compile\.\w+\((?:'\w+', |\[.*?\], )?r?'''\n(.*?)'''",
                     re.S | re.M)


def real_kernels(code: str) -> dict[str, str]:
    """``{kernel name: source}`` of the kernels in real Inductor's output code."""
    return {name: body.strip() for name, body in _KERNEL.findall(code)}


def time_compiled(fn: Callable, args: tuple, threads: int | None = None,
                  min_run_time: float = 0.2) -> float:
    """Median seconds per call of ``fn(*args)`` (after a warm-up call), on ``threads`` threads."""
    saved = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        fn(*args)
        timer = benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args},
                                num_threads=torch.get_num_threads())
        m = timer.blocked_autorange(min_run_time=min_run_time)
        say_if_noisy(getattr(fn, "__name__", "fn"), spread(m.times))
        return m.median
    finally:
        torch.set_num_threads(saved)


_OUR_KERNEL = re.compile(r"\b((?:cpp|triton)_\w+?_\d+)\b")


def kernel_names(code: str) -> list[str]:
    """The kernels in output code (minicompile's or real Inductor's), in order of appearance:
    both name a kernel ``cpp_fused_<ops>_<n>`` or ``triton_<kind>_fused_<ops>_<n>``."""
    return list(dict.fromkeys(_OUR_KERNEL.findall(code)))


def our_kernels(code: str) -> dict[str, str]:
    """``{kernel name: source}`` of the kernels in minicompile's output code, where each kernel
    starts at its ``# kernel <name>`` line and the wrapper at ``def call(args):``."""
    kernels, _, _ = code.partition("\ndef call(args):")
    parts = re.split(r"^# kernel (\w+)\n", kernels, flags=re.M)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2])}


def wrapper_code(code: str) -> str:
    """The wrapper program of minicompile's output code: ``def call(args):`` to the end."""
    return "def call(args):" + code.partition("\ndef call(args):")[2].rstrip()
